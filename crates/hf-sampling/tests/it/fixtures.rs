//! Every committed fixture, every setting: hf-sampling against transformers 5.23.0.
//!
//! Tolerances (docs/hf-sampling.md): scores within 1e-6 relative (and -inf exactly
//! where transformers has -inf), probabilities within 1e-5 absolute of the
//! softmax of transformers' scores (computed in f64 by parity-core), identical
//! kept sets. Every `rejected` setting must be rejected by resolve/process.

use hf_sampling::{HfError, process, resolve};
use parity_core::fixture::{Fixture, bundled_fixtures};
use parity_core::metrics::softmax_f64;

const SCORE_REL_TOL: f32 = 1e-6;
const PROB_ABS_TOL: f64 = 1e-5;

fn load_all() -> Vec<Fixture> {
    let paths = bundled_fixtures().expect("list fixtures");
    assert!(!paths.is_empty(), "no fixtures found");
    paths
        .iter()
        .map(|p| Fixture::load(p).unwrap_or_else(|e| panic!("{e}")))
        .collect()
}

#[derive(Default)]
struct Stats {
    settings: usize,
    max_rel_score: f32,
    max_abs_prob: f64,
}

fn check_setting(
    fx: &Fixture,
    name: &str,
    kwargs: &serde_json::Map<String, serde_json::Value>,
    expected: &[f32],
    stats: &mut Stats,
) -> Vec<String> {
    let mut failures = Vec::new();
    let ctx = format!(
        "{}::{name} {}",
        fx.name,
        serde_json::Value::Object(kwargs.clone())
    );
    let params = match resolve(kwargs, None) {
        Ok(p) => p,
        Err(e) => return vec![format!("{ctx}: resolve failed: {e}")],
    };
    let out = match process(&fx.logits, &fx.input_ids, &params) {
        Ok(o) => o,
        Err(e) => return vec![format!("{ctx}: process failed: {e}")],
    };
    assert_eq!(out.scores.len(), expected.len());
    for (i, (&got, &want)) in out.scores.iter().zip(expected).enumerate() {
        if want == f32::NEG_INFINITY || got == f32::NEG_INFINITY {
            if got != want {
                failures.push(format!("{ctx}: score[{i}] = {got}, transformers {want}"));
            }
            continue;
        }
        let rel = if got == want {
            0.0
        } else {
            (got - want).abs() / want.abs().max(f32::MIN_POSITIVE)
        };
        stats.max_rel_score = stats.max_rel_score.max(rel);
        if rel > SCORE_REL_TOL {
            failures.push(format!(
                "{ctx}: score[{i}] = {got:e}, transformers {want:e} (rel {rel:e})"
            ));
        }
    }
    if params.do_sample {
        let reference = softmax_f64(expected);
        for (i, (&p, &q)) in out.probs.iter().zip(&reference).enumerate() {
            let d = (p as f64 - q).abs();
            stats.max_abs_prob = stats.max_abs_prob.max(d);
            if d > PROB_ABS_TOL {
                failures.push(format!(
                    "{ctx}: prob[{i}] = {p:e}, softmax(transformers) {q:e}"
                ));
            }
        }
        let kept_ref: Vec<usize> = (0..reference.len())
            .filter(|&i| (reference[i] as f32) > 0.0)
            .collect();
        if out.kept != kept_ref {
            failures.push(format!(
                "{ctx}: kept {:?} vs transformers {:?}",
                out.kept, kept_ref
            ));
        }
    } else {
        // Greedy: transformers' token is the first argmax of its scores.
        let mut best = 0;
        for (i, &s) in expected.iter().enumerate() {
            if s > expected[best] {
                best = i;
            }
        }
        if out.greedy != Some(best) || out.kept != vec![best] {
            failures.push(format!(
                "{ctx}: greedy {:?}, transformers {best}",
                out.greedy
            ));
        }
    }
    stats.settings += 1;
    failures
}

#[test]
fn every_fixture_setting_matches_transformers() {
    let mut stats = Stats::default();
    let mut failures = Vec::new();
    let fixtures = load_all();
    for fx in &fixtures {
        for s in &fx.settings {
            failures.extend(check_setting(fx, &s.name, &s.kwargs, &s.scores, &mut stats));
        }
    }
    eprintln!(
        "{} fixtures, {} settings: max relative score error {:e}, max |Δp| {:e}",
        fixtures.len(),
        stats.settings,
        stats.max_rel_score,
        stats.max_abs_prob
    );
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn every_rejected_setting_is_rejected() {
    let mut checked = 0;
    let mut failures = Vec::new();
    for fx in load_all() {
        for r in &fx.rejected {
            let result =
                resolve(&r.kwargs, None).and_then(|p| process(&fx.logits, &fx.input_ids, &p));
            match result {
                Ok(_) => failures.push(format!(
                    "{}::{} {:?} accepted; transformers: {}",
                    fx.name, r.name, r.kwargs, r.error
                )),
                Err(e) => eprintln!(
                    "{}::{}: ours: {e}\n    transformers: {}",
                    fx.name,
                    r.name,
                    r.error.lines().next().unwrap_or("")
                ),
            }
            checked += 1;
        }
    }
    eprintln!("{checked} rejected settings checked");
    assert!(checked > 0);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn temperature_zero_error_points_to_greedy() {
    let kwargs = serde_json::json!({"do_sample": true, "temperature": 0.0});
    let err = resolve(kwargs.as_object().expect("object"), None).expect_err("must reject");
    assert!(matches!(err, HfError::Temperature { zero: true, .. }));
    assert!(err.to_string().contains("do_sample=False"), "{err}");
    assert!(err.to_string().contains("(=0.0)"), "{err}");
}

/// `process_with_fragile` (what `compare check` runs per row) is `process`
/// and `fragile` in one run of the chain: the same output and the same
/// fragile decisions on every fixture and setting (the top-p boundary
/// fixtures are the fragile ones), and the same error where either fails.
#[test]
fn process_with_fragile_is_process_and_fragile() {
    let (mut compared, mut with_fragile) = (0, 0);
    for fx in &load_all() {
        let n = fx.input_ids.len();
        for s in &fx.settings {
            let params = resolve(&s.kwargs, None).expect("recorded setting resolves");
            let what = format!("{}::{}", fx.name, s.name);
            let both = hf_sampling::process_with_fragile(&fx.logits, &fx.input_ids, n, &params);
            match process(&fx.logits, &fx.input_ids, &params) {
                Ok(out) => {
                    let fragile = hf_sampling::fragile(&fx.logits, &fx.input_ids, n, &params)
                        .expect("fragile where process succeeds");
                    let (got, got_fragile) = both.unwrap_or_else(|e| panic!("{what}: {e}"));
                    assert_eq!(got, out, "{what}: output");
                    assert_eq!(got_fragile, fragile, "{what}: fragile");
                    with_fragile += usize::from(!fragile.is_empty());
                }
                Err(e) => assert_eq!(both.expect_err(&what).to_string(), e.to_string(), "{what}"),
            }
            compared += 1;
        }
    }
    eprintln!("{compared} settings compared, {with_fragile} with fragile decisions");
    assert!(
        compared > 400 && with_fragile > 10,
        "{compared} / {with_fragile}"
    );
}
