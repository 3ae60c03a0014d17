//! torch's CPU generator and `torch.multinomial(probs, 1)`, replayed bit for
//! bit: the draw behind the very token transformers'
//! `generate(do_sample=True)` returns for a `torch.manual_seed`.
//!
//! This is a **hand-written replica** of torch 2.15.0's CPU code path, not a
//! binding: no torch code is linked or copied. It was checked against the real
//! torch 2.15.0+cu132 wheel run on CPU (x86-64, AVX2) and transformers 5.23.0;
//! `docs/engines/torch-seeded.md` has the evidence and the figures.
//!
//! # What torch does (2.15.0, CPU, float32 probabilities)
//!
//! - **The generator** (`aten/src/ATen/CPUGeneratorImpl.cpp`,
//!   `aten/src/ATen/core/MT19937RNGEngine.h`). `torch.manual_seed(s)` seeds
//!   the default CPU generator's `at::mt19937` with `s` (a Python int taken
//!   modulo 2^64, so `-1` is `2^64 - 1`); the engine keeps only the low 32 bits
//!   and runs the standard MT19937 initialisation and tempering.
//!   `random()` is one engine output; `random64()` is two, the first one as the
//!   high half.
//! - **`exponential_`** (`aten/src/ATen/native/cpu/DistributionKernels.cpp`,
//!   `native/cpu/DistributionTemplates.h`, `core/DistributionsHelper.h`,
//!   `core/TransformationHelper.h`). The MKL/VSL path of that file is compiled
//!   out in the public wheels (a comment there disables the MKL generator
//!   until an upstream bug in its seeding is fixed), so every dtype takes
//!   torch's own serial kernel: for each element, in memory order, one
//!   `exponential_distribution<double>(1)` draw, cast to the tensor's dtype.
//!   That draw is `u = (random64() & (2^53 - 1)) * 2^-53` (a double in
//!   `[0, 1)`) and `q = -1.0 / lambda * log1p(-u)`, in double. No chunking, no
//!   vectorisation, no thread-dependence: element `i` of a call always uses
//!   engine outputs `2i` and `2i + 1` after those consumed before the call.
//! - **`multinomial(probs, 1)`** (`aten/src/ATen/native/Distributions.cpp`,
//!   `multinomial_out`, the "fast path for no replacement or if only one
//!   sample is drawn"): it raises if any probability is `inf`, NaN or negative
//!   or if they sum to 0 (before touching the generator), then fills
//!   `q = empty_like(probs).exponential_(1)` (so `q` is **float32**, each a
//!   rounded double), divides `probs / q` in float32 and returns
//!   `argmax` (first index of the maximum; the first NaN wins, as measured
//!   on the wheel). One draw over V probabilities advances the engine by exactly
//!   `2 V` outputs, whatever the probabilities are.
//!
//! [`CpuCapability::softmax`] is torch's softmax of a step's scores (the
//! vector width changes how the sum is rounded, so an AVX2 and an AVX512
//! torch differ in the last bit of some probabilities) and
//! [`TorchGenerator::multinomial`] the draw from it; transformers' `_sample`
//! step on top of them (its processors first) is hf-sampling's.
//! The only foreign numeric routine is `log1p` on doubles; torch calls the C
//! library's, and so does Rust's [`f64::ln_1p`] on Linux (glibc), which is
//! where the recorded draws were reproduced.
//!
//! Entries with probability 0 still advance the engine but skip the
//! logarithm: their quotient is `0 / q = 0` for any `q > 0`, which is what
//! torch computes, and the one case where it is not (`u = 0`, so `q = 0` and
//! `0 / 0` is NaN) is detected from the raw bits.

use crate::mt19937::Mt19937;

use super::softmax_lanes;

/// Mask of the 53 bits `uniform_real_distribution<double>` keeps (`digits`).
const MASK53: u64 = (1 << 53) - 1;
/// `1 / 2^53`, the divisor of `uniform_real_distribution<double>`.
const DIVISOR53: f64 = 1.0 / (1u64 << 53) as f64;

/// Why `torch.multinomial` refused (it checks before drawing).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MultinomialError {
    /// A probability is `inf`, NaN or negative (torch's message, with the
    /// first offending index and value).
    #[error(
        "probability tensor contains either `inf`, `nan` or element < 0 (probs[{index}] = {value})"
    )]
    InvalidProbability {
        /// Index of the first offending entry.
        index: usize,
        /// Its value.
        value: f32,
    },
    /// Every probability is 0.
    #[error("invalid multinomial distribution (sum of probabilities <= 0)")]
    ZeroSum,
    /// No probabilities at all (torch: cannot draw 1 sample from 0 categories).
    #[error(
        "cannot sample n_sample > prob_dist.size(-1) samples without replacement (probs is empty)"
    )]
    Empty,
}

/// The vector width torch's CPU kernels were dispatched to, as
/// `torch.backends.cpu.get_cpu_capability()` reports it. It decides how
/// `softmax` sums its exponentials, hence the last bit of some
/// probabilities (and, rarely, which token wins a close race).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CpuCapability {
    /// `"AVX2"`: `Vectorized<float>` has 8 lanes. The machine every committed
    /// reference was recorded on; the default.
    #[default]
    Avx2,
    /// `"AVX512"`: 16 lanes; the probabilities of hf-sampling's `process`.
    Avx512,
}

impl CpuCapability {
    /// `torch.softmax(scores, dim=-1)` for float32 on CPU with this width
    /// (`aten/src/ATen/native/cpu/SoftMaxKernel.cpp`, `_vec_softmax_lastdim`):
    /// `e = exp(x - max)` with SLEEF's `expf_u10`, `sum` as `vec::reduce_all`
    /// (lane-wise accumulation of whole vectors, the tail added into the first
    /// lanes, then a halving tree over the lanes; a plain left-to-right sum
    /// below one vector), then `e * (1 / sum)`. `scores` must not be empty.
    pub fn softmax(self, scores: &[f32]) -> Vec<f32> {
        match self {
            CpuCapability::Avx2 => softmax_lanes::<8>(scores),
            CpuCapability::Avx512 => softmax_lanes::<16>(scores),
        }
    }
}

/// torch's default CPU generator after `torch.manual_seed(seed)`: the
/// `at::mt19937` engine and the draws `torch.multinomial` makes from it.
///
/// Clone it to branch a stream; every method advances it exactly as the
/// torch call it names advances torch's generator.
#[derive(Clone)]
pub struct TorchGenerator {
    seed: u64,
    capability: CpuCapability,
    engine: Mt19937,
}

impl std::fmt::Debug for TorchGenerator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TorchGenerator")
            .field("seed", &self.seed)
            .field("capability", &self.capability)
            .field("engine", &self.engine)
            .finish_non_exhaustive()
    }
}

impl TorchGenerator {
    /// The generator as `torch.manual_seed(seed)` leaves it. Python ints are
    /// taken modulo 2^64 by torch (pass `-1` as `u64::MAX`); only the low 32
    /// bits reach the engine, so `2^32 + 5` draws like `5`. Its
    /// [`Self::capability`] is an AVX2 torch's; see [`Self::with_capability`].
    pub fn manual_seed(seed: u64) -> Self {
        Self {
            seed,
            capability: CpuCapability::default(),
            engine: Mt19937::new(seed as u32),
        }
    }

    /// The softmax a step on this generator replays (hf-sampling's
    /// `TorchSample::sample`): that of a torch whose `get_cpu_capability()`
    /// is `capability`.
    pub fn with_capability(mut self, capability: CpuCapability) -> Self {
        self.capability = capability;
        self
    }

    /// The seed given to [`Self::manual_seed`] (`torch.initial_seed()`).
    pub fn initial_seed(&self) -> u64 {
        self.seed
    }

    /// One engine output (`CPUGeneratorImpl::random`).
    pub fn random(&mut self) -> u32 {
        self.engine.next_u32()
    }

    /// Two engine outputs, the first as the high half (`CPUGeneratorImpl::random64`).
    pub fn random64(&mut self) -> u64 {
        let hi = self.random();
        let lo = self.random();
        (u64::from(hi) << 32) | u64::from(lo)
    }

    /// One `exponential_distribution<double>(1)` draw: what
    /// `torch.empty(n, dtype=torch.float64).exponential_()` stores per element
    /// (a float32 tensor stores it rounded with `as f32`).
    pub fn exponential(&mut self) -> f64 {
        exp1_from_bits(self.random64())
    }

    /// `torch.multinomial(probs, 1)` on CPU for a 1-D (or one-row) float32
    /// tensor: the exponential race `argmax(probs / q)` described in the
    /// module docs. Advances the generator by `2 * probs.len()` outputs, or
    /// not at all when it returns an error (torch checks before drawing).
    pub fn multinomial(&mut self, probs: &[f32]) -> Result<usize, MultinomialError> {
        if probs.is_empty() {
            return Err(MultinomialError::Empty);
        }
        // torch: `(max < inf) & (min >= 0)`, so NaN fails too.
        if let Some((index, &value)) = probs
            .iter()
            .enumerate()
            .find(|(_, p)| !(**p >= 0.0 && **p < f32::INFINITY))
        {
            return Err(MultinomialError::InvalidProbability { index, value });
        }
        if probs.iter().all(|&p| p == 0.0) {
            return Err(MultinomialError::ZeroSum);
        }
        let mut best = 0usize;
        let mut best_value = f32::NEG_INFINITY;
        for (i, &p) in probs.iter().enumerate() {
            let bits = self.random64();
            let value = if p == 0.0 && bits & MASK53 != 0 {
                // 0 / q with q > 0 (finite): exactly 0.
                0.0
            } else {
                p / exp1_from_bits(bits) as f32
            };
            if value.is_nan() {
                // torch's argmax returns the first NaN; keep drawing so the
                // generator ends where torch's does.
                if !best_value.is_nan() {
                    best = i;
                    best_value = value;
                }
            } else if value > best_value {
                best = i;
                best_value = value;
            }
        }
        Ok(best)
    }

    /// The softmax width this generator's owner replays (see
    /// [`Self::with_capability`]).
    pub fn capability(&self) -> CpuCapability {
        self.capability
    }
}

/// `transformation::exponential(uniform_real(bits, 0, 1), 1)` in double.
fn exp1_from_bits(bits: u64) -> f64 {
    let u = (bits & MASK53) as f64 * DIVISOR53;
    // torch writes `-1.0 / lambda * log1p(-u)`; with lambda = 1 that is an
    // exact negation.
    -(-u).ln_1p()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_low_32_bits_of_the_seed_count() {
        let mut a = TorchGenerator::manual_seed(5);
        let mut b = TorchGenerator::manual_seed((1 << 32) + 5);
        assert_eq!(a.random64(), b.random64());
        assert_eq!(b.initial_seed(), (1 << 32) + 5);
    }

    #[test]
    fn invalid_probabilities_are_rejected_without_drawing() {
        let mut g = TorchGenerator::manual_seed(0);
        let fresh = TorchGenerator::manual_seed(0).random();
        assert!(matches!(
            g.multinomial(&[0.5, f32::NAN]),
            Err(MultinomialError::InvalidProbability { index: 1, .. })
        ));
        assert!(matches!(
            g.multinomial(&[-0.5, 1.0]),
            Err(MultinomialError::InvalidProbability { index: 0, .. })
        ));
        assert!(matches!(
            g.multinomial(&[f32::INFINITY]),
            Err(MultinomialError::InvalidProbability { index: 0, .. })
        ));
        assert!(matches!(
            g.multinomial(&[0.0, 0.0]),
            Err(MultinomialError::ZeroSum)
        ));
        assert!(matches!(g.multinomial(&[]), Err(MultinomialError::Empty)));
        assert_eq!(
            g.random(),
            fresh,
            "a refused draw must not advance the engine"
        );
    }

    #[test]
    fn softmax_of_ties_and_minus_inf() {
        // exp(0) = 1 and exp(-inf) = 0 are exact: the sum is 4, 1/4 = 0.25.
        let s = [0.0, f32::NEG_INFINITY, 0.0, 0.0, 0.0];
        for cap in [CpuCapability::Avx2, CpuCapability::Avx512] {
            assert_eq!(cap.softmax(&s), vec![0.25, 0.0, 0.25, 0.25, 0.25]);
        }
        // Ten ones: sum 10 in any order; 1/10 rounds to 0x3dcccccd.
        let p = CpuCapability::Avx2.softmax(&[7.5; 10]);
        assert!(p.iter().all(|x| x.to_bits() == 0x3dcc_cccd));
    }

    #[test]
    fn one_draw_consumes_two_outputs_per_entry() {
        let mut g = TorchGenerator::manual_seed(42);
        let mut h = g.clone();
        assert_eq!(g.multinomial(&[0.0, 1.0, 0.0]).expect("valid"), 1);
        for _ in 0..6 {
            h.random();
        }
        assert_eq!(g.random(), h.random());
    }
}
