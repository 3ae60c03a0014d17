//! CPython's `random.Random(n).randint(a, b)` for a non-negative integer
//! seed, hand-written because a seed an engine derives with it must be
//! replayed exactly: llama-cpp-python gives a completion without a `seed`
//! the seed `random.Random(self._seed).randint(0, 2**32)`.
//!
//! From CPython 3.11 Modules/_randommodule.c and Lib/random.py: `seed(n)`
//! for an int takes `abs(n)`, splits it into 32-bit words, least significant
//! first (one word for 0), and calls `init_by_array`
//! ([`Mt19937::from_key`]); `getrandbits(k)` fills 32-bit words from the
//! least significant up, each from one output, the last shifted right by
//! `32 - k mod 32` when `k` is not a multiple of 32; `randint(a, b)` is
//! `a + _randbelow(b - a + 1)`, which draws `getrandbits(n.bit_length())`
//! until the value is below `n`.

use crate::mt19937::Mt19937;

/// `random.Random(seed)`.
#[derive(Debug, Clone)]
pub struct PyRandom(Mt19937);

impl PyRandom {
    /// `random.Random(seed)` for an integer seed.
    pub fn new(seed: u128) -> Self {
        let mut key = Vec::new();
        let mut n = seed;
        while n > 0 {
            key.push(n as u32);
            n >>= 32;
        }
        if key.is_empty() {
            key.push(0);
        }
        Self(Mt19937::from_key(&key))
    }

    /// `getrandbits(k)` for 1 ≤ k ≤ 128.
    pub fn getrandbits(&mut self, k: u32) -> u128 {
        assert!((1..=128).contains(&k), "getrandbits({k})");
        if k <= 32 {
            return u128::from(self.0.next_u32() >> (32 - k));
        }
        let mut out = 0u128;
        let mut left = k;
        let mut shift = 0;
        while left > 0 {
            let mut r = self.0.next_u32();
            if left < 32 {
                r >>= 32 - left;
            }
            out |= u128::from(r) << shift;
            shift += 32;
            left = left.saturating_sub(32);
        }
        out
    }

    /// `randint(a, b)` for 0 ≤ a ≤ b < 2^127.
    pub fn randint(&mut self, a: u128, b: u128) -> u128 {
        let n = b - a + 1;
        let k = 128 - n.leading_zeros();
        loop {
            let r = self.getrandbits(k);
            if r < n {
                return a + r;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values printed by CPython 3.11:
    /// `r = random.Random(42); r.getrandbits(32), r.getrandbits(32)`, …
    #[test]
    fn matches_cpython() {
        let mut r = PyRandom::new(42);
        assert_eq!(r.getrandbits(32), 2_746_317_213);
        assert_eq!(r.getrandbits(32), 478_163_327);
        // random.Random(n).randint(0, 2**32): one word, two words, zero
        assert_eq!(
            PyRandom::new(4_294_967_295).randint(0, 1 << 32),
            872_737_089
        );
        assert_eq!(
            PyRandom::new((1 << 40) + 5).randint(0, 1 << 32),
            3_976_222_944
        );
        assert_eq!(PyRandom::new(0).randint(0, 1 << 32), 3_626_764_237);
        assert_eq!(PyRandom::new(1234).randint(0, 1 << 32), 1_892_932_127);
        // r = random.Random(7); r.getrandbits(33), r.getrandbits(70)
        let mut r = PyRandom::new(7);
        assert_eq!(r.getrandbits(33), 5_685_818_424);
        assert_eq!(r.getrandbits(70), 763_599_714_986_210_757_943);
    }
}
