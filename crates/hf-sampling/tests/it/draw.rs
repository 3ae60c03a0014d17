//! `draw` samples the distribution it is given (chi-square test).

use hf_sampling::draw;
use rand::SeedableRng;
use rand::rngs::StdRng;

#[test]
fn draw_frequencies_match_probs() {
    let probs = [0.5f32, 0.0, 0.25, 0.125, 0.125];
    let mut rng = StdRng::seed_from_u64(7);
    let n = 40_000;
    let mut counts = [0usize; 5];
    for _ in 0..n {
        counts[draw(&probs, &mut rng).expect("a token")] += 1;
    }
    assert_eq!(counts[1], 0, "probability-0 token drawn");
    // Pearson chi-square over the 4 positive cells, 3 degrees of freedom:
    // the 0.999 quantile is 16.27, so a correct sampler fails 1 run in 1000.
    let chi2: f64 = [0, 2, 3, 4]
        .iter()
        .map(|&i| {
            let e = probs[i] as f64 * n as f64;
            (counts[i] as f64 - e).powi(2) / e
        })
        .sum();
    assert!(chi2 < 16.27, "chi2 = {chi2}, counts {counts:?}");
}

#[test]
fn draw_none_without_mass() {
    let mut rng = StdRng::seed_from_u64(1);
    assert_eq!(draw(&[0.0, 0.0], &mut rng), None);
    assert_eq!(draw(&[], &mut rng), None);
    assert_eq!(draw(&[0.0, 1.0], &mut rng), Some(1));
}
