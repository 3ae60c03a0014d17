//! The tie case: candle's TopK keeps exactly k, transformers keeps the ties.

use candle_adapter::{CandleRun, VerifyOptions};

use crate::common::{fixture, hf_probs, kept, params, run, verify_mirror};

#[test]
fn top_k_2_on_3221_keeps_exactly_two() {
    let fx = fixture("edge", "ties_3221");
    assert_eq!(fx.logits, vec![3.0, 2.0, 2.0, 1.0]);
    let run = CandleRun::new(
        &fx.logits,
        &[],
        &params(r#"{"sampling":"TopK","temperature":1.0,"k":2}"#),
    )
    .expect("run");
    let m = run.mirrored();
    assert_eq!(m.kept.len(), 2, "{:?}", m.kept);
    assert_eq!(m.kept[0], 0);
    assert!(m.kept[1] == 1 || m.kept[1] == 2, "{:?}", m.kept);
    eprintln!(
        "candle keeps {:?} (candidates/weights {:?})",
        m.kept,
        m.weighted()
    );
    let hf = fx.setting("top_k2").expect("top_k2");
    let hf_kept = kept(&hf_probs(&hf.scores, false));
    assert_eq!(hf_kept, vec![0, 1, 2]);
    let n = 4000;
    let v = verify_mirror(
        "ties_3221 TopK k=2",
        &run,
        &VerifyOptions {
            seed: 299_792_458,
            draws: n,
            streams: 2,
            other_kept: Some(&hf_kept),
            ..VerifyOptions::default()
        },
    );
    let real = run.real_draws(299_792_458, n).expect("draws");
    let f0 = real.iter().filter(|&&t| t == 0).count() as f64 / n as f64;
    let f1 = real.iter().filter(|&&t| t == m.kept[1]).count() as f64 / n as f64;
    let e = std::f64::consts::E;
    let p0 = e.powi(3) / (e.powi(3) + e.powi(2)); // e³/(e³+e²) = 0.7310585786
    eprintln!(
        "real draws: token 0 {f0:.4}, token {} {f1:.4} (expected {p0:.4}/{:.4})",
        m.kept[1],
        1.0 - p0
    );
    assert!((m.probs[0] - p0).abs() < 1e-6);
    // 4000 draws: sd = sqrt(.731*.269/4000) = 0.0070; 5 sd.
    assert!((f0 - p0).abs() < 0.035, "{f0}");
    assert_eq!(f0 + f1, 1.0);
    assert_eq!(v.outside_other_kept, Some(0.0));

    // The closure keeps the tie: exactly transformers' top_k=2 (3 tokens).
    let run = CandleRun::new(
        &fx.logits,
        &[],
        &params(r#"{"sampling":"All","temperature":1.0,"hf_top_k":2}"#),
    )
    .expect("closure");
    let hf_p = hf_probs(&hf.scores, false);
    assert_eq!(run.mirrored().kept, vec![0, 1, 2]);
    for (a, b) in run.mirrored().probs.iter().zip(&hf_p) {
        assert!(
            (a - b).abs() < 1e-6,
            "{:?} vs {hf_p:?}",
            run.mirrored().probs
        );
    }
    let v = verify_mirror(
        "ties_3221 All+hf_top_k=2",
        &run,
        &VerifyOptions {
            draws: 4000,
            streams: 2,
            reference: Some(&hf_p),
            ..VerifyOptions::default()
        },
    );
    let r = v.vs_reference.expect("reference");
    assert!(
        r.gof.p_value.is_some_and(|p| p >= crate::common::ALPHA),
        "{r:?}"
    );
}

#[test]
fn int_ties_top_k_5() {
    // 120 tokens share the top value 4: transformers keeps all 120, candle 5.
    let fx = fixture("edge", "int_ties_v1000");
    let hf = fx.setting("top_k5").expect("top_k5");
    let hf_kept = kept(&hf_probs(&hf.scores, false));
    let plain = run(&fx, r#"{"sampling":"TopK","temperature":1.0,"k":5}"#);
    assert_eq!(plain.mirrored().kept.len(), 5);
    assert!(hf_kept.len() > 5, "{}", hf_kept.len());
    let with_closure = run(&fx, r#"{"sampling":"All","temperature":1.0,"hf_top_k":5}"#);
    let ours: Vec<usize> = with_closure
        .mirrored()
        .kept
        .iter()
        .map(|&t| t as usize)
        .collect();
    assert_eq!(ours, hf_kept);
}
