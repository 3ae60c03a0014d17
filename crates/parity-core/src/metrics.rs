//! Distances between two distributions over the same vocabulary.
//!
//! Distributions arrive as `f64` slices whatever precision produced them, so
//! that an f32 engine and the f64 spec sampler are compared without a second
//! rounding step. A token is *kept* when its probability is strictly positive.

/// One token and the probability mass one side gives it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TokenMass {
    /// Token id (index into the vocabulary).
    pub id: usize,
    /// Probability of the token on the side that keeps it.
    pub mass: f64,
}

/// How two distributions over the same vocabulary differ.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// Number of tokens with positive probability on the left.
    pub kept_left: usize,
    /// Number of tokens with positive probability on the right.
    pub kept_right: usize,
    /// max over tokens of |p_left − p_right|.
    pub max_abs_diff: f64,
    /// Total variation distance, ½ Σ |p_left − p_right|.
    pub tv: f64,
    /// Tokens the left keeps and the right does not, by mass descending.
    pub only_left: Vec<TokenMass>,
    /// Tokens the right keeps and the left does not, by mass descending.
    pub only_right: Vec<TokenMass>,
}

impl Comparison {
    /// Compares two distributions. The slices must have the same length;
    /// a length mismatch is reported as an error naming both lengths.
    pub fn new(left: &[f64], right: &[f64]) -> Result<Self, LengthMismatch> {
        if left.len() != right.len() {
            return Err(LengthMismatch {
                left: left.len(),
                right: right.len(),
            });
        }
        let mut max_abs_diff = 0.0f64;
        let mut sum_abs = 0.0f64;
        let (mut kept_left, mut kept_right) = (0, 0);
        let (mut only_left, mut only_right) = (Vec::new(), Vec::new());
        for (id, (&l, &r)) in left.iter().zip(right).enumerate() {
            let d = (l - r).abs();
            max_abs_diff = max_abs_diff.max(d);
            sum_abs += d;
            kept_left += usize::from(l > 0.0);
            kept_right += usize::from(r > 0.0);
            if l > 0.0 && r <= 0.0 {
                only_left.push(TokenMass { id, mass: l });
            } else if r > 0.0 && l <= 0.0 {
                only_right.push(TokenMass { id, mass: r });
            }
        }
        let by_mass =
            |a: &TokenMass, b: &TokenMass| b.mass.total_cmp(&a.mass).then(a.id.cmp(&b.id));
        only_left.sort_by(by_mass);
        only_right.sort_by(by_mass);
        Ok(Self {
            kept_left,
            kept_right,
            max_abs_diff,
            tv: 0.5 * sum_abs,
            only_left,
            only_right,
        })
    }

    /// The same comparison with left and right exchanged.
    pub fn swapped(&self) -> Self {
        Self {
            kept_left: self.kept_right,
            kept_right: self.kept_left,
            max_abs_diff: self.max_abs_diff,
            tv: self.tv,
            only_left: self.only_right.clone(),
            only_right: self.only_left.clone(),
        }
    }

    /// Total probability the left puts on tokens the right does not keep.
    pub fn mass_only_left(&self) -> f64 {
        // fold from +0.0: an empty `sum()` of f64 is -0.0.
        self.only_left.iter().fold(0.0, |acc, t| acc + t.mass)
    }

    /// Total probability the right puts on tokens the left does not keep.
    pub fn mass_only_right(&self) -> f64 {
        self.only_right.iter().fold(0.0, |acc, t| acc + t.mass)
    }
}

/// Two distributions of different lengths were compared.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot compare distributions of different vocabulary sizes: {left} vs {right}")]
pub struct LengthMismatch {
    /// Length of the left distribution.
    pub left: usize,
    /// Length of the right distribution.
    pub right: usize,
}

/// Softmax of f32 scores, computed in f64 (max subtracted; -inf gives 0).
/// All -inf gives all zeros rather than NaN.
pub fn softmax_f64(scores: &[f32]) -> Vec<f64> {
    let max = scores.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    if max == f32::NEG_INFINITY {
        return vec![0.0; scores.len()];
    }
    let max = f64::from(max);
    let exps: Vec<f64> = scores.iter().map(|&s| (f64::from(s) - max).exp()).collect();
    let sum: f64 = exps.iter().sum();
    exps.into_iter().map(|e| e / sum).collect()
}

/// max |a − b| over two logit vectors, in f64; NaN differences (−inf − −inf)
/// are skipped.
pub fn max_logit_diff(a: &[f32], b: &[f32]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (f64::from(*x) - f64::from(*y)).abs())
        .filter(|d| !d.is_nan())
        .fold(0.0, f64::max)
}

/// The first index of the largest value (`torch.argmax` and candle's CPU
/// argmax agree on this for numbers); NaN entries are never picked, and an
/// empty or all-NaN slice gives 0.
pub fn argmax_first(xs: &[f32]) -> usize {
    let mut best = 0;
    for (i, &x) in xs.iter().enumerate() {
        if x > xs[best] || xs[best].is_nan() && !x.is_nan() {
            best = i;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comparison_of_hand_made_distributions() {
        // left keeps {0,1}, right keeps {0,2}.
        let left = [0.75, 0.25, 0.0];
        let right = [0.5, 0.0, 0.5];
        let c = Comparison::new(&left, &right).expect("same length");
        assert_eq!((c.kept_left, c.kept_right), (2, 2));
        // |0.75-0.5| = 0.25, |0.25-0| = 0.25, |0-0.5| = 0.5 → max 0.5, TV ½(1.0) = 0.5
        assert_eq!(c.max_abs_diff, 0.5);
        assert_eq!(c.tv, 0.5);
        assert_eq!(c.only_left, vec![TokenMass { id: 1, mass: 0.25 }]);
        assert_eq!(c.only_right, vec![TokenMass { id: 2, mass: 0.5 }]);
        assert_eq!(c.mass_only_right(), 0.5);
        // Nothing kept by one side only: +0.0, not -0.0.
        let same = Comparison::new(&left, &left).expect("same length");
        assert!(same.mass_only_left().is_sign_positive());
    }

    #[test]
    fn length_mismatch_is_an_error() {
        let err = Comparison::new(&[1.0], &[0.5, 0.5]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "cannot compare distributions of different vocabulary sizes: 1 vs 2"
        );
    }

    #[test]
    fn argmax_takes_the_first_maximum() {
        assert_eq!(argmax_first(&[1.0, 3.0, 3.0]), 1);
        assert_eq!(argmax_first(&[f32::NEG_INFINITY; 2]), 0);
        assert_eq!(argmax_first(&[f32::NAN, 0.5, 2.0]), 2);
    }

    #[test]
    fn softmax_handles_minus_infinity() {
        // e^0/(e^0+e^0) = 0.5 each; -inf → 0.
        assert_eq!(
            softmax_f64(&[1.0, f32::NEG_INFINITY, 1.0]),
            vec![0.5, 0.0, 0.5]
        );
        assert_eq!(softmax_f64(&[f32::NEG_INFINITY; 2]), vec![0.0, 0.0]);
    }
}
