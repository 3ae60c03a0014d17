//! SGLang's seeded draw, `multinomial_with_seed`
//! (`sglang/srt/layers/sampler.py`, 0.5.23), replicated by hand.
//!
//! The hash is `murmur_hash32_kernel` (`sglang/kernels/ops/sampling/
//! murmur_hash.py`), a Triton kernel: murmur3's block mix over four 32-bit
//! blocks — the seed's low and high halves (the seed cast to `uint64`, so a
//! negative seed is its two's complement), the position (its low 32 bits)
//! and the column index — then `h ^= 16` and murmur3's finaliser. The draw
//! turns each column's hash into a uniform `x = h / (2³² − 1)` in float64,
//! Gumbel noise `−log(−clamp(log x, min = −f64::MAX, max = −2⁻³²))`, adds
//! the column's log-probability (float64) and takes the first argmax.
//!
//! Triton cannot run on a CPU, so what this replays was checked against the
//! kernel's own source run by Triton's CPU interpreter and against a
//! hand-written Python version of the formula (`scripts/reference/sglang/
//! record.py`); neither is the GPU kernel's output.

use replicas::murmur3;

/// `murmur_hash32(seed, position, col)` for one column
/// ([`replicas::murmur3::hash32`], the kernel's block mix and finaliser).
pub fn murmur_hash32(seed: i64, position: i64, col: u32) -> u32 {
    murmur3::hash32(seed, position, col)
}

/// The column `multinomial_with_seed` picks from float64 log-weights
/// (`-inf` for a weight of zero): the first maximum of
/// `logprob + gumbel(hash)`; a NaN counts as the maximum (torch.argmax).
pub fn gumbel_argmax(logprobs: &[f64], seed: i64, position: i64) -> usize {
    let row = murmur3::row_state(seed, position);
    let mut best = 0;
    let mut best_v = f64::NEG_INFINITY;
    for (c, &lp) in logprobs.iter().enumerate() {
        let h = murmur3::column(row, c as u32);
        let x = (f64::from(h) / f64::from(u32::MAX))
            .ln()
            .clamp(f64::MIN, -(2.0f64.powi(-32)));
        let v = -(-x).ln() + lp;
        if v.is_nan() {
            if !best_v.is_nan() {
                best = c;
                best_v = v;
            }
        } else if !best_v.is_nan() && v > best_v {
            best = c;
            best_v = v;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_zero_weight_is_never_drawn_and_ties_go_to_the_noise() {
        let lp = [f64::NEG_INFINITY, 0.0, f64::NEG_INFINITY];
        for pos in 0..20 {
            assert_eq!(gumbel_argmax(&lp, 7, pos), 1);
        }
    }
}
