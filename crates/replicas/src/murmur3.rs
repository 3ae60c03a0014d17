//! The Murmur3 32-bit hash that two engines' seeded Triton samplers key
//! their per-token noise by, hand-written because the noise must be bit
//! for bit: SGLang's `murmur_hash32_kernel` (0.5.23,
//! `sglang/kernels/ops/sampling/`, checked in `sglang-sampling::seeded`)
//! and vLLM's `murmur3_hash32` (0.33.0, `vllm/v1/worker/gpu/sample/gumbel.py`
//! lines 79-115, checked in `vllm-sampling`'s `v2`). Both mix the seed's low
//! and high 32 bits, the position's low 32 bits and the column (token id)
//! into `h = 0`, then finish with `fmix32(h ^ 16)`.

/// `murmur3_mix(h, k)`: one 32-bit block mixed into `h`.
pub fn mix(h: u32, k: u32) -> u32 {
    let k = k
        .wrapping_mul(0xCC9E_2D51)
        .rotate_left(15)
        .wrapping_mul(0x1B87_3593);
    (h ^ k)
        .rotate_left(13)
        .wrapping_mul(5)
        .wrapping_add(0xE654_6B64)
}

/// `fmix32(h)`: Murmur3's finaliser.
pub fn fmix(mut h: u32) -> u32 {
    h ^= h >> 16;
    h = h.wrapping_mul(0x85EB_CA6B);
    h ^= h >> 13;
    h = h.wrapping_mul(0xC2B2_AE35);
    h ^ (h >> 16)
}

/// The per-row part: the seed's two halves and the position mixed in (a
/// row's columns share it).
pub fn row_state(seed: i64, position: i64) -> u32 {
    let s = seed as u64;
    let h = mix(0, s as u32);
    let h = mix(h, (s >> 32) as u32);
    mix(h, position as u64 as u32)
}

/// The hash of column `col` in the row [`row_state`] gives.
pub fn column(row: u32, col: u32) -> u32 {
    fmix(mix(row, col) ^ 16)
}

/// `hash32(seed, position, col)`: [`column`] of [`row_state`].
pub fn hash32(seed: i64, position: i64, col: u32) -> u32 {
    column(row_state(seed, position), col)
}
