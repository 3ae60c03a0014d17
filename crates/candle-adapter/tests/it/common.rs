use candle_adapter::{CandleParams, CandleRun, Verification, VerifyOptions};
use parity_core::Fixture;
use parity_core::fixture::bundled_dir;

/// Significance level for every goodness-of-fit test of seeded draws
/// (deterministic: the same p-value on every run).
pub const ALPHA: f64 = 1e-3;

/// Significance level for draws no seed fixes: `GumbelSoftmax` samples from
/// candle's CPU device RNG, which candle cannot seed (`set_seed` bails in
/// candle-core 0.11's cpu_backend), so its p-value is new on every run. At
/// 1e-3 the suite's ~20 such tests failed about one run in fifty with
/// nothing wrong (seen once on main); at 1e-9 a run with nothing wrong fails
/// about once in fifty million, while a wrong distribution over 2,000 draws
/// still lands far below it.
pub const ALPHA_UNSEEDED: f64 = 1e-9;

pub fn fixture(group: &str, name: &str) -> Fixture {
    let path = bundled_dir()
        .expect("bundled fixtures")
        .join(group)
        .join(format!("{name}.safetensors"));
    Fixture::load(&path).unwrap_or_else(|e| panic!("loading {}: {e}", path.display()))
}

pub fn params(json: &str) -> CandleParams {
    json.parse()
        .unwrap_or_else(|e| panic!("params {json}: {e}"))
}

/// The real processor and its mirror on a fixture's logits and input ids.
pub fn run(fx: &Fixture, json: &str) -> CandleRun {
    CandleRun::new(&fx.logits, &fx.input_ids, &params(json))
        .unwrap_or_else(|e| panic!("{} {json}: {e}", fx.name))
}

/// transformers' distribution from recorded scores: softmax, or the one-hot of
/// the first argmax for a greedy setting.
pub fn hf_probs(scores: &[f32], greedy: bool) -> Vec<f64> {
    if greedy {
        let mut best = 0;
        for (i, &s) in scores.iter().enumerate() {
            if s > scores[best] {
                best = i;
            }
        }
        let mut p = vec![0.0; scores.len()];
        p[best] = 1.0;
        p
    } else {
        parity_core::metrics::softmax_f64(scores)
    }
}

pub fn kept(probs: &[f64]) -> Vec<usize> {
    (0..probs.len()).filter(|&i| probs[i] > 0.0).collect()
}

/// Verify and assert the mirror: every draw replayed, no draw outside the
/// mirrored kept set, goodness of fit not rejected at ALPHA.
pub fn verify_mirror(label: &str, run: &CandleRun, opts: &VerifyOptions<'_>) -> Verification {
    let v = run
        .verify(opts)
        .unwrap_or_else(|e| panic!("{label}: verify failed: {e}"));
    eprintln!(
        "{label}: {} kept={} draws={} replay={:?} max|f-p|={:.4} chi2={:.2} dof={} p={:?} \
         outside_mirror={} outside_other={:?} {:.1} us/draw",
        v.sampling,
        v.mirror_kept,
        v.draws,
        v.replay.as_ref().map(|r| (r.agreed, r.checked)),
        v.vs_mirror.max_abs_diff,
        v.vs_mirror.gof.statistic,
        v.vs_mirror.gof.dof,
        v.vs_mirror.gof.p_value,
        v.outside_mirror_kept,
        v.outside_other_kept,
        v.secs_per_real_draw * 1e6
    );
    if let Some(r) = &v.replay {
        assert_eq!(
            r.agreed, r.checked,
            "{label}: replay disagrees: {:?}",
            r.first_disagreement
        );
        assert_eq!(r.checked, opts.draws, "{label}");
    }
    assert_eq!(
        v.outside_mirror_kept, 0.0,
        "{label}: draw outside the mirror"
    );
    if let Some(p) = v.vs_mirror.gof.p_value {
        let alpha = if v.replay.is_some() {
            ALPHA
        } else {
            ALPHA_UNSEEDED
        };
        assert!(
            p >= alpha,
            "{label}: GoF p = {p:e} < {alpha:e}: {:?}",
            v.vs_mirror
        );
    }
    v
}
