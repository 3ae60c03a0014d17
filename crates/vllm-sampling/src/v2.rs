//! vLLM 0.33.0's Model Runner V2 GPU sampler (`runner: "v2-gpu"`), for one
//! request whose row takes the Triton path.
//!
//! Sources: files of the `vllm==0.33.0` wheel.
//!
//! - `vllm/v1/worker/gpu/sample/sampler.py`: `Sampler.sample` (lines
//!   278-326) runs `apply_sampling_params` (226-276: the logits processors,
//!   then temperature, then min-p), then `apply_top_k_top_p` and
//!   `gumbel_sample` (`_sample_random`, 328-360). FlashInfer's fused sampler
//!   replaces the last two only when no request of the batch is greedy or has
//!   its own `seed` and some request uses top-k/top-p (307-315): a request
//!   with a `seed` always takes the path modelled here.
//! - `sample/states.py`: `SamplingStates.add_request` (41-72): `top_k <= 0`
//!   or `> V` becomes `V` (off); a request without a seed gets
//!   `np.random.randint(int64)`; the row is processed only when the
//!   temperature is not 0 and something differs from T 1 / no truncation.
//!   `apply_temperature` (81-92) skips T 0 and 1.
//! - `sample/gumbel.py`: `_temperature_kernel` (21-44, `logits / T` in f32);
//!   the noise (`murmur3_hash32`, `murmur3_uniform32`, `_log1p_neg_stable`,
//!   `gumbel_noised_argmax`: 79-211) and `gumbel_sample` (344-417: argmax of
//!   `logits + noise` per 1024-token block, then the first block maximum).
//! - `sample/min_p.py`: `_min_p_kernel` (8-45): `threshold = max + log(min_p)`
//!   in f32, mask `logits < threshold` (the V1 sampler compares
//!   probabilities instead).
//! - `vllm/v1/sample/ops/topk_topp_triton.py` (module `triton`, which
//!   replays it in f32): `apply_top_k_top_p_triton` (1618-1726) sends a row
//!   with top-k through `_topk_topp_kernel` (106-878) and a top-p-only row
//!   through the split pipeline `_apply_topp_split` (1572-1615). Top-k
//!   finds a pivot by a ternary search, then "duplicate logit handling"
//!   keeps only as many tokens tied with the k-th largest logit as fill
//!   exactly k, the lowest ids first (sixth pass, 851-878); `|a - b| < 1e-9`
//!   counts as a tie (`_update_min_larger_stats`, 83-103). Top-p keeps the
//!   tokens above a probability pivot found by bisection (541-597, 710-839)
//!   or by the split pipeline's 8-pivot geometric ladder (1114-1234): the
//!   fewest most probable tokens whose f32 mass reaches `p`, and of the
//!   tokens tied at the boundary only as many as needed. After a top-k the
//!   bisection's tie is found again as `log(prob * sum) + max` (599-609) and
//!   replaces top-k's, so a top-k tie cut can come back (`ties_3221`,
//!   `top_k: 2, top_p: 0.9`: three tokens kept).
//! - `vllm/v1/worker/gpu/input_batch.py`: `_prepare_pos_seq_lens_kernel`
//!   (357-390) and `logits_indices = query_start_loc[1:] - 1` (188): the
//!   position a step's noise is keyed by is that of the request's last input
//!   token, `len(input_ids) - 1`.
//!
//! Top-p decisions that the bits of `exp`/`log` decide (the interpreter's
//! numpy and CUDA round them differently) are reported as fragile
//! ([`Pass::fragile`], see module `triton`). Not modelled (refused): logit
//! bias, allowed ids and penalties (V2 has Triton kernels of its own for
//! them, not recorded here), and the two uint32 casts of a negative or NaN
//! float the top-p kernels can make, where numpy and CUDA differ.

use parity_core::fragile::Fragile;
use parity_core::{Context, Error};

use crate::params::VllmParams;

/// What the V2 sampler computed for one request.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Pass {
    /// The row `gumbel_sample` receives.
    pub final_logits: Vec<f32>,
    /// The greedy token (temperature 0: the kernel adds no noise).
    pub greedy: Option<usize>,
    /// The position the noise is keyed by.
    pub position: i64,
    /// Kept-set decisions of the Triton top-p that exp/log bits decide.
    pub fragile: Vec<Fragile>,
}

/// Refuses what this module does not replicate, naming the field.
fn refuse_unmodelled(p: &VllmParams) -> Result<(), Error> {
    let unmodelled = |what: String| {
        Err(Error::new(format_args!(
            "{what} is not modelled for `runner` = \"v2-gpu\" (vLLM 0.33.0's Model Runner V2 sampler)"
        )))
    };
    if !p.logit_bias.is_empty() {
        return unmodelled("`logit_bias` (sample/logit_bias.py)".into());
    }
    if p.allowed_token_ids.is_some() {
        return unmodelled("`allowed_token_ids` (sample/logit_bias.py)".into());
    }
    if p.has_penalties() {
        return unmodelled("a penalty (sample/penalties.py)".into());
    }
    Ok(())
}

/// Runs the V2 sampler's processing on `logits` for one request.
pub(crate) fn run(logits: &[f32], context: &Context<'_>, p: &VllmParams) -> Result<Pass, Error> {
    crate::sampler::check_inputs(logits.len(), context, p)?;
    refuse_unmodelled(p)?;
    let vocab = logits.len();
    let position = i64::try_from(context.input_ids().len().saturating_sub(1)).unwrap_or(i64::MAX);
    let mut x = logits.to_vec();
    let t = p.temperature as f32;
    if p.is_greedy() {
        // temp 0: `gumbel_noised_argmax` adds no noise; tl.max's index is the first maximum.
        let g = first_argmax(&x);
        return Ok(Pass {
            final_logits: x,
            greedy: Some(g),
            position,
            fragile: Vec::new(),
        });
    }
    // states.py:49-50.
    let k = usize::try_from(p.top_k)
        .ok()
        .filter(|&k| 0 < k && k <= vocab)
        .unwrap_or(vocab);
    let min_p = p.min_p as f32;
    // states.py:67-72: temperature 1 with nothing else leaves the row alone.
    let top_p = p.top_p as f32;
    let needs = t != 1.0 || min_p != 0.0 || k != vocab || top_p != 1.0;
    let mut fragile = Vec::new();
    if needs {
        if t != 1.0 {
            for v in &mut x {
                *v /= t;
            }
        }
        if min_p != 0.0 {
            min_p_mask(&mut x, min_p);
        }
        // states.py:112-121: top-k when k != V, top-p when p != 1.
        let k = (k != vocab).then_some(k as u32);
        let top_p = (top_p != 1.0).then_some(top_p);
        if k.is_some() || top_p.is_some() {
            fragile = crate::triton::top_k_top_p(&mut x, k, top_p)?;
        }
    }
    Ok(Pass {
        final_logits: x,
        greedy: None,
        position,
        fragile,
    })
}

fn first_argmax(x: &[f32]) -> usize {
    let mut best = 0;
    for (i, &v) in x.iter().enumerate() {
        if v > x[best] {
            best = i;
        }
    }
    best
}

/// `_min_p_kernel`: `threshold = max + log(min_p)` (f32), mask `x < threshold`.
fn min_p_mask(x: &mut [f32], min_p: f32) {
    let max = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let threshold = max + min_p.ln();
    for v in x.iter_mut() {
        if *v < threshold {
            *v = f32::NEG_INFINITY;
        }
    }
}

// ---------------------------------------------------------------------------
// The noise: `murmur3_hash32` and friends, sample/gumbel.py:79-167.
// ---------------------------------------------------------------------------

/// `murmur3_hash32(seed, pos, offset)` (gumbel.py:103-115, domain 0): the
/// 32-bit hash a token's noise comes from ([`replicas::murmur3::hash32`],
/// the same mix SGLang's kernel runs).
pub fn murmur3_hash32(seed: i64, pos: i64, token: u32) -> u32 {
    replicas::murmur3::hash32(seed, pos, token)
}

/// `murmur3_uniform32` (gumbel.py:118-131): the two 16-bit halves, each
/// exact in f32, summed once: `(hash + 0.5) · 2^-32` correctly rounded.
pub fn murmur3_uniform32(seed: i64, pos: i64, token: u32) -> f32 {
    let h = murmur3_hash32(seed, pos, token);
    let hi = (h >> 16) as f32;
    let lo = (h & 0xFFFF) as f32;
    hi * 1.525_878_9e-5 + (lo + 0.5) * 2.328_306_4e-10
}

/// `_log1p_neg_stable(u)` (gumbel.py:150-167): `log(1 - u)` by a degree-8
/// series below 0.25, in f32 as the interpreter evaluates it (no FMA).
fn log1p_neg_stable(u: f32) -> f32 {
    if u < 0.25 {
        let mut poly = 1.0f32 / 8.0;
        for c in [7.0f32, 6.0, 5.0, 4.0, 3.0, 2.0] {
            poly = (1.0 / c) + u * poly;
        }
        poly = 1.0 + u * poly;
        -u * poly
    } else {
        (1.0 - u).max(5.960_464_5e-8).ln()
    }
}

/// The fp32 Gumbel noise of `token` (gumbel.py:203-208, `USE_FP64` off, the
/// default): `-log(-log1p(-u))`. `log` is `f32::ln`; the interpreter's
/// numpy and CUDA's `log` may differ from it by an ulp or so.
pub fn gumbel_noise32(seed: i64, pos: i64, token: u32) -> f32 {
    -(-log1p_neg_stable(murmur3_uniform32(seed, pos, token))).ln()
}

/// The token `gumbel_sample` draws from `row` for a request seeded `seed`
/// at position `pos`: the first maximum of `logit + noise` (a masked
/// `-inf` stays `-inf`; an all `-inf` row gives token 0).
pub fn gumbel_sample32(row: &[f32], seed: i64, pos: i64) -> usize {
    let mut best = 0;
    let mut best_v = f32::NEG_INFINITY;
    for (i, &v) in row.iter().enumerate() {
        if v == f32::NEG_INFINITY {
            continue;
        }
        let y = v + gumbel_noise32(seed, pos, i as u32);
        if y > best_v {
            best_v = y;
            best = i;
        }
    }
    best
}

#[cfg(test)]
mod tests {

    #[test]
    fn exact_k_keeps_the_lowest_tied_ids() {
        let top_k = |x: &[f32], k: u32| {
            let mut x = x.to_vec();
            let f = crate::triton::top_k_top_p(&mut x, Some(k), None).expect("modelled");
            assert!(f.is_empty());
            x
        };
        let ninf = f32::NEG_INFINITY;
        assert_eq!(
            top_k(&[3.0, 2.0, 2.0, 1.0, 2.0], 2),
            vec![3.0, 2.0, ninf, ninf, ninf]
        );
        assert_eq!(top_k(&[1.0, ninf, 2.0], 2), vec![1.0, ninf, 2.0]);
    }
}
