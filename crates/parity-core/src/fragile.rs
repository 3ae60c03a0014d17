//! Decisions that float rounding could flip.
//!
//! Two engines can follow the same rule and still keep different tokens when
//! a token sits on the rule's threshold: tied with the k-th score, or with a
//! cumulative mass or probability within a few ulps of the value it is
//! compared with. Such a difference says nothing about the engines' rules:
//! the other engine's sum in another order, or in f64, lands on the other
//! side. A semantics reports these places with
//! [`crate::Semantics::fragile`]; the rule, and so the detection, lives in
//! the engine's crate (transformers' in `hf-sampling`). This module only
//! holds the shape of the answer and the ulp distance.

use serde::{Deserialize, Serialize};

/// A decision is fragile when its margin is at most this many ulps (of the
/// f32 values the engine compares). Sums of the same f32 probabilities in
/// another order, or a softmax computed another way, move a value by a few
/// ulps; four covers the boundary fixtures (0 and 1 ulp) with room, and no
/// decision on the SmolLM2 fixtures comes near it.
pub const FRAGILE_ULPS: u64 = 4;

/// Which rule a fragile decision belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FragileKind {
    /// Tokens tied (or within [`FRAGILE_ULPS`]) with the k-th score across
    /// the top-k cut.
    TopKTie,
    /// A cumulative mass within [`FRAGILE_ULPS`] of the top-p threshold.
    TopPCut,
    /// Tokens with equal scores on both sides of the top-p cut: which one is
    /// dropped is the sort's order among ties.
    TopPTie,
    /// A probability within [`FRAGILE_ULPS`] of min-p × the top probability.
    MinP,
    /// A probability within [`FRAGILE_ULPS`] of `epsilon_cutoff`.
    Epsilon,
    /// A probability within [`FRAGILE_ULPS`] of the eta threshold.
    Eta,
    /// A cumulative mass within [`FRAGILE_ULPS`] of `typical_p`.
    Typical,
}

impl FragileKind {
    /// The kind as written in JSON (`top_k_tie`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::TopKTie => "top_k_tie",
            Self::TopPCut => "top_p_cut",
            Self::TopPTie => "top_p_tie",
            Self::MinP => "min_p",
            Self::Epsilon => "epsilon",
            Self::Eta => "eta",
            Self::Typical => "typical",
        }
    }
}

/// One decision that float rounding could flip.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fragile {
    /// The rule.
    pub kind: FragileKind,
    /// The tokens whose keep-or-drop the decision is: every tied token, or
    /// the token at the cut.
    pub tokens: Vec<usize>,
    /// How far from flipping, in ulps of the compared f32 values (0: exact
    /// tie or exactly on the threshold).
    pub margin_ulps: u64,
    /// Whether a repetition penalty changed the logit of one of `tokens`
    /// (the penalty moved it onto the threshold).
    pub penalised: bool,
    /// The decision in words, with its numbers.
    pub detail: String,
}

/// Distance between two f32 values in ulps: how many representable f32
/// values lie between them, plus one (0 when equal; +0 and −0 are equal).
/// `None` when either is NaN.
pub fn ulps(a: f32, b: f32) -> Option<u64> {
    if a.is_nan() || b.is_nan() {
        return None;
    }
    // Map the bit patterns onto a line where adjacent floats are adjacent
    // integers: negative values count down from −0.
    let key = |x: f32| {
        let bits = x.to_bits();
        let magnitude = i64::from(bits & 0x7fff_ffff);
        if bits >> 31 == 1 {
            -magnitude
        } else {
            magnitude
        }
    };
    Some(key(a).abs_diff(key(b)))
}

/// Whether `a` and `b` are within [`FRAGILE_ULPS`]; the distance if so.
pub fn near(a: f32, b: f32) -> Option<u64> {
    ulps(a, b).filter(|&d| d <= FRAGILE_ULPS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ulps_count_representable_steps() {
        assert_eq!(ulps(1.0, 1.0), Some(0));
        assert_eq!(ulps(0.0, -0.0), Some(0));
        // 1 + 2^-23 is the next float after 1; 1 - 2^-24 the one before.
        assert_eq!(ulps(1.0, 1.0 + f32::EPSILON), Some(1));
        assert_eq!(ulps(1.0, 1.0 - f32::EPSILON / 2.0), Some(1));
        // Across zero: the smallest subnormals on each side are 2 apart.
        let tiny = f32::from_bits(1);
        assert_eq!(ulps(tiny, -tiny), Some(2));
        assert_eq!(ulps(f32::MAX, f32::INFINITY), Some(1));
        assert_eq!(ulps(f32::NAN, 1.0), None);
        assert_eq!(near(0.1, 0.1 + 4.0 * f32::EPSILON / 16.0), Some(4)); // ulp(0.1) = 2^-27
        assert_eq!(near(0.1, 0.2), None);
    }
}
