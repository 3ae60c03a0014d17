//! GumbelSoftmax: candle's device RNG, so frequencies only, against the
//! clipped-Gumbel distribution it really samples.

use candle_adapter::{Draw, GumbelDistribution, VerifyOptions};

use crate::common::{fixture, run, verify_mirror};

#[test]
fn clipping_makes_far_tokens_unreachable() {
    // Gap 10 > g_hi - g_lo ≈ 9.69: softmax gives e^-10/(1+e^-10) = 4.54e-5,
    // the clipped noise gives exactly 0.
    let (g, probs) = GumbelDistribution::new(&[0.0, -10.0], 1.0);
    assert_eq!(probs, vec![1.0, 0.0]);
    assert!((g.softmax[1] - 4.5397868702434395e-5).abs() < 1e-12);
    assert_eq!(g.unreachable_tokens, 1);
    let (lo, hi) = g.noise_range;
    assert!((hi - lo - 9.6872).abs() < 1e-3, "{lo} {hi}");
    // Equal logits: symmetric, 1/2 each.
    let (_, probs) = GumbelDistribution::new(&[1.0, 1.0], 0.5);
    assert!((probs[0] - 0.5).abs() < 1e-9);
}

#[test]
fn close_to_softmax_when_gaps_are_small() {
    // Gaps well inside the noise range: the clipped law is close to softmax.
    let (g, probs) = GumbelDistribution::new(&[3.0, 2.0, 2.0, 1.0], 1.0);
    eprintln!(
        "[3,2,2,1] clipped {probs:?} softmax {:?} tv {:e} mass {}",
        g.softmax, g.tv_vs_softmax, g.quadrature_mass
    );
    // The upper clip shifts about 1e-3 of mass to the top token.
    assert!(
        g.tv_vs_softmax > 5e-4 && g.tv_vs_softmax < 2e-3,
        "{}",
        g.tv_vs_softmax
    );
    assert!(probs[0] > g.softmax[0]);
    assert!((g.quadrature_mass - 1.0).abs() < 1e-4);
}

#[test]
fn real_draws_fit_the_clipped_distribution() {
    for (group, name, draws) in [
        ("edge", "ties_3221", 3000),
        ("edge", "int_ties_v1000", 3000),
        ("smollm2", "write_k60", 1500),
        ("edge", "huge_1e30", 500),
    ] {
        let fx = fixture(group, name);
        let run = run(&fx, r#"{"sampling":"GumbelSoftmax","temperature":1.0}"#);
        let Draw::Gumbel(g) = &run.mirrored().draw else {
            panic!("not gumbel");
        };
        eprintln!(
            "{name}: support={} unreachable={} (softmax mass {:e}) tv_vs_softmax={:e} quadrature mass {}",
            g.support,
            g.unreachable_tokens,
            g.unreachable_softmax_mass,
            g.tv_vs_softmax,
            g.quadrature_mass
        );
        let v = verify_mirror(
            &format!("{name} Gumbel"),
            &run,
            &VerifyOptions {
                draws,
                streams: 2,
                ..VerifyOptions::default()
            },
        );
        assert!(v.replay.is_none());
    }
}
