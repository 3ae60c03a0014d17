//! `transformers serve` as it really answers: every request recorded from
//! the real server (transformers 5.23.0, `fixtures/serve/requests.jsonl`,
//! made by `scripts/reference/serve/record.py`) replayed through
//! [`hf_sampling::serve_request`]: the status, the 422 text, the warned
//! fields, the seed, the effective generation config field by field and the
//! logits processors `generate()` built from it.

use std::collections::BTreeSet;
use std::path::Path;

use hf_sampling::{
    GenerationConfig, GenerationParams, Refusal, Removal, ServeEndpoint, generate_reference,
    request_routes, serve_request,
};
use serde_json::{Map, Value, json};

struct Recorded {
    meta: Map<String, Value>,
    requests: Vec<Map<String, Value>>,
}

fn recorded() -> Recorded {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/serve/requests.jsonl");
    let text = std::fs::read_to_string(&path).expect("fixtures/serve/requests.jsonl");
    let mut lines = text.lines().map(|l| {
        serde_json::from_str::<Value>(l)
            .expect("JSON line")
            .as_object()
            .cloned()
            .expect("object")
    });
    let meta = lines.next().expect("metadata line");
    assert_eq!(meta["format"], "sampling-parity-serve/1");
    assert_eq!(meta["transformers_version"], "5.23.0");
    Recorded {
        meta,
        requests: lines.collect(),
    }
}

fn endpoint(path: &str) -> ServeEndpoint {
    ServeEndpoint::ALL
        .into_iter()
        .find(|e| e.path() == path)
        .unwrap_or_else(|| panic!("unknown endpoint {path}"))
}

/// The body as record.py sent it: the recorded fields plus the model and
/// the input.
fn sent(e: ServeEndpoint, body: &Map<String, Value>) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("model".into(), json!("/models/smollm2"));
    match e {
        ServeEndpoint::ChatCompletions => {
            m.insert(
                "messages".into(),
                json!([{"role": "user", "content": "Say hi."}]),
            );
        }
        ServeEndpoint::Completions => {
            m.insert("prompt".into(), json!("Hi"));
        }
    }
    m.extend(body.clone());
    m
}

fn model_config(meta: &Map<String, Value>, name: &str) -> GenerationConfig {
    GenerationConfig::from_json_str(&meta["models"][name].to_string()).expect("config")
}

/// The names in a Python set repr `{'a', 'b'}`.
fn py_set(text: &str) -> BTreeSet<String> {
    let inner = text
        .rsplit_once('{')
        .and_then(|(_, rest)| rest.strip_suffix('}'))
        .unwrap_or_else(|| panic!("no set in {text:?}"));
    inner
        .split(", ")
        .map(|s| s.trim_matches('\'').to_string())
        .collect()
}

fn check_effective(what: &str, effective: &Value, p: &GenerationParams) {
    let f = |k: &str| effective[k].as_f64();
    assert_eq!(
        effective["do_sample"].as_bool(),
        Some(p.do_sample),
        "{what}: do_sample"
    );
    assert_eq!(f("temperature"), Some(p.temperature), "{what}: temperature");
    let top_k = effective["top_k"].as_u64().filter(|&k| k > 0);
    assert_eq!(top_k.map(|k| k as usize), p.top_k, "{what}: top_k");
    assert_eq!(f("top_p"), Some(p.top_p), "{what}: top_p");
    assert_eq!(f("min_p"), p.min_p, "{what}: min_p");
    assert_eq!(f("typical_p"), Some(p.typical_p), "{what}: typical_p");
    assert_eq!(
        f("epsilon_cutoff"),
        Some(p.epsilon_cutoff),
        "{what}: epsilon_cutoff"
    );
    assert_eq!(f("eta_cutoff"), Some(p.eta_cutoff), "{what}: eta_cutoff");
    assert_eq!(
        f("repetition_penalty"),
        Some(p.repetition_penalty),
        "{what}: repetition_penalty"
    );
    assert_eq!(
        f("max_new_tokens"),
        p.constraints.max_new_tokens.map(|n| n.float()),
        "{what}: max_new_tokens"
    );
    let bias = Some(&effective["sequence_bias"]).filter(|v| !v.is_null());
    assert_eq!(
        bias,
        p.constraints.sequence_bias.as_ref(),
        "{what}: sequence_bias"
    );
}

#[test]
fn endpoint_field_lists_are_the_recorded_ones() {
    let r = recorded();
    for e in ServeEndpoint::ALL {
        let lists = &r.meta["endpoints"][e.path()];
        let names =
            |k: &str| -> Vec<String> { serde_json::from_value(lists[k].clone()).expect("list") };
        assert_eq!(names("accepted"), e.accepted(), "{}: accepted", e.path());
        assert_eq!(names("unused"), e.unused(), "{}: unused", e.path());
    }
}

#[test]
fn every_recorded_request_is_answered_as_the_server_answered() {
    let r = recorded();
    let sentinel = r.meta["seed_sentinel"].clone();
    let mut counts = [0usize; 4]; // 200, 422, 500, processors compared
    for rec in &r.requests {
        let e = endpoint(rec["endpoint"].as_str().expect("endpoint"));
        let model = rec["model"].as_str().expect("model");
        let body = rec["body"].as_object().expect("body");
        let what = format!("{} {model} {}", e.path(), Value::Object(body.clone()));
        let config = model_config(&r.meta, model);
        let reading = serve_request(e, &sent(e, body), Some(&config));
        let status = rec["status"].as_u64().expect("status");
        match (status, &reading.params) {
            (200, Ok(p)) => {
                counts[0] += 1;
                check_effective(&what, &rec["effective"], p);
                let names: Vec<String> = serde_json::from_value(rec["processors"].clone())
                    .expect("processors recorded for a 200");
                let ours = p.processor_names().expect("processors");
                assert_eq!(ours, names, "{what}: processors");
                counts[3] += 1;
            }
            (
                422,
                Err(Refusal::Http {
                    status: 422,
                    message,
                }),
            ) => {
                counts[1] += 1;
                let detail = rec["detail"].as_str().expect("detail");
                assert_eq!(py_set(message), py_set(detail), "{what}: 422 fields");
                if py_set(detail).len() == 1 {
                    assert_eq!(message, detail, "{what}");
                }
            }
            (
                500,
                Err(Refusal::Http {
                    status: 500,
                    message,
                }),
            ) => {
                counts[2] += 1;
                let error = rec["error"].as_str().expect("500 error");
                let (kind, text) = error.split_once(": ").expect("Type: message");
                assert!(message.starts_with(kind), "{what}: {message} vs {error}");
                // json.loads' error texts are CPython's own; only the type is ours.
                if kind != "JSONDecodeError" {
                    assert!(message.contains(text), "{what}: {message:?} vs {error:?}");
                }
            }
            (s, got) => panic!("{what}: recorded HTTP {s}, got {got:?}"),
        }
        let warned: Vec<String> = serde_json::from_value(rec["warned"].clone()).expect("warned");
        assert_eq!(reading.warned, warned, "{what}: warned");
        let seed = Some(rec["torch_seed"].clone()).filter(|s| *s != sentinel);
        assert_eq!(reading.seed, seed, "{what}: torch.manual_seed");
        // The route lists every warned field as ignored.
        let route = reading.into_route();
        assert_eq!(route.endpoint, e.route());
        for w in &warned {
            assert!(
                route.ignored.contains(w),
                "{what}: {w} not in {:?}",
                route.ignored
            );
        }
    }
    assert_eq!(r.requests.len(), 236);
    assert_eq!(counts.iter().sum::<usize>() - counts[3], r.requests.len());
    eprintln!(
        "serve: {} requests replayed: {} answered 200 (effective config and processors \
         compared), {} refused 422, {} failed 500",
        r.requests.len(),
        counts[0],
        counts[1],
        counts[2]
    );
}

#[test]
fn refused_fields_are_a_refusal_not_a_drop() {
    // Recorded: {"top_k": 40} on /v1/chat/completions is HTTP 422.
    let body = json!({"temperature": 0.7, "top_k": 40})
        .as_object()
        .cloned()
        .expect("object");
    let routes = request_routes(&body, None);
    let chat = &routes[1];
    assert_eq!(
        chat.endpoint.label(),
        "transformers serve /v1/chat/completions"
    );
    assert_eq!(
        chat.params.as_ref().unwrap_err().to_string(),
        "HTTP 422: Unexpected fields in the request: {'top_k'}"
    );
    assert!(chat.ignored.is_empty());
    // generate() takes top_k: the reference keeps it.
    let p = routes[0].params.as_ref().expect("generate takes top_k");
    assert_eq!(p.top_k, Some(40));
}

#[test]
fn reference_says_what_it_left_out() {
    // The body of the brief; serve's answer to it is recorded (200,
    // repetition_penalty 1 + 0.5 = 1.5, torch seed 7, greedy on a model
    // that does not sample).
    let body = json!({"temperature": 0.6, "top_p": 0.9, "frequency_penalty": 0.5, "seed": 7})
        .as_object()
        .cloned()
        .expect("object");
    let r = generate_reference(&body);
    let removed: Vec<(&str, Removal)> = r
        .removed
        .iter()
        .map(|m| (m.field.as_str(), m.reason))
        .collect();
    assert_eq!(
        removed,
        [
            ("frequency_penalty", Removal::NotAKwarg),
            ("seed", Removal::NotSampling)
        ]
    );
    assert!(
        r.removed[0].text().contains(
            "generate(**request) raises \"ValueError: The following `model_kwargs` are not \
             used by the model: ['frequency_penalty']\""
        ),
        "{}",
        r.removed[0].text()
    );
    assert_eq!(
        Value::Object(r.kwargs),
        json!({"temperature": 0.6, "top_p": 0.9, "do_sample": true})
    );
    // dist/diff/translate hand the same kwargs to generate() as given: it raises.
    let err = hf_sampling::resolve(&body, None).unwrap_err().to_string();
    assert!(
        err.contains("`frequency_penalty` (=0.5) is not a generation parameter"),
        "{err}"
    );
    let routes = request_routes(&body, None);
    assert!(
        routes[0].ignored.is_empty(),
        "generate() drops nothing: it raises"
    );
    let serve = routes[1].params.as_ref().expect("serve answers 200");
    assert_eq!((serve.do_sample, serve.repetition_penalty), (false, 1.5));
}
