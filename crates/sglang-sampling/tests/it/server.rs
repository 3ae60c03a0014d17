//! Replays `fixtures/sglang/server.json`: SGLang's refusals of
//! `SamplingParams`, its OpenAI routes' reading of requests (with the model's
//! generation config merged), and murmur3 hash vectors.

use parity_core::Semantics;
use serde_json::{Map, Value};
use sglang_sampling::{
    Endpoint, GENERATION_CONFIG_FIELDS, Sglang, SglangParams, TOP_K_ALL, request_params, seeded,
};

fn server() -> Value {
    let text = std::fs::read_to_string(crate::fixtures().join("sglang/server.json"))
        .expect("fixtures/sglang/server.json");
    serde_json::from_str(&text).expect("json")
}

/// record.py writes non-finite floats as strings; JSON has no other way.
fn with_floats(params: &Map<String, Value>) -> Option<Map<String, Value>> {
    let mut out = params.clone();
    for v in out.values_mut() {
        if let Some(s) = v.as_str() {
            let f: f64 = s.parse().expect("float text");
            *v = serde_json::Number::from_f64(f).map(Value::Number)?;
        }
    }
    Some(out)
}

/// The recorded `SamplingParams` fields against ours.
fn assert_fields(what: &str, want: &Value, p: &SglangParams) {
    let f = |k: &str| want[k].as_f64().unwrap_or_else(|| panic!("{what}: {k}"));
    assert_eq!(p.temperature, f("temperature"), "{what}: temperature");
    assert_eq!(p.top_p, f("top_p"), "{what}: top_p");
    assert_eq!(
        p.top_k,
        want["top_k"].as_i64().expect("top_k"),
        "{what}: top_k"
    );
    assert_eq!(p.min_p, f("min_p"), "{what}: min_p");
    assert_eq!(p.frequency_penalty, f("frequency_penalty"), "{what}");
    assert_eq!(p.presence_penalty, f("presence_penalty"), "{what}");
    assert_eq!(p.repetition_penalty, f("repetition_penalty"), "{what}");
    assert_eq!(
        p.sampling_seed,
        want["sampling_seed"].as_i64(),
        "{what}: seed"
    );
    let bias = p.logit_bias.as_ref().map(|b| {
        b.iter()
            .map(|(k, v)| (k.clone(), Value::from(*v)))
            .collect::<Map<String, Value>>()
    });
    assert_eq!(
        bias,
        want["logit_bias"].as_object().cloned(),
        "{what}: logit_bias"
    );
}

#[test]
fn refused_params_quote_sglangs_own_message() {
    let s = server();
    let mut n = 0;
    for r in s["rejected"].as_array().expect("rejected") {
        let Some(params) = with_floats(r["params"].as_object().expect("params")) else {
            continue; // inf/nan cannot travel in a JSON number
        };
        let got = Sglang.parse_params(&params);
        // logit_bias keys are checked against the vocabulary (49152 in record.py).
        let got = got.and_then(|p| {
            let logits = parity_core::Logits::from_f32(&vec![0.0; 49_152]);
            let ctx = parity_core::Context::new(&[], None).expect("context");
            Sglang.distribution(&logits, &ctx, &p).map(|_| p)
        });
        match r["error"].as_str() {
            Some(err) => {
                let e = got.expect_err(&format!("{params:?}: SGLang refused with {err}"));
                assert_eq!(e.to_string(), err, "{params:?}");
            }
            None => {
                let p = got.unwrap_or_else(|e| panic!("{params:?}: SGLang accepted, we said {e}"));
                assert_fields(&format!("{params:?}"), &r["post_init"], &p);
            }
        }
        n += 1;
    }
    assert!(n >= 18, "{n}");
}

#[test]
fn openai_routes_read_requests_as_sglang_does() {
    let s = server();
    let configs = s["generation_configs"].as_object().expect("configs");
    let defaults = s["generation_defaults"].as_object().expect("defaults");
    // transformers' GenerationConfig hands SGLang exactly the file's values
    // for the five fields it merges (transformers 5.19: unset fields are None).
    for (name, gc) in configs {
        let from_file: Map<String, Value> = gc
            .as_object()
            .map(|g| {
                g.iter()
                    .filter(|(k, v)| GENERATION_CONFIG_FIELDS.contains(&k.as_str()) && !v.is_null())
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            })
            .unwrap_or_default();
        assert_eq!(
            &Value::Object(from_file),
            &defaults[name],
            "generation config {name}"
        );
    }
    let mut n = 0;
    for r in s["requests"].as_array().expect("requests") {
        let body = r["request"].as_object().expect("request");
        let gc = configs[r["generation_config"].as_str().expect("name")].as_object();
        let endpoint = match r["route"].as_str() {
            Some("chat") => Endpoint::Chat,
            _ => Endpoint::Completions,
        };
        let what = format!("{} {body:?} with {}", r["route"], r["generation_config"]);
        let got = request_params(endpoint, body, gc);
        if let Some(want) = r.get("sampling_params") {
            let p = got.unwrap_or_else(|e| panic!("{what}: SGLang accepted, we said {e}"));
            assert_fields(&what, want, &p);
        } else if let Some(err) = r.get("error") {
            let err = err.as_str().expect("message");
            // logit_bias keys are checked against the vocabulary (49152 in
            // record.py) when the distribution is built.
            let got = got.and_then(|p| {
                let logits = parity_core::Logits::from_f32(&vec![0.0; 49_152]);
                let ctx = parity_core::Context::new(&[1], None).expect("context");
                Sglang.distribution(&logits, &ctx, &p).map(|_| p)
            });
            let e = got.expect_err(&what);
            assert_eq!(e.to_string(), err, "{what}");
        } else {
            let e = got.expect_err(&what).to_string();
            for v in r["validation_error"].as_array().expect("validation") {
                let field = v["loc"][0].as_str().expect("loc");
                let msg = v["msg"].as_str().expect("msg");
                assert!(
                    e.contains(&format!("`{field}`")) && e.contains(msg),
                    "{what}: {e} vs {v}"
                );
            }
        }
        n += 1;
    }
    assert!(n >= 60, "{n}");
}

#[test]
fn out_of_vocabulary_bias_is_refused_with_sglangs_message() {
    // record.py: {"logit_bias": {"60000": 1}} on a 49152-token vocabulary.
    let s = server();
    let r = s["requests"]
        .as_array()
        .expect("requests")
        .iter()
        .find(|r| r["request"]["logit_bias"]["60000"].is_number())
        .expect("case");
    let p = request_params(
        Endpoint::Chat,
        r["request"].as_object().expect("body"),
        None,
    )
    .expect("parsed");
    let logits = parity_core::Logits::from_f32(&vec![0.0; 49_152]);
    let ctx = parity_core::Context::new(&[1], None).expect("context");
    let e = Sglang.distribution(&logits, &ctx, &p).unwrap_err();
    assert_eq!(e.to_string(), r["error"].as_str().expect("message"));
}

#[test]
fn murmur3_vectors() {
    let s = server();
    let v = s["murmur3"].as_array().expect("vectors");
    for h in v {
        let seed = h["seed"]
            .as_i64()
            .or_else(|| h["seed"].as_u64().map(|u| u as i64))
            .expect("seed");
        let pos = h["position"].as_i64().expect("position");
        let col = h["col"].as_u64().expect("col") as u32;
        assert_eq!(
            u64::from(seeded::murmur_hash32(seed, pos, col)),
            h["hash"].as_u64().expect("hash"),
            "{h}"
        );
    }
    assert!(v.len() >= 90);
}

#[test]
fn parse_errors_quote_the_bad_value() {
    let bad = |v: Value| {
        Sglang
            .parse_params(v.as_object().expect("object"))
            .unwrap_err()
            .to_string()
    };
    assert!(bad(serde_json::json!({"top_k": "40"})).contains("\"40\""));
    assert!(bad(serde_json::json!({"top_k": 2.5})).contains("2.5"));
    assert!(bad(serde_json::json!({"draws": 0})).contains("`draws` = 0"));
    assert!(bad(serde_json::json!({"do_sample": true})).contains("`do_sample` (= true)"));
    assert!(bad(serde_json::json!({"logit_bias": {"3": "x"}})).contains("\"x\""));
    let p = Sglang
        .parse_params(
            serde_json::json!({"top_k": -1})
                .as_object()
                .expect("object"),
        )
        .expect("valid");
    assert_eq!(p.top_k, TOP_K_ALL);
}
