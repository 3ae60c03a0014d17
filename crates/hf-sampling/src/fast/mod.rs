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
//!   with a verified error bound (`torch::FAST_EXP_REL`, 2^-20), a 1,024-bin histogram of its
//!   values (which bounds every element's sorted position from below) and the
//!   running-error bound of recursive f32 summation give an interval for the
//!   sum, hence for `1 / sum` and for every cumsum. A threshold on `y` (from the
//!   histogram) splits off a tail that is provably removed; the candidates above
//!   it are sorted and the cut is decided with interval arithmetic (f32/f64
//!   rounding is monotone, so bounds computed with the reference's operations
//!   bracket its values). When an interval straddles the threshold the step is
//!   not certified and falls back to the reference. Only scores within
//!   `ln 2^-12` of the maximum are histogrammed; the others form one group
//!   of known count and mass, in the tail, sorted first (weight at most
//!   `ceil(V / 16)`), unless its mass could reach the cut: then every score
//!   is histogrammed.
//! - **Min-p without a truncation before it**: `p < min_p * max(p)` with
//!   `max(p) = 1 / sum` is `e < min_p` except within two ulps of `min_p` (then
//!   it depends on the sum: fallback). Only candidates with `y - max >=
//!   ln(min_p) - 0.01` need an exact exp.
//! - **Ties at a top-p cut**: which of several equal scores survive depends on
//!   torch's introsort order over the whole vector; such steps fall back to the
//!   reference, which replays that sort.
//! - **No truncation** (temperature / penalty only): every entry is kept when
//!   `min(y) - max >= -87` (then `p >= 2^-126 / V > 0`), so the kept set is
//!   exact. The probabilities are `e * (1 / sum)` with the 16-lane sum in
//!   position order, as the reference's softmax, where `e` is a fast exp
//!   within `torch::FAST_EXP_REL` relative of the reference's (a degree-5
//!   polynomial by Estrin's scheme with FMAs on x86-64-v3, SLEEF's by
//!   Horner's without FMAs elsewhere: [`Dispatch`]). Otherwise: fallback.
//!
//! Typical, epsilon and eta always take the reference path ([`StepPath::Reference`]),
//! as do invalid inputs (NaN, `+inf`, all `-inf`, negative ids), so the errors
//! are the reference's errors.
//!
//! # Layout
//!
//! This module holds the sampler and its step logic; `scan` the one-pass
//! kernels that find the maximum and the candidates; `top_p` the exact top-p
//! after a top-k and the certificate for top-p over all V; `context` the
//! incremental set of seen ids; `dispatch` the runtime choice of SIMD level
//! every pass over the vocabulary runs at; `exp` the fast exps, bounded
//! against SLEEF's exp (`replicas::torch::sleef_expf`).

mod context;
mod dispatch;
mod exp;
mod scan;
mod top_p;

pub use dispatch::Dispatch;

use rand::Rng;

use crate::{GenerationParams, HfError, Processor};
use context::Context;
use dispatch::{Isa, Level, dispatch};
use replicas::torch::{self, LANES, sleef_expf};
use scan::{scan_min_p, scan_top_k, with_map};

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

/// One step of [`HfSampler::distribution`]: the kept ids and their
/// probabilities, sparse and borrowed from the sampler (no V-long copy per
/// step). [`parity_core::Distribution`] is the dense, owned form every
/// semantics returns; this is the fast path's own view of it.
#[derive(Debug, Clone, Copy)]
pub struct SamplerStep<'a> {
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
    /// Token constraints are set: the processor list is rebuilt per step
    /// (it depends on the prompt length) and its masks applied.
    stateful: bool,
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
            stateful: false,
            do_sample: params.do_sample,
        };
        for p in params.processors()? {
            match p {
                // 4.57.6 and 5.0.0 raise for an id >= V ([`crate::process`] checks).
                Processor::RepetitionPenalty { .. }
                    if params.transformers.penalty_gathers_every_id() =>
                {
                    plan.reference_only = true;
                }
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
                p if p.is_mask() => plan.stateful = true,
                // Typical, epsilon, eta, top-h, sequence bias, the length
                // penalty, inf/NaN removal and renormalisation.
                _ => plan.reference_only = true,
            }
        }
        // Which masks exist can depend on the prompt length (min_new_tokens,
        // begin_suppress_tokens): rebuild per step whenever any is set.
        let mut c = params.constraints.clone();
        (c.eos_token_id, c.max_length, c.max_new_tokens) = (None, None, None);
        plan.stateful |= c != crate::Constraints::default();
        Ok(plan)
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
    prompt_len: usize,
    isa: Isa,
}

impl HfSampler {
    /// A sampler for these parameters. Errors where transformers' processor
    /// constructors raise (see [`GenerationParams::processor_names`]).
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
            prompt_len: 0,
            isa: Isa::new(Dispatch::Native),
        })
    }

    /// The same sampler with its passes over the vocabulary run at `d`
    /// (default [`Dispatch::Native`]). Kept sets and truncated steps do not
    /// depend on it; see [`Dispatch`] for the one difference.
    #[must_use]
    pub fn with_dispatch(mut self, d: Dispatch) -> Self {
        self.set_dispatch(d);
        self
    }

    /// Run the passes over the vocabulary at `d` from the next step on.
    pub fn set_dispatch(&mut self, d: Dispatch) {
        self.isa = Isa::new(d);
    }

    /// The parameters this sampler was built from.
    pub fn params(&self) -> &GenerationParams {
        &self.params
    }

    /// Draw the next token for `logits` after `context` (all of it the
    /// prompt). Errors as [`crate::process`] does.
    pub fn sample<R: Rng + ?Sized>(
        &mut self,
        logits: &[f32],
        context: &[i64],
        rng: &mut R,
    ) -> Result<usize, HfError> {
        self.sample_at(logits, context, context.len(), rng)
    }

    /// [`Self::sample`] in a generation whose prompt was the first
    /// `prompt_len` ids of `context` (see [`crate::process_at`]).
    pub fn sample_at<R: Rng + ?Sized>(
        &mut self,
        logits: &[f32],
        context: &[i64],
        prompt_len: usize,
        rng: &mut R,
    ) -> Result<usize, HfError> {
        self.step(logits, context, prompt_len)?;
        Ok(self.draw(rng))
    }

    /// The distribution of the step (computes it; allocates an id list the
    /// first time a dense step is inspected).
    pub fn distribution(
        &mut self,
        logits: &[f32],
        context: &[i64],
    ) -> Result<SamplerStep<'_>, HfError> {
        self.distribution_at(logits, context, context.len())
    }

    /// [`Self::distribution`] in a generation whose prompt was the first
    /// `prompt_len` ids of `context` (see [`crate::process_at`]).
    pub fn distribution_at(
        &mut self,
        logits: &[f32],
        context: &[i64],
        prompt_len: usize,
    ) -> Result<SamplerStep<'_>, HfError> {
        self.step(logits, context, prompt_len)?;
        if self.path == StepPath::Dense {
            let v = logits.len();
            let inv = self.dense_inv;
            self.kept.clear();
            self.kept.extend(0..v as u32);
            self.probs.clear();
            self.probs.extend(self.exps[..v].iter().map(|&e| e * inv));
        }
        Ok(SamplerStep {
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
        let out = crate::process_at(logits, context, self.prompt_len, &self.params)?;
        self.kept.clear();
        self.probs.clear();
        for &i in &out.kept {
            self.kept.push(i as u32);
            self.probs.push(out.probs[i]);
        }
        self.path = StepPath::Reference;
        Ok(())
    }

    fn step(&mut self, logits: &[f32], context: &[i64], prompt_len: usize) -> Result<(), HfError> {
        self.prompt_len = prompt_len;
        let v = logits.len();
        if v == 0 || self.plan.reference_only || v >= 1 << 24 || prompt_len > context.len() {
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
        if plan.stateful {
            // The masks come after the penalty and before the warpers: the
            // penalised scores are materialised, masked, and the temperature
            // applied on the fly. Invalid logits (which a mask could hide)
            // and construction errors go to the reference. (Processors other
            // than masks and the fast path's own made the plan reference-only.)
            let (_, _, ok) = dispatch!(self.isa, |lv| lv.scan(logits, |s| s));
            let chain = match self.params.processors_at(self.prompt_len) {
                Ok(chain) if ok => chain,
                _ => return self.reference(logits, context),
            };
            let seen = &self.ctx.seen;
            dispatch!(self.isa, |_lv| processed_scores(
                logits,
                seen,
                plan.penalty,
                None,
                work
            ));
            for p in chain.iter().filter(|p| p.is_mask()) {
                if p.apply(work, context).is_err() {
                    return self.reference(logits, context);
                }
            }
            return self.sample_from(logits, context, work, plan.temperature);
        }
        // Penalised scores are materialised; a temperature alone is applied
        // on the fly (`x / t`, the reference's f32 division).
        let (x, t): (&[f32], Option<f32>) = if plan.penalty.is_some() {
            let seen = &self.ctx.seen;
            dispatch!(self.isa, |_lv| {
                processed_scores(logits, seen, plan.penalty, plan.temperature, work);
            });
            (work, None)
        } else {
            (logits, plan.temperature)
        };
        self.sample_from(logits, context, x, t)
    }

    /// The step on the processed scores `x` (before the temperature `t`,
    /// applied on the fly): greedy, sparse, dense or the reference.
    fn sample_from(
        &mut self,
        logits: &[f32],
        context: &[i64],
        x: &[f32],
        t: Option<f32>,
    ) -> Result<(), HfError> {
        let plan = self.plan;
        let v = x.len();
        let isa = self.isa;
        if !plan.do_sample {
            let (_, _, ok) = dispatch!(isa, |lv| lv.scan(x, |s| s));
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
            let cand = &mut self.cand;
            let (m, ok) = with_map!(t, |f| dispatch!(isa, |lv| scan_top_k(lv, x, f, k, cand)));
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
            let cand = &mut self.cand;
            let (m, ok) = with_map!(t, |f| dispatch!(isa, |lv| scan_min_p(lv, x, f, off, cand)));
            (m, ok && m > f32::NEG_INFINITY && self.min_p_dense(m, mp))
        } else {
            // A correctly rounded division by t > 0 is monotone, so the max
            // and min of x / t are max(x) / t and min(x) / t, and x / t
            // overflows nowhere if it does not at the max: the pass reads x
            // without dividing.
            let (m, min, ok) = match t {
                Some(t) if t > 0.0 => {
                    let (m, min, ok) = dispatch!(isa, |lv| lv.scan(x, |s| s));
                    (m / t, min / t, ok && m / t < f32::INFINITY)
                }
                _ => with_map!(t, |f| dispatch!(isa, |lv| lv.scan(x, f))),
            };
            if !ok || m == f32::NEG_INFINITY {
                return self.reference(logits, context);
            }
            if let Some(thr) = plan.top_p {
                (m, with_map!(t, |f| self.top_p_dense(x, f, m, thr)))
            } else if v >= LANES && min - m >= -87.0 {
                let (total, lane_sum) = with_map!(t, |f| self.dense_exps(x, f, m));
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

    /// Fast exps of `y - m` for all V into `exps` (the level's: [`Dispatch`])
    /// and per-chunk f64 sums (for drawing);
    /// returns the f64 total and the torch-order 16-lane f32 sum.
    fn dense_exps(&mut self, x: &[f32], f: impl Fn(f32) -> f32 + Copy, m: f32) -> (f64, f32) {
        let (exps, sums) = (&mut self.exps, &mut self.chunk_sums);
        dispatch!(self.isa, |lv| dense_exps(lv, x, f, m, exps, sums))
    }
}

/// The dense pass: `exp(f(s) - m)` for every score into `exps`, per-chunk f64
/// sums into `chunk_sums`; returns the f64 total and the 16-lane f32 sum in
/// position order (torch's).
#[inline(always)]
fn dense_exps(
    lv: impl Level,
    x: &[f32],
    f: impl Fn(f32) -> f32 + Copy,
    m: f32,
    exps: &mut Vec<f32>,
    chunk_sums: &mut Vec<f64>,
) -> (f64, f32) {
    // Every entry is overwritten: resizing only allocates the first time.
    exps.resize(x.len(), 0.0);
    chunk_sums.clear();
    let mut total = 0.0;
    let mut lanes = [0.0f32; LANES];
    for (out, inp) in exps.chunks_mut(CHUNK).zip(x.chunks(CHUNK)) {
        // CHUNK is a multiple of 16: element i lands in lane i % 16, added
        // as it is computed.
        lv.exps_by_lane(out, inp, f, m, &mut lanes);
        let done = out.len() - out.len() % LANES;
        for (l, (o, &s)) in out[done..].iter_mut().zip(&inp[done..]).enumerate() {
            *o = lv.exp(f(s) - m);
            lanes[l] += *o;
        }
        // The chunk's mass (for locating a draw): growth of the lane total.
        let now: f64 = lanes.iter().map(|&l| l as f64).sum();
        chunk_sums.push(now - total);
        total = now;
    }
    (total, torch::fold_lanes(lanes))
}

/// The reference's exps of the candidates, `sleef_expf(y - m)`, into `exps`.
fn exact_exps(cand: &[(f32, u32)], m: f32, exps: &mut Vec<f32>) {
    exps.clear();
    exps.extend(cand.iter().map(|c| sleef_expf(c.0 - m)));
}

/// `y` = penalty (on seen ids) then temperature, as the reference applies them.
#[inline(always)]
fn processed_scores(
    logits: &[f32],
    seen: &[u32],
    penalty: Option<f32>,
    temperature: Option<f32>,
    work: &mut Vec<f32>,
) {
    work.clear();
    match temperature {
        // One pass: the division as the scores are copied, then the seen
        // ids' entries redone as penalty-then-temperature.
        Some(t) => {
            work.extend(logits.iter().map(|&s| s / t));
            if let Some(p) = penalty {
                for &i in seen {
                    let s = logits[i as usize];
                    work[i as usize] = (if s < 0.0 { s * p } else { s / p }) / t;
                }
            }
        }
        None => {
            work.extend_from_slice(logits);
            if let Some(p) = penalty {
                for &i in seen {
                    let s = work[i as usize];
                    work[i as usize] = if s < 0.0 { s * p } else { s / p };
                }
            }
        }
    }
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
