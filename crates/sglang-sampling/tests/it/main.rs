//! Replays every case recorded from the real SGLang 0.5.23 sampler
//! (`fixtures/sglang/`, made by `scripts/reference/sglang/record.py`).

mod semantics;
mod server;

use std::path::PathBuf;

use parity_core::{Context, Fixture, Logits, Semantics};
use serde_json::{Map, Value};
use sglang_sampling::{Sglang, seeded};

pub(crate) fn fixtures() -> PathBuf {
    parity_core::fixture::bundled_dir().expect("bundled fixtures")
}

struct Recorded {
    name: String,
    meta: Map<String, Value>,
    tensors: Vec<(String, Vec<u8>, safetensors::Dtype)>,
}

impl Recorded {
    fn bytes(&self, key: &str, dtype: safetensors::Dtype) -> &[u8] {
        let (_, b, d) = self
            .tensors
            .iter()
            .find(|(k, ..)| k == key)
            .unwrap_or_else(|| panic!("{}: no {key}", self.name));
        assert_eq!(*d, dtype, "{}: {key}", self.name);
        b
    }
    fn i64s(&self, key: &str) -> Vec<i64> {
        self.bytes(key, safetensors::Dtype::I64)
            .chunks_exact(8)
            .map(|c| i64::from_le_bytes(c.try_into().expect("8 bytes")))
            .collect()
    }
    fn f32s(&self, key: &str) -> Vec<f32> {
        self.bytes(key, safetensors::Dtype::F32)
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().expect("4 bytes")))
            .collect()
    }
    fn f64s(&self, key: &str) -> Vec<f64> {
        self.bytes(key, safetensors::Dtype::F64)
            .chunks_exact(8)
            .map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes")))
            .collect()
    }
    fn json(&self, key: &str) -> Value {
        serde_json::from_str(self.meta[key].as_str().expect("string")).expect("json metadata")
    }
}

fn recorded() -> Vec<Recorded> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(fixtures().join("sglang"))
        .expect("fixtures/sglang exists")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "safetensors"))
        .collect();
    paths.sort();
    assert!(
        paths.len() >= 34,
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

/// FNV-1a 64 of the f32 bytes, as record.py hashes whole vectors.
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
    let (mut cases, mut errors, mut greedy, mut kept_sets, mut draws) = (0, 0, 0, 0, 0);
    let mut max_dp = 0.0f64;
    for rec in recorded() {
        assert_eq!(rec.meta["sglang_version"], "0.5.23");
        assert_eq!(rec.meta["cpu_capability"], "AVX512", "{}", rec.name);
        let source = rec.meta["source"].as_str().expect("source").to_string();
        // Synthetic rows travel with their recording; the others come from
        // the fixture they name.
        let (raw, input_ids) = if source.starts_with("synthetic/") {
            (rec.f32s("logits"), rec.i64s("input_ids"))
        } else {
            let f = Fixture::load(&fixtures().join(&source)).expect("source fixture");
            (f.logits, f.input_ids)
        };
        let prompt_len: usize = rec.meta["prompt_len"]
            .as_str()
            .expect("str")
            .parse()
            .expect("int");
        let context = Context::new(&input_ids, Some(prompt_len)).expect("context");
        let logits = Logits::from_f32(&raw);
        let vocab = raw.len();
        for case in rec.json("cases").as_array().expect("cases") {
            let name = case["name"].as_str().expect("name");
            let what = format!("{source} {name}");
            let mut params = case["params"].as_object().expect("params").clone();
            if case.get("deterministic").is_some() {
                params.insert("enable_deterministic_inference".into(), Value::Bool(true));
            }
            let params = Sglang
                .parse_params(&params)
                .unwrap_or_else(|e| panic!("{what}: params refused: {e}"));
            let got = Sglang.distribution(&logits, &context, &params);
            cases += 1;
            if let Some(err) = case.get("error") {
                let err = err.as_str().expect("message");
                let ours = got.expect_err(&format!("{what}: SGLang raised {err}, we answered"));
                // Same failure: SGLang's exception class and the gist of its text.
                let class = err.split(':').next().expect("class");
                let ok = ours.to_string().contains(class)
                    || (err.contains("out of bounds")
                        && ours.to_string().contains("outside the vocabulary"));
                assert!(ok, "{what}: SGLang: {err}; ours: {ours}");
                errors += 1;
                continue;
            }
            let got = got.unwrap_or_else(|e| panic!("{what}: {e}"));
            let penalised = got.penalised().map_or_else(|| raw.clone(), <[f32]>::to_vec);
            assert_eq!(
                fnv1a64(&penalised),
                case["penalised_fnv1a64"].as_str().expect("hash"),
                "{what}: penalised logits differ"
            );
            if let Some(g) = case.get("greedy_token") {
                assert_eq!(
                    got.kept(),
                    &[g.as_u64().expect("token") as usize],
                    "{what}: greedy"
                );
                greedy += 1;
                continue;
            }
            if case.get("nan_weights").is_some() {
                let t = case["token"].as_u64().expect("token") as usize;
                assert_eq!(got.kept(), &[t], "{what}: all -inf row");
                continue;
            }
            // The whole weight vector, bit for bit.
            let step = sglang_sampling::step(&raw, &context, &params).expect("step");
            let w = &step.weights;
            assert_eq!(
                fnv1a64(w),
                case["weights_fnv1a64"].as_str().expect("hash"),
                "{what}: weights"
            );
            // multinomial_with_seed ran exactly when we replay seeded draws
            // (sampling_seed alone is ignored without the server flag).
            assert_eq!(
                case["seed_used"].as_bool(),
                Some(got.tokens().is_some()),
                "{what}: seeded path"
            );
            // The branch of SGLang's sampler, as record.py saw it taken.
            use sglang_sampling::Path;
            let path = match (step.path, got.tokens().is_some()) {
                (Path::Greedy, _) => "greedy",
                (Path::Simple, false) => "simple",
                (Path::Simple, true) => "seeded_simple",
                (Path::TopK, _) => "topk",
                (Path::Sorted, false) => "sorted",
                (Path::Sorted, true) => "seeded_sorted",
            };
            assert_eq!(case["path"].as_str(), Some(path), "{what}: path");
            let kept = case["kept"].as_u64().expect("kept") as usize;
            assert_eq!(got.kept().len(), kept, "{what}: kept count");
            let ids = rec.i64s(&format!("{name}.ids"));
            let ws = rec.f32s(&format!("{name}.weights"));
            let ps = rec.f64s(&format!("{name}.probs"));
            if ids.len() == kept {
                let mut want: Vec<usize> = ids.iter().map(|&i| i as usize).collect();
                want.sort_unstable();
                assert_eq!(got.kept(), want.as_slice(), "{what}: kept set");
                kept_sets += 1;
            }
            for ((&i, &wv), &pv) in ids.iter().zip(&ws).zip(&ps) {
                let i = i as usize;
                assert_eq!(w[i].to_bits(), wv.to_bits(), "{what}: weight of {i}");
                let d = (got.probs()[i] - pv).abs();
                max_dp = max_dp.max(d);
                assert!(
                    d <= 1e-12,
                    "{what}: p[{i}] = {} vs SGLang {pv}",
                    got.probs()[i]
                );
            }
            assert!(
                got.probs()
                    .iter()
                    .enumerate()
                    .all(|(i, &p)| p == 0.0 || w[i] > 0.0)
            );
            assert_eq!(got.probs().len(), vocab);
            if let Some(order) = case.get("order_prefix") {
                let want: Vec<usize> = order
                    .as_array()
                    .expect("order")
                    .iter()
                    .map(|v| v.as_u64().expect("id") as usize)
                    .collect();
                let ours = &step.columns;
                assert_eq!(
                    &ours[..want.len()],
                    want.as_slice(),
                    "{what}: torch's sort/topk order"
                );
            }
            if let Some(list) = case.get("draws") {
                assert_eq!(
                    got.tokens(),
                    Some(&[case["step_token"].as_i64().expect("token")][..]),
                    "{what}: the recorded step's seeded draw"
                );
                for d in list.as_array().expect("draws") {
                    let (seed, pos, col, token) = (
                        d[0].as_i64().expect("seed"),
                        d[1].as_i64().expect("position"),
                        d[2].as_u64().expect("column") as usize,
                        d[3].as_i64().expect("token"),
                    );
                    assert_eq!(
                        seeded::gumbel_argmax(&step.logprobs, seed, pos),
                        col,
                        "{what}: seed {seed} position {pos}"
                    );
                    assert_eq!(
                        step.columns[col] as i64, token,
                        "{what}: token of column {col}"
                    );
                    assert!(
                        got.kept().contains(&(token as usize)),
                        "{what}: draw outside the kept set"
                    );
                    draws += 1;
                }
            }
        }
    }
    eprintln!(
        "sglang: {cases} cases ({errors} refused as SGLang refused them, {greedy} greedy), {kept_sets} kept sets compared token by token, {draws} seeded draws replayed, max |Δp| {max_dp:e}"
    );
    assert!(cases >= 600 && draws >= 100, "{cases} cases, {draws} draws");
}

/// `compare semantics`' list is derived from the declared `sampling_params`;
/// each listed default, written out, is what the parser does with the field
/// left out.
#[test]
fn the_listed_params_and_defaults_are_the_parsers() {
    assert_eq!(parity_core::params::defaults_agree(&Sglang), Ok(()));
}
