//! The spec's pipeline as pure functions on validated input.
//!
//! [`distribution`] runs steps 1–5 (penalty, temperature, top-k, top-p, final
//! softmax) and returns the filtered distribution as
//! [`parity_core::Distribution`]; [`draw`] is step 6; [`sample`] is both.
//! All arithmetic is `f64`.

use std::cmp::Ordering;

use parity_core::{Distribution, Precision};
use serde::{Deserialize, Serialize};

use crate::Input;

/// The spec's output line: `{"token_id": N, "probs": [...]}`.
///
/// Serialises with `token_id` first; zeros are written `0.0` and other
/// probabilities in serde_json's shortest round-trip form.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Output {
    /// The chosen token, or -1 when no token has positive probability.
    pub token_id: i64,
    /// One probability per token, 0.0 for filtered tokens.
    pub probs: Vec<f64>,
}

impl Output {
    /// The output as one line of JSON, without a trailing newline.
    pub fn to_json_line(&self) -> String {
        // Serialising a struct of an i64 and finite f64s cannot fail; the
        // fallback only keeps the signature total.
        serde_json::to_string(self).unwrap_or_else(|e| format!(r#"{{"error":"{e}"}}"#))
    }
}

/// Runs the whole pipeline: steps 1–5 then [`draw`] with the input's `u`.
pub fn sample(input: &Input) -> Output {
    let probs = filtered(input);
    let token_id = draw(&probs, input.params().u.get());
    Output { token_id, probs }
}

/// Steps 1–5 of the spec: the distribution the draw is made from, in f64.
/// One probability per token (length V), zero for filtered tokens and all
/// zero when every kept token has logit `-inf`;
/// [`Distribution::kept`] lists the tokens with positive probability (the
/// greedy choice when `temperature == 0`).
pub fn distribution(input: &Input) -> Distribution {
    Distribution::new(filtered(input), Precision::F64)
}

/// Steps 1–5: the probabilities.
fn filtered(input: &Input) -> Vec<f64> {
    let params = input.params();
    let mut logits = input.logits().to_vec();
    apply_penalty(
        &mut logits,
        input.previous_tokens(),
        params.repetition_penalty.get(),
    );

    let temperature = params.temperature.get();
    if temperature == 0.0 {
        return greedy(&logits);
    }

    // Temperature is applied implicitly: for T > 0, ℓ/T has the same order
    // as ℓ, and the softmax weights are computed as exp((ℓ - max)/T) (see
    // `weight`), which never overflows and loses no precision to rounding ℓ/T.
    let kept = top_k(&logits, params.top_k.effective(logits.len()));
    let kept = top_p(&logits, kept, params.top_p.get(), temperature);
    softmax(&logits, &kept, temperature)
}

/// Step 6: accumulates `probs` in index order (in `f64`, left to right) and
/// returns the first index whose cumulative sum is strictly greater than `u`.
///
/// If rounding leaves the total at or below `u` (e.g. `u = 0.9999999999999999`
/// and the probabilities sum to one ulp less), the last token with positive
/// probability is returned: a token with mass is always chosen. Returns -1
/// only when every probability is zero.
pub fn draw(probs: &[f64], u: f64) -> i64 {
    let mut cumulative = 0.0;
    let mut last_positive = None;
    for (index, &p) in probs.iter().enumerate() {
        if p > 0.0 {
            cumulative += p;
            last_positive = Some(index);
            if cumulative > u {
                return to_token_id(index);
            }
        }
    }
    last_positive.map_or(-1, to_token_id)
}

fn to_token_id(index: usize) -> i64 {
    i64::try_from(index).unwrap_or(i64::MAX)
}

/// Step 1: each distinct previous token `t` with `0 ≤ t < V` is penalised
/// once: `ℓ/penalty` if `ℓ > 0`, `ℓ·penalty` otherwise (so `-inf` stays
/// `-inf`, 0 stays 0).
fn apply_penalty(logits: &mut [f64], previous_tokens: &[i64], penalty: f64) {
    if penalty == 1.0 || previous_tokens.is_empty() {
        return;
    }
    let mut seen = vec![false; logits.len()];
    for &token in previous_tokens {
        let Ok(index) = usize::try_from(token) else {
            continue;
        };
        let (Some(logit), Some(done)) = (logits.get_mut(index), seen.get_mut(index)) else {
            continue;
        };
        if !*done {
            *done = true;
            *logit = if *logit > 0.0 {
                *logit / penalty
            } else {
                *logit * penalty
            };
        }
    }
}

/// The spec's order for filtering: logit descending, index ascending on ties.
/// `-0.0` and `0.0` compare equal, as they are the same logit.
fn by_logit_desc(logits: &[f64]) -> impl Fn(&usize, &usize) -> Ordering + '_ {
    move |&a, &b| {
        logits[b]
            .partial_cmp(&logits[a])
            // Validation excludes NaN, so this fallback is never taken.
            .unwrap_or(Ordering::Equal)
            .then(a.cmp(&b))
    }
}

/// Step 2 with `temperature == 0`: one-hot on the first maximum; all zeros
/// (and nothing kept) when every logit is `-inf`.
fn greedy(logits: &[f64]) -> Vec<f64> {
    let mut probs = vec![0.0; logits.len()];
    let mut best: Option<usize> = None;
    for (index, &logit) in logits.iter().enumerate() {
        if logit > f64::NEG_INFINITY && best.is_none_or(|b| logit > logits[b]) {
            best = Some(index);
        }
    }
    if let Some(index) = best {
        probs[index] = 1.0;
    }
    probs
}

/// Step 3: the `k` largest logits (ties to the smaller index), ascending; all
/// indices when `k` is `None`. `-inf` entries are kept like any other when
/// fewer than `k` logits are finite.
fn top_k(logits: &[f64], k: Option<usize>) -> Vec<usize> {
    let mut indices: Vec<usize> = (0..logits.len()).collect();
    if let Some(k) = k.filter(|&k| k > 0 && k < logits.len()) {
        indices.select_nth_unstable_by(k - 1, by_logit_desc(logits));
        indices.truncate(k);
        indices.sort_unstable();
    }
    indices
}

/// The unnormalised softmax weight `exp((ℓ - max)/T)` of a logit, given the
/// maximum of the set it belongs to (`max > -inf`).
///
/// Computing `(ℓ - max)/T` rather than `ℓ/T - max/T` keeps full precision
/// when `|ℓ|/T` is large (ℓ = 1e6, T = 1e-3 puts ℓ/T at 1e9, where an ulp is
/// 1e-7) and cannot overflow: the exponent is always ≤ 0. A `+inf` maximum
/// (only reachable through a penalty below ~1e-300) is treated as the limit:
/// the `+inf` entries share the mass equally.
fn weight(logit: f64, max: f64, temperature: f64) -> f64 {
    if max == f64::INFINITY {
        return if logit == f64::INFINITY { 1.0 } else { 0.0 };
    }
    if logit == f64::NEG_INFINITY {
        return 0.0;
    }
    let diff = logit - max;
    let exponent = if diff.is_finite() {
        diff / temperature
    } else {
        // |ℓ - max| exceeds f64::MAX (ℓ ≈ -1e308, max ≈ 1e308): scale first.
        logit / temperature - max / temperature
    };
    exponent.exp()
}

/// Neumaier's compensated sum: error independent of the number of terms.
fn compensated_sum(values: impl Iterator<Item = f64>) -> f64 {
    let mut sum = 0.0_f64;
    let mut compensation = 0.0_f64;
    for x in values {
        let t = sum + x;
        compensation += if sum.abs() >= x.abs() {
            (sum - t) + x
        } else {
            (x - t) + sum
        };
        sum = t;
    }
    sum + compensation
}

/// Step 4: nucleus filtering of `kept` (ascending), returning the new kept
/// set (ascending).
///
/// Sorts by logit descending (index ascending), takes the softmax over that
/// set, and keeps the prefix through the first token whose cumulative
/// probability, accumulated left to right in `f64`, is `≥ top_p`; at least
/// one token. If rounding keeps the total below `top_p` the whole set is
/// kept (the extra tokens then have probability ~0 or exactly 0).
fn top_p(logits: &[f64], kept: Vec<usize>, top_p: f64, temperature: f64) -> Vec<usize> {
    if top_p >= 1.0 || kept.len() <= 1 {
        return kept;
    }
    let mut order = kept;
    order.sort_unstable_by(by_logit_desc(logits));
    let max = logits[order[0]];
    if max == f64::NEG_INFINITY {
        // Nothing has mass; step 5 answers -1 whatever is kept.
        order.sort_unstable();
        return order;
    }
    let weights: Vec<f64> = order
        .iter()
        .map(|&i| weight(logits[i], max, temperature))
        .collect();
    let total = compensated_sum(weights.iter().copied());
    let mut cumulative = 0.0;
    for (position, w) in weights.iter().enumerate() {
        cumulative += w / total;
        if cumulative >= top_p {
            order.truncate(position + 1);
            break;
        }
    }
    order.sort_unstable();
    order
}

/// Step 5: softmax over `kept` (ascending), max subtracted; zeros elsewhere,
/// and all zeros when every kept logit is `-inf`.
fn softmax(logits: &[f64], kept: &[usize], temperature: f64) -> Vec<f64> {
    let mut probs = vec![0.0; logits.len()];
    let max = kept
        .iter()
        .map(|&i| logits[i])
        .fold(f64::NEG_INFINITY, f64::max);
    if max > f64::NEG_INFINITY {
        for &i in kept {
            probs[i] = weight(logits[i], max, temperature);
        }
        let total = compensated_sum(kept.iter().map(|&i| probs[i]));
        for &i in kept {
            probs[i] /= total;
        }
    }
    probs
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The spec's kept set after top-k may hold `-inf` tokens (no mass):
    /// [-inf, 1, -inf], k = 2 keeps 1, then the -inf tie goes to index 0.
    #[test]
    fn top_k_keeps_neg_inf_entries_when_too_few_are_finite() {
        let l = [f64::NEG_INFINITY, 1.0, f64::NEG_INFINITY];
        let kept = top_k(&l, Some(2));
        assert_eq!(kept, vec![0, 1]);
        assert_eq!(softmax(&l, &kept, 1.0), vec![0.0, 1.0, 0.0]);
    }

    #[test]
    fn draw_boundaries() {
        // cumulative 0.25, 0.5, 0.75, 1.0: strictly greater than u.
        let p = [0.25; 4];
        assert_eq!(draw(&p, 0.0), 0);
        assert_eq!(draw(&p, 0.25), 1);
        assert_eq!(draw(&p, 0.7499999999999999), 2);
        assert_eq!(draw(&p, 0.75), 3);
        assert_eq!(draw(&[0.0, 0.0], 0.5), -1);
    }

    #[test]
    fn draw_falls_back_to_last_positive_when_rounding_leaves_sum_below_u() {
        // 0.1 summed ten times is 0.9999999999999999 in f64, not above u.
        let p = [0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.0];
        assert_eq!(draw(&p, 0.9999999999999999), 9);
    }

    #[test]
    fn penalty_applies_once_per_distinct_valid_token() {
        let mut l = vec![2.0, -2.0, 0.0, 4.0, f64::NEG_INFINITY];
        apply_penalty(&mut l, &[0, 0, 1, 2, 4, 5, -1, i64::MAX, i64::MIN], 2.0);
        // 2/2, -2*2, 0*2, untouched, -inf*2
        assert_eq!(l, vec![1.0, -4.0, 0.0, 4.0, f64::NEG_INFINITY]);
    }

    #[test]
    fn weight_is_never_nan() {
        assert_eq!(weight(1.0, 1.0, 1e-300), 1.0);
        assert_eq!(weight(0.0, 1.0, 1e-300), 0.0);
        assert_eq!(weight(f64::NEG_INFINITY, 1.0, 1.0), 0.0);
        assert_eq!(weight(f64::INFINITY, f64::INFINITY, 1.0), 1.0);
        assert_eq!(weight(1e308, f64::INFINITY, 1.0), 0.0);
        // (-1e308 - 1e308)/1e307 = -20, computed without overflow.
        let w = weight(-1e308, 1e308, 1e307);
        assert!((w - (-20.0f64).exp()).abs() < 1e-15, "{w}");
        // Huge temperature: exponent underflows towards 0, weight 1.
        assert_eq!(weight(-1.0, 1.0, 1e308), 1.0);
    }

    #[test]
    fn compensated_sum_recovers_small_terms() {
        // Exactly 1 + 4e-16, whose nearest f64 is 1 + 2 ulp = 1.0000000000000004;
        // a plain left-to-right sum drops each 1e-16 (< ½ ulp) and gives 1.0.
        let values = [1.0, 1e-16, 1e-16, 1e-16, 1e-16];
        assert_eq!(compensated_sum(values.into_iter()), 1.0000000000000004);
    }

    #[test]
    fn zero_signs_tie() {
        let l = [0.0, -0.0, 0.0];
        assert_eq!(top_k(&l, Some(2)), vec![0, 1]);
        assert_eq!(greedy(&[-0.0, 0.0]), vec![1.0, 0.0]);
    }
}
