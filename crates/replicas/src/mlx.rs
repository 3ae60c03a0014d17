//! MLX's random numbers and the float32 kernels its sampling ops run on CPU,
//! hand-written because exact replay needs them bit for bit.
//!
//! Everything here follows MLX's own source at v0.32.2 (the ml-explore/mlx
//! tree the 0.32.4 wheel was cut from; the wheel ships the `simd` headers,
//! which match) and is checked against the real 0.32.4 Linux CPU wheel by
//! the recorded draws in `fixtures/mlx/cases.jsonl`:
//!
//! * keys: `mlx/random.cpp` `key(seed)` = `[seed >> 32, seed as u32]`;
//!   `split(key)` = `bits({2, 2}, key)` read as two keys; the global
//!   sequence (`python/src/random.cpp` `PyKeySequence::next`) replaces its
//!   key with the first half and hands out the second.
//! * bits: `mlx/backend/cpu/primitives.cpp` `RandomBits::eval_cpu` fills the
//!   words of one key with threefry-2x32 (20 rounds,
//!   `mlx/backend/cpu/threefry.cpp`) of counters `(i, half + i)`.
//! * uniform: `mlx/random.cpp` `uniform`: `min(bits / f32(u32::MAX),
//!   nextafter(1, 0))` in float32 (then `* (high - low) + low`, exact for
//!   [0, 1)).
//! * exp: `mlx/backend/cpu/simd/math.h` `simd::exp`, a Cephes polynomial
//!   (not libm); on x86-64 the wheel's SIMD width is 1
//!   (`simd/base_simd.h`), so every reduction is a sequential loop.
//! * categorical: `mlx/random.cpp` `categorical_inverse_cdf` (since
//!   ml-explore/mlx #4177, 0.32.2): one row of logits is sampled by
//!   `searchsorted(exclusive_cumsum(w), u * sum(w), right) - 1` with
//!   `w = exp(x - max x)` (or `x == max` when the max is infinite).
//!
//! Used by both MLX-based semantics: mlx-lm's sampler and Ollama's MLX
//! runner.

/// A threefry key: two 32-bit words, as `mx.random.key` holds it.
pub type Key = [u32; 2];

/// `mx.random.key(seed)`: the high and low 32 bits of the seed.
pub fn key(seed: u64) -> Key {
    [(seed >> 32) as u32, seed as u32]
}

/// Threefry-2x32 with 20 rounds, as `threefry2x32_hash` computes it.
pub fn threefry2x32(key: Key, count: [u32; 2]) -> [u32; 2] {
    const ROTATIONS: [[u32; 4]; 2] = [[13, 15, 26, 6], [17, 29, 16, 24]];
    let ks = [key[0], key[1], key[0] ^ key[1] ^ 0x1BD1_1BDA];
    let mut a = count[0].wrapping_add(ks[0]);
    let mut b = count[1].wrapping_add(ks[1]);
    for i in 0..5usize {
        for r in ROTATIONS[i % 2] {
            a = a.wrapping_add(b);
            b = b.rotate_left(r);
            b ^= a;
        }
        a = a.wrapping_add(ks[(i + 1) % 3]);
        b = b.wrapping_add(ks[(i + 2) % 3]).wrapping_add(i as u32 + 1);
    }
    [a, b]
}

/// `mx.random.bits` of `n` 32-bit words from one key, in
/// `RandomBits::eval_cpu`'s counter layout.
pub fn bits(key: Key, n: usize) -> Vec<u32> {
    let mut out = vec![0u32; n];
    let half = n / 2;
    let even = n.is_multiple_of(2);
    let mut c1 = 0usize;
    let mut c2 = half + usize::from(!even);
    while c1 + 1 < half {
        let [x, y] = threefry2x32(key, [c1 as u32, c2 as u32]);
        out[c1] = x;
        out[c2] = y;
        c1 += 1;
        c2 += 1;
    }
    if c1 < half {
        let [x, y] = threefry2x32(key, [c1 as u32, c2 as u32]);
        out[c1] = x;
        c1 += 1;
        if c2 < n {
            out[c2] = y;
        }
    }
    if !even {
        out[half] = threefry2x32(key, [c1 as u32, 0])[0];
    }
    out
}

/// `mx.random.split(key)`: the two keys of `bits({2, 2}, key)`.
pub fn split(key: Key) -> (Key, Key) {
    let b = bits(key, 4);
    ([b[0], b[1]], [b[2], b[3]])
}

/// One float32 uniform in [0, 1) from one random word, as
/// `mx.random.uniform` makes it.
pub fn uniform_from_bits(word: u32) -> f32 {
    // f32(u32::MAX) rounds to 2^32; nextafter(1, 0) = 1 - 2^-24.
    let below_one = f32::from_bits(1.0f32.to_bits() - 1);
    (word as f32 / u32::MAX as f32).min(below_one)
}

/// The global key sequence behind `mx.random.seed` and every random op
/// called without a key (one per thread in MLX).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeySequence {
    key: Key,
}

impl KeySequence {
    /// `mx.random.seed(seed)`.
    pub fn new(seed: u64) -> Self {
        Self { key: key(seed) }
    }

    /// The key the next random op uses (the state advances).
    pub fn next_key(&mut self) -> Key {
        let (keep, out) = split(self.key);
        self.key = keep;
        out
    }

    /// `mx.random.uniform()` (one float32, shape `()` or `(1,)`).
    pub fn uniform(&mut self) -> f32 {
        uniform_from_bits(bits(self.next_key(), 1)[0])
    }
}

/// `simd::exp` of MLX's CPU backend: 2^(x·log2 e) split into an integer
/// power (bit-shifted into the exponent) and a degree-6 polynomial for the
/// fraction; 0 below -88, +inf above 88, NaN kept. The constants are
/// MLX's float literals as written (`1.442695f`, not `LOG2_E`).
#[allow(clippy::approx_constant, clippy::excessive_precision)]
pub fn exp(x: f32) -> f32 {
    if x.is_nan() {
        return x;
    }
    if x > 88.0 {
        return f32::INFINITY;
    }
    if x < -88.0 {
        return 0.0;
    }
    let y = x * 1.442_695f32;
    // `x + 0.5` adds a double: the sum and floor are taken in float64.
    let ipart = (f64::from(y) + 0.5).floor() as f32;
    let f = y - ipart;
    let mut p = 1.535_336_188_319_500e-4f32;
    for c in [
        1.339_887_440_266_574e-3f32,
        9.618_437_357_674_640e-3,
        5.550_332_471_162_809e-2,
        2.402_264_791_363_012e-1,
        6.931_472_028_550_421e-1,
        1.0,
    ] {
        p = p.mul_add(f, c);
    }
    let e = (ipart as i32).wrapping_add(127).wrapping_shl(23);
    f32::from_bits(e as u32) * p
}

/// The weights `categorical_inverse_cdf` draws from: `exp(x - max)` with
/// MLX's exp, or, when the max is infinite, 1 for every entry equal to it.
pub fn categorical_weights(x: &[f32]) -> Vec<f32> {
    let m = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    if m.is_infinite() {
        x.iter().map(|&v| if v == m { 1.0 } else { 0.0 }).collect()
    } else {
        x.iter().map(|&v| exp(v - m)).collect()
    }
}

/// The sequential float32 sum MLX's CPU `sum` computes (width-1 SIMD).
pub fn sum(w: &[f32]) -> f32 {
    w.iter().fold(0.0f32, |a, &b| a + b)
}

/// `mx.random.categorical` on one row of weights (see
/// [`categorical_weights`]) with the uniform `u`: the index `i` with
/// `cdf[i] <= u * sum(w) < cdf[i + 1]`, `cdf` the exclusive running sum,
/// as `searchsorted(cdf, u·Σw, "right") - 1` finds it.
pub fn categorical_from_weights(w: &[f32], u: f32) -> usize {
    let mut cdf = Vec::with_capacity(w.len());
    let mut acc = 0.0f32;
    for &v in w {
        cdf.push(acc);
        acc += v;
    }
    let target = u * sum(w);
    // cdf is non-decreasing: count the entries c with !(target < c).
    cdf.partition_point(|&c| c <= target).saturating_sub(1)
}

#[cfg(test)]
// The expected values are MLX's float32 results as Python prints them.
#[allow(clippy::excessive_precision)]
mod tests {
    use super::*;

    #[test]
    fn seed_split_and_uniform_match_mlx() {
        // mlx 0.32.4 (Linux CPU wheel): mx.random.seed(5); mx.random.state[0]
        // is [0, 5]; mx.random.uniform() = 0.856399655342102 and the state
        // becomes [3594430910, 534832770]; then mx.random.uniform(shape=(3,))
        // = [0.6723387837409973, 0.031405482441186905, 0.014829898253083229].
        let mut s = KeySequence::new(5);
        assert_eq!(s.key, [0, 5]);
        assert_eq!(s.uniform(), 0.856_399_655_342_102_f32);
        assert_eq!(s.key, [3_594_430_910, 534_832_770]);
        let k = s.next_key();
        let u: Vec<f32> = bits(k, 3).into_iter().map(uniform_from_bits).collect();
        assert_eq!(
            u,
            [
                0.672_338_783_740_997_3_f32,
                0.031_405_482_441_186_905,
                0.014_829_898_253_083_229
            ]
        );
    }

    #[test]
    fn exp_matches_mlx_cpu() {
        // mx.exp(mx.array(np.float32(x))) on the same wheel.
        for (x, e) in [
            (-0.3f32, 0.740_818_202_495_575_f32),
            (-1.7, 0.182_683_512_568_473_82),
            (-10.2, 3.717_032_086_569_816e-5),
            (-80.1, 1.633_102_592_571_644e-35),
        ] {
            assert_eq!(exp(x), e, "exp({x})");
        }
        assert_eq!(exp(-88.5), 0.0);
        assert_eq!(exp(89.0), f32::INFINITY);
        assert_eq!(exp(0.0), 1.0);
    }

    #[test]
    fn infinite_max_draws_among_the_maxima() {
        let w = categorical_weights(&[1.0, f32::INFINITY, 2.0, f32::INFINITY]);
        assert_eq!(w, [0.0, 1.0, 0.0, 1.0]);
        // u·Σw = 0.9·2 = 1.8: cdf [0, 0, 1, 1] → the last entry <= 1.8 is index 3.
        assert_eq!(categorical_from_weights(&w, 0.9), 3);
        assert_eq!(categorical_from_weights(&w, 0.2), 1);
    }
}
