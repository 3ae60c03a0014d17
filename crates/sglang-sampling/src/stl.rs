//! The libstdc++ algorithms torch's CPU `sort` and `topk` run, ported line
//! by line (GCC 12's `bits/stl_algo.h` and `bits/stl_heap.h`; the
//! algorithms have not changed in many releases) so that tied values come
//! out in exactly torch's order.
//!
//! Written by hand because exactness needs it: which of several tokens tied
//! at SGLang's top-k cut survives is decided by the order these algorithms
//! leave ties in, which is neither index order nor any stable order.
//! `hf-sampling` holds an ascending `std::sort` replica verified against
//! torch; [`sort`] is the same algorithm generic over the comparator (the
//! unit tests check the two agree), and [`nth_element`] and
//! [`partial_sort`] are what `torch.topk` adds (`aten/src/ATen/native/
//! TopKImpl.h`, `topk_impl_loop`).

/// libstdc++'s `_S_threshold`.
const THRESHOLD: usize = 16;

/// `std::__lg(n)`: ⌊log₂ n⌋ for n ≥ 1.
fn lg(n: usize) -> usize {
    (usize::BITS - 1 - n.leading_zeros()) as usize
}

/// `std::sort(a[first..last], less)`.
pub(crate) fn sort<T: Copy>(
    a: &mut [T],
    first: usize,
    last: usize,
    less: &impl Fn(&T, &T) -> bool,
) {
    if first != last {
        introsort_loop(a, first, last, 2 * lg(last - first), less);
        final_insertion_sort(a, first, last, less);
    }
}

/// `std::nth_element(a[first..last], nth, less)`.
pub(crate) fn nth_element<T: Copy>(
    a: &mut [T],
    first: usize,
    nth: usize,
    last: usize,
    less: &impl Fn(&T, &T) -> bool,
) {
    if first == last || nth == last {
        return;
    }
    introselect(a, first, nth, last, 2 * lg(last - first), less);
}

/// `std::partial_sort(a[first..last], middle, less)`.
pub(crate) fn partial_sort<T: Copy>(
    a: &mut [T],
    first: usize,
    middle: usize,
    last: usize,
    less: &impl Fn(&T, &T) -> bool,
) {
    heap_select(a, first, middle, last, less);
    sort_heap(a, first, middle, less);
}

fn introsort_loop<T: Copy>(
    a: &mut [T],
    first: usize,
    mut last: usize,
    mut depth: usize,
    less: &impl Fn(&T, &T) -> bool,
) {
    while last - first > THRESHOLD {
        if depth == 0 {
            partial_sort(a, first, last, last, less);
            return;
        }
        depth -= 1;
        let cut = unguarded_partition_pivot(a, first, last, less);
        introsort_loop(a, cut, last, depth, less);
        last = cut;
    }
}

fn introselect<T: Copy>(
    a: &mut [T],
    mut first: usize,
    nth: usize,
    mut last: usize,
    mut depth: usize,
    less: &impl Fn(&T, &T) -> bool,
) {
    while last - first > 3 {
        if depth == 0 {
            heap_select(a, first, nth + 1, last, less);
            a.swap(first, nth);
            return;
        }
        depth -= 1;
        let cut = unguarded_partition_pivot(a, first, last, less);
        if cut <= nth {
            first = cut;
        } else {
            last = cut;
        }
    }
    insertion_sort(a, first, last, less);
}

fn move_median_to_first<T: Copy>(
    a: &mut [T],
    result: usize,
    x: usize,
    y: usize,
    z: usize,
    less: &impl Fn(&T, &T) -> bool,
) {
    if less(&a[x], &a[y]) {
        if less(&a[y], &a[z]) {
            a.swap(result, y);
        } else if less(&a[x], &a[z]) {
            a.swap(result, z);
        } else {
            a.swap(result, x);
        }
    } else if less(&a[x], &a[z]) {
        a.swap(result, x);
    } else if less(&a[y], &a[z]) {
        a.swap(result, z);
    } else {
        a.swap(result, y);
    }
}

fn unguarded_partition<T: Copy>(
    a: &mut [T],
    mut first: usize,
    mut last: usize,
    pivot: usize,
    less: &impl Fn(&T, &T) -> bool,
) -> usize {
    loop {
        while less(&a[first], &a[pivot]) {
            first += 1;
        }
        last -= 1;
        while less(&a[pivot], &a[last]) {
            last -= 1;
        }
        if first >= last {
            return first;
        }
        a.swap(first, last);
        first += 1;
    }
}

fn unguarded_partition_pivot<T: Copy>(
    a: &mut [T],
    first: usize,
    last: usize,
    less: &impl Fn(&T, &T) -> bool,
) -> usize {
    let mid = first + (last - first) / 2;
    move_median_to_first(a, first, first + 1, mid, last - 1, less);
    unguarded_partition(a, first + 1, last, first, less)
}

fn unguarded_linear_insert<T: Copy>(a: &mut [T], mut last: usize, less: &impl Fn(&T, &T) -> bool) {
    let val = a[last];
    let mut next = last - 1;
    while less(&val, &a[next]) {
        a[last] = a[next];
        last = next;
        next -= 1;
    }
    a[last] = val;
}

fn insertion_sort<T: Copy>(a: &mut [T], first: usize, last: usize, less: &impl Fn(&T, &T) -> bool) {
    if first == last {
        return;
    }
    for i in first + 1..last {
        if less(&a[i], &a[first]) {
            let val = a[i];
            a.copy_within(first..i, first + 1);
            a[first] = val;
        } else {
            unguarded_linear_insert(a, i, less);
        }
    }
}

fn final_insertion_sort<T: Copy>(
    a: &mut [T],
    first: usize,
    last: usize,
    less: &impl Fn(&T, &T) -> bool,
) {
    if last - first > THRESHOLD {
        insertion_sort(a, first, first + THRESHOLD, less);
        for i in first + THRESHOLD..last {
            unguarded_linear_insert(a, i, less);
        }
    } else {
        insertion_sort(a, first, last, less);
    }
}

fn heap_select<T: Copy>(
    a: &mut [T],
    first: usize,
    middle: usize,
    last: usize,
    less: &impl Fn(&T, &T) -> bool,
) {
    make_heap(a, first, middle, less);
    for i in middle..last {
        if less(&a[i], &a[first]) {
            pop_heap(a, first, middle, i, less);
        }
    }
}

fn sort_heap<T: Copy>(a: &mut [T], first: usize, mut last: usize, less: &impl Fn(&T, &T) -> bool) {
    while last - first > 1 {
        last -= 1;
        pop_heap(a, first, last, last, less);
    }
}

fn make_heap<T: Copy>(a: &mut [T], first: usize, last: usize, less: &impl Fn(&T, &T) -> bool) {
    if last - first < 2 {
        return;
    }
    let len = last - first;
    let mut parent = (len - 2) / 2;
    loop {
        let value = a[first + parent];
        adjust_heap(a, first, parent, len, value, less);
        if parent == 0 {
            return;
        }
        parent -= 1;
    }
}

fn pop_heap<T: Copy>(
    a: &mut [T],
    first: usize,
    last: usize,
    result: usize,
    less: &impl Fn(&T, &T) -> bool,
) {
    let value = a[result];
    a[result] = a[first];
    adjust_heap(a, first, 0, last - first, value, less);
}

fn adjust_heap<T: Copy>(
    a: &mut [T],
    first: usize,
    mut hole: usize,
    len: usize,
    value: T,
    less: &impl Fn(&T, &T) -> bool,
) {
    let top = hole;
    let mut second = hole;
    while second < (len.saturating_sub(1)) / 2 {
        second = 2 * (second + 1);
        if less(&a[first + second], &a[first + second - 1]) {
            second -= 1;
        }
        a[first + hole] = a[first + second];
        hole = second;
    }
    if len & 1 == 0 && second == (len - 2) / 2 {
        second = 2 * (second + 1);
        a[first + hole] = a[first + second - 1];
        hole = second - 1;
    }
    push_heap(a, first, hole, top, value, less);
}

fn push_heap<T: Copy>(
    a: &mut [T],
    first: usize,
    mut hole: usize,
    top: usize,
    value: T,
    less: &impl Fn(&T, &T) -> bool,
) {
    let mut parent = hole.saturating_sub(1) / 2;
    while hole > top && less(&a[first + parent], &value) {
        a[first + hole] = a[first + parent];
        hole = parent;
        parent = hole.saturating_sub(1) / 2;
    }
    a[first + hole] = value;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator for tie-heavy test vectors.
    fn values(n: usize, distinct: u64, mut state: u64) -> Vec<f32> {
        (0..n)
            .map(|_| {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                ((state >> 33) % distinct) as f32
            })
            .collect()
    }

    #[test]
    fn sort_matches_hf_samplings_verified_ascending_replica() {
        for (n, distinct, seed) in [
            (5, 2, 1),
            (17, 3, 2),
            (40, 4, 3),
            (1000, 4, 4),
            (3000, 50, 5),
        ] {
            let v = values(n, distinct, seed);
            let mut pairs: Vec<(f32, usize)> = v.iter().copied().zip(0..).collect();
            sort(&mut pairs, 0, n, &|x: &(f32, usize), y: &(f32, usize)| {
                x.0 < y.0
            });
            let ours: Vec<usize> = pairs.iter().map(|p| p.1).collect();
            assert_eq!(ours, hf_sampling::torch_ops::argsort_ascending(&v), "n={n}");
        }
    }

    #[test]
    fn nth_element_and_partial_sort_order_a_small_case() {
        // [2, 1, 2, 0, 2] with greater-than, run through GCC 12's libstdc++
        // (std::partial_sort to 2, std::nth_element at 1) while writing this:
        // partial_sort leaves ids 2, 0 first; nth_element leaves 2 4 0 3 1.
        let v = [2.0f32, 1.0, 2.0, 0.0, 2.0];
        let gt = |x: &(f32, usize), y: &(f32, usize)| x.0 > y.0;
        let mut p: Vec<(f32, usize)> = v.iter().copied().zip(0..).collect();
        partial_sort(&mut p, 0, 2, 5, &gt);
        assert_eq!((p[0].1, p[1].1), (2, 0));
        let mut q: Vec<(f32, usize)> = v.iter().copied().zip(0..).collect();
        nth_element(&mut q, 0, 1, 5, &gt);
        let order: Vec<usize> = q.iter().map(|x| x.1).collect();
        assert_eq!(order, [2, 4, 0, 3, 1]);
    }
}
