//! The chain `common_sampler_init` builds, run on one step's logits.
//!
//! common/sampling.cpp (`common_sampler_init`, llama.cpp 0c1e57098): the
//! chain is `logit_bias` (when any bias survives the vocabulary check), then
//! one sampler per entry of `samplers` in that order (default: penalties,
//! dry, top_n_sigma, top_k, typ_p, top_p, min_p, xtc, temperature), then
//! `dist`. Each `llama_sampler_init_*` returns an empty sampler when its
//! parameters disable it (top_k ≤ 0, top_p ≥ 1, min_p ≤ 0, typical ≥ 1,
//! top_n_sigma ≤ 0, xtc probability ≤ 0 or threshold > 0.5, temperature 1
//! without dynatemp, penalties with window 0 or all neutral), so those are
//! left out. llama-server feeds every prompt token to the chain
//! (`init_sampler` in tools/server/server-context.cpp) before the first
//! draw, so the penalty window is the last `repeat_last_n` ids of the whole
//! context, prompt included; a context id outside the vocabulary makes the
//! server refuse the prompt.

use parity_core::{Context, Distribution, Error, Logits, Precision};

use crate::backend;
use crate::chain::{Candidates, Dist, PenaltyCounts, Sampler, XtcBranch, xtc_applied_weight};
use crate::mt::Mt19937;
use crate::params::{DEFAULT_SEED, SamplerType, ServerParams};

/// The chain for these parameters, logits width and context.
pub(crate) fn build(p: &ServerParams, n_vocab: usize, ids: &[i32]) -> Result<Vec<Sampler>, Error> {
    if !p.penalty_repeat.is_finite()
        || p.penalty_repeat <= 0.0
        || !(1.0 / p.penalty_repeat).is_finite()
    {
        return Err(Error::new(format_args!(
            "`repeat_penalty` = {}: llama-server refuses it (Failed to initialize samplers: penalty_repeat must be finite and greater than 0)",
            p.penalty_repeat
        )));
    }
    if !p.penalty_freq.is_finite() {
        return Err(Error::new(
            "`frequency_penalty` is infinite as a float: llama-server refuses it (penalty_freq must be finite)",
        ));
    }
    if !p.penalty_present.is_finite() {
        return Err(Error::new(
            "`presence_penalty` is infinite as a float: llama-server refuses it (penalty_present must be finite)",
        ));
    }
    if p.mirostat != 0 {
        return Err(Error::new(format_args!(
            "`mirostat` = {}: mirostat replaces the sampler chain and is not reproduced",
            p.mirostat
        )));
    }
    let mut chain = Vec::new();
    let biases: Vec<(i32, f32)> = p
        .logit_bias
        .iter()
        .copied()
        .filter(|&(t, _)| t >= 0 && (t as usize) < n_vocab)
        .collect();
    if !biases.is_empty() {
        chain.push(Sampler::LogitBias(biases));
    }
    let min_keep = p.min_keep.max(0) as usize;
    for &s in &p.samplers {
        match s {
            SamplerType::Dry => {
                if p.dry_multiplier != 0.0 && p.dry_base >= 1.0 && p.dry_penalty_last_n != 0 {
                    return Err(Error::new(format_args!(
                        "`dry_multiplier` = {}: DRY matches token strings against its sequence breakers, which needs the model's vocabulary; not reproduced",
                        p.dry_multiplier
                    )));
                }
            }
            SamplerType::TopK => {
                if p.top_k > 0 {
                    chain.push(Sampler::TopK(p.top_k));
                }
            }
            SamplerType::TopP => {
                if p.top_p < 1.0 {
                    chain.push(Sampler::TopP {
                        p: p.top_p,
                        min_keep,
                    });
                }
            }
            SamplerType::TopNSigma => {
                if p.top_n_sigma > 0.0 {
                    chain.push(Sampler::TopNSigma(p.top_n_sigma));
                }
            }
            SamplerType::MinP => {
                if p.min_p > 0.0 {
                    chain.push(Sampler::MinP {
                        p: p.min_p,
                        min_keep,
                    });
                }
            }
            SamplerType::Xtc => {
                if p.xtc_probability > 0.0 && p.xtc_threshold <= 0.5 {
                    if chain.iter().any(|s| matches!(s, Sampler::Xtc { .. })) {
                        return Err(Error::new(
                            "`samplers` names xtc twice: two XTC samplers with their own RNGs are not reproduced",
                        ));
                    }
                    chain.push(Sampler::Xtc {
                        probability: p.xtc_probability,
                        threshold: p.xtc_threshold,
                        min_keep,
                    });
                }
            }
            SamplerType::TypicalP => {
                if p.typ_p < 1.0 {
                    chain.push(Sampler::Typical {
                        p: p.typ_p,
                        min_keep,
                    });
                }
            }
            SamplerType::Temperature => {
                if !(p.temp == 1.0 && p.dynatemp_range <= 0.0) {
                    chain.push(Sampler::TempExt {
                        temp: p.temp,
                        delta: p.dynatemp_range,
                        exponent: p.dynatemp_exponent,
                    });
                }
            }
            SamplerType::Penalties => {
                let last_n = p.penalty_last_n.max(0);
                let neutral =
                    p.penalty_repeat == 1.0 && p.penalty_freq == 0.0 && p.penalty_present == 0.0;
                if last_n != 0 && !neutral {
                    chain.push(Sampler::Penalties {
                        counts: PenaltyCounts::new(ids, last_n as usize),
                        repeat: p.penalty_repeat,
                        freq: p.penalty_freq,
                        present: p.penalty_present,
                    });
                }
            }
            SamplerType::Infill => {
                return Err(Error::new(
                    "`samplers` contains infill, which needs the model's vocabulary; not reproduced",
                ));
            }
            SamplerType::AdaptiveP => {
                return Err(Error::new(
                    "`samplers` contains adaptive_p, which replaces dist and is not reproduced",
                ));
            }
        }
    }
    Ok(chain)
}

/// The context ids as llama.cpp tokens; ids outside the vocabulary are the
/// server's "Prompt contains invalid tokens".
pub(crate) fn context_ids(context: &Context<'_>, n_vocab: usize) -> Result<Vec<i32>, Error> {
    context
        .input_ids()
        .iter()
        .enumerate()
        .map(|(i, &t)| {
            if t >= 0 && (t as u64) < n_vocab as u64 {
                Ok(t as i32)
            } else {
                Err(Error::new(format_args!(
                    "`input_ids[{i}]` = {t} is not a token id of this {n_vocab}-token vocabulary: llama-server refuses the prompt (Prompt contains invalid tokens)"
                )))
            }
        })
        .collect()
}

/// One pass of the chain (without `dist`) over a copy of `start`. Returns
/// the candidates and whether XTC reached its random draw.
fn pass(chain: &[Sampler], start: &Candidates, branch: XtcBranch) -> (Candidates, Option<f32>) {
    let mut cur = start.clone();
    let mut xtc = None;
    for s in chain {
        if s.apply(&mut cur, branch)
            && let Sampler::Xtc { probability, .. } = s
        {
            xtc = Some(*probability);
        }
    }
    (cur, xtc)
}

/// What one request does on one step: the `dist` state of each XTC branch.
#[derive(Debug, Clone)]
pub(crate) struct Outcome {
    /// XTC skipped (or absent / not reached).
    pub(crate) skipped: Dist,
    /// XTC applied, with the weight of that branch, when XTC draws.
    pub(crate) applied: Option<(f64, f32, Dist)>,
}

pub(crate) fn outcome(chain: &[Sampler], logits: &[f32]) -> Outcome {
    outcome_from(chain, &Candidates::from_logits(logits))
}

/// [`outcome`] over a given candidate array (backend sampling's CPU
/// remainder starts from what the backend left).
pub(crate) fn outcome_from(chain: &[Sampler], start: &Candidates) -> Outcome {
    let (skip, xtc) = pass(chain, start, XtcBranch::Skipped);
    let skipped = Dist::new(&skip);
    let applied = xtc.map(|probability| {
        let (app, _) = pass(chain, start, XtcBranch::Applied);
        (
            xtc_applied_weight(probability),
            probability,
            Dist::new(&app),
        )
    });
    Outcome { skipped, applied }
}

fn probs_of(d: &Dist, n_vocab: usize) -> Vec<f64> {
    let mut probs = vec![0.0; n_vocab];
    if d.degenerate() {
        if let Some(&last) = d.ids.last() {
            probs[last as usize] = 1.0;
        }
        return probs;
    }
    for (&id, &p) in d.ids.iter().zip(&d.p) {
        probs[id as usize] = f64::from(p);
    }
    probs
}

impl Outcome {
    /// The distribution the final draw draws from.
    pub(crate) fn distribution(&self, n_vocab: usize) -> Distribution {
        let skipped = probs_of(&self.skipped, n_vocab);
        match &self.applied {
            None => Distribution::new(skipped, Precision::F32),
            Some((w, _, d)) => {
                let applied = probs_of(d, n_vocab);
                let mixed = skipped
                    .iter()
                    .zip(&applied)
                    .map(|(s, a)| w * a + (1.0 - w) * s)
                    .collect();
                Distribution::new(mixed, Precision::F64)
            }
        }
    }

    /// The first `n` tokens a fresh chain seeded with `seed` returns when
    /// applied `n` times to these logits.
    pub(crate) fn draws(&self, seed: u32, n: usize) -> Vec<i64> {
        let mut dist_rng = Mt19937::new(seed);
        let mut xtc_rng = Mt19937::new(seed);
        (0..n)
            .map(|_| {
                let d = match &self.applied {
                    Some((_, probability, applied)) => {
                        let chance = xtc_rng.uniform_f32();
                        if chance > *probability {
                            &self.skipped
                        } else {
                            applied
                        }
                    }
                    None => &self.skipped,
                };
                i64::from(d.draw(&mut dist_rng))
            })
            .collect()
    }
}

/// The whole semantics: parse-independent part.
pub(crate) fn distribution(
    p: &ServerParams,
    logits: &Logits,
    context: &Context<'_>,
) -> Result<Distribution, Error> {
    let logits = logits.to_f32()?;
    if logits.is_empty() {
        return Err(Error::new("`logits` is empty"));
    }
    let n_vocab = logits.len();
    let ids = context_ids(context, n_vocab)?;
    let chain = build(p, n_vocab, &ids)?;
    if p.draws.is_some() && p.seed == DEFAULT_SEED {
        return Err(Error::new(
            "`draws` needs a `seed`: without one (or with -1) llama.cpp picks a random seed per request",
        ));
    }
    let out = if p.uses_backend_sampling() {
        backend::outcome(&chain, &logits)?
    } else {
        backend::BackendOutcome::Partial(outcome(&chain, &logits))
    };
    let mut dist = out.distribution(n_vocab);
    if let Some(n) = p.draws {
        dist = dist.with_tokens(out.draws(p.seed, n));
    }
    // the logits after logit bias and penalties, for comparing penalty scopes
    let pre: Vec<&Sampler> = chain
        .iter()
        .filter(|s| matches!(s, Sampler::LogitBias(_) | Sampler::Penalties { .. }))
        .collect();
    if pre.iter().any(|s| matches!(s, Sampler::Penalties { .. })) {
        let penalised = if p.uses_backend_sampling() {
            backend::penalised(&chain, &logits)?
        } else {
            let mut cur = Candidates::from_logits(&logits);
            for s in pre {
                s.apply(&mut cur, XtcBranch::Skipped);
            }
            cur.data.iter().map(|t| t.logit).collect()
        };
        dist = dist.with_penalised(penalised);
    }
    Ok(dist)
}
