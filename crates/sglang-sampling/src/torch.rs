//! The torch CPU operations SGLang's torch sampler runs, replayed in f32.
//!
//! - `torch.softmax` is `replicas::torch`'s ([`CpuCapability`], SLEEF's
//!   `expf_u10` and torch's lane-wise sum). SGLang 0.5.23 pins torch 2.14.1;
//!   the recorded fixtures (`fixtures/sglang/`) were made on an AVX512 CPU,
//!   where torch's `Vectorized<float>` has 16 lanes, so the softmax here is
//!   [`CpuCapability::Avx512`]'s. On an AVX2 machine torch's probabilities can
//!   differ in the last bit.
//! - `torch.cumsum` (f64 accumulator, each prefix rounded to f32) and
//!   `torch.argmax` (first index of the maximum) are `replicas::torch`'s.
//! - `probs.sort(descending=True)` is libstdc++'s `std::sort` on (value,
//!   index) pairs with `x > y`; `torch.topk(probs, k, sorted=True)` is
//!   `std::partial_sort` when `64·k ≤ V`, else `std::nth_element` at `k − 1`
//!   followed by `std::sort` of the first `k − 1` (`aten/src/ATen/native/
//!   TopKImpl.h`). Both are ported in [`replicas::libstdcxx`].

pub(crate) use replicas::torch::{argmax_first, cumsum};

use replicas::libstdcxx as stl;
use replicas::torch::CpuCapability;

/// `torch.softmax(x, dim=-1)` on the recording CPU (AVX512: 16 lanes). All
/// `-inf` gives NaN everywhere, as torch.
pub(crate) fn softmax(values: &[f32]) -> Vec<f32> {
    CpuCapability::Avx512.softmax(values)
}

/// `x > y` on (value, index) pairs, as torch's descending comparators
/// (`(isnan(x) && !isnan(y)) || x > y`) read NaN-free values.
fn greater(x: &(f32, usize), y: &(f32, usize)) -> bool {
    x.0 > y.0
}

/// The index order of `values.sort(dim=-1, descending=True)` on CPU. NaN
/// must have been replaced (a row of NaN sorts like a row of equal values:
/// the comparator is false for every pair either way).
pub(crate) fn argsort_descending(values: &[f32]) -> Vec<usize> {
    let mut pairs: Vec<(f32, usize)> = values.iter().copied().zip(0..).collect();
    let n = pairs.len();
    stl::sort(&mut pairs, 0, n, &greater);
    pairs.into_iter().map(|(_, i)| i).collect()
}

/// The indices of `torch.topk(values, k, dim=-1, largest=True, sorted=True)`
/// on CPU, `1 ≤ k ≤ V`, NaN-free values.
pub(crate) fn topk(values: &[f32], k: usize) -> Vec<usize> {
    let mut q: Vec<(f32, usize)> = values.iter().copied().zip(0..).collect();
    let n = q.len();
    if k * 64 <= n {
        stl::partial_sort(&mut q, 0, k, n, &greater);
    } else {
        stl::nth_element(&mut q, 0, k - 1, n, &greater);
        stl::sort(&mut q, 0, k - 1, &greater);
    }
    q.truncate(k);
    q.into_iter().map(|(_, i)| i).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topk_of_distinct_values_is_the_k_largest_in_order() {
        let v = [0.1f32, 0.4, 0.2, 0.3];
        assert_eq!(topk(&v, 2), vec![1, 3]);
        assert_eq!(topk(&v, 4), vec![1, 3, 2, 0]);
    }
}

#[cfg(test)]
mod stl_tests {
    /// A small deterministic generator for tie-heavy test vectors.
    fn values(n: usize, distinct: u64, mut state: u64) -> Vec<f32> {
        (0..n)
            .map(|_| {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                ((state >> 33) % distinct) as f32
            })
            .collect()
    }

    /// parity-core's generic `std::sort` leaves ties where hf-sampling's
    /// ascending replica, verified against torch, leaves them.
    #[test]
    fn sort_matches_hf_samplings_verified_ascending_replica() {
        for (n, distinct, seed) in [
            (5, 2, 1),
            (17, 3, 2),
            (40, 4, 3),
            (1000, 4, 4),
            (3000, 50, 5),
        ] {
            let v = values(n, distinct, seed);
            let mut pairs: Vec<(f32, usize)> = v.iter().copied().zip(0..).collect();
            replicas::libstdcxx::sort(&mut pairs, 0, n, &|x: &(f32, usize), y: &(f32, usize)| {
                x.0 < y.0
            });
            let ours: Vec<usize> = pairs.iter().map(|p| p.1).collect();
            assert_eq!(ours, replicas::torch::argsort_ascending(&v), "n={n}");
        }
    }
}
