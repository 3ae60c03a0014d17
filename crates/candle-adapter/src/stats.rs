//! Frequencies of real draws against a reference distribution.

use serde::Serialize;
use statrs::distribution::{ChiSquared, ContinuousCDF};

/// Cells with an expected count below this are pooled.
pub const MIN_EXPECTED: f64 = 5.0;

/// Pearson's chi-square goodness-of-fit test, sparse cells pooled.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GoodnessOfFit {
    /// Σ (observed − expected)² / expected over the final cells.
    pub statistic: f64,
    /// Degrees of freedom (cells − 1).
    pub dof: usize,
    /// Number of cells after pooling.
    pub cells: usize,
    /// Tokens with positive reference mass merged into the pooled cell
    /// (every token whose expected count is below 5, then, if the pool is
    /// still below 5, the smallest remaining cells).
    pub pooled_tokens: usize,
    /// Upper-tail p-value from statrs' `ChiSquared(dof)`. `None` when there are
    /// fewer than two cells (nothing to test: e.g. an argmax). `Some(0.0)` when
    /// a draw landed on a token of reference probability 0.
    pub p_value: Option<f64>,
}

/// Summary of N draws against a reference distribution.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Frequencies {
    /// Number of draws.
    pub draws: usize,
    /// Distinct tokens drawn.
    pub distinct_tokens: usize,
    /// max over tokens of |count/N − p|.
    pub max_abs_diff: f64,
    /// The token where that maximum is reached.
    pub max_abs_diff_token: u32,
    /// The goodness-of-fit test.
    pub gof: GoodnessOfFit,
    /// Share of draws on tokens with reference probability 0.
    pub outside_reference: f64,
}

/// Count tokens over a vocabulary of size `v`.
pub fn counts(v: usize, tokens: &[u32]) -> Vec<u64> {
    let mut c = vec![0u64; v];
    for &t in tokens {
        if let Some(slot) = c.get_mut(t as usize) {
            *slot += 1;
        }
    }
    c
}

/// Compare draw counts (length V) with `reference` probabilities (length V).
pub fn frequencies(counts: &[u64], reference: &[f64]) -> Frequencies {
    let n: u64 = counts.iter().sum();
    let nf = n.max(1) as f64;
    let mut max_abs_diff = 0f64;
    let mut max_tok = 0u32;
    let mut outside = 0u64;
    let mut distinct = 0usize;
    for (i, (&c, &p)) in counts.iter().zip(reference).enumerate() {
        let d = (c as f64 / nf - p).abs();
        if d > max_abs_diff {
            max_abs_diff = d;
            max_tok = i as u32;
        }
        if c > 0 {
            distinct += 1;
            if p <= 0.0 {
                outside += c;
            }
        }
    }
    Frequencies {
        draws: n as usize,
        distinct_tokens: distinct,
        max_abs_diff,
        max_abs_diff_token: max_tok,
        gof: chi_square(counts, reference, outside > 0),
        outside_reference: outside as f64 / nf,
    }
}

fn chi_square(counts: &[u64], reference: &[f64], impossible: bool) -> GoodnessOfFit {
    let n: u64 = counts.iter().sum();
    let nf = n as f64;
    // (expected, observed) per token with positive mass, smallest expected first.
    let mut cells: Vec<(f64, f64)> = counts
        .iter()
        .zip(reference)
        .filter(|(_, p)| **p > 0.0)
        .map(|(&c, &p)| (p * nf, c as f64))
        .collect();
    cells.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut pool = (0f64, 0f64);
    let mut pooled = 0usize;
    let mut rest = &cells[..];
    while let Some((first, tail)) = rest.split_first() {
        if first.0 < MIN_EXPECTED || (pooled > 0 && pool.0 < MIN_EXPECTED) {
            pool.0 += first.0;
            pool.1 += first.1;
            pooled += 1;
            rest = tail;
        } else {
            break;
        }
    }
    let mut finals: Vec<(f64, f64)> = rest.to_vec();
    if pooled > 0 {
        finals.push(pool);
    }
    let statistic: f64 = finals
        .iter()
        .map(|(e, o)| if *e > 0.0 { (o - e) * (o - e) / e } else { 0.0 })
        .sum();
    let dof = finals.len().saturating_sub(1);
    let p_value = if impossible {
        Some(0.0)
    } else if dof == 0 || n == 0 {
        None
    } else {
        ChiSquared::new(dof as f64).ok().map(|d| d.sf(statistic))
    };
    GoodnessOfFit {
        statistic,
        dof,
        cells: finals.len(),
        pooled_tokens: pooled,
        p_value,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_counts_give_p_one() {
        let f = frequencies(&[50, 30, 20, 0], &[0.5, 0.3, 0.2, 0.0]);
        assert_eq!(f.gof.statistic, 0.0);
        assert_eq!(f.gof.dof, 2);
        assert!((f.gof.p_value.unwrap_or(0.0) - 1.0).abs() < 1e-12);
        assert_eq!(f.outside_reference, 0.0);
    }

    #[test]
    fn impossible_draw_gives_p_zero() {
        let f = frequencies(&[50, 30, 19, 1], &[0.5, 0.3, 0.2, 0.0]);
        assert_eq!(f.gof.p_value, Some(0.0));
        assert!((f.outside_reference - 0.01).abs() < 1e-12);
    }

    #[test]
    fn sparse_cells_are_pooled() {
        // Expected 96, 2, 1, 1 → the three small cells pool to 4 < 5, so the
        // pool also takes the big one: one cell, nothing to test.
        let f = frequencies(&[96, 2, 1, 1], &[0.96, 0.02, 0.01, 0.01]);
        assert_eq!(f.gof.cells, 1);
        assert_eq!(f.gof.p_value, None);
    }
}
