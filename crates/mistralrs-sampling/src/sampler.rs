//! `Sampler::sample` of `mistralrs-core/src/sampler.rs` on CPU, in f32
//! (see the crate docs for the versions and functions it follows).

use parity_core::{Context, Error};

use crate::params::{MistralRsParams, Version};

/// What the sampler computed.
pub(crate) struct Out {
    /// The argmax, when greedy.
    pub greedy: Option<usize>,
    /// The weights handed to `WeightedIndex` (length V), when sampling.
    pub weights: Vec<f32>,
    /// The logits after penalties and bias, when a penalty ran.
    pub penalised: Option<Vec<f32>>,
}

pub(crate) fn run(
    logits: &[f32],
    context: &Context<'_>,
    p: &MistralRsParams,
) -> Result<Out, Error> {
    if context.input_ids().is_empty() {
        // apply_penalties runs for every request and bails on an empty context.
        return Err(Error::new(
            "Penalty context is empty, this should not happen. (mistral.rs needs the prompt ids in `input_ids`)",
        ));
    }
    let mut x = logits.to_vec();
    let penalised = if p.frequency_penalty.is_some()
        || p.presence_penalty.is_some()
        || p.repetition_penalty.is_some()
    {
        penalties(&mut x, context, p);
        true
    } else {
        false
    };
    for &(id, b) in &p.logit_bias {
        if let Some(v) = x.get_mut(id as usize) {
            *v += b;
        }
    }
    let penalised = penalised.then(|| x.clone());
    // engine/add_request.rs hands the sampler
    // `Some(request.sampling_params.temperature.unwrap_or(1.0))`: an unset
    // temperature samples at T = 1. `Sampler::new` then turns a value below
    // 1e-7 into argmax (`temperature.is_none_or(|v| v < 1e-7)`).
    let temperature = Some(p.temperature.unwrap_or(1.0)).filter(|&t| t >= 1e-7);
    let Some(t) = temperature else {
        return Ok(Out {
            greedy: Some(argmax(&x)?),
            weights: Vec::new(),
            penalised,
        });
    };
    // candle: `&logits / temperature` is `affine(1 / T, 0)`: v * mul + add in f32.
    let mul = (1.0 / t) as f32;
    for v in &mut x {
        *v = *v * mul + 0.0;
    }
    let probs = softmax(&x);
    let top_k = p.top_k.map_or(-1, |k| k as i64);
    let weights = top_kp_min_p(
        probs,
        top_k,
        p.top_p.unwrap_or(1.0) as f32,
        p.min_p.unwrap_or(0.0) as f32,
        p.version,
    );
    check_weights(&weights)?;
    Ok(Out {
        greedy: None,
        weights,
        penalised,
    })
}

/// `apply_freq_pres_rep_penalty`.
fn penalties(x: &mut [f32], context: &Context<'_>, p: &MistralRsParams) {
    let freq = p.frequency_penalty.unwrap_or(0.0);
    let pres = p.presence_penalty.unwrap_or(0.0);
    let rep = p.repetition_penalty.unwrap_or(1.0);
    let vocab = x.len();
    let mut counts = vec![0.0f32; vocab];
    let mut seen = vec![false; vocab];
    for (i, &t) in context.input_ids().iter().enumerate() {
        let Some(t) = usize::try_from(t).ok().filter(|&t| t < vocab) else {
            continue;
        };
        seen[t] = true;
        // 0.9.2 counts generated tokens only; 0.9.1 counts the whole context.
        if p.version == Version::V0_9_1 || i >= context.prompt_len() {
            counts[t] += 1.0;
        }
    }
    for (i, v) in x.iter_mut().enumerate() {
        let count = counts[i];
        *v = *v - count * freq - if count > 0.0 { 1.0 } else { 0.0 } * pres;
        let applies = match p.version {
            Version::V0_9_2 => seen[i],
            Version::V0_9_1 => count > 0.0,
        };
        if rep != 1.0 && applies {
            if *v > 0.0 {
                *v /= rep;
            } else {
                *v *= rep;
            }
        }
    }
}

/// `argmax_f32`: first maximum; NaN/+inf or no finite logit is an error.
fn argmax(values: &[f32]) -> Result<usize, Error> {
    let mut best = None;
    let mut best_value = f32::NEG_INFINITY;
    for (i, &v) in values.iter().enumerate() {
        if v.is_nan() || v == f32::INFINITY {
            return Err(Error::new(format_args!(
                "argmax received invalid logits (logit {i} is {v} after penalties and bias)"
            )));
        }
        if v > best_value {
            best = Some(i);
            best_value = v;
        }
    }
    best.ok_or_else(|| Error::new("argmax received no finite logits"))
}

/// candle's CPU `softmax_last_dim` (candle-nn/src/ops.rs, `SoftmaxLastDim::cpu_fwd`,
/// at candle 35d7ae7c and 27f20fea): `vec_reduce_max` (a left-to-right
/// `f32::max` from the first element), `(x - max).exp()`, `vec_reduce_sum`,
/// then a division.
fn softmax(x: &[f32]) -> Vec<f32> {
    let mut max = x.first().copied().unwrap_or(f32::NEG_INFINITY);
    for &v in x.iter().skip(1) {
        max = max.max(v);
    }
    let mut e: Vec<f32> = x.iter().map(|&v| (v - max).exp()).collect();
    let sum = avx2_vec_sum(&e);
    for v in &mut e {
        *v /= sum;
    }
    e
}

/// Hand-written, because the order of an f32 sum decides which tied token
/// a top-p or min-p cut keeps: candle's `vec_reduce_sum` for f32 calls
/// `cpu::vec_sum` (candle-core/src/cpu/mod.rs:197-210 at 35d7ae7c and
/// 27f20fea), which takes `avx::vec_sum` whenever
/// `is_x86_feature_detected!("avx2")` holds at run time (cpu/features.rs),
/// i.e. on every x86-64 CPU since 2013, whatever the build flags. That
/// kernel (cpu/avx.rs:243-257, `vec_reduce` :51-65) adds the first
/// `len & !31` values into 4 accumulators of 8 lanes (value `i + 8j + l`
/// into accumulator j, lane l), folds them as `(a0 + a1) + (a2 + a3)` lane
/// by lane, adds the upper 4 lanes to the lower 4, then `hadd` twice:
/// `(t0 + t1) + (t2 + t3)`, and finally adds the remaining `len % 32`
/// values one by one. Each step here is the same IEEE f32 addition in the
/// same order, so the sum is bit for bit candle's. (Without AVX2 candle
/// sums left to right; on aarch64 NEON has its own order: neither is
/// modelled.)
fn avx2_vec_sum(x: &[f32]) -> f32 {
    const STEP: usize = 32;
    const EPR: usize = 8;
    let np = x.len() & !(STEP - 1);
    let mut acc = [[0.0f32; EPR]; 4];
    for block in x[..np].chunks_exact(STEP) {
        for (j, a) in acc.iter_mut().enumerate() {
            for (l, lane) in a.iter_mut().enumerate() {
                *lane += block[j * EPR + l];
            }
        }
    }
    let mut v = [0.0f32; EPR];
    for (l, out) in v.iter_mut().enumerate() {
        *out = (acc[0][l] + acc[1][l]) + (acc[2][l] + acc[3][l]);
    }
    let t0 = [v[0] + v[4], v[1] + v[5], v[2] + v[6], v[3] + v[7]];
    let mut sum = (t0[0] + t0[1]) + (t0[2] + t0[3]);
    for &r in &x[np..] {
        sum += r;
    }
    sum
}

fn cmp_desc(a: &(u32, f32), b: &(u32, f32)) -> std::cmp::Ordering {
    b.1.partial_cmp(&a.1).unwrap_or(std::cmp::Ordering::Equal)
}

/// `partial_sort_top_k(probs, k, zero_rest = true)`.
fn partial_sort_top_k(probs: &mut [f32], k: usize) -> Vec<(u32, f32)> {
    let n = probs.len();
    if n == 0 || k == 0 {
        return Vec::new();
    }
    let mut idx: Vec<(u32, f32)> = (0..n as u32).map(|i| (i, probs[i as usize])).collect();
    let k = k.min(n);
    if k < n {
        idx.select_nth_unstable_by(k - 1, cmp_desc);
        for (i, _) in &idx[k..] {
            probs[*i as usize] = 0.0;
        }
        idx.truncate(k);
    }
    idx.sort_unstable_by(cmp_desc);
    idx
}

/// `sample_top_kp_min_p` up to the `WeightedIndex`: the weights it draws with.
fn top_kp_min_p(
    mut probs: Vec<f32>,
    top_k: i64,
    top_p: f32,
    min_p: f32,
    version: Version,
) -> Vec<f32> {
    if top_k <= 0 && !(top_p > 0.0 && top_p < 1.0) && !(min_p > 0.0 && min_p < 1.0) {
        return probs;
    }
    let k = if top_k > 0 {
        top_k as usize
    } else {
        probs.len()
    };
    let kept = partial_sort_top_k(&mut probs, k);
    if top_p > 0.0 && top_p < 1.0 {
        let cutoff = match version {
            // top_p_cutoff: p times the kept mass (an f32 sum, descending order).
            Version::V0_9_2 => top_p * kept.iter().map(|(_, q)| *q).sum::<f32>(),
            Version::V0_9_1 => top_p,
        };
        let mut cumsum = 0.0f32;
        for (i, q) in &kept {
            if cumsum >= cutoff {
                probs[*i as usize] = 0.0;
            } else {
                cumsum += q;
            }
        }
    }
    if min_p <= 0.0 || min_p >= 1.0 {
        return probs;
    }
    let max_p = kept.first().map_or(0.0, |(_, q)| *q);
    let threshold = max_p * min_p;
    for (i, q) in &kept {
        if threshold >= *q {
            probs[*i as usize] = 0.0;
        }
    }
    probs
}

/// `WeightedIndex::new`'s refusals, with mistral.rs's messages.
fn check_weights(w: &[f32]) -> Result<(), Error> {
    if let Some((i, q)) = w
        .iter()
        .enumerate()
        .find(|(_, q)| !q.is_finite() || **q < 0.0)
    {
        return Err(Error::new(format_args!(
            "Invalid sampling probability at index {i}: {q}. The model likely produced NaN/Inf logits."
        )));
    }
    if !w.iter().any(|&q| q > 0.0) {
        return Err(Error::new(
            "All sampling probabilities are zero after filtering (top-k/top-p/min-p).",
        ));
    }
    Ok(())
}
