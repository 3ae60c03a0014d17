//! Replays every case recorded from the real vLLM 0.32.0 sampler
//! (`fixtures/vllm/`, made by `scripts/reference/vllm/record.py`).

mod requests;
mod v2;

use std::path::PathBuf;

use parity_core::recording::{Recording, fnv1a64};
use parity_core::{Context, Fixture, Logits, Semantics};
use serde_json::Value;
use vllm_sampling::{Vllm, gumbel_argmax, kernel_seed};

fn fixtures() -> PathBuf {
    parity_core::fixture::bundled_dir().expect("bundled fixtures")
}

/// Every recorded file of the V1 sampler.
fn recorded() -> Vec<Recording> {
    recorded_in("vllm")
}

/// Every recorded file under `fixtures/<name>`, with a floor on how many
/// there are.
fn recorded_in(name: &str) -> Vec<Recording> {
    let all =
        Recording::list(&fixtures().join(name)).unwrap_or_else(|e| panic!("fixtures/{name}: {e}"));
    assert!(
        all.len() >= 20,
        "expected the recorded files in fixtures/{name}, found {}",
        all.len()
    );
    all
}

#[test]
fn every_recorded_case_replays() {
    let mut cases = 0;
    let mut draws = 0;
    let mut errors = 0;
    let mut max_dp = 0.0f64;
    let mut kept_checked = 0;
    for rec in recorded() {
        let source = rec.meta["source"].as_str().expect("source").to_string();
        let fixture = Fixture::load(&fixtures().join(&source)).expect("source fixture");
        let prompt_len: usize = rec.meta["prompt_len"]
            .as_str()
            .expect("str")
            .parse()
            .expect("int");
        let context = Context::new(&fixture.input_ids, Some(prompt_len)).expect("context");
        let logits = Logits::from_f32(&fixture.logits);
        let vocab = fixture.logits.len() as i64;
        let out_of_vocab = fixture.input_ids.iter().any(|&t| t < 0 || t >= vocab);
        for case in rec
            .meta_json("cases")
            .expect("recorded")
            .as_array()
            .expect("cases")
        {
            let name = case["name"].as_str().expect("name");
            let what = format!("{source} {name}");
            let params = Vllm::AUTO
                .parse_params(case["params"].as_object().expect("params"))
                .unwrap_or_else(|e| panic!("{what}: params refused: {e}"));
            let got = Vllm::AUTO.distribution(&logits, &context, &params);
            cases += 1;
            if out_of_vocab {
                // record.py hands the ids straight to the sampler; a real
                // request with them is refused earlier, by the renderer.
                let e = got.expect_err("out-of-vocabulary ids are refused");
                assert!(
                    e.to_string()
                        .starts_with("Token id 1000 is out of vocabulary"),
                    "{what}: {e}"
                );
                errors += 1;
                continue;
            }
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
            let ids = rec.i64s(&format!("{name}.ids")).expect("recorded");
            let fin = rec.f32s(&format!("{name}.final")).expect("recorded");
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
            let probs = rec.f64s(&format!("{name}.probs")).expect("recorded");
            if ids.len() as u64 == case["finite"].as_u64().expect("finite") {
                // Every finite final logit is stored: the tokens the kernel can
                // draw are those whose exact probability is positive.
                let kept: Vec<usize> = ids
                    .iter()
                    .zip(&probs)
                    .filter(|(_, p)| **p > 0.0)
                    .map(|(&i, _)| i as usize)
                    .collect();
                // An all -inf row: the kernel returns token 0 (the draws say so too).
                let kept = if kept.is_empty() { vec![0] } else { kept };
                assert_eq!(got.kept(), kept.as_slice(), "{what}: kept set");
                kept_checked += 1;
            }
            let nonfinite = case.get("nonfinite").is_some();
            for (&i, &p) in ids.iter().zip(&probs) {
                if nonfinite {
                    // +inf in the kernel's input: record.py's float64 softmax is
                    // NaN there; the real draws below are the reference.
                    break;
                }
                let d = (got.probs()[i as usize] - p).abs();
                max_dp = max_dp.max(d);
                assert!(
                    d <= 1e-6,
                    "{what}: p[{i}] = {} vs vLLM {p}",
                    got.probs()[i as usize]
                );
            }
            let seeds = rec.i64s(&format!("{name}.draw_seeds")).expect("recorded");
            let kseeds = rec.i64s(&format!("{name}.kernel_seeds")).expect("recorded");
            let tokens = rec.i64s(&format!("{name}.draw_tokens")).expect("recorded");
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
                assert!(
                    got.kept().contains(&(t as usize)),
                    "{what}: real draw {t} outside the kept set"
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
        "vllm: {cases} cases ({errors} refused: ids outside the vocabulary, which vLLM refuses too), {kept_checked} kept sets compared token by token, {draws} real draws replayed, max |Δp| {max_dp:e}"
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
    for r in rec
        .meta_json("rejected")
        .expect("recorded")
        .as_array()
        .expect("list")
    {
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
        let err = Vllm::AUTO
            .parse_params(&params)
            .expect_err("vLLM refused these");
        assert_eq!(
            err.to_string(),
            r["error"].as_str().expect("message"),
            "{params:?}"
        );
        n += 1;
    }
    assert!(n >= 12, "{n}");
}

#[test]
fn top_p_through_a_tie_keeps_the_id_torchs_sort_leaves_last() {
    // Run once on vLLM 0.32.0's Sampler while writing record.py: logits
    // [3, 2, 2, 1, 0.5, -1, 0, 1.5], prompt [1, 2, 3], output [2, 4],
    // temperature 0.7, top_k 3, top_p 0.9, repetition_penalty 1.3, seed 5.
    // The kernel received [4.2857, -inf, 2.1978, -inf, -inf, -inf, -inf, -inf]
    // (3/0.7, and 2·f32(1/1.3)/0.7 for id 2) with kernel seed 236996814 and
    // drew token 0. Ids 1 and 2 tie after the penalty; top-p keeps the one
    // torch's ascending sort puts last (id 2).
    let ids = [1, 2, 3, 2, 4];
    let ctx = Context::new(&ids, Some(3)).expect("context");
    let logits = Logits::from_f32(&[3.0, 2.0, 2.0, 1.0, 0.5, -1.0, 0.0, 1.5]);
    let params = serde_json::json!({"temperature": 0.7, "top_k": 3, "top_p": 0.9, "repetition_penalty": 1.3, "seed": 5});
    let p = Vllm::AUTO
        .parse_params(params.as_object().expect("object"))
        .expect("valid");
    let d = Vllm::AUTO
        .distribution(&logits, &ctx, &p)
        .expect("distribution");
    assert_eq!(d.kept(), &[0, 2]);
    let s = d.scores().expect("final logits");
    assert!(
        (s[0] - 4.2857).abs() < 1e-4 && (s[2] - 2.1978).abs() < 1e-4,
        "{s:?}"
    );
    assert_eq!(kernel_seed(5, 0), 236_996_814);
    assert_eq!(d.tokens(), Some(&[0i64][..]));
}

/// `compare semantics`' list is derived from `VllmParams`; each listed
/// default, written out, is what the parser does with the field left out.
#[test]
fn the_listed_params_and_defaults_are_the_parsers() {
    assert_eq!(parity_core::params::defaults_agree(&Vllm::AUTO), Ok(()));
    let names: Vec<_> = Vllm::AUTO.info().params.iter().map(|p| p.name).collect();
    assert_eq!(names, vllm_sampling::VllmParams::FIELDS);
}
