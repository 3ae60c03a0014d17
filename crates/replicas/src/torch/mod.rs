//! torch's CPU operations the engines built on torch run (transformers,
//! vLLM, SGLang), reproduced in f32, and torch's CPU generator.
//!
//! A **hand-written replica** of torch 2.15.0's CPU kernels (PyPI wheel;
//! `aten/src/ATen/native/cpu/SoftMaxKernel.cpp`, `Sorting.cpp`,
//! `ReduceOps`, SLEEF's `expf_u10`, `CPUGeneratorImpl.cpp`), not a binding:
//! no torch code is linked. Hand-written because exactness needs it: the
//! order of tied tokens and the last bit of a probability decide which token
//! survives a cut and which a seed draws.
//!
//! Facts checked against torch 2.15.0 on CPU (see `docs/hf-sampling.md`):
//! - `torch.sort(x)` (not stable) on CPU is libstdc++ `std::sort` run on
//!   (value, index) pairs with index = 0..n and comparator `a.value < b.value`
//!   (NaN last). [`argsort_ascending`] replays that algorithm step by step, so
//!   tied values come out in exactly torch's order, which is neither index
//!   order nor any stable order once n > 16.
//! - `cumsum` of an f32 tensor accumulates in f64 and rounds each prefix to f32.
//! - `softmax` subtracts the maximum, takes SLEEF's `expf_u10`, sums in f32
//!   over 16 SIMD lanes (AVX512) and multiplies by the reciprocal of the sum.
//!   [`softmax`] replays exactly that and matched torch bit for bit on 5 million
//!   entries (V from 4 to 49,152). On an AVX2-only CPU torch sums over 8 lanes,
//!   so its probabilities can differ from these by an ulp.
//! - Other reductions (`sum`, `logsumexp`) and elementwise `exp`/`log` are
//!   computed in f64 and rounded: within an ulp or two of torch.
//! - Comparing an f32 tensor with a Python float casts the float to f32 first.
//!
//! Three exact replicas live in submodules: `sort` (libstdc++'s introsort, which
//! decides the order of ties), `exp` (SLEEF's `expf_u10`) and `generator`
//! (torch's `at::mt19937` generator and `torch.multinomial(probs, 1)`).

mod exp;
mod generator;
mod sort;

pub use exp::{exp_f32, sleef_expf};
pub use generator::{CpuCapability, MultinomialError, TorchGenerator};
pub use sort::argsort_ascending;

/// Number of f32 lanes of torch's `Vectorized<float>` on the reference CPU
/// (AVX512; an AVX2 build uses 8 and rounds sums differently).
pub const LANES: usize = 16;

/// `vec::reduce_all(x + y)` over f32 with [`LANES`] lanes.
pub fn lane_sum(values: &[f32]) -> f32 {
    lane_sum_of::<LANES>(values)
}

/// `vec::reduce_all(x + y)` over f32 with `L` lanes (8 on AVX2, 16 on
/// AVX512): lane-wise accumulation of full vectors, the tail added into its
/// lanes, then a halving tree (lane i + lane i + L/2, ...). Below one
/// vector, a plain left-to-right sum.
pub fn lane_sum_of<const L: usize>(values: &[f32]) -> f32 {
    let n = values.len();
    if n < L {
        let mut acc = 0.0f32;
        for (i, &v) in values.iter().enumerate() {
            acc = if i == 0 { v } else { acc + v };
        }
        return acc;
    }
    let mut acc = [0.0f32; L];
    acc.copy_from_slice(&values[..L]);
    let full = n - n % L;
    for chunk in values[L..full].chunks_exact(L) {
        for (a, &v) in acc.iter_mut().zip(chunk) {
            *a += v;
        }
    }
    for (a, &v) in acc.iter_mut().zip(&values[full..]) {
        *a += v;
    }
    fold_lanes(acc)
}

/// The end of torch's vectorised sum: the lanes added pairwise, halving the
/// width each time (16 → 8 → 4 → 2 → 1), in f32.
pub fn fold_lanes<const L: usize>(mut acc: [f32; L]) -> f32 {
    let mut width = L / 2;
    while width >= 1 {
        for i in 0..width {
            acc[i] += acc[i + width];
        }
        width /= 2;
    }
    acc[0]
}

/// `torch.amax` over the vector (no NaN allowed).
pub fn max(values: &[f32]) -> f32 {
    values.iter().copied().fold(f32::NEG_INFINITY, f32::max)
}

/// `torch.argmax` on CPU for NaN-free input: the first index of the maximum
/// (0 when every entry is `-inf`).
pub fn argmax_first(values: &[f32]) -> usize {
    let mut best = 0;
    for (i, &s) in values.iter().enumerate() {
        if s > values[best] {
            best = i;
        }
    }
    best
}

/// `sleef_expf(x - m)` for every entry. On a CPU with x86-64-v3 the loop is
/// compiled for it (pulp's `V3`, detected once), where SLEEF's fused
/// multiply-adds and its round-to-nearest-even are one instruction each
/// instead of libm calls: the same IEEE operations, so the same bits (the
/// softmax fixtures replay bit for bit either way), three times as fast.
fn sleef_exps_minus(values: &[f32], m: f32) -> Vec<f32> {
    #[inline(always)]
    fn fill(out: &mut [f32], values: &[f32], m: f32) {
        for (o, &x) in out.iter_mut().zip(values) {
            *o = sleef_expf(x - m);
        }
    }
    let mut out = vec![0.0f32; values.len()];
    #[cfg(target_arch = "x86_64")]
    if let Some(simd) = pulp::x86::V3::try_new() {
        simd.vectorize(
            #[inline(always)]
            || fill(&mut out, values, m),
        );
        return out;
    }
    fill(&mut out, values, m);
    out
}

/// `torch.softmax(x, dim=-1)` on CPU with [`LANES`] lanes: see
/// [`softmax_lanes`]. Bit-identical to torch 2.15 on an AVX512 CPU.
pub fn softmax(values: &[f32]) -> Vec<f32> {
    softmax_lanes::<LANES>(values)
}

/// `torch.softmax(x, dim=-1)` on CPU (`_vec_softmax_lastdim`) with `L`
/// lanes: `e = exp(x - max)` with SLEEF's exp, `sum = reduce_all(e)`,
/// `e * (1 / sum)`. With every entry -inf the result is NaN everywhere, as
/// in torch.
pub fn softmax_lanes<const L: usize>(values: &[f32]) -> Vec<f32> {
    let m = max(values);
    let e = sleef_exps_minus(values, m);
    let r = 1.0f32 / lane_sum_of::<L>(&e);
    e.into_iter().map(|v| v * r).collect()
}

/// `torch.log_softmax(x, dim=-1)` in f32: `x - max - log(sum(exp(x - max)))`,
/// in that order of operations (torch keeps it to avoid cancellation).
pub fn log_softmax(values: &[f32]) -> Vec<f32> {
    let m = max(values);
    let e = sleef_exps_minus(values, m);
    let log_sum = (lane_sum(&e) as f64).ln() as f32;
    values.iter().map(|&x| (x - m) - log_sum).collect()
}

/// `torch.logsumexp(x, dim=-1)` in f32: `log(sum(exp(x - max))) + max`.
pub fn logsumexp(values: &[f32]) -> f32 {
    let m = max(values);
    if m == f32::NEG_INFINITY {
        return m;
    }
    let sum = values.iter().map(|&x| exp_f32(x - m) as f64).sum::<f64>() as f32;
    ((sum as f64).ln() as f32) + m
}

/// `torch.cumsum` of an f32 vector: f64 accumulator, each prefix rounded to f32.
pub fn cumsum(values: &[f32]) -> Vec<f32> {
    let mut acc = 0.0f64;
    values
        .iter()
        .map(|&v| {
            acc += v as f64;
            acc as f32
        })
        .collect()
}

/// Sum of an f32 vector rounded to f32 (torch's reductions are f32 with a
/// CPU-dependent order; f64 accumulation is within their rounding).
pub fn sum(values: impl IntoIterator<Item = f32>) -> f32 {
    values.into_iter().map(|v| v as f64).sum::<f64>() as f32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cumsum_accumulates_in_f64() {
        // f32 sequential: 1e8 + 1 + 1 = 1e8 (each +1 is lost); f64 accumulator: 100000002.
        let c = cumsum(&[1e8, 1.0, 1.0]);
        assert_eq!(c[2], 100_000_002.0);
    }

    #[test]
    fn dispatched_exps_are_the_scalar_ones_bit_for_bit() {
        // Every 613th f32 from -120 to 120 (past both ends of SLEEF's range),
        // the specials, with and without a max to subtract: the v3 loop (on
        // a CPU that has it) against the scalar replay at the baseline.
        let mut values: Vec<f32> = (0u32..u32::MAX / 613)
            .map(|i| f32::from_bits(i * 613))
            .filter(|x| x.abs() <= 120.0)
            .collect();
        values.extend([
            0.0,
            -0.0,
            f32::NEG_INFINITY,
            f32::MIN_POSITIVE,
            -f32::MIN_POSITIVE,
        ]);
        for m in [0.0f32, 3.5, -7.25] {
            let got = sleef_exps_minus(&values, m);
            for (&x, g) in values.iter().zip(got) {
                let want = sleef_expf(x - m);
                assert_eq!(g.to_bits(), want.to_bits(), "exp({x} - {m}): {g} vs {want}");
            }
        }
    }

    #[test]
    fn softmax_of_minus_inf_entry_is_zero() {
        let p = softmax(&[0.0, f32::NEG_INFINITY, 0.0]);
        assert_eq!(p, vec![0.5, 0.0, 0.5]); // e^0 / 2
    }
}
