//! The torch CPU operations vLLM's sampler runs, replayed in f32.
//!
//! This is a hand-written replica, the same one `hf-sampling` verified
//! against torch for transformers (there on an AVX512 CPU), copied here
//! because that crate keeps it private. vLLM 0.32.0 pins torch 2.13.0; the
//! recorded fixtures (`fixtures/vllm/`) were made on an AVX2 CPU, where
//! torch's `Vectorized<float>` has 8 lanes, so [`LANES`] is 8.
//!
//! - `torch.sort(x)` (not stable) on CPU is libstdc++ `std::sort` on
//!   (value, index) pairs with comparator `a.value < b.value`;
//!   [`argsort_ascending`] replays it step by step, so ties come out in
//!   torch's order.
//! - `softmax` subtracts the maximum, takes SLEEF's `expf_u10`, sums over
//!   [`LANES`] SIMD lanes and multiplies by the reciprocal of the sum.
//! - `cumsum` of an f32 tensor accumulates in f64 and rounds each prefix.

/// Index order of `torch.sort(values, descending=False)` on CPU: a
/// line-by-line port of libstdc++'s `std::__sort` (introsort, median-of-three
/// pivot, heap-sort fallback at depth 2·⌊log₂ n⌋, final insertion sort with
/// threshold 16). The input must not contain NaN.
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

/// SLEEF's `xexpf` (1.0-ulp), the `Vectorized<float>::exp` torch's CPU
/// softmax calls, replayed operation by operation (FMA where SLEEF's `vmla`
/// is one).
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

/// Number of f32 lanes of torch's `Vectorized<float>` on the recording CPU
/// (AVX2; an AVX512 build has 16 and can round sums differently).
pub(crate) const LANES: usize = 8;

/// `vec::reduce_all(x + y)` over f32 with [`LANES`] lanes: lane-wise
/// accumulation of full vectors, the tail added into its lanes, then a
/// halving tree. Below one vector, a plain left-to-right sum.
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
    let mut width = LANES / 2;
    while width >= 1 {
        for i in 0..width {
            acc[i] += acc[i + width];
        }
        width /= 2;
    }
    acc[0]
}

/// `torch.amax` (no NaN).
pub(crate) fn max(values: &[f32]) -> f32 {
    values.iter().copied().fold(f32::NEG_INFINITY, f32::max)
}

/// `torch.softmax(x, dim=-1)` on CPU: `exp(x - max)` with SLEEF's exp, the
/// lane sum, then `e * (1 / sum)`. All `-inf` gives NaN everywhere, as torch.
pub(crate) fn softmax(values: &[f32]) -> Vec<f32> {
    let m = max(values);
    let e: Vec<f32> = values.iter().map(|&x| sleef_expf(x - m)).collect();
    let r = 1.0f32 / lane_sum(&e);
    e.into_iter().map(|v| v * r).collect()
}

/// `torch.cumsum` of an f32 vector: f64 accumulator, each prefix rounded.
pub(crate) fn cumsum(values: &[f32]) -> Vec<f32> {
    let mut acc = 0.0f64;
    values
        .iter()
        .map(|&v| {
            acc += f64::from(v);
            acc as f32
        })
        .collect()
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
        // torch: torch.sort(torch.zeros(17)).indices.tolist()[:10]
        let got = argsort_ascending(&[0.0; 17]);
        assert_eq!(&got[..10], &[8, 16, 15, 14, 13, 12, 11, 10, 9, 0]);
    }

    #[test]
    fn cumsum_accumulates_in_f64() {
        // f32 sequential: 1e8 + 1 + 1 = 1e8; f64 accumulator: 100000002.
        assert_eq!(cumsum(&[1e8, 1.0, 1.0])[2], 100_000_002.0);
    }

    #[test]
    fn softmax_of_minus_inf_entry_is_zero() {
        let p = softmax(&[0.0, f32::NEG_INFINITY, 0.0]);
        assert_eq!(p, vec![0.5, 0.0, 0.5]); // e^0 / 2
    }
}
