//! vLLM 0.33.0's Triton top-k/top-p kernels (`vllm/v1/sample/ops/
//! topk_topp_triton.py`), replayed step by step in f32 for one request (a
//! batch of one row) as `apply_top_k_top_p_triton` (1618-1726) runs them on
//! a CUDA device:
//!
//! - a row with top-k (`k < V`) goes through `_topk_topp_kernel` (106-878)
//!   with the CUDA tiles `BLOCK_SIZE` 8192 / `BLOCK_SIZE_TRUNC` 4096
//!   (`_topk_topp`, 940-941) and `SPLIT_COVERS_PONLY` on when top-p is on
//!   (946-950): the pivot search for top-k (143-392), then, with top-p, the
//!   bisection over the kept tokens' probabilities (394-609), or, when the
//!   row has at most `k` finite logits, the standalone top-p (611-849); the
//!   sixth pass masks (851-878);
//! - a top-p-only row goes through the split pipeline `_apply_topp_split`
//!   (1572-1615: `_topp_sb_stats_kernel` 1007-1051, five rounds of
//!   `_topp_sb_step_kernel` 1237-1340 over an 8-pivot geometric ladder,
//!   `_topp_sb_combine` 1121-1234, `_topp_sb_mask_kernel` 1395-1518), with
//!   the row split in 32 slices (`_topp_split_count` 998-1004 for a batch of
//!   one on any GPU with at least 32 SMs).
//!
//! The replay is the kernels' own operation order in f32, with the
//! interpreter's reductions: `tl.sum` over a tile is numpy's pairwise sum
//! (`np.sum`, 8 accumulators, blocks of 128; [`pairwise`]), a sum over the
//! slice axis adds slice by slice, `tl.max`/`tl.min` ignore NaN,
//! `tl.maximum`/`tl.minimum` are `fmax`/`fmin`. This is hand-written:
//! exactness needs the kernels' order, and no crate has it.
//!
//! What it cannot replay is the bits of `exp` and `log`: the interpreter
//! takes them from numpy's SIMD float32 functions (up to 2-3 ulps from the
//! correctly rounded value on the recording machine), a GPU from CUDA's
//! `ex2.approx`/`lg2.approx`. The replay uses the correctly rounded values
//! and then runs again with every `exp` and `log` result moved by up to
//! [`FRAGILE_ULPS`] ulps (up, down, and two input-dependent mixes). A kept
//! set that changes under any of them is reported as fragile
//! ([`FragileKind::TopPCut`]): decided by the exp/log bits, not by the rule.

use std::cmp::Ordering;

use parity_core::Error;
use parity_core::fragile::{FRAGILE_ULPS, Fragile, FragileKind};

const BLOCK_SIZE: usize = 8192;
const BLOCK_SIZE_TRUNC: usize = 4096;
const SPLITS: usize = 32;
const FANOUT: usize = 8;
const ROUNDS: usize = 5;
const STATS_BLOCK: usize = 8192;
const STEP_BLOCK: usize = 2048;
const NINF: f32 = f32::NEG_INFINITY;
const INF: f32 = f32::INFINITY;

/// `_PERCENTILE_TO_STD_TABLE` (topk_topp_triton.py:58-79).
#[rustfmt::skip]
const PERCENTILE_TO_STD: [f32; 200] = [
    2.576, 2.319, 2.178, 2.064, 1.968, 1.892, 1.819, 1.757, 1.708, 1.659,
    1.616, 1.568, 1.526, 1.492, 1.456, 1.420, 1.382, 1.342, 1.309, 1.280,
    1.249, 1.221, 1.193, 1.169, 1.145, 1.121, 1.095, 1.073, 1.050, 1.030,
    1.008, 0.987, 0.966, 0.945, 0.926, 0.910, 0.891, 0.871, 0.854, 0.837,
    0.819, 0.803, 0.784, 0.767, 0.753, 0.734, 0.719, 0.702, 0.690, 0.675,
    0.658, 0.640, 0.625, 0.609, 0.595, 0.578, 0.564, 0.550, 0.537, 0.521,
    0.509, 0.495, 0.481, 0.466, 0.453, 0.439, 0.424, 0.410, 0.397, 0.383,
    0.370, 0.356, 0.343, 0.330, 0.316, 0.302, 0.289, 0.274, 0.261, 0.247,
    0.235, 0.223, 0.209, 0.196, 0.184, 0.172, 0.159, 0.149, 0.137, 0.124,
    0.112, 0.100, 0.086, 0.074, 0.062, 0.050, 0.035, 0.023, 0.009, -0.003,
    -0.015, -0.027, -0.039, -0.052, -0.063, -0.074, -0.085, -0.097, -0.109, -0.122,
    -0.134, -0.147, -0.158, -0.171, -0.184, -0.196, -0.210, -0.223, -0.235, -0.248,
    -0.261, -0.275, -0.289, -0.302, -0.317, -0.328, -0.341, -0.353, -0.368, -0.382,
    -0.396, -0.410, -0.426, -0.439, -0.452, -0.465, -0.480, -0.493, -0.507, -0.521,
    -0.537, -0.551, -0.568, -0.582, -0.597, -0.614, -0.628, -0.643, -0.658, -0.673,
    -0.691, -0.706, -0.721, -0.738, -0.754, -0.769, -0.789, -0.808, -0.824, -0.838,
    -0.857, -0.877, -0.893, -0.912, -0.929, -0.947, -0.965, -0.983, -1.003, -1.027,
    -1.050, -1.070, -1.092, -1.117, -1.139, -1.162, -1.189, -1.216, -1.241, -1.272,
    -1.300, -1.330, -1.367, -1.404, -1.441, -1.485, -1.523, -1.564, -1.607, -1.658,
    -1.710, -1.778, -1.832, -1.901, -1.978, -2.068, -2.174, -2.325, -2.577, -3.813,
];

/// `_NORMAL_CDF_TO_SIGMA_TABLE` (topk_topp_triton.py:35-56).
#[rustfmt::skip]
const NORMAL_CDF_TO_SIGMA: [f32; 200] = [
    3.656, 3.650, 3.650, 3.650, 3.626, 3.626, 3.626, 3.514, 3.514, 3.503,
    3.503, 3.434, 3.434, 3.428, 3.428, 3.387, 3.380, 3.380, 3.376, 3.373,
    3.373, 3.356, 3.354, 3.354, 3.291, 3.249, 3.234, 3.214, 3.198, 3.198,
    3.185, 3.177, 3.177, 3.165, 3.164, 3.161, 3.138, 3.120, 3.115, 3.113,
    3.093, 3.066, 3.054, 3.043, 3.037, 3.023, 2.993, 2.991, 2.976, 2.970,
    2.952, 2.946, 2.932, 2.908, 2.902, 2.895, 2.886, 2.874, 2.861, 2.844,
    2.836, 2.810, 2.801, 2.790, 2.784, 2.779, 2.767, 2.757, 2.745, 2.733,
    2.723, 2.716, 2.693, 2.678, 2.671, 2.656, 2.649, 2.629, 2.611, 2.595,
    2.592, 2.585, 2.574, 2.550, 2.543, 2.534, 2.521, 2.518, 2.497, 2.485,
    2.468, 2.450, 2.441, 2.430, 2.412, 2.402, 2.389, 2.383, 2.377, 2.364,
    2.349, 2.338, 2.332, 2.319, 2.310, 2.301, 2.282, 2.274, 2.266, 2.250,
    2.242, 2.236, 2.226, 2.215, 2.207, 2.196, 2.179, 2.171, 2.162, 2.147,
    2.135, 2.121, 2.109, 2.095, 2.085, 2.073, 2.063, 2.045, 2.030, 2.016,
    2.003, 1.992, 1.983, 1.972, 1.960, 1.949, 1.940, 1.928, 1.912, 1.897,
    1.881, 1.869, 1.854, 1.838, 1.824, 1.807, 1.792, 1.779, 1.764, 1.751,
    1.739, 1.726, 1.711, 1.697, 1.685, 1.668, 1.652, 1.636, 1.622, 1.603,
    1.585, 1.568, 1.551, 1.534, 1.513, 1.499, 1.480, 1.464, 1.441, 1.422,
    1.394, 1.373, 1.347, 1.320, 1.296, 1.270, 1.246, 1.219, 1.190, 1.163,
    1.135, 1.104, 1.073, 1.041, 1.006, 0.969, 0.931, 0.894, 0.851, 0.806,
    0.757, 0.702, 0.643, 0.574, 0.498, 0.405, 0.288, 0.134, -0.110, -3.813,
];

/// How `exp` and `log` round in one replay: correctly (`Nominal`), or moved
/// by up to [`FRAGILE_ULPS`] ulps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rounding {
    Nominal,
    Up,
    Down,
    Mixed(u32),
}

impl Rounding {
    const PERTURBED: [Self; 4] = [
        Self::Up,
        Self::Down,
        Self::Mixed(0x9e37_79b9),
        Self::Mixed(0x85eb_ca6b),
    ];

    /// By how many ulps a result computed from input bits `bits` moves.
    fn shift(self, bits: u32) -> i32 {
        let n = FRAGILE_ULPS as i32;
        match self {
            Self::Nominal => 0,
            Self::Up => n,
            Self::Down => -n,
            Self::Mixed(salt) => {
                let h = replicas::murmur3::fmix(bits ^ salt);
                (h % (2 * n as u32 + 1)) as i32 - n
            }
        }
    }

    fn nudge(self, bits: u32, v: f32) -> f32 {
        let k = self.shift(bits);
        if k == 0 || !v.is_finite() || v == 0.0 {
            return v;
        }
        let mut v = v;
        for _ in 0..k.unsigned_abs() {
            v = if k > 0 { v.next_up() } else { v.next_down() };
        }
        v
    }

    /// `tl.exp` in f32 (exactly 1 at 0, as every implementation gives).
    fn exp(self, x: f32) -> f32 {
        if x == 0.0 {
            return 1.0;
        }
        self.nudge(x.to_bits(), (f64::from(x)).exp() as f32)
    }

    /// `tl.log` in f32 (exactly 0 at 1).
    fn log(self, x: f32) -> f32 {
        if x == 1.0 {
            return 0.0;
        }
        self.nudge(x.to_bits().rotate_left(16), (f64::from(x)).ln() as f32)
    }
}

/// numpy's float32 `np.sum` of a contiguous array (`pairwise_sum` in
/// numpy's `loops_utils.h.src`): fewer than 8 values left to right; up to
/// 128 in 8 interleaved accumulators combined as ((0+1)+(2+3))+((4+5)+(6+7))
/// and the rest left to right; more, split at half rounded down to a
/// multiple of 8. The interpreter's `tl.sum` over a tile is this.
pub(crate) fn pairwise(a: &[f32]) -> f32 {
    let n = a.len();
    if n < 8 {
        let mut r = 0.0f32;
        for &v in a {
            r += v;
        }
        r
    } else if n <= 128 {
        let mut r = [0.0f32; 8];
        r.copy_from_slice(&a[..8]);
        let mut i = 8;
        while i < n - n % 8 {
            for j in 0..8 {
                r[j] += a[i + j];
            }
            i += 8;
        }
        let mut res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        while i < n {
            res += a[i];
            i += 1;
        }
        res
    } else {
        let mut n2 = n / 2;
        n2 -= n2 % 8;
        pairwise(&a[..n2]) + pairwise(&a[n2..])
    }
}

/// `tl.cast(v, tl.uint32)` as the interpreter's numpy does it on x86-64
/// for the values where that is defined (truncation); `None` outside
/// (negative at or below -1, NaN, 2^32 and up), where numpy and CUDA's
/// saturating conversion disagree.
fn to_u32(v: f32) -> Option<u32> {
    if v > -1.0 && v < 4_294_967_296.0 {
        Some(v.max(0.0) as u32)
    } else {
        None
    }
}

fn unmodelled(what: &str, v: f32) -> Error {
    Error::new(format_args!(
        "the Triton top-p kernel casts {what} = {v:e} to uint32, where the interpreter's numpy and CUDA differ: not modelled for `runner` = \"v2-gpu\""
    ))
}

/// A tile of `row` from `start`, `len` long, padded with `other`.
fn tile(row: &[f32], start: usize, len: usize, end: usize, other: f32) -> Vec<f32> {
    (start..start + len)
        .map(|i| if i < end { row[i] } else { other })
        .collect()
}

/// `_update_min_larger_stats` (topk_topp_triton.py:83-103).
fn min_larger_stats(
    data: &[f32],
    above: &[bool],
    min_larger: f32,
    num: u32,
    sentinel: f32,
) -> (f32, u32) {
    let tile_min = data
        .iter()
        .zip(above)
        .map(|(&d, &a)| if a { d } else { sentinel })
        .fold(f32::NAN, nan_min);
    let tile_cnt = data
        .iter()
        .zip(above)
        .filter(|(d, a)| **a && (**d - tile_min).abs() < 1e-9)
        .count() as u32;
    let is_new = tile_min < min_larger;
    let is_same = (tile_min - min_larger).abs() < 1e-9;
    let num = if is_new {
        tile_cnt
    } else {
        num.wrapping_add(tile_cnt * u32::from(is_same))
    };
    (min_larger.min(tile_min), num)
}

/// `np.nanmin` folded pairwise (NaN only when both are).
fn nan_min(a: f32, b: f32) -> f32 {
    a.min(b)
}

fn nan_max(a: f32, b: f32) -> f32 {
    a.max(b)
}

/// `(count above, min larger, its count)` of one ternary pivot.
fn count_above(tiles: &[Vec<f32>], pivot: f32, sentinel: f32) -> (u32, f32, u32) {
    let mut n = 0u32;
    let mut ml = INF;
    let mut nml = 0u32;
    for t in tiles {
        let above: Vec<bool> = t.iter().map(|&v| v > pivot).collect();
        n += above.iter().filter(|&&a| a).count() as u32;
        (ml, nml) = min_larger_stats(t, &above, ml, nml, sentinel);
    }
    (n, ml, nml)
}

/// The state the sixth pass masks with.
struct Cut {
    final_pivot: f32,
    dup_logit: f32,
    num_dup: u32,
    num_keep: u32,
    max_logit: f32,
    /// A `(p_pivots_sum - p) / min_larger_prob` the uint32 cast is not
    /// defined for (it matters only if the sixth pass masks).
    bad_cast: Option<f32>,
}

impl Cut {
    /// `num_keep = num_min_larger - uint32((p_pivots_sum - p) / min_larger_prob)`.
    fn set_num_keep(&mut self, num_dup: u32, drop: f32) {
        match to_u32(drop) {
            Some(d) => self.num_keep = num_dup.wrapping_sub(d),
            None => self.bad_cast = Some(drop),
        }
    }
}

/// The top-p bisection (topk_topp_triton.py:541-597 and 710-839, the same
/// loop): `(p_pivot, min_larger_prob, num_min_larger, p_pivots_sum)`.
fn bisect(
    tiles: &[Vec<f32>],
    p: f32,
    mut max_range: f32,
    mut min_range: f32,
) -> (f32, f32, u32, f32) {
    let mut num_iters = 0;
    loop {
        let pivot = (max_range - min_range) * 0.5 + min_range;
        let mut sum = 0.0f32;
        let mut ml = 1.0f32;
        let mut nml = 0u32;
        for t in tiles {
            let above: Vec<bool> = t.iter().map(|&v| v > pivot).collect();
            let masked: Vec<f32> = t
                .iter()
                .zip(&above)
                .map(|(&v, &a)| v * f32::from(u8::from(a)))
                .collect();
            sum += pairwise(&masked);
            (ml, nml) = min_larger_stats(t, &above, ml, nml, 1.0);
        }
        let mut found = None;
        if sum >= p && sum - ml * (nml as f32) < p {
            found = Some((pivot, ml, nml, sum));
        }
        if sum > p {
            min_range = pivot;
        } else if sum < p {
            max_range = pivot;
        }
        num_iters += 1;
        if (max_range - min_range) < 1e-9 || num_iters >= 18 {
            return ((max_range + min_range) / 2.0, ml, nml, sum);
        }
        if let Some(f) = found {
            return f;
        }
    }
}

/// `_topk_topp_kernel` on one row (`k`: the request's top-k, below `V`).
fn monolithic(row: &mut [f32], k: Option<u32>, p: Option<f32>, r: Rounding) -> Result<(), Error> {
    let v = row.len();
    let num_tiles = v.div_ceil(BLOCK_SIZE);
    let tiles_of = |row: &[f32]| -> Vec<Vec<f32>> {
        (0..num_tiles)
            .map(|i| tile(row, i * BLOCK_SIZE, BLOCK_SIZE, v, NINF))
            .collect()
    };
    let mut cut = Cut {
        final_pivot: NINF,
        dup_logit: INF,
        num_dup: 0,
        num_keep: 0,
        max_logit: NINF,
        bad_cast: None,
    };
    let mut min_logit = INF;
    // Per-program scratch (`BUFFER_ROW`); reads past what was written are masked.
    let mut buffer = vec![0.0f32; v];
    if let Some(k) = k {
        // Zeroth pass (143-171).
        let (avg, std) = first_tile_stats(row);
        let percentile = to_u32(k as f32 / v as f32 * 200.0).unwrap_or(0).min(199);
        let sigma = PERCENTILE_TO_STD[percentile as usize];
        let sigma = sigma + sigma.abs() * -0.15;
        let outlier_pivot = avg + std * sigma;
        // First pass (174-201).
        let tiles = tiles_of(row);
        let mut num_outliers = 0usize;
        let mut num_finite_total = 0u32;
        for t in &tiles {
            cut.max_logit = cut.max_logit.max(t.iter().copied().fold(f32::NAN, nan_max));
            min_logit = min_logit.min(
                t.iter()
                    .map(|&x| if x > NINF { x } else { INF })
                    .fold(f32::NAN, nan_min),
            );
            num_finite_total += t.iter().filter(|&&x| x > NINF).count() as u32;
            for &x in t {
                if x > outlier_pivot {
                    buffer[num_outliers] = x;
                    num_outliers += 1;
                }
            }
        }
        // (a padded tile's -inf never exceeds a pivot, so the tile's mask is implicit)
        min_logit = min_logit.min(cut.max_logit);
        let max_logit = cut.max_logit;
        // Second passes (203-383).
        let mut k_pivot = INF;
        let mut k_pivots_num = 0u32;
        let mut min_larger = INF;
        let mut num_min_larger = 0u32;
        if num_finite_total <= k {
            k_pivot = NINF;
        } else {
            let (mut max_range, mut min_range, search): (f32, f32, Vec<Vec<f32>>) =
                if num_outliers as u32 > k {
                    let iters = num_outliers.div_ceil(BLOCK_SIZE_TRUNC);
                    let t = (0..iters)
                        .map(|i| {
                            tile(
                                &buffer,
                                i * BLOCK_SIZE_TRUNC,
                                BLOCK_SIZE_TRUNC,
                                num_outliers,
                                NINF,
                            )
                        })
                        .collect();
                    (max_logit, outlier_pivot, t)
                } else {
                    (max_logit, min_logit, tiles.clone())
                };
            let mut num_iters = 0;
            loop {
                let kp0 = (max_range - min_range) * 1.0 / 3.0 + min_range;
                let kp1 = (max_range - min_range) * 2.0 / 3.0 + min_range;
                let (n0, ml0, nml0) = count_above(&search, kp0, INF);
                let (n1, ml1, nml1) = count_above(&search, kp1, INF);
                let mut found = false;
                if n0 >= k && n0 - nml0 < k {
                    (k_pivot, k_pivots_num, min_larger, num_min_larger) = (kp0, n0, ml0, nml0);
                    found = true;
                }
                if n1 >= k && n1 - nml1 < k {
                    (k_pivot, k_pivots_num, min_larger, num_min_larger) = (kp1, n1, ml1, nml1);
                    found = true;
                }
                if n1 > k {
                    min_range = kp1;
                } else if n0 > k {
                    min_range = kp0;
                }
                if n0 < k {
                    max_range = kp0;
                } else if n1 < k {
                    max_range = kp1;
                }
                num_iters += 1;
                if num_iters >= 18 || (min_range - max_range).abs() < 1e-9 {
                    k_pivot = (max_range + min_range) / 2.0;
                    min_larger = ml0;
                    num_min_larger = nml0;
                    found = true;
                }
                if found {
                    break;
                }
            }
        }
        cut.dup_logit = min_larger;
        cut.num_dup = num_min_larger;
        cut.num_keep = num_min_larger.wrapping_sub(k_pivots_num.wrapping_sub(k));
        let mut num_kept = 0u32;
        cut.final_pivot = if num_finite_total > k { k_pivot } else { NINF };
        if let Some(p) = p.filter(|_| num_finite_total > k)
            && p < 1.0
        {
            // Top-p after top-k (394-609).
            let min_logit = k_pivot;
            let mut sum_exp = 0.0f32;
            let search: Vec<Vec<f32>>;
            if num_outliers as u32 > k {
                let iters = num_outliers.div_ceil(BLOCK_SIZE_TRUNC);
                let tiles: Vec<Vec<f32>> = (0..iters)
                    .map(|i| {
                        tile(
                            &buffer,
                            i * BLOCK_SIZE_TRUNC,
                            BLOCK_SIZE_TRUNC,
                            num_outliers,
                            NINF,
                        )
                    })
                    .collect();
                for t in &tiles {
                    let mut keep: Vec<bool> = t.iter().map(|&x| x > min_logit).collect();
                    if cut.num_keep < cut.num_dup {
                        trim_duplicates(t, &mut keep, cut.dup_logit, cut.num_keep, &mut num_kept);
                    }
                    let e: Vec<f32> = t
                        .iter()
                        .zip(&keep)
                        .map(|(&x, &kp)| r.exp(if kp { x } else { NINF } - max_logit))
                        .collect();
                    sum_exp += pairwise(&e);
                }
                // Fourth pass: every buffered logit's probability.
                for b in buffer.iter_mut().take(num_outliers) {
                    *b = r.exp(*b - max_logit) / sum_exp;
                }
                search = (0..iters)
                    .map(|i| {
                        tile(
                            &buffer,
                            i * BLOCK_SIZE_TRUNC,
                            BLOCK_SIZE_TRUNC,
                            num_outliers,
                            0.0,
                        )
                    })
                    .collect();
            } else {
                let mut n2 = 0usize;
                for t in tiles_of(row) {
                    let mut keep: Vec<bool> = t.iter().map(|&x| x > min_logit).collect();
                    trim_duplicates(&t, &mut keep, cut.dup_logit, cut.num_keep, &mut num_kept);
                    let e: Vec<f32> = t
                        .iter()
                        .zip(&keep)
                        .map(|(&x, &kp)| r.exp(if kp { x } else { NINF } - max_logit))
                        .collect();
                    sum_exp += pairwise(&e);
                    for (j, &kp) in keep.iter().enumerate() {
                        if kp {
                            buffer[n2] = e[j];
                            n2 += 1;
                        }
                    }
                }
                for b in buffer.iter_mut().take(n2) {
                    *b /= sum_exp;
                }
                let iters = n2.div_ceil(BLOCK_SIZE_TRUNC);
                search = (0..iters)
                    .map(|i| tile(&buffer, i * BLOCK_SIZE_TRUNC, BLOCK_SIZE_TRUNC, n2, 0.0))
                    .collect();
            }
            // `exp(max_logit - max_logit)`: 1, or NaN for an infinite maximum.
            let at_max = if max_logit.is_finite() { 1.0 } else { f32::NAN };
            let max_range = at_max / sum_exp;
            let min_range = r.exp(min_logit - max_logit) / sum_exp;
            let (p_pivot, mlp, nml, psum) = bisect(&search, p, max_range, min_range);
            cut.dup_logit = r.log(mlp * sum_exp) + max_logit;
            cut.num_dup = nml;
            let drop = (psum - p) / mlp;
            cut.set_num_keep(nml, drop);
            cut.final_pivot = r.log(p_pivot * sum_exp) + max_logit;
        }
    }
    if p.is_some() && cut.final_pivot == NINF {
        // Standalone top-p (611-849); with SPLIT_COVERS_PONLY only rows whose
        // top-k was a no-op get here.
        let p = p.unwrap_or(1.0);
        if k.is_some() && p < 1.0 {
            standalone_top_p(row, p, r, &mut cut)?;
        }
    }
    sixth_pass(row, &cut)
}

/// The mean and standard deviation of the finite logits of the first
/// `BLOCK_SIZE` tile, as both the top-k pivot search and the standalone
/// top-p of `_topk_topp_kernel` compute them (the kernel writes the same
/// lines twice): `-inf` entries count as 0 in the sums and not in `n`.
fn first_tile_stats(row: &[f32]) -> (f32, f32) {
    let blk0 = tile(row, 0, BLOCK_SIZE, row.len(), NINF);
    let finite: Vec<f32> = blk0
        .iter()
        .map(|&x| if x > NINF { x } else { 0.0 })
        .collect();
    let n = blk0.iter().filter(|&&x| x > NINF).count() as u32;
    let (avg, sq) = if n > 0 {
        let sq: Vec<f32> = finite.iter().map(|x| x * x).collect();
        (pairwise(&finite) / n as f32, pairwise(&sq) / n as f32)
    } else {
        (0.0, 0.0)
    };
    (avg, (sq - avg * avg).max(0.0).sqrt())
}

/// The standalone top-p of `_topk_topp_kernel` (topk_topp_triton.py:623-849).
fn standalone_top_p(row: &[f32], p: f32, r: Rounding, cut: &mut Cut) -> Result<(), Error> {
    let v = row.len();
    let num_tiles = v.div_ceil(BLOCK_SIZE);
    let (avg, std) = first_tile_stats(row);
    let max_sample = avg + std * 10.0;
    let mut sum_exp = 0.0f32;
    let mut max_logit = NINF;
    let mut min_logit = INF;
    let tiles: Vec<Vec<f32>> = (0..num_tiles)
        .map(|i| tile(row, i * BLOCK_SIZE, BLOCK_SIZE, v, NINF))
        .collect();
    for (i, t) in tiles.iter().enumerate() {
        max_logit = max_logit.max(t.iter().copied().fold(f32::NAN, nan_max));
        min_logit = min_logit.min(
            t.iter()
                .map(|&x| if x > NINF { x } else { INF })
                .fold(f32::NAN, nan_min),
        );
        let e: Vec<f32> = t
            .iter()
            .enumerate()
            .map(|(j, &x)| {
                if i * BLOCK_SIZE + j < v {
                    r.exp(x - max_sample)
                } else {
                    0.0
                }
            })
            .collect();
        sum_exp += pairwise(&e);
    }
    min_logit = min_logit.min(max_logit);
    let idx = ((p * 200.0) as i32).clamp(0, 199);
    let sigma = NORMAL_CDF_TO_SIGMA[idx as usize];
    let sigma = sigma + sigma.abs() * -0.25;
    let outlier_pivot = avg + std * sigma;
    let outlier_prob = r.exp(outlier_pivot - max_sample) / sum_exp;
    let mut sum_outlier = 0.0f32;
    let mut buffer = vec![0.0f32; v];
    let mut num_outliers = 0usize;
    let mut probs_all = Vec::with_capacity(num_tiles);
    for (i, t) in tiles.iter().enumerate() {
        let probs: Vec<f32> = t.iter().map(|&x| r.exp(x - max_sample) / sum_exp).collect();
        let in_row = |j: usize| i * BLOCK_SIZE + j < v;
        let masked: Vec<f32> = probs
            .iter()
            .enumerate()
            .map(|(j, &q)| q * f32::from(u8::from(q > outlier_prob && in_row(j))))
            .collect();
        sum_outlier += pairwise(&masked);
        for (j, &q) in probs.iter().enumerate() {
            if q > outlier_prob && in_row(j) {
                buffer[num_outliers] = q;
                num_outliers += 1;
            }
        }
        probs_all.push(probs);
    }
    let max_range = r.exp(max_logit - max_sample) / sum_exp;
    let mut min_range = r.exp(min_logit - max_sample) / sum_exp;
    let search: Vec<Vec<f32>> = if sum_outlier > p {
        min_range = outlier_prob;
        (0..num_outliers.div_ceil(BLOCK_SIZE_TRUNC))
            .map(|i| {
                tile(
                    &buffer,
                    i * BLOCK_SIZE_TRUNC,
                    BLOCK_SIZE_TRUNC,
                    num_outliers,
                    0.0,
                )
            })
            .collect()
    } else {
        // The buffer re-populated with every probability (775-785).
        probs_all
            .iter()
            .enumerate()
            .map(|(i, t)| {
                t.iter()
                    .enumerate()
                    .map(|(j, &q)| if i * BLOCK_SIZE + j < v { q } else { 0.0 })
                    .collect()
            })
            .collect()
    };
    let (p_pivot, mlp, nml, psum) = bisect(&search, p, max_range, min_range);
    cut.dup_logit = r.log(mlp * sum_exp) + max_sample;
    cut.num_dup = nml;
    let drop = (psum - p) / mlp;
    cut.set_num_keep(nml, drop);
    cut.final_pivot = r.log(p_pivot * sum_exp) + max_sample;
    cut.max_logit = max_logit;
    Ok(())
}

/// Sixth pass (topk_topp_triton.py:851-878).
fn sixth_pass(row: &mut [f32], cut: &Cut) -> Result<(), Error> {
    // `if not (final_pivot < max_logit)`: NaN included.
    if cut.final_pivot.partial_cmp(&cut.max_logit) != Some(Ordering::Less)
        || cut.final_pivot == NINF
    {
        return Ok(());
    }
    if let Some(v) = cut.bad_cast {
        return Err(unmodelled("(p_pivots_sum - p) / min_larger_prob", v));
    }
    let mut keep: Vec<bool> = row.iter().map(|&x| x > cut.final_pivot).collect();
    if cut.num_keep < cut.num_dup {
        trim_duplicates(row, &mut keep, cut.dup_logit, cut.num_keep, &mut 0);
    }
    for (x, k) in row.iter_mut().zip(keep) {
        if !k {
            *x = NINF;
        }
    }
    Ok(())
}

/// "Duplicate logit handling" (topk_topp_triton.py:424-440, 482-493,
/// 866-875): of the values within 1e-9 of `dup`, those past the first
/// `num_keep` (counting `num_kept` from earlier tiles) are not kept.
fn trim_duplicates(t: &[f32], keep: &mut [bool], dup: f32, num_keep: u32, num_kept: &mut u32) {
    let mut count = *num_kept;
    let mut kept_here = 0u32;
    for (j, &x) in t.iter().enumerate() {
        if (x - dup).abs() < 1e-9 {
            count = count.wrapping_add(1);
            if count <= num_keep {
                kept_here += 1;
            } else {
                keep[j] = false;
            }
        }
    }
    *num_kept = num_kept.wrapping_add(kept_here);
}

/// The search state `_topp_sb_combine` carries (topk_topp_triton.py:1121-1234).
#[derive(Clone, Copy)]
struct Search {
    lo: f32,
    hi: f32,
    best: f32,
    best_mass: f32,
    best_minl: f32,
    best_nmin: f32,
}

#[derive(Clone, Copy, Default)]
struct Combined {
    done: bool,
    nomask: bool,
    pivot: f32,
    dup: f32,
    numdup: f32,
    numkeep: f32,
    sel_fidx: Option<usize>,
    best_sel: Option<usize>,
}

/// Per slice and ladder slot: `(mass, minl, nmin)`.
type Parts = Vec<[[f32; 3]; FANOUT]>;

/// `_topp_sb_ladder` (1114-1118).
fn ladder(lo: f32, hi: f32, r: Rounding) -> [f32; FANOUT] {
    let l = r.log(hi / lo);
    std::array::from_fn(|f| lo * r.exp(l * (f as f32 + 1.0) / (FANOUT as f32 + 1.0)))
}

fn combine(
    parts: &Parts,
    z: f32,
    p: f32,
    s: &mut Search,
    is_last: bool,
    r: Rounding,
) -> Result<Combined, Error> {
    let mut mass = [0.0f32; FANOUT];
    let mut gmin = [f32::NAN; FANOUT];
    let mut nmin = [0.0f32; FANOUT];
    for f in 0..FANOUT {
        // A sum over the slice axis (axis 0): numpy adds slice after slice.
        mass[f] = parts[0][f][0];
        for part in parts.iter().skip(1) {
            mass[f] += part[f][0];
        }
        gmin[f] = parts.iter().map(|q| q[f][1]).fold(f32::NAN, nan_min);
        let counted: Vec<f32> = parts
            .iter()
            .map(|q| {
                if (q[f][1] - gmin[f]).abs() < 1e-9 {
                    q[f][2]
                } else {
                    0.0
                }
            })
            .collect();
        nmin[f] = counted[0];
        for c in counted.iter().skip(1) {
            nmin[f] += c;
        }
    }
    let pivs = ladder(s.lo, s.hi, r);
    let ok = |f: usize| mass[f] >= p && (mass[f] - gmin[f] * nmin[f]) < p;
    let ok_idx = (0..FANOUT).rev().find(|&f| ok(f));
    let ge = |f: usize| mass[f] >= p;
    let ge_idx = (0..FANOUT).rev().find(|&f| ge(f));
    let mut c = Combined {
        numdup: 1.0,
        numkeep: 1.0,
        dup: 1.0,
        ..Combined::default()
    };
    let mut sel_mass = 0.0f32;
    if let Some(g) = ge_idx
        && pivs[g] > s.best
    {
        s.best = pivs[g];
        s.best_mass = mass[g];
        s.best_minl = gmin[g];
        s.best_nmin = nmin[g];
        c.best_sel = Some(g);
    }
    if let Some(o) = ok_idx {
        c.pivot = pivs[o];
        sel_mass = mass[o];
        c.dup = gmin[o];
        c.numdup = nmin[o];
        c.sel_fidx = Some(o);
        c.done = true;
    } else {
        let new_lo = (0..FANOUT)
            .filter(|&f| ge(f))
            .map(|f| pivs[f])
            .fold(NINF, nan_max)
            .max(s.lo);
        let new_hi = (0..FANOUT)
            .filter(|&f| !ge(f))
            .map(|f| pivs[f])
            .fold(INF, nan_min)
            .min(s.hi);
        // `not (new_hi > new_lo * (1.0 + 1e-7))`: NaN included.
        if is_last || (new_hi.partial_cmp(&(new_lo * 1.000_000_1)) != Some(Ordering::Greater)) {
            if s.best > 0.0 {
                c.pivot = s.best;
                sel_mass = s.best_mass;
                c.dup = s.best_minl;
                c.numdup = s.best_nmin;
            } else {
                c.nomask = true;
            }
            c.done = true;
        }
        s.lo = new_lo;
        s.hi = new_hi;
    }
    if c.done && !c.nomask {
        c.nomask = c.pivot * z >= 1.0;
        let drop = (sel_mass - p).max(0.0) / c.dup;
        let drop = to_u32(drop).ok_or_else(|| unmodelled("max(sel_mass - p, 0) / dup", drop))?;
        c.numkeep = (c.numdup - drop as f32).max(1.0).min(c.numdup);
    }
    Ok(c)
}

/// `_apply_topp_split` on one row (topk_topp_triton.py:1572-1615).
fn split(row: &mut [f32], p: f32, r: Rounding) -> Result<(), Error> {
    let v = row.len();
    let slice_len = v.div_ceil(SPLITS);
    let bounds = |s: usize| {
        let start = s * slice_len;
        (start, (start + slice_len).min(v))
    };
    // _topp_sb_stats_kernel: per slice (max, sum_exp, min, count).
    let mut stats = [[0.0f32; 4]; SPLITS];
    for (s, st) in stats.iter_mut().enumerate() {
        let (start, end) = bounds(s);
        let (mut m, mut exp_sum, mut mn, mut cnt) = (NINF, 0.0f32, INF, 0.0f32);
        let mut i = start;
        while i < end {
            let x = tile(row, i, STATS_BLOCK, end, NINF);
            let nm = m.max(x.iter().copied().fold(f32::NAN, nan_max));
            let rescale = if m == NINF { 0.0 } else { r.exp(m - nm) };
            let e: Vec<f32> = x
                .iter()
                .map(|&x| if x > NINF { r.exp(x - nm) } else { 0.0 })
                .collect();
            exp_sum = exp_sum * rescale + pairwise(&e);
            m = nm;
            mn = mn.min(
                x.iter()
                    .map(|&x| if x > NINF { x } else { INF })
                    .fold(f32::NAN, nan_min),
            );
            let c: Vec<f32> = x.iter().map(|&x| f32::from(u8::from(x > NINF))).collect();
            cnt += pairwise(&c);
            i += STATS_BLOCK;
        }
        *st = [m, exp_sum, mn, cnt];
    }
    // _topp_sb_row_stats (1099-1111).
    let big_m = stats.iter().map(|s| s[0]).fold(f32::NAN, nan_max);
    let w: Vec<f32> = stats
        .iter()
        .map(|s| {
            if s[0] == NINF {
                0.0
            } else {
                s[1] * r.exp(s[0] - big_m)
            }
        })
        .collect();
    let z = pairwise(&w);
    let mn = stats.iter().map(|s| s[2]).fold(f32::NAN, nan_min);
    let num_finite = pairwise(&stats.iter().map(|s| s[3]).collect::<Vec<_>>());
    if z <= 0.0 || num_finite < 1.0 || z.is_nan() {
        return Ok(());
    }
    let max_prob = 1.0 / z;
    let min_prob = (r.exp(mn - big_m) / z).max(1e-30);
    if max_prob <= min_prob * 1.000_001 {
        return Ok(());
    }
    let start_search = Search {
        lo: min_prob,
        hi: max_prob,
        best: -1.0,
        best_mass: 0.0,
        best_minl: 1.0,
        best_nmin: 0.0,
    };
    // The step kernels: round by round, each replaying the combine chain.
    let mut all_parts: Vec<Parts> = Vec::with_capacity(ROUNDS);
    let mut s = start_search;
    for round in 0..ROUNDS {
        if round > 0 {
            let c = combine(&all_parts[round - 1], z, p, &mut s, false, r)?;
            if c.done {
                break;
            }
        }
        let pivs = ladder(s.lo, s.hi, r);
        let mut parts: Parts = vec![[[0.0; 3]; FANOUT]; SPLITS];
        for (sl, part) in parts.iter_mut().enumerate() {
            let (start, end) = bounds(sl);
            let mut mass = [0.0f32; FANOUT];
            let mut minl = [1.0f32; FANOUT];
            let mut nmin = [0.0f32; FANOUT];
            let mut i = start;
            while i < end {
                let x = tile(row, i, STEP_BLOCK, end, NINF);
                let pr: Vec<f32> = x.iter().map(|&x| r.exp(x - big_m) / z).collect();
                for f in 0..FANOUT {
                    let above: Vec<f32> = pr
                        .iter()
                        .map(|&q| if q > pivs[f] { q } else { 0.0 })
                        .collect();
                    mass[f] += pairwise(&above);
                    let tmin = pr
                        .iter()
                        .map(|&q| if q > pivs[f] { q } else { INF })
                        .fold(f32::NAN, nan_min);
                    let tcnt = pr
                        .iter()
                        .filter(|&&q| q > pivs[f] && (q - tmin).abs() < 1e-9)
                        .count() as f32;
                    let is_new = tmin < minl[f];
                    let is_same = (tmin - minl[f]).abs() < 1e-9;
                    nmin[f] = if is_new {
                        tcnt
                    } else {
                        nmin[f] + if is_same { tcnt } else { 0.0 }
                    };
                    minl[f] = minl[f].min(tmin);
                }
                i += STEP_BLOCK;
            }
            for f in 0..FANOUT {
                part[f] = [mass[f], minl[f], nmin[f]];
            }
        }
        all_parts.push(parts);
    }
    // _topp_sb_mask_kernel: the full chain, the last round finalising.
    let mut s = start_search;
    let mut last = Combined::default();
    let mut fin = None;
    let mut best_fin = None;
    for (j, parts) in all_parts.iter().enumerate() {
        let c = combine(parts, z, p, &mut s, j == ROUNDS - 1, r)?;
        if let Some(f) = c.sel_fidx {
            fin = Some((j, f));
        }
        if let Some(f) = c.best_sel {
            best_fin = Some((j, f));
        }
        last = c;
        if c.done {
            break;
        }
    }
    if !last.done {
        // Every round ran without finishing: cannot happen (the last one finalises).
        return Ok(());
    }
    if last.nomask {
        return Ok(());
    }
    let fin = fin.or(best_fin);
    let ties = last.numkeep < last.numdup;
    let mut dup_counts = [0.0f32; SPLITS];
    if ties && let Some((round, slot)) = fin {
        for (sl, d) in dup_counts.iter_mut().enumerate() {
            let q = all_parts[round][sl][slot];
            *d = if (q[1] - last.dup).abs() < 1e-9 {
                q[2]
            } else {
                0.0
            };
        }
    }
    for sl in 0..SPLITS {
        let (start, end) = bounds(sl);
        let mut num_preceding = 0.0f32;
        if ties {
            for d in dup_counts.iter().take(sl) {
                num_preceding += d;
            }
        }
        for x in row.iter_mut().take(end).skip(start) {
            let prob = r.exp(*x - big_m) / z;
            let mut keep = prob > last.pivot || *x == big_m;
            if ties && prob == last.dup {
                num_preceding += 1.0;
                if num_preceding > last.numkeep {
                    keep = false;
                }
            }
            if !keep {
                *x = NINF;
            }
        }
    }
    Ok(())
}

/// Runs the kernels once with rounding `r`.
fn replay(row: &[f32], k: Option<u32>, p: Option<f32>, r: Rounding) -> Result<Vec<f32>, Error> {
    let mut x = row.to_vec();
    match (k, p) {
        (None, Some(p)) => split(&mut x, p, r)?,
        (Some(_), _) => monolithic(&mut x, k, p, r)?,
        (None, None) => {}
    }
    Ok(x)
}

/// `apply_top_k_top_p_triton` on `row` (`k` below the vocabulary size, `p`
/// below 1, as `SamplingStates` passes them), and, with `check_fragile`, the
/// kept-set decisions that depend on exp/log bits (four more replays with
/// exp/log moved; their errors only ever become fragile entries, so a
/// caller that wants the row alone skips them).
pub(crate) fn top_k_top_p(
    row: &mut [f32],
    k: Option<u32>,
    p: Option<f32>,
    check_fragile: bool,
) -> Result<Vec<Fragile>, Error> {
    let nominal = replay(row, k, p, Rounding::Nominal)?;
    let mut fragile = Vec::new();
    if check_fragile && p.is_some() {
        let kept = |x: &[f32]| -> Vec<bool> { x.iter().map(|&v| v > NINF).collect() };
        let base = kept(&nominal);
        let mut flipped = vec![false; row.len()];
        let mut refused = None;
        for r in Rounding::PERTURBED {
            match replay(row, k, p, r) {
                Ok(x) => {
                    for ((f, a), b) in flipped.iter_mut().zip(&base).zip(kept(&x)) {
                        *f |= *a != b;
                    }
                }
                Err(e) => refused = Some(e),
            }
        }
        let moved: Vec<usize> = (0..row.len()).filter(|&i| flipped[i]).collect();
        if !moved.is_empty() || refused.is_some() {
            let detail = match refused {
                Some(e) => format!("with exp/log moved by up to {FRAGILE_ULPS} ulps: {e}"),
                None => format!(
                    "the Triton top-p keeps or drops tokens {moved:?} depending on exp/log bits (moved by up to {FRAGILE_ULPS} ulps)"
                ),
            };
            fragile.push(Fragile {
                kind: FragileKind::TopPCut,
                tokens: moved,
                margin_ulps: FRAGILE_ULPS,
                penalised: false,
                detail,
            });
        }
    }
    row.copy_from_slice(&nominal);
    Ok(fragile)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairwise_groups_as_numpy() {
        // 1e8 + 1 + ... : left to right loses every 1; pairwise keeps some.
        let mut a = vec![1.0f32; 16];
        a[0] = 1e8;
        let seq: f32 = a.iter().sum();
        assert_eq!(seq, 1e8);
        // Accumulators r0 = 1e8 + 1, r1..r7 = 2, combined ((0+1)+(2+3))+((4+5)+(6+7)).
        let r0 = 1e8f32 + 1.0;
        assert_eq!(pairwise(&a), ((r0 + 2.0) + 4.0) + 8.0);
        assert_ne!(pairwise(&a), seq);
    }

    #[test]
    fn rounding_moves_by_at_most_the_margin() {
        for x in [-20.5f32, -3.0, -0.1, 0.7] {
            let e = Rounding::Nominal.exp(x);
            for r in Rounding::PERTURBED {
                let d = parity_core::fragile::ulps(e, r.exp(x)).expect("finite");
                assert!(d <= FRAGILE_ULPS, "{x}: {d}");
            }
            assert_eq!(Rounding::Up.exp(x), {
                let mut v = e;
                for _ in 0..FRAGILE_ULPS {
                    v = v.next_up();
                }
                v
            });
        }
        assert_eq!(Rounding::Up.exp(0.0), 1.0);
    }

    #[test]
    fn split_keeps_the_smallest_prefix_reaching_p() {
        // probabilities ~ 0.64, 0.24, 0.09, 0.03: p 0.8 keeps two.
        let mut x = vec![3.0f32, 2.0, 1.0, 0.0];
        let f = top_k_top_p(&mut x, None, Some(0.8), true).expect("modelled");
        assert!(f.is_empty(), "{f:?}");
        assert_eq!(x, vec![3.0, 2.0, NINF, NINF]);
    }

    #[test]
    fn a_cut_on_the_mass_is_fragile() {
        // probabilities 1/2, 1/4, 1/4: top-p 0.5 is met by the first token
        // exactly, so an ulp of exp decides whether more are needed.
        let l = -std::f32::consts::LN_2;
        // Top-p alone (the split pipeline).
        let mut x = vec![0.0f32, l, l, f32::NEG_INFINITY];
        let f = top_k_top_p(&mut x, None, Some(0.5), true).expect("modelled");
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].kind, FragileKind::TopPCut);
        assert!(
            !f[0].tokens.is_empty() && !f[0].tokens.contains(&0),
            "{f:?}"
        );
    }
}
