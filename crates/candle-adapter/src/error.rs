//! The crate's error type.

/// Everything that can go wrong in this crate. Messages quote the offending
/// value and say where it was.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AdapterError {
    /// A params field is missing, has the wrong type or an unusable value.
    #[error("candle params: field `{field}`: {problem} (got {value})")]
    Params {
        /// The JSON field name (`sampling`, `temperature`, `k`, ...).
        field: &'static str,
        /// What is wrong with it.
        problem: String,
        /// The value as given, JSON-encoded (`absent` when missing).
        value: String,
    },
    /// A params key is unknown, `null` or of the wrong type, or the
    /// variant's keys do not fit it (the message names the key, quoting the
    /// value, or the variant).
    #[error("candle params: {0}")]
    Wire(String),
    /// The logits vector is empty.
    #[error("logits are empty: candle needs at least one token")]
    EmptyLogits,
    /// A logit is NaN; no semantics can be compared on it.
    #[error("logits[{index}] is NaN")]
    NanLogit {
        /// Index of the first NaN.
        index: usize,
    },
    /// An input id cannot be a candle token id (`u32`).
    #[error("input_ids[{index}] = {value} is not a token id (candle takes u32 ids)")]
    TokenId {
        /// Position in `input_ids`.
        index: usize,
        /// The id as given.
        value: i64,
    },
    /// candle itself (or rand's `WeightedIndex`, which candle calls) returned an
    /// error. The message is candle's (or rand's) own text, e.g. "A weight is
    /// negative, too large or not a valid number" for a temperature of 0.
    #[error("candle: {message}")]
    Candle {
        /// candle's / rand's message.
        message: String,
    },
    /// transformers rejects these generation parameters (message from hf-sampling).
    #[error("transformers: {message}")]
    Transformers {
        /// hf-sampling's message (transformers' own wording).
        message: String,
    },
    /// An argument to a verification routine is unusable.
    #[error("{what}: {problem}")]
    Argument {
        /// Which argument.
        what: &'static str,
        /// What is wrong with it.
        problem: String,
    },
}

impl From<candle_core::Error> for AdapterError {
    fn from(mut e: candle_core::Error) -> Self {
        // With RUST_BACKTRACE set, candle wraps errors with a captured
        // backtrace; keep only candle's message.
        while let candle_core::Error::WithBacktrace { inner, .. } = e {
            e = *inner;
        }
        AdapterError::Candle {
            message: e.to_string(),
        }
    }
}

impl From<rand::distr::weighted::Error> for AdapterError {
    fn from(e: rand::distr::weighted::Error) -> Self {
        AdapterError::Candle {
            message: e.to_string(),
        }
    }
}
