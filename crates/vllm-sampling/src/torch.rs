//! The torch CPU operations vLLM's sampler runs, replayed in f32.
//!
//! The replicas are `replicas::torch`'s, verified against torch for
//! transformers: `torch.sort`'s order, `cumsum` and `argmax`
//! ([`replicas::torch`]) and the softmax of a given vector width
//! ([`replicas::torch::CpuCapability`]). vLLM 0.32.0 pins torch 2.13.0; the
//! recorded fixtures (`fixtures/vllm/`) were made on an AVX2 CPU, where
//! torch's `Vectorized<float>` has 8 lanes, so the softmax is
//! [`CpuCapability::Avx2`]'s.

use replicas::torch::CpuCapability;
pub(crate) use replicas::torch::{argmax_first, argsort_ascending, cumsum};

/// `torch.amax` (no NaN).
pub(crate) fn max(values: &[f32]) -> f32 {
    values.iter().copied().fold(f32::NEG_INFINITY, f32::max)
}

/// `torch.softmax(x, dim=-1)` on the recording CPU (AVX2: 8 lanes). All
/// `-inf` gives NaN everywhere, as torch.
pub(crate) fn softmax(values: &[f32]) -> Vec<f32> {
    CpuCapability::Avx2.softmax(values)
}
