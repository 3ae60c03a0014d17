//! The mirror: what candle 0.11.1's `LogitsProcessor` hands to `WeightedIndex`.
//!
//! candle keeps `sample_topk`, `sample_topp` and `sample_topk_topp` private and
//! returns only a token. This module reproduces them line for line
//! (`candle-transformers-0.11.1/src/generation/mod.rs`), replacing the final
//! `sample_multinomial(&prs)` with "return the candidates and their weights".
//! The probabilities themselves are not re-implemented: they come from candle's
//! own `candle_nn::ops::softmax_last_dim(&(logits / temperature)?)` on the same
//! CPU tensor, exactly as in `sample_f`.

use candle_core::{D, Tensor};
use serde::Serialize;

use crate::closure::HfTopK;
use crate::error::AdapterError;
use crate::gumbel::GumbelDistribution;
use crate::params::CandleSampling;

/// How candle turns the (penalised) logits into a token.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Draw {
    /// `WeightedIndex::new(weights)` sampled with the processor's `StdRng`; the
    /// index it returns is mapped to `candidates[index]`.
    Weighted {
        /// Token ids in the order candle hands them to `WeightedIndex`:
        /// vocabulary order for `All`/`TopP` and for `k ≥ V`, the order
        /// `select_nth_unstable_by` leaves for top-k.
        candidates: Vec<u32>,
        /// The f32 weights, aligned with `candidates` (zeros included where
        /// top-p clamped them: candle passes them to `WeightedIndex` as zeros).
        weights: Vec<f32>,
        /// Which private candle functions ran, e.g. `sample_topk_topp → sample_topp`.
        path: &'static str,
    },
    /// A deterministic argmax (`Sampling::ArgMax`, or `GumbelSoftmax` with T ≤ 0).
    ArgMax {
        /// candle's argmax (first index among ties).
        token: u32,
    },
    /// `GumbelSoftmax` with T > 0: candle's device RNG, not replayable.
    Gumbel(GumbelDistribution),
}

/// The mirrored distribution: what candle samples from on these logits.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Mirrored {
    /// Vocabulary size V.
    pub vocab: usize,
    /// Probability of each token id (length V): the weights normalised in f64;
    /// one-hot for an argmax; the numerically integrated clipped-Gumbel
    /// distribution for `GumbelSoftmax`.
    pub probs: Vec<f64>,
    /// Token ids with `probs > 0`, ascending: the only tokens candle can return.
    pub kept: Vec<u32>,
    /// How the token is drawn (candidates and weights for `WeightedIndex`).
    pub draw: Draw,
    /// The logits after the repeat penalty (the input when there is none):
    /// what `LogitsProcessor::sample` sees.
    #[serde(skip)]
    pub penalised_logits: Vec<f32>,
}

impl Mirrored {
    /// For `Draw::Weighted`: the candidates and weights.
    pub fn weighted(&self) -> Option<(&[u32], &[f32])> {
        match &self.draw {
            Draw::Weighted {
                candidates,
                weights,
                ..
            } => Some((candidates, weights)),
            _ => None,
        }
    }
}

/// `prs(temperature)` from candle's `sample_f`: `softmax_last_dim(&(logits / T)?)`
/// read back to a Vec, then the optional closure.
pub(crate) fn candle_prs(
    logits: &Tensor,
    temperature: f64,
    closure: Option<&HfTopK>,
) -> Result<Vec<f32>, AdapterError> {
    let scaled = (logits / temperature)?;
    let prs = candle_nn::ops::softmax_last_dim(&scaled)?;
    let mut prs = prs.to_vec1::<f32>()?;
    if let Some(c) = closure {
        c.apply(&mut prs);
    }
    Ok(prs)
}

/// candle's CPU argmax of the last dimension.
pub(crate) fn candle_argmax(logits: &Tensor) -> Result<u32, AdapterError> {
    Ok(logits.argmax(D::Minus1)?.to_scalar::<u32>()?)
}

/// `sample_topp` without its final draw: clamps to zero every probability
/// after the cumulative sum (descending order, f32) has reached `top_p`.
fn topp_weights(prs: &mut [f32], top_p: f32) {
    let mut argsort_indices = (0..prs.len()).collect::<Vec<_>>();
    argsort_indices.sort_by(|&i, &j| prs[j].total_cmp(&prs[i]));
    let mut cumsum = 0f32;
    for index in &argsort_indices {
        if cumsum >= top_p {
            prs[*index] = 0.0;
        } else {
            cumsum += prs[*index];
        }
    }
}

/// The top-k selection of `sample_topk` / `sample_topk_topp` (only called with
/// `top_k < prs.len()`): the first `top_k` entries of the argsort after
/// `select_nth_unstable_by(top_k, ..)`, in the order it leaves them.
fn topk_indices(prs: &[f32], top_k: usize) -> Vec<usize> {
    let mut argsort_indices = (0..prs.len()).collect::<Vec<_>>();
    let (indices, _, _) =
        argsort_indices.select_nth_unstable_by(top_k, |&i, &j| prs[j].total_cmp(&prs[i]));
    indices.to_vec()
}

fn all_ids(v: usize) -> Vec<u32> {
    (0..v as u32).collect()
}

/// The candidates and weights candle hands to `WeightedIndex` for a weighted
/// variant, from `prs` (candle's softmax, after the closure).
pub(crate) fn truncate(
    sampling: &CandleSampling,
    mut prs: Vec<f32>,
) -> (Vec<u32>, Vec<f32>, &'static str) {
    let v = prs.len();
    match *sampling {
        CandleSampling::All { .. } => (all_ids(v), prs, "sample_multinomial"),
        CandleSampling::TopP { p, .. } => {
            if p <= 0.0 || p >= 1.0 {
                (
                    all_ids(v),
                    prs,
                    "TopP with p outside (0, 1) → sample_multinomial",
                )
            } else {
                topp_weights(&mut prs, p as f32);
                (all_ids(v), prs, "sample_topp")
            }
        }
        CandleSampling::TopK { k, .. } => {
            if k >= v {
                (all_ids(v), prs, "sample_topk (k ≥ V) → sample_multinomial")
            } else {
                let idx = topk_indices(&prs, k);
                let w = idx.iter().map(|&i| prs[i]).collect();
                (idx.iter().map(|&i| i as u32).collect(), w, "sample_topk")
            }
        }
        CandleSampling::TopKThenTopP { k, p, .. } => {
            let top_p = p as f32;
            if k >= v {
                // No p ≤ 0 / p ≥ 1 guard on this path in candle 0.11.1.
                topp_weights(&mut prs, top_p);
                (all_ids(v), prs, "sample_topk_topp (k ≥ V) → sample_topp")
            } else {
                let idx = topk_indices(&prs, k);
                let mut w: Vec<f32> = idx.iter().map(|&i| prs[i]).collect();
                let sum_p = w.iter().sum::<f32>();
                let path = if top_p <= 0.0 || top_p >= sum_p {
                    "sample_topk_topp (p ≤ 0 or p ≥ top-k mass) → sample_multinomial"
                } else {
                    topp_weights(&mut w, top_p);
                    "sample_topk_topp → sample_topp"
                };
                (idx.iter().map(|&i| i as u32).collect(), w, path)
            }
        }
        CandleSampling::ArgMax {} | CandleSampling::GumbelSoftmax { .. } => {
            unreachable!("truncate is only called for weighted variants")
        }
    }
}

/// Probabilities over the vocabulary from candidates and weights.
pub(crate) fn weights_to_probs(v: usize, candidates: &[u32], weights: &[f32]) -> Vec<f64> {
    let total: f64 = weights.iter().map(|&w| w as f64).sum();
    let mut probs = vec![0f64; v];
    for (&c, &w) in candidates.iter().zip(weights) {
        probs[c as usize] += w as f64 / total;
    }
    probs
}

pub(crate) fn kept_of(probs: &[f64]) -> Vec<u32> {
    (0..probs.len())
        .filter(|&i| probs[i] > 0.0)
        .map(|i| i as u32)
        .collect()
}
