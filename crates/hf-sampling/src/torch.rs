//! The few torch CPU operations the processors need, reproduced in f32.
//!
//! Facts checked against torch 2.15.0 on CPU (see `docs/hf-sampling-notes.md`):
//! - `torch.sort(x)` (not stable) on CPU is libstdc++ `std::sort` run on
//!   (value, index) pairs with index = 0..n and comparator `a.value < b.value`
//!   (NaN last). [`argsort_ascending`] replays that algorithm step by step, so
//!   tied values come out in exactly torch's order, which is neither index
//!   order nor any stable order once n > 16.
//! - `cumsum` of an f32 tensor accumulates in f64 and rounds each prefix to f32.
//! - `softmax` subtracts the maximum, takes SLEEF's `expf_u10`, sums in f32
//!   over 16 SIMD lanes (AVX512) and multiplies by the reciprocal of the sum.
//!   [`softmax`] replays exactly that and matched torch bit for bit on 5 million
//!   entries (V from 4 to 49,152). On an AVX2-only CPU torch sums over 8 lanes,
//!   so its probabilities can differ from these by an ulp.
//! - Other reductions (`sum`, `logsumexp`) and elementwise `exp`/`log` are
//!   computed in f64 and rounded: within an ulp or two of torch.
//! - Comparing an f32 tensor with a Python float casts the float to f32 first.

/// Index order of `torch.sort(values, descending=False)` on CPU.
///
/// A line-by-line port of libstdc++'s `std::__sort` (introsort with
/// median-of-three pivot, heap-sort fallback at depth 2·⌊log₂ n⌋, final
/// insertion sort with threshold 16). The input must not contain NaN.
pub(crate) fn argsort_ascending(values: &[f32]) -> Vec<usize> {
    let mut a: Vec<(f32, usize)> = values.iter().copied().zip(0..).collect();
    let n = a.len();
    if n > 1 {
        let depth = 2 * (usize::BITS - 1 - n.leading_zeros()) as usize;
        introsort_loop(&mut a, 0, n, depth);
        final_insertion_sort(&mut a, 0, n);
    }
    a.into_iter().map(|(_, i)| i).collect()
}

type Pair = (f32, usize);
const THRESHOLD: usize = 16;

#[inline]
fn lt(x: &Pair, y: &Pair) -> bool {
    x.0 < y.0
}

fn introsort_loop(a: &mut [Pair], first: usize, mut last: usize, mut depth: usize) {
    while last - first > THRESHOLD {
        if depth == 0 {
            heap_sort(a, first, last);
            return;
        }
        depth -= 1;
        let mid = first + (last - first) / 2;
        move_median_to_first(a, first, first + 1, mid, last - 1);
        let cut = unguarded_partition(a, first + 1, last, first);
        introsort_loop(a, cut, last, depth);
        last = cut;
    }
}

fn move_median_to_first(a: &mut [Pair], result: usize, x: usize, y: usize, z: usize) {
    if lt(&a[x], &a[y]) {
        if lt(&a[y], &a[z]) {
            a.swap(result, y);
        } else if lt(&a[x], &a[z]) {
            a.swap(result, z);
        } else {
            a.swap(result, x);
        }
    } else if lt(&a[x], &a[z]) {
        a.swap(result, x);
    } else if lt(&a[y], &a[z]) {
        a.swap(result, z);
    } else {
        a.swap(result, y);
    }
}

fn unguarded_partition(a: &mut [Pair], mut first: usize, mut last: usize, pivot: usize) -> usize {
    loop {
        while lt(&a[first], &a[pivot]) {
            first += 1;
        }
        last -= 1;
        while lt(&a[pivot], &a[last]) {
            last -= 1;
        }
        if first >= last {
            return first;
        }
        a.swap(first, last);
        first += 1;
    }
}

fn adjust_heap(a: &mut [Pair], first: usize, mut hole: usize, len: usize, value: Pair) {
    let top = hole;
    let mut second = hole;
    while second < (len - 1) / 2 {
        second = 2 * (second + 1);
        if lt(&a[first + second], &a[first + second - 1]) {
            second -= 1;
        }
        a[first + hole] = a[first + second];
        hole = second;
    }
    if len.is_multiple_of(2) && second == (len - 2) / 2 {
        second = 2 * (second + 1);
        a[first + hole] = a[first + second - 1];
        hole = second - 1;
    }
    // __push_heap
    while hole > top {
        let parent = (hole - 1) / 2;
        if !lt(&a[first + parent], &value) {
            break;
        }
        a[first + hole] = a[first + parent];
        hole = parent;
    }
    a[first + hole] = value;
}

fn heap_sort(a: &mut [Pair], first: usize, mut last: usize) {
    let len = last - first;
    if len >= 2 {
        let mut parent = (len - 2) / 2;
        loop {
            let v = a[first + parent];
            adjust_heap(a, first, parent, len, v);
            if parent == 0 {
                break;
            }
            parent -= 1;
        }
    }
    while last - first > 1 {
        last -= 1;
        let v = a[last];
        a[last] = a[first];
        adjust_heap(a, first, 0, last - first, v);
    }
}

fn unguarded_linear_insert(a: &mut [Pair], mut last: usize) {
    let val = a[last];
    let mut next = last - 1;
    while lt(&val, &a[next]) {
        a[last] = a[next];
        last = next;
        next -= 1;
    }
    a[last] = val;
}

fn insertion_sort(a: &mut [Pair], first: usize, last: usize) {
    if first == last {
        return;
    }
    for i in first + 1..last {
        if lt(&a[i], &a[first]) {
            let val = a[i];
            a.copy_within(first..i, first + 1);
            a[first] = val;
        } else {
            unguarded_linear_insert(a, i);
        }
    }
}

fn final_insertion_sort(a: &mut [Pair], first: usize, last: usize) {
    if last - first > THRESHOLD {
        insertion_sort(a, first, first + THRESHOLD);
        for i in first + THRESHOLD..last {
            unguarded_linear_insert(a, i);
        }
    } else {
        insertion_sort(a, first, last);
    }
}

/// `exp` of an f32, correctly rounded in practice (computed in f64). Used
/// where torch calls its elementwise `exp` (whose kernel depends on the build).
#[inline]
pub(crate) fn exp_f32(x: f32) -> f32 {
    (x as f64).exp() as f32
}

/// SLEEF's `xexpf` (`Sleef_expf16_u10`, 1.0-ulp), the `Vectorized<float>::exp`
/// that torch's CPU softmax kernel calls on AVX512/AVX2 builds. Replayed
/// operation by operation (FMA where SLEEF's `vmla` is an FMA) so softmax
/// probabilities are bit-identical to torch's.
#[inline]
pub(crate) fn sleef_expf(d: f32) -> f32 {
    // SLEEF's constants, as the f32 bit patterns its C literals round to.
    const R_LN2F: f32 = std::f32::consts::LOG2_E; // 0x3fb8aa3b
    let l2uf = f32::from_bits(0x3f31_7200); // 0.693145751953125
    let l2lf = f32::from_bits(0x35bf_be8e); // 1.428606765330187045e-06
    let q = (d * R_LN2F).round_ties_even();
    // vrint_vi2_vf: out-of-range values only occur where the result is masked below.
    let qi = q as i32;
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

/// Number of f32 lanes of torch's `Vectorized<float>` on the reference CPU
/// (AVX512; an AVX2 build uses 8 and rounds sums differently).
pub(crate) const LANES: usize = 16;

/// `vec::reduce_all(x + y)` over f32 with [`LANES`] lanes: lane-wise
/// accumulation of full vectors, the tail added into its lanes, then a
/// halving tree (lane i + lane i+8, +4, +2, +1). Below one vector, a plain
/// left-to-right sum.
pub(crate) fn lane_sum(values: &[f32]) -> f32 {
    let n = values.len();
    if n < LANES {
        let mut acc = 0.0f32;
        for (i, &v) in values.iter().enumerate() {
            acc = if i == 0 { v } else { acc + v };
        }
        return acc;
    }
    let mut acc = [0.0f32; LANES];
    acc.copy_from_slice(&values[..LANES]);
    let full = n - n % LANES;
    for chunk in values[LANES..full].chunks_exact(LANES) {
        for (a, &v) in acc.iter_mut().zip(chunk) {
            *a += v;
        }
    }
    for (a, &v) in acc.iter_mut().zip(&values[full..]) {
        *a += v;
    }
    fold_lanes(acc)
}

/// The end of torch's vectorised sum: the lanes added pairwise, halving the
/// width each time (16 → 8 → 4 → 2 → 1), in f32.
pub(crate) fn fold_lanes(mut acc: [f32; LANES]) -> f32 {
    let mut width = LANES / 2;
    while width >= 1 {
        for i in 0..width {
            acc[i] += acc[i + width];
        }
        width /= 2;
    }
    acc[0]
}

/// `torch.amax` over the vector (no NaN allowed).
pub(crate) fn max(values: &[f32]) -> f32 {
    values.iter().copied().fold(f32::NEG_INFINITY, f32::max)
}

/// `torch.argmax` on CPU for NaN-free input: the first index of the maximum
/// (0 when every entry is `-inf`).
pub(crate) fn argmax_first(values: &[f32]) -> usize {
    let mut best = 0;
    for (i, &s) in values.iter().enumerate() {
        if s > values[best] {
            best = i;
        }
    }
    best
}

/// `torch.softmax(x, dim=-1)` on CPU (`_vec_softmax_lastdim`):
/// `e = exp(x - max)` with SLEEF's exp, `sum = reduce_all(e)`, `e * (1 / sum)`.
/// Bit-identical to torch 2.15 on an AVX512 CPU.
///
/// With every entry -inf the result is NaN everywhere, as in torch.
pub(crate) fn softmax(values: &[f32]) -> Vec<f32> {
    let m = max(values);
    let e: Vec<f32> = values.iter().map(|&x| sleef_expf(x - m)).collect();
    let r = 1.0f32 / lane_sum(&e);
    e.into_iter().map(|v| v * r).collect()
}

/// `torch.log_softmax(x, dim=-1)` in f32: `x - max - log(sum(exp(x - max)))`,
/// in that order of operations (torch keeps it to avoid cancellation).
pub(crate) fn log_softmax(values: &[f32]) -> Vec<f32> {
    let m = max(values);
    let e: Vec<f32> = values.iter().map(|&x| sleef_expf(x - m)).collect();
    let log_sum = (lane_sum(&e) as f64).ln() as f32;
    values.iter().map(|&x| (x - m) - log_sum).collect()
}

/// `torch.logsumexp(x, dim=-1)` in f32: `log(sum(exp(x - max))) + max`.
pub(crate) fn logsumexp(values: &[f32]) -> f32 {
    let m = max(values);
    if m == f32::NEG_INFINITY {
        return m;
    }
    let sum = values.iter().map(|&x| exp_f32(x - m) as f64).sum::<f64>() as f32;
    ((sum as f64).ln() as f32) + m
}

/// `torch.cumsum` of an f32 vector: f64 accumulator, each prefix rounded to f32.
pub(crate) fn cumsum(values: &[f32]) -> Vec<f32> {
    let mut acc = 0.0f64;
    values
        .iter()
        .map(|&v| {
            acc += v as f64;
            acc as f32
        })
        .collect()
}

/// Sum of an f32 vector rounded to f32 (torch's reductions are f32 with a
/// CPU-dependent order; f64 accumulation is within their rounding).
pub(crate) fn sum(values: impl IntoIterator<Item = f32>) -> f32 {
    values.into_iter().map(|v| v as f64).sum::<f64>() as f32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sort_small_ties_keep_index_order() {
        // n <= 16: plain insertion sort, which is stable.
        assert_eq!(argsort_ascending(&[0.0; 5]), vec![0, 1, 2, 3, 4]);
        assert_eq!(argsort_ascending(&[2.0, 1.0, 2.0, 1.0]), vec![1, 3, 0, 2]);
    }

    #[test]
    fn sort_ties_follow_torch_for_n_17() {
        // torch 2.15.0: torch.sort(torch.zeros(17)).indices.tolist()
        let got = argsort_ascending(&[0.0; 17]);
        assert_eq!(&got[..10], &[8, 16, 15, 14, 13, 12, 11, 10, 9, 0]);
    }

    #[test]
    fn sort_ties_follow_torch_for_n_100_and_1000() {
        // torch 2.15.0: torch.sort(torch.zeros(n)).indices[:10].tolist()
        assert_eq!(
            &argsort_ascending(&[0.0; 100])[..10],
            &[62, 74, 73, 72, 71, 70, 69, 68, 67, 66]
        );
        assert_eq!(
            &argsort_ascending(&vec![0.0; 1000])[..10],
            &[672, 657, 658, 659, 660, 661, 662, 663, 664, 665]
        );
    }

    #[test]
    fn sort_is_a_sort() {
        let v: Vec<f32> = (0..5000)
            .map(|i| ((i * 7919) % 113) as f32 - 50.0)
            .collect();
        let idx = argsort_ascending(&v);
        let mut seen = vec![false; v.len()];
        for w in idx.windows(2) {
            assert!(v[w[0]] <= v[w[1]]);
        }
        for &i in &idx {
            assert!(!seen[i]);
            seen[i] = true;
        }
    }

    #[test]
    fn cumsum_accumulates_in_f64() {
        // f32 sequential: 1e8 + 1 + 1 = 1e8 (each +1 is lost); f64 accumulator: 100000002.
        let c = cumsum(&[1e8, 1.0, 1.0]);
        assert_eq!(c[2], 100_000_002.0);
    }

    #[test]
    fn softmax_of_minus_inf_entry_is_zero() {
        let p = softmax(&[0.0, f32::NEG_INFINITY, 0.0]);
        assert_eq!(p, vec![0.5, 0.0, 0.5]); // e^0 / 2
    }
}
