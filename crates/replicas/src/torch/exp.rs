//! `exp` in f32: SLEEF's `expf_u10` replayed exactly (torch's softmax
//! kernel). hf-sampling's fast path bounds its own fast exp against it.

/// `exp` of an f32, correctly rounded in practice (computed in f64). Used
/// where torch calls its elementwise `exp` (whose kernel depends on the build).
#[inline]
pub fn exp_f32(x: f32) -> f32 {
    (x as f64).exp() as f32
}

/// SLEEF's `xexpf` (`Sleef_expf16_u10`, 1.0-ulp), the `Vectorized<float>::exp`
/// that torch's CPU softmax kernel calls on AVX512/AVX2 builds. Replayed
/// operation by operation (FMA where SLEEF's `vmla` is an FMA) so softmax
/// probabilities are bit-identical to torch's.
#[inline(always)]
pub fn sleef_expf(d: f32) -> f32 {
    // SLEEF's constants, as the f32 bit patterns its C literals round to.
    const R_LN2F: f32 = std::f32::consts::LOG2_E; // 0x3fb8aa3b
    let l2uf = f32::from_bits(0x3f31_7200); // 0.693145751953125
    let l2lf = f32::from_bits(0x35bf_be8e); // 1.428606765330187045e-06
    const MAGIC: f32 = 12_582_912.0; // 1.5 * 2^23
    // vrint_vi2_vf. Outside [-256, 256] the result is masked below, so the
    // clamp changes no result; it lets the integer be read off the bits of
    // `q + 1.5 * 2^23` (exact for |q| < 2^22), which vectorises where Rust's
    // saturating `as i32` does not. Checked on all 2^32 inputs against
    // `q as i32`: bit-identical results (NaN stays NaN).
    let q = (d * R_LN2F).round_ties_even().clamp(-256.0, 256.0);
    let qi = (q + MAGIC).to_bits() as i32 - MAGIC.to_bits() as i32;
    let qf = qi as f32;
    let mut s = qf.mul_add(-l2uf, d);
    s = qf.mul_add(-l2lf, s);
    let mut u = f32::from_bits(0x3950_2bda); // 0.000198527617612853646278381
    u = u.mul_add(s, f32::from_bits(0x3ab6_96c9)); // 0.00139304355252534151077271
    u = u.mul_add(s, f32::from_bits(0x3c08_88a6)); // 0.00833336077630519866943359
    u = u.mul_add(s, f32::from_bits(0x3d2a_aa7a)); // 0.0416664853692054748535156
    u = u.mul_add(s, f32::from_bits(0x3e2a_aaab)); // 0.166666671633720397949219
    u = u.mul_add(s, 0.5);
    u = 1.0 + (s * s).mul_add(u, s);
    // vldexp2: u * 2^(q >> 1) * 2^(q - (q >> 1))
    let pow2i = |e: i32| f32::from_bits((e.wrapping_add(127) as u32).wrapping_shl(23));
    let h = qi >> 1;
    u = u * pow2i(h) * pow2i(qi.wrapping_sub(h));
    if d < -104.0 {
        0.0
    } else if 100.0 < d {
        f32::INFINITY
    } else {
        u
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sleef_exp_of_zero_is_one_and_flushes_below_minus_104() {
        assert_eq!(sleef_expf(0.0), 1.0);
        assert_eq!(sleef_expf(-104.5), 0.0);
        assert_eq!(sleef_expf(101.0), f32::INFINITY);
    }
}
