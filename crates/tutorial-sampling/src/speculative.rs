//! Speculative decoding, exactly: the distribution of the first token one
//! verification step emits, computed in f64 in closed form (no simulation).
//!
//! # The setting
//!
//! A draft model proposes a candidate token `x` for the next position; the
//! target model's distribution there is `p`, the draft's is `q` (both over one
//! vocabulary). The verifier accepts `x` with some probability `a(x)`;
//! otherwise it emits a *recovered* token drawn from a distribution `R_x`.
//! With `d` the distribution the candidate was really drawn from (the
//! [`Proposal`]), the first emitted token is distributed as
//!
//! ```text
//! P(y) = d(y)·a(y) + Σ_x d(x)·(1 − a(x))·R_x(y)
//! ```
//!
//! which this module evaluates for each [`Algorithm`]. When a rejection leaves
//! no token to draw (the residual is empty), transformers raises and the
//! textbook is undefined: that probability is reported as
//! [`FirstToken::undefined`] and counted as mass off the target in the TV.
//! Later positions condition on the first, so the distance is measured at the
//! first position only; K (the number of draft tokens) enters through the
//! expected lengths.
//!
//! The inputs are normalised by their f64 sums first (probabilities that came
//! from an f32 softmax sum to 1 only to f32 rounding), so "exact" means TV to
//! the normalised target within f64 rounding (≤ 1e-12).
//!
//! # The algorithms and their sources
//!
//! - [`Algorithm::Textbook`]: Leviathan, Kalman & Matias 2023 (arXiv
//!   2211.17192, Algorithm 1) and Chen et al. 2023 (arXiv 2302.01318):
//!   accept with `min(1, p(x)/q(x))`, else draw from `norm(max(0, p − q))`.
//!   Exact when `x ~ q`.
//! - [`Algorithm::Tutorial`]: the TorchCode tutorial's `speculative_decode`
//!   (ch. 6, section 6.3). The draft tokens are an argument (how they were
//!   drawn is the caller's business); accept when `torch.rand(1) <
//!   min(1.0, ratio)` with `ratio = p(x)/q(x)`. Python's `min(1.0, nan)` is
//!   `1.0`, so a candidate with `q(x) = 0` is always accepted, even when
//!   `p(x) = 0` too. On rejection it draws from `norm(max(0, p − q))`, or
//!   from `p` itself when that residual sums to 0 (unreachable in exact
//!   arithmetic: a rejection needs `p(x) < q(x)`, and then another token has
//!   `p > q`). After K acceptances it returns the K tokens and no bonus token.
//! - [`Algorithm::Transformers`]: transformers 5.23.0
//!   `transformers/generation/utils.py`, `_speculative_sampling` (without
//!   `assistant_ensemble_weight`): `q = softmax(candidate_logits)`,
//!   accepted when `rand <= p_i / q_i` (so `q_i = 0` accepts when `p_i > 0`
//!   and rejects `0/0 = NaN`); on a rejection `p' = clamp(p − q, 0)` divided
//!   by its sum — an empty residual divides by 0, and `torch.multinomial`
//!   raises on the NaN; after K acceptances a bonus token from the target.
//!   `q` is whatever the candidate generator returns as `candidate_logits`;
//!   in 5.23 `SinglePositionMultiTokenCandidateGenerator`
//!   (`candidate_generator.py`) proposes `outputs.logits.argmax` whatever
//!   `do_sample` says and returns the raw logits as `q`, so its candidates
//!   are not drawn from `q` ([`Proposal::Greedy`]); before the fix for
//!   transformers issue "candidate generators return a `q` they did not
//!   sample from" DFlash and MTP sampled from processed logits and returned
//!   the raw ones ([`Proposal::From`]).
//! - [`Algorithm::VllmProbabilistic`] and [`Algorithm::VllmGreedy`]: vLLM
//!   0.32.0 `vllm/v1/sample/rejection_sampler.py`,
//!   `rejection_random_sample_kernel` and `sample_recovered_tokens_kernel`.
//!   Accepted when `draft_prob > 0 and target_prob / draft_prob >= u` with
//!   `u ~ U[0, 1)` in f64; a candidate with `q(x) = 0` is rejected. The
//!   recovered token is `argmax_v max(p_v − q_v, 0) / E_v` with `E_v ~ Exp(1)`,
//!   an exponential race that draws from `norm(max(0, p − q))`; when every
//!   score is 0 the argmax is index 0 (Triton's `tl.max` breaks ties to the
//!   left), so an empty residual emits token 0. Which draft probabilities
//!   arrive depends on `SpeculativeConfig.draft_sample_method`
//!   (`vllm/config/speculative.py`): `"probabilistic"` samples the draft
//!   from `softmax(logits / T)` and passes those probabilities
//!   ([`Algorithm::VllmProbabilistic`]); the default `"greedy"` proposes the
//!   draft's argmax and passes no probabilities (`draft_probs = None`,
//!   `vllm/v1/spec_decode/llm_base_proposer.py`), and the kernel then uses
//!   `draft_prob = 1`: accept with probability `p(x)`, recover from `p`
//!   with `x` masked out ([`Algorithm::VllmGreedy`]). That path is exact
//!   whatever the proposal.
//!
//! The uniform draws are modelled as continuous. torch's `rand` in float32
//! draws from a grid of 2^-24 (so `P(u < a)` can differ from `a` by up to
//! 2^-24 in the tutorial and transformers); vLLM draws in float64.
//!
//! # Lengths
//!
//! With acceptance probability `α` per position and positions treated as
//! identical (Leviathan et al., section 3.1), the expected number of accepted
//! draft tokens in one step with K drafts is `α + α² + … + α^K`. A step emits
//! one more token (a recovered or a bonus one) for the textbook,
//! transformers and vLLM: `(1 − α^(K+1)) / (1 − α)` in all. The tutorial
//! emits a corrected token only after a rejection (probability `1 − α^K`).
//! For the textbook with `x ~ q`, `α = Σ_x min(p(x), q(x))`.

/// Why a speculative computation was refused. Messages name the argument and
/// quote the value.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SpecError {
    /// K = 0 draft tokens.
    #[error("`k` = 0: speculative decoding needs at least one draft token")]
    ZeroK,
    /// The draft's vocabulary size differs from the target's.
    #[error(
        "the draft has {draft} tokens and the target {target}: speculative decoding needs one vocabulary"
    )]
    VocabMismatch {
        /// Target vocabulary size.
        target: usize,
        /// Draft (or proposal) vocabulary size.
        draft: usize,
    },
    /// A probability that is negative, NaN or infinite.
    #[error("`{which}[{index}]` = {value} is not a probability (finite and >= 0)")]
    NotAProbability {
        /// `target`, `draft` or `proposal`.
        which: &'static str,
        /// Token id.
        index: usize,
        /// The value.
        value: f64,
    },
    /// A distribution with no mass at all.
    #[error("`{which}` has no probability mass (every entry is 0)")]
    NoMass {
        /// `target`, `draft` or `proposal`.
        which: &'static str,
    },
    /// A fixed candidate token outside the vocabulary.
    #[error("candidate token {token} is outside the vocabulary of {vocab} tokens")]
    TokenOutOfRange {
        /// The token.
        token: usize,
        /// Vocabulary size.
        vocab: usize,
    },
}

/// A verification rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Algorithm {
    /// Leviathan et al. / Chen et al.
    Textbook,
    /// The TorchCode tutorial's `speculative_decode`.
    Tutorial,
    /// transformers 5.23 `_speculative_sampling`.
    Transformers,
    /// vLLM 0.32 with `draft_sample_method="probabilistic"` (draft
    /// probabilities passed to the rejection sampler).
    VllmProbabilistic,
    /// vLLM 0.32 with the default `draft_sample_method="greedy"` (no draft
    /// probabilities: `draft_prob = 1`).
    VllmGreedy,
}

impl Algorithm {
    /// Every algorithm, in report order.
    pub const ALL: [Self; 5] = [
        Self::Textbook,
        Self::Tutorial,
        Self::Transformers,
        Self::VllmProbabilistic,
        Self::VllmGreedy,
    ];

    /// Short name for reports.
    pub fn name(self) -> &'static str {
        match self {
            Self::Textbook => "textbook",
            Self::Tutorial => "tutorial",
            Self::Transformers => "transformers",
            Self::VllmProbabilistic => "vllm-probabilistic",
            Self::VllmGreedy => "vllm-greedy",
        }
    }

    /// Whether a step emits a token after K acceptances (a bonus token from
    /// the target).
    pub fn bonus_token(self) -> bool {
        !matches!(self, Self::Tutorial)
    }

    /// Probability of accepting candidate `x` with target mass `p` and draft
    /// mass `q` there.
    fn accept(self, p: f64, q: f64) -> f64 {
        match self {
            // p/0 = inf accepts; 0/0 = NaN fails `rand <= ratio`.
            Self::Textbook | Self::Transformers => {
                if q > 0.0 {
                    (p / q).min(1.0)
                } else if p > 0.0 {
                    1.0
                } else {
                    0.0
                }
            }
            // Python's min(1.0, inf) and min(1.0, nan) are both 1.0.
            Self::Tutorial => {
                if q > 0.0 {
                    (p / q).min(1.0)
                } else {
                    1.0
                }
            }
            // `draft_prob > 0 and target_prob / draft_prob >= u`.
            Self::VllmProbabilistic => {
                if q > 0.0 {
                    (p / q).min(1.0)
                } else {
                    0.0
                }
            }
            Self::VllmGreedy => p,
        }
    }
}

/// How the candidate token was really drawn.
#[derive(Debug, Clone, PartialEq)]
pub enum Proposal {
    /// From the draft distribution `q` itself (what the algorithms assume).
    Draft,
    /// The draft's argmax (first index among ties, as `torch.argmax`).
    Greedy,
    /// A given token (the tutorial's `draft_tokens` argument).
    Token(usize),
    /// From another distribution over the same vocabulary (for example `q`
    /// after top-k while the verifier is handed the raw `q`).
    From(Vec<f64>),
}

impl Proposal {
    /// Short description for reports.
    pub fn describe(&self) -> String {
        match self {
            Self::Draft => "x ~ q".into(),
            Self::Greedy => "x = argmax q".into(),
            Self::Token(t) => format!("x = {t}"),
            Self::From(_) => "x ~ another distribution".into(),
        }
    }
}

/// The first emitted token under one algorithm and proposal.
#[derive(Debug, Clone, PartialEq)]
pub struct FirstToken {
    /// The algorithm.
    pub algorithm: Algorithm,
    /// `P(first emitted token = y)` for every y. Sums to `1 − undefined`.
    pub probs: Vec<f64>,
    /// Probability that a rejection finds an empty residual where the
    /// algorithm has no rule (transformers raises; the textbook is undefined).
    pub undefined: f64,
    /// Total variation to the (normalised) target, with `undefined` counted
    /// as mass the target never has.
    pub tv: f64,
    /// Probability that the candidate is accepted (`α`).
    pub acceptance: f64,
}

/// Everything `compare speculative` reports for one target/draft pair.
#[derive(Debug, Clone, PartialEq)]
pub struct Speculative {
    /// Number of draft tokens per step.
    pub k: usize,
    /// The target, normalised.
    pub target: Vec<f64>,
    /// The draft, normalised.
    pub draft: Vec<f64>,
    /// `Σ_x min(p(x), q(x))`: the textbook acceptance rate with `x ~ q`.
    pub acceptance_rate: f64,
    /// One row per (algorithm, proposal) in [`standard_rows`].
    pub rows: Vec<Row>,
}

/// One (algorithm, proposal) result with its expected lengths.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// How the candidate was drawn.
    pub proposal: Proposal,
    /// Where this configuration occurs in the real engine, in words.
    pub setting: &'static str,
    /// The first-token distribution.
    pub first: FirstToken,
    /// Expected accepted draft tokens per step for K.
    pub expected_accepted: f64,
    /// Expected tokens emitted per step for K.
    pub expected_emitted: f64,
}

pub use parity_core::speculative::EXACT_TV;

impl Row {
    /// Why this row's first token misses the target `target`, in words, with
    /// the draft `draft` it verified against; `None` when it is exact.
    pub fn reason(&self, target: &[f64], draft: &[f64]) -> Option<String> {
        let f = &self.first;
        if f.tv <= EXACT_TV {
            return None;
        }
        let gap = |t: usize| {
            format!(
                "token {t} is emitted with probability {:.4} against the target's {:.4}",
                f.probs[t], target[t]
            )
        };
        let largest_gap = || {
            let d = |i: usize| (f.probs[i] - target[i]).abs();
            (0..f.probs.len()).fold(0, |b, i| if d(i) > d(b) { i } else { b })
        };
        let mut why = match &self.proposal {
            Proposal::Greedy => {
                let x = (0..draft.len()).fold(0, |b, i| if draft[i] > draft[b] { i } else { b });
                format!(
                    "candidates are the draft's argmax, not drawn from q, but verified with \
                     min(1, p/q) as if they were: {}",
                    gap(x)
                )
            }
            Proposal::Token(x) => format!("every candidate is token {x}: {}", gap(*x)),
            Proposal::From(_) => format!(
                "candidates are drawn from another distribution than the q the verifier is \
                 handed: largest gap where {}",
                gap(largest_gap())
            ),
            Proposal::Draft => format!("largest gap where {}", gap(largest_gap())),
        };
        if f.undefined > 0.0 {
            let what = match f.algorithm {
                Algorithm::Transformers => "transformers' torch.multinomial raises",
                _ => "the algorithm is undefined",
            };
            why.push_str(&format!(
                "; with probability {:.4} a rejection meets an empty residual (p <= q everywhere) \
                 and {what}",
                f.undefined
            ));
        }
        Some(why)
    }
}

/// The configurations reported for every pair: each algorithm as its
/// engine runs it, with where that happens.
pub fn standard_rows() -> Vec<(Algorithm, Proposal, &'static str)> {
    vec![
        (
            Algorithm::Textbook,
            Proposal::Draft,
            "x ~ q, accept min(1, p/q), residual norm(p - q)+",
        ),
        (
            Algorithm::Tutorial,
            Proposal::Draft,
            "draft tokens sampled from q",
        ),
        (
            Algorithm::Tutorial,
            Proposal::Greedy,
            "draft tokens = the draft's argmax",
        ),
        (
            Algorithm::Transformers,
            Proposal::Draft,
            "AssistedCandidateGenerator: samples from the scores it returns",
        ),
        (
            Algorithm::Transformers,
            Proposal::Greedy,
            "SinglePositionMultiTokenCandidateGenerator: argmax candidates, raw logits as q",
        ),
        (
            Algorithm::VllmProbabilistic,
            Proposal::Draft,
            "draft_sample_method=\"probabilistic\"",
        ),
        (
            Algorithm::VllmGreedy,
            Proposal::Greedy,
            "draft_sample_method=\"greedy\" (default): draft_probs=None",
        ),
    ]
}

/// Runs [`standard_rows`] on one target/draft pair for K draft tokens.
pub fn speculative(target: &[f64], draft: &[f64], k: usize) -> Result<Speculative, SpecError> {
    if k == 0 {
        return Err(SpecError::ZeroK);
    }
    let p = normalised("target", target)?;
    let q = normalised("draft", draft)?;
    if p.len() != q.len() {
        return Err(SpecError::VocabMismatch {
            target: p.len(),
            draft: q.len(),
        });
    }
    let acceptance_rate = p.iter().zip(&q).map(|(a, b)| a.min(*b)).sum();
    let mut rows = Vec::new();
    for (algorithm, proposal, setting) in standard_rows() {
        let first = first_token(algorithm, &p, &q, &proposal)?;
        let alpha = first.acceptance;
        rows.push(Row {
            proposal,
            setting,
            expected_accepted: expected_accepted(alpha, k),
            expected_emitted: expected_emitted(alpha, k, algorithm.bonus_token()),
            first,
        });
    }
    Ok(Speculative {
        k,
        target: p,
        draft: q,
        acceptance_rate,
        rows,
    })
}

/// The distribution of the first emitted token for one algorithm, target
/// `p`, draft `q` and the way the candidate was drawn. `p`, `q` (and a
/// [`Proposal::From`] distribution) are normalised first.
pub fn first_token(
    algorithm: Algorithm,
    target: &[f64],
    draft: &[f64],
    proposal: &Proposal,
) -> Result<FirstToken, SpecError> {
    let p = normalised("target", target)?;
    let q = normalised("draft", draft)?;
    let v = p.len();
    if q.len() != v {
        return Err(SpecError::VocabMismatch {
            target: v,
            draft: q.len(),
        });
    }
    let d = proposal_distribution(proposal, &q)?;
    let mut probs = vec![0.0; v];
    let mut undefined = 0.0;
    let mut acceptance = 0.0;
    let mut rejected = 0.0;
    // vLLM greedy recovers from p with the candidate masked out: the weight
    // of each candidate's rejection over the mass left, w_x.
    let total: f64 = p.iter().sum();
    let mut masked_weights = vec![0.0; v];
    for x in 0..v {
        if d[x] == 0.0 {
            continue;
        }
        let a = algorithm.accept(p[x], q[x]);
        probs[x] += d[x] * a;
        acceptance += d[x] * a;
        let r = d[x] * (1.0 - a);
        if r == 0.0 {
            continue;
        }
        if algorithm == Algorithm::VllmGreedy {
            // r > 0 means p(x) < 1, so some other token has mass.
            masked_weights[x] = r / (total - p[x]);
        } else {
            rejected += r;
        }
    }
    if algorithm == Algorithm::VllmGreedy {
        let all: f64 = masked_weights.iter().sum();
        for ((prob, t), w) in probs.iter_mut().zip(&p).zip(&masked_weights) {
            *prob += t * (all - w);
        }
    }
    if rejected > 0.0 {
        let residual: Vec<f64> = p.iter().zip(&q).map(|(a, b)| (a - b).max(0.0)).collect();
        let mass: f64 = residual.iter().sum();
        if mass > 0.0 {
            for (prob, res) in probs.iter_mut().zip(&residual) {
                *prob += rejected * res / mass;
            }
        } else {
            match algorithm {
                Algorithm::Tutorial => {
                    for (prob, t) in probs.iter_mut().zip(&p) {
                        *prob += rejected * t;
                    }
                }
                Algorithm::VllmProbabilistic | Algorithm::VllmGreedy => probs[0] += rejected,
                Algorithm::Textbook | Algorithm::Transformers => undefined += rejected,
            }
        }
    }
    let tv = 0.5
        * (probs
            .iter()
            .zip(&p)
            .map(|(a, b)| (a - b).abs())
            .sum::<f64>()
            + undefined);
    Ok(FirstToken {
        algorithm,
        probs,
        undefined,
        tv,
        acceptance,
    })
}

/// Expected accepted draft tokens per step, `α + α² + … + α^K`.
pub fn expected_accepted(alpha: f64, k: usize) -> f64 {
    let mut term = 1.0;
    let mut sum = 0.0;
    for _ in 0..k {
        term *= alpha;
        sum += term;
    }
    sum
}

/// Expected tokens emitted per step: the accepted ones, plus one recovered or
/// bonus token (`bonus`), or plus a corrected token only after a rejection
/// (the tutorial: `1 − α^K`).
pub fn expected_emitted(alpha: f64, k: usize, bonus: bool) -> f64 {
    let accepted = expected_accepted(alpha, k);
    if bonus {
        accepted + 1.0
    } else {
        let all = (0..k).fold(1.0, |acc, _| acc * alpha);
        accepted + (1.0 - all)
    }
}

/// [`standard_rows`] as `compare speculative` tables them
/// ([`parity_core::speculative::SpeculativeTable`]): [`speculative`]'s rows
/// with their [`Row::reason`], [`perturbed`] drafts.
#[derive(Debug, Clone, Copy, Default)]
pub struct Verifiers;

impl parity_core::speculative::SpeculativeTable for Verifiers {
    fn table(
        &self,
        target: &[f64],
        draft: &[f64],
        k: usize,
    ) -> Result<parity_core::speculative::Table, Box<dyn std::error::Error + Send + Sync>> {
        let s = speculative(target, draft, k)?;
        let rows = s
            .rows
            .iter()
            .map(|r| parity_core::speculative::Row {
                algorithm: r.first.algorithm.name(),
                candidates: r.proposal.describe(),
                setting: r.setting,
                tv: r.first.tv,
                undefined: r.first.undefined,
                acceptance: r.first.acceptance,
                expected_accepted: r.expected_accepted,
                expected_emitted: r.expected_emitted,
                reason: r.reason(&s.target, &s.draft),
            })
            .collect();
        Ok(parity_core::speculative::Table {
            vocab: s.target.len(),
            acceptance_rate: s.acceptance_rate,
            rows,
        })
    }

    fn legend(&self) -> Vec<parity_core::speculative::Occurrence> {
        standard_rows()
            .into_iter()
            .map(
                |(algorithm, proposal, setting)| parity_core::speculative::Occurrence {
                    algorithm: algorithm.name(),
                    candidates: proposal.describe(),
                    setting,
                },
            )
            .collect()
    }

    fn perturbed(&self, logits: &[f32], scale: f32, seed: u64) -> Vec<f32> {
        perturbed(logits, scale, seed)
    }
}

/// A deterministic perturbation of logits for a weaker draft: each finite
/// logit plus `scale · u_i`, `u_i` uniform in [-1, 1) from SplitMix64 seeded
/// with `seed` (a hand-written generator, so Python can repeat it).
pub fn perturbed(logits: &[f32], scale: f32, seed: u64) -> Vec<f32> {
    let mut state = seed;
    logits
        .iter()
        .map(|&x| {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            // 24 random bits → [0, 1) exactly representable in f32.
            let u = (z >> 40) as f32 / (1u32 << 24) as f32;
            if x.is_finite() {
                x + scale * (2.0 * u - 1.0)
            } else {
                x
            }
        })
        .collect()
}

fn proposal_distribution(proposal: &Proposal, q: &[f64]) -> Result<Vec<f64>, SpecError> {
    let v = q.len();
    match proposal {
        Proposal::Draft => Ok(q.to_vec()),
        Proposal::Greedy => {
            let mut best = 0;
            for (i, &x) in q.iter().enumerate() {
                if x > q[best] {
                    best = i;
                }
            }
            Ok(one_hot(v, best))
        }
        Proposal::Token(t) => {
            if *t >= v {
                return Err(SpecError::TokenOutOfRange {
                    token: *t,
                    vocab: v,
                });
            }
            Ok(one_hot(v, *t))
        }
        Proposal::From(d) => {
            let d = normalised("proposal", d)?;
            if d.len() != v {
                return Err(SpecError::VocabMismatch {
                    target: v,
                    draft: d.len(),
                });
            }
            Ok(d)
        }
    }
}

fn one_hot(v: usize, i: usize) -> Vec<f64> {
    let mut d = vec![0.0; v];
    d[i] = 1.0;
    d
}

fn normalised(which: &'static str, probs: &[f64]) -> Result<Vec<f64>, SpecError> {
    if let Some((index, &value)) = probs
        .iter()
        .enumerate()
        .find(|&(_, x)| !x.is_finite() || *x < 0.0)
    {
        return Err(SpecError::NotAProbability {
            which,
            index,
            value,
        });
    }
    let sum: f64 = probs.iter().sum();
    if sum <= 0.0 {
        return Err(SpecError::NoMass { which });
    }
    Ok(probs.iter().map(|x| x / sum).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: &[f64], b: &[f64], tol: f64) {
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(b) {
            assert!((x - y).abs() <= tol, "{a:?} vs {b:?}");
        }
    }

    const P: [f64; 3] = [0.5, 0.3, 0.2];
    const Q: [f64; 3] = [0.2, 0.3, 0.5];

    #[test]
    fn textbook_is_exact_when_drawn_from_q() {
        // min(p,q) = [0.2, 0.3, 0.2] (α = 0.7); rejected 0.3, residual (p-q)+ = [0.3, 0, 0]
        // → P = [0.2 + 0.3, 0.3, 0.2] = p.
        let f = first_token(Algorithm::Textbook, &P, &Q, &Proposal::Draft).expect("valid");
        close(&f.probs, &P, 1e-15);
        assert!(f.tv <= 1e-15 && f.undefined == 0.0);
        assert!((f.acceptance - 0.7).abs() < 1e-15);
    }

    #[test]
    fn greedy_candidates_break_the_tutorial_and_transformers_but_not_vllm_greedy() {
        // x = argmax q = 2, a = 0.2/0.5 = 0.4; rejected 0.6 → residual δ0.
        // P = [0.6, 0, 0.4]; TV = ½(0.1 + 0.3 + 0.2) = 0.3.
        for alg in [Algorithm::Tutorial, Algorithm::Transformers] {
            let f = first_token(alg, &P, &Q, &Proposal::Greedy).expect("valid");
            close(&f.probs, &[0.6, 0.0, 0.4], 1e-15);
            assert!((f.tv - 0.3).abs() < 1e-15, "{alg:?} {}", f.tv);
        }
        // vLLM greedy: accept with p(2) = 0.2; else p without id 2: [0.5, 0.3]/0.8.
        // P = [0.8·0.625, 0.8·0.375, 0.2] = p.
        let f = first_token(Algorithm::VllmGreedy, &P, &Q, &Proposal::Greedy).expect("valid");
        close(&f.probs, &P, 1e-15);
    }

    #[test]
    fn a_candidate_neither_model_can_produce() {
        // p = q = [0.5, 0.5, 0], candidate 2: q(2) = 0 and p(2) = 0.
        let pq = [0.5, 0.5, 0.0];
        let t = Proposal::Token(2);
        // Tutorial: min(1.0, nan) = 1.0, token 2 always emitted: TV 1.
        let f = first_token(Algorithm::Tutorial, &pq, &pq, &t).expect("valid");
        close(&f.probs, &[0.0, 0.0, 1.0], 0.0);
        assert_eq!(f.tv, 1.0);
        // transformers: NaN ratio rejects, residual 0/0 → multinomial raises.
        let f = first_token(Algorithm::Transformers, &pq, &pq, &t).expect("valid");
        assert_eq!((f.undefined, f.tv), (1.0, 1.0));
        // vLLM probabilistic: draft_prob = 0 rejects; all recovered scores 0 → token 0.
        let f = first_token(Algorithm::VllmProbabilistic, &pq, &pq, &t).expect("valid");
        close(&f.probs, &[1.0, 0.0, 0.0], 0.0);
        // vLLM greedy: accept with p(2) = 0, recover from p: exact.
        let f = first_token(Algorithm::VllmGreedy, &pq, &pq, &t).expect("valid");
        close(&f.probs, &pq, 1e-15);
    }

    #[test]
    fn lengths_for_k() {
        // α = 0.5, K = 3: accepted 0.5 + 0.25 + 0.125 = 0.875; with bonus 1.875
        // = (1 - 0.5^4)/(1 - 0.5); tutorial 0.875 + (1 - 0.125) = 1.75.
        assert_eq!(expected_accepted(0.5, 3), 0.875);
        assert_eq!(expected_emitted(0.5, 3, true), 1.875);
        assert_eq!(expected_emitted(0.5, 3, false), 1.75);
    }

    #[test]
    fn refusals() {
        assert_eq!(speculative(&P, &Q, 0), Err(SpecError::ZeroK));
        assert_eq!(
            speculative(&P, &[0.5, 0.5], 2).unwrap_err().to_string(),
            "the draft has 2 tokens and the target 3: speculative decoding needs one vocabulary"
        );
        assert_eq!(
            speculative(&[0.5, -0.1, 0.6], &Q, 2)
                .unwrap_err()
                .to_string(),
            "`target[1]` = -0.1 is not a probability (finite and >= 0)"
        );
        assert_eq!(
            first_token(Algorithm::Textbook, &P, &Q, &Proposal::Token(3))
                .unwrap_err()
                .to_string(),
            "candidate token 3 is outside the vocabulary of 3 tokens"
        );
        assert_eq!(
            speculative(&[0.0, 0.0], &[0.5, 0.5], 1),
            Err(SpecError::NoMass { which: "target" })
        );
    }
}
