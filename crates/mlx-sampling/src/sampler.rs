//! One step of `generate_step` (mlx_lm/generate.py, mlx-lm 0.32.2) with the
//! sampler `make_sampler` builds (mlx_lm/sample_utils.py), in MLX's float32
//! arithmetic:
//!
//! 1. the logits processors of `make_logits_processors`, over every id of
//!    the context (prompt included) and only when the context is not empty:
//!    `logit_bias` (`logits.at[:, ids].add(bias)`), then repetition
//!    (`where(l < 0, l * p, l / p)` once per distinct id of the last
//!    `repetition_context_size` ids), presence (`logits[:, ids] -= p`, once
//!    per distinct id), frequency (`logits.at[:, ids].subtract(p)`, once per
//!    occurrence); a penalty of 0 is not added, and a context size of 0
//!    slices `tokens[-0:]`, i.e. the whole context;
//! 2. `logprobs = logits - logsumexp(logits)` (`mlx/backend/cpu/logsumexp.cpp`:
//!    sequential sum of MLX's exp, `log` of libm);
//! 3. temperature 0: `argmax(logprobs)`, the first maximum;
//! 4. otherwise the chain on the untempered logprobs: `apply_top_p` when
//!    0 < top_p < 1 (ascending sort, `exp`, reverse exclusive cumsum =
//!    mass above each token, drop the tokens below the first sorted value
//!    whose mass above is `< top_p * total`), `apply_min_p` when min_p != 0
//!    (drop `logprob < max + f32(ln min_p)`), `apply_xtc` when
//!    xtc_probability > 0 (softmax; mask every token whose probability
//!    exceeds the smallest one above the threshold, special ids exempt;
//!    applied unless a fresh uniform `> xtc_probability`), `apply_top_k`
//!    when top_k > 0 (`argpartition(-logprobs, k - 1)` with MLX's
//!    comparator `v1 < v2 || (v1 == v2 && i1 < i2)`: exactly k kept, lower
//!    ids win ties; `ValueError` unless 0 < k < V);
//! 5. `categorical(logprobs * (1 / temp))`: temperature last.

use parity_core::{Context, Error};

use crate::params::{MlxParams, py};
use replicas::mlx::{self as random, KeySequence};

/// What one step computes before drawing.
pub(crate) struct Pass {
    /// The logits after the processors, when any ran.
    pub penalised: Option<Vec<f32>>,
    /// The token greedy decoding picks.
    pub greedy: Option<usize>,
    /// The final logprobs without XTC, or with it when it always applies.
    pub main: Vec<f32>,
    /// With 0 < xtc_probability < 1: the final logprobs when XTC applies.
    pub xtc_applied: Option<Vec<f32>>,
}

fn window(ids: &[i64], n: usize) -> &[i64] {
    // tokens[-n:], and tokens[-0:] is the whole array.
    if n == 0 {
        ids
    } else {
        &ids[ids.len().saturating_sub(n)..]
    }
}

fn index(id: i64, vocab: usize, what: &str) -> Result<usize, Error> {
    usize::try_from(id)
        .ok()
        .filter(|&i| i < vocab)
        .ok_or_else(|| {
            Error::new(format_args!(
                "{what} id {id} is outside the vocabulary of {vocab} (MLX's gather/scatter do not check bounds on CPU)"
            ))
        })
}

fn distinct(ids: &[i64], vocab: usize, what: &str) -> Result<Vec<usize>, Error> {
    let mut seen = vec![false; vocab];
    let mut out = Vec::new();
    for &t in ids {
        let i = index(t, vocab, what)?;
        if !seen[i] {
            seen[i] = true;
            out.push(i);
        }
    }
    Ok(out)
}

/// The processors of `make_logits_processors`; `None` when none runs.
fn process(
    logits: &[f32],
    context: &Context<'_>,
    p: &MlxParams,
) -> Result<Option<Vec<f32>>, Error> {
    let ids = context.input_ids();
    let active = !p.logit_bias.is_empty()
        || p.repetition_penalty != 0.0
        || p.presence_penalty != 0.0
        || p.frequency_penalty != 0.0;
    if !active || ids.is_empty() {
        return Ok(None);
    }
    let vocab = logits.len();
    let mut l = logits.to_vec();
    for (&id, &b) in &p.logit_bias {
        let i = index(id, vocab, "logit_bias")?;
        l[i] += b as f32;
    }
    if p.repetition_penalty != 0.0 {
        let pen = p.repetition_penalty as f32;
        for i in distinct(window(ids, p.repetition_context_size), vocab, "context")? {
            let v = l[i];
            l[i] = if v < 0.0 { v * pen } else { v / pen };
        }
    }
    if p.presence_penalty != 0.0 {
        let pen = p.presence_penalty as f32;
        for i in distinct(window(ids, p.presence_context_size), vocab, "context")? {
            l[i] -= pen;
        }
    }
    if p.frequency_penalty != 0.0 {
        let pen = p.frequency_penalty as f32;
        for &t in window(ids, p.frequency_context_size) {
            l[index(t, vocab, "context")?] -= pen;
        }
    }
    Ok(Some(l))
}

/// `logits - logsumexp(logits)` as MLX's CPU kernel computes it.
pub(crate) fn log_softmax(l: &[f32]) -> Vec<f32> {
    let m = l.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let lse = if m.is_infinite() {
        m
    } else {
        let s = l.iter().fold(0.0f32, |a, &x| a + random::exp(x - m));
        s.ln() + m
    };
    l.iter().map(|&x| x - lse).collect()
}

/// First index of the maximum (`mx.argmax`).
pub fn argmax(x: &[f32]) -> usize {
    let mut best = 0;
    for (i, &v) in x.iter().enumerate() {
        if v > x[best] {
            best = i;
        }
    }
    best
}

fn apply_top_p(x: &mut [f32], top_p: f64) -> Result<(), Error> {
    let mut sorted = x.to_vec();
    sorted.sort_by(f32::total_cmp);
    let probs: Vec<f32> = sorted.iter().map(|&v| random::exp(v)).collect();
    let n = probs.len();
    let mut above = vec![0.0f32; n];
    for j in (1..n).rev() {
        above[j - 1] = above[j] + probs[j];
    }
    let total = above[0] + probs[0];
    let bar = top_p as f32 * total;
    let dropped = above.iter().filter(|&&a| a >= bar).count();
    let threshold = *sorted.get(dropped).ok_or_else(|| {
        Error::new(format_args!(
            "top_p = {}: every token's mass above is >= top_p * total, so MLX indexes past the end of the sorted logprobs",
            py(top_p)
        ))
    })?;
    for v in x.iter_mut() {
        if *v < threshold {
            *v = f32::NEG_INFINITY;
        }
    }
    Ok(())
}

fn apply_min_p(x: &mut [f32], min_p: f64) -> Result<(), Error> {
    if !(0.0..=1.0).contains(&min_p) {
        return Err(Error::new(format_args!(
            "`min_p` has to be a float in the [0, 1] interval, but is {}",
            py(min_p)
        )));
    }
    let top = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let scaled = top + min_p.ln() as f32;
    for v in x.iter_mut() {
        if *v < scaled {
            *v = f32::NEG_INFINITY;
        }
    }
    Ok(())
}

/// The tokens XTC removes when it applies.
fn xtc_mask(x: &[f32], p: &MlxParams) -> Result<Vec<bool>, Error> {
    let m = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let e: Vec<f32> = x.iter().map(|&v| random::exp(v - m)).collect();
    let r = 1.0 / random::sum(&e);
    let probs: Vec<f32> = e.iter().map(|&v| v * r).collect();
    let thr = p.xtc_threshold as f32;
    let least = probs
        .iter()
        .copied()
        .filter(|&q| q > thr)
        .fold(f32::INFINITY, f32::min);
    let mut mask: Vec<bool> = probs.iter().map(|&q| q > least).collect();
    for &t in &p.xtc_special_tokens {
        mask[index(t, x.len(), "xtc_special_tokens")?] = false;
    }
    Ok(mask)
}

fn apply_top_k(x: &mut [f32], k: i64) -> Result<(), Error> {
    let vocab = x.len();
    let k = usize::try_from(k)
        .ok()
        .filter(|&k| 0 < k && k < vocab)
        .ok_or_else(|| {
            Error::new(format_args!(
                "`top_k` has to be an integer in the (0, {vocab}) interval, but is {k}."
            ))
        })?;
    let neg: Vec<f32> = x.iter().map(|&v| -v).collect();
    let mut idx: Vec<usize> = (0..vocab).collect();
    // MLX's comparator is a strict total order on (value, index) here.
    idx.select_nth_unstable_by(k - 1, |&a, &b| {
        neg[a]
            .partial_cmp(&neg[b])
            .unwrap_or(std::cmp::Ordering::Equal)
            .then(a.cmp(&b))
    });
    for &i in &idx[k..] {
        x[i] = f32::NEG_INFINITY;
    }
    Ok(())
}

/// Processors, log-softmax, and the chain up to (not including) the draw.
pub(crate) fn run(logits: &[f32], context: &Context<'_>, p: &MlxParams) -> Result<Pass, Error> {
    if logits.iter().all(|&v| v == f32::NEG_INFINITY) {
        return Err(Error::new(
            "every logit is -inf: logsumexp is -inf and every logprob NaN",
        ));
    }
    let penalised = process(logits, context, p)?;
    let lp = log_softmax(penalised.as_deref().unwrap_or(logits));
    if p.is_greedy() {
        return Ok(Pass {
            penalised,
            greedy: Some(argmax(&lp)),
            main: lp,
            xtc_applied: None,
        });
    }
    let mut x = lp;
    if p.has_top_p() {
        apply_top_p(&mut x, p.top_p)?;
    }
    if p.min_p != 0.0 {
        apply_min_p(&mut x, p.min_p)?;
    }
    let mut applied = None;
    if p.xtc_probability > 0.0 {
        if !(0.0..=0.5).contains(&p.xtc_threshold) {
            return Err(Error::new(format_args!(
                "`threshold` has to be a float in the [0, 0.5] interval, but is {}",
                py(p.xtc_threshold)
            )));
        }
        if !(0.0..=1.0).contains(&p.xtc_probability) {
            return Err(Error::new(format_args!(
                "`probability` has to be a float in the [0, 1] interval, but is {}",
                py(p.xtc_probability)
            )));
        }
        let mask = xtc_mask(&x, p)?;
        let mut a = x.clone();
        for (v, m) in a.iter_mut().zip(mask) {
            if m {
                *v = f32::NEG_INFINITY;
            }
        }
        if p.xtc_probability >= 1.0 {
            x = a;
        } else {
            applied = Some(a);
        }
    }
    if p.top_k > 0 {
        apply_top_k(&mut x, p.top_k)?;
        if let Some(a) = applied.as_mut() {
            apply_top_k(a, p.top_k)?;
        }
    }
    Ok(Pass {
        penalised,
        greedy: None,
        main: x,
        xtc_applied: applied,
    })
}

/// `logprobs * (1 / temp)` in float32, and the weights the draw uses.
pub(crate) fn tempered_weights(x: &[f32], temperature: f64) -> Vec<f32> {
    let inv = (1.0 / temperature) as f32;
    let t: Vec<f32> = x.iter().map(|&v| v * inv).collect();
    random::categorical_weights(&t)
}

/// `w / sum(w)` in float32.
pub(crate) fn normalise(w: &[f32]) -> Vec<f32> {
    let s = random::sum(w);
    w.iter().map(|&v| v / s).collect()
}

/// `draws` successive calls of the sampler after `mx.random.seed(seed)`:
/// XTC (when on) takes one uniform, then `categorical` another.
pub(crate) fn draws(
    main: &[f32],
    applied: Option<&[f32]>,
    p: &MlxParams,
    seed: u64,
    n: usize,
) -> Vec<i64> {
    let mut seq = KeySequence::new(seed);
    let w_main = tempered_weights(main, p.temperature);
    let w_applied = applied.map(|a| tempered_weights(a, p.temperature));
    let q = p.xtc_probability as f32;
    (0..n)
        .map(|_| {
            let mut w = &w_main;
            if p.xtc_probability > 0.0 {
                let u = seq.uniform();
                // where(u > p, logits, masked): XTC applies unless u > p
                // (neither is NaN).
                if u <= q
                    && let Some(a) = &w_applied
                {
                    w = a;
                }
            }
            let u = seq.uniform();
            random::categorical_from_weights(w, u) as i64
        })
        .collect()
}
