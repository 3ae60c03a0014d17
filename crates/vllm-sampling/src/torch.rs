//! The torch CPU operations vLLM's sampler runs, replayed in f32.
//!
//! The replicas are `hf-sampling`'s, verified there against torch for
//! transformers: `torch.sort`'s order and `cumsum`
//! ([`hf_sampling::torch_ops`]) and the softmax of a given vector width
//! ([`hf_sampling::CpuCapability`]). vLLM 0.32.0 pins torch 2.13.0; the
//! recorded fixtures (`fixtures/vllm/`) were made on an AVX2 CPU, where
//! torch's `Vectorized<float>` has 8 lanes, so the softmax is
//! [`CpuCapability::Avx2`]'s.

use hf_sampling::CpuCapability;

pub(crate) use hf_sampling::torch_ops::{argsort_ascending, cumsum};

/// `torch.amax` (no NaN).
pub(crate) fn max(values: &[f32]) -> f32 {
    values.iter().copied().fold(f32::NEG_INFINITY, f32::max)
}

/// `torch.softmax(x, dim=-1)` on the recording CPU (AVX2: 8 lanes). All
/// `-inf` gives NaN everywhere, as torch.
pub(crate) fn softmax(values: &[f32]) -> Vec<f32> {
    CpuCapability::Avx2.softmax(values)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sort_small_ties_keep_index_order() {
        // n <= 16: plain insertion sort, which is stable.
        assert_eq!(argsort_ascending(&[0.0; 5]), vec![0, 1, 2, 3, 4]);
        assert_eq!(argsort_ascending(&[2.0, 1.0, 2.0, 1.0]), vec![1, 3, 0, 2]);
    }

    #[test]
    fn sort_ties_follow_torch_for_n_17() {
        // torch: torch.sort(torch.zeros(17)).indices.tolist()[:10]
        let got = argsort_ascending(&[0.0; 17]);
        assert_eq!(&got[..10], &[8, 16, 15, 14, 13, 12, 11, 10, 9, 0]);
    }

    #[test]
    fn softmax_of_minus_inf_entry_is_zero() {
        let p = softmax(&[0.0, f32::NEG_INFINITY, 0.0]);
        assert_eq!(p, vec![0.5, 0.0, 0.5]); // e^0 / 2
    }
}
