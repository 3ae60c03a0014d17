//! Top-p on the fast path: exact over the candidates of a top-k (the `-inf`
//! block sorts first), and certified by interval bounds over all V scores
//! (the module docs of `fast` give the argument).

use super::dispatch::dispatch;
use super::scan::collect_ge;
use super::{BINS, HfSampler, exact_exps, lane_sum_at};
use replicas::torch::LANES;

use super::exp::{FAST_EXP_ABS, FAST_EXP_REL};

/// `ln(2^-12)`: scores this far below the maximum form the small group of
/// [`HfSampler::top_p_dense`] (about 0.1% of a SmolLM2-like vocabulary lies
/// above it, so most 64-entry blocks are skipped).
const SMALL_LN: f32 = -8.317_766;

impl HfSampler {
    /// Top-p over the candidates of a top-k (all others `-inf`), exact.
    /// Leaves the survivors in `cand`. `false` on a tie at the cut.
    pub(super) fn top_p_sparse(&mut self, v: usize, m: f32, thr: f32) -> bool {
        let n = self.cand.len();
        exact_exps(&self.cand, m, &mut self.exps);
        let sum = lane_sum_at((v - n..v).zip(self.exps.iter().copied()), v);
        let r = 1.0f32 / sum;
        match cut(&self.cand, &self.exps, thr, (r, r), (0.0, 0.0)) {
            Some(c) => {
                self.cand.drain(..c);
                true
            }
            None => false,
        }
    }

    /// Top-p over all V scores, certified by interval bounds (module docs).
    pub(super) fn top_p_dense(
        &mut self,
        x: &[f32],
        f: impl Fn(f32) -> f32 + Copy,
        m: f32,
        thr: f32,
    ) -> bool {
        let v = x.len();
        if v < LANES {
            return false;
        }
        let (total, _) = self.dense_exps(x, f, m);
        let (eta, zeta) = (FAST_EXP_REL, FAST_EXP_ABS);
        let edge = |k: usize| f32::from_bits((k as u32) << 20) as f64;
        let bin = |e: f32| (e.to_bits() >> 20) as usize & (BINS - 1);
        // The small group: scores below `y_eps` (exps below about 2^-12),
        // found by a pass that skips whole blocks under a vectorised max,
        // never get a bin of their own. They are one group of known count
        // and fast-exp mass that lies entirely in the tail, so only the few
        // elements above it are histogrammed. When the group's mass could
        // exceed the target (a flat distribution) or the cut falls inside
        // it, every element is histogrammed instead.
        let y_eps = m + SMALL_LN;
        let cand = &mut self.cand;
        dispatch!(self.isa, |lv| collect_ge(lv, x, f, y_eps, cand));
        let mut collected_fast = 0.0f64;
        for c in &self.cand {
            collected_fast += self.exps[c.1 as usize] as f64;
        }
        let f64_slack = v as f64 * f64::EPSILON * total;
        let n_small = v - self.cand.len();
        // Upper bound of the group's exact (SLEEF) mass.
        let small_hi =
            ((total - collected_fast).max(0.0) + f64_slack + n_small as f64 * zeta) / (1.0 - eta);
        let target = thr as f64 * total * (1.0 - eta) * 0.98;
        let grouped = 2 * self.cand.len() <= v && small_hi <= target;
        let hist = &mut self.hist;
        hist.iter_mut().for_each(|h| *h = 0);
        if grouped {
            for c in &self.cand {
                hist[bin(self.exps[c.1 as usize])] += 1;
            }
        } else {
            // Four interleaved sub-histograms, summed, so repeated bins do
            // not serialise.
            let mut quads = self.exps[..v].chunks_exact(4);
            for q in &mut quads {
                for (l, &e) in q.iter().enumerate() {
                    hist[l * BINS + bin(e)] += 1;
                }
            }
            for &e in quads.remainder() {
                hist[bin(e)] += 1;
            }
            for b in 0..BINS {
                hist[b] = hist[b] + hist[BINS + b] + hist[2 * BINS + b] + hist[3 * BINS + b];
            }
        }
        let (n_small, small_hi) = if grouped {
            (n_small, small_hi)
        } else {
            (0, 0.0)
        };
        let hist = &hist[..BINS];
        // Largest bin b whose lower bins hold (upper bound) <= 98% of the
        // removable mass; everything below it is the tail.
        let mut below = small_hi;
        let mut b = 0;
        for (k, &count) in hist.iter().enumerate() {
            let mass = count as f64 * (edge(k + 1) * (1.0 + eta) + zeta);
            if below + mass > target {
                break;
            }
            below += mass;
            b = k + 1;
        }
        if b == 0 || b >= BINS {
            return false;
        }
        let lower_b = edge(b);
        if lower_b < 1e-30 {
            return false;
        }
        // Tail: y < y_tau implies fast exp < lower_b (margin 1e-3 >> errors).
        let y_tau = m + (lower_b.ln() - 1e-3 - (m.abs() as f64) * 1e-6) as f32;
        if grouped {
            // The cut must lie above the group (then the candidates are
            // among the collected elements).
            if y_tau < y_eps {
                return false;
            }
            self.cand.retain(|c| c.0 >= y_tau);
        } else {
            let cand = &mut self.cand;
            dispatch!(self.isa, |lv| collect_ge(lv, x, f, y_tau, cand));
        }
        let mut cand_fast = 0.0f64;
        for c in &self.cand {
            cand_fast += self.exps[c.1 as usize] as f64;
        }
        let n = self.cand.len();
        let n_tail = v - n;
        if n > v / 2 {
            return false;
        }
        self.cand.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
        // `exps` held the fast exps; from here it holds the candidates' exact ones.
        exact_exps(&self.cand, m, &mut self.exps);
        let cand_exact: f64 = self.exps.iter().map(|&e| e as f64).sum();

        // Tail sum of exact exps, from the fast ones.
        let tail_fast = (total - cand_fast).max(0.0);
        let tail_lo = ((tail_fast - f64_slack - n_tail as f64 * zeta) / (1.0 + eta)).max(0.0);
        let tail_hi = (tail_fast + f64_slack + n_tail as f64 * zeta) / (1.0 - eta);

        // Running-error bound of the sorted 16-lane f32 sum: each element is
        // in at most ceil((V - pos) / 16) partial sums of its lane, then 4
        // tree additions; every addition errs by at most u * |partial sum|.
        let u = 1.0 / (1u64 << 24) as f64;
        let mut weighted = 0.0;
        for (j, &e) in self.exps.iter().enumerate() {
            let pos = n_tail + j;
            weighted += e as f64 * (v - pos).div_ceil(LANES) as f64;
        }
        // The small group sorts first (weight at most ceil(V / 16)); it
        // sorts before bin k once bin k's edge clears its largest exact exp
        // by two bins, as the bins themselves do.
        weighted += small_hi * v.div_ceil(LANES) as f64;
        let eps_hi = ((y_eps - m) as f64).exp() * (1.0 + 1e-5) + zeta;
        let mut n_small_left = n_small;
        let mut below2 = 0usize; // elements in bins <= k - 2: sorted before bin k
        for k in 0..b {
            if k >= 2 {
                below2 += hist[k - 2] as usize;
                if n_small_left > 0 && edge(k - 2) >= eps_hi {
                    below2 += std::mem::take(&mut n_small_left);
                }
            }
            let e_hi = (edge(k + 1) + zeta) / (1.0 - eta);
            weighted += hist[k] as f64 * e_hi * (v - below2).div_ceil(LANES) as f64;
        }
        let sum_lo = tail_lo + cand_exact;
        let sum_hi = tail_hi + cand_exact;
        let err = 1.01 * u * (weighted + 4.0 * sum_hi);
        let (s_lo, s_hi) = (sum_lo - err, sum_hi + err);
        if s_lo <= 0.0 {
            return false;
        }
        let r_lo = 1.0f32 / f32_up(s_hi);
        let r_hi = 1.0f32 / f32_down(s_lo);
        // The reference's cumsum over the tail (f64 prefix sums of f32 probs).
        let half_ulp = 1.0 / (1u64 << 24) as f64;
        let tiny = n_tail as f64 * f64::from_bits(1); // subnormal rounding
        let acc_slack = n_tail as f64 * f64::EPSILON;
        let tail_p_lo = (r_lo as f64 * tail_lo * (1.0 - half_ulp) - 2e-45 * n_tail as f64).max(0.0)
            * (1.0 - acc_slack)
            - tiny;
        let tail_p_hi =
            (r_hi as f64 * tail_hi * (1.0 + half_ulp) + 2e-45 * n_tail as f64) * (1.0 + acc_slack);
        if tail_p_hi > thr as f64 {
            return false;
        }
        match cut(
            &self.cand,
            &self.exps,
            thr,
            (r_lo, r_hi),
            (tail_p_lo.max(0.0), tail_p_hi),
        ) {
            Some(c) => {
                self.cand.drain(..c);
                true
            }
            None => false,
        }
    }
}

/// Index (into the ascending candidates) of the first position top-p keeps,
/// deciding each position with bounds: `r` in `r_bounds`, the cumsum before the
/// first candidate in `acc0`. `None` when undecided or on a tie at the cut.
fn cut(
    cand: &[(f32, u32)],
    exps: &[f32],
    thr: f32,
    r_bounds: (f32, f32),
    acc0: (f64, f64),
) -> Option<usize> {
    let n = cand.len();
    let (mut lo, mut hi) = acc0;
    let mut first_kept = n.saturating_sub(1);
    for (j, &e) in exps.iter().enumerate().take(n.saturating_sub(1)) {
        lo += (e * r_bounds.0) as f64;
        hi += (e * r_bounds.1) as f64;
        if hi as f32 <= thr {
            continue;
        }
        if lo as f32 > thr {
            first_kept = j;
            break;
        }
        return None;
    }
    if first_kept > 0 && cand[first_kept - 1].0 == cand[first_kept].0 {
        return None;
    }
    Some(first_kept)
}

fn f32_up(x: f64) -> f32 {
    let f = x as f32;
    if (f as f64) < x { f.next_up() } else { f }
}

fn f32_down(x: f64) -> f32 {
    let f = x as f32;
    if (f as f64) > x { f.next_down() } else { f }
}
