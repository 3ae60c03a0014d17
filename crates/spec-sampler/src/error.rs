//! The one error type of the crate: why an input line was rejected.

use thiserror::Error;

/// Why an input was rejected.
///
/// Every message names the field (and the element index inside `logits` or
/// `previous_tokens`) and quotes the offending value as it was received, so a
/// user can find the mistake without reading the code. Validation happens once,
/// when raw input becomes a typed value; the sampling math never fails.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum InputError {
    /// The text is not JSON (syntax error, invalid UTF-8, number out of range).
    #[error("invalid JSON: {0}")]
    Json(String),

    /// The JSON value is not an object.
    #[error("expected a JSON object, got {0}")]
    NotAnObject(String),

    /// A required field is absent.
    #[error("missing field `{0}`")]
    MissingField(&'static str),

    /// A field has the wrong JSON type (a string where a number belongs, a
    /// fractional `top_k`, ...).
    #[error("field `{field}` must be {expected}, got {value}")]
    WrongType {
        /// The field's name.
        field: &'static str,
        /// What the field must hold.
        expected: &'static str,
        /// The value received, quoted as JSON (shortened if long).
        value: String,
    },

    /// A numeric field lies outside the set of values with a defined meaning.
    #[error("field `{field}` must be {expected}, got {value}")]
    OutOfRange {
        /// The field's name.
        field: &'static str,
        /// The accepted range.
        expected: &'static str,
        /// The value received.
        value: String,
    },

    /// `logits` is an empty array: there is no vocabulary to sample from.
    #[error("field `logits` must not be empty")]
    EmptyLogits,

    /// One logit is neither a finite number nor the string `"-inf"`.
    #[error("`logits[{index}]` must be a finite number or the string \"-inf\", got {value}")]
    InvalidLogit {
        /// Position in `logits`, counted from 0.
        index: usize,
        /// The value received.
        value: String,
    },

    /// One entry of `previous_tokens` is not an integer.
    #[error("`previous_tokens[{index}]` must be an integer, got {value}")]
    InvalidPreviousToken {
        /// Position in `previous_tokens`, counted from 0.
        index: usize,
        /// The value received.
        value: String,
    },
}
