//! Replays fixtures/mlx/ollama_mlx.jsonl: Ollama's MLX-runner sampler
//! (sample.go at fb3076099) run through MLX 0.32.4 on CPU by
//! scripts/reference/mlx/record_ollama.py. Kept sets exact, the sparse
//! path's id order exact, probabilities within 1e-6, seeded draws exact.

use ollama_sampling::OllamaMlx;
use ollama_sampling::mlx::{mix_seed, top_k_order};
use parity_core::{Context, Fixture, Logits, Semantics};
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::path::PathBuf;

fn root() -> PathBuf {
    parity_core::fixture::bundled_dir().expect("bundled fixtures")
}

#[test]
fn every_recorded_case_replays() {
    let text = std::fs::read_to_string(root().join("mlx/ollama_mlx.jsonl")).expect("committed");
    let mut lines = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("json"));
    let header = lines.next().expect("header");
    assert_eq!(header["ollama_commit"], "fb3076099");
    let draws = header["draws"].as_u64().expect("draws");
    let mut cache: HashMap<String, (Vec<f32>, Vec<i64>, usize)> = HashMap::new();
    let (mut n, mut sampled, mut orders, mut replayed, mut skipped) = (0, 0, 0, 0, 0);
    let mut max_dp = 0.0f64;
    for c in lines {
        let what = format!(
            "{} {}",
            c["fixture"].as_str().expect("fixture"),
            c["name"].as_str().expect("name")
        );
        n += 1;
        let (logits, ids, plen) = if let Some(l) = c.get("logits") {
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
            (
                logits,
                ids,
                c["prompt_len"].as_u64().expect("plen") as usize,
            )
        } else {
            let name = c["fixture"].as_str().expect("fixture").to_string();
            cache
                .entry(name.clone())
                .or_insert_with(|| {
                    let f =
                        Fixture::load(&root().join(format!("{name}.safetensors"))).expect("loads");
                    let plen = f.model.as_ref().map_or(f.input_ids.len(), |m| m.prompt_len);
                    (f.logits, f.input_ids, plen)
                })
                .clone()
        };
        let ctx = Context::new(&ids, Some(plen)).expect("context");
        let logits = Logits::from_f32(&logits);
        let mut params: Map<String, Value> = c["request"].as_object().expect("request").clone();
        params.insert("draws".into(), Value::from(draws));
        let p = OllamaMlx::default()
            .parse_params(&params)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        let got = OllamaMlx::default().distribution(&logits, &ctx, &p);
        if c.get("skipped").is_some() {
            assert!(got.is_err(), "{what}: not runnable in MLX; we must refuse");
            skipped += 1;
            continue;
        }
        let d = got.unwrap_or_else(|e| panic!("{what}: {e}"));
        let kept: Vec<usize> = c["ids"]
            .as_array()
            .expect("ids")
            .iter()
            .map(|v| v.as_u64().expect("id") as usize)
            .collect();
        let mut sorted = kept.clone();
        sorted.sort_unstable();
        assert_eq!(d.kept(), sorted.as_slice(), "{what}: kept set");
        for (&i, pv) in kept.iter().zip(c["p"].as_array().expect("p")) {
            let dp = (d.probs()[i] - pv.as_f64().expect("p")).abs();
            max_dp = max_dp.max(dp);
            assert!(dp <= 1e-6, "{what}: p[{i}] = {} vs MLX {pv}", d.probs()[i]);
        }
        if let Some(order) = c.get("order").and_then(Value::as_array) {
            let want: Vec<usize> = order
                .iter()
                .map(|v| v.as_u64().expect("id") as usize)
                .collect();
            let ours = top_k_order(&logits, &ctx, &p)
                .expect("runs")
                .expect("sparse");
            assert_eq!(ours, want, "{what}: argpartition order");
            orders += 1;
        }
        if c.get("greedy").is_some() {
            continue;
        }
        let tokens: Vec<i64> = c["tokens"]
            .as_array()
            .expect("tokens")
            .iter()
            .map(|v| v.as_i64().expect("t"))
            .collect();
        assert_eq!(d.tokens(), Some(tokens.as_slice()), "{what}: seeded draws");
        replayed += tokens.len();
        sampled += 1;
    }
    eprintln!(
        "ollama-mlx: {n} cases, {sampled} sampled ({replayed} draws replayed, {orders} top-k orders), {skipped} not runnable; max |Δp| {max_dp:e}"
    );
    assert!(sampled > 500, "{sampled}");
}

#[test]
fn splitmix_keys() {
    // SplitMix64 (Steele, Lea, Flood 2014) of state seed + (n+1)·γ: for
    // seed 0 the first outputs are the reference sequence of splitmix64.c
    // seeded with 0: 0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4.
    assert_eq!(mix_seed(0, 0), 0xe220_a839_7b1d_cdaf);
    assert_eq!(mix_seed(0, 1), 0x6e78_9e6a_a1b9_65f4);
}

#[test]
fn the_fix_reproduces_transformers_on_smollm2() {
    use parity_core::metrics::softmax_f64;
    use parity_core::{Against, Comparison, Distribution};
    let settings = [
        "t07_default",
        "t07",
        "k40",
        "p09",
        "k40p09",
        "rep13",
        "default",
        "t15",
        "minp05",
        "k40p09rep",
    ];
    let (mut rows, mut worst) = (0, 0.0f64);
    for path in parity_core::fixture::bundled_fixtures().expect("fixtures") {
        let f = Fixture::load(&path).expect("loads");
        if f.model.is_none() {
            continue;
        }
        let logits = Logits::from_f32(&f.logits);
        let ctx = Context::new(&f.input_ids, None).expect("context");
        for s in f
            .settings
            .iter()
            .filter(|s| settings.contains(&s.name.as_str()))
        {
            let label = format!("{} {}", f.name, s.name);
            let hf_probs = if s.kwargs.get("do_sample") == Some(&Value::Bool(true)) {
                softmax_f64(&s.scores)
            } else {
                let mut p = vec![0.0; s.scores.len()];
                p[parity_core::metrics::argmax_first(&s.scores)] = 1.0;
                p
            };
            let hf = Distribution::new(hf_probs.clone(), parity_core::Precision::F32);
            let params = OllamaMlx::default()
                .from_generate(&s.kwargs)
                .expect("expressible")
                .expect("parses");
            let this = OllamaMlx::default()
                .distribution(&logits, &ctx, &params)
                .expect("runs");
            let cmp = Comparison::new(&hf_probs, this.probs()).expect("same length");
            let row = Against {
                kwargs: &s.kwargs,
                generation_config: None,
                logits: &f.logits,
                context: ctx,
                transformers: &hf,
                this: &this,
                comparison: &cmp,
                variant: None,
            };
            let e = OllamaMlx::default().explain(&row, &params);
            if hf.kept() != this.kept() {
                assert!(
                    !e.reasons.is_empty(),
                    "{label}: kept sets differ with no reason"
                );
            }
            let fix = e.fix.expect("a fix");
            let fp = OllamaMlx::default()
                .parse_params(&fix.params)
                .expect("fix parses");
            let fd = OllamaMlx::default()
                .distribution(&logits, &ctx, &fp)
                .expect("fix runs");
            assert_eq!(fd.kept(), hf.kept(), "{label}: {}", fix.text);
            let d = Comparison::new(&hf_probs, fd.probs())
                .expect("same length")
                .max_abs_diff;
            worst = worst.max(d);
            assert!(d < 1e-4, "{label}: fix differs by {d}");
            rows += 1;
        }
    }
    eprintln!("ollama-mlx: {rows} rows fixed, worst |dp| {worst:e}");
    assert_eq!(rows, 60);
}

/// `compare semantics`' list is derived from `OllamaMlxParams`; each listed
/// default, written out, is what the parser does with the field left out.
#[test]
fn the_listed_params_and_defaults_are_the_parsers() {
    let ollama = OllamaMlx::default();
    assert_eq!(parity_core::params::defaults_agree(&ollama), Ok(()));
    let names: Vec<_> = ollama.info().params.iter().map(|p| p.name).collect();
    assert_eq!(names, ollama_sampling::OllamaMlxParams::FIELDS);
}

fn obj(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap_or_default()
}

/// The runner orders its filters like transformers (temperature first), so
/// a setup exists where mlx-lm's temperature-last chain has none.
#[test]
fn translate_always_gives_a_setup_for_the_filters() {
    let opts = parity_core::TranslateOptions { context_len: 512 };
    let blocked = obj(json!({"do_sample": true, "temperature": 0.7, "top_k": 0, "top_p": 0.9}));
    let t = OllamaMlx::default()
        .translate(&blocked, &opts)
        .expect("offered")
        .expect("runs");
    assert_eq!(
        Value::Object(t.params.expect("a setup")),
        json!({"temperature": 0.7, "top_k": 0, "top_p": 0.9, "min_p": 0.0})
    );
}

/// What blocks a port is what acts in transformers (hf_sampling::Acting):
/// `TypicalLogitsWarper` only while sampling and below 1 (transformers 5.23.0
/// `generation/utils.py` lines 1597 and 1629), `NoRepeatNGramLogitsProcessor`
/// only for a size > 0 (line 1482).
#[test]
fn what_blocks_a_port_is_what_acts_in_transformers() {
    let opts = parity_core::TranslateOptions { context_len: 512 };
    let over_one = obj(
        json!({"do_sample": true, "temperature": 0.7, "top_k": 50, "top_p": 1.0,
                              "typical_p": 1.5, "no_repeat_ngram_size": -1}),
    );
    let t = OllamaMlx::default()
        .translate(&over_one, &opts)
        .expect("offered")
        .expect("runs");
    assert!(t.params.is_some(), "{:?}", t.json);
    assert!(OllamaMlx::default().fix(&over_one, None).is_some());
    assert!(OllamaMlx::default().from_generate(&over_one).is_some());
    let greedy = obj(json!({"do_sample": false, "typical_p": 0.5}));
    assert!(OllamaMlx::default().from_generate(&greedy).is_some());
    let acting = obj(json!({"do_sample": true, "typical_p": 0.5}));
    assert!(OllamaMlx::default().from_generate(&acting).is_none());
}
