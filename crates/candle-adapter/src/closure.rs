//! transformers' top-k as a candle `sample_f` closure.
//!
//! candle's `LogitsProcessor::sample_f(logits, f)` calls `f(&mut prs)` on the
//! full softmax of `logits / temperature`, *before* any truncation. A closure
//! that keeps transformers' top-k set and renormalises it turns
//! - `Sampling::TopP { p, .. }` into transformers' top-k-then-top-p (p is then
//!   measured inside the renormalised top-k mass, as transformers does, instead
//!   of on the raw mass as candle's `TopKThenTopP` does), and
//! - `Sampling::All { .. }` into transformers' top-k with ties kept.
//!
//! The kept set is computed exactly as transformers' `TopKLogitsWarper` does,
//! on `penalised_logits / (float)temperature` in f32: every token whose score is
//! not strictly below the k-th largest score survives, so all tokens tied with
//! the k-th value are kept (candle's own `TopK` keeps exactly k). The
//! computation is `hf_sampling::ops::{temperature, top_k}`.

/// The transformers top-k mask, ready to be applied to candle's probabilities.
#[derive(Debug, Clone, PartialEq)]
pub struct HfTopK {
    k: usize,
    mask: Vec<bool>,
}

impl HfTopK {
    /// transformers' top-k set of `penalised_logits / temperature` (f32 division).
    pub fn new(penalised_logits: &[f32], k: usize, temperature: f64) -> Self {
        let mut scaled = penalised_logits.to_vec();
        hf_sampling::ops::temperature(&mut scaled, temperature);
        let mut scores = scaled.clone();
        hf_sampling::ops::top_k(&mut scores, k);
        // Filtered = turned into -inf by the warper (entries already -inf have
        // probability 0 either way).
        let mask = scaled
            .iter()
            .zip(&scores)
            .map(|(before, after)| !(*after == f32::NEG_INFINITY && *before != f32::NEG_INFINITY))
            .collect();
        HfTopK { k, mask }
    }

    /// The k it was built with.
    pub fn k(&self) -> usize {
        self.k
    }

    /// Token ids in the set, ascending.
    pub fn kept(&self) -> Vec<u32> {
        (0..self.mask.len())
            .filter(|&i| self.mask[i])
            .map(|i| i as u32)
            .collect()
    }

    /// The closure body: zero every probability outside the set, then divide
    /// the rest by their f32 sum (accumulated in vocabulary order).
    pub fn apply(&self, prs: &mut [f32]) {
        let mut sum = 0f32;
        for (p, &keep) in prs.iter_mut().zip(&self.mask) {
            if keep {
                sum += *p;
            } else {
                *p = 0.0;
            }
        }
        for p in prs.iter_mut() {
            *p /= sum;
        }
    }
}
