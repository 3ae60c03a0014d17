//! The G-test (likelihood-ratio goodness of fit) of samples against a
//! candidate distribution.

use statrs::distribution::{ChiSquared, ContinuousCDF};

/// Cells whose expected count is below this are pooled.
const MIN_EXPECTED: f64 = 5.0;

/// p-value of `counts` under `probs` (same length). A draw of a token the
/// candidate gives probability 0 is impossible under it: p = 0. Cells with
/// expected count below 5 are pooled into one cell (merged into the
/// smallest other cell when the pool itself is below 5); G = 2 Σ o ln(o/e)
/// is referred to χ² with (cells − 1) degrees of freedom. One cell left
/// (e.g. a greedy candidate that every draw agrees with): p = 1.
pub(crate) fn g_test(counts: &[u64], probs: &[f64]) -> f64 {
    let n: u64 = counts.iter().sum();
    if n == 0 {
        return 1.0;
    }
    if counts.iter().zip(probs).any(|(&c, &p)| c > 0 && p <= 0.0) {
        return 0.0;
    }
    let total: f64 = probs.iter().filter(|p| **p > 0.0).sum();
    let n = n as f64;
    let mut cells: Vec<(f64, f64)> = Vec::new();
    let (mut pool_o, mut pool_e) = (0.0, 0.0);
    for (&c, &p) in counts.iter().zip(probs) {
        if p <= 0.0 {
            continue;
        }
        let e = n * p / total;
        if e >= MIN_EXPECTED {
            cells.push((c as f64, e));
        } else {
            pool_o += c as f64;
            pool_e += e;
        }
    }
    if pool_e > 0.0 {
        if pool_e < MIN_EXPECTED && !cells.is_empty() {
            let smallest = cells
                .iter_mut()
                .min_by(|a, b| a.1.total_cmp(&b.1))
                .map(|cell| {
                    cell.0 += pool_o;
                    cell.1 += pool_e;
                });
            debug_assert!(smallest.is_some());
        } else {
            cells.push((pool_o, pool_e));
        }
    }
    if cells.len() < 2 {
        return 1.0;
    }
    let g: f64 = 2.0
        * cells
            .iter()
            .filter(|(o, _)| *o > 0.0)
            .map(|(o, e)| o * (o / e).ln())
            .sum::<f64>();
    match ChiSquared::new((cells.len() - 1) as f64) {
        Ok(chi) => chi.sf(g.max(0.0)),
        Err(_) => 1.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_frequencies_fit_and_impossible_draws_do_not() {
        // counts equal to expectations: G = 0, p = 1.
        assert!((g_test(&[50, 30, 20], &[0.5, 0.3, 0.2]) - 1.0).abs() < 1e-12);
        // a draw of a token with p = 0.
        assert_eq!(g_test(&[99, 0, 1], &[0.5, 0.5, 0.0]), 0.0);
        // greedy, every draw on the kept token: one cell, p = 1.
        assert_eq!(g_test(&[0, 40, 0], &[0.0, 1.0, 0.0]), 1.0);
    }

    #[test]
    fn g_matches_a_hand_computation() {
        // o = (60, 40), e = (50, 50): G = 2 (60 ln 1.2 + 40 ln 0.8)
        // = 2 (10.9393 - 8.9257) = 4.0271; χ²(1) tail at 4.0271 = 0.04477.
        let p = g_test(&[60, 40], &[0.5, 0.5]);
        assert!((p - 0.04477).abs() < 1e-4, "{p}");
    }
}
