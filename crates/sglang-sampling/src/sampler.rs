//! SGLang 0.5.23's torch sampling path for one request, in f32 with torch's
//! operations (replayed in [`crate::torch`]).
//!
//! Sources (all in the `sglang==0.5.23` wheel):
//! - `sglang/srt/sampling/sampling_batch_info.py`: `from_schedule_batch`
//!   (the f32 tensors, `is_all_greedy = top_k <= 1`, `need_*_sampling`,
//!   `max_top_k`, the `logit_bias` row), `update_penalties` and
//!   `apply_logits_bias` (additive penalties, then the scaling one, then the
//!   grammar mask, then `logit_bias`);
//! - `sglang/srt/sampling/penaltylib/{frequency,presence,repetition}_penalty.py`:
//!   one `cumulate_output_tokens` per generated token (the first token,
//!   sampled at prefill, is not penalised): frequency `scatter_add_`s the f32
//!   penalty once per occurrence, presence and repetition `scatter_` it;
//!   `apply_scaling_penalties`: `where(l < 0, l * s, l / s)`;
//! - `sglang/srt/managers/scheduler.py` (`_forward_isolation` →
//!   `copy_for_forward`): the additive penalties are summed into one buffer
//!   (`0 − freq − presence`) that is added to the logits;
//! - `sglang/srt/layers/sampler.py`: `Sampler.forward` (argmax when greedy;
//!   `logits.div_(temperatures)`, softmax) and
//!   `top_k_top_p_min_p_sampling_from_probs_torch` (`--sampling-backend
//!   pytorch`).

use parity_core::{Context, Error};

use crate::params::{SglangParams, TOP_K_ALL, verify_vocab};
use crate::torch;

/// How the draw was reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Path {
    /// `is_all_greedy`: argmax of the penalised logits.
    Greedy,
    /// No top-k, top-p or min-p: the draw is over the softmax itself.
    Simple,
    /// `torch.topk(probs, top_k)` then top-p and min-p on those columns.
    TopK,
    /// `probs.sort(descending=True)` then top-k, top-p and min-p.
    Sorted,
}

/// What SGLang's sampler computed for one request, stage by stage.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// The logits after penalties and `logit_bias`, when either ran.
    pub penalised: Option<Vec<f32>>,
    /// The path taken.
    pub path: Path,
    /// The greedy token.
    pub greedy: Option<usize>,
    /// What the draw is made from, by token id (f32, not normalised).
    pub weights: Vec<f32>,
    /// The draw's columns: token ids in sorted order (identity for the
    /// simple path), and the float64 log-weight of each column, as
    /// `multinomial_with_seed` receives them.
    pub columns: Vec<usize>,
    /// See `columns`.
    pub logprobs: Vec<f64>,
    /// Every logit was `-inf`: the softmax is NaN; the token torch's argmax
    /// ends up with, when the path does not raise.
    pub nan_token: Option<usize>,
}

const MULTINOMIAL_ERROR: &str = "probability tensor contains either `inf`, `nan` or element < 0";

/// Runs SGLang's processing on `logits` for one request.
pub fn run(logits: &[f32], context: &Context<'_>, p: &SglangParams) -> Result<Step, Error> {
    let vocab = logits.len();
    let bias = verify_vocab(p, vocab)?;
    let mut x = logits.to_vec();
    let mut changed = false;

    if p.has_penalties() {
        changed = true;
        penalties(&mut x, context, p)?;
    }
    if p.logit_bias.is_some() {
        changed = true;
        // logits.add_(logit_bias): a zero row with the biases scattered in.
        let mut row = vec![0.0f32; vocab];
        for &(id, b) in &bias {
            row[id] = b;
        }
        for (v, b) in x.iter_mut().zip(row) {
            *v += b;
        }
    }
    let penalised = changed.then(|| x.clone());

    if p.is_greedy() {
        let g = torch::argmax_first(&x);
        return Ok(Step {
            penalised,
            path: Path::Greedy,
            greedy: Some(g),
            weights: Vec::new(),
            columns: Vec::new(),
            logprobs: Vec::new(),
            nan_token: None,
        });
    }

    let t = p.temperature as f32;
    for v in &mut x {
        *v /= t;
    }
    let probs = torch::softmax(&x);
    let all_nan = probs.iter().all(|v| v.is_nan());
    let seeded = p.enable_deterministic_inference;

    if p.is_simple() {
        // sampling_from_probs_torch: the exponential race (probs / q).argmax()
        // or, seeded, multinomial_with_seed(torch.log(probs)) (log in f32).
        let logprobs = if seeded {
            probs
                .iter()
                .map(|&v| f64::from((f64::from(v).ln()) as f32))
                .collect()
        } else {
            Vec::new()
        };
        return Ok(Step {
            penalised,
            path: Path::Simple,
            greedy: None,
            columns: if seeded {
                (0..vocab).collect()
            } else {
                Vec::new()
            },
            logprobs,
            nan_token: all_nan.then_some(0),
            weights: probs,
        });
    }

    if seeded && p.min_p > 0.0 {
        return Err(Error::new(
            "AssertionError: With sampling seed, multinomial_with_seed will provide wrong results (SGLang 0.5.23 asserts this for min_p > 0 under --enable-deterministic-inference)",
        ));
    }
    if all_nan && !seeded {
        return Err(Error::new(format_args!(
            "RuntimeError: {MULTINOMIAL_ERROR} (torch.multinomial: every logit is -inf)"
        )));
    }
    // NaN compares false both ways, so an all-NaN row sorts like a row of
    // equal values.
    let zeros;
    let keys: &[f32] = if all_nan {
        zeros = vec![0.0; vocab];
        &zeros
    } else {
        &probs
    };
    let use_topk = !seeded && p.top_k < TOP_K_ALL && (p.top_k as usize) < vocab;
    let (path, idx) = if use_topk {
        (Path::TopK, torch::topk(keys, p.top_k as usize))
    } else {
        (Path::Sorted, torch::argsort_descending(keys))
    };
    let mut sorted: Vec<f32> = idx.iter().map(|&i| probs[i]).collect();
    let sums = torch::cumsum(&sorted);
    let k = usize::try_from(p.top_k).unwrap_or(usize::MAX);
    for v in sorted.iter_mut().skip(k) {
        *v = 0.0;
    }
    let top_p = p.top_p as f32;
    for (v, s) in sorted.iter_mut().zip(&sums) {
        if *s - *v > top_p {
            *v = 0.0;
        }
    }
    if p.min_p > 0.0 {
        let threshold = sorted[0] * p.min_p as f32;
        for v in &mut sorted {
            if *v < threshold {
                *v = 0.0;
            }
        }
    }
    let mut weights = vec![0.0f32; vocab];
    for (&i, &v) in idx.iter().zip(&sorted) {
        weights[i] = v;
    }
    let logprobs = if seeded {
        sorted.iter().map(|&v| f64::from(v).ln()).collect()
    } else {
        Vec::new()
    };
    Ok(Step {
        penalised,
        path,
        greedy: None,
        nan_token: all_nan.then(|| idx[0]),
        columns: idx,
        logprobs,
        weights,
    })
}

/// The penalties for the generated ids, as `copy_for_forward` applies them:
/// `logits += (0 − freq·count − presence)` (the count as repeated f32
/// additions), then the repetition scaling.
fn penalties(x: &mut [f32], context: &Context<'_>, p: &SglangParams) -> Result<(), Error> {
    let vocab = x.len();
    let freq = p.frequency_penalty as f32;
    let pres = p.presence_penalty as f32;
    let rep = p.repetition_penalty as f32;
    let mut fcum = vec![0.0f32; vocab];
    let mut pcum = vec![0.0f32; vocab];
    let mut scale = vec![1.0f32; vocab];
    let offset = context.prompt_len();
    for (j, &t) in context.generated().iter().enumerate() {
        let id = usize::try_from(t).ok().filter(|&i| i < vocab).ok_or_else(|| {
            Error::new(format_args!(
                "generated token `input_ids[{}]` = {t} is outside the vocabulary of {vocab} (SGLang's penalty scatter would fail)",
                offset + j
            ))
        })?;
        if p.frequency_penalty != 0.0 {
            fcum[id] += freq;
        }
        if p.presence_penalty != 0.0 {
            pcum[id] = pres;
        }
        if p.repetition_penalty != 1.0 {
            scale[id] = rep;
        }
    }
    for i in 0..vocab {
        x[i] += (0.0f32 - fcum[i]) - pcum[i];
    }
    if p.repetition_penalty != 1.0 {
        for (v, s) in x.iter_mut().zip(scale) {
            *v = if *v < 0.0 { *v * s } else { *v / s };
        }
    }
    Ok(())
}

/// The distribution the draw realises: each weight over their sum, in f64.
pub(crate) fn normalise(weights: &[f32]) -> Vec<f64> {
    let sum: f64 = weights.iter().map(|&w| f64::from(w)).sum();
    weights.iter().map(|&w| f64::from(w) / sum).collect()
}
