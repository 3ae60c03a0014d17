//! libstdc++'s `std::sort`, `std::nth_element` and `std::partial_sort`,
//! hand-written because exactness needs them: which of several tied values
//! comes first after an engine sorts or selects is decided by these
//! algorithms as libstdc++ implements them (GCC 12's `bits/stl_algo.h` and
//! `bits/stl_heap.h`; unchanged for many releases), comparison for
//! comparison and move for move. Three engines run them on ties:
//!
//! * llama.cpp's candidate sort and top-k (`std::sort`, `std::partial_sort`);
//! * torch's CPU `sort` and `topk`, as SGLang runs them (`std::sort`, and
//!   `std::nth_element`/`std::partial_sort` in `aten/src/ATen/native/TopKImpl.h`);
//! * MLX's CPU `argpartition` (`std::nth_element`), whose order Ollama's MLX
//!   runner samples in.
//!
//! Each engine's recorded cases replay through these (llama.cpp's seeded
//! draws, SGLang's top-k cuts inside ties, the MLX runner's top-k orders).
//! The algorithms: `std::sort` is introsort (`__introsort_loop` with depth
//! limit `2 * floor(log2 n)`, median-of-three pivot moved to the front by
//! `__move_median_to_first` on `first + 1`, `mid`, `last - 1`,
//! `__unguarded_partition`, heap sort when the depth runs out, ranges of at
//! most 16 left to `__final_insertion_sort`); `std::nth_element` is
//! `__introselect` (the same partition, keeping the side that holds `nth`;
//! `__heap_select` + `iter_swap` when the depth runs out; insertion sort at
//! 3 or fewer); `std::partial_sort` is `__heap_select` then `__sort_heap`.
//! `less(a, b)` is the comparator (`comp(a, b)` in C++); every function
//! works on `a[first..last]`.

/// libstdc++'s `_S_threshold`.
const THRESHOLD: usize = 16;

/// `std::__lg(n)`: ⌊log₂ n⌋ for n ≥ 1.
fn lg(n: usize) -> usize {
    (usize::BITS - 1 - n.leading_zeros()) as usize
}

/// `std::sort(a[first..last], less)`.
pub fn sort<T: Copy>(a: &mut [T], first: usize, last: usize, less: &impl Fn(&T, &T) -> bool) {
    if first != last {
        introsort_loop(a, first, last, 2 * lg(last - first), less);
        final_insertion_sort(a, first, last, less);
    }
}

/// `std::nth_element(a[first..last], nth, less)`.
pub fn nth_element<T: Copy>(
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
pub fn partial_sort<T: Copy>(
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

    fn keyed(keys: &[i32]) -> Vec<(i32, usize)> {
        keys.iter().copied().zip(0..).collect()
    }

    fn gt(a: &(i32, usize), b: &(i32, usize)) -> bool {
        a.0 > b.0
    }

    #[test]
    fn sort_orders_by_key_and_handles_every_size() {
        for n in 0..200usize {
            let keys: Vec<i32> = (0..n).map(|i| ((i * 7919) % 13) as i32).collect();
            let mut v = keyed(&keys);
            sort(&mut v, 0, n, &gt);
            assert!(v.windows(2).all(|w| w[0].0 >= w[1].0), "n = {n}");
            let mut idx: Vec<usize> = v.iter().map(|x| x.1).collect();
            idx.sort_unstable();
            assert_eq!(idx, (0..n).collect::<Vec<_>>());
        }
    }

    #[test]
    fn partial_sort_puts_the_top_in_front_sorted() {
        for n in 1..150usize {
            for m in [1, n / 2, n] {
                if m == 0 {
                    continue;
                }
                let keys: Vec<i32> = (0..n).map(|i| ((i * 31) % 17) as i32).collect();
                let mut v = keyed(&keys);
                partial_sort(&mut v, 0, m, n, &gt);
                let mut sorted = keys.clone();
                sorted.sort_unstable_by(|a, b| b.cmp(a));
                let head: Vec<i32> = v[..m].iter().map(|x| x.0).collect();
                assert_eq!(head, sorted[..m].to_vec(), "n = {n}, m = {m}");
            }
        }
    }

    #[test]
    fn partial_sort_tie_order_is_the_heap_order() {
        // Four equal keys a0..a3, partial_sort of all four with comp = ">"
        // (never true on ties), traced by hand through libstdc++'s code:
        //   make_heap, parent 1: len 4 is even and second == 1, so v[1] = v[3]
        //     and a1 is pushed at 3: [a0, a3, a2, a1]
        //   make_heap, parent 0: second = 2, v[0] = v[2], a0 pushed at 2:
        //     [a2, a3, a0, a1]
        //   sort_heap, last 3: v[3] = a2, hole 0 -> 2 (v[0] = a0), a1 at 2:
        //     [a0, a3, a1, a2]
        //   sort_heap, last 2: v[2] = a0, len 2 even: v[0] = v[1] = a3,
        //     a1 at 1: [a3, a1, a0, a2]
        //   sort_heap, last 1: v[1] = a3, a1 back at 0: [a1, a3, a0, a2]
        let mut v = keyed(&[5, 5, 5, 5]);
        partial_sort(&mut v, 0, 4, 4, &gt);
        let order: Vec<usize> = v.iter().map(|x| x.1).collect();
        assert_eq!(order, vec![1, 3, 0, 2]);
    }

    #[test]
    fn insertion_sort_keeps_ties_stable_for_small_ranges() {
        // std::sort of <= 16 elements is a plain insertion sort: stable.
        let mut v = keyed(&[1, 3, 1, 3, 2, 1]);
        sort(&mut v, 0, 6, &gt);
        let order: Vec<usize> = v.iter().map(|x| x.1).collect();
        assert_eq!(order, vec![1, 3, 4, 0, 2, 5]);
    }

    #[test]
    fn nth_element_and_partial_sort_order_a_small_case() {
        // [2, 1, 2, 0, 2] with greater-than, run through GCC 12's libstdc++
        // (std::partial_sort to 2, std::nth_element at 1): partial_sort
        // leaves ids 2, 0 first; nth_element leaves 2 4 0 3 1.
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
