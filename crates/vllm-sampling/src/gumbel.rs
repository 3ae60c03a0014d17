//! vLLM's CPU draw, replayed: the seed a seeded request hands the kernel,
//! and the kernel's pick.
//!
//! Both are hand-written replicas, checked against real draws recorded from
//! vLLM 0.32.0 (`fixtures/vllm/`, see `docs/engines/vllm.md`):
//!
//! - `TopKTopPSampler.forward_cpu` (`vllm/v1/sample/ops/topk_topp_sampler.py`)
//!   draws one kernel seed per step with
//!   `torch.randint(0, 2**31, (1,), generator=gen)`, where `gen` is the
//!   request's `torch.Generator` seeded with `SamplingParams.seed`. torch's
//!   CPU generator is a 32-bit Mersenne Twister (`at::mt19937`, seeded with
//!   the low 32 bits), and this `randint` takes `random64() % 2^31`: two
//!   outputs per step, the second one counting ([`kernel_seed`]).
//! - `torch.ops._C.fused_gumbel_argmax` (vLLM's CPU sampler kernel, compiled
//!   into the wheel's `_C.abi3.so`) takes `argmax_i(logit_i + g_i)` with
//!   `g_i = -log(-log(u_i))`, `u_i` from 53 bits of `SplitMix64(key + (i+1)·γ)`
//!   and `key = SplitMix64(seed)`, comparing in `(logit - best) + g > best_g`
//!   form with an exact pruning bound ([`gumbel_argmax`]).

const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;
/// `-log(-log(u)) < 37.5` for every 53-bit `u` in (0, 1).
const GUMBEL_MAX: f64 = 37.5;

fn splitmix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn noise_bits(key: u64, i: usize) -> u64 {
    splitmix64(key.wrapping_add((i as u64 + 1).wrapping_mul(GAMMA))) >> 11
}

fn gumbel_from_bits(bits: u64) -> f64 {
    let u = (bits as f64 + 0.5) * f64::powi(2.0, -53);
    -(-u.ln()).ln()
}

/// The token `fused_gumbel_argmax` picks from `row` with kernel seed `seed`.
pub fn gumbel_argmax(row: &[f32], seed: u64) -> usize {
    let key = splitmix64(seed);
    let Some(first) = row.iter().position(|&v| v != f32::NEG_INFINITY) else {
        return 0;
    };
    let mut best_logit = f64::from(row[first]);
    let mut best_g = gumbel_from_bits(noise_bits(key, first));
    let mut best = first;
    for (i, &v) in row.iter().enumerate().skip(first + 1) {
        let dx = f64::from(v) - best_logit;
        if dx + GUMBEL_MAX <= best_g {
            continue;
        }
        let bits = noise_bits(key, i);
        let one_minus_u = (((1u64 << 53) - 1 - bits) as f64 + 0.5) * f64::powi(2.0, -53);
        if one_minus_u >= (dx - best_g).exp() {
            continue;
        }
        let g = gumbel_from_bits(bits);
        if dx + g > best_g {
            best_logit = f64::from(v);
            best_g = g;
            best = i;
        }
    }
    best
}

/// The kernel seed of the step after `steps_before` sampled steps of a
/// request seeded with `seed`: the `(steps_before + 1)`-th
/// `torch.randint(0, 2**31, (1,), generator=gen)`. torch draws it as
/// `random64() % 2^31`, where `random64` joins two 32-bit outputs (high,
/// then low), so each step consumes two outputs and only the low one counts
/// (checked against torch 2.13 and every recorded draw).
pub fn kernel_seed(seed: u64, steps_before: usize) -> u64 {
    // torch seeds `at::mt19937` with the low 32 bits of the seed.
    let mut mt = replicas::mt19937::Mt19937::new(seed as u32);
    for _ in 0..2 * steps_before + 1 {
        mt.next_u32();
    }
    u64::from(mt.next_u32() % (1u32 << 31))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masked_tokens_are_never_picked() {
        let row = [f32::NEG_INFINITY, 0.0, f32::NEG_INFINITY, 0.0];
        for seed in 0..200 {
            let t = gumbel_argmax(&row, seed);
            assert!(t == 1 || t == 3, "seed {seed} picked {t}");
        }
        assert_eq!(gumbel_argmax(&[f32::NEG_INFINITY; 3], 7), 0);
    }
}
