//! llama.cpp's CPU samplers, replayed on a candidate array.
//!
//! Every function here mirrors one sampler of src/llama-sampler.cpp at
//! llama.cpp 0c1e57098 (the tree llama-cpp-python 0.3.36 vendors), statement
//! for statement and in the same float types: the candidate array
//! (`llama_token_data_array`: id, logit, p, and a `sorted` flag) is changed
//! in place and in the same order, because the final `dist` sampler scans it
//! in array order and tie order decides which token a given random number
//! lands on. Sorting goes through the hand-written libstdc++ algorithms in
//! [`replicas::libstdcxx`] and llama.cpp's own 128-bucket partial sort
//! (`llama_token_data_array_partial_sort`), replayed here.
//!
//! `expf`, `logf`, `powf`, `exp` and `sqrt` are Rust's `f32::exp` & co., which
//! call the platform libm: on Linux/glibc the same functions llama.cpp calls.

use crate::mt::Mt19937;
use replicas::libstdcxx as stl;

/// `llama_token_data`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct TokenData {
    pub(crate) id: i32,
    pub(crate) logit: f32,
    pub(crate) p: f32,
}

/// `llama_token_data_array` (without `selected`, which only `dist` sets).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Candidates {
    pub(crate) data: Vec<TokenData>,
    pub(crate) sorted: bool,
}

impl Candidates {
    /// The array `common_sampler::set_logits` builds: every id in order, p = 0.
    pub(crate) fn from_logits(logits: &[f32]) -> Self {
        let data = logits
            .iter()
            .enumerate()
            .map(|(i, &logit)| TokenData {
                id: i as i32,
                logit,
                p: 0.0,
            })
            .collect();
        Self {
            data,
            sorted: false,
        }
    }
}

fn by_logit_desc(a: &TokenData, b: &TokenData) -> bool {
    a.logit > b.logit
}

/// `int(bucket_scale * val + bucket_inter)` as x86-64 computes it: a float
/// that does not fit in int (infinities, NaN) converts to INT_MIN.
fn bucket_of(val: f32) -> usize {
    const NBUCKETS: i32 = 128;
    let scale: f32 = NBUCKETS as f32 / (10.0f32 - -10.0f32);
    let inter: f32 = 10.0f32 * scale;
    let x = scale * val + inter;
    let ib = if x > -2_147_483_649.0 && x < 2_147_483_648.0 {
        x as i32
    } else {
        i32::MIN
    };
    ib.clamp(0, NBUCKETS - 1) as usize
}

/// `llama_token_data_array_partial_sort`: the top `npartial` candidates
/// sorted in front of the returned buffer (which holds every candidate of the
/// buckets it touched, `nhave >= npartial` of them).
pub(crate) fn bucket_partial_sort(cur: &[TokenData], npartial: usize) -> Vec<TokenData> {
    let mut histo = [0usize; 128];
    let idx: Vec<usize> = cur.iter().map(|t| bucket_of(t.logit)).collect();
    for &b in &idx {
        histo[b] += 1;
    }
    let mut nhave = 0;
    let mut ib = 127usize;
    loop {
        nhave += histo[ib];
        if nhave >= npartial || ib == 0 {
            break;
        }
        ib -= 1;
    }
    // bucket j (from the top) starts at the sum of the sizes above it
    let mut starts = [0usize; 128];
    let mut at = 0;
    for j in (ib..128).rev() {
        starts[j] = at;
        at += histo[j];
    }
    let mut res = vec![
        TokenData {
            id: 0,
            logit: 0.0,
            p: 0.0
        };
        nhave
    ];
    for (t, &b) in cur.iter().zip(&idx) {
        if b >= ib {
            res[starts[b]] = *t;
            starts[b] += 1;
        }
    }
    let mut ptr = 0;
    let mut ndone = 0;
    for j in (ib + 1..128).rev() {
        stl::sort(&mut res[ptr..ptr + histo[j]], 0, histo[j], &by_logit_desc);
        ptr += histo[j];
        ndone += histo[j];
    }
    stl::partial_sort(
        &mut res[ptr..ptr + histo[ib]],
        0,
        npartial - ndone,
        histo[ib],
        &by_logit_desc,
    );
    res
}

/// `llama_token_data_array_partial_sort_inplace`.
fn partial_sort_inplace(cur: &mut Candidates, npartial: usize) {
    if npartial <= 128 {
        let n = cur.data.len();
        stl::partial_sort(&mut cur.data, 0, npartial, n, &by_logit_desc);
    } else {
        let tmp = bucket_partial_sort(&cur.data, npartial);
        cur.data[..npartial].copy_from_slice(&tmp[..npartial]);
    }
    cur.data.truncate(npartial);
    cur.sorted = true;
}

/// `std::max(a, b)` for floats: `(a < b) ? b : a`.
fn fmax(a: f32, b: f32) -> f32 {
    if a < b { b } else { a }
}

/// `llama_sampler_softmax_impl`.
fn softmax(cur: &mut Candidates, do_sort: bool) {
    if do_sort && !cur.sorted {
        let n = cur.data.len();
        partial_sort_inplace(cur, n);
    }
    let mut max_l = cur.data[0].logit;
    if !cur.sorted {
        for t in &cur.data[1..] {
            max_l = fmax(max_l, t.logit);
        }
    }
    let mut cum_sum = 0.0f32;
    for t in &mut cur.data {
        let p = (t.logit - max_l).exp();
        t.p = p;
        cum_sum += p;
    }
    for t in &mut cur.data {
        t.p /= cum_sum;
    }
}

/// `llama_sampler_temp_impl`.
fn temp_impl(cur: &mut Candidates, temp: f32) {
    if cur.data.is_empty() {
        return;
    }
    if temp <= 0.0 {
        let mut max_i = 0;
        let mut max_l = cur.data[0].logit;
        for i in 1..cur.data.len() {
            if cur.data[i].logit > max_l {
                cur.data[max_i].logit = f32::NEG_INFINITY;
                max_i = i;
                max_l = cur.data[i].logit;
            } else {
                cur.data[i].logit = f32::NEG_INFINITY;
            }
        }
        return;
    }
    for t in &mut cur.data {
        t.logit /= temp;
    }
}

/// Penalty counts: what `llama_sampler_penalties_accept` holds after every id
/// of the context was accepted (the last `last_n` ids, each with its count).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PenaltyCounts {
    counts: std::collections::HashMap<i32, i32>,
}

impl PenaltyCounts {
    pub(crate) fn new(ids: &[i32], last_n: usize) -> Self {
        let mut counts = std::collections::HashMap::new();
        for &id in &ids[ids.len().saturating_sub(last_n)..] {
            *counts.entry(id).or_insert(0) += 1;
        }
        Self { counts }
    }

    /// How often `id` is in the window (0: not in it).
    pub(crate) fn count(&self, id: i32) -> i32 {
        self.counts.get(&id).copied().unwrap_or(0)
    }
}

/// One sampler of the chain, with the parameters `common_sampler_init` gave
/// it. Samplers whose `llama_sampler_init_*` returns an empty sampler for
/// these parameters are never built (see [`crate::params`]).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Sampler {
    LogitBias(Vec<(i32, f32)>),
    Penalties {
        counts: PenaltyCounts,
        repeat: f32,
        freq: f32,
        present: f32,
    },
    TopNSigma(f32),
    TopK(i32),
    Typical {
        p: f32,
        min_keep: usize,
    },
    TopP {
        p: f32,
        min_keep: usize,
    },
    MinP {
        p: f32,
        min_keep: usize,
    },
    Xtc {
        probability: f32,
        threshold: f32,
        min_keep: usize,
    },
    TempExt {
        temp: f32,
        delta: f32,
        exponent: f32,
    },
}

/// What XTC does on this pass: in a draw, decided by its own RNG; for the
/// distribution, one branch at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum XtcBranch {
    /// `chance <= probability`: XTC removes the top tokens.
    Applied,
    /// `chance > probability`: XTC returns without touching the array.
    Skipped,
}

impl Sampler {
    /// Applies this sampler. Returns true when it was XTC and it reached its
    /// random draw (so the real sampler consumed one number of its RNG).
    pub(crate) fn apply(&self, cur: &mut Candidates, xtc: XtcBranch) -> bool {
        match self {
            Sampler::LogitBias(biases) => logit_bias(cur, biases),
            Sampler::Penalties {
                counts,
                repeat,
                freq,
                present,
            } => penalties(cur, counts, *repeat, *freq, *present),
            Sampler::TopNSigma(n) => top_n_sigma(cur, *n),
            Sampler::TopK(k) => top_k(cur, *k),
            Sampler::Typical { p, min_keep } => typical(cur, *p, *min_keep),
            Sampler::TopP { p, min_keep } => top_p(cur, *p, *min_keep),
            Sampler::MinP { p, min_keep } => min_p(cur, *p, *min_keep),
            Sampler::Xtc {
                probability,
                threshold,
                min_keep,
            } => return xtc_apply(cur, *probability, *threshold, *min_keep, xtc),
            Sampler::TempExt {
                temp,
                delta,
                exponent,
            } => temp_ext(cur, *temp, *delta, *exponent),
        }
        false
    }
}

/// `llama_sampler_logit_bias_apply`.
fn logit_bias(cur: &mut Candidates, biases: &[(i32, f32)]) {
    let mut to_search = Vec::new();
    for &(token, bias) in biases {
        let t = token as usize;
        if token >= 0 && cur.data.len() > t && cur.data[t].id == token {
            cur.data[t].logit += bias;
        } else {
            to_search.push((token, bias));
        }
    }
    if to_search.is_empty() {
        return;
    }
    for t in &mut cur.data {
        for &(token, bias) in &to_search {
            if t.id == token {
                t.logit += bias;
                break;
            }
        }
    }
}

/// `llama_sampler_penalties_apply`.
fn penalties(cur: &mut Candidates, counts: &PenaltyCounts, repeat: f32, freq: f32, present: f32) {
    for t in &mut cur.data {
        let Some(&count) = counts.counts.get(&t.id) else {
            continue;
        };
        if t.logit <= 0.0 {
            t.logit *= repeat;
        } else {
            t.logit /= repeat;
        }
        t.logit -= count as f32 * freq + f32::from(u8::from(count > 0)) * present;
    }
    cur.sorted = false;
}

/// `llama_sampler_top_n_sigma_apply`.
fn top_n_sigma(cur: &mut Candidates, n: f32) {
    if n <= 0.0 || cur.data.len() <= 1 {
        return;
    }
    let mut max = cur.data[0].logit;
    let mut logits_sum = 0.0f32;
    let mut valid_count = 0usize;
    for t in &cur.data {
        if t.logit != f32::NEG_INFINITY {
            max = fmax(max, t.logit);
            logits_sum += t.logit;
            valid_count += 1;
        }
    }
    let mean = if valid_count > 0 {
        logits_sum / valid_count as f32
    } else {
        0.0
    };
    let mut acc = 0.0f32;
    for t in &cur.data {
        if t.logit != f32::NEG_INFINITY {
            // acc += pow(logit - mean, 2): the square of a float is exact in double
            let d = f64::from(t.logit - mean);
            acc = (f64::from(acc) + d * d) as f32;
        }
    }
    let std = if valid_count > 0 {
        (acc / valid_count as f32).sqrt()
    } else {
        0.0
    };
    for t in &mut cur.data {
        if t.logit < max - n * std {
            t.logit = f32::NEG_INFINITY;
        }
    }
}

/// `llama_sampler_top_k_impl`.
fn top_k(cur: &mut Candidates, k: i32) {
    if k <= 0 {
        return;
    }
    let k = (k as usize).min(cur.data.len());
    if !cur.sorted {
        partial_sort_inplace(cur, k);
    }
    cur.data.truncate(k);
}

/// `llama_sampler_typical_apply`.
fn typical(cur: &mut Candidates, p: f32, min_keep: usize) {
    if p >= 1.0 {
        return;
    }
    softmax(cur, true);
    let mut entropy = 0.0f32;
    for t in &cur.data {
        entropy += -t.p * t.p.ln();
    }
    let shifted: Vec<f32> = cur
        .data
        .iter()
        .map(|t| (-t.p.ln() - entropy).abs())
        .collect();
    let mut indices: Vec<usize> = (0..cur.data.len()).collect();
    let n = indices.len();
    stl::sort(&mut indices, 0, n, &|&a: &usize, &b: &usize| {
        shifted[a] < shifted[b]
    });
    let mut cum_sum = 0.0f32;
    let mut last_idx = indices.len();
    for (i, &idx) in indices.iter().enumerate() {
        cum_sum += cur.data[idx].p;
        if cum_sum > p && (min_keep == 0 || i + 1 >= min_keep) {
            last_idx = i + 1;
            break;
        }
    }
    let new: Vec<TokenData> = indices[..last_idx].iter().map(|&i| cur.data[i]).collect();
    cur.data = new;
    cur.sorted = false;
}

/// `llama_sampler_top_p_apply`.
fn top_p(cur: &mut Candidates, p: f32, min_keep: usize) {
    if p >= 1.0 {
        return;
    }
    softmax(cur, false);
    let size = cur.data.len();
    let mut k = size;
    let mut buf: Option<Vec<TokenData>> = None;
    if !cur.sorted && size > 1024 {
        k = 256.min(size);
        buf = Some(bucket_partial_sort(&cur.data, k));
    } else if !cur.sorted {
        partial_sort_inplace(cur, k);
    }
    let mut cum_sum = 0.0f32;
    let mut last_idx = size;
    let mut i = 0;
    while i < size {
        let pi = match &buf {
            Some(b) => b[i].p,
            None => cur.data[i].p,
        };
        cum_sum += pi;
        if cum_sum >= p && i + 1 >= min_keep {
            last_idx = i + 1;
            break;
        }
        if !cur.sorted && i == k - 1 {
            k = size;
            buf = Some(bucket_partial_sort(&cur.data, k));
        }
        i += 1;
    }
    if !cur.sorted {
        if let Some(b) = &buf {
            cur.data[..last_idx].copy_from_slice(&b[..last_idx]);
        }
        cur.sorted = true;
    }
    cur.data.truncate(last_idx);
}

/// `llama_sampler_min_p_apply`.
fn min_p(cur: &mut Candidates, p: f32, min_keep: usize) {
    if p <= 0.0 || cur.data.is_empty() {
        return;
    }
    let mut applied = false;
    if !cur.sorted {
        let mut max_logit = -f32::MAX;
        for t in &cur.data {
            max_logit = fmax(max_logit, t.logit);
        }
        let min_logit = max_logit + p.ln();
        let filtered: Vec<TokenData> = cur
            .data
            .iter()
            .copied()
            .filter(|t| t.logit >= min_logit)
            .collect();
        if !filtered.is_empty() && filtered.len() >= min_keep {
            cur.data = filtered;
            applied = true;
        }
    }
    if !applied {
        if !cur.sorted {
            let n = cur.data.len();
            partial_sort_inplace(cur, n);
        }
        let min_logit = cur.data[0].logit + p.ln();
        let mut i = 1;
        while i < cur.data.len() {
            if cur.data[i].logit < min_logit && i >= min_keep {
                break;
            }
            i += 1;
        }
        cur.data.truncate(i);
    }
}

/// `llama_sample_xtc_apply`, with the random draw replaced by `branch`.
fn xtc_apply(
    cur: &mut Candidates,
    probability: f32,
    threshold: f32,
    min_keep: usize,
    branch: XtcBranch,
) -> bool {
    if probability <= 0.0 || threshold > 0.5 || cur.data.len() < 2 {
        return false;
    }
    if branch == XtcBranch::Skipped {
        return true;
    }
    softmax(cur, true);
    let mut pos_last = 0;
    for (i, t) in cur.data.iter().enumerate() {
        if t.p >= threshold {
            pos_last = i;
        } else {
            break;
        }
    }
    if cur.data.len() - pos_last >= min_keep && pos_last > 0 {
        cur.data.drain(..pos_last);
    }
    true
}

/// The weight of XTC's "applied" branch: the share of the 2^32 outputs `x`
/// of its `std::mt19937` for which `uniform_real_distribution<float>` gives
/// `chance <= probability` (`chance = float(x) / 2^32`, or the float just
/// below 1 when that rounds to 1).
pub(crate) fn xtc_applied_weight(probability: f32) -> f64 {
    // float(x) / 2^32 <= probability  <=>  float(x) <= probability * 2^32
    // (an exact power-of-two scaling), and float(x) is monotone in x, so the
    // outputs that qualify are 0..=x_max for the largest such x. Binary search.
    let below_one = 1.0f32.next_down();
    let chance = |x: u32| -> f32 {
        let r = x as f32 / 4_294_967_296.0f32;
        if r >= 1.0 { below_one } else { r }
    };
    if chance(u32::MAX) <= probability {
        return 1.0;
    }
    if chance(0) > probability {
        return 0.0;
    }
    let (mut lo, mut hi) = (0u64, u64::from(u32::MAX)); // chance(lo) <= p < chance(hi)
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if chance(mid as u32) <= probability {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (lo + 1) as f64 / 4_294_967_296.0
}

/// `llama_sampler_temp_ext_apply`.
fn temp_ext(cur: &mut Candidates, temp: f32, delta: f32, exponent: f32) {
    if delta > 0.0 {
        let min_temp = 0.0f32.max(temp - delta);
        let max_temp = temp + delta;
        if cur.data.len() <= 1 {
            return;
        }
        let max_entropy = -(1.0f32 / cur.data.len() as f32).ln();
        softmax(cur, true);
        let mut entropy = 0.0f32;
        for t in &cur.data {
            if t.p > 0.0 {
                entropy -= t.p * t.p.ln();
            }
        }
        let normalized = entropy / max_entropy;
        let dyn_temp = min_temp + (max_temp - min_temp) * normalized.powf(exponent);
        temp_impl(cur, dyn_temp);
        let max_l = f64::from(cur.data[0].logit);
        let mut cum = 0.0f64;
        for t in &mut cur.data {
            let p = (f64::from(t.logit) - max_l).exp();
            t.p = p as f32;
            cum += p;
        }
        for t in &mut cur.data {
            t.p = (f64::from(t.p) / cum) as f32;
        }
    } else {
        temp_impl(cur, temp);
    }
}

/// What `llama_sampler_dist_apply` leaves and draws from: the candidates in
/// array order with their unnormalised `expf(logit - max)` (the weights the
/// draw scans), their sum in double, and the normalised p it writes back.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Dist {
    pub(crate) ids: Vec<i32>,
    weights: Vec<f32>,
    sum: f64,
    /// `p` as llama.cpp leaves it in the array (float).
    pub(crate) p: Vec<f32>,
}

impl Dist {
    /// The softmax part of `llama_sampler_dist_apply`.
    pub(crate) fn new(cur: &Candidates) -> Self {
        let ids: Vec<i32> = cur.data.iter().map(|t| t.id).collect();
        if cur.data.len() == 1 {
            return Self {
                ids,
                weights: vec![1.0],
                sum: 1.0,
                p: vec![1.0],
            };
        }
        let mut max_l = cur.data[0].logit;
        if !cur.sorted {
            for t in &cur.data[1..] {
                max_l = fmax(max_l, t.logit);
            }
        }
        let weights: Vec<f32> = cur.data.iter().map(|t| (t.logit - max_l).exp()).collect();
        let sum: f64 = weights.iter().fold(0.0, |s, &w| s + f64::from(w));
        let p = weights
            .iter()
            .map(|&w| (f64::from(w) / sum) as f32)
            .collect();
        Self {
            ids,
            weights,
            sum,
            p,
        }
    }

    /// The token the draw picks for a given number of the distribution
    /// (no candidate reached: the last one, as llama.cpp falls back).
    pub(crate) fn pick(&self, rnd: f64) -> i32 {
        if self.ids.len() == 1 {
            return self.ids[0];
        }
        let target = self.sum * rnd;
        let mut run = 0.0f64;
        for (i, &w) in self.weights.iter().enumerate() {
            run += f64::from(w);
            if run >= target {
                return self.ids[i];
            }
        }
        self.ids[self.ids.len() - 1]
    }

    /// The normaliser is NaN (all candidates -inf, or an infinite logit):
    /// every draw falls back to the last candidate.
    pub(crate) fn degenerate(&self) -> bool {
        self.sum.is_nan()
    }

    /// One real draw: `dist` takes one `uniform_real_distribution<double>`
    /// number per application, even when one candidate is left.
    pub(crate) fn draw(&self, rng: &mut Mt19937) -> i32 {
        let rnd = rng.uniform_f64();
        self.pick(rnd)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cands(logits: &[f32]) -> Candidates {
        Candidates::from_logits(logits)
    }

    #[test]
    fn buckets_follow_the_float_formula_and_x86_conversion() {
        // 6.4 * val + 64, truncated toward zero, clamped to 0..=127
        assert_eq!(bucket_of(0.0), 64);
        assert_eq!(bucket_of(-0.1), 63); // 63.36
        assert_eq!(bucket_of(9.99), 127);
        assert_eq!(bucket_of(100.0), 127);
        assert_eq!(bucket_of(-100.0), 0);
        assert_eq!(bucket_of(f32::NEG_INFINITY), 0);
        // +inf converts to INT_MIN on x86-64, so it lands in bucket 0
        assert_eq!(bucket_of(f32::INFINITY), 0);
    }

    #[test]
    fn top_k_keeps_exactly_k_even_on_ties() {
        let mut c = cands(&[3.0, 2.0, 2.0, 1.0]);
        top_k(&mut c, 2);
        assert_eq!(c.data.len(), 2);
        assert_eq!(c.data[0].id, 0);
        assert!(c.sorted);
    }

    #[test]
    fn greedy_temperature_masks_all_but_the_first_maximum() {
        let mut c = cands(&[1.0, 3.0, 3.0, 2.0]);
        temp_impl(&mut c, 0.0);
        let l: Vec<f32> = c.data.iter().map(|t| t.logit).collect();
        assert_eq!(
            l,
            vec![f32::NEG_INFINITY, 3.0, f32::NEG_INFINITY, f32::NEG_INFINITY]
        );
    }

    #[test]
    fn penalty_divides_positive_multiplies_non_positive_once() {
        // counts over the last 3 ids [2, 1, 1]: id 1 twice, id 2 once
        let counts = PenaltyCounts::new(&[0, 2, 1, 1], 3);
        let mut c = cands(&[2.0, 2.0, -2.0, 0.0]);
        penalties(&mut c, &counts, 2.0, 0.5, 0.25);
        let l: Vec<f32> = c.data.iter().map(|t| t.logit).collect();
        // id 0 outside the window; id 1: 2/2 - 2*0.5 - 0.25 = -0.25;
        // id 2: -2*2 - 0.5 - 0.25 = -4.75
        assert_eq!(l, vec![2.0, -0.25, -4.75, 0.0]);
    }

    #[test]
    fn xtc_weight_is_the_share_of_outputs() {
        assert_eq!(xtc_applied_weight(1.0), 1.0);
        // only x = 0 gives chance 0 (small integers are exact floats)
        assert_eq!(xtc_applied_weight(0.0), 1.0 / 4_294_967_296.0);
        // p = 0.5: float(x) <= 2^31 for x <= 2^31 + 128 (ties to even at the
        // midpoint 2^31 + 128 round down to 2^31): 2^31 + 129 outputs
        assert_eq!(
            xtc_applied_weight(0.5),
            (2_147_483_648.0 + 129.0) / 4_294_967_296.0
        );
    }

    #[test]
    fn dist_scans_in_array_order_and_falls_back_to_the_last() {
        let mut c = cands(&[0.0, 0.0]);
        c.sorted = false;
        let d = Dist::new(&c);
        assert_eq!(d.p, vec![0.5, 0.5]);
        assert_eq!(d.pick(0.0), 0);
        assert_eq!(d.pick(0.5), 0); // run 1 >= 2 * 0.5
        assert_eq!(d.pick(0.75), 1);
        let nan = Dist::new(&cands(&[f32::NEG_INFINITY, f32::NEG_INFINITY]));
        assert!(nan.degenerate());
        assert_eq!(nan.pick(0.3), 1);
    }
}
