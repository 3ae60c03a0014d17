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
    /// transformers (left) against the tutorial (right), or why the
    /// tutorial's code raises.
    comparison: Result<Comparison, String>,
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
            let comparison = Tutorial
                .distribution(&logits, &context, &params)
                .map(|ours| Comparison::new(&hf, ours.probs()).expect("same vocabulary"))
                .map_err(|e| e.to_string());
            out.push(Row {
                fixture: fx.name.clone(),
                setting: s.name.clone(),
                comparison,
            });
        }
    }
    out
}

fn same(c: &Result<Comparison, String>) -> bool {
    c.as_ref()
        .is_ok_and(|c| c.only_left.is_empty() && c.only_right.is_empty())
}

#[test]
fn same_kept_set_means_same_probabilities() {
    let rows = rows();
    assert!(rows.len() > 100, "only {} rows", rows.len());
    for r in rows.iter() {
        if let (true, Ok(c)) = (same(&r.comparison), &r.comparison) {
            assert!(
                c.max_abs_diff <= 1e-12,
                "{} {}: max |dp| {:e}",
                r.fixture,
                r.setting,
                c.max_abs_diff
            );
        }
    }
}

/// Every (fixture, setting) where the tutorial keeps other tokens than
/// transformers (kept counts transformers/tutorial), and why. Not listed:
/// every `k40`/`k40p09` row on an edge file with V < 40 and `top_k_huge`,
/// where torch's `topk` raises in the tutorial while transformers clamps k
/// to V (checked separately below).
#[test]
fn where_the_tutorial_parts_from_transformers() {
    let parted: Vec<String> = rows()
        .iter()
        .filter(|r| !same(&r.comparison) && r.comparison.is_ok())
        .map(|r| match &r.comparison {
            Ok(c) => format!(
                "{} {} {}/{}",
                r.fixture, r.setting, c.kept_left, c.kept_right
            ),
            Err(e) => format!("{} {} raises: {e}", r.fixture, r.setting),
        })
        .collect();
    let expected = [
        // transformers' silent top_k=50; the tutorial's default is 0.
        "hello_k0 t07_default 50/49152",
        "hello_k0 default 50/49152",
        "hello_k17 t07_default 50/49152",
        "hello_k17 default 50/49152",
        "hello_k7 t07_default 50/49152",
        "hello_k7 default 50/49152",
        "write_k0 t07_default 50/49152",
        "write_k0 default 50/49152",
        "write_k60 t07_default 50/49152",
        "write_k60 default 50/49152",
        "write_k7 t07_default 50/49152",
        "write_k7 default 50/49152",
        // Eight ties of 1/8, p = 0.5: the mass before the fifth is exactly
        // 1/2, not above p, so the tutorial keeps five; transformers removes
        // ascending cumulative mass <= 1/2 and keeps four.
        "all_equal_v8 p05 4/5",
        // p = 0.3: three each, but the tutorial keeps ids 0-2 and
        // transformers ids 5-7 (the ties torch's ascending sort leaves last).
        "all_equal_v8 p03 3/3",
        // Two tied tokens of 1/2 each: the second has exactly 1/2 before it.
        "huge_1e30 p05 1/2",
        // Int ties: same sizes or not, the cut runs through a tie and torch's
        // sort (V = 1000, unstable) picks other ids than the lower ones.
        "int_ties_v1000 t07_default 120/1000",
        "int_ties_v1000 p09 189/189",
        "int_ties_v1000 k40p09 109/109",
        "int_ties_v1000 default 120/1000",
        "int_ties_v1000 p05 90/90",
        "int_ties_v1000 p095 332/332",
        "int_ties_v1000 k100p05 60/60",
        // Six probabilities of exactly 1/6, p = 0.5: the fourth has 1/2 before it.
        "tiny_1e30 p05 3/4",
        // The boundary token has a mass before it of p within f32 rounding:
        // transformers' f32 sum removes it, the tutorial's f64 mass does not
        // exceed p. The other boundary files land on the same side for both.
        "top_p_boundary_080_eq p080 2/3",
        "top_p_boundary_080_eq p080_default_top_k 2/3",
    ];
    assert_eq!(parted, expected);
}

#[test]
fn top_k_beyond_the_vocabulary_raises_in_the_tutorial_only() {
    let raised: Vec<String> = rows()
        .into_iter()
        .filter_map(|r| {
            r.comparison
                .err()
                .map(|e| format!("{} {}: {e}", r.fixture, r.setting))
        })
        .collect();
    // 19 edge files store both k40 and k40p09 with V < 40 (all but
    // int_ties_v1000, with V = 1000; all_neg_inf, which stores no sampling
    // setting; and invalid_settings), and invalid_settings stores top_k=1000
    // with V = 5.
    assert_eq!(raised.len(), 2 * 19 + 1, "{raised:#?}");
    for r in &raised {
        assert!(r.contains("torch's topk raises"), "{r}");
    }
}

/// `explain` on three parting rows: its reason, and a fix only where the fix
/// reproduces transformers.
#[test]
fn explain_names_the_rule_that_parts() {
    use parity_core::Against;
    let explain = |file: &str, setting: &str| {
        let fx = Fixture::load(
            &parity_core::fixture::bundled_dir()
                .expect("bundled fixtures")
                .join(file),
        )
        .expect("loads");
        let s = fx.setting(setting).expect("setting");
        let params = Tutorial
            .from_generate(&s.kwargs)
            .expect("expressible")
            .expect("valid");
        let context = Context::new(&fx.input_ids, None).expect("context");
        let hf =
            parity_core::Distribution::new(softmax_f64(&s.scores), parity_core::Precision::F32);
        let ours = Tutorial
            .distribution(&Logits::from_f32(&fx.logits), &context, &params)
            .expect("runs");
        let comparison = Comparison::new(hf.probs(), ours.probs()).expect("same V");
        let row = Against {
            kwargs: &s.kwargs,
            generation_config: None,
            logits: &fx.logits,
            context,
            transformers: &hf,
            this: &ours,
            comparison: &comparison,
            variant: None,
        };
        Tutorial.explain(&row, &params)
    };

    let e = explain("smollm2/write_k60.safetensors", "t07_default");
    assert_eq!(e.reasons.len(), 1, "{e:?}");
    assert!(e.reasons[0].starts_with("default top-k 50"), "{e:?}");
    let fix = e.fix.expect("top_k=50 reproduces transformers");
    assert_eq!(fix.params.get("top_k"), Some(&serde_json::json!(50)));

    // V = 3: the default top-k 50 does nothing here, so only the boundary.
    let e = explain(
        "edge/top_p_boundary_080_eq.safetensors",
        "p080_default_top_k",
    );
    assert_eq!(e.reasons.len(), 1, "{e:?}");
    let e = explain("edge/top_p_boundary_080_eq.safetensors", "p080");
    assert!(e.reasons[0].starts_with("top-p boundary"), "{e:?}");
    assert!(e.fix.is_none());

    let e = explain("edge/all_equal_v8.safetensors", "p03");
    assert_eq!(e.reasons.len(), 1, "{e:?}");
    assert!(
        e.reasons[0].starts_with("top-p cut through tied logits"),
        "{e:?}"
    );

    // p = 0.5 on eight ties: other ids *and* one more token (the boundary).
    let e = explain("edge/all_equal_v8.safetensors", "p05");
    assert_eq!(e.reasons.len(), 2, "{e:?}");
    assert!(e.reasons[1].starts_with("top-p boundary"), "{e:?}");

    // int_ties_v1000 default: top-k 50 keeps all 120 tied fours in both
    // engines once fixed, so the fix is proven there too.
    let e = explain("edge/int_ties_v1000.safetensors", "default");
    assert!(e.fix.is_some(), "{e:?}");
}
