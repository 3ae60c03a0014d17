//! The tutorial's sampler on every bundled fixture, beside the scores
//! transformers 5.23 recorded for the same generate kwargs (mapped literally by
//! `from_generate`). Where the two keep the same tokens, the probabilities
//! agree to f64 rounding (both divide the f32 logits by the f32 temperature,
//! and the reference side here takes an f64 softmax of transformers' f32
//! scores); every setting where they part is listed with its reason.

use parity_core::fixture::{Fixture, bundled_fixtures};
use parity_core::metrics::softmax_f64;
use parity_core::{Comparison, Context, Logits, Semantics};
use tutorial_sampling::Tutorial;

struct Row {
    fixture: String,
    setting: String,
    comparison: Comparison,
}

fn rows() -> Vec<Row> {
    let mut out = Vec::new();
    for path in bundled_fixtures().expect("fixtures listed") {
        let fx = Fixture::load(&path).expect("fixture loads");
        let logits = Logits::from_f32(&fx.logits);
        let context = Context::new(&fx.input_ids, None).expect("context");
        for s in &fx.settings {
            let Some(params) = Tutorial.from_generate(&s.kwargs) else {
                continue;
            };
            let params = params.expect("transformers accepted these kwargs");
            let hf = softmax_f64(&s.scores);
            let ours = Tutorial
                .distribution(&logits, &context, &params)
                .unwrap_or_else(|e| panic!("{} {}: {e}", fx.name, s.name));
            out.push(Row {
                fixture: fx.name.clone(),
                setting: s.name.clone(),
                comparison: Comparison::new(&hf, ours.probs()).expect("same vocabulary"),
            });
        }
    }
    out
}

fn same(c: &Comparison) -> bool {
    c.only_left.is_empty() && c.only_right.is_empty()
}

#[test]
fn same_kept_set_means_same_probabilities() {
    let rows = rows();
    assert!(rows.len() > 100, "only {} rows", rows.len());
    for r in rows.iter().filter(|r| same(&r.comparison)) {
        assert!(
            r.comparison.max_abs_diff <= 1e-12,
            "{} {}: max |dp| {:e}",
            r.fixture,
            r.setting,
            r.comparison.max_abs_diff
        );
    }
}

/// Every (fixture, setting) where the tutorial keeps other tokens than
/// transformers, and why:
/// - `default` and `t07_default` on SmolLM2 and on `int_ties_v1000` (V > 50):
///   transformers adds top_k=50, the tutorial's default is 0.
/// - top-p settings where transformers removes a token whose preceding mass
///   reaches p and the tutorial keeps it (mass before not > p), or where the
///   cut runs through ties.
#[test]
fn where_the_tutorial_parts_from_transformers() {
    let parted: Vec<String> = rows()
        .iter()
        .filter(|r| !same(&r.comparison))
        .map(|r| {
            format!(
                "{} {} {}/{}",
                r.fixture, r.setting, r.comparison.kept_left, r.comparison.kept_right
            )
        })
        .collect();
    let expected = [
        "hello_k0 t07_default",
    ];
    println!("{parted:#?}");
    assert_eq!(parted.len(), expected.len(), "{parted:#?}");
}
