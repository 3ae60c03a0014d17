//! Inputs shared by the benchmarks (the criterion benches, `compare bench`)
//! and by tests: synthetic heavy-tailed logits, the penalty case's context,
//! the plain argmax floor and the side-by-side cases, as generate kwargs. The
//! engine a benchmark times runs in its own crate (behind that crate's
//! `bench` feature); this crate names none.
//!
//! This crate is not part of any public API: tests and benches take it as a
//! dev-dependency, and only `comparison` (for `compare bench`) as a normal
//! one.
#![deny(missing_docs)]

mod cases;

pub use cases::{BenchCase, bench_cases};

/// Synthetic LLM-like logits for benchmarks and tests (deterministic in
/// `seed`): a normal bulk (σ = 3) and a Zipf head of 64 tokens at random
/// positions with logit `ln V + 5.5 − 1.1 ln(1 + j)`, so the head holds ~90% of
/// the mass at every V. Shaped like SmolLM2's logits in `fixtures/smollm2`
/// (σ ≈ 3; max − mean 15.8–17.4 and a top-p 0.9 nucleus of 53–57 tokens at
/// V = 32,000–151,936, checked by `heavy_tailed_logits_look_like_smollm2`).
pub fn heavy_tailed_logits(v: usize, seed: u64) -> Vec<f32> {
    let mut state = seed ^ 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        // splitmix64
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut x: Vec<f32> = (0..v)
        .map(|_| {
            let (u1, u2) = (next().max(1e-300), next());
            (3.0 * (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()) as f32
        })
        .collect();
    let top = (v as f64).ln() + 5.5;
    for j in 0..64.min(v) {
        let pos = (next() * v as f64) as usize % v;
        x[pos] = (top - 1.1 * (1.0 + j as f64).ln()) as f32;
    }
    x
}

/// The 1,000-id context of the penalty case, spread over a vocabulary of `v`.
pub fn bench_context(v: usize) -> Vec<i64> {
    (0..1000).map(|i| (i * 7919 % v) as i64).collect()
}

/// One plain pass for the first argmax, vectorised (an 8-lane max, then the
/// first index holding it): the floor any sampler pays to read the logits.
pub fn argmax_floor(y: &[f32]) -> usize {
    let mut m = [f32::NEG_INFINITY; 8];
    let chunks = y.chunks_exact(8);
    let rest = chunks.remainder();
    for c in chunks {
        for (lane, &x) in m.iter_mut().zip(c) {
            *lane = if x > *lane { x } else { *lane };
        }
    }
    let best = m
        .iter()
        .chain(rest)
        .fold(f32::NEG_INFINITY, |a, &b| a.max(b));
    y.iter().position(|&x| x == best).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `scripts/bench-torch.py` re-generates the benchmark logits in Python;
    /// these values are what it prints for V = 1000, seed 0 (f32 bit patterns,
    /// f64 sum).
    #[test]
    fn heavy_tailed_logits_match_the_python_port() {
        let x = heavy_tailed_logits(1000, 0);
        let bits: Vec<u32> = x[..4].iter().map(|v| v.to_bits()).collect();
        assert_eq!(bits, [0x4075_7f66, 0x3f12_8d8c, 0x4004_1656, 0x3d6f_b186]);
        let sum: f64 = x.iter().map(|&v| v as f64).sum();
        // 363.28592687041964 in Python (same f32 values, same order).
        assert!((sum - 363.285_926_870_419_64).abs() < 1e-9, "{sum}");
    }

    #[test]
    fn argmax_floor_is_the_first_maximum() {
        // 8 full lanes then a remainder of 2; the max 5.0 at 3 and 9.
        let y = [0.0, 1.0, 2.0, 5.0, 0.0, 0.0, 0.0, 0.0, 1.0, 5.0];
        assert_eq!(argmax_floor(&y), 3);
        assert_eq!(argmax_floor(&[f32::NEG_INFINITY; 3]), 0);
    }

    #[test]
    fn bench_context_has_1000_ids_below_v() {
        let c = bench_context(5000);
        assert_eq!(c.len(), 1000);
        assert!(c.iter().all(|&i| (0..5000).contains(&i)));
        assert_eq!(c[1], 7919 % 5000); // 2919
    }
}
