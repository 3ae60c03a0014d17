//! The test of a server's draws against a candidate distribution, and the
//! number of draws that tells two candidates apart.
//!
//! Two statistics, each with an exact or Monte-Carlo p-value, combined by
//! Bonferroni (`p = min(1, 2 min(p_support, p_shape))`), so the result is a
//! valid p-value whatever the cells look like (no pooling, no χ²
//! approximation):
//!
//! - **support**: `t` = the smallest candidate probability of any drawn
//!   cell. Under the candidate every draw lands in `{q ≥ t}` with
//!   probability `F(t) = Σ_{q_i ≥ t} q_i`, so `P(T ≥ t) = F(t)^n` exactly.
//!   A candidate that spreads mass over tokens the draws never reach (a
//!   larger top-k or top-p set) gets a small `F(t)^n`: the mass it puts
//!   outside the draws' reach counts against it, whatever it is pooled
//!   with. A draw on a cell the candidate gives 0 is impossible: p = 0.
//! - **shape**: the likelihood-ratio statistic `G = 2 Σ o ln(o / (n q))`
//!   over every cell, its p-value the share of `sims` multinomial samples
//!   of the same size from the candidate (a seeded RNG: the same inputs give
//!   the same p-value) with `G ≥ G_obs`, `(1 + hits) / (1 + sims)` (never 0,
//!   at least `1 / (1 + sims)`).

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use statrs::distribution::{ChiSquared, ContinuousCDF};

/// Monte-Carlo samples of the shape statistic: its p-value is at least
/// 1/10000, so the combined p-value can reach 2e-4.
pub(crate) const SIMS: usize = 9_999;

/// The test's result.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Fit {
    /// The combined p-value.
    pub p: f64,
    /// `F(t)^n` (support).
    pub p_support: f64,
    /// Monte-Carlo p-value of G (shape); not run when the support p-value
    /// alone is below anything it could give.
    pub p_shape: Option<f64>,
    /// The observed G.
    pub g: f64,
}

/// `G = 2 Σ o ln(o / (n q))` over the cells with `o > 0` (`q` normalised
/// over its positive cells). Infinite when a draw hit a cell with `q = 0`.
pub(crate) fn g_statistic(counts: &[u64], probs: &[f64]) -> f64 {
    let n: u64 = counts.iter().sum();
    let total: f64 = probs.iter().filter(|p| **p > 0.0).sum();
    let n = n as f64;
    let mut g = 0.0;
    for (&c, &q) in counts.iter().zip(probs) {
        if c == 0 {
            continue;
        }
        if q <= 0.0 {
            return f64::INFINITY;
        }
        let o = c as f64;
        g += o * (o / (n * q / total)).ln();
    }
    2.0 * g
}

/// `F(t)^n`: the exact probability, under `probs`, that n draws all land on
/// cells at least as likely as the least likely cell drawn.
pub(crate) fn support_p(counts: &[u64], probs: &[f64]) -> f64 {
    let n: u64 = counts.iter().sum();
    if n == 0 {
        return 1.0;
    }
    let total: f64 = probs.iter().filter(|p| **p > 0.0).sum();
    let mut t = f64::INFINITY;
    for (&c, &q) in counts.iter().zip(probs) {
        if c > 0 {
            if q <= 0.0 {
                return 0.0;
            }
            t = t.min(q);
        }
    }
    let outside: f64 = probs.iter().filter(|&&q| q > 0.0 && q < t).sum::<f64>() / total;
    if outside <= 0.0 {
        return 1.0;
    }
    // (1 - m)^n without losing a small m.
    (n as f64 * (-outside).ln_1p()).exp()
}

/// Cumulative weights of the positive cells, for drawing by bisection.
struct Sampler {
    cells: Vec<usize>,
    cumulative: Vec<f64>,
}

impl Sampler {
    fn new(probs: &[f64]) -> Self {
        let mut cells = Vec::new();
        let mut cumulative = Vec::new();
        let mut sum = 0.0;
        for (i, &q) in probs.iter().enumerate() {
            if q > 0.0 {
                sum += q;
                cells.push(i);
                cumulative.push(sum);
            }
        }
        Self { cells, cumulative }
    }

    fn draw(&self, rng: &mut StdRng) -> usize {
        let total = self.cumulative.last().copied().unwrap_or(0.0);
        let u = rng.random::<f64>() * total;
        let k = self.cumulative.partition_point(|&c| c <= u);
        self.cells[k.min(self.cells.len() - 1)]
    }
}

/// G of the draws counted in `count` (the cells in `touched`, which are
/// reset to 0 on the way) under `probs`.
fn g_of_draws(
    count: &mut [u32],
    touched: &mut Vec<usize>,
    n: f64,
    probs: &[f64],
    total: f64,
) -> f64 {
    let mut g = 0.0;
    for &cell in touched.iter() {
        let o = f64::from(count[cell]);
        if o > 0.0 {
            g += o * (o / (n * probs[cell] / total)).ln();
            count[cell] = 0;
        }
    }
    touched.clear();
    2.0 * g
}

/// Hits after which the Monte-Carlo loop stops: the sequential p-value
/// `hits / sims run` of Besag & Clifford (1991, "Sequential Monte Carlo
/// p-values", Biometrika 78(2) 301–304) is then valid and well above any
/// threshold the probe uses (at least 100 / 10,000 = 0.01).
const STOP_HITS: usize = 100;

/// Monte-Carlo p-value of G: `(1 + #{G_sim ≥ G_obs}) / (1 + sims)`, or
/// `hits / sims run` once [`STOP_HITS`] simulated G reach the observed one.
pub(crate) fn shape_p(
    counts: &[u64],
    probs: &[f64],
    seed: u64,
    sims: usize,
    stop_hits: usize,
) -> (f64, f64) {
    let n: u64 = counts.iter().sum();
    let g = g_statistic(counts, probs);
    if n == 0 {
        return (1.0, 0.0);
    }
    if g.is_infinite() {
        return (0.0, g);
    }
    let sampler = Sampler::new(probs);
    if sampler.cells.len() < 2 {
        return (1.0, g);
    }
    let total: f64 = probs.iter().filter(|p| **p > 0.0).sum();
    let mut rng = StdRng::seed_from_u64(seed);
    let mut count = vec![0u32; probs.len()];
    let mut touched = Vec::with_capacity(n as usize);
    // Float noise: a simulated G equal to the observed one counts as a hit.
    let bar = g - 1e-9 * g.abs().max(1.0);
    let mut hits = 0usize;
    for run in 1..=sims {
        for _ in 0..n {
            let cell = sampler.draw(&mut rng);
            if count[cell] == 0 {
                touched.push(cell);
            }
            count[cell] += 1;
        }
        if g_of_draws(&mut count, &mut touched, n as f64, probs, total) >= bar {
            hits += 1;
            if hits == stop_hits {
                return (hits as f64 / run as f64, g);
            }
        }
    }
    ((1 + hits) as f64 / (1 + sims) as f64, g)
}

/// Both statistics and the combined p-value of `counts` under `probs` (the
/// same cells; a truncated list's tail is a cell like any other). With
/// `coarse`, the shape test runs on those counts and probabilities instead:
/// cells fixed before any draw, where `counts`' cells are not (the tokens a
/// draw named get a cell of their own, each drawn at least once by
/// construction, which would inflate G; the support statistic only needs
/// the drawn tokens' probabilities, which naming them gives exactly).
pub(crate) fn fit(
    counts: &[u64],
    probs: &[f64],
    coarse: Option<(&[u64], &[f64])>,
    seed: u64,
    sims: usize,
) -> Fit {
    let p_support = support_p(counts, probs);
    let (shape_counts, shape_probs) = coarse.unwrap_or((counts, probs));
    // Twice a support p-value below the smallest shape p-value decides the
    // minimum: no need to simulate.
    if 2.0 * p_support < 0.5 / (1 + sims) as f64 {
        return Fit {
            p: 2.0 * p_support,
            p_support,
            p_shape: None,
            g: g_statistic(shape_counts, shape_probs),
        };
    }
    let (p_shape, g) = shape_p(shape_counts, shape_probs, seed, sims, STOP_HITS);
    Fit {
        p: (2.0 * p_support.min(p_shape)).min(1.0),
        p_support,
        p_shape: Some(p_shape),
        g,
    }
}

/// The best fit of `counts` over several configurations of the same cells
/// (the tails a truncated list allows, `cells`): the largest combined
/// p-value found, an approximation from below of the supremum over the
/// unknown tail (so a candidate it rules out could fit a configuration not
/// simulated, which the grid's spacing makes unlikely, not impossible).
/// Simulating every
/// configuration would cost `sims` draws of n each; the support p-value and
/// G are exact and cheap, so the Monte Carlo runs only where the largest p
/// can be: at the configuration with the largest support p-value, at the one
/// with the smallest G and at its two neighbours on the grid (G's p-value
/// falls as G grows, the null distribution of G moving little between
/// neighbouring tails). `None` without configurations.
pub(crate) fn best_fit(
    counts: &[u64],
    per: &[Vec<f64>],
    coarse: Option<(&[u64], &[Vec<f64>])>,
    seed: u64,
    sims: usize,
) -> Option<Fit> {
    let shape = |i: usize| match coarse {
        Some((c, q)) => (c, q[i].as_slice()),
        None => (counts, per[i].as_slice()),
    };
    let pick =
        |key: &dyn Fn(usize) -> f64| (0..per.len()).min_by(|&a, &b| key(a).total_cmp(&key(b)));
    let least_g = pick(&|i| {
        let (c, q) = shape(i);
        g_statistic(c, q)
    })?;
    let most_support = pick(&|i| -support_p(counts, &per[i]))?;
    let mut tried = vec![most_support, least_g];
    if least_g > 0 {
        tried.push(least_g - 1);
    }
    if least_g + 1 < per.len() {
        tried.push(least_g + 1);
    }
    tried.sort_unstable();
    tried.dedup();
    tried
        .into_iter()
        .map(|i| {
            let c = coarse.map(|_| shape(i));
            fit(counts, &per[i], c, seed, sims)
        })
        .max_by(|a, b| a.p.total_cmp(&b.p))
}

/// The draws needed so that, when the server samples from `truth`, the
/// candidate `other` is ruled out (combined p below `alpha`) with about 95 %
/// probability: the fewer of what the support test needs (no draw in the
/// mass `m` that `other` puts below `truth`'s least likely kept token:
/// `(1 − m)^n ≤ α/2`; or a draw on a token `other` gives 0, mass `m0`:
/// `1 − (1 − m0)^n ≥ 0.95`) and what the shape test needs (the noncentral
/// χ² of G, df + 2n·KL(truth‖other), two standard deviations above the
/// χ²(df) quantile at 1 − α/2). `None` when no number of draws does (the
/// two agree on every cell).
pub(crate) fn draws_to_rule_out(truth: &[f64], other: &[f64], alpha: f64) -> Option<u64> {
    let t_total: f64 = truth.iter().filter(|p| **p > 0.0).sum();
    let o_total: f64 = other.iter().filter(|p| **p > 0.0).sum();
    if t_total <= 0.0 || o_total <= 0.0 {
        return None;
    }
    let mut best: Option<f64> = None;
    let mut keep = |n: f64| {
        if n.is_finite() && n > 0.0 {
            best = Some(best.map_or(n, |b: f64| b.min(n)));
        }
    };
    // A draw where `other` has nothing.
    let m0: f64 = truth
        .iter()
        .zip(other)
        .filter(|&(&t, &o)| t > 0.0 && o <= 0.0)
        .map(|(t, _)| t / t_total)
        .sum();
    if m0 > 0.0 {
        keep(0.05f64.ln() / (-m0).ln_1p());
    }
    // `other`'s mass below the least likely token (in `other`'s order) that
    // `truth` can draw.
    let t_min = truth
        .iter()
        .zip(other)
        .filter(|&(&t, &o)| t > 0.0 && o > 0.0)
        .map(|(_, &o)| o)
        .fold(f64::INFINITY, f64::min);
    if t_min.is_finite() {
        let m: f64 = other.iter().filter(|&&o| o > 0.0 && o < t_min).sum::<f64>() / o_total;
        if m > 0.0 {
            keep((alpha / 2.0).ln() / (-m).ln_1p());
        }
    }
    // Shape.
    let kl: f64 = truth
        .iter()
        .zip(other)
        .filter(|&(&t, &o)| t > 0.0 && o > 0.0)
        .map(|(&t, &o)| {
            let (t, o) = (t / t_total, o / o_total);
            t * (t / o).ln()
        })
        .sum();
    let df = other.iter().filter(|&&o| o > 0.0).count().saturating_sub(1) as f64;
    if kl > 1e-12
        && df >= 1.0
        && let Ok(chi) = ChiSquared::new(df)
    {
        let critical = chi.inverse_cdf(1.0 - alpha / 2.0);
        // Smallest n with df + λ − 2 sqrt(2 (df + 2λ)) ≥ critical, λ = 2n KL.
        let enough = |n: f64| {
            let lambda = 2.0 * n * kl;
            df + lambda - 2.0 * (2.0 * (df + 2.0 * lambda)).sqrt() >= critical
        };
        let (mut lo, mut hi) = (0.0f64, 1.0f64);
        while !enough(hi) && hi < 1e12 {
            lo = hi;
            hi *= 2.0;
        }
        if enough(hi) {
            while hi - lo > 0.5 {
                let mid = 0.5 * (lo + hi);
                if enough(mid) {
                    hi = mid;
                } else {
                    lo = mid;
                }
            }
            keep(hi);
        }
    }
    best.map(|n| n.ceil() as u64)
}

/// Draws that tell `a` and `b` apart whichever of the two the server runs.
pub(crate) fn draws_to_separate(a: &[f64], b: &[f64], alpha: f64) -> Option<u64> {
    Some(draws_to_rule_out(a, b, alpha)?.max(draws_to_rule_out(b, a, alpha)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The values below were computed with scipy 1.14.1 (numpy 2) in
    /// /work/venvs/probe; each test quotes its call.
    #[test]
    fn g_is_scipys_log_likelihood_power_divergence() {
        // scipy.stats.power_divergence([60, 40], [50, 50],
        //     lambda_="log-likelihood").statistic = 4.027102710137775
        let g = g_statistic(&[60, 40], &[0.5, 0.5]);
        assert!((g - 4.027102710137775).abs() < 1e-12, "{g}");
        // power_divergence([12, 5, 3], [8, 8, 4], lambda_="log-likelihood")
        //     .statistic = 3.3050338674279036 (a cell the candidate gives 0
        //     and nobody drew adds nothing)
        let g = g_statistic(&[12, 5, 3, 0], &[0.4, 0.4, 0.2, 0.0]);
        assert!((g - 3.3050338674279036).abs() < 1e-12, "{g}");
        assert!(g_statistic(&[1, 1], &[1.0, 0.0]).is_infinite());
    }

    #[test]
    fn the_support_p_value_is_scipys_binomial_zero() {
        // 200 draws, all in the top 21 of a candidate that keeps 8 % more
        // below them: scipy.stats.binom.pmf(0, 200, 0.08) = 5.722232097691525e-08
        let mut probs = vec![0.92 / 21.0; 21];
        probs.extend(vec![0.08 / 147.0; 147]);
        let mut counts = vec![0u64; 168];
        for (i, c) in counts.iter_mut().take(21).enumerate() {
            *c = if i < 11 { 10 } else { 9 };
        }
        let p = support_p(&counts, &probs);
        let scipy = 5.722_232_097_691_525e-8;
        assert!((p / scipy - 1.0).abs() < 1e-9, "{p}");
        // A draw on a zero cell, and draws that reach the least likely cell.
        assert_eq!(support_p(&[1, 0, 1], &[0.5, 0.5, 0.0]), 0.0);
        assert_eq!(support_p(&[5, 1], &[0.9, 0.1]), 1.0);
    }

    #[test]
    fn the_monte_carlo_p_value_matches_the_exact_multinomial_one() {
        // scipy: the exact P(G >= G_obs) for counts [7, 2, 1] under
        // [0.5, 0.3, 0.2], summing scipy.stats.multinomial.pmf(c, 10, p) over
        // every outcome c of 10 draws whose power_divergence(c, 10 p,
        // lambda_="log-likelihood").statistic is at least the observed
        // 1.7024565191444323: 0.49820500000000034
        let exact = 0.498_205_000_000_000_34;
        let (p, g) = shape_p(&[7, 2, 1], &[0.5, 0.3, 0.2], 7, 40_000, usize::MAX);
        assert!((g - 1.702_456_519_144_432_3).abs() < 1e-12, "{g}");
        // Monte-Carlo standard error sqrt(p(1-p)/40000) = 0.0025.
        assert!((p - exact).abs() < 0.01, "{p} vs {exact}");
        // Seeded: the same call gives the same value.
        assert_eq!(
            shape_p(&[7, 2, 1], &[0.5, 0.3, 0.2], 7, 40_000, usize::MAX).0,
            p
        );
        // Large counts, where χ² is accurate: power_divergence([600, 400],
        // [550, 450], lambda_="log-likelihood").statistic = 10.187223862448832,
        // scipy.stats.chi2.sf(10.187223862448832, 1) = 0.0014141706280090672.
        let (p, g) = shape_p(&[600, 400], &[0.55, 0.45], 3, 20_000, usize::MAX);
        assert!((g - 10.187_223_862_448_832).abs() < 1e-9, "{g}");
        // Standard error sqrt(0.0014/20000) = 0.00027.
        assert!((p - 0.001_414_170_628).abs() < 0.0008, "{p}");
        // Stopped at 100 hits (Besag & Clifford): hits / runs, a coarser
        // estimate of the same 0.498 (standard error about 0.05).
        let (p, _) = shape_p(&[7, 2, 1], &[0.5, 0.3, 0.2], 7, 40_000, 100);
        assert!((p - exact).abs() < 0.2, "{p}");
    }

    #[test]
    fn the_issues_wrong_candidate_is_ruled_out_and_the_right_one_fits() {
        // The server keeps 21 tokens (its top_p set); a candidate keeps the
        // same 21 scaled to 0.92 and 8 % on 147 more. 200 draws in the 21.
        let truth: Vec<f64> = (0..21).map(|i| 1.0 / f64::from(i + 2)).collect();
        let t_sum: f64 = truth.iter().sum();
        let truth: Vec<f64> = truth.iter().map(|t| t / t_sum).collect();
        let mut wide: Vec<f64> = truth.iter().map(|t| 0.92 * t).collect();
        wide.extend(vec![0.08 / 147.0; 147]);
        let mut exact = truth.clone();
        exact.extend(vec![0.0; 147]);
        let mut counts: Vec<u64> = truth.iter().map(|t| (t * 200.0).round() as u64).collect();
        counts.extend(vec![0; 147]);
        let wrong = fit(&counts, &wide, None, 1, SIMS);
        assert!(wrong.p < 1e-3, "{wrong:?}");
        let right = fit(&counts, &exact, None, 1, SIMS);
        assert!(right.p > 0.01, "{right:?}");
        // The power: some hundreds of draws separate them.
        let n = draws_to_separate(&exact, &wide, 1e-3).expect("separable");
        assert!((50..=400).contains(&n), "{n}");
        assert_eq!(draws_to_separate(&exact, &exact, 1e-3), None);
    }
}
