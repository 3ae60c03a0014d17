//! Beam search's shared ground: the model a search runs on
//! ([`LanguageModel`]), why a search is refused ([`BeamError`]), and
//! [`BeamSearch`], a search `compare beam` runs beside the reference's.
//!
//! The reference search (transformers' `generate(num_beams=…)`, replayed)
//! and its config live in `hf_sampling::beam`; the search compared with it
//! lives in its own engine's crate and reaches the comparison library as a
//! `dyn BeamSearch` in the registry's engines. Both run on any
//! [`LanguageModel`].

/// Why a beam search was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BeamError {
    /// `num_beams` (or a search's `beam_width`) of 0.
    #[error("`num_beams` = 0: beam search needs at least one beam")]
    ZeroBeams,
    /// More sequences asked for than beams.
    #[error(
        "`num_return_sequences` = {requested} is more than `num_beams` = {num_beams} (transformers raises)"
    )]
    TooManyReturnSequences {
        /// num_return_sequences.
        requested: usize,
        /// num_beams.
        num_beams: usize,
    },
    /// `max_new_tokens` of 0.
    #[error("`max_new_tokens` = 0: nothing to generate")]
    ZeroNewTokens,
    /// An empty prompt.
    #[error("the prompt is empty")]
    EmptyPrompt,
    /// A `topk(beam_width)` over fewer tokens than beams.
    #[error("`beam_width` = {beams} is more than the vocabulary of {vocab}: torch's topk raises")]
    BeamsExceedVocabulary {
        /// beam width.
        beams: usize,
        /// vocabulary size.
        vocab: usize,
    },
    /// The model returned log-probabilities of the wrong length.
    #[error("the model returned {got} log-probabilities for a vocabulary of {vocab}")]
    LogitsLength {
        /// Length returned.
        got: usize,
        /// Vocabulary size.
        vocab: usize,
    },
    /// A NaN or +inf logit.
    #[error("`logits[{index}]` = {value} after prefix of {len} tokens: log_softmax is NaN")]
    BadLogit {
        /// Token id.
        index: usize,
        /// Value.
        value: f32,
        /// Prefix length.
        len: usize,
    },
    /// A token id a model cannot take (negative).
    #[error("token id {0} is negative")]
    NegativeId(i64),
    /// The model itself failed.
    #[error("model: {0}")]
    Model(String),
}

/// A next-token model as beam search sees it: log-probabilities as a
/// function of the whole prefix.
pub trait LanguageModel {
    /// Vocabulary size.
    fn vocab_size(&self) -> usize;
    /// `log_softmax` of the logits for the token after `ids` (float32, as
    /// transformers computes it before adding beam scores).
    fn log_probs(&self, ids: &[i64]) -> Result<Vec<f32>, BeamError>;
}

/// `lm`'s log-probabilities after `ids`, refused when there are not
/// [`LanguageModel::vocab_size`] of them.
pub fn checked_log_probs(lm: &dyn LanguageModel, ids: &[i64]) -> Result<Vec<f32>, BeamError> {
    let logits = lm.log_probs(ids)?;
    if logits.len() != lm.vocab_size() {
        return Err(BeamError::LogitsLength {
            got: logits.len(),
            vocab: lm.vocab_size(),
        });
    }
    Ok(logits)
}

/// The first generated position (0 = the first new token) where two
/// sequences with the same prompt differ, or where one ends and the other
/// goes on; `None` when they are equal. `pad` ends a padded sequence.
pub fn first_difference(a: &[i64], b: &[i64], prompt_len: usize) -> Option<usize> {
    let ga = a.get(prompt_len..).unwrap_or(&[]);
    let gb = b.get(prompt_len..).unwrap_or(&[]);
    let n = ga.len().max(gb.len());
    (0..n).find(|&i| ga.get(i) != gb.get(i))
}

/// What a compared search is asked: the reference's kwargs as far as the
/// compared search takes them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BeamRequest<'a> {
    /// `num_beams` (the beam width).
    pub num_beams: usize,
    /// `max_new_tokens` (the most steps).
    pub max_new_tokens: usize,
    /// The model's eos ids.
    pub eos_token_ids: &'a [i64],
}

/// A search's beams at the end and how long it ran.
#[derive(Debug, Clone, PartialEq)]
pub struct Beams {
    /// Best first: (score, prompt + generated tokens).
    pub beams: Vec<(f64, Vec<i64>)>,
    /// How many steps ran.
    pub steps: usize,
}

/// A beam search `compare beam` runs beside the reference's, on the same
/// models and prompts. Its names are the engine's, so the library that
/// prints them names no engine.
pub trait BeamSearch: Send + Sync {
    /// Its name: the key of its beams in `compare beam --format json`, and
    /// how the text names its rows.
    fn name(&self) -> &'static str;
    /// How the text's heading names it after "beside", e.g. "the X's".
    fn label(&self) -> &'static str;
    /// What its score is, in words.
    fn score(&self) -> &'static str;
    /// The search from `prompt`.
    fn search(
        &self,
        lm: &dyn LanguageModel,
        prompt: &[i64],
        request: &BeamRequest<'_>,
    ) -> Result<Beams, BeamError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_difference_counts_generated_positions() {
        assert_eq!(first_difference(&[1, 2, 3], &[1, 2, 3], 1), None);
        assert_eq!(first_difference(&[1, 2, 3], &[1, 2, 4], 1), Some(1));
        assert_eq!(first_difference(&[1, 2], &[1, 2, 4], 1), Some(1));
    }
}
