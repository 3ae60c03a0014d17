//! `torch.sort` on CPU: a replica, written by hand, of libstdc++'s
//! `std::sort` (`bits/stl_algo.h`) as torch 2.15.0 runs it on
//! (value, index) pairs.

/// Index order of `torch.sort(values, descending=False)` on CPU.
///
/// A line-by-line port of libstdc++'s `std::__sort` (introsort with
/// median-of-three pivot, heap-sort fallback at depth 2·⌊log₂ n⌋, final
/// insertion sort with threshold 16). The input must not contain NaN.
pub fn argsort_ascending(values: &[f32]) -> Vec<usize> {
    // The order depends on the values alone (indices ride along), so pairs
    // with a u32 index, half the memory of usize ones, sort the same; a
    // vocabulary of 2^32 entries or more takes usize indices.
    if u32::try_from(values.len()).is_ok() {
        let pairs = values.iter().copied().zip(0u32..).collect();
        sorted(pairs).into_iter().map(|(_, i)| i as usize).collect()
    } else {
        let pairs = values.iter().copied().zip(0usize..).collect();
        sorted(pairs).into_iter().map(|(_, i)| i).collect()
    }
}

fn sorted<I: Copy>(mut a: Vec<Pair<I>>) -> Vec<Pair<I>> {
    let n = a.len();
    if n > 1 {
        let depth = 2 * (usize::BITS - 1 - n.leading_zeros()) as usize;
        introsort_loop(&mut a, 0, n, depth);
        final_insertion_sort(&mut a, 0, n);
    }
    a
}

/// A value and its index.
type Pair<I> = (f32, I);
const THRESHOLD: usize = 16;

#[inline]
fn lt<I>(x: &Pair<I>, y: &Pair<I>) -> bool {
    x.0 < y.0
}

fn introsort_loop<I: Copy>(a: &mut [Pair<I>], first: usize, mut last: usize, mut depth: usize) {
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

fn move_median_to_first<I: Copy>(a: &mut [Pair<I>], result: usize, x: usize, y: usize, z: usize) {
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

fn unguarded_partition<I: Copy>(
    a: &mut [Pair<I>],
    mut first: usize,
    mut last: usize,
    pivot: usize,
) -> usize {
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

fn adjust_heap<I: Copy>(
    a: &mut [Pair<I>],
    first: usize,
    mut hole: usize,
    len: usize,
    value: Pair<I>,
) {
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

fn heap_sort<I: Copy>(a: &mut [Pair<I>], first: usize, mut last: usize) {
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

fn unguarded_linear_insert<I: Copy>(a: &mut [Pair<I>], mut last: usize) {
    let val = a[last];
    let mut next = last - 1;
    while lt(&val, &a[next]) {
        a[last] = a[next];
        last = next;
        next -= 1;
    }
    a[last] = val;
}

fn insertion_sort<I: Copy>(a: &mut [Pair<I>], first: usize, last: usize) {
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

fn final_insertion_sort<I: Copy>(a: &mut [Pair<I>], first: usize, last: usize) {
    if last - first > THRESHOLD {
        insertion_sort(a, first, first + THRESHOLD);
        for i in first + THRESHOLD..last {
            unguarded_linear_insert(a, i);
        }
    } else {
        insertion_sort(a, first, last);
    }
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
}
