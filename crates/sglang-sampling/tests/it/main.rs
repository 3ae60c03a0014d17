//! Replays every case recorded from the real SGLang 0.5.23 sampler
//! (`fixtures/sglang/`, made by `scripts/reference/sglang/record.py`).

mod semantics;
mod server;

use std::path::PathBuf;

use parity_core::recording::{Recording, fnv1a64};
use parity_core::{Context, Fixture, Logits, Semantics};
use serde_json::Value;
use sglang_sampling::{Sglang, seeded};

pub(crate) fn fixtures() -> PathBuf {
    parity_core::fixture::bundled_dir().expect("bundled fixtures")
}

/// Every recorded file, with a floor on how many there are.
fn recorded() -> Vec<Recording> {
    let all = Recording::list(&fixtures().join("sglang")).expect("fixtures/sglang");
    assert!(
        all.len() >= 34,
        "expected the recorded files, found {}",
        all.len()
    );
    all
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
            (
                rec.f32s("logits").expect("recorded"),
                rec.i64s("input_ids").expect("recorded"),
            )
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
        for case in rec
            .meta_json("cases")
            .expect("recorded")
            .as_array()
            .expect("cases")
        {
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
            let ids = rec.i64s(&format!("{name}.ids")).expect("recorded");
            let ws = rec.f32s(&format!("{name}.weights")).expect("recorded");
            let ps = rec.f64s(&format!("{name}.probs")).expect("recorded");
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
