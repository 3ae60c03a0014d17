//! The tutorial's beam search, and the comparison of its beams with
//! transformers 5.23's (replayed by [`hf_sampling::beam`]) on one model and
//! prompt.
//!
//! # The tutorial (TorchCode ch. 6, section 6.2)
//!
//! [`tutorial_beam_search`]: start from one beam (score 0, the prompt); at each
//! of `max_len` steps a beam whose last token is eos is carried over as it
//! is, every other beam is extended by its `beam_width` most likely tokens
//! (`topk` of the log-probabilities, scores summed as Python floats); all
//! candidates are sorted by score, descending and stable (Python's
//! `sort(reverse=True)`), and the best `beam_width` kept; it stops as soon as
//! the best beam ends with eos. No length normalisation, no separate finished
//! set: a finished beam competes with the running ones at its raw score.
//!
//! Both searches run on any [`LanguageModel`] (`parity_core::beam`);
//! [`TutorialSearch`] is this search as `compare beam` runs it beside
//! transformers'.

use hf_sampling::beam::{BeamConfig, BeamOutput, topk, transformers_beam_search};
pub use parity_core::beam::first_difference;
pub use parity_core::beam::{BeamError, LanguageModel};
use parity_core::beam::{BeamRequest, BeamSearch, Beams, checked_log_probs};

/// The tutorial's beam search result.
#[derive(Debug, Clone, PartialEq)]
pub struct TutorialBeams {
    /// The beams at the end, best first: (sum of log-probabilities, prompt +
    /// generated tokens). The tutorial returns `beams[0]`'s sequence.
    pub beams: Vec<(f64, Vec<i64>)>,
    /// How many steps ran.
    pub steps: usize,
}

/// The tutorial's beam search from `prompt` (its `start_token` generalised
/// to a prompt), for at most `max_len` steps.
pub fn tutorial_beam_search(
    lm: &dyn LanguageModel,
    prompt: &[i64],
    max_len: usize,
    beam_width: usize,
    eos: i64,
) -> Result<TutorialBeams, BeamError> {
    if beam_width == 0 {
        return Err(BeamError::ZeroBeams);
    }
    if prompt.is_empty() {
        return Err(BeamError::EmptyPrompt);
    }
    let v = lm.vocab_size();
    if beam_width > v {
        return Err(BeamError::BeamsExceedVocabulary {
            beams: beam_width,
            vocab: v,
        });
    }
    let mut beams: Vec<(f64, Vec<i64>)> = vec![(0.0, prompt.to_vec())];
    let mut steps = 0;
    for _ in 0..max_len {
        steps += 1;
        let mut candidates = Vec::new();
        for (score, seq) in &beams {
            if seq.last() == Some(&eos) {
                candidates.push((*score, seq.clone()));
                continue;
            }
            let lp = checked_log_probs(lm, seq)?;
            for t in topk(&lp, beam_width) {
                let mut s = seq.clone();
                s.push(t as i64);
                candidates.push((score + f64::from(lp[t]), s));
            }
        }
        // Stable, descending: equal scores keep their order.
        candidates.sort_by(|a, b| b.0.total_cmp(&a.0));
        candidates.truncate(beam_width);
        beams = candidates;
        if beams[0].1.last() == Some(&eos) {
            break;
        }
    }
    Ok(TutorialBeams { beams, steps })
}

/// transformers' best beams beside the tutorial's, on the same model and
/// prompt.
#[derive(Debug, Clone, PartialEq)]
pub struct BeamComparison {
    /// transformers 5.23's output.
    pub transformers: BeamOutput,
    /// The tutorial's beams (`beam_width = num_beams`, `max_len =
    /// max_new_tokens`, eos = the first eos id).
    pub tutorial: TutorialBeams,
    /// The first generated position where transformers' best sequence and
    /// the tutorial's differ (`None`: the same sequence).
    pub first_difference: Option<usize>,
}

/// Runs both beam searches and finds where their best sequences part.
pub fn compare_beams(
    lm: &dyn LanguageModel,
    prompt: &[i64],
    config: &BeamConfig,
) -> Result<BeamComparison, BeamError> {
    let transformers = transformers_beam_search(lm, prompt, config)?;
    let eos = config.eos_token_ids.first().copied().unwrap_or(-1);
    let tutorial = tutorial_beam_search(lm, prompt, config.max_new_tokens, config.num_beams, eos)?;
    let best = &transformers.sequences[0][..prompt.len() + transformers.lengths[0]];
    let first_difference = first_difference(best, &tutorial.beams[0].1, prompt.len());
    Ok(BeamComparison {
        transformers,
        tutorial,
        first_difference,
    })
}

/// The tutorial's beam search as `compare beam` runs it beside
/// transformers': `beam_width = num_beams`, `max_len = max_new_tokens`, eos
/// = the first eos id.
#[derive(Debug, Clone, Copy, Default)]
pub struct TutorialSearch;

impl BeamSearch for TutorialSearch {
    fn name(&self) -> &'static str {
        "tutorial"
    }

    fn label(&self) -> &'static str {
        "the tutorial's"
    }

    fn score(&self) -> &'static str {
        "sum of log-probabilities"
    }

    fn search(
        &self,
        lm: &dyn LanguageModel,
        prompt: &[i64],
        request: &BeamRequest<'_>,
    ) -> Result<Beams, BeamError> {
        let eos = request.eos_token_ids.first().copied().unwrap_or(-1);
        let TutorialBeams { beams, steps } =
            tutorial_beam_search(lm, prompt, request.max_new_tokens, request.num_beams, eos)?;
        Ok(Beams { beams, steps })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hf_sampling::beam::{EarlyStopping, log_softmax};

    /// The tutorial's own test model: log-probability 0 for token
    /// min(len, 4), -10 elsewhere, over 5 tokens.
    struct Staircase;

    impl LanguageModel for Staircase {
        fn vocab_size(&self) -> usize {
            5
        }
        fn log_probs(&self, ids: &[i64]) -> Result<Vec<f32>, BeamError> {
            let mut l = vec![-10.0; 5];
            l[ids.len().min(4)] = 0.0;
            log_softmax(&l, ids.len())
        }
    }

    #[test]
    fn the_tutorials_example_walks_the_staircase() {
        // From [0]: steps pick 1, 2, 3, 4 (= eos), then the best beam ends.
        let r = tutorial_beam_search(&Staircase, &[0], 5, 2, 4).expect("valid");
        assert_eq!(r.beams[0].1, vec![0, 1, 2, 3, 4]);
        assert_eq!(r.steps, 4);
        // Each step's log-probability is -ln(1 + 4e^-10) = -1.8158323e-4 (logit 0
        // against four -10s), rounded to f32 (-1.8158324e-4); four of them sum
        // to -7.2633295e-4.
        assert_eq!(r.beams[0].0, -0.000_726_332_946_214_824_9);
    }

    #[test]
    fn refusals() {
        assert_eq!(
            tutorial_beam_search(&Staircase, &[0], 3, 6, 4),
            Err(BeamError::BeamsExceedVocabulary { beams: 6, vocab: 5 })
        );
        assert_eq!(
            tutorial_beam_search(&Staircase, &[0], 3, 0, 4),
            Err(BeamError::ZeroBeams)
        );
    }

    /// After [0]: probabilities [0, 0.4, 0.1, 0.5] (eos = 3); after [0, 1]:
    /// eos almost surely; anything else: uniform.
    struct Detour;

    impl LanguageModel for Detour {
        fn vocab_size(&self) -> usize {
            4
        }
        fn log_probs(&self, ids: &[i64]) -> Result<Vec<f32>, BeamError> {
            let logits = match ids {
                [0] => vec![f32::NEG_INFINITY, 0.4f32.ln(), 0.1f32.ln(), 0.5f32.ln()],
                [0, 1] => vec![-30.0, -30.0, -30.0, 0.0],
                _ => vec![0.0; 4],
            };
            log_softmax(&logits, ids.len())
        }
    }

    #[test]
    fn the_tutorial_stops_where_transformers_goes_on() {
        let cfg = BeamConfig {
            num_beams: 2,
            length_penalty: 1.0,
            early_stopping: EarlyStopping::Heuristic,
            num_return_sequences: 2,
            max_new_tokens: 4,
            eos_token_ids: vec![3],
            pad_token_id: Some(2),
        };
        let c = compare_beams(&Detour, &[0], &cfg).expect("valid");
        // The tutorial: after one step its best beam [0, 3] (ln 0.5 = -0.6931)
        // beats [0, 1] (ln 0.4 = -0.9163) and has ended: it stops.
        assert_eq!(c.tutorial.beams[0].1, vec![0, 3]);
        assert_eq!(c.tutorial.steps, 1);
        // transformers keeps [0, 3] as finished (-0.6931 / 1) and goes on;
        // [0, 1, 3] scores (ln 0.4 + ln(1/(1 + 3e^-30))) / 2 = -0.4581 and wins.
        assert_eq!(c.transformers.sequences, vec![vec![0, 1, 3], vec![0, 3, 2]]);
        let ln = |x: f32| f64::from(x.ln());
        assert!((f64::from(c.transformers.scores[0]) - ln(0.4) / 2.0).abs() < 1e-6);
        assert!((f64::from(c.transformers.scores[1]) - ln(0.5)).abs() < 1e-6);
        assert_eq!(c.first_difference, Some(0));
    }
}
