//! transformers settings → candle, verified by real draws against the
//! transformers scores recorded in the fixtures.

use candle_adapter::{CandleRun, CandleSampling, VerifyOptions, translate_kwargs};
use parity_core::Fixture;
use parity_core::fixture::bundled_fixtures;

use crate::common::{ALPHA, fixture, hf_probs, kept, verify_mirror};

#[test]
fn issue_mapping() {
    let kw = |s: &str| -> serde_json::Map<String, serde_json::Value> {
        serde_json::from_str(s).expect("json")
    };
    let t = translate_kwargs(&kw(r#"{"do_sample": true, "temperature": 0.7}"#), None).expect("t");
    assert_eq!(
        t.candle.sampling,
        CandleSampling::TopK {
            k: 50,
            temperature: 0.7
        }
    );
    assert_eq!(t.exact.as_ref().and_then(|e| e.hf_top_k), Some(50));
    let t = translate_kwargs(&kw(r#"{"do_sample": false, "temperature": 0.0}"#), None).expect("t");
    assert_eq!(t.candle.sampling, CandleSampling::ArgMax {});
    assert!(t.warnings.iter().any(|w| w.code() == "greedy_is_argmax"));
    let e = translate_kwargs(&kw(r#"{"do_sample": true, "temperature": 0.0}"#), None);
    assert!(e.is_err(), "{e:?}");
    let t = translate_kwargs(
        &kw(r#"{"do_sample": true, "top_k": 0, "min_p": 0.05}"#),
        None,
    )
    .expect("t");
    assert!(t.exact.is_none());
    assert!(t.warnings.iter().any(|w| w.code() == "unsupported"));
    assert!(t.warnings.iter().any(|w| w.code() == "top_k_off"));
    let t = translate_kwargs(
        &kw(r#"{"do_sample": true, "top_k": 40, "top_p": 0.9, "repetition_penalty": 1.3}"#),
        None,
    )
    .expect("t");
    assert!(
        t.warnings
            .iter()
            .any(|w| w.code() == "top_p_not_renormalised")
    );
    assert!(
        t.warnings
            .iter()
            .any(|w| w.code() == "repeat_penalty_window")
    );
    let json = serde_json::to_string(&t).expect("serialise");
    eprintln!("{json}");
}

/// Whether every token kept by only one side has the same probability as the
/// smallest kept one on both sides (a cut through a group of ties; distinct
/// logits can still have equal probabilities, as in `tiny_1e30`).
fn ties_only(logits: &[f32], a: &[usize], b: &[usize]) -> bool {
    let logits = parity_core::metrics::softmax_f64(logits);
    let min = |s: &[usize]| s.iter().map(|&i| logits[i]).fold(f64::INFINITY, f64::min);
    let (ma, mb) = (min(a), min(b));
    ma == mb
        && a.iter()
            .filter(|i| !b.contains(i))
            .chain(b.iter().filter(|i| !a.contains(i)))
            .all(|&i| logits[i] == ma)
}

/// Whether the sets differ only by the crossing token: one set is the other
/// plus its least probable token (a top-p cut on an f32 rounding boundary).
fn boundary_only(logits: &[f32], a: &[usize], b: &[usize]) -> bool {
    let (big, small) = if a.len() > b.len() { (a, b) } else { (b, a) };
    if big.len() != small.len() + 1 || !small.iter().all(|i| big.contains(i)) {
        return false;
    }
    let extra = big.iter().find(|i| !small.contains(i)).copied();
    let least = big
        .iter()
        .copied()
        .min_by(|&i, &j| logits[i].total_cmp(&logits[j]));
    extra.is_some() && extra == least
}

fn check_fixture(fx: &Fixture, draws: usize, exact_draws: bool) {
    for s in &fx.settings {
        let label = format!("{} {}", fx.name, s.name);
        let t = match translate_kwargs(&s.kwargs, None) {
            Ok(t) => t,
            Err(e) => panic!("{label}: translate failed though transformers accepted it: {e}"),
        };
        let greedy = t.candle.sampling == CandleSampling::ArgMax {}
            && s.kwargs.get("do_sample").and_then(|v| v.as_bool()) != Some(true);
        let hf_p = hf_probs(&s.scores, greedy);
        let hf_kept = kept(&hf_p);
        let Some(exact) = &t.exact else {
            // No candle counterpart (min-p, typical, epsilon, eta): report only.
            let plain = CandleRun::new(&fx.logits, &fx.input_ids, &t.candle).expect(&label);
            let extra = plain.mirrored().kept.len() as i64 - hf_kept.len() as i64;
            eprintln!(
                "{label}: no exact candle recipe; plain {} keeps {extra:+} tokens vs transformers",
                t.candle.sampling
            );
            continue;
        };
        let run = match CandleRun::new(&fx.logits, &fx.input_ids, exact) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("{label}: candle fails: {e}");
                continue;
            }
        };
        let m = run.mirrored();
        let ours: Vec<usize> = m.kept.iter().map(|&i| i as usize).collect();
        let max_diff = m
            .probs
            .iter()
            .zip(&hf_p)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        eprintln!(
            "{label}: {} hf_top_k={:?} kept candle={} hf={} max|dp|={max_diff:e}",
            exact.sampling,
            exact.hf_top_k,
            ours.len(),
            hf_kept.len()
        );
        if ours != hf_kept {
            // Allowed only for top-p cutting through tied logits: transformers
            // keeps the tied tokens torch's sort puts last, candle the ones its
            // stable descending sort puts first.
            assert!(
                ties_only(&m.penalised_logits, &ours, &hf_kept)
                    || boundary_only(&m.penalised_logits, &ours, &hf_kept),
                "{label}: kept sets differ: candle {ours:?} transformers {hf_kept:?}"
            );
            assert!(
                t.warnings.iter().any(|w| w.code() == "top_p_boundary"),
                "{label}"
            );
            eprintln!(
                "{label}: top-p cut differs (ties or f32 boundary): candle {ours:?} vs transformers {hf_kept:?}"
            );
            continue;
        }
        assert!(max_diff < 1e-5, "{label}: {max_diff}");
        if !exact_draws && !matches!(exact.sampling, CandleSampling::ArgMax {}) {
            continue;
        }
        let v = verify_mirror(
            &label,
            &run,
            &VerifyOptions {
                seed: 5,
                draws,
                streams: 2,
                other_kept: Some(&hf_kept),
                reference: Some(&hf_p),
                real_per_stream: None,
            },
        );
        assert_eq!(v.outside_other_kept, Some(0.0), "{label}");
        let r = v.vs_reference.expect("reference");
        assert!(r.gof.p_value.is_none_or(|p| p >= ALPHA), "{label}: {r:?}");
    }
}

#[test]
fn every_model_setting_with_real_draws() {
    for name in ["write_k60", "hello_k7"] {
        check_fixture(&fixture("smollm2", name), 600, true);
    }
}

#[test]
fn every_fixture_setting_distribution() {
    // All bundled fixtures: mirror vs recorded scores (no draws for the model
    // files, which the test above covers; edge files with draws).
    for path in bundled_fixtures().expect("fixtures") {
        let fx = Fixture::load(&path).expect("load");
        let is_model = fx.model.is_some();
        check_fixture(&fx, 1000, !is_model);
    }
}

/// Every processor beyond the sampling kwargs gets a warning saying how
/// candle reproduces it (greedy too); renormalisation changes nothing.
#[test]
fn processor_kwargs_are_explained() {
    let kw = |s: &str| -> serde_json::Map<String, serde_json::Value> {
        serde_json::from_str(s).expect("json")
    };
    let t = translate_kwargs(
        &kw(
            r#"{"do_sample": false, "no_repeat_ngram_size": 3, "bad_words_ids": [[5]],
               "min_new_tokens": 4, "eos_token_id": 2, "suppress_tokens": [7],
               "renormalize_logits": true}"#,
        ),
        None,
    )
    .expect("valid");
    let names: Vec<String> = t
        .warnings
        .iter()
        .filter(|w| w.code() == "processor")
        .map(|w| w.to_string())
        .collect();
    for name in [
        "no_repeat_ngram_size",
        "bad_words_ids",
        "min_length/min_new_tokens",
        "suppress_tokens",
        "renormalize_logits",
    ] {
        assert!(
            names.iter().any(|w| w.starts_with(&format!("{name}:"))),
            "{name} missing in {names:?}"
        );
    }
    assert!(names.iter().any(|w| w.contains("-inf")), "{names:?}");
    // Without an eos id the min-length processors do not exist: no warning.
    let t =
        translate_kwargs(&kw(r#"{"do_sample": true, "min_new_tokens": 4}"#), None).expect("valid");
    assert!(
        t.warnings.iter().all(|w| w.code() != "processor"),
        "{:?}",
        t.warnings
    );
}

/// Which processors get a warning is transformers' rule (hf_sampling::Acting).
/// transformers 5.23.0 `generation/utils.py`: `TopHLogitsWarper` is a warper,
/// built only `if generation_config.do_sample:` (lines 1597, 1614);
/// `_prepare_generated_length` sets `min_length = min_new_tokens + input_ids_length`
/// when `min_new_tokens` is set (line 2061), so `min_length` 5 with
/// `min_new_tokens` 0 masks nothing: that used to get a warning.
#[test]
fn processors_transformers_does_not_run_get_no_warning() {
    let kw = |s: &str| -> serde_json::Map<String, serde_json::Value> {
        serde_json::from_str(s).expect("json")
    };
    let t = translate_kwargs(
        &kw(r#"{"do_sample": false, "top_h": 0.5, "eos_token_id": 2,
               "min_length": 5, "min_new_tokens": 0}"#),
        None,
    )
    .expect("valid");
    assert!(
        t.warnings.iter().all(|w| w.code() != "processor"),
        "{:?}",
        t.warnings
    );
    // Sampling, top_h runs; min_length alone (no min_new_tokens) runs too.
    let t = translate_kwargs(
        &kw(r#"{"do_sample": true, "top_h": 0.5, "eos_token_id": 2, "min_length": 5}"#),
        None,
    )
    .expect("valid");
    let names: Vec<String> = t.warnings.iter().map(|w| w.to_string()).collect();
    for name in ["top_h:", "min_length/min_new_tokens:"] {
        assert!(
            names.iter().any(|w| w.starts_with(name)),
            "{name} in {names:?}"
        );
    }
}
