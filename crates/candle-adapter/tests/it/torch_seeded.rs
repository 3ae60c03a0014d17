//! The drop-in's torch-seeded mode returns transformers' very tokens: the
//! multi-step generations real torch 2.15 / transformers 5.23 recorded
//! (`fixtures/torch/generations.jsonl`, `scripts/reference/torch_draws.py`)
//! replayed through `HfLogitsProcessor::torch_seeded` on candle tensors.

use std::collections::HashMap;

use candle_adapter::dropin::HfLogitsProcessor;
use candle_core::{Device, Tensor};
use parity_core::Fixture;
use parity_core::fixture::bundled_dir;
use serde_json::Value;

/// The logits of step `t` of a recorded generation (the table kinds the
/// recorder writes: a cycle through fixtures, or one fixture rolled by
/// `shift * t`).
fn step_logits(table: &Value, t: usize, cache: &mut HashMap<String, Fixture>) -> Vec<f32> {
    let mut load = |name: &str| -> Vec<f32> {
        cache
            .entry(name.to_string())
            .or_insert_with(|| {
                let path = bundled_dir()
                    .expect("bundled fixtures")
                    .join(format!("{name}.safetensors"));
                Fixture::load(&path).unwrap_or_else(|e| panic!("{e}"))
            })
            .logits
            .clone()
    };
    match table["kind"].as_str() {
        Some("cycle") => {
            let names = table["fixtures"].as_array().expect("fixtures");
            load(names[t % names.len()].as_str().expect("name"))
        }
        Some("roll") => {
            let base = load(table["fixture"].as_str().expect("fixture"));
            let shift = table["shift"].as_u64().expect("shift") as usize;
            let v = base.len();
            (0..v).map(|i| base[(i + shift * t) % v]).collect()
        }
        other => panic!("unknown table kind {other:?}"),
    }
}

#[test]
fn torch_seeded_dropin_returns_transformers_tokens() -> candle_core::Result<()> {
    let path = bundled_dir()
        .expect("bundled fixtures")
        .join("torch/generations.jsonl");
    let text = std::fs::read_to_string(&path).expect("generations.jsonl");
    let mut cache = HashMap::new();
    let (mut generations, mut tokens) = (0, 0);
    for line in text.lines().skip(1) {
        let r: Value = serde_json::from_str(line).expect("JSON line");
        let kwargs = r["kwargs"].as_object().expect("kwargs");
        let params = hf_sampling::resolve(kwargs, None).expect("valid kwargs");
        let prompt: Vec<u32> = r["prompt"]
            .as_array()
            .expect("prompt")
            .iter()
            .map(|v| u32::try_from(v.as_u64().expect("id")).expect("u32 id"))
            .collect();
        let want: Vec<u32> = r["tokens"]
            .as_array()
            .expect("tokens")
            .iter()
            .map(|v| u32::try_from(v.as_u64().expect("id")).expect("u32 id"))
            .collect();
        let seed = r["seed"].as_u64().expect("seed");
        let mut lp = HfLogitsProcessor::torch_seeded(seed, &params).expect("valid params");
        lp.set_prompt(&prompt);
        let mut got = Vec::new();
        for t in 0..want.len() {
            let logits = step_logits(&r["table"], t, &mut cache);
            got.push(lp.sample(&Tensor::new(logits.as_slice(), &Device::Cpu)?)?);
        }
        assert_eq!(got, want, "{}", r["name"]);
        generations += 1;
        tokens += want.len();
    }
    // 20+ recorded generations; every token reproduced.
    assert!(
        generations >= 20 && tokens > 100,
        "{generations} generations, {tokens} tokens"
    );
    Ok(())
}
