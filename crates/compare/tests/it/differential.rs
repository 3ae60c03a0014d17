//! Differential tests where the semantics must agree: hf, candle and the spec on temperature-only and top-p-only settings, and the fast sampler against the reference path.
//!
//! On random logits without ties, a temperature-only and a top-p-only setting
//! must give the same distribution, within 1e-5 per token, under transformers
//! (`hf-sampling`), candle (`candle-adapter`'s mirror of the real
//! `LogitsProcessor`) and the written spec (`spec-sampler`). And hf-sampling's
//! fast sampler (`HfSampler`) must keep exactly the tokens its reference path
//! (the `hf-rust` semantics, `hf_sampling::HfRust`) keeps, on every generated
//! input.
//!
//! Tolerance: 1e-5 absolute per probability. hf-sampling and candle compute in
//! f32 (candle multiplies by 1/T where torch divides by T), the spec in f64;
//! their differences are a few f32 ulps of values ≤ 1, far below 1e-5.

use candle_adapter::{Candle, CandleParams, CandleSampling};
use hf_sampling::{GenerationParams, HfRust, HfSampler};
use parity_core::{Context, Distribution, Error, Logits, Semantics};
use proptest::prelude::*;
use spec_sampler::{Input, Params, RepetitionPenalty, Temperature, TopK, TopP, U};

const TOLERANCE: f64 = 1e-5;

/// 2..200 logits in [-20, 20], all distinct (a tie is a different test).
fn logits_without_ties() -> impl Strategy<Value = Vec<f32>> {
    prop::collection::vec(-20.0f32..20.0, 2..200).prop_filter("no ties", |l| {
        let mut s = l.clone();
        s.sort_by(f32::total_cmp);
        s.windows(2).all(|w| w[0] != w[1])
    })
}

/// transformers' distribution (the `hf-rust` semantics) after `context`,
/// all of it the prompt.
fn hf_distribution(
    logits: &[f32],
    context: &[i64],
    params: &GenerationParams,
) -> Result<Distribution, Error> {
    let context = Context::new(context, None)?;
    HfRust::default().distribution(&Logits::from_f32(logits), &context, params)
}

fn hf_probs(logits: &[f32], params: &GenerationParams) -> Vec<f64> {
    hf_distribution(logits, &[], params)
        .expect("valid hf input")
        .into_probs()
}

fn candle_probs(logits: &[f32], sampling: CandleSampling) -> Vec<f64> {
    let context = Context::new(&[], None).expect("an empty context");
    Candle::LITERAL
        .distribution(
            &Logits::from_f32(logits),
            &context,
            &CandleParams::new(sampling),
        )
        .expect("valid candle input")
        .into_probs()
}

fn spec_probs(logits: &[f32], temperature: f64, top_p: f64) -> Vec<f64> {
    let params = Params {
        temperature: Temperature::new(temperature).expect("T > 0"),
        top_k: TopK::new(0),
        top_p: TopP::new(top_p).expect("p in (0, 1]"),
        repetition_penalty: RepetitionPenalty::new(1.0).expect("1"),
        u: U::new(0.0).expect("0"),
    };
    let logits = logits.iter().map(|&l| f64::from(l)).collect();
    let input = Input::from_parts(logits, Vec::new(), params).expect("finite logits");
    spec_sampler::distribution(&input).into_probs()
}

fn max_abs_diff(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max)
}

/// Asserts the three distributions agree within [`TOLERANCE`], printing all.
fn assert_agree(hf: &[f64], candle: &[f64], spec: &[f64]) -> Result<(), TestCaseError> {
    for (name, other) in [("candle", candle), ("spec", spec)] {
        let d = max_abs_diff(hf, other);
        prop_assert!(
            d <= TOLERANCE,
            "hf vs {name}: max |Δp| = {d:e} > {TOLERANCE:e}\n  hf:     {hf:?}\n  {name}: {other:?}"
        );
    }
    Ok(())
}

/// The probabilities sorted descending, as f64 softmax of `logits / t`: where
/// each top-p cut falls, to skip cases whose cut is within rounding of p.
fn sorted_softmax(logits: &[f32], t: f64) -> Vec<f64> {
    let x: Vec<f64> = logits.iter().map(|&l| f64::from(l) / t).collect();
    let max = x.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mut e: Vec<f64> = x.iter().map(|v| (v - max).exp()).collect();
    let sum: f64 = e.iter().sum();
    e.iter_mut().for_each(|v| *v /= sum);
    e.sort_by(|a, b| b.total_cmp(a));
    e
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn temperature_only_agrees(logits in logits_without_ties(), t in 0.05f64..5.0) {
        // transformers: do_sample with T and top-k off (its default is 50).
        let hf = hf_probs(&logits, &GenerationParams {
            do_sample: true,
            temperature: t,
            top_k: None,
            ..GenerationParams::default()
        });
        let candle = candle_probs(&logits, CandleSampling::All { temperature: t });
        let spec = spec_probs(&logits, t, 1.0);
        assert_agree(&hf, &candle, &spec)?;
    }

    #[test]
    fn top_p_only_agrees(logits in logits_without_ties(), p in 0.05f64..0.99) {
        // Skip inputs whose cumulative mass passes within 1e-4 of p: there the
        // f32 sums of transformers (ascending) and candle (descending) may
        // round to different sides, a documented boundary difference.
        let sorted = sorted_softmax(&logits, 1.0);
        let mut cum = 0.0;
        let near_cut = sorted.iter().any(|q| {
            cum += q;
            (cum - p).abs() < 1e-4
        });
        prop_assume!(!near_cut);
        let hf = hf_probs(&logits, &GenerationParams {
            do_sample: true,
            top_k: None,
            top_p: p,
            ..GenerationParams::default()
        });
        let candle = candle_probs(&logits, CandleSampling::TopP { p, temperature: 1.0 });
        let spec = spec_probs(&logits, 1.0, p);
        // Same kept sets, then the same renormalised probabilities.
        let kept = |v: &[f64]| v.iter().map(|&x| x > 0.0).collect::<Vec<_>>();
        prop_assert_eq!(kept(&hf), kept(&candle), "hf vs candle kept sets");
        prop_assert_eq!(kept(&hf), kept(&spec), "hf vs spec kept sets");
        assert_agree(&hf, &candle, &spec)?;
    }
}

/// transformers generation parameters as the fast sampler meets them:
/// greedy or sampling, with any mix of the processors it accelerates.
fn hf_params() -> impl Strategy<Value = GenerationParams> {
    (
        any::<bool>(),
        prop_oneof![Just(1.0f64), 0.1f64..3.0],
        prop_oneof![Just(None), (1usize..300).prop_map(Some)],
        prop_oneof![Just(1.0f64), 0.01f64..1.0],
        prop_oneof![Just(None), (0.0f64..0.5).prop_map(Some)],
        prop_oneof![Just(1.0f64), 0.5f64..2.0],
    )
        .prop_map(
            |(do_sample, temperature, top_k, top_p, min_p, repetition_penalty)| GenerationParams {
                do_sample,
                temperature,
                top_k,
                top_p,
                min_p,
                repetition_penalty,
                ..GenerationParams::default()
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn fast_sampler_keeps_the_reference_kept_set(
        logits in prop::collection::vec(-30.0f32..30.0, 1..400),
        context in prop::collection::vec(0i64..450, 0..20),
        params in hf_params(),
    ) {
        let reference = hf_distribution(&logits, &context, &params);
        let mut fast = HfSampler::new(&params).expect("valid params");
        let fast = fast.distribution(&logits, &context);
        match (reference, fast) {
            (Ok(r), Ok(f)) => {
                let fast_kept: Vec<usize> = f.kept.iter().map(|&i| i as usize).collect();
                prop_assert_eq!(
                    r.kept(), &fast_kept[..],
                    "kept sets differ ({:?} path) for {:?}", f.path, params
                );
            }
            (Err(r), Err(f)) => prop_assert_eq!(r.to_string(), f.to_string()),
            (r, f) => prop_assert!(false, "one errs: reference {:?}, fast {:?}", r.map(|d| d.kept().to_vec()), f.map(|d| d.kept.to_vec())),
        }
    }
}
