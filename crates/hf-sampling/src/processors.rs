//! The logits processors, one function each, in transformers' f32 arithmetic.
//!
//! Each mirrors the `__call__` of its class in transformers 5.23.0
//! `generation/logits_process.py`, for a batch of one and
//! `min_tokens_to_keep = 1` (what `_get_logits_processor` passes without beam
//! search). Filtered entries become `-inf` (`filter_value`).

use std::collections::BTreeSet;

use parity_core::fragile::{FRAGILE_ULPS, near};

use crate::constraints;
use crate::error::HfError;
use replicas::torch;

/// One processor of transformers' list, with its parameters resolved for one
/// generation (prompt length and `max_length` already applied).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Processor {
    /// `SequenceBiasLogitsProcessor(sequence_bias)`: (sequence, f32 bias), in
    /// dict order.
    SequenceBias {
        /// The biases.
        biases: Vec<(Vec<i64>, f32)>,
    },
    /// `RepetitionPenaltyLogitsProcessor(penalty)`.
    RepetitionPenalty {
        /// The penalty (> 0, != 1).
        penalty: f64,
    },
    /// `NoRepeatNGramLogitsProcessor(ngram_size)`.
    NoRepeatNGram {
        /// n (>= 1).
        size: usize,
    },
    /// `NoBadWordsLogitsProcessor(bad_words_ids, eos)`: a sequence bias of
    /// `-inf` (single-token eos words already dropped).
    NoBadWords {
        /// The banned sequences, deduplicated in first-seen order.
        words: Vec<Vec<i64>>,
    },
    /// `MinLengthLogitsProcessor`: eos masked while the context is shorter
    /// than `min_length`.
    MinLength {
        /// The minimum total length.
        min_length: i64,
        /// The eos ids.
        eos: Vec<i64>,
    },
    /// `MinNewTokensLengthLogitsProcessor`: eos masked while fewer than
    /// `min_new_tokens` tokens follow the prompt.
    MinNewTokens {
        /// The prompt length (`input_ids_seq_length`).
        prompt_len: usize,
        /// The minimum number of new tokens.
        min_new_tokens: i64,
        /// The eos ids.
        eos: Vec<i64>,
    },
    /// `ForcedBOSTokenLogitsProcessor`: only `id` at current length 1.
    ForcedBos {
        /// The forced id.
        id: i64,
    },
    /// `ForcedEOSTokenLogitsProcessor`: only the eos ids at current length
    /// `max_length - 1`.
    ForcedEos {
        /// `max_length` of the generation.
        max_length: f64,
        /// The forced ids.
        ids: Vec<i64>,
    },
    /// `InfNanRemoveLogitsProcessor`.
    InfNanRemove,
    /// `ExponentialDecayLengthPenalty`.
    ExponentialDecay {
        /// `start_index + prompt length`.
        start: f64,
        /// The decay factor.
        factor: f64,
        /// The eos ids.
        eos: Vec<i64>,
    },
    /// `SuppressTokensLogitsProcessor`.
    SuppressTokens {
        /// The suppressed ids.
        ids: Vec<i64>,
    },
    /// `SuppressTokensAtBeginLogitsProcessor`: the ids masked when the
    /// current length is `begin_index`.
    SuppressTokensAtBegin {
        /// The suppressed ids.
        ids: Vec<i64>,
        /// The current length at which they are suppressed.
        begin_index: usize,
    },
    /// `TemperatureLogitsWarper(temperature)`.
    Temperature {
        /// The temperature (> 0, != 1).
        temperature: f64,
    },
    /// `TopHLogitsWarper(top_h)`.
    TopH {
        /// top_h in (0, 1].
        top_h: f64,
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
    /// `LogitNormalization` (`renormalize_logits`): log-softmax, always last.
    LogitNormalization,
}

impl Processor {
    /// transformers' class name.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Self::SequenceBias { .. } => "SequenceBiasLogitsProcessor",
            Self::RepetitionPenalty { .. } => "RepetitionPenaltyLogitsProcessor",
            Self::NoRepeatNGram { .. } => "NoRepeatNGramLogitsProcessor",
            Self::NoBadWords { .. } => "NoBadWordsLogitsProcessor",
            Self::MinLength { .. } => "MinLengthLogitsProcessor",
            Self::MinNewTokens { .. } => "MinNewTokensLengthLogitsProcessor",
            Self::ForcedBos { .. } => "ForcedBOSTokenLogitsProcessor",
            Self::ForcedEos { .. } => "ForcedEOSTokenLogitsProcessor",
            Self::InfNanRemove => "InfNanRemoveLogitsProcessor",
            Self::ExponentialDecay { .. } => "ExponentialDecayLengthPenalty",
            Self::SuppressTokens { .. } => "SuppressTokensLogitsProcessor",
            Self::SuppressTokensAtBegin { .. } => "SuppressTokensAtBeginLogitsProcessor",
            Self::Temperature { .. } => "TemperatureLogitsWarper",
            Self::TopH { .. } => "TopHLogitsWarper",
            Self::TopK { .. } => "TopKLogitsWarper",
            Self::TopP { .. } => "TopPLogitsWarper",
            Self::MinP { .. } => "MinPLogitsWarper",
            Self::Typical { .. } => "TypicalLogitsWarper",
            Self::Epsilon { .. } => "EpsilonLogitsWarper",
            Self::Eta { .. } => "EtaLogitsWarper",
            Self::LogitNormalization => "LogitNormalization",
        }
    }

    /// Whether the processor only sets some scores to `-inf` (or forces one
    /// token) from the context: the cheap masks the fast path applies itself.
    pub(crate) fn is_mask(&self) -> bool {
        matches!(
            self,
            Self::NoRepeatNGram { .. }
                | Self::NoBadWords { .. }
                | Self::MinLength { .. }
                | Self::MinNewTokens { .. }
                | Self::ForcedBos { .. }
                | Self::ForcedEos { .. }
                | Self::SuppressTokens { .. }
                | Self::SuppressTokensAtBegin { .. }
        )
    }

    /// Apply to `scores` in place, for a step whose context is `input_ids`
    /// (prompt and generated tokens; non-negative, checked by
    /// [`crate::process`]). Errors where transformers raises at call time: a
    /// biased or banned id `>= V`, a forced id out of range.
    pub(crate) fn apply(&self, scores: &mut [f32], input_ids: &[i64]) -> Result<(), HfError> {
        let cur_len = input_ids.len();
        match self {
            Self::SequenceBias { biases } => constraints::sequence_bias(scores, input_ids, biases)?,
            Self::RepetitionPenalty { penalty } => repetition_penalty(scores, input_ids, *penalty),
            Self::NoRepeatNGram { size } => {
                let mut banned = Vec::new();
                constraints::banned_ngram_tokens(input_ids, *size, scores.len(), &mut banned);
                for i in banned {
                    scores[i] = f32::NEG_INFINITY;
                }
            }
            Self::NoBadWords { words } => {
                let biases: Vec<(Vec<i64>, f32)> = words
                    .iter()
                    .map(|w| (w.clone(), f32::NEG_INFINITY))
                    .collect();
                constraints::sequence_bias(scores, input_ids, &biases).map_err(|e| match e {
                    HfError::Invalid { message, .. } => HfError::Invalid {
                        key: "bad_words_ids".into(),
                        message,
                    },
                    other => other,
                })?;
            }
            Self::MinLength { min_length, eos } => {
                if (cur_len as i64) < *min_length {
                    constraints::mask_ids(scores, eos);
                }
            }
            Self::MinNewTokens {
                prompt_len,
                min_new_tokens,
                eos,
            } => {
                if (cur_len as i64 - *prompt_len as i64) < *min_new_tokens {
                    constraints::mask_ids(scores, eos);
                }
            }
            Self::ForcedBos { id } => {
                if cur_len == 1 {
                    constraints::force(scores, &[*id], "forced_bos_token_id")?;
                }
            }
            Self::ForcedEos { max_length, ids } => {
                if cur_len as f64 == max_length - 1.0 {
                    constraints::force(scores, ids, "forced_eos_token_id")?;
                }
            }
            Self::InfNanRemove => constraints::inf_nan_remove(scores),
            Self::ExponentialDecay { start, factor, eos } => {
                constraints::exponential_decay(scores, cur_len, *start, *factor, eos);
            }
            Self::SuppressTokens { ids } => constraints::mask_ids(scores, ids),
            Self::SuppressTokensAtBegin { ids, begin_index } => {
                if cur_len == *begin_index {
                    constraints::mask_ids(scores, ids);
                }
            }
            Self::Temperature { temperature } => self::temperature(scores, *temperature),
            Self::TopH { top_h } => constraints::top_h(scores, *top_h),
            Self::TopK { top_k } => self::top_k(scores, *top_k),
            Self::TopP { top_p } => self::top_p(scores, *top_p),
            Self::MinP { min_p } => self::min_p(scores, *min_p),
            Self::Typical { mass } => typical(scores, *mass),
            Self::Epsilon { epsilon } => self::epsilon(scores, *epsilon),
            Self::Eta { epsilon } => eta(scores, *epsilon),
            Self::LogitNormalization => constraints::log_softmax(scores),
        }
        Ok(())
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
    let kth = kth_largest(scores, k).0;
    for s in scores {
        if *s < kth {
            *s = f32::NEG_INFINITY;
        }
    }
}

/// The `k`-th largest score (`1 <= k <= len`, `topk(scores, k).values[-1]`)
/// and the one after it (the (k+1)-th, when `k < len`), by selection in
/// linear time: the same values as a descending sort's `[k - 1]` and `[k]`.
pub(crate) fn kth_largest(scores: &[f32], k: usize) -> (f32, Option<f32>) {
    let mut values = scores.to_vec();
    let descending = |a: &f32, b: &f32| b.total_cmp(a);
    if k == values.len() {
        let (_, kth, _) = values.select_nth_unstable_by(k - 1, descending);
        return (*kth, None);
    }
    let (above, next, _) = values.select_nth_unstable_by(k, descending);
    let kth = above
        .iter()
        .copied()
        .min_by(f32::total_cmp)
        .expect("k >= 1 values above the (k+1)-th");
    (kth, Some(*next))
}

/// Sort ascending (torch's unstable CPU order), softmax of the sorted scores,
/// f32 cumsum; drop where `cumsum <= (float)(1 - top_p)`, never the last
/// (largest) entry.
pub(crate) fn top_p(scores: &mut [f32], top_p: f64) {
    TopPSort::new(scores, top_p).apply(scores);
}

/// What `TopPLogitsWarper` computes before it cuts: the scores in ascending
/// order (torch's CPU sort) and the f32 cumsum of their softmax. Computed
/// once, it serves both the cut ([`TopPSort::apply`]) and the fragile check
/// of the same scores (`fragile.rs`).
///
/// torch sorts (value, index) pairs with libstdc++'s introsort, whose order
/// among equal scores [`torch::argsort_ascending`] replays step by step; at
/// V = 151,936 that replay is most of a row's cost. The sorted *values* do
/// not depend on that order, so neither do the softmax and the cumsum over
/// them, nor which positions the cut removes: only which token of a run of
/// equal scores sits at which position does, and everywhere else a
/// position's token is the one with its score. So the values are sorted by
/// a radix sort (the `radsort` crate), and torch's order is replayed only
/// when a run of equal scores matters for this `top_p`
/// ([`TopPSort::ties_decide`]): the cut falls inside it, or the fragile
/// check would report one of its positions.
pub(crate) struct TopPSort {
    /// The scores in ascending order.
    pub sorted: Vec<f32>,
    /// `cumsum(softmax(sorted))` in f32.
    pub cum: Vec<f32>,
    /// `(float)(1 - top_p)`, the mass the cut compares with.
    pub threshold: f32,
    /// [`near_window`] of the threshold: where a reported mass can lie.
    window: (f32, f32),
    /// How many leading positions the cut removes.
    removed: usize,
    /// torch's order (indices in ascending score order), when ties decide.
    order: Option<Vec<usize>>,
}

/// Reported positions looked up by score, one scan of the scores each;
/// beyond this many, torch's order is replayed instead.
const LOOKUPS: usize = 32;

impl TopPSort {
    pub(crate) fn new(scores: &[f32], top_p: f64) -> Self {
        let mut sorted = scores.to_vec();
        radsort::sort(&mut sorted);
        let mut sort = Self::of(sorted, top_p, None);
        if sort.ties_decide() {
            sort.order = Some(torch::argsort_ascending(scores));
        }
        sort
    }

    /// Every part from torch's own order (the replayed introsort).
    #[cfg(test)]
    pub(crate) fn torch_order(scores: &[f32], top_p: f64) -> Self {
        let order = torch::argsort_ascending(scores);
        let sorted: Vec<f32> = order.iter().map(|&i| scores[i]).collect();
        Self::of(sorted, top_p, Some(order))
    }

    /// The softmax, cumsum and cut of the `sorted` scores.
    fn of(sorted: Vec<f32>, top_p: f64, order: Option<Vec<usize>>) -> Self {
        let cum = torch::cumsum(&torch::softmax(&sorted));
        let threshold = (1.0 - top_p) as f32;
        let mut sort = Self {
            sorted,
            cum,
            threshold,
            window: near_window(threshold),
            removed: 0,
            order,
        };
        sort.removed = (0..sort.sorted.len())
            .take_while(|&pos| sort.removes(pos))
            .count();
        sort
    }

    /// Whether the cut removes position `pos`: `cumsum <= (float)(1 -
    /// top_p)`, never the last (largest) entry.
    fn removes(&self, pos: usize) -> bool {
        pos + 1 < self.sorted.len() && self.cum[pos] <= self.threshold
    }

    /// Whether the fragile check reports position `pos`: a finite score
    /// (not the last) whose cumulative mass is near the threshold (the
    /// window first, a cheap test); the distance in ulps if so.
    pub(crate) fn reports(&self, pos: usize) -> Option<u64> {
        let c = self.cum[pos];
        if self.window.0 <= c
            && c <= self.window.1
            && pos + 1 < self.sorted.len()
            && self.sorted[pos] != f32::NEG_INFINITY
        {
            near(c, self.threshold)
        } else {
            None
        }
    }

    /// Whether tokens cannot be told from their scores for this cut: the
    /// removed positions are not a prefix; or a run of equal scores (under
    /// `==`, so -0.0 and 0.0 tie as in torch's `<`) is partly removed or
    /// holds a reported position; or more than [`LOOKUPS`] positions are
    /// reported.
    fn ties_decide(&self) -> bool {
        let n = self.sorted.len();
        let prefix = self.removed;
        if (prefix..n).any(|pos| self.removes(pos)) {
            return true;
        }
        let mut reported = 0;
        let mut start = 0;
        while start < n {
            let value = self.sorted[start];
            // At least one step, so a NaN (equal to nothing) cannot stall it.
            let mut end = start + 1;
            while end < n && self.sorted[end] == value {
                end += 1;
            }
            let here = (start..end)
                .filter(|&pos| self.reports(pos).is_some())
                .count();
            reported += here;
            if end - start > 1 && (here > 0 || (start < prefix && prefix < end)) {
                return true;
            }
            start = end;
        }
        reported > LOOKUPS
    }

    /// The token at ascending position `pos` of `scores` (the scores this
    /// was computed from): torch's order when replayed, else the one token
    /// with that score ([`TopPSort::ties_decide`] made it unique wherever
    /// this is asked).
    pub(crate) fn token(&self, pos: usize, scores: &[f32]) -> usize {
        match &self.order {
            Some(order) => order[pos],
            None => {
                let value = self.sorted[pos];
                scores.iter().position(|&s| s == value).unwrap_or(pos)
            }
        }
    }

    /// The cut on the scores it was computed from: drop where `cumsum <=
    /// (float)(1 - top_p)`, never the last (largest) entry.
    pub(crate) fn apply(&self, scores: &mut [f32]) {
        match &self.order {
            Some(order) => {
                for (pos, &i) in order.iter().enumerate() {
                    if self.removes(pos) {
                        scores[i] = f32::NEG_INFINITY;
                    }
                }
            }
            None => {
                // A prefix of whole runs: every score up to the last removed one.
                if let Some(&edge) = self.removed.checked_sub(1).map(|pos| &self.sorted[pos]) {
                    for s in scores.iter_mut().filter(|s| **s <= edge) {
                        *s = f32::NEG_INFINITY;
                    }
                }
            }
        }
    }
}

/// The f32 values within [`FRAGILE_ULPS`] of `x` (not NaN) form the range
/// this returns: each step of `next_up`/`next_down` is one ulp of
/// [`parity_core::fragile::ulps`] (both take -0.0 and 0.0 as one value).
pub(crate) fn near_window(x: f32) -> (f32, f32) {
    let (mut lo, mut hi) = (x, x);
    for _ in 0..FRAGILE_ULPS {
        (lo, hi) = (lo.next_down(), hi.next_up());
    }
    (lo, hi)
}

/// `probs < (float)min_p * max(probs)` → -inf, keeping the top-probability token.
pub(crate) fn min_p(scores: &mut [f32], min_p: f64) {
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
pub(crate) fn typical(scores: &mut [f32], mass: f64) {
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
pub(crate) fn epsilon(scores: &mut [f32], epsilon: f64) {
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
pub(crate) fn eta(scores: &mut [f32], epsilon: f64) {
    let probs = torch::softmax(scores);
    let eta = eta_threshold(scores, epsilon);
    let top = torch::max(scores);
    for (s, &p) in scores.iter_mut().zip(&probs) {
        if p < eta && *s < top {
            *s = f32::NEG_INFINITY;
        }
    }
}

/// The threshold [`eta`] compares probabilities with.
pub(crate) fn eta_threshold(scores: &[f32], epsilon: f64) -> f32 {
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
    eps.min(eps.sqrt() * torch::exp_f32(-entropy))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const NEG: f32 = f32::NEG_INFINITY;

    #[test]
    fn penalty_divides_positive_multiplies_negative_once_per_id() {
        let mut s = vec![2.0, -2.0, 0.0, 1.0, -0.5];
        // ids 0 and 1 twice, id 2 once; id 7 >= V is ignored.
        repetition_penalty(&mut s, &[0, 1, 1, 0, 2, 7], 2.0);
        // 2/2 = 1, -2*2 = -4, 0/2 = 0 (0 is not < 0: divided), 1 and -0.5 untouched.
        assert_eq!(s, vec![1.0, -4.0, 0.0, 1.0, -0.5]);
    }

    #[test]
    fn penalty_below_one_rewards_and_keeps_minus_inf() {
        let mut s = vec![3.0, -1.0, NEG];
        repetition_penalty(&mut s, &[0, 1, 2], 0.5);
        // 3/0.5 = 6, -1*0.5 = -0.5, -inf*0.5 = -inf.
        assert_eq!(s, vec![6.0, -0.5, NEG]);
    }

    #[test]
    fn penalty_on_negative_zero_divides() {
        let mut s = vec![-0.0f32];
        repetition_penalty(&mut s, &[0], 1.3);
        // -0.0 < 0 is false: -0.0 / 1.3 = -0.0.
        assert!(s[0] == 0.0 && s[0].is_sign_negative());
    }

    #[test]
    fn temperature_is_an_f32_division() {
        let mut s = vec![1.0f32, -2.0, 0.7];
        temperature(&mut s, 0.7);
        let t = 0.7f64 as f32;
        assert_eq!(s, vec![1.0 / t, -2.0 / t, 1.0]); // 0.7/0.7 = 1 exactly
    }

    #[test]
    fn near_window_is_near() {
        let tiny = f32::from_bits(1);
        for x in [
            0.1f32,
            0.0,
            -0.0,
            tiny,
            -tiny,
            3.0 * tiny,
            1.0,
            2.0,
            f32::MAX,
            0.099_999_99,
        ] {
            let (lo, hi) = near_window(x);
            for step in 0u32..24 {
                for a in [
                    f32::from_bits(x.to_bits().wrapping_add(step)),
                    f32::from_bits(x.to_bits().wrapping_sub(step)),
                    f32::from_bits((-x).to_bits().wrapping_add(step)),
                ] {
                    if !a.is_nan() {
                        assert_eq!(
                            near(a, x).is_some(),
                            lo <= a && a <= hi,
                            "{a:e} around {x:e}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn top_k_keeps_ties_with_the_kth_value() {
        let mut s = vec![3.0, 2.0, 2.0, 1.0];
        top_k(&mut s, 2);
        // 2nd largest is 2.0: both 2.0 survive, 1.0 goes.
        assert_eq!(s, vec![3.0, 2.0, 2.0, NEG]);
    }

    #[test]
    fn top_k_beyond_vocab_keeps_all_and_k1_keeps_max_ties() {
        let mut s = vec![3.0, 2.0, 3.0];
        top_k(&mut s, 10);
        assert_eq!(s, vec![3.0, 2.0, 3.0]);
        top_k(&mut s, 1);
        assert_eq!(s, vec![3.0, NEG, 3.0]);
    }

    #[test]
    fn top_k_with_minus_inf_block() {
        let mut s = vec![1.0, NEG, NEG, 0.0];
        // k = 3: 3rd largest is -inf; nothing is < -inf.
        top_k(&mut s, 3);
        assert_eq!(s, vec![1.0, NEG, NEG, 0.0]);
    }

    #[test]
    fn top_p_keeps_the_crossing_token() {
        // probs 0.5, 0.3, 0.2 (logits ln p). Ascending cumsum: 0.2, 0.5, 1.0.
        // p = 0.6: remove cumsum <= 0.4 → only the 0.2 token.
        let mut s: Vec<f32> = [0.5f64, 0.3, 0.2].iter().map(|p| p.ln() as f32).collect();
        let orig = s.clone();
        top_p(&mut s, 0.6);
        assert_eq!(s, vec![orig[0], orig[1], NEG]);
    }

    #[test]
    fn top_p_zero_keeps_one_and_near_one_keeps_all() {
        let base: Vec<f32> = [0.5f64, 0.3, 0.2].iter().map(|p| p.ln() as f32).collect();
        let mut s = base.clone();
        // p = 0: 1 - p = 1, every cumsum <= 1 is removed except the last (largest).
        top_p(&mut s, 0.0);
        assert_eq!(s, vec![base[0], NEG, NEG]);
        let mut s = base.clone();
        // p = 0.999: 1 - p = 0.001 < 0.2, nothing removed.
        top_p(&mut s, 0.999);
        assert_eq!(s, base);
    }

    #[test]
    fn top_p_with_single_finite_token() {
        let mut s = vec![NEG, 0.5, NEG];
        top_p(&mut s, 0.5);
        assert_eq!(s, vec![NEG, 0.5, NEG]);
    }

    #[test]
    fn min_p_keeps_ties_at_the_threshold() {
        // probs 0.4, 0.2, 0.2, 0.2 (from logits ln 2, 0, 0, 0): min_p = 0.5 → threshold 0.2;
        // `probs < 0.2` is false for the tied 0.2 tokens only if they round
        // identically, which they do (same logit, same exp).
        let mut s = vec![2f32.ln(), 0.0, 0.0, 0.0];
        min_p(&mut s, 0.5);
        assert!(s.iter().all(|x| x.is_finite()), "{s:?}");
        // min_p = 0.6 → threshold 0.24 > 0.2: only the top token remains.
        let mut s = vec![2f32.ln(), 0.0, 0.0, 0.0];
        min_p(&mut s, 0.6);
        assert_eq!(s, vec![2f32.ln(), NEG, NEG, NEG]);
    }

    #[test]
    fn min_p_one_keeps_all_maxima_and_zero_keeps_all() {
        let mut s = vec![1.0, 1.0, 0.0];
        min_p(&mut s, 1.0);
        assert_eq!(s, vec![1.0, 1.0, NEG]);
        let mut s = vec![1.0, 1.0, -50.0];
        min_p(&mut s, 0.0);
        assert_eq!(s, vec![1.0, 1.0, -50.0]);
    }

    #[test]
    fn epsilon_removes_small_probabilities_but_never_the_max() {
        // probs ≈ 0.7311, 0.2689 (logits 1, 0): epsilon 0.3 removes the second.
        let mut s = vec![1.0, 0.0];
        epsilon(&mut s, 0.3);
        assert_eq!(s, vec![1.0, NEG]);
        // epsilon 0.9 would remove both; the max survives.
        let mut s = vec![1.0, 0.0];
        epsilon(&mut s, 0.9);
        assert_eq!(s, vec![1.0, NEG]);
    }

    #[test]
    fn eta_uniform_keeps_everything() {
        // Uniform over 4: entropy ln 4, exp(-H) = 1/4; eta = min(0.1, sqrt(0.1)/4 ≈ 0.079) = 0.079 < 0.25.
        let mut s = vec![0.0; 4];
        eta(&mut s, 0.1);
        assert_eq!(s, vec![0.0; 4]);
    }

    #[test]
    fn typical_uniform_keeps_everything() {
        // Uniform: every |-log p - H| is 0, all tied at the cutoff → none is "> cutoff".
        let mut s = vec![1.0; 8];
        typical(&mut s, 0.5);
        assert_eq!(s, vec![1.0; 8]);
    }

    #[test]
    fn typical_drops_the_atypical_tail() {
        // probs 0.5, 0.25, 0.25 → H = 1.5 ln 2 ≈ 1.0397; |-ln p - H| = 0.347, 0.347, 0.347 … all
        // equal in exact arithmetic, so use 0.6, 0.3, 0.1: H ≈ 0.898; distances 0.387, 0.306, 1.404.
        // Sorted: 0.3 (0.306), 0.6 (0.387), 0.1 (1.404); cumsum 0.3, 0.9, 1.0; mass 0.5 → last_ind 1.
        let mut s: Vec<f32> = [0.6f64, 0.3, 0.1].iter().map(|p| p.ln() as f32).collect();
        let orig = s.clone();
        typical(&mut s, 0.5);
        assert_eq!(s, vec![orig[0], orig[1], NEG]);
    }

    proptest! {
        #[test]
        fn filters_never_remove_everything(
            logits in proptest::collection::vec(-20.0f32..20.0, 1..64),
            k in 1usize..80, p in 0.0f64..1.0, m in 0.0f64..=1.0, e in 0.0001f64..0.9,
        ) {
            for proc in [
                Processor::TopK { top_k: k }, Processor::TopP { top_p: p }, Processor::MinP { min_p: m },
                Processor::Typical { mass: p.max(1e-3) }, Processor::Epsilon { epsilon: e }, Processor::Eta { epsilon: e },
            ] {
                let mut s = logits.clone();
                proc.apply(&mut s, &[]).expect("no call-time error");
                let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                prop_assert!(s.iter().any(|x| x.is_finite()), "{proc:?} removed everything");
                // Survivors keep their score; removed ones become -inf.
                for (a, b) in s.iter().zip(&logits) {
                    prop_assert!(*a == *b || *a == f32::NEG_INFINITY);
                }
                if !matches!(proc, Processor::Typical { .. }) {
                    prop_assert!(s.contains(&max), "{proc:?} removed the maximum");
                }
            }
        }

        #[test]
        fn top_k_keeps_at_least_k(logits in proptest::collection::vec(-5i8..5, 1..64), k in 1usize..70) {
            let mut s: Vec<f32> = logits.iter().map(|&x| x as f32).collect();
            top_k(&mut s, k);
            prop_assert!(s.iter().filter(|x| x.is_finite()).count() >= k.min(logits.len()));
        }
    }
}
