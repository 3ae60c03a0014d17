//! vLLM 0.33.0's Model Runner V2 GPU sampler (`runner: "v2-gpu"`), for one
//! request whose row takes the Triton path.
//!
//! Sources: files of the `vllm==0.33.0` wheel.
//!
//! - `vllm/v1/worker/gpu/sample/sampler.py`: `Sampler.sample` (lines
//!   278-326) runs `apply_sampling_params` (226-276: the logits processors
//!   in list order, logit bias then penalties (71-76, 254-256), then
//!   temperature, then min-p), then `apply_top_k_top_p` and
//!   `gumbel_sample` (`_sample_random`, 328-360). FlashInfer's fused sampler
//!   replaces the last two only when no request of the batch is greedy or has
//!   its own `seed` and some request uses top-k/top-p (307-315): a request
//!   with a `seed` always takes the path modelled here. A row nobody needs
//!   to process is returned untouched (238-239); `add_request` (96-103)
//!   or's the sampling states' answer with each processor's.
//! - `sample/states.py`: `SamplingStates.add_request` (41-72): `top_k <= 0`
//!   or `> V` becomes `V` (off); a request without a seed gets
//!   `np.random.randint(int64)`; the row is processed only when the
//!   temperature is not 0 and something differs from T 1 / no truncation.
//!   `apply_temperature` (81-92) skips T 0 and 1. A greedy request has
//!   top-k, top-p and min-p off (`SamplingParams.__post_init__`,
//!   `vllm/sampling_params.py:615-620`), so only the processors touch its
//!   row before the argmax.
//! - `sample/logit_bias.py`: `LogitBiasState.add_request` (57-116; at most
//!   1024 allowed ids and 1024 biased ids, else `ValueError`, 20-21, 64-85)
//!   and `_bias_kernel` (158-300): with `allowed_token_ids` every other
//!   logit becomes `-inf` (the allowed ones saved and stored back, 192-223),
//!   then `logit + f32(bias)` (225-236), so a bias on a masked token leaves
//!   `-inf`. The min-tokens part (238-300) needs the EOS ids: `min_tokens`
//!   is refused before. Out-of-vocabulary ids are refused by
//!   `SamplingParams._validate_logit_bias` / `_validate_allowed_token_ids`
//!   (`sampling_params.py:1075-1095`, 1154-1183) before any kernel.
//! - `sample/penalties.py`: `_bincount_kernel` (219-268) sets a bit per
//!   prompt id (`prompt_len` tokens of `all_token_ids`) and counts every
//!   later one as output; `_post_update_kernel` (`input_batch.py:566-633`)
//!   adds each sampled token to the same counts. So V2's "output tokens" at
//!   a step are every token after the prompt, whether sampled by this
//!   engine or refilled after a preemption (`states.py:43-53`): the
//!   context's [`Context::generated`] ids, its [`Context::prompt`] the
//!   prompt. `_penalties_kernel` (107-184), in f32 over the whole row:
//!   `x *= (x > 0 ? 1/scale : scale)` with `scale = rep` on ids in prompt ∪
//!   output (else 1), then `x -= freq · count` and
//!   `x -= presence · (count > 0)`; the draft-token loop (153-159) is empty
//!   without speculative decoding.
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
//! ([`Pass::fragile`], see module `triton`), and so are min-p decisions
//! that the bits of `log(min_p)` decide (moved by up to
//! [`FRAGILE_ULPS`] ulps). Not modelled (refused): the two uint32 casts of
//! a negative or NaN float the top-p kernels can make, where numpy and CUDA
//! differ. The replay is the interpreter's f32 arithmetic; a GPU build of
//! the same kernels may differ in two places no recording here can show:
//! Triton's default f32 `/` lowers to the approximate `div.full.f32` on
//! CUDA (temperature, and the repetition penalty's `1.0 / scale`), and
//! `x - freq · count` may be contracted into one FMA.

use parity_core::fragile::{FRAGILE_ULPS, Fragile, FragileKind};
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
    /// Kept-set decisions of min-p and the Triton top-p that exp/log bits
    /// decide.
    pub fragile: Vec<Fragile>,
    /// The logits after the penalties, when a penalty ran.
    pub penalised: Option<Vec<f32>>,
}

/// `LogitBiasState.add_request` (logit_bias.py:20-21, 63-91): the runner
/// holds at most 1024 allowed ids and 1024 biased ids per request and raises
/// `ValueError` for more (the count includes repeated allowed ids).
fn check_limits(p: &VllmParams) -> Result<(), Error> {
    if let Some(allowed) = &p.allowed_token_ids
        && allowed.len() > MAX_NUM_ALLOWED_TOKEN_IDS
    {
        return Err(Error::new(format_args!(
            "Too many allowed token IDs: {}. The max size is {MAX_NUM_ALLOWED_TOKEN_IDS}. (`allowed_token_ids`, Model Runner V2)",
            allowed.len()
        )));
    }
    if p.logit_bias.len() > MAX_NUM_LOGIT_BIAS_TOKENS {
        return Err(Error::new(format_args!(
            "Too many logit bias tokens: {}. The max size is {MAX_NUM_LOGIT_BIAS_TOKENS}. (`logit_bias`, Model Runner V2)",
            p.logit_bias.len()
        )));
    }
    Ok(())
}

/// `MAX_NUM_ALLOWED_TOKEN_IDS` (logit_bias.py:20).
const MAX_NUM_ALLOWED_TOKEN_IDS: usize = 1024;
/// `MAX_NUM_LOGIT_BIAS_TOKENS` (logit_bias.py:21).
const MAX_NUM_LOGIT_BIAS_TOKENS: usize = 1024;

/// Runs the V2 sampler's processing on `logits` for one request.
/// With `check_fragile` false, [`Pass::fragile`] leaves out the Triton top-p
/// decisions (their check replays the kernels four more times).
pub(crate) fn run(
    logits: &[f32],
    context: &Context<'_>,
    p: &VllmParams,
    check_fragile: bool,
) -> Result<Pass, Error> {
    crate::sampler::check_inputs(logits.len(), context, p)?;
    check_limits(p)?;
    let vocab = logits.len();
    let position = i64::try_from(context.input_ids().len().saturating_sub(1)).unwrap_or(i64::MAX);
    let mut x = logits.to_vec();
    let t = p.temperature as f32;
    // states.py:49-50.
    let k = usize::try_from(p.top_k)
        .ok()
        .filter(|&k| 0 < k && k <= vocab)
        .unwrap_or(vocab);
    let min_p = p.min_p as f32;
    let top_p = p.top_p as f32;
    // states.py:67-72 (temperature 0, or 1 with nothing else, leaves the row
    // alone), or'ed with the processors' add_request (sampler.py:96-103;
    // logit_bias.py:115-116, penalties.py:59-63).
    let use_bias = p.allowed_token_ids.is_some() || !p.logit_bias.is_empty();
    let use_penalty = p.has_penalties();
    let needs = (t != 0.0 && (t != 1.0 || min_p != 0.0 || k != vocab || top_p != 1.0))
        || use_bias
        || use_penalty;
    let mut fragile = Vec::new();
    let mut penalised = None;
    if needs {
        // The processors in list order (sampler.py:71-76, 254-256).
        if use_bias {
            crate::sampler::allowed_then_bias(&mut x, p);
        }
        if use_penalty {
            let seen = penalties(&mut x, context, p);
            // Fragile decisions on a token the repetition penalty moved.
            penalised = Some((x.clone(), seen));
        }
        // states.py:87-90 and gumbel.py:34-36: T 0 and 1 skip the kernel.
        if t != 0.0 && t != 1.0 {
            for v in &mut x {
                *v /= t;
            }
        }
        // states.py:100-103 (a greedy request has min_p 0: SamplingParams.__post_init__).
        if min_p != 0.0 {
            fragile.extend(min_p_mask(&mut x, min_p));
        }
    }
    if p.is_greedy() {
        // temp 0: `gumbel_noised_argmax` adds no noise; tl.max's index is the
        // first maximum. A greedy request has top-k and top-p off.
        let g = first_argmax(&x);
        return Ok(Pass {
            final_logits: x,
            greedy: Some(g),
            position,
            fragile,
            penalised: penalised.map(|(x, _)| x),
        });
    }
    // states.py:112-121: top-k when k != V, top-p when p != 1.
    let k = (k != vocab).then_some(k as u32);
    let top_p = (top_p != 1.0).then_some(top_p);
    if k.is_some() || top_p.is_some() {
        fragile.extend(crate::triton::top_k_top_p(&mut x, k, top_p, check_fragile)?);
    }
    if let Some((_, seen)) = &penalised
        && p.repetition_penalty != 1.0
    {
        for f in &mut fragile {
            f.penalised = f.tokens.iter().any(|&t| seen[t]);
        }
    }
    Ok(Pass {
        final_logits: x,
        greedy: None,
        position,
        fragile,
        penalised: penalised.map(|(x, _)| x),
    })
}

/// `_penalties_kernel` (penalties.py:107-184), f32 as it computes, over
/// the counts `_bincount_kernel` (219-268) and `_post_update_kernel`
/// (input_batch.py:566-633) keep: the prompt's ids as a bit mask, every
/// later id (the output) counted. Every logit of the row goes through the
/// three steps, a token outside the output with `freq · 0` and
/// `presence · 0` subtracted (so a `-0.0` logit becomes `+0.0` when a
/// penalty is negative). Returns which ids the repetition penalty sees.
fn penalties(x: &mut [f32], context: &Context<'_>, p: &VllmParams) -> Vec<bool> {
    let vocab = x.len();
    let mut prompt = vec![false; vocab];
    for &t in context.prompt() {
        prompt[t as usize] = true;
    }
    let mut counts = vec![0i32; vocab];
    for &t in context.generated() {
        counts[t as usize] += 1;
    }
    // penalties.py:33-35, 55-57: float32 tensors.
    let rep = p.repetition_penalty as f32;
    let freq = p.frequency_penalty as f32;
    let pres = p.presence_penalty as f32;
    let mut seen = vec![false; vocab];
    for i in 0..vocab {
        seen[i] = prompt[i] || counts[i] > 0;
    }
    // 130-136: the kernel returns untouched when, in f32, no penalty is on
    // (a penalty that rounds to 1 or 0 does not turn a -0.0 into +0.0).
    if rep == 1.0 && freq == 0.0 && pres == 0.0 {
        return seen;
    }
    for (i, v) in x.iter_mut().enumerate() {
        let in_output = counts[i] > 0;
        if rep != 1.0 {
            // 175-177: scale rep where seen else 1.0; logits > 0 times 1/scale.
            let scale = if seen[i] { rep } else { 1.0 };
            *v *= if *v > 0.0 { 1.0 / scale } else { scale };
        }
        // 180-182: int32 counts and the bool mask promoted to f32.
        *v -= freq * counts[i] as f32;
        *v -= pres * f32::from(u8::from(in_output));
    }
    seen
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

/// `_min_p_kernel` (min_p.py:8-45): `threshold = max + log(min_p)` in f32,
/// mask `x < threshold`. `log` is `f32::ln`; the interpreter's numpy and
/// CUDA's `lg2.approx` may round it differently, so the threshold is
/// computed again with `log(min_p)` moved by up to [`FRAGILE_ULPS`] ulps
/// each way: a token kept under one and dropped under the other is reported
/// ([`FragileKind::MinP`]), its margin the ulps between it and the nominal
/// threshold.
fn min_p_mask(x: &mut [f32], min_p: f32) -> Option<Fragile> {
    let max = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let log = min_p.ln();
    let threshold = max + log;
    let (mut low, mut high) = (log, log);
    for _ in 0..FRAGILE_ULPS {
        low = low.next_down();
        high = high.next_up();
    }
    let (low, high) = (max + low, max + high);
    // Dropped under `high`, kept under `low`.
    let moved: Vec<usize> = (0..x.len())
        .filter(|&i| low <= x[i] && x[i] < high)
        .collect();
    let fragile = (!moved.is_empty()).then(|| {
        let margin = moved
            .iter()
            .filter_map(|&i| parity_core::fragile::ulps(x[i], threshold))
            .min()
            .unwrap_or(0);
        Fragile {
            kind: FragileKind::MinP,
            detail: format!(
                "min-p keeps or drops tokens {moved:?} depending on the bits of log({min_p}) (moved by up to {FRAGILE_ULPS} ulps): threshold {max} + {log} = {threshold}, logits {:?}",
                moved.iter().map(|&i| x[i]).collect::<Vec<_>>()
            ),
            tokens: moved,
            margin_ulps: margin,
            penalised: false,
        }
    });
    for v in x.iter_mut() {
        if *v < threshold {
            *v = f32::NEG_INFINITY;
        }
    }
    fragile
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
    use parity_core::fragile::{FRAGILE_ULPS, FragileKind};

    /// A logit exactly on `max + log(min_p)` is kept by the nominal `log`
    /// (the mask is `x < threshold`) and flips when `log` moves up by an
    /// ulp: reported, margin 0. The threshold with `log` FRAGILE_ULPS + 1
    /// ulps lower is not.
    #[test]
    fn min_p_on_its_threshold_is_fragile() {
        let min_p = 0.1f32;
        let on = 2.0 + min_p.ln();
        let mut log = min_p.ln();
        for _ in 0..=FRAGILE_ULPS {
            log = log.next_down();
        }
        let below = 2.0 + log;
        let mut x = vec![2.0, on, below, -7.0];
        let f = super::min_p_mask(&mut x, min_p).expect("fragile");
        assert_eq!(f.kind, FragileKind::MinP);
        assert_eq!(f.tokens, vec![1], "{}", f.detail);
        assert_eq!(f.margin_ulps, 0);
        assert_eq!(x[..2], [2.0, on], "kept at the nominal threshold");
        assert!(x[2..].iter().all(|&v| v == f32::NEG_INFINITY));
        // Far from the threshold: nothing reported.
        let mut x = vec![2.0, 1.0, -7.0];
        assert!(super::min_p_mask(&mut x, min_p).is_none());
    }

    /// More than 1024 allowed ids or biased ids: the runner's `ValueError`.
    #[test]
    fn more_than_1024_ids_are_refused() {
        let ids: Vec<serde_json::Value> = (0..1025).map(serde_json::Value::from).collect();
        let mut m = serde_json::Map::new();
        m.insert("runner".into(), "v2-gpu".into());
        m.insert("allowed_token_ids".into(), ids.into());
        let p = crate::params::parse(&m).expect("params");
        let e = super::check_limits(&p).expect_err("1025 ids");
        assert!(
            e.to_string()
                .starts_with("Too many allowed token IDs: 1025. The max size is 1024.")
                && e.to_string().contains("`allowed_token_ids`"),
            "{e}"
        );
        m.remove("allowed_token_ids");
        let bias: serde_json::Map<String, serde_json::Value> =
            (0..1025).map(|i| (i.to_string(), 1.0.into())).collect();
        m.insert("logit_bias".into(), bias.into());
        let p = crate::params::parse(&m).expect("params");
        let e = super::check_limits(&p).expect_err("1025 biases");
        assert!(
            e.to_string().contains("Too many logit bias tokens: 1025"),
            "{e}"
        );
    }

    #[test]
    fn exact_k_keeps_the_lowest_tied_ids() {
        let top_k = |x: &[f32], k: u32| {
            let mut x = x.to_vec();
            let f = crate::triton::top_k_top_p(&mut x, Some(k), None, true).expect("modelled");
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
