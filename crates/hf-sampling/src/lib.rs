//! transformers' sampling semantics in Rust: for one step's logits, exactly the
//! distribution Hugging Face transformers' `generate` samples from.
//!
//! # Reference
//!
//! transformers **5.23.0** (with torch 2.15.0 on CPU), and **4.57.6** where
//! the `transformers` param asks for it ([`version`] lists what differs):
//! - `transformers/generation/utils.py`: `_prepare_generation_config`
//!   (kwargs > model `generation_config.json` > defaults),
//!   `_get_logits_processor` (which processors, in which order), `_sample`
//!   (softmax + `torch.multinomial`, or `torch.argmax` when not sampling);
//! - `transformers/generation/configuration_utils.py`:
//!   `GenerationConfig._get_default_generation_params`, `validate`, `update`;
//! - `transformers/generation/logits_process.py`: the processors.
//!
//! # What it does
//!
//! [`resolve`] turns generate kwargs (and optionally a model's
//! `generation_config.json`, see [`GenerationConfig`]) into
//! [`GenerationParams`], raising where transformers raises. [`process_at`]
//! runs transformers' processor list ([`GenerationParams::processor_names`]
//! names it; [`Acting`] says which kwarg switched each on) over the
//! logits in transformers' order, in f32 with torch's operations. The order
//! (`_get_logits_processor`; each only when its kwarg is set to an active
//! value, see `docs/hf-sampling.md` for the table):
//!
//! 1. sequence bias, repetition penalty (greedy too), n-gram bans, bad words,
//!    min length, min new tokens, forced bos, forced eos, inf/NaN removal,
//!    the exponential length penalty, suppressed tokens, tokens suppressed at
//!    the first step; then, only when sampling:
//! 2. temperature, top-h, top-k, top-p, min-p, typical, epsilon, eta;
//! 3. last, renormalisation (`renormalize_logits`, log-softmax).
//!
//! Processors that read the generation state take it from the context
//! (`input_ids`) and the prompt length (`prompt_len`; [`process`] treats the
//! whole context as the prompt); `max_length` and `eos_token_id` come from the
//! kwargs or the generation config.
//!
//! The result ([`HfOutput`]) holds the processed scores (what `output_scores`
//! returns), the probabilities (softmax of the scores; one-hot of the argmax,
//! first index among ties, when not sampling) and the kept set.
//!
//! It deliberately does not model the other decoding methods (beam search,
//! contrastive, assisted, DoLa), classifier-free guidance (a second forward
//! pass) or watermarking in a step's distribution: [`resolve`] rejects those
//! settings instead of ignoring them. Deterministic beam search is replayed
//! whole, step by step, in [`beam`] (`compare beam`'s reference). The caller passes the `input_ids` the penalty should see;
//! transformers' exclusion of left padding (via the attention mask) is the
//! caller's job.
//!
//! # Drawing a token
//!
//! [`draw`] samples an index from [`HfOutput::probs`] with any [`rand::Rng`]:
//! the same distribution transformers samples from, not the same tokens.
//!
//! [`TorchSample::sample`] draws the very tokens transformers draws: on a
//! [`replicas::torch::TorchGenerator`] seeded like `torch.manual_seed(seed)`,
//! it runs the processors and replays torch's CPU generator and
//! `torch.multinomial(probs, 1)` (an exponential race over all V entries)
//! bit for bit, step after step (see `replicas::torch` and
//! `docs/engines/torch-seeded.md`). torch's CPU operations themselves
//! (`sort`, `softmax`, `cumsum`, `argmax`) are [`replicas::torch`]'s.
#![deny(missing_docs)]

mod acting;
pub mod beam;
mod chain;
mod constraints;
mod error;
mod fast;
mod fragile;
mod params;
mod processors;
mod request;
mod seed;
mod semantics;
mod serve;
mod torch_sample;
pub mod version;

pub use acting::{Act, Acting, NOT_IN_SAMPLER_CHAINS};
pub use constraints::Constraints;
pub use error::HfError;
pub use fast::{Dispatch, HfSampler, SamplerStep, StepPath};
pub use fragile::fragile;
pub use params::{
    GenerationConfig, GenerationParams, IgnoredFlag, ignored_flags_warning, ignored_sampling_flags,
    resolve, resolve_sampling,
};
pub(crate) use processors::Processor;
pub use request::{
    Reference, Removal, Removed, generate_kwargs as request_kwargs, generate_reference,
    portable_kwargs, routes as request_routes,
};
pub use semantics::{Hf, HfRust, Recorded, Source, provenance, rules};
pub use serve::{Refusal, ServeEndpoint, ServeReading, serve_request};
pub use torch_sample::{TorchSample, TorchSampleError};
pub use version::{Passed, TransformersVersion};

use replicas::torch;

/// Individual processors, for callers composing their own chain (candle's
/// port runs transformers' penalty, temperature and top-k on its logits).
pub mod ops {
    pub use crate::processors::{repetition_penalty, temperature, top_k};
}

/// What transformers makes of one step's logits.
#[derive(Debug, Clone, PartialEq)]
pub struct HfOutput {
    /// Processed scores (transformers' `output_scores`): f32, `-inf` where filtered.
    pub scores: Vec<f32>,
    /// The distribution transformers draws from: `softmax(scores)` when
    /// sampling, the one-hot of the greedy token otherwise.
    pub probs: Vec<f32>,
    /// Indices with `probs > 0`, ascending: the tokens that can be drawn.
    pub kept: Vec<usize>,
    /// The greedy token (`torch.argmax` of the scores, first index among ties)
    /// when not sampling.
    pub greedy: Option<usize>,
}

impl GenerationParams {
    /// The processors transformers' `_get_logits_processor` builds for these
    /// parameters, in order, for a generation whose prompt has `prompt_len`
    /// tokens (`input_ids_seq_length`: min-new-tokens, begin-suppression and
    /// the length penalty count from it, and `max_length` defaults to it plus
    /// `max_new_tokens`). Errors for values transformers' constructors (or
    /// `GenerationConfig.validate`) reject, e.g. a temperature of 0 while
    /// sampling or a negative `forced_eos_token_id`.
    pub(crate) fn processors_at(&self, prompt_len: usize) -> Result<Vec<Processor>, HfError> {
        chain::build(self, prompt_len)
    }

    /// [`Self::processors_at`] for a prompt of length 0 (which processors
    /// exist only differs from a real prompt for `min_new_tokens` and
    /// `begin_suppress_tokens`).
    pub(crate) fn processors(&self) -> Result<Vec<Processor>, HfError> {
        self.processors_at(0)
    }

    /// transformers' class names of the processors `_get_logits_processor`
    /// builds (for a prompt of length 0), in order (empty when nothing
    /// changes the logits). Errors as [`process`] does for invalid
    /// parameters: this is also how to validate them.
    pub fn processor_names(&self) -> Result<Vec<&'static str>, HfError> {
        Ok(self.processors()?.iter().map(Processor::name).collect())
    }
}

/// Run transformers' processor list over one step's `logits` (f32, length V)
/// with the context `input_ids` (prompt and generated tokens so far).
///
/// Errors: invalid parameters (as [`GenerationParams::processor_names`]), empty
/// logits, a NaN logit, a negative input id; when sampling also a `+inf` logit
/// or all logits `-inf` (torch's softmax gives NaN and `torch.multinomial`
/// raises), and processed scores that are `+inf`, NaN or all `-inf` (the
/// same raise). Ids `>= V` are ignored by the penalty, as in transformers.
pub fn process(
    logits: &[f32],
    input_ids: &[i64],
    params: &GenerationParams,
) -> Result<HfOutput, HfError> {
    process_at(logits, input_ids, input_ids.len(), params)
}

/// [`process`] for a step of a generation whose prompt was the first
/// `prompt_len` ids of `input_ids` (the rest were generated): the processors
/// that read the generation state (min new tokens, begin suppression, the
/// length penalty, forced eos at `max_length`) count from there. A
/// `prompt_len` beyond `input_ids` is an error.
pub fn process_at(
    logits: &[f32],
    input_ids: &[i64],
    prompt_len: usize,
    params: &GenerationParams,
) -> Result<HfOutput, HfError> {
    run(logits, input_ids, prompt_len, params, false).map(|(out, _)| out)
}

/// [`process_at`] and [`fragile`] in one run of the processor chain (one
/// top-p sort where the two would sort three times): the same output and
/// the same fragile decisions as calling both, for a caller that needs both
/// (`compare check` on every row).
pub fn process_with_fragile(
    logits: &[f32],
    input_ids: &[i64],
    prompt_len: usize,
    params: &GenerationParams,
) -> Result<(HfOutput, Vec<parity_core::Fragile>), HfError> {
    run(logits, input_ids, prompt_len, params, true)
}

fn run(
    logits: &[f32],
    input_ids: &[i64],
    prompt_len: usize,
    params: &GenerationParams,
    with_fragile: bool,
) -> Result<(HfOutput, Vec<parity_core::Fragile>), HfError> {
    if prompt_len > input_ids.len() {
        return Err(HfError::Invalid {
            key: "prompt_len".into(),
            message: format!(
                "prompt_len {prompt_len} is longer than input_ids ({} ids)",
                input_ids.len()
            ),
        });
    }
    let processors = params.processors_at(prompt_len)?;
    if logits.is_empty() {
        return Err(HfError::EmptyLogits);
    }
    if let Some(index) = logits.iter().position(|x| x.is_nan()) {
        return Err(HfError::NanLogit { index });
    }
    if let Some((position, &id)) = input_ids.iter().enumerate().find(|(_, id)| **id < 0) {
        return Err(HfError::NegativeInputId { position, id });
    }
    // transformers 4.57.6 and 5.0.0: `torch.gather(scores, 1, input_ids)`
    // (4.57.6 generation/logits_process.py line 402) without 5.18.0's clamp.
    if params.transformers.penalty_gathers_every_id()
        && processors
            .iter()
            .any(|p| matches!(p, Processor::RepetitionPenalty { .. }))
        && let Some((position, &id)) = input_ids
            .iter()
            .enumerate()
            .find(|(_, id)| usize::try_from(**id).is_ok_and(|i| i >= logits.len()))
    {
        return Err(HfError::InputIdOutOfRange {
            position,
            id,
            vocab: logits.len(),
            version: params.transformers.as_str(),
        });
    }
    if params.do_sample {
        if let Some(index) = logits.iter().position(|&x| x == f32::INFINITY) {
            return Err(HfError::InfLogit { index });
        }
        if logits.iter().all(|&x| x == f32::NEG_INFINITY) {
            return Err(HfError::NoFiniteLogit);
        }
    }

    let mut scores = logits.to_vec();
    let found = if with_fragile && params.do_sample {
        fragile::chain(&mut scores, input_ids, &processors)?
    } else {
        for p in &processors {
            p.apply(&mut scores, input_ids)?;
        }
        Vec::new()
    };
    let out = finish(scores, params)?;
    Ok((out, found))
}

/// Softmax (or the argmax) of the processed scores, as `generate` takes it.
fn finish(scores: Vec<f32>, params: &GenerationParams) -> Result<HfOutput, HfError> {
    if params.do_sample {
        // A penalty or temperature can overflow a huge logit to +inf: torch's
        // softmax is then NaN and `torch.multinomial` raises.
        if let Some(index) = scores.iter().position(|&x| x == f32::INFINITY) {
            return Err(HfError::InfScore { index });
        }
        // Likewise a NaN score (0/0 or -inf·0 when T or the penalty rounds
        // to 0 in f32), or every score at -inf (a tiny T or huge penalty sends
        // them all there): softmax is NaN and torch raises. Without these
        // checks the answer would be a row of NaN probabilities.
        if let Some(index) = scores.iter().position(|x| x.is_nan()) {
            return Err(HfError::NanScore { index });
        }
        if scores.iter().all(|&x| x == f32::NEG_INFINITY) {
            return Err(HfError::NoFiniteScore);
        }
        let probs = torch::softmax(&scores);
        let kept = (0..probs.len()).filter(|&i| probs[i] > 0.0).collect();
        Ok(HfOutput {
            scores,
            probs,
            kept,
            greedy: None,
        })
    } else {
        let best = argmax_first(&scores);
        let mut probs = vec![0.0; scores.len()];
        probs[best] = 1.0;
        Ok(HfOutput {
            scores,
            probs,
            kept: vec![best],
            greedy: Some(best),
        })
    }
}

/// Python's `x > 0` (false for NaN), negated where transformers writes `not (x > 0)`.
fn positive(x: f64) -> bool {
    x > 0.0
}

/// `torch.argmax` on CPU: the first index of the maximum, where NaN counts as
/// larger than any number (torch's reductions propagate NaN), so a NaN score
/// (a penalty that rounds to 0 in f32 on a logit of 0) is what greedy picks.
fn argmax_first(scores: &[f32]) -> usize {
    scores
        .iter()
        .position(|x| x.is_nan())
        .unwrap_or_else(|| torch::argmax_first(scores))
}

/// Draw one index with probability proportional to `probs` (inverse CDF over
/// the vocabulary, one uniform f64 per draw). `None` when no entry is positive
/// and finite. See the crate docs for why this never replays torch's tokens.
pub fn draw<R: rand::Rng + ?Sized>(probs: &[f32], rng: &mut R) -> Option<usize> {
    let weight = |p: f32| {
        if p > 0.0 && p.is_finite() {
            p as f64
        } else {
            0.0
        }
    };
    let total: f64 = probs.iter().map(|&p| weight(p)).sum();
    if !positive(total) {
        return None;
    }
    let u = rng.random::<f64>() * total;
    let mut acc = 0.0;
    let mut last = None;
    for (i, &p) in probs.iter().enumerate() {
        let w = weight(p);
        if w > 0.0 {
            acc += w;
            last = Some(i);
            if u < acc {
                return Some(i);
            }
        }
    }
    last
}

#[cfg(test)]
mod tests {
    use super::*;

    const NEG: f32 = f32::NEG_INFINITY;

    fn sampling() -> GenerationParams {
        GenerationParams {
            do_sample: true,
            top_k: None,
            ..GenerationParams::default()
        }
    }

    #[test]
    fn greedy_is_first_argmax_one_hot() {
        let out = process(&[1.0, 3.0, 3.0], &[], &GenerationParams::default()).expect("valid");
        assert_eq!((out.greedy, out.kept.clone()), (Some(1), vec![1]));
        assert_eq!(out.probs, vec![0.0, 1.0, 0.0]);
        // All -inf: torch.argmax returns 0.
        let out = process(&[NEG, NEG], &[], &GenerationParams::default()).expect("valid");
        assert_eq!(out.greedy, Some(0));
    }

    #[test]
    fn all_but_one_minus_inf_keeps_that_one_under_every_filter() {
        let p = GenerationParams {
            temperature: 0.5,
            top_k: Some(1),
            top_p: 0.1,
            min_p: Some(0.9),
            typical_p: 0.2,
            epsilon_cutoff: 0.5,
            eta_cutoff: 0.5,
            repetition_penalty: 1.3,
            ..sampling()
        };
        let out = process(&[NEG, 0.7, NEG], &[1], &p).expect("valid");
        assert_eq!(out.kept, vec![1]);
        assert_eq!(out.probs, vec![0.0, 1.0, 0.0]);
    }

    #[test]
    fn bad_inputs_are_rejected() {
        assert!(matches!(
            process(&[], &[], &sampling()),
            Err(HfError::EmptyLogits)
        ));
        assert!(matches!(
            process(&[0.0, f32::NAN], &[], &sampling()),
            Err(HfError::NanLogit { index: 1 })
        ));
        assert!(matches!(
            process(&[0.0], &[0, -1], &sampling()),
            Err(HfError::NegativeInputId {
                position: 1,
                id: -1
            })
        ));
        assert!(matches!(
            process(&[NEG, NEG], &[], &sampling()),
            Err(HfError::NoFiniteLogit)
        ));
        assert!(matches!(
            process(&[f32::INFINITY], &[], &sampling()),
            Err(HfError::InfLogit { index: 0 })
        ));
        let hot = GenerationParams {
            temperature: 0.5,
            ..sampling()
        };
        assert!(matches!(
            process(&[3.0e38, 0.0], &[], &hot),
            Err(HfError::InfScore { index: 0 })
        ));
    }

    #[test]
    fn scores_that_softmax_cannot_take_are_rejected_when_sampling() {
        // 1e-50 is 0.0 in f32: 0/0 is NaN, -1/0 is -inf.
        let cold = GenerationParams {
            temperature: 1e-50,
            ..sampling()
        };
        assert!(matches!(
            process(&[-1.0, 0.0], &[], &cold),
            Err(HfError::NanScore { index: 1 })
        ));
        assert!(matches!(
            process(&[-1.0, -2.0], &[], &cold),
            Err(HfError::NoFiniteScore)
        ));
        // A penalty of 1e300 is +inf in f32: negative logits go to -inf.
        let harsh = GenerationParams {
            repetition_penalty: 1e300,
            ..sampling()
        };
        assert!(matches!(
            process(&[-1.0, -2.0], &[0, 1], &harsh),
            Err(HfError::NoFiniteScore)
        ));
        // A penalty of 1e-300 is 0 in f32: -inf · 0 is NaN.
        let soft = GenerationParams {
            repetition_penalty: 1e-300,
            ..sampling()
        };
        assert!(matches!(
            process(&[NEG, 1.0], &[0], &soft),
            Err(HfError::NanScore { index: 0 })
        ));
    }

    #[test]
    fn greedy_takes_a_nan_score_like_torch_argmax() {
        // penalty 1e-300 → 0.0 in f32; the logit 0 at id 1 becomes 0/0 = NaN,
        // which torch.argmax ranks above every number.
        let p = GenerationParams {
            repetition_penalty: 1e-300,
            ..GenerationParams::default()
        };
        let out = process(&[1.0, 0.0, 2.0], &[1], &p).expect("greedy does not raise");
        assert_eq!((out.greedy, out.kept), (Some(1), vec![1]));
    }

    #[test]
    fn hand_built_params_are_validated() {
        let p = GenerationParams {
            temperature: 0.0,
            ..sampling()
        };
        assert!(matches!(
            p.processors(),
            Err(HfError::Temperature { zero: true, .. })
        ));
        let p = GenerationParams {
            top_p: 1.5,
            ..sampling()
        };
        assert!(p.processors().expect("p > 1 is ignored").is_empty());
    }
}
