//! `CandleRun::verify_shared`: a stream drawn once per process and reused
//! by every call whose real processor sees the same inputs gives exactly
//! what fresh real draws give, and inputs that differ never share.

use candle_adapter::{CandleRun, Verification, VerifyOptions};

use crate::common::{fixture, params};

const TOP_K: &str = r#"{"sampling":"TopK","temperature":0.7,"k":40}"#;

fn draws_of(v: &Verification) -> (&[u64], Option<&candle_adapter::Replay>, f64) {
    (
        v.counts.as_slice(),
        v.replay.as_ref(),
        v.vs_mirror.max_abs_diff,
    )
}

#[test]
fn a_shared_stream_is_what_fresh_real_draws_give() {
    let fx = fixture("smollm2", "hello_k7");
    let build =
        |json: &str| CandleRun::new(&fx.logits, &fx.input_ids, &params(json)).expect("candle run");
    let kept: Vec<usize> = (0..40).collect();
    let opts = VerifyOptions {
        seed: 7,
        draws: 300,
        streams: 2,
        other_kept: Some(&kept),
        ..VerifyOptions::default()
    };
    let fresh = build(TOP_K).verify(&opts).expect("fresh draws");
    // Twice on separately built runs: the first call may draw, the second
    // reuses; both must be the fresh real draws.
    for _ in 0..2 {
        let shared = build(TOP_K).verify_shared(&opts).expect("shared draws");
        assert_eq!(draws_of(&shared), draws_of(&fresh));
        assert_eq!(shared.outside_other_kept, fresh.outside_other_kept);
        assert_eq!(shared.replay.as_ref().map(|r| r.agreed), Some(300));
    }
    // Options that only shape the figures are applied to the shared stream.
    let other: Vec<usize> = vec![fx.logits.len() - 1];
    let with_other = VerifyOptions {
        other_kept: Some(&other),
        ..opts
    };
    let shared = build(TOP_K).verify_shared(&with_other).expect("shared");
    let fresh_other = build(TOP_K).verify(&with_other).expect("fresh");
    assert_eq!(shared.outside_other_kept, fresh_other.outside_other_kept);
    assert_eq!(shared.outside_other_kept, Some(1.0));
    // A different seed or setup is a different stream.
    let reseeded = build(TOP_K)
        .verify_shared(&VerifyOptions { seed: 8, ..opts })
        .expect("reseeded");
    assert_ne!(reseeded.counts, fresh.counts);
    let hotter = build(r#"{"sampling":"TopK","temperature":1.5,"k":40}"#)
        .verify_shared(&opts)
        .expect("hotter");
    assert_ne!(hotter.counts, fresh.counts);
}
