//! The scan kernels: one pass over the V scores (through an optional
//! temperature map) that finds the maximum, checks validity and collects the
//! candidates a truncation can keep, skipping 64-entry blocks whose
//! vectorised maximum is below the running threshold.

/// Run `$body` with `$f` bound to the score map: identity, or `x / t`.
macro_rules! with_map {
    ($t:expr, |$f:ident| $body:expr) => {
        match $t {
            None => {
                let $f = |s: f32| s;
                $body
            }
            Some(t) => {
                let $f = move |s: f32| s / t;
                $body
            }
        }
    };
}
pub(super) use with_map;

use super::dispatch::Level;

const BLOCK: usize = 64;

/// Max, min and "no NaN / +inf" of `f` over `xs`, in 8 independent lanes
/// (so it vectorises; the flags are `u32` lanes, as wide as the floats);
/// the remainder goes to lane 0.
#[inline(always)]
#[allow(clippy::neg_cmp_op_on_partial_ord)] // `!(y < inf)` holds for NaN too
pub(super) fn scan_max(xs: &[f32], f: impl Fn(f32) -> f32) -> (f32, f32, bool) {
    let mut mx = [f32::NEG_INFINITY; 8];
    let mut mn = [f32::INFINITY; 8];
    let mut bad = [0u32; 8];
    let chunks = xs.chunks_exact(8);
    let rest = chunks.remainder();
    for c in chunks {
        for l in 0..8 {
            let y = f(c[l]);
            bad[l] |= u32::from(!(y < f32::INFINITY));
            mx[l] = if y > mx[l] { y } else { mx[l] };
            mn[l] = if y < mn[l] { y } else { mn[l] };
        }
    }
    finish_scan(mx, mn, bad.iter().all(|&b| b == 0), rest, f)
}

/// The end of a scan, shared by both levels so they agree bit for bit: the
/// remainder goes to lane 0, then the lanes are folded in order.
#[inline(always)]
pub(super) fn finish_scan(
    mut mx: [f32; 8],
    mut mn: [f32; 8],
    mut ok: bool,
    rest: &[f32],
    f: impl Fn(f32) -> f32,
) -> (f32, f32, bool) {
    for &x in rest {
        let y = f(x);
        ok &= y < f32::INFINITY;
        mx[0] = if y > mx[0] { y } else { mx[0] };
        mn[0] = if y < mn[0] { y } else { mn[0] };
    }
    let (mut best, mut least) = (mx[0], mn[0]);
    for l in 1..8 {
        best = if mx[l] > best { mx[l] } else { best };
        least = if mn[l] < least { mn[l] } else { least };
    }
    (best, least, ok)
}

/// Max and "all < +inf" of `f` over one block (the min, unused, is
/// optimised away).
#[inline(always)]
fn block_max(lv: impl Level, xs: &[f32], f: impl Fn(f32) -> f32 + Copy) -> (f32, bool) {
    let (m, _, ok) = lv.scan(xs, f);
    (m, ok)
}

/// One pass: max and validity of `f(x)`, and every `(f(x), i)` `>=` the k-th
/// largest (ties included), by a threshold filter whose threshold is the
/// running k-th value of the buffer. Blocks whose max is below the threshold
/// are skipped after a vectorised max.
#[inline(always)]
pub(super) fn scan_top_k(
    lv: impl Level,
    x: &[f32],
    f: impl Fn(f32) -> f32 + Copy,
    k: usize,
    cand: &mut Vec<(f32, u32)>,
) -> (f32, bool) {
    let k = k.min(x.len());
    cand.clear();
    let mut cap = (3 * k).max(128);
    let mut thr = f32::NEG_INFINITY;
    let (mut m, mut ok) = (f32::NEG_INFINITY, true);
    for (c, xs) in x.chunks(BLOCK).enumerate() {
        let (bm, bok) = block_max(lv, xs, f);
        ok &= bok;
        m = if bm > m { bm } else { m };
        if bm < thr {
            continue;
        }
        lv.push_ge(xs, f, thr, c * BLOCK, cand);
        if cand.len() >= cap {
            thr = kth_largest(cand, k);
            cand.retain(|c| c.0 >= thr);
            if cand.len() * 2 > cap {
                cap *= 2;
            }
        }
    }
    if ok && !cand.is_empty() {
        let kth = kth_largest(cand, k);
        cand.retain(|c| c.0 >= kth);
    }
    (m, ok)
}

/// One pass: max and validity of `f(x)`, and every `(f(x), i)` with
/// `f(x) >= max + off` (`off <= 0`), filtered with the final max.
#[inline(always)]
pub(super) fn scan_min_p(
    lv: impl Level,
    x: &[f32],
    f: impl Fn(f32) -> f32 + Copy,
    off: f32,
    cand: &mut Vec<(f32, u32)>,
) -> (f32, bool) {
    cand.clear();
    let (mut m, mut ok) = (f32::NEG_INFINITY, true);
    let mut thr = f32::NEG_INFINITY;
    for (c, xs) in x.chunks(BLOCK).enumerate() {
        let (bm, bok) = block_max(lv, xs, f);
        ok &= bok;
        if bm > m {
            m = bm;
            thr = m + off;
        }
        if bm < thr {
            continue;
        }
        lv.push_ge(xs, f, thr, c * BLOCK, cand);
    }
    cand.retain(|c| c.0 >= thr);
    (m, ok)
}

/// Append every `(f(x), base + j)` with `f(x) >= thr` (a block of at most
/// [`BLOCK`] scores), branch-free.
#[inline(always)]
pub(super) fn push_ge(
    xs: &[f32],
    f: impl Fn(f32) -> f32,
    thr: f32,
    base: usize,
    cand: &mut Vec<(f32, u32)>,
) {
    let mut buf = [(0.0f32, 0u32); BLOCK];
    let xs = &xs[..xs.len().min(BLOCK)];
    let mut n = 0;
    for (j, &x) in xs.iter().enumerate() {
        let y = f(x);
        buf[n] = (y, (base + j) as u32);
        n += usize::from(y >= thr);
    }
    cand.extend_from_slice(&buf[..n]);
}

/// Every `(f(x), i)` with `f(x) >= thr`.
#[inline(always)]
pub(super) fn collect_ge(
    lv: impl Level,
    x: &[f32],
    f: impl Fn(f32) -> f32 + Copy,
    thr: f32,
    cand: &mut Vec<(f32, u32)>,
) {
    cand.clear();
    for (c, xs) in x.chunks(BLOCK).enumerate() {
        let (bm, _) = block_max(lv, xs, f);
        if bm < thr {
            continue;
        }
        lv.push_ge(xs, f, thr, c * BLOCK, cand);
    }
}

fn kth_largest(cand: &mut [(f32, u32)], k: usize) -> f32 {
    if cand.len() <= k {
        return cand
            .iter()
            .fold(f32::INFINITY, |a, c| if c.0 < a { c.0 } else { a });
    }
    cand.select_nth_unstable_by(k - 1, |a, b| b.0.total_cmp(&a.0));
    cand[k - 1].0
}
