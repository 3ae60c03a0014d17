//! The fast exp the sampler's fast path uses: SLEEF's `expf_u10` algorithm
//! (torch's softmax kernel, replayed exactly in [`replicas::torch::sleef_expf`])
//! reshaped to vectorise, with an error bound against it that the tests check.

/// Relative error bound of the fast exp against the reference's SLEEF exp,
/// with an absolute slack of [`FAST_EXP_ABS`] (checked on every f32 in
/// `[-104, 0]` by the ignored test `fast_exp_bound_exhaustive`).
pub(crate) const FAST_EXP_REL: f64 = 1.0 / (1u64 << 20) as f64;
/// Absolute slack of the fast exp bound (covers subnormal results).
pub(crate) const FAST_EXP_ABS: f64 = 1.0e-38;

/// SLEEF's `expf_u10` algorithm without fused multiply-adds and with a
/// branch-free rounding, so it vectorises on baseline x86-64. Within
/// [`FAST_EXP_REL`] relative (plus [`FAST_EXP_ABS`]) of [`replicas::torch::sleef_expf`] for
/// every `d <= 0`; 0 below -104.
#[inline(always)]
pub(crate) fn fast_exp(d: f32) -> f32 {
    const R_LN2F: f32 = std::f32::consts::LOG2_E;
    const MAGIC: f32 = 12_582_912.0; // 1.5 * 2^23: adding it rounds to an integer
    let l2uf = f32::from_bits(0x3f31_7200);
    let l2lf = f32::from_bits(0x35bf_be8e);
    let dc = d.max(-104.0);
    let tq = dc * R_LN2F + MAGIC;
    // tq = 1.5 * 2^23 + q with |q| <= 150: its low mantissa bits hold q.
    let qi = tq.to_bits() as i32 - MAGIC.to_bits() as i32;
    let q = tq - MAGIC;
    let s = dc - q * l2uf - q * l2lf;
    let mut u = f32::from_bits(0x3950_2bda);
    u = u * s + f32::from_bits(0x3ab6_96c9);
    u = u * s + f32::from_bits(0x3c08_88a6);
    u = u * s + f32::from_bits(0x3d2a_aa7a);
    u = u * s + f32::from_bits(0x3e2a_aaab);
    u = u * s + 0.5;
    u = 1.0 + (s * s * u + s);
    let h = qi >> 1;
    let p1 = f32::from_bits(((h + 127) as u32) << 23);
    let p2 = f32::from_bits(((qi - h + 127) as u32) << 23);
    let r = u * p1 * p2;
    if d < -104.0 { 0.0 } else { r }
}

/// The fast exp where an FMA is one instruction (x86-64-v3): SLEEF's range
/// reduction, then `1 + s + s^2 * u(s)` with `u` of degree 3 (SLEEF's has
/// degree 5) evaluated by Estrin's scheme. The vectorised exp pass is
/// bound by this dependency chain, about half SLEEF's Horner chain. The
/// coefficients minimise the relative error of `exp(s)` on `|s| <= ln 2 / 2`
/// (weighted least squares iterated towards the max norm, in f64, then
/// rounded to f32): 1.2e-7 before rounding. Within [`FAST_EXP_REL`]
/// relative (plus [`FAST_EXP_ABS`]) of [`replicas::torch::sleef_expf`] for every `d <= 0`
/// (checked as the fast exp is); 0 below -104. `mul_add` is fused
/// everywhere (a libm call without FMA hardware), so the results do not
/// depend on the CPU.
#[inline(always)]
pub(crate) fn fast_exp_fma(d: f32) -> f32 {
    const R_LN2F: f32 = std::f32::consts::LOG2_E;
    const MAGIC: f32 = 12_582_912.0; // 1.5 * 2^23
    let l2uf = f32::from_bits(0x3f31_7200);
    let l2lf = f32::from_bits(0x35bf_be8e);
    let dc = d.max(-104.0);
    let tq = dc.mul_add(R_LN2F, MAGIC);
    let qi = tq.to_bits() as i32 - MAGIC.to_bits() as i32;
    let q = tq - MAGIC;
    let s = q.mul_add(-l2uf, dc);
    let s = q.mul_add(-l2lf, s);
    let s2 = s * s;
    let p01 = f32::from_bits(0x3e2a_ab40).mul_add(s, f32::from_bits(0x3eff_fee2)); // 0.16666889, 0.49999148
    let p23 = f32::from_bits(0x3c08_8993).mul_add(s, f32::from_bits(0x3d2b_9d61)); // 0.0083335813, 0.041898135
    let u = p23.mul_add(s2, p01);
    let u = 1.0 + s2.mul_add(u, s);
    let h = qi >> 1;
    let p1 = f32::from_bits(((h + 127) as u32) << 23);
    let p2 = f32::from_bits(((qi - h + 127) as u32) << 23);
    let r = u * p1 * p2;
    if d < -104.0 { 0.0 } else { r }
}

#[cfg(test)]
mod tests {
    use super::*;
    use replicas::torch::sleef_expf;

    /// Checks both fast exps' bound on every f32 bit pattern in `bits`;
    /// returns how many and the worst relative error where the exact exp
    /// exceeds 1e-30.
    fn check_fast_exp(bits: impl Iterator<Item = u32>) -> (u64, f64) {
        let mut worst = 0.0f64;
        let mut n = 0;
        for b in bits {
            let d = f32::from_bits(b);
            let exact = sleef_expf(d);
            worst = worst.max(check_one(d, fast_exp(d), exact));
            worst = worst.max(check_one(d, fast_exp_fma(d), exact));
            n += 1;
        }
        (n, worst)
    }

    /// The relative error of `fast` (when `exact` > 1e-30), after asserting
    /// the bound.
    fn check_one(d: f32, fast: f32, exact: f32) -> f64 {
        let err = (fast as f64 - exact as f64).abs();
        let bound = FAST_EXP_REL * exact as f64 + FAST_EXP_ABS;
        assert!(err <= bound, "d = {d:e}: fast {fast:e}, sleef {exact:e}");
        if exact > 1e-30 {
            err / exact as f64
        } else {
            0.0
        }
    }

    /// Every 257th f32 in [-104, 0] (about 4.4 million values).
    #[test]
    fn fast_exp_bound_sampled() {
        let (n, worst) = check_fast_exp((0x8000_0000u32..=0xc2d0_0000).step_by(257));
        eprintln!("fast exp: {n} values, worst relative error {worst:e}");
        assert!(n > 4_000_000, "{n}");
    }

    /// Every f32 in [-104, 0] (1.1e9 values, both fast exps; about two minutes):
    /// `cargo test -p hf-sampling --release fast_exp_bound_exhaustive -- --ignored`.
    #[test]
    #[ignore]
    fn fast_exp_bound_exhaustive() {
        let (n, worst) = check_fast_exp(0x8000_0000u32..=0xc2d0_0000);
        eprintln!("fast exp: {n} values, worst relative error {worst:e}");
    }

    #[test]
    fn fast_exps_of_zero_are_one_and_flush_below_minus_104() {
        assert_eq!(fast_exp(-104.5), 0.0);
        assert_eq!(fast_exp_fma(-104.5), 0.0);
        assert_eq!(fast_exp_fma(0.0), 1.0);
    }
}
