//! libstdc++'s `std::nth_element`, hand-written: MLX's CPU `argpartition`
//! (`mlx/backend/cpu/sort.cpp`) calls it on an index array, and the order it
//! leaves the first k indices in is the order Ollama's MLX runner samples
//! them in (its inverse-CDF draw walks them in that order).
//!
//! `__introselect` of GCC's bits/stl_algo.h: while more than 3 elements
//! remain, partition around the median of three (`__move_median_to_first`
//! on `first + 1`, `mid`, `last - 1`, then `__unguarded_partition`) and keep
//! the side holding `nth`; after `2 * floor(log2 n)` rounds fall back to
//! `__heap_select` + `iter_swap(first, nth)`; finish with
//! `__insertion_sort`. The helpers are the same as in
//! `crates/llamacpp-sampling/src/stl.rs` (which replays `std::sort` and
//! `std::partial_sort` for llama.cpp); checked here against the orders the
//! real MLX argpartition returned (`fixtures/mlx/ollama_mlx.jsonl`).

/// `std::nth_element(v.begin(), v.begin() + nth, v.end(), less)`.
pub(crate) fn nth_element<T: Copy>(v: &mut [T], nth: usize, less: &impl Fn(&T, &T) -> bool) {
    let n = v.len();
    if n == 0 || nth >= n {
        return;
    }
    let mut depth = 2 * (usize::BITS - 1 - n.leading_zeros()) as usize;
    let (mut first, mut last) = (0, n);
    while last - first > 3 {
        if depth == 0 {
            heap_select(v, first, nth + 1, last, less);
            v.swap(first, nth);
            return;
        }
        depth -= 1;
        let cut = unguarded_partition_pivot(v, first, last, less);
        if cut <= nth {
            first = cut;
        } else {
            last = cut;
        }
    }
    insertion_sort(v, first, last, less);
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
            let val = v[i];
            let mut hole = i;
            while less(&val, &v[hole - 1]) {
                v[hole] = v[hole - 1];
                hole -= 1;
            }
            v[hole] = val;
        }
    }
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
            let value = v[i];
            v[i] = v[first];
            adjust_heap(v, first, 0, middle - first, value, less);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nth_element_partitions_around_nth() {
        for n in 1..120usize {
            let keys: Vec<i32> = (0..n).map(|i| ((i * 7919) % 13) as i32).collect();
            for nth in [0, n / 3, n / 2, n - 1] {
                let mut v: Vec<usize> = (0..n).collect();
                let less = |a: &usize, b: &usize| (keys[*a], *a) < (keys[*b], *b);
                nth_element(&mut v, nth, &less);
                let mut sorted: Vec<usize> = (0..n).collect();
                sorted.sort_by_key(|&i| (keys[i], i));
                assert_eq!(v[nth], sorted[nth], "n = {n}, nth = {nth}");
                assert!(v[..nth].iter().all(|a| less(a, &v[nth])));
                assert!(v[nth + 1..].iter().all(|a| less(&v[nth], a)));
            }
        }
    }
}
