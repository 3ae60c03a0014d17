//! libstdc++'s `std::sort` and `std::partial_sort`, hand-written.
//!
//! Which of several tied candidates comes first after llama.cpp sorts them is
//! decided by these two algorithms as libstdc++ 12 implements them
//! (bits/stl_algo.h and bits/stl_heap.h of GCC 12, the compiler that built the
//! reference), so they are replayed comparison for comparison and move for
//! move:
//!
//! * `std::sort`: introsort — `__introsort_loop` with depth limit
//!   `2 * floor(log2 n)`, median-of-three pivot moved to the front
//!   (`__move_median_to_first` on `first + 1`, `mid`, `last - 1`), Hoare-style
//!   `__unguarded_partition`, recursion on the right part, heap sort when the
//!   depth limit runs out, ranges of at most 16 left to
//!   `__final_insertion_sort`.
//! * `std::partial_sort`: `__heap_select` (make a max-heap of the first
//!   `middle` elements under `comp`, then push every later element smaller
//!   than the top through `__pop_heap`) followed by `__sort_heap`.
//!
//! `less(a, b)` is the comparator (`comp(a, b)` in C++).

const THRESHOLD: usize = 16;

/// `std::sort(v.begin(), v.end(), less)`.
pub(crate) fn sort<T: Copy>(v: &mut [T], less: &impl Fn(&T, &T) -> bool) {
    let n = v.len();
    if n == 0 {
        return;
    }
    let depth = 2 * (usize::BITS - 1 - n.leading_zeros()) as usize;
    introsort_loop(v, 0, n, depth, less);
    final_insertion_sort(v, 0, n, less);
}

/// `std::partial_sort(v.begin(), v.begin() + middle, v.end(), less)`.
pub(crate) fn partial_sort<T: Copy>(v: &mut [T], middle: usize, less: &impl Fn(&T, &T) -> bool) {
    let last = v.len();
    heap_select(v, 0, middle, last, less);
    sort_heap(v, 0, middle, less);
}

fn introsort_loop<T: Copy>(
    v: &mut [T],
    first: usize,
    mut last: usize,
    mut depth: usize,
    less: &impl Fn(&T, &T) -> bool,
) {
    while last - first > THRESHOLD {
        if depth == 0 {
            heap_select(v, first, last, last, less);
            sort_heap(v, first, last, less);
            return;
        }
        depth -= 1;
        let cut = unguarded_partition_pivot(v, first, last, less);
        introsort_loop(v, cut, last, depth, less);
        last = cut;
    }
}

fn unguarded_partition_pivot<T: Copy>(
    v: &mut [T],
    first: usize,
    last: usize,
    less: &impl Fn(&T, &T) -> bool,
) -> usize {
    let mid = first + (last - first) / 2;
    move_median_to_first(v, first, first + 1, mid, last - 1, less);
    unguarded_partition(v, first + 1, last, first, less)
}

fn move_median_to_first<T: Copy>(
    v: &mut [T],
    result: usize,
    a: usize,
    b: usize,
    c: usize,
    less: &impl Fn(&T, &T) -> bool,
) {
    let pick = if less(&v[a], &v[b]) {
        if less(&v[b], &v[c]) {
            b
        } else if less(&v[a], &v[c]) {
            c
        } else {
            a
        }
    } else if less(&v[a], &v[c]) {
        a
    } else if less(&v[b], &v[c]) {
        c
    } else {
        b
    };
    v.swap(result, pick);
}

fn unguarded_partition<T: Copy>(
    v: &mut [T],
    mut first: usize,
    mut last: usize,
    pivot: usize,
    less: &impl Fn(&T, &T) -> bool,
) -> usize {
    loop {
        while less(&v[first], &v[pivot]) {
            first += 1;
        }
        last -= 1;
        while less(&v[pivot], &v[last]) {
            last -= 1;
        }
        if first >= last {
            return first;
        }
        v.swap(first, last);
        first += 1;
    }
}

fn final_insertion_sort<T: Copy>(
    v: &mut [T],
    first: usize,
    last: usize,
    less: &impl Fn(&T, &T) -> bool,
) {
    if last - first > THRESHOLD {
        insertion_sort(v, first, first + THRESHOLD, less);
        for i in first + THRESHOLD..last {
            unguarded_linear_insert(v, i, less);
        }
    } else {
        insertion_sort(v, first, last, less);
    }
}

fn insertion_sort<T: Copy>(v: &mut [T], first: usize, last: usize, less: &impl Fn(&T, &T) -> bool) {
    if first == last {
        return;
    }
    for i in first + 1..last {
        if less(&v[i], &v[first]) {
            let val = v[i];
            v.copy_within(first..i, first + 1);
            v[first] = val;
        } else {
            unguarded_linear_insert(v, i, less);
        }
    }
}

fn unguarded_linear_insert<T: Copy>(v: &mut [T], mut last: usize, less: &impl Fn(&T, &T) -> bool) {
    let val = v[last];
    let mut next = last - 1;
    while less(&val, &v[next]) {
        v[last] = v[next];
        last = next;
        next -= 1;
    }
    v[last] = val;
}

fn heap_select<T: Copy>(
    v: &mut [T],
    first: usize,
    middle: usize,
    last: usize,
    less: &impl Fn(&T, &T) -> bool,
) {
    make_heap(v, first, middle, less);
    for i in middle..last {
        if less(&v[i], &v[first]) {
            pop_heap(v, first, middle, i, less);
        }
    }
}

fn make_heap<T: Copy>(v: &mut [T], first: usize, last: usize, less: &impl Fn(&T, &T) -> bool) {
    let len = last - first;
    if len < 2 {
        return;
    }
    let mut parent = (len - 2) / 2;
    loop {
        let value = v[first + parent];
        adjust_heap(v, first, parent, len, value, less);
        if parent == 0 {
            return;
        }
        parent -= 1;
    }
}

fn adjust_heap<T: Copy>(
    v: &mut [T],
    first: usize,
    mut hole: usize,
    len: usize,
    value: T,
    less: &impl Fn(&T, &T) -> bool,
) {
    let top = hole;
    let mut second = hole;
    while second < len.saturating_sub(1) / 2 {
        second = 2 * (second + 1);
        if less(&v[first + second], &v[first + second - 1]) {
            second -= 1;
        }
        v[first + hole] = v[first + second];
        hole = second;
    }
    if len & 1 == 0 && len >= 2 && second == (len - 2) / 2 {
        second = 2 * (second + 1);
        v[first + hole] = v[first + second - 1];
        hole = second - 1;
    }
    push_heap(v, first, hole, top, value, less);
}

fn push_heap<T: Copy>(
    v: &mut [T],
    first: usize,
    mut hole: usize,
    top: usize,
    value: T,
    less: &impl Fn(&T, &T) -> bool,
) {
    while hole > top {
        let parent = (hole - 1) / 2;
        if !less(&v[first + parent], &value) {
            break;
        }
        v[first + hole] = v[first + parent];
        hole = parent;
    }
    v[first + hole] = value;
}

fn pop_heap<T: Copy>(
    v: &mut [T],
    first: usize,
    last: usize,
    result: usize,
    less: &impl Fn(&T, &T) -> bool,
) {
    let value = v[result];
    v[result] = v[first];
    adjust_heap(v, first, 0, last - first, value, less);
}

fn sort_heap<T: Copy>(v: &mut [T], first: usize, mut last: usize, less: &impl Fn(&T, &T) -> bool) {
    while last - first > 1 {
        last -= 1;
        pop_heap(v, first, last, last, less);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // (key, original index); comparator on key only, so ties show the
    // algorithm's own order.
    fn keyed(keys: &[i32]) -> Vec<(i32, usize)> {
        keys.iter().copied().zip(0..).collect()
    }

    #[test]
    fn sort_orders_by_key_and_handles_every_size() {
        for n in 0..200usize {
            let keys: Vec<i32> = (0..n).map(|i| ((i * 7919) % 13) as i32).collect();
            let mut v = keyed(&keys);
            sort(&mut v, &|a: &(i32, usize), b: &(i32, usize)| a.0 > b.0);
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
                partial_sort(&mut v, m, &|a: &(i32, usize), b: &(i32, usize)| a.0 > b.0);
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
        partial_sort(&mut v, 4, &|a: &(i32, usize), b: &(i32, usize)| a.0 > b.0);
        let order: Vec<usize> = v.iter().map(|x| x.1).collect();
        assert_eq!(order, vec![1, 3, 0, 2]);
    }

    #[test]
    fn insertion_sort_keeps_ties_stable_for_small_ranges() {
        // std::sort of <= 16 elements is a plain insertion sort: stable.
        let mut v = keyed(&[1, 3, 1, 3, 2, 1]);
        sort(&mut v, &|a: &(i32, usize), b: &(i32, usize)| a.0 > b.0);
        let order: Vec<usize> = v.iter().map(|x| x.1).collect();
        assert_eq!(order, vec![1, 3, 4, 0, 2, 5]);
    }
}
