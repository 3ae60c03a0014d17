//! [`HfSampler`]: transformers' per-step distribution for generation loops,
//! without full-vocabulary sorts and without allocating per token.
//!
//! # Why it is exact
//!
//! The reference ([`crate::process`]) applies the processors to all V scores,
//! sorts all V for top-p, and takes a softmax over all V. The kept set and the
//! probabilities only depend on a few quantities, which this module computes
//! from a small *candidate* set, with the reference's own f32 operations:
//!
//! - **Scores.** Penalty and temperature are the reference's element-wise f32
//!   operations (`s * p` / `s / p` on seen ids, then `s / T`), so the processed
//!   scores `y` are bit-identical. Both are monotone, so selecting on `y` is
//!   selecting on transformers' scores.
//! - **Top-k** keeps `{y >= k-th largest y}` (ties with the k-th included). A
//!   threshold filter with a running k-th value collects every element `>=` the
//!   final k-th value, so the kept set is the reference's. No exp is taken over
//!   the vocabulary.
//! - **Softmax** (`torch::softmax`): `e = sleef_expf(y - max)`, a 16-lane f32 sum
//!   where element at position `pos` goes to lane `pos % 16` in position order,
//!   `p = e * (1 / sum)`. Entries filtered to `-inf` have `e = 0` and adding
//!   `0.0` to a lane is exact, so the sum over the survivors, lane by lane in
//!   position order, is bit-identical to the full-V sum. The final
//!   probabilities of every sparse step are therefore the reference's bit for bit.
//! - **Top-p after top-k**: the reference sorts V values of which only the
//!   candidates are finite. The `-inf` block sorts first, so candidate `j`
//!   (ascending) sits at position `V - n + j`: the sorted softmax's lane sum, the
//!   f64 cumsum and the cut are replayed exactly on the candidates.
//! - **Top-p without top-k** (no `-inf` block): the sorted lane sum depends on
//!   the order of all V values. It is *bounded* instead of computed: a fast exp
//!   with a verified error bound ([`FAST_EXP_REL`]), a 1,024-bin histogram of its
//!   values (which bounds every element's sorted position from below) and the
//!   running-error bound of recursive f32 summation give an interval for the
//!   sum, hence for `1 / sum` and for every cumsum. A threshold on `y` (from the
//!   histogram) splits off a tail that is provably removed; the candidates above
//!   it are sorted and the cut is decided with interval arithmetic (f32/f64
//!   rounding is monotone, so bounds computed with the reference's operations
//!   bracket its values). When an interval straddles the threshold the step is
//!   not certified and falls back to the reference.
//! - **Min-p without a truncation before it**: `p < min_p * max(p)` with
//!   `max(p) = 1 / sum` is `e < min_p` except within two ulps of `min_p` (then
//!   it depends on the sum: fallback). Only candidates with `y - max >=
//!   ln(min_p) - 0.01` need an exact exp.
//! - **Ties at a top-p cut**: which of several equal scores survive depends on
//!   torch's introsort order over the whole vector; such steps fall back to the
//!   reference, which replays that sort.
//! - **No truncation** (temperature / penalty only): every entry is kept when
//!   `min(y) - max >= -87` (then `p >= 2^-126 / V > 0`); the probabilities use
//!   the fast exp (within [`FAST_EXP_REL`] relative of the reference's), the
//!   kept set is exact. Otherwise: fallback.
//!
//! Typical, epsilon and eta always take the reference path ([`StepPath::Reference`]),
//! as do invalid inputs (NaN, `+inf`, all `-inf`, negative ids), so the errors
//! are the reference's errors.

use rand::Rng;

use crate::torch::{self, sleef_expf};
use crate::{GenerationParams, HfError, Processor};

/// Relative error bound of the fast exp against the reference's SLEEF exp,
/// with an absolute slack of [`FAST_EXP_ABS`] (checked on every f32 in
/// `[-104, 0]` by the ignored test `fast_exp_bound_exhaustive`).
pub const FAST_EXP_REL: f64 = 1.0 / (1u64 << 20) as f64;
/// Absolute slack of the fast exp bound (covers subnormal results).
pub const FAST_EXP_ABS: f64 = 1.0e-38;

use crate::torch::LANES;
/// Histogram bins: f32 bit pattern of a value in `[0, 1]` shifted right by 20
/// (exponent and 3 mantissa bits): neighbouring bin edges differ by >= 1/16.
const BINS: usize = 1024;
const CHUNK: usize = 1024;

/// How the last step's distribution was computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepPath {
    /// Greedy: the first argmax of the processed scores.
    Greedy,
    /// No truncation: every entry kept, probabilities from the fast exp.
    Dense,
    /// Truncated: candidates only, probabilities bit-identical to the reference's.
    Sparse,
    /// The reference ([`crate::process`]) ran: typical/epsilon/eta, invalid
    /// input, a tie at a top-p cut, or an uncertified boundary.
    Reference,
}

/// One step's distribution as computed by [`HfSampler::distribution`].
#[derive(Debug, Clone, Copy)]
pub struct Distribution<'a> {
    /// Kept token ids, ascending (`probs > 0` in the reference).
    pub kept: &'a [u32],
    /// Their probabilities (same order).
    pub probs: &'a [f32],
    /// Which path computed them.
    pub path: StepPath,
}

#[derive(Debug, Clone, Copy)]
struct Plan {
    penalty: Option<f32>,
    temperature: Option<f32>,
    top_k: Option<usize>,
    /// `(float)(1 - top_p)`.
    top_p: Option<f32>,
    min_p: Option<f32>,
    reference_only: bool,
    do_sample: bool,
}

impl Plan {
    fn new(params: &GenerationParams) -> Result<Self, HfError> {
        let mut plan = Plan {
            penalty: None,
            temperature: None,
            top_k: None,
            top_p: None,
            min_p: None,
            reference_only: false,
            do_sample: params.do_sample,
        };
        for p in params.processors()? {
            match p {
                Processor::RepetitionPenalty { penalty } => plan.penalty = Some(penalty as f32),
                Processor::Temperature { temperature } => {
                    plan.temperature = Some(temperature as f32);
                }
                Processor::TopK { top_k } => plan.top_k = Some(top_k.max(1)),
                Processor::TopP { top_p } => plan.top_p = Some((1.0 - top_p) as f32),
                // min_p = 0 removes nothing (`p < 0` never holds).
                Processor::MinP { min_p } => {
                    plan.min_p = Some(min_p as f32).filter(|&m| m != 0.0);
                }
                Processor::Typical { .. } | Processor::Epsilon { .. } | Processor::Eta { .. } => {
                    plan.reference_only = true;
                }
            }
        }
        Ok(plan)
    }
}

/// The context seen so far, kept incrementally: a copy of the ids (to check
/// that a new context extends the old one) and a bitset of distinct ids < V.
#[derive(Debug, Default, Clone)]
struct Context {
    ids: Vec<i64>,
    bits: Vec<u64>,
    seen: Vec<u32>,
    vocab: usize,
}

impl Context {
    /// Bring the set up to `ctx`; `Err(())` on a negative id.
    fn update(&mut self, ctx: &[i64], vocab: usize) -> Result<(), ()> {
        let extends = vocab == self.vocab
            && ctx.len() >= self.ids.len()
            && ctx[..self.ids.len()] == self.ids[..];
        if !extends {
            self.ids.clear();
            self.seen.clear();
            self.bits.clear();
            self.bits.resize(vocab.div_ceil(64), 0);
            self.vocab = vocab;
        }
        let start = self.ids.len();
        for &id in &ctx[start..] {
            if id < 0 {
                // Leave the set consistent with `ids` so the next call rebuilds.
                self.vocab = usize::MAX;
                return Err(());
            }
            self.ids.push(id);
            if let Ok(i) = usize::try_from(id)
                && i < vocab
            {
                let (w, b) = (i / 64, i % 64);
                if self.bits[w] & (1 << b) == 0 {
                    self.bits[w] |= 1 << b;
                    self.seen.push(i as u32);
                }
            }
        }
        Ok(())
    }
}

/// transformers' sampling for a generation loop: build once from
/// [`GenerationParams`], then call [`HfSampler::sample`] per step.
///
/// Per step it takes the logits (`&[f32]`, length V) and the context (prompt
/// and generated ids, as [`crate::process`] takes them) and draws the next token
/// from exactly the distribution transformers samples from: the same kept set
/// as [`crate::process`] and, on truncated steps, the same probabilities bit
/// for bit (see the module docs for why, and [`StepPath`] for the cases that run the
/// reference). Buffers are reused: after the first step at a given V no call
/// allocates, except on the reference path. The context may grow between
/// calls; ids already seen are not re-inserted (the repetition penalty keeps a
/// set of seen ids and only adds the new suffix).
///
/// Greedy parameters (`do_sample = false`) return the first argmax of the
/// penalised scores, as transformers does.
#[derive(Debug, Clone)]
pub struct HfSampler {
    params: GenerationParams,
    plan: Plan,
    ctx: Context,
    work: Vec<f32>,
    cand: Vec<(f32, u32)>,
    exps: Vec<f32>,
    chunk_sums: Vec<f64>,
    dense_total: f64,
    dense_inv: f32,
    hist: Vec<u32>,
    kept: Vec<u32>,
    probs: Vec<f32>,
    path: StepPath,
}

impl HfSampler {
    /// A sampler for these parameters. Errors where transformers' processor
    /// constructors raise (see [`GenerationParams::processors`]).
    pub fn new(params: &GenerationParams) -> Result<Self, HfError> {
        Ok(Self {
            params: params.clone(),
            plan: Plan::new(params)?,
            ctx: Context::default(),
            work: Vec::new(),
            cand: Vec::new(),
            exps: Vec::new(),
            chunk_sums: Vec::new(),
            dense_total: 0.0,
            dense_inv: 0.0,
            hist: vec![0; 4 * BINS],
            kept: Vec::new(),
            probs: Vec::new(),
            path: StepPath::Reference,
        })
    }

    /// The parameters this sampler was built from.
    pub fn params(&self) -> &GenerationParams {
        &self.params
    }

    /// Draw the next token for `logits` after `context`. Errors as
    /// [`crate::process`] does.
    pub fn sample<R: Rng + ?Sized>(
        &mut self,
        logits: &[f32],
        context: &[i64],
        rng: &mut R,
    ) -> Result<usize, HfError> {
        self.step(logits, context)?;
        Ok(self.draw(rng))
    }

    /// The distribution of the step (computes it; allocates an id list the
    /// first time a dense step is inspected).
    pub fn distribution(
        &mut self,
        logits: &[f32],
        context: &[i64],
    ) -> Result<Distribution<'_>, HfError> {
        self.step(logits, context)?;
        if self.path == StepPath::Dense {
            let v = logits.len();
            let inv = self.dense_inv;
            self.kept.clear();
            self.kept.extend(0..v as u32);
            self.probs.clear();
            self.probs.extend(self.exps[..v].iter().map(|&e| e * inv));
        }
        Ok(Distribution {
            kept: &self.kept,
            probs: &self.probs,
            path: self.path,
        })
    }

    /// Which path the last step took.
    pub fn last_path(&self) -> StepPath {
        self.path
    }

    fn draw<R: Rng + ?Sized>(&self, rng: &mut R) -> usize {
        if self.path == StepPath::Dense {
            let mut u = rng.random::<f64>() * self.dense_total;
            let mut start = 0;
            for (c, &s) in self.chunk_sums.iter().enumerate() {
                if u < s || c + 1 == self.chunk_sums.len() {
                    start = c * CHUNK;
                    break;
                }
                u -= s;
            }
            let end = (start + CHUNK).min(self.exps.len());
            let mut acc = 0.0f64;
            let mut last = start;
            for (i, &e) in self.exps[start..end].iter().enumerate() {
                if e > 0.0 {
                    acc += e as f64;
                    last = start + i;
                    if u < acc {
                        return start + i;
                    }
                }
            }
            return last;
        }
        let total: f64 = self.probs.iter().map(|&p| p as f64).sum();
        let u = rng.random::<f64>() * total;
        let mut acc = 0.0;
        for (&id, &p) in self.kept.iter().zip(&self.probs) {
            acc += p as f64;
            if u < acc {
                return id as usize;
            }
        }
        self.kept.last().map_or(0, |&id| id as usize)
    }

    fn reference(&mut self, logits: &[f32], context: &[i64]) -> Result<(), HfError> {
        let out = crate::process(logits, context, &self.params)?;
        self.kept.clear();
        self.probs.clear();
        for &i in &out.kept {
            self.kept.push(i as u32);
            self.probs.push(out.probs[i]);
        }
        self.path = StepPath::Reference;
        Ok(())
    }

    fn step(&mut self, logits: &[f32], context: &[i64]) -> Result<(), HfError> {
        let v = logits.len();
        if v == 0 || self.plan.reference_only || v >= 1 << 24 {
            return self.reference(logits, context);
        }
        if self.ctx.update(context, v).is_err() {
            return self.reference(logits, context);
        }
        let mut work = std::mem::take(&mut self.work);
        let result = self.step_on(logits, context, &mut work);
        self.work = work;
        result
    }

    fn step_on(
        &mut self,
        logits: &[f32],
        context: &[i64],
        work: &mut Vec<f32>,
    ) -> Result<(), HfError> {
        let plan = self.plan;
        // Penalised scores are materialised; a temperature alone is applied
        // on the fly (`x / t`, the reference's f32 division).
        let (x, t): (&[f32], Option<f32>) = if plan.penalty.is_some() {
            processed_scores(logits, &self.ctx.seen, plan.penalty, plan.temperature, work);
            (work, None)
        } else {
            (logits, plan.temperature)
        };
        let v = x.len();
        if !plan.do_sample {
            let (_, _, ok) = scan_max(x, |s| s);
            if !ok {
                return self.reference(logits, context);
            }
            // `ok`: no NaN, so the plain first argmax is torch's.
            let best = torch::argmax_first(x);
            self.kept.clear();
            self.kept.push(best as u32);
            self.probs.clear();
            self.probs.push(1.0);
            self.path = StepPath::Greedy;
            return Ok(());
        }

        // Candidates (ascending by score after top-k); `false` = not certified.
        let (m, certified) = if let Some(k) = plan.top_k {
            let (m, ok) = with_map!(t, |f| scan_top_k(x, f, k, &mut self.cand));
            let mut certified = ok && m > f32::NEG_INFINITY;
            if certified {
                self.cand.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
                if let Some(thr) = plan.top_p {
                    certified = self.top_p_sparse(v, m, thr);
                }
            }
            (m, certified)
        } else if let (None, Some(mp)) = (plan.top_p, plan.min_p) {
            let off = ((mp as f64).ln() - 0.01) as f32;
            let (m, ok) = with_map!(t, |f| scan_min_p(x, f, off, &mut self.cand));
            (m, ok && m > f32::NEG_INFINITY && self.min_p_dense(m, mp))
        } else {
            let (m, min, ok) = with_map!(t, |f| scan_max(x, f));
            if !ok || m == f32::NEG_INFINITY {
                return self.reference(logits, context);
            }
            if let Some(thr) = plan.top_p {
                (m, with_map!(t, |f| self.top_p_dense(x, f, m, thr)))
            } else if v >= LANES && min - m >= -87.0 {
                let (total, lane_sum) = with_map!(t, |f| self.fast_exps(x, f, m));
                self.dense_total = total;
                self.dense_inv = 1.0 / lane_sum;
                self.path = StepPath::Dense;
                return Ok(());
            } else {
                (m, false)
            }
        };
        if !certified {
            return self.reference(logits, context);
        }
        // Survivors by index, exact exps, then min-p on the survivors.
        self.cand.sort_unstable_by_key(|c| c.1);
        self.cand.retain(|c| c.0 > f32::NEG_INFINITY);
        if let (Some(mp), true) = (plan.min_p, plan.top_k.is_some() || plan.top_p.is_some()) {
            self.softmax_by_index(v, m);
            let top = self.probs.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let scaled = mp * top;
            let mut j = 0;
            let probs = &self.probs;
            self.cand.retain(|_| {
                let keep = probs[j] >= scaled;
                j += 1;
                keep
            });
        }
        self.softmax_by_index(v, m);
        // The reference's kept set is `probs > 0`.
        self.kept.clear();
        self.kept.extend(self.cand.iter().map(|c| c.1));
        let mut j = 0;
        let probs = &self.probs;
        self.kept.retain(|_| {
            let keep = probs[j] > 0.0;
            j += 1;
            keep
        });
        self.probs.retain(|&p| p > 0.0);
        self.path = StepPath::Sparse;
        Ok(())
    }

    /// Softmax over the candidates (sorted by index, all others `-inf`), as
    /// `torch::softmax` over V: lane `index % 16`. Writes `probs`.
    fn softmax_by_index(&mut self, v: usize, m: f32) {
        exact_exps(&self.cand, m, &mut self.exps);
        let pos = self.cand.iter().map(|c| c.1 as usize);
        let sum = lane_sum_at(pos.zip(self.exps.iter().copied()), v);
        let r = 1.0f32 / sum;
        self.probs.clear();
        self.probs.extend(self.exps.iter().map(|&e| e * r));
    }

    /// Top-p over the candidates of a top-k (all others `-inf`), exact.
    /// Leaves the survivors in `cand`. `false` on a tie at the cut.
    fn top_p_sparse(&mut self, v: usize, m: f32, thr: f32) -> bool {
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
    fn top_p_dense(&mut self, x: &[f32], f: impl Fn(f32) -> f32 + Copy, m: f32, thr: f32) -> bool {
        let v = x.len();
        if v < LANES {
            return false;
        }
        let (total, _) = self.fast_exps(x, f, m);
        // Histogram of the fast exps: bin = bits >> 20 (four interleaved
        // sub-histograms, summed, so repeated bins do not serialise).
        let hist = &mut self.hist;
        hist.iter_mut().for_each(|h| *h = 0);
        let mut quads = self.exps[..v].chunks_exact(4);
        for q in &mut quads {
            for (l, &e) in q.iter().enumerate() {
                hist[l * BINS + ((e.to_bits() >> 20) as usize & (BINS - 1))] += 1;
            }
        }
        for &e in quads.remainder() {
            hist[(e.to_bits() >> 20) as usize & (BINS - 1)] += 1;
        }
        for b in 0..BINS {
            hist[b] = hist[b] + hist[BINS + b] + hist[2 * BINS + b] + hist[3 * BINS + b];
        }
        let hist = &hist[..BINS];
        let (eta, zeta) = (FAST_EXP_REL, FAST_EXP_ABS);
        let edge = |k: usize| f32::from_bits((k as u32) << 20) as f64;
        // Largest bin b whose lower bins hold (upper bound) <= 98% of the
        // removable mass; everything below it is the tail.
        let target = thr as f64 * total * (1.0 - eta) * 0.98;
        let mut below = 0.0;
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
        self.cand.clear();
        let mut cand_fast = 0.0f64;
        collect_ge(x, f, y_tau, &mut self.cand);
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
        let f64_slack = v as f64 * f64::EPSILON * total;
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
        let mut below2 = 0usize; // elements in bins <= k - 2: sorted before bin k
        for k in 0..b {
            if k >= 2 {
                below2 += hist[k - 2] as usize;
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

    /// Min-p over all V scores: candidates within `ln(min_p) - 0.01` of the
    /// max get an exact exp; kept iff `e >= min_p` outside a two-ulp band.
    fn min_p_dense(&mut self, m: f32, mp: f32) -> bool {
        if (mp as f64) < 1e-30 {
            return false;
        }
        let band = mp as f64 * (1.0 - 4.0 / (1u64 << 24) as f64);
        let mut ok = true;
        // The scan kept every `y >= running max + ln(min_p) - 0.01`, a superset
        // of `e >= band` (the margin dwarfs exp and rounding errors).
        self.cand.retain(|c| {
            let e = sleef_expf(c.0 - m);
            if (e as f64) < mp as f64 && (e as f64) >= band {
                ok = false;
            }
            e >= mp
        });
        ok
    }

    /// Fast exps of `y - m` into `exps` and per-chunk f64 sums (for drawing);
    /// returns the f64 total and the torch-order 16-lane f32 sum.
    fn fast_exps(&mut self, x: &[f32], f: impl Fn(f32) -> f32 + Copy, m: f32) -> (f64, f32) {
        self.exps.clear();
        self.exps.resize(x.len(), 0.0);
        self.chunk_sums.clear();
        let mut total = 0.0;
        let mut lanes = [0.0f32; LANES];
        for (out, inp) in self.exps.chunks_mut(CHUNK).zip(x.chunks(CHUNK)) {
            for (o, &s) in out.iter_mut().zip(inp) {
                *o = fast_exp(f(s) - m);
            }
            // CHUNK is a multiple of 16: element i lands in lane i % 16.
            let blocks = out.chunks_exact(LANES);
            let rest = blocks.remainder();
            for b in blocks {
                for l in 0..LANES {
                    lanes[l] += b[l];
                }
            }
            for (l, &e) in rest.iter().enumerate() {
                lanes[l] += e;
            }
            // The chunk's mass (for locating a draw): growth of the lane total.
            let now: f64 = lanes.iter().map(|&l| l as f64).sum();
            self.chunk_sums.push(now - total);
            total = now;
        }
        (total, torch::fold_lanes(lanes))
    }
}

/// The reference's exps of the candidates, `sleef_expf(y - m)`, into `exps`.
fn exact_exps(cand: &[(f32, u32)], m: f32, exps: &mut Vec<f32>) {
    exps.clear();
    exps.extend(cand.iter().map(|c| sleef_expf(c.0 - m)));
}

/// `y` = penalty (on seen ids) then temperature, as the reference applies them.
fn processed_scores(
    logits: &[f32],
    seen: &[u32],
    penalty: Option<f32>,
    temperature: Option<f32>,
    work: &mut Vec<f32>,
) {
    work.clear();
    work.extend_from_slice(logits);
    if let Some(p) = penalty {
        for &i in seen {
            let s = work[i as usize];
            work[i as usize] = if s < 0.0 { s * p } else { s / p };
        }
    }
    if let Some(t) = temperature {
        for s in work.iter_mut() {
            *s /= t;
        }
    }
}

/// Run `$body` with `$f` bound to the score map: identity, or `x / t`.
macro_rules! with_map {
    ($t:expr, |$f:ident| $body:expr) => {
        match $t {
            None => {
                let $f = |s: f32| s;
                $body
            }
            Some(t) => {
                let $f = move |s: f32| s / t;
                $body
            }
        }
    };
}
use with_map;

const BLOCK: usize = 64;

/// Max, min and "no NaN / +inf" of `f` over `xs`, in 8 independent lanes
/// (so it vectorises); the remainder goes to lane 0.
#[inline(always)]
fn scan_max(xs: &[f32], f: impl Fn(f32) -> f32) -> (f32, f32, bool) {
    let mut mx = [f32::NEG_INFINITY; 8];
    let mut mn = [f32::INFINITY; 8];
    let mut ok = [true; 8];
    let chunks = xs.chunks_exact(8);
    let rest = chunks.remainder();
    for c in chunks {
        for l in 0..8 {
            let y = f(c[l]);
            ok[l] &= y < f32::INFINITY;
            mx[l] = if y > mx[l] { y } else { mx[l] };
            mn[l] = if y < mn[l] { y } else { mn[l] };
        }
    }
    for &x in rest {
        let y = f(x);
        ok[0] &= y < f32::INFINITY;
        mx[0] = if y > mx[0] { y } else { mx[0] };
        mn[0] = if y < mn[0] { y } else { mn[0] };
    }
    let (mut best, mut least) = (mx[0], mn[0]);
    for l in 1..8 {
        best = if mx[l] > best { mx[l] } else { best };
        least = if mn[l] < least { mn[l] } else { least };
    }
    (best, least, ok.iter().all(|&b| b))
}

/// Max and "all < +inf" of `f` over one block (the min, unused, is
/// optimised away).
#[inline(always)]
fn block_max(xs: &[f32], f: impl Fn(f32) -> f32) -> (f32, bool) {
    let (m, _, ok) = scan_max(xs, f);
    (m, ok)
}

/// One pass: max and validity of `f(x)`, and every `(f(x), i)` `>=` the k-th
/// largest (ties included), by a threshold filter whose threshold is the
/// running k-th value of the buffer. Blocks whose max is below the threshold
/// are skipped after a vectorised max.
fn scan_top_k(
    x: &[f32],
    f: impl Fn(f32) -> f32 + Copy,
    k: usize,
    cand: &mut Vec<(f32, u32)>,
) -> (f32, bool) {
    let k = k.min(x.len());
    cand.clear();
    let mut cap = (3 * k).max(128);
    let mut thr = f32::NEG_INFINITY;
    let (mut m, mut ok) = (f32::NEG_INFINITY, true);
    for (c, xs) in x.chunks(BLOCK).enumerate() {
        let (bm, bok) = block_max(xs, f);
        ok &= bok;
        m = if bm > m { bm } else { m };
        if bm < thr {
            continue;
        }
        push_ge(xs, f, thr, c * BLOCK, cand);
        if cand.len() >= cap {
            thr = kth_largest(cand, k);
            cand.retain(|c| c.0 >= thr);
            if cand.len() * 2 > cap {
                cap *= 2;
            }
        }
    }
    if ok && !cand.is_empty() {
        let kth = kth_largest(cand, k);
        cand.retain(|c| c.0 >= kth);
    }
    (m, ok)
}

/// One pass: max and validity of `f(x)`, and every `(f(x), i)` with
/// `f(x) >= max + off` (`off <= 0`), filtered with the final max.
fn scan_min_p(
    x: &[f32],
    f: impl Fn(f32) -> f32 + Copy,
    off: f32,
    cand: &mut Vec<(f32, u32)>,
) -> (f32, bool) {
    cand.clear();
    let (mut m, mut ok) = (f32::NEG_INFINITY, true);
    let mut thr = f32::NEG_INFINITY;
    for (c, xs) in x.chunks(BLOCK).enumerate() {
        let (bm, bok) = block_max(xs, f);
        ok &= bok;
        if bm > m {
            m = bm;
            thr = m + off;
        }
        if bm < thr {
            continue;
        }
        push_ge(xs, f, thr, c * BLOCK, cand);
    }
    cand.retain(|c| c.0 >= thr);
    (m, ok)
}

/// Append every `(f(x), base + j)` with `f(x) >= thr`, branch-free.
#[inline(always)]
fn push_ge(xs: &[f32], f: impl Fn(f32) -> f32, thr: f32, base: usize, cand: &mut Vec<(f32, u32)>) {
    let mut buf = [(0.0f32, 0u32); BLOCK];
    let mut n = 0;
    for (j, &x) in xs.iter().enumerate() {
        let y = f(x);
        buf[n] = (y, (base + j) as u32);
        n += usize::from(y >= thr);
    }
    cand.extend_from_slice(&buf[..n]);
}

/// Every `(f(x), i)` with `f(x) >= thr`.
fn collect_ge(x: &[f32], f: impl Fn(f32) -> f32 + Copy, thr: f32, cand: &mut Vec<(f32, u32)>) {
    cand.clear();
    for (c, xs) in x.chunks(BLOCK).enumerate() {
        let (bm, _) = block_max(xs, f);
        if bm < thr {
            continue;
        }
        push_ge(xs, f, thr, c * BLOCK, cand);
    }
}

fn kth_largest(cand: &mut [(f32, u32)], k: usize) -> f32 {
    if cand.len() <= k {
        return cand
            .iter()
            .fold(f32::INFINITY, |a, c| if c.0 < a { c.0 } else { a });
    }
    cand.select_nth_unstable_by(k - 1, |a, b| b.0.total_cmp(&a.0));
    cand[k - 1].0
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

/// `torch::lane_sum` over a V-long vector that is zero except at the given
/// ascending positions.
fn lane_sum_at(items: impl Iterator<Item = (usize, f32)>, v: usize) -> f32 {
    if v < LANES {
        let mut acc = 0.0f32;
        for (_, e) in items {
            acc += e;
        }
        return acc;
    }
    let mut acc = [0.0f32; LANES];
    for (pos, e) in items {
        acc[pos % LANES] += e;
    }
    torch::fold_lanes(acc)
}

fn f32_up(x: f64) -> f32 {
    let f = x as f32;
    if (f as f64) < x { f.next_up() } else { f }
}

fn f32_down(x: f64) -> f32 {
    let f = x as f32;
    if (f as f64) > x { f.next_down() } else { f }
}

/// SLEEF's `expf_u10` algorithm without fused multiply-adds and with a
/// branch-free rounding, so it vectorises on baseline x86-64. Within
/// [`FAST_EXP_REL`] relative (plus [`FAST_EXP_ABS`]) of [`sleef_expf`] for
/// every `d <= 0`; 0 below -104.
#[inline]
pub(crate) fn fast_exp(d: f32) -> f32 {
    const R_LN2F: f32 = std::f32::consts::LOG2_E;
    const MAGIC: f32 = 12_582_912.0; // 1.5 * 2^23: adding it rounds to an integer
    let l2uf = f32::from_bits(0x3f31_7200);
    let l2lf = f32::from_bits(0x35bf_be8e);
    let dc = d.max(-104.0);
    let tq = dc * R_LN2F + MAGIC;
    // tq = 1.5 * 2^23 + q with |q| <= 150: its low mantissa bits hold q.
    let qi = tq.to_bits() as i32 - MAGIC.to_bits() as i32;
    let q = tq - MAGIC;
    let s = dc - q * l2uf - q * l2lf;
    let mut u = f32::from_bits(0x3950_2bda);
    u = u * s + f32::from_bits(0x3ab6_96c9);
    u = u * s + f32::from_bits(0x3c08_88a6);
    u = u * s + f32::from_bits(0x3d2a_aa7a);
    u = u * s + f32::from_bits(0x3e2a_aaab);
    u = u * s + 0.5;
    u = 1.0 + (s * s * u + s);
    let h = qi >> 1;
    let p1 = f32::from_bits(((h + 127) as u32) << 23);
    let p2 = f32::from_bits(((qi - h + 127) as u32) << 23);
    let r = u * p1 * p2;
    if d < -104.0 { 0.0 } else { r }
}

#[doc(hidden)]
/// For tests: the fast exp and the reference exp.
pub fn exps_for_tests(d: f32) -> (f32, f32) {
    (fast_exp(d), torch::sleef_expf(d))
}

/// Synthetic LLM-like logits for benchmarks and tests (deterministic in
/// `seed`): a normal bulk (σ = 3) and a Zipf head of 64 tokens at random
/// positions with logit `ln V + 5.5 − 1.1 ln(1 + j)`, so the head holds ~90% of
/// the mass at every V. Shaped like SmolLM2's logits in `fixtures/smollm2`
/// (σ ≈ 3; max − mean 15.8–17.4 and a top-p 0.9 nucleus of 53–57 tokens at
/// V = 32,000–151,936, checked by `heavy_tailed_logits_look_like_smollm2`).
pub fn heavy_tailed_logits(v: usize, seed: u64) -> Vec<f32> {
    let mut state = seed ^ 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        // splitmix64
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut x: Vec<f32> = (0..v)
        .map(|_| {
            let (u1, u2) = (next().max(1e-300), next());
            (3.0 * (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()) as f32
        })
        .collect();
    let top = (v as f64).ln() + 5.5;
    for j in 0..64.min(v) {
        let pos = (next() * v as f64) as usize % v;
        x[pos] = (top - 1.1 * (1.0 + j as f64).ln()) as f32;
    }
    x
}
