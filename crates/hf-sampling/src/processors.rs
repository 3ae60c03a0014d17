//! The logits processors, one function each, in transformers' f32 arithmetic.
//!
//! Each mirrors the `__call__` of its class in transformers 5.23.0
//! `generation/logits_process.py`, for a batch of one and
//! `min_tokens_to_keep = 1` (what `_get_logits_processor` passes without beam
//! search). Filtered entries become `-inf` (`filter_value`).

use std::collections::BTreeSet;

use crate::torch;

/// One processor of transformers' list, with its parameter.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Processor {
    /// `RepetitionPenaltyLogitsProcessor(penalty)`.
    RepetitionPenalty {
        /// The penalty (> 0, != 1).
        penalty: f64,
    },
    /// `TemperatureLogitsWarper(temperature)`.
    Temperature {
        /// The temperature (> 0, != 1).
        temperature: f64,
    },
    /// `TopKLogitsWarper(top_k)`.
    TopK {
        /// k (>= 1; may exceed the vocabulary).
        top_k: usize,
    },
    /// `TopPLogitsWarper(top_p)`.
    TopP {
        /// p in [0, 1).
        top_p: f64,
    },
    /// `MinPLogitsWarper(min_p)`.
    MinP {
        /// min_p in [0, 1].
        min_p: f64,
    },
    /// `TypicalLogitsWarper(mass)`.
    Typical {
        /// typical_p in (0, 1).
        mass: f64,
    },
    /// `EpsilonLogitsWarper(epsilon)`.
    Epsilon {
        /// epsilon_cutoff in (0, 1).
        epsilon: f64,
    },
    /// `EtaLogitsWarper(epsilon)`.
    Eta {
        /// eta_cutoff in (0, 1).
        epsilon: f64,
    },
}

impl Processor {
    /// transformers' class name.
    pub fn name(&self) -> &'static str {
        match self {
            Self::RepetitionPenalty { .. } => "RepetitionPenaltyLogitsProcessor",
            Self::Temperature { .. } => "TemperatureLogitsWarper",
            Self::TopK { .. } => "TopKLogitsWarper",
            Self::TopP { .. } => "TopPLogitsWarper",
            Self::MinP { .. } => "MinPLogitsWarper",
            Self::Typical { .. } => "TypicalLogitsWarper",
            Self::Epsilon { .. } => "EpsilonLogitsWarper",
            Self::Eta { .. } => "EtaLogitsWarper",
        }
    }

    /// Apply to `scores` in place. `input_ids` must be non-negative (checked by
    /// [`crate::process`]).
    pub fn apply(&self, scores: &mut [f32], input_ids: &[i64]) {
        match *self {
            Self::RepetitionPenalty { penalty } => repetition_penalty(scores, input_ids, penalty),
            Self::Temperature { temperature } => self::temperature(scores, temperature),
            Self::TopK { top_k } => self::top_k(scores, top_k),
            Self::TopP { top_p } => self::top_p(scores, top_p),
            Self::MinP { min_p } => self::min_p(scores, min_p),
            Self::Typical { mass } => typical(scores, mass),
            Self::Epsilon { epsilon } => self::epsilon(scores, epsilon),
            Self::Eta { epsilon } => eta(scores, epsilon),
        }
    }
}

/// `score = gather(scores, ids); where(score < 0, score * penalty, score / penalty)`,
/// scattered back. Every distinct id is penalised once, from its original
/// score; ids >= V are clamped to a padding column and dropped.
pub fn repetition_penalty(scores: &mut [f32], input_ids: &[i64], penalty: f64) {
    let p = penalty as f32;
    let v = scores.len();
    let ids: BTreeSet<usize> = input_ids
        .iter()
        .filter_map(|&id| usize::try_from(id).ok())
        .filter(|&id| id < v)
        .collect();
    for id in ids {
        let s = scores[id];
        scores[id] = if s < 0.0 { s * p } else { s / p };
    }
}

/// `scores / temperature`: an f32 division by `(float)temperature` (torch's CPU
/// kernel divides; it does not multiply by the reciprocal).
pub fn temperature(scores: &mut [f32], temperature: f64) {
    let t = temperature as f32;
    for s in scores {
        *s /= t;
    }
}

/// `scores < topk(scores, min(k, V)).values[-1]` → -inf. Every token tied with
/// the k-th value survives.
pub fn top_k(scores: &mut [f32], top_k: usize) {
    let k = top_k.max(1).min(scores.len());
    if k == 0 {
        return;
    }
    let mut sorted = scores.to_vec();
    sorted.sort_unstable_by(|a, b| b.total_cmp(a));
    let kth = sorted[k - 1];
    for s in scores {
        if *s < kth {
            *s = f32::NEG_INFINITY;
        }
    }
}

/// Sort ascending (torch's unstable CPU order), softmax of the sorted scores,
/// f32 cumsum; drop where `cumsum <= (float)(1 - top_p)`, never the last
/// (largest) entry.
pub fn top_p(scores: &mut [f32], top_p: f64) {
    let order = torch::argsort_ascending(scores);
    let sorted: Vec<f32> = order.iter().map(|&i| scores[i]).collect();
    let cum = torch::cumsum(&torch::softmax(&sorted));
    let threshold = (1.0 - top_p) as f32;
    let last = order.len().saturating_sub(1);
    for (pos, &i) in order.iter().enumerate() {
        if pos < last && cum[pos] <= threshold {
            scores[i] = f32::NEG_INFINITY;
        }
    }
}

/// `probs < (float)min_p * max(probs)` → -inf, keeping the top-probability token.
pub fn min_p(scores: &mut [f32], min_p: f64) {
    let probs = torch::softmax(scores);
    let top = torch::max(&probs);
    let scaled = (min_p as f32) * top;
    // topk(probs, 1).indices: one token with the top probability is kept.
    let keep = probs.iter().position(|&p| p == top);
    for (i, (s, &p)) in scores.iter_mut().zip(&probs).enumerate() {
        if p < scaled && Some(i) != keep {
            *s = f32::NEG_INFINITY;
        }
    }
}

/// Typical decoding: entropy of `log_softmax`, sort tokens by
/// `|-log p - H|` ascending, keep up to and including the first position where
/// the cumulative probability reaches `mass` (plus ties of that distance).
pub fn typical(scores: &mut [f32], mass: f64) {
    let v = scores.len();
    let normalized = torch::log_softmax(scores);
    let p: Vec<f32> = normalized.iter().map(|&x| torch::exp_f32(x)).collect();
    // nansum: -inf * 0 = NaN is skipped.
    let ent = -torch::sum(
        normalized
            .iter()
            .zip(&p)
            .map(|(&a, &b)| a * b)
            .filter(|x| !x.is_nan()),
    );
    let shifted: Vec<f32> = normalized.iter().map(|&x| ((-x) - ent).abs()).collect();
    let order = torch::argsort_ascending(&shifted);
    let sorted_scores: Vec<f32> = order.iter().map(|&i| shifted[i]).collect();
    let sorted_logits: Vec<f32> = order.iter().map(|&i| scores[i]).collect();
    let cum = torch::cumsum(&torch::softmax(&sorted_logits));
    let mass32 = mass as f32;
    let last_ind = cum.iter().filter(|&&c| c < mass32).count().min(v - 1);
    let cutoff = sorted_scores[last_ind];
    for (pos, &i) in order.iter().enumerate() {
        if pos >= 1 && sorted_scores[pos] > cutoff {
            scores[i] = f32::NEG_INFINITY;
        }
    }
}

/// `softmax(scores) < (float)epsilon` → -inf, except tokens at the maximum score.
pub fn epsilon(scores: &mut [f32], epsilon: f64) {
    let probs = torch::softmax(scores);
    let eps = epsilon as f32;
    let top = torch::max(scores);
    for (s, &p) in scores.iter_mut().zip(&probs) {
        if p < eps && *s < top {
            *s = f32::NEG_INFINITY;
        }
    }
}

/// `eta = min(eps, sqrt(eps) * exp(-entropy))` in f32 (the epsilon is a
/// float32 tensor); `softmax(scores) < eta` → -inf, except tokens at the
/// maximum score. Entropy as `torch.distributions.Categorical(logits=scores)`:
/// normalised logits clamped to `finfo(f32).min`, `-(logits * probs).sum()`.
pub fn eta(scores: &mut [f32], epsilon: f64) {
    let probs = torch::softmax(scores);
    let lse = torch::logsumexp(scores);
    let logits: Vec<f32> = scores.iter().map(|&s| s - lse).collect();
    let cat_probs = torch::softmax(&logits);
    let entropy = -torch::sum(
        logits
            .iter()
            .zip(&cat_probs)
            .map(|(&l, &q)| l.max(f32::MIN) * q),
    );
    let eps = epsilon as f32;
    let eta = eps.min(eps.sqrt() * torch::exp_f32(-entropy));
    let top = torch::max(scores);
    for (s, &p) in scores.iter_mut().zip(&probs) {
        if p < eta && *s < top {
            *s = f32::NEG_INFINITY;
        }
    }
}
