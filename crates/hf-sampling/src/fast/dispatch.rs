//! Runtime-dispatched SIMD for the fast path's passes over all V scores.
//!
//! The workspace builds for baseline x86-64 (SSE2, no FMA) so that one binary
//! runs everywhere, and it forbids `unsafe`. pulp's `V3` (x86-64-v3: AVX2,
//! FMA, BMI1/2) detects the CPU once and runs a closure inside a
//! `#[target_feature]` function; pulp holds the `unsafe`, so this crate keeps
//! `unsafe_code = "forbid"`. The kernels in `scan` and `fast` are plain loops
//! marked `#[inline(always)]`: LLVM compiles one copy per level and vectorises
//! the v3 copy eight lanes wide. Where its vectorisation falls short (the
//! max/min scan, the candidate push, the dense lane sums: it shuffled or
//! spilled the lane arrays), [`Level`] gives v3 its own version written with
//! AVX intrinsics through pulp's safe wrappers, tested equal to the
//! baseline's. pulp is the crate gemm (under candle-core) already uses, with
//! the same features, so it adds no build.
//!
//! Results do not depend on the level except in one deliberate place. Rust
//! never contracts `a * b + c` into an FMA, so every scan, division and sum
//! performs the same f32 operations at either level. The exception is the
//! dense exp (temperature or penalty only, and the top-p certificate's
//! bounds): on v3 it uses FMAs and a degree-5 polynomial by Estrin's scheme
//! (`torch::fast_exp_fma`), whose shorter dependency chain is what bounds a
//! vectorised exp pass; at the baseline an FMA is a libm call, so it is the
//! FMA-free fast exp (`torch::fast_exp`). Both are within
//! `torch::FAST_EXP_REL` of SLEEF's (the exp the reference takes), so dense
//! probabilities differ between levels by a few ulps, within the same bound;
//! kept sets and truncated steps never depend on the level.

/// Which instructions [`crate::HfSampler`]'s passes over the vocabulary use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Dispatch {
    /// The best level this CPU has, detected at run time: x86-64-v3 (AVX2 +
    /// FMA) when present, otherwise the baseline. Two to five times as fast
    /// (docs/performance.md).
    #[default]
    Native,
    /// The build's baseline (SSE2 on x86-64) whatever the CPU has: the same
    /// results on every x86-64 CPU, bit for bit.
    Baseline,
}

impl Dispatch {
    /// The level this choice runs at on this CPU: `"x86-64-v3"` or
    /// `"baseline"`.
    pub fn level(self) -> &'static str {
        match Isa::new(self) {
            Isa::Baseline => "baseline",
            #[cfg(target_arch = "x86_64")]
            Isa::V3(_) => "x86-64-v3",
        }
    }
}

/// A resolved [`Dispatch`]: the level the kernels run at.
#[derive(Debug, Clone, Copy)]
pub(super) enum Isa {
    Baseline,
    #[cfg(target_arch = "x86_64")]
    V3(pulp::x86::V3),
}

impl Isa {
    /// Resolve `d` on this CPU (pulp caches the detection).
    pub(super) fn new(d: Dispatch) -> Self {
        match d {
            Dispatch::Baseline => Isa::Baseline,
            #[cfg(target_arch = "x86_64")]
            Dispatch::Native => pulp::x86::V3::try_new().map_or(Isa::Baseline, Isa::V3),
            #[cfg(not(target_arch = "x86_64"))]
            Dispatch::Native => Isa::Baseline,
        }
    }
}

/// `dispatch!(isa, |lv| body)`: run `body` with `lv` bound to the resolved
/// level (a [`Level`]), inside pulp's `#[target_feature]` function on v3.
/// Only code inlined there is compiled for the level, so the closure is
/// `#[inline(always)]` (an ordinary closure is a function of its own,
/// compiled for the baseline and merely called) and so are the kernels.
macro_rules! dispatch {
    ($isa:expr, |$lv:ident| $body:expr) => {
        match $isa {
            $crate::fast::dispatch::Isa::Baseline => {
                let $lv = $crate::fast::dispatch::Plain;
                $body
            }
            #[cfg(target_arch = "x86_64")]
            $crate::fast::dispatch::Isa::V3(simd) => simd.vectorize(
                #[inline(always)]
                || {
                    let $lv = simd;
                    $body
                },
            ),
        }
    };
}
pub(super) use dispatch;

/// What differs between levels: the dense exp, and the three loops LLVM
/// vectorises badly on its own (it keeps lane arrays in memory or shuffles
/// them), which v3 has written with AVX intrinsics.
pub(super) trait Level: Copy {
    /// `exp(d)` for the dense pass: a fast exp within `FAST_EXP_REL` of
    /// SLEEF's (with FMAs where they are one instruction).
    fn exp(self, d: f32) -> f32;

    /// For every full 16-entry block of `inp`: `out = exp(f(s) - m)`, each
    /// added to `lanes[i % 16]` in position order (torch's lane sum).
    /// A partial last block is left to the caller.
    #[inline(always)]
    fn exps_by_lane(
        self,
        out: &mut [f32],
        inp: &[f32],
        f: impl Fn(f32) -> f32 + Copy,
        m: f32,
        lanes: &mut [f32; 16],
    ) {
        for (o, s) in out.chunks_exact_mut(16).zip(inp.chunks_exact(16)) {
            for l in 0..16 {
                let e = self.exp(f(s[l]) - m);
                o[l] = e;
                lanes[l] += e;
            }
        }
    }

    /// Max, min and "no NaN / +inf" of `f` over `xs`.
    fn scan(self, xs: &[f32], f: impl Fn(f32) -> f32 + Copy) -> (f32, f32, bool);

    /// Append every `(f(x), base + j)` of a block of at most 64 scores with
    /// `f(x) >= thr`, in index order.
    #[inline(always)]
    fn push_ge(
        self,
        xs: &[f32],
        f: impl Fn(f32) -> f32 + Copy,
        thr: f32,
        base: usize,
        cand: &mut Vec<(f32, u32)>,
    ) {
        super::scan::push_ge(xs, f, thr, base, cand);
    }
}

/// The baseline: plain loops, vectorised by LLVM for the build's target.
#[derive(Debug, Clone, Copy)]
pub(super) struct Plain;

impl Level for Plain {
    #[inline(always)]
    fn exp(self, d: f32) -> f32 {
        crate::fast::exp::fast_exp(d)
    }

    #[inline(always)]
    fn scan(self, xs: &[f32], f: impl Fn(f32) -> f32 + Copy) -> (f32, f32, bool) {
        super::scan::scan_max(xs, f)
    }
}

#[cfg(target_arch = "x86_64")]
impl Level for pulp::x86::V3 {
    #[inline(always)]
    fn exp(self, d: f32) -> f32 {
        crate::fast::exp::fast_exp_fma(d)
    }

    /// The same sums with the two 8-lane halves in registers (the default
    /// method's lane array round-trips through memory every block).
    #[inline(always)]
    fn exps_by_lane(
        self,
        out: &mut [f32],
        inp: &[f32],
        f: impl Fn(f32) -> f32 + Copy,
        m: f32,
        lanes: &mut [f32; 16],
    ) {
        use core::arch::x86_64::__m256;
        let avx = self.avx;
        let halves: [[f32; 8]; 2] = pulp::cast(*lanes);
        let mut acc: [__m256; 2] = [pulp::cast(halves[0]), pulp::cast(halves[1])];
        let full = inp.len() - inp.len() % 16;
        // Two plain loops: the exps (LLVM vectorises a flat loop well, and
        // a closure or an unrolled block would be compiled apart or
        // shuffled), then the lane sums from L1 with accumulators that stay
        // in registers.
        for (o, &s) in out[..full].iter_mut().zip(&inp[..full]) {
            *o = self.exp(f(s) - m);
        }
        let (es, _) = out[..full].as_chunks::<8>();
        for (j, e) in es.iter().enumerate() {
            acc[j % 2] = avx._mm256_add_ps(acc[j % 2], pulp::cast(*e));
        }
        let halves: [[f32; 8]; 2] = [pulp::cast(acc[0]), pulp::cast(acc[1])];
        *lanes = pulp::cast(halves);
    }

    /// Eight scores per compare; only the set bits of the mask are pushed
    /// (a block above the threshold usually holds one or two such scores).
    #[inline(always)]
    fn push_ge(
        self,
        xs: &[f32],
        f: impl Fn(f32) -> f32 + Copy,
        thr: f32,
        base: usize,
        cand: &mut Vec<(f32, u32)>,
    ) {
        use core::arch::x86_64::{__m256, _CMP_GE_OQ};
        let avx = self.avx;
        let t = avx._mm256_set1_ps(thr);
        let (chunks, rest) = xs.as_chunks::<8>();
        for (c, x) in chunks.iter().enumerate() {
            let y = x.map(f);
            let v: __m256 = pulp::cast(y);
            let mut mask = avx._mm256_movemask_ps(avx._mm256_cmp_ps::<_CMP_GE_OQ>(v, t)) as u32;
            while mask != 0 {
                let l = mask.trailing_zeros() as usize;
                cand.push((y[l], (base + 8 * c + l) as u32));
                mask &= mask - 1;
            }
        }
        let done = xs.len() - rest.len();
        for (j, &x) in rest.iter().enumerate() {
            let y = f(x);
            if y >= thr {
                cand.push((y, (base + done + j) as u32));
            }
        }
    }

    /// [`super::scan::scan_max`] eight lanes at a time: lane `l` sees the
    /// same elements in the same order and makes the same comparisons
    /// (`maxps(y, m)` is `if y > m { y } else { m }`), so the result is
    /// the baseline's bit for bit.
    #[inline(always)]
    fn scan(self, xs: &[f32], f: impl Fn(f32) -> f32 + Copy) -> (f32, f32, bool) {
        use core::arch::x86_64::{__m256, _CMP_NLT_UQ};
        let avx = self.avx;
        let (chunks, rest) = xs.as_chunks::<8>();
        let inf = avx._mm256_set1_ps(f32::INFINITY);
        let mut mx = avx._mm256_set1_ps(f32::NEG_INFINITY);
        let mut mn = inf;
        let mut bad = avx._mm256_setzero_ps();
        for c in chunks {
            let y: __m256 = pulp::cast(c.map(f));
            bad = avx._mm256_or_ps(bad, avx._mm256_cmp_ps::<_CMP_NLT_UQ>(y, inf));
            mx = avx._mm256_max_ps(y, mx);
            mn = avx._mm256_min_ps(y, mn);
        }
        let ok = avx._mm256_movemask_ps(bad) == 0;
        super::scan::finish_scan(pulp::cast(mx), pulp::cast(mn), ok, rest, f)
    }
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// Random scores with the special values the scan must see through.
    fn scores(rng: &mut impl Rng, n: usize) -> Vec<f32> {
        (0..n)
            .map(|_| match rng.random_range(0..40) {
                0 => f32::NAN,
                1 => f32::INFINITY,
                2 => f32::NEG_INFINITY,
                3 => -0.0,
                4 => 0.0,
                _ => rng.random_range(-30.0..30.0),
            })
            .collect()
    }

    fn v3() -> Option<pulp::x86::V3> {
        let v3 = pulp::x86::V3::try_new();
        if v3.is_none() {
            eprintln!("no AVX2/FMA on this CPU: only the baseline is tested");
        }
        v3
    }

    /// The v3 scan is the baseline's bit for bit: max, min (signed zeros
    /// included) and validity, with and without a temperature map.
    #[test]
    fn v3_scan_is_the_baseline_scan() {
        let Some(simd) = v3() else { return };
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        for n in (0..70).chain([1000, 4099]) {
            for _ in 0..20 {
                let mut x = scores(&mut rng, n);
                if rng.random_range(0..2) == 0 {
                    x.retain(|v| v.is_finite());
                }
                let bits = |(a, b, ok): (f32, f32, bool)| (a.to_bits(), b.to_bits(), ok);
                let id = |s: f32| s;
                let div = |s: f32| s / 0.7;
                let want = bits(Plain.scan(&x, id));
                let got = bits(simd.vectorize(
                    #[inline(always)]
                    || simd.scan(&x, id),
                ));
                assert_eq!(got, want, "n {n}: {x:?}");
                let want = bits(Plain.scan(&x, div));
                let got = bits(simd.vectorize(
                    #[inline(always)]
                    || simd.scan(&x, div),
                ));
                assert_eq!(got, want, "n {n} / 0.7: {x:?}");
            }
        }
    }

    /// The v3 dense exps are the FMA fast exp's, summed into the 16 lanes in
    /// position order exactly as a plain loop does.
    #[test]
    fn v3_exps_by_lane_sums_in_torch_lane_order() {
        let Some(simd) = v3() else { return };
        let mut rng = rand::rngs::StdRng::seed_from_u64(4);
        for n in [16, 17, 1024, 1000] {
            let x: Vec<f32> = (0..n).map(|_| rng.random_range(-90.0..0.0)).collect();
            let mut want_lanes = [0.25f32; 16];
            let full = n - n % 16;
            let want: Vec<f32> = x[..full]
                .iter()
                .map(|&s| crate::fast::exp::fast_exp_fma(s / 0.9 - 0.5))
                .collect();
            for (i, &e) in want.iter().enumerate() {
                want_lanes[i % 16] += e;
            }
            let mut got = vec![0.0; n];
            let mut lanes = [0.25f32; 16];
            simd.vectorize(
                #[inline(always)]
                || simd.exps_by_lane(&mut got, &x, |s| s / 0.9, 0.5, &mut lanes),
            );
            assert_eq!(got[..full], want[..], "n {n}");
            assert_eq!(
                lanes.map(f32::to_bits),
                want_lanes.map(f32::to_bits),
                "n {n}"
            );
        }
    }

    /// The v3 push collects exactly the baseline's candidates, in order.
    #[test]
    fn v3_push_ge_is_the_baseline_push() {
        let Some(simd) = v3() else { return };
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        for n in (0..=64).chain([64; 30]) {
            let x = scores(&mut rng, n);
            for thr in [
                f32::NEG_INFINITY,
                0.0,
                -0.0,
                rng.random_range(-30.0..30.0),
                30.0,
            ] {
                let f = |s: f32| s / 0.8;
                let (mut want, mut got) = (vec![(1.0, 7)], vec![(1.0, 7)]);
                Plain.push_ge(&x, f, thr, 128, &mut want);
                simd.vectorize(
                    #[inline(always)]
                    || simd.push_ge(&x, f, thr, 128, &mut got),
                );
                let bits =
                    |v: &[(f32, u32)]| v.iter().map(|c| (c.0.to_bits(), c.1)).collect::<Vec<_>>();
                assert_eq!(bits(&got), bits(&want), "n {n} thr {thr}: {x:?}");
            }
        }
    }

    #[test]
    fn levels_are_named() {
        assert_eq!(Dispatch::Baseline.level(), "baseline");
        let native = Dispatch::Native.level();
        let expect = if pulp::x86::V3::try_new().is_some() {
            "x86-64-v3"
        } else {
            "baseline"
        };
        assert_eq!(native, expect);
    }
}
