//! `std::mt19937` and libstdc++'s `generate_canonical`, hand-written.
//!
//! llama.cpp's `dist` sampler draws `std::uniform_real_distribution<double>(0, 1)`
//! from a `std::mt19937` seeded with the request's seed, and XTC draws
//! `std::uniform_real_distribution<float>(0, 1)` from a second `std::mt19937`
//! with the same seed (src/llama-sampler.cpp at llama.cpp 0c1e57098). This
//! module reproduces both bit for bit:
//!
//! * `std::mt19937` is [`replicas::mt19937::Mt19937`], the engine every
//!   replica in the workspace shares (checked there against the C++
//!   standard's 10000th output).
//! * `generate_canonical<RealType, bits>` (libstdc++ 12, bits/random.tcc)
//!   calls the engine `k = max(1, ceil(bits / 32))` times and returns
//!   `sum / 2^(32 k)` with `sum = x0 + x1 * 2^32 + …` accumulated in
//!   `RealType`, replaced by `nextafter(1, 0)` if it rounds to 1. For `double`
//!   (53 bits) that is two outputs per number
//!   ([`replicas::libstdcxx::canonical_f64`]), for `float` (24 bits) one.
//!   `uniform_real_distribution(0, 1)` then returns `canonical * (1 - 0) + 0`,
//!   the same number.

/// `std::mt19937` (the engine is parity-core's, shared with torch's
/// generator replicas), with libstdc++'s uniform draws.
#[derive(Debug, Clone)]
pub(crate) struct Mt19937(replicas::mt19937::Mt19937);

impl Mt19937 {
    /// `std::mt19937(seed)`.
    pub(crate) fn new(seed: u32) -> Self {
        Self(replicas::mt19937::Mt19937::new(seed))
    }

    /// The next 32-bit output.
    pub(crate) fn next_u32(&mut self) -> u32 {
        self.0.next_u32()
    }

    /// `std::uniform_real_distribution<double>(0.0, 1.0)(rng)`: libstdc++'s
    /// `generate_canonical<double, 53>` ([`replicas::libstdcxx`], shared
    /// with ONNX Runtime GenAI's `discrete_distribution`).
    pub(crate) fn uniform_f64(&mut self) -> f64 {
        replicas::libstdcxx::canonical_f64(&mut self.0)
    }

    /// `std::uniform_real_distribution<float>(0.0f, 1.0f)(rng)`.
    pub(crate) fn uniform_f32(&mut self) -> f32 {
        let x = self.next_u32() as f32;
        let r = x / 4_294_967_296.0f32;
        if r >= 1.0 { 1.0f32.next_down() } else { r }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_double_uses_two_outputs_low_word_first() {
        // (3499211612 + 581869302 * 2^32) / 2^64 = 0.13547700413...
        let mut rng = Mt19937::new(5489);
        let u = rng.uniform_f64();
        let expect =
            (3_499_211_612.0 + 581_869_302.0 * 4_294_967_296.0) / 18_446_744_073_709_551_616.0;
        assert_eq!(u, expect);
        assert!((u - 0.135_477_004_1).abs() < 1e-9, "{u}");
        // the next number starts at the third output
        let mut rng2 = Mt19937::new(5489);
        rng2.next_u32();
        rng2.next_u32();
        assert_eq!(rng2.next_u32(), 3_890_346_734);
    }

    #[test]
    fn canonical_float_uses_one_output() {
        // 3499211612 rounds to the float 3499211520; / 2^32 = 0.81472367...
        let mut rng = Mt19937::new(5489);
        let u = rng.uniform_f32();
        assert_eq!(u, 3_499_211_520.0f32 / 4_294_967_296.0f32);
        assert_eq!(rng.next_u32(), 581_869_302);
    }
}
