//! Replays every case recorded from the real vLLM 0.32.0 sampler
//! (`fixtures/vllm/`, made by `scripts/reference/vllm/record.py`).

use std::path::{Path, PathBuf};

use parity_core::{Context, Fixture, Logits, Semantics};
use serde_json::{Map, Value};
use vllm_sampling::{Vllm, gumbel_argmax, kernel_seed};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

struct Recorded {
    name: String,
    meta: Map<String, Value>,
    tensors: Vec<(String, Vec<u8>, safetensors::Dtype)>,
}

impl Recorded {
    fn tensor_i64(&self, key: &str) -> Vec<i64> {
        let (_, b, d) = self
            .tensors
            .iter()
            .find(|(k, ..)| k == key)
            .unwrap_or_else(|| panic!("{}: no {key}", self.name));
        assert_eq!(*d, safetensors::Dtype::I64);
        b.chunks_exact(8)
            .map(|c| i64::from_le_bytes(c.try_into().expect("8 bytes")))
            .collect()
    }
    fn tensor_f32(&self, key: &str) -> Vec<f32> {
        let (_, b, d) = self
            .tensors
            .iter()
            .find(|(k, ..)| k == key)
            .unwrap_or_else(|| panic!("{}: no {key}", self.name));
        assert_eq!(*d, safetensors::Dtype::F32);
        b.chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().expect("4 bytes")))
            .collect()
    }
    fn tensor_f64(&self, key: &str) -> Vec<f64> {
        let (_, b, d) = self
            .tensors
            .iter()
            .find(|(k, ..)| k == key)
            .unwrap_or_else(|| panic!("{}: no {key}", self.name));
        assert_eq!(*d, safetensors::Dtype::F64);
        b.chunks_exact(8)
            .map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes")))
            .collect()
    }
    fn json(&self, key: &str) -> Value {
        serde_json::from_str(self.meta[key].as_str().expect("string")).expect("json metadata")
    }
}

fn recorded() -> Vec<Recorded> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(repo().join("fixtures/vllm"))
        .expect("fixtures/vllm exists")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "safetensors"))
        .collect();
    paths.sort();
    assert!(
        paths.len() >= 20,
        "expected the recorded files, found {}",
        paths.len()
    );
    paths
        .iter()
        .map(|p| {
            let data = std::fs::read(p).expect("read");
            let (_, meta) = safetensors::SafeTensors::read_metadata(&data).expect("header");
            let meta: Map<String, Value> = meta
                .metadata()
                .clone()
                .unwrap_or_default()
                .into_iter()
                .map(|(k, v)| (k, Value::String(v)))
                .collect();
            let st = safetensors::SafeTensors::deserialize(&data).expect("safetensors");
            let tensors = st
                .tensors()
                .into_iter()
                .map(|(k, v)| (k, v.data().to_vec(), v.dtype()))
                .collect();
            Recorded {
                name: p.file_name().expect("name").to_string_lossy().into_owned(),
                meta,
                tensors,
            }
        })
        .collect()
}

/// FNV-1a 64 of the f32 bytes, as record.py hashes the final logits.
fn fnv1a64(values: &[f32]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for v in values {
        for b in v.to_le_bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    format!("{h:016x}")
}

#[test]
fn every_recorded_case_replays() {
    let mut cases = 0;
    let mut draws = 0;
    let mut errors = 0;
    let mut max_dp = 0.0f64;
    for rec in recorded() {
        let source = rec.meta["source"].as_str().expect("source").to_string();
        let fixture =
            Fixture::load(&repo().join("fixtures").join(&source)).expect("source fixture");
        let prompt_len: usize = rec.meta["prompt_len"]
            .as_str()
            .expect("str")
            .parse()
            .expect("int");
        let context = Context::new(&fixture.input_ids, Some(prompt_len)).expect("context");
        let logits = Logits::from_f32(&fixture.logits);
        for case in rec.json("cases").as_array().expect("cases") {
            let name = case["name"].as_str().expect("name");
            let what = format!("{source} {name}");
            let params = Vllm
                .parse_params(case["params"].as_object().expect("params"))
                .unwrap_or_else(|e| panic!("{what}: params refused: {e}"));
            let got = Vllm.distribution(&logits, &context, &params);
            cases += 1;
            if let Some(err) = case.get("error") {
                errors += 1;
                assert!(got.is_err(), "{what}: vLLM raised {err}, we answered");
                continue;
            }
            let got = got.unwrap_or_else(|e| panic!("{what}: {e}"));
            let scores = got.scores().expect("final logits");
            assert_eq!(
                fnv1a64(scores),
                case["fnv1a64"].as_str().expect("hash"),
                "{what}: final logits differ"
            );
            let finite = scores.iter().filter(|v| v.is_finite()).count();
            assert_eq!(
                finite as u64,
                case["finite"].as_u64().expect("finite"),
                "{what}"
            );
            let ids = rec.tensor_i64(&format!("{name}.ids"));
            let fin = rec.tensor_f32(&format!("{name}.final"));
            for (&i, &v) in ids.iter().zip(&fin) {
                assert_eq!(
                    scores[i as usize].to_bits(),
                    v.to_bits(),
                    "{what}: final logit of {i}"
                );
            }
            if let Some(g) = case.get("greedy_token") {
                let g = g.as_u64().expect("token") as usize;
                assert_eq!(got.kept(), &[g], "{what}: greedy token");
                continue;
            }
            if case.get("nonfinite").is_none() {
                let kept: Vec<usize> = (0..scores.len())
                    .filter(|&i| scores[i].is_finite())
                    .collect();
                assert_eq!(got.kept(), kept.as_slice(), "{what}: kept set");
            }
            let probs = rec.tensor_f64(&format!("{name}.probs"));
            for (&i, &p) in ids.iter().zip(&probs) {
                let d = (got.probs()[i as usize] - p).abs();
                max_dp = max_dp.max(d);
                assert!(
                    d <= 1e-6,
                    "{what}: p[{i}] = {} vs vLLM {p}",
                    got.probs()[i as usize]
                );
            }
            let seeds = rec.tensor_i64(&format!("{name}.draw_seeds"));
            let kseeds = rec.tensor_i64(&format!("{name}.kernel_seeds"));
            let tokens = rec.tensor_i64(&format!("{name}.draw_tokens"));
            for ((&s, &k), &t) in seeds.iter().zip(&kseeds).zip(&tokens) {
                assert_eq!(
                    kernel_seed(s as u64, 0),
                    k as u64,
                    "{what}: kernel seed of seed {s}"
                );
                assert_eq!(
                    gumbel_argmax(scores, k as u64) as i64,
                    t,
                    "{what}: draw with kernel seed {k}"
                );
                draws += 1;
            }
            let seed = case["steps_seed"].as_u64().expect("steps seed");
            for (j, step) in case["steps"].as_array().expect("steps").iter().enumerate() {
                let k = step[0].as_u64().expect("kernel seed");
                assert_eq!(kernel_seed(seed, j), k, "{what}: step {j} kernel seed");
                assert_eq!(
                    gumbel_argmax(scores, k) as u64,
                    step[1].as_u64().expect("token"),
                    "{what}: step {j}"
                );
                draws += 1;
            }
        }
    }
    eprintln!(
        "vllm: {cases} cases ({errors} refused by vLLM too), {draws} real draws replayed, max |Δp| {max_dp:e}"
    );
    assert!(cases > 300 && draws > 5000, "{cases} cases, {draws} draws");
}

#[test]
fn refused_params_give_vllms_own_message() {
    let rec = recorded()
        .into_iter()
        .find(|r| r.meta.contains_key("rejected"))
        .expect("a file with rejected params");
    let mut n = 0;
    for r in rec.json("rejected").as_array().expect("list") {
        let mut params = r["params"].as_object().expect("params").clone();
        for v in params.values_mut() {
            if let Some(s) = v.as_str() {
                // record.py writes non-finite floats as strings; JSON has no other way.
                let f: f64 = s.parse().expect("float text");
                *v = serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number);
            }
        }
        if params.values().any(Value::is_null) {
            continue; // inf/nan cannot travel in a JSON number
        }
        let err = Vllm.parse_params(&params).expect_err("vLLM refused these");
        assert_eq!(
            err.to_string(),
            r["error"].as_str().expect("message"),
            "{params:?}"
        );
        n += 1;
    }
    assert!(n >= 12, "{n}");
}
