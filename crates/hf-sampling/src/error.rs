//! The library error type.

use std::path::PathBuf;

/// Everything that can go wrong while resolving parameters or processing logits.
///
/// Messages follow transformers' own `ValueError` texts where transformers raises
/// one, and always name the offending key and quote its value as Python would
/// print it (`0.0`, `2`, `True`, `None`).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HfError {
    /// `temperature` is not a strictly positive float while sampling.
    #[error(
        "`temperature` (={value}) has to be a strictly positive float, otherwise your next token scores will be invalid.{}{}",
        if *.zero { " If you're looking for greedy decoding strategies, set `do_sample=False`." } else { "" },
        if *.string { " (The value is a JSON string: write it as a number, without quotes.)" } else { "" }
    )]
    Temperature {
        /// The value as Python prints it.
        value: String,
        /// The value is zero: the message points at `do_sample=False`.
        zero: bool,
        /// The value is a string (`"0.7"`), which Python prints as `0.7`:
        /// the message says so.
        string: bool,
    },
    /// `top_k` is negative or not an integer while sampling.
    #[error("`top_k` has to be a strictly positive integer, but is {value}")]
    TopK {
        /// The value as Python prints it.
        value: String,
    },
    /// `top_p` is negative while sampling.
    #[error("`top_p` has to be a float > 0 and < 1, but is {value}")]
    TopP {
        /// The value as Python prints it (after `float()`).
        value: String,
    },
    /// `min_p` is outside [0, 1] while sampling.
    #[error("`min_p` has to be a float in the [0, 1] interval, but is {value}")]
    MinP {
        /// The value as Python prints it.
        value: String,
    },
    /// `typical_p` is zero or negative while sampling.
    #[error("`typical_p` has to be a float > 0 and < 1, but is {value}")]
    TypicalP {
        /// The value as Python prints it (after `float()`).
        value: String,
    },
    /// `repetition_penalty` is not a strictly positive float.
    #[error(
        "`repetition_penalty` has to be a strictly positive float, but is {value} \
         (transformers: \"`penalty` has to be a strictly positive float, but is {value}\")"
    )]
    RepetitionPenalty {
        /// The value as Python prints it.
        value: String,
    },
    /// A parameter has a JSON type transformers cannot use for it.
    #[error("`{key}` must be {expected}, but is {value}")]
    WrongType {
        /// The parameter name.
        key: String,
        /// What the parameter must be.
        expected: &'static str,
        /// The value as JSON.
        value: String,
    },
    /// A kwarg that is not a generation parameter. transformers hands such
    /// kwargs to the model and raises; hf-sampling mirrors that.
    #[error(
        "`{key}` (={value}) is not a generation parameter: transformers passes it to the model and raises \
         \"The following `model_kwargs` are not used by the model: ['{key}'] (note: typos in the generate \
         arguments will also show up in this list)\""
    )]
    UnknownKwarg {
        /// The kwarg name.
        key: String,
        /// The value as JSON.
        value: String,
    },
    /// A real transformers generation parameter whose effect this crate does
    /// not model (beam search, bad words, forced tokens, ...), set to a value
    /// that would change the distribution.
    #[error(
        "`{key}` (={value}) changes transformers' distribution in a way hf-sampling does not implement"
    )]
    Unsupported {
        /// The parameter name.
        key: String,
        /// The value as JSON.
        value: String,
    },
    /// transformers' `GenerationConfig.validate` raises for this combination.
    #[error("{message}")]
    Invalid {
        /// The parameter name.
        key: String,
        /// transformers' message.
        message: String,
    },
    /// The logits are empty.
    #[error("logits are empty: the vocabulary must have at least one entry")]
    EmptyLogits,
    /// A logit is NaN.
    #[error("logit {index} is NaN")]
    NanLogit {
        /// Position in the vocabulary.
        index: usize,
    },
    /// A logit is +inf while sampling: torch's softmax turns it into NaN and
    /// `torch.multinomial` raises.
    #[error("logit {index} is +inf: softmax is NaN and torch.multinomial would raise")]
    InfLogit {
        /// Position in the vocabulary.
        index: usize,
    },
    /// A processed score overflowed to +inf while sampling (e.g. a logit near
    /// f32::MAX divided by a temperature below 1).
    #[error(
        "processed score {index} overflowed to +inf: softmax is NaN and torch.multinomial would raise \
         (\"probability tensor contains either `inf`, `nan` or element < 0\")"
    )]
    InfScore {
        /// Position in the vocabulary.
        index: usize,
    },
    /// A processed score is NaN while sampling: `0/0` or `-inf·0` when a
    /// temperature or penalty rounds to 0 in f32 (e.g. `temperature: 1e-50`),
    /// so torch's softmax is NaN and `torch.multinomial` raises.
    #[error(
        "processed score {index} is NaN (a temperature or penalty that rounds to 0 in float32): softmax is \
         NaN and torch.multinomial would raise (\"probability tensor contains either `inf`, `nan` or \
         element < 0\")"
    )]
    NanScore {
        /// Position in the vocabulary.
        index: usize,
    },
    /// Every processed score is -inf while sampling although some logit was
    /// not (a temperature or penalty pushed them all to -inf): softmax is NaN
    /// and `torch.multinomial` raises.
    #[error(
        "every processed score is -inf (a temperature or penalty overflowed the logits): softmax is NaN \
         and torch.multinomial would raise"
    )]
    NoFiniteScore,
    /// Every logit is -inf while sampling: softmax is NaN, nothing can be drawn.
    #[error("every logit is -inf: softmax is NaN and torch.multinomial would raise")]
    NoFiniteLogit,
    /// A negative token id in `input_ids` (torch's `gather`/embedding would raise
    /// "index out of bounds").
    #[error("input_ids[{position}] = {id} is negative: token ids must be >= 0")]
    NegativeInputId {
        /// Position in `input_ids`.
        position: usize,
        /// The id.
        id: i64,
    },
    /// transformers 4.57.6's and 5.0.0's `RepetitionPenaltyLogitsProcessor`
    /// gathers the scores at every input id, and an id `>= V` is out of
    /// range (5.18.0 and later ignore such ids).
    #[error(
        "index {id} is out of bounds for dimension 1 with size {vocab} (input_ids[{position}]: \
         transformers {version}'s repetition penalty gathers every input id; 5.18.0 and later \
         ignore ids >= V)"
    )]
    InputIdOutOfRange {
        /// Position in `input_ids`.
        position: usize,
        /// The id.
        id: i64,
        /// V.
        vocab: usize,
        /// The version asked for.
        version: &'static str,
    },
    /// `generation_config.json` is not valid JSON. The parser's message is the
    /// error's source, not part of this message, so that a caller printing the
    /// chain (`anyhow`'s `{:#}`) does not show it twice.
    #[error("generation_config.json is not valid JSON")]
    Json(#[from] serde_json::Error),
    /// `generation_config.json` is valid JSON but not an object.
    #[error("generation_config.json must be a JSON object, but is {found}")]
    NotAnObject {
        /// The JSON type found.
        found: &'static str,
    },
    /// `generation_config.json` could not be read (the I/O error is the source,
    /// for the same reason as [`HfError::Json`]).
    #[error("{}: cannot read generation config", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}
