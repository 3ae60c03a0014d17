//! Replays fixtures/mlx/cases.jsonl, recorded from the real mlx-lm 0.32.2 on
//! MLX 0.32.4 by scripts/reference/mlx/record.py: for every case the kept set
//! is exact, every probability within 1e-6 of MLX's float32, every seeded
//! draw the token MLX drew, every refusal the engine's own text, and every
//! request resolved as mlx_lm.server resolved it.

use std::collections::HashMap;
use std::path::PathBuf;

use mlx_sampling::{MlxLm, MlxParams, from_request};
use parity_core::{Context, Fixture, Logits, Semantics};
use serde_json::{Map, Value};

fn root() -> PathBuf {
    parity_core::fixture::bundled_dir().expect("bundled fixtures")
}

fn lines() -> (Value, Vec<Value>) {
    let text = std::fs::read_to_string(root().join("mlx/cases.jsonl"))
        .expect("fixtures/mlx/cases.jsonl is committed");
    let mut it = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("json line"));
    let header = it.next().expect("header");
    (header, it.collect())
}

fn obj(v: &Value) -> Map<String, Value> {
    v.as_object().cloned().expect("object")
}

/// A Python number as the server holds it (bools are ints).
fn num(v: &Value) -> f64 {
    match v {
        Value::Bool(b) => f64::from(u8::from(*b)),
        other => other.as_f64().expect("number"),
    }
}

fn assert_args(p: &MlxParams, args: &Value, what: &str) {
    let pairs = [
        ("temperature", p.temperature),
        ("top_p", p.top_p),
        ("top_k", p.top_k as f64),
        ("min_p", p.min_p),
        ("xtc_probability", p.xtc_probability),
        ("xtc_threshold", p.xtc_threshold),
        ("repetition_penalty", p.repetition_penalty),
        ("repetition_context_size", p.repetition_context_size as f64),
        ("presence_penalty", p.presence_penalty),
        ("presence_context_size", p.presence_context_size as f64),
        ("frequency_penalty", p.frequency_penalty),
        ("frequency_context_size", p.frequency_context_size as f64),
    ];
    for (k, ours) in pairs {
        assert_eq!(ours, num(&args[k]), "{what}: {k}");
    }
    let bias: Vec<(i64, f64)> = match &args["logit_bias"] {
        Value::Null => Vec::new(),
        Value::Object(o) => o
            .iter()
            .map(|(k, v)| (k.parse().expect("id"), num(v)))
            .collect(),
        other => panic!("{what}: logit_bias {other}"),
    };
    let ours: Vec<(i64, f64)> = p.logit_bias.iter().map(|(&k, &v)| (k, v)).collect();
    assert_eq!(ours, bias, "{what}: logit_bias");
    assert_eq!(p.seed, args["seed"].as_u64(), "{what}: seed");
}

#[test]
fn every_request_resolves_as_the_server_resolved_it() {
    let (_, cases) = lines();
    let mut n = 0;
    for c in &cases {
        let Some(name) = c.get("route").and_then(Value::as_str) else {
            continue;
        };
        let req = obj(&c["request"]);
        let got = from_request(&req);
        match c.get("error").and_then(Value::as_str) {
            Some(err) => {
                // The server's text, then the value it refused.
                let e = got.expect_err(name).to_string();
                assert!(
                    e.starts_with(&format!("{err} (got ")),
                    "{name}: {e} vs {err}"
                );
                assert_eq!(c["status"], 400, "{name}");
            }
            None => assert_args(
                &got.unwrap_or_else(|e| panic!("{name}: {e}")),
                &c["args"],
                name,
            ),
        }
        n += 1;
    }
    assert!(n >= 20, "{n} routes");
}

struct Input {
    logits: Logits,
    ids: Vec<i64>,
    prompt_len: usize,
}

fn input(c: &Value, cache: &mut HashMap<String, (Vec<f32>, Vec<i64>, usize)>) -> Input {
    if let Some(l) = c.get("logits") {
        let logits: Vec<f32> = l
            .as_array()
            .expect("logits")
            .iter()
            .map(|v| v.as_f64().map_or(f32::NEG_INFINITY, |x| x as f32))
            .collect();
        let ids = c["input_ids"]
            .as_array()
            .expect("ids")
            .iter()
            .map(|v| v.as_i64().expect("id"))
            .collect();
        return Input {
            logits: Logits::from_f32(&logits),
            ids,
            prompt_len: c["prompt_len"].as_u64().expect("prompt_len") as usize,
        };
    }
    let name = c["fixture"].as_str().expect("fixture").to_string();
    let (l, ids, plen) = cache
        .entry(name.clone())
        .or_insert_with(|| {
            let f =
                Fixture::load(&root().join(format!("{name}.safetensors"))).expect("fixture loads");
            let plen = f.model.as_ref().map_or(f.input_ids.len(), |m| m.prompt_len);
            (f.logits, f.input_ids, plen)
        })
        .clone();
    Input {
        logits: Logits::from_f32(&l),
        ids,
        prompt_len: plen,
    }
}

#[test]
fn every_recorded_case_replays() {
    let (header, cases) = lines();
    assert_eq!(header["mlx"], "0.32.4");
    assert_eq!(header["mlx_lm"], "0.32.2");
    let seed = header["seed"].as_u64().expect("seed");
    let draws = header["draws"].as_u64().expect("draws");
    let mut cache = HashMap::new();
    let (mut n, mut sampled, mut greedy, mut refused, mut skipped, mut replayed) =
        (0, 0, 0, 0, 0, 0);
    let mut max_dp = 0.0f64;
    for c in &cases {
        let Some(name) = c.get("name").and_then(Value::as_str) else {
            continue;
        };
        let what = format!("{} {name}", c["fixture"].as_str().expect("fixture"));
        n += 1;
        let inp = input(c, &mut cache);
        let ctx = Context::new(&inp.ids, Some(inp.prompt_len)).expect("context");
        let mut params = obj(&c["request"]);
        // The request resolves to the recorded arguments.
        assert_args(&from_request(&params).expect("accepted"), &c["args"], &what);
        params.insert("xtc_special_tokens".into(), c["xtc_special_tokens"].clone());
        params.insert("seed".into(), Value::from(seed));
        params.insert("draws".into(), Value::from(draws));
        let p = MlxLm
            .parse_params(&params)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        let got = MlxLm.distribution(&inp.logits, &ctx, &p);
        if let Some(s) = c.get("skipped") {
            assert!(
                got.is_err(),
                "{what}: MLX was not run ({s}); we must refuse"
            );
            skipped += 1;
            continue;
        }
        if let Some(err) = c.get("error").and_then(Value::as_str) {
            let e = got.expect_err(&what);
            assert_eq!(e.to_string(), err, "{what}");
            refused += 1;
            continue;
        }
        let d = got.unwrap_or_else(|e| panic!("{what}: {e}"));
        let ids: Vec<usize> = c["ids"]
            .as_array()
            .expect("ids")
            .iter()
            .map(|v| v.as_u64().expect("id") as usize)
            .collect();
        assert_eq!(d.kept(), ids.as_slice(), "{what}: kept set");
        for (&i, pv) in ids.iter().zip(c["p"].as_array().expect("p")) {
            let dp = (d.probs()[i] - pv.as_f64().expect("p")).abs();
            max_dp = max_dp.max(dp);
            assert!(dp <= 1e-6, "{what}: p[{i}] = {} vs MLX {pv}", d.probs()[i]);
        }
        if let Some(g) = c.get("greedy") {
            assert_eq!(d.kept(), &[g.as_u64().expect("token") as usize], "{what}");
            greedy += 1;
            continue;
        }
        let tokens: Vec<i64> = c["tokens"]
            .as_array()
            .expect("tokens")
            .iter()
            .map(|v| v.as_i64().expect("token"))
            .collect();
        assert_eq!(d.tokens(), Some(tokens.as_slice()), "{what}: seeded draws");
        replayed += tokens.len();
        sampled += 1;
    }
    eprintln!(
        "mlx-lm: {n} cases: {sampled} sampled ({replayed} seeded draws replayed), {greedy} greedy, {refused} raised, {skipped} not runnable; max |Δp| {max_dp:e}"
    );
    assert!(
        sampled > 500 && replayed > 20_000,
        "{sampled} sampled, {replayed} draws"
    );
}
