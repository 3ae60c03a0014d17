//! MT19937, the 32-bit Mersenne Twister (Matsumoto and Nishimura), written
//! out by hand because its exact output stream is what several engines' seeds
//! mean: C++'s `std::mt19937` (llama.cpp's `dist` and XTC samplers) and
//! torch's CPU generator `at::mt19937` (transformers' `torch.manual_seed`,
//! vLLM's per-request generator). Both seed it with `init_genrand`
//! (multiplier 1812433253) from a 32-bit seed, as the C++ standard specifies
//! ([rand.eng.mers]); what each engine does with the outputs (torch's
//! `random64`, libstdc++'s `generate_canonical`) lives with that engine.
//!
//! Copied from the reference code, Matsumoto and Nishimura's `mt19937ar.c`
//! (2002-01-26: `init_genrand`, `init_by_array`, `genrand_int32`), which
//! libstdc++ (GCC 12 `bits/random.tcc`), torch 2.15.0
//! (`aten/src/ATen/core/MT19937RNGEngine.h`) and CPython 3.11
//! (`Modules/_randommodule.c`) each reproduce; hand-written because exactness
//! needs every output word.

/// State words.
const N: usize = 624;
/// Twist offset.
const M: usize = 397;
const MATRIX_A: u32 = 0x9908_b0df;
const UPPER_MASK: u32 = 0x8000_0000;
const LOWER_MASK: u32 = 0x7fff_ffff;

/// The engine: `std::mt19937(seed)` / `at::mt19937(seed)`.
#[derive(Clone)]
pub struct Mt19937 {
    state: [u32; N],
    /// Next state word to temper; `N` means the state must be regenerated.
    next: usize,
}

impl std::fmt::Debug for Mt19937 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mt19937")
            .field("next", &self.next)
            .finish_non_exhaustive()
    }
}

impl Mt19937 {
    /// The engine seeded with `seed` (`init_genrand`).
    pub fn new(seed: u32) -> Self {
        let mut state = [0u32; N];
        state[0] = seed;
        for i in 1..N {
            let prev = state[i - 1];
            state[i] = 1_812_433_253u32
                .wrapping_mul(prev ^ (prev >> 30))
                .wrapping_add(i as u32);
        }
        Self { state, next: N }
    }

    /// The engine seeded with a key (`init_by_array` of mt19937ar.c, which
    /// CPython's `random.seed(int)` uses).
    pub fn from_key(key: &[u32]) -> Self {
        let mut mt = Self::new(19_650_218);
        let s = &mut mt.state;
        let (mut i, mut j) = (1usize, 0usize);
        let len = key.len().max(1);
        let word = |j: usize| key.get(j).copied().unwrap_or(0);
        for _ in 0..N.max(len) {
            let prev = s[i - 1];
            s[i] = (s[i] ^ (prev ^ (prev >> 30)).wrapping_mul(1_664_525))
                .wrapping_add(word(j))
                .wrapping_add(j as u32);
            i += 1;
            j += 1;
            if i >= N {
                s[0] = s[N - 1];
                i = 1;
            }
            if j >= len {
                j = 0;
            }
        }
        for _ in 0..N - 1 {
            let prev = s[i - 1];
            s[i] =
                (s[i] ^ (prev ^ (prev >> 30)).wrapping_mul(1_566_083_941)).wrapping_sub(i as u32);
            i += 1;
            if i >= N {
                s[0] = s[N - 1];
                i = 1;
            }
        }
        s[0] = 0x8000_0000;
        mt.next = N;
        mt
    }

    fn twist(&mut self) {
        let s = &mut self.state;
        for i in 0..N {
            let y = (s[i] & UPPER_MASK) | (s[(i + 1) % N] & LOWER_MASK);
            let mag = if y & 1 == 1 { MATRIX_A } else { 0 };
            s[i] = s[(i + M) % N] ^ (y >> 1) ^ mag;
        }
        self.next = 0;
    }

    /// The next 32-bit output.
    pub fn next_u32(&mut self) -> u32 {
        if self.next >= N {
            self.twist();
        }
        let mut y = self.state[self.next];
        self.next += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_10000th_output_is_the_standard_value() {
        // [rand.predef]: the 10000th consecutive invocation of a
        // default-constructed mt19937 (seed 5489) produces 4123659995.
        let mut rng = Mt19937::new(5489);
        let mut last = 0;
        for _ in 0..10_000 {
            last = rng.next_u32();
        }
        assert_eq!(last, 4_123_659_995);
    }

    #[test]
    fn first_outputs_of_seed_5489() {
        // The reference mt19937ar.c sequence for init_genrand(5489).
        let mut rng = Mt19937::new(5489);
        assert_eq!(rng.next_u32(), 3_499_211_612);
        assert_eq!(rng.next_u32(), 581_869_302);
        assert_eq!(rng.next_u32(), 3_890_346_734);
    }
}
