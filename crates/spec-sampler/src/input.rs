//! Validated input: newtypes for each parameter, [`Params`], [`Logits`] and
//! [`Input`], and their construction from the spec's JSON.
//!
//! Every constructor, whether it starts from JSON or from Rust values, goes
//! through the same checks, so a value of these types is always meaningful
//! and the sampling math in [`crate::sampler`] cannot fail.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::InputError;

/// Longest quoted value kept in an error message, in characters.
const MAX_QUOTE: usize = 80;

/// Quotes a JSON value for an error message, shortened when long.
fn quote(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() <= MAX_QUOTE {
        text
    } else {
        let mut short: String = text.chars().take(MAX_QUOTE).collect();
        short.push('…');
        short
    }
}

/// Quotes an `f64` for an error message (`1.5`, `NaN`, `inf`, `1e300`).
fn quote_f64(value: f64) -> String {
    format!("{value:?}")
}

/// A JSON integer, or a JSON number with an integral value such as `2.0` or
/// `1e9`, saturated to the `i64` range. `None` for anything else.
pub(crate) fn as_integer(value: &Value) -> Option<i64> {
    let Value::Number(n) = value else {
        return None;
    };
    if let Some(i) = n.as_i64() {
        return Some(i);
    }
    if n.as_u64().is_some() {
        // Above i64::MAX: saturate; every caller treats it as "huge".
        return Some(i64::MAX);
    }
    let f = n.as_f64()?;
    // `as` saturates for out-of-range floats, so this cannot overflow.
    (f.is_finite() && f.fract() == 0.0).then_some(f as i64)
}

fn field<'a>(object: &'a Map<String, Value>, name: &'static str) -> Result<&'a Value, InputError> {
    object.get(name).ok_or(InputError::MissingField(name))
}

fn number_field(object: &Map<String, Value>, name: &'static str) -> Result<f64, InputError> {
    let value = field(object, name)?;
    value.as_f64().ok_or_else(|| InputError::WrongType {
        field: name,
        expected: "a number",
        value: quote(value),
    })
}

fn as_object(value: &Value) -> Result<&Map<String, Value>, InputError> {
    value
        .as_object()
        .ok_or_else(|| InputError::NotAnObject(quote(value)))
}

macro_rules! float_newtype {
    (
        $(#[$meta:meta])*
        $name:ident, $field:literal, $expected:literal, |$v:ident| $ok:expr
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
        pub struct $name(f64);

        impl $name {
            #[doc = concat!("Validates `", $field, "`: it must be ", $expected, ".")]
            pub fn new($v: f64) -> Result<Self, InputError> {
                if $ok {
                    Ok(Self($v))
                } else {
                    Err(InputError::OutOfRange {
                        field: $field,
                        expected: $expected,
                        value: quote_f64($v),
                    })
                }
            }

            /// The validated value.
            pub fn get(self) -> f64 {
                self.0
            }
        }

        impl TryFrom<f64> for $name {
            type Error = InputError;
            fn try_from(value: f64) -> Result<Self, InputError> {
                Self::new(value)
            }
        }
    };
}

float_newtype!(
    /// `temperature`: finite and ≥ 0. Zero means greedy decoding. Values above
    /// the spec's stated maximum of 100 are accepted: they are well defined.
    Temperature, "temperature", "a finite number >= 0", |v| v.is_finite() && v >= 0.0
);

float_newtype!(
    /// `top_p`: finite, in (0, 1]. 1 disables nucleus filtering.
    TopP, "top_p", "a number in (0, 1]", |v| v > 0.0 && v <= 1.0
);

float_newtype!(
    /// `repetition_penalty`: finite and > 0. The spec states [1, 100]; values in
    /// (0, 1) (a bonus instead of a penalty) and above 100 are accepted because
    /// the rule is well defined for them. 1 leaves the logits unchanged.
    RepetitionPenalty, "repetition_penalty", "a finite number > 0", |v| v.is_finite() && v > 0.0
);

float_newtype!(
    /// `u`: the uniform number for inverse-transform sampling, in [0, 1).
    U, "u", "a number in [0, 1)", |v| (0.0..1.0).contains(&v)
);

/// `top_k`: how many of the largest logits to keep.
///
/// Any integer is valid: `≤ 0` disables the filter, and so does any `k ≥ V`
/// (which keeps everything). From JSON, an integral float such as `2.0` or
/// `1e9` is accepted as the integer it denotes; `1.5` is rejected. Integers
/// beyond the `i64` range saturate, which does not change their meaning.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TopK(i64);

impl TopK {
    /// Wraps any integer; there is nothing to reject.
    pub fn new(k: i64) -> Self {
        Self(k)
    }

    /// The value as given (saturated to `i64`).
    pub fn get(self) -> i64 {
        self.0
    }

    /// How many entries to keep for a vocabulary of `vocab` tokens, or `None`
    /// when the filter keeps everything (`k ≤ 0` or `k ≥ vocab`).
    pub fn effective(self, vocab: usize) -> Option<usize> {
        let k = usize::try_from(self.0).ok().filter(|&k| k > 0)?;
        (k < vocab).then_some(k)
    }

    fn from_json(value: &Value) -> Result<Self, InputError> {
        as_integer(value)
            .map(Self)
            .ok_or_else(|| InputError::WrongType {
                field: "top_k",
                expected: "an integer",
                value: quote(value),
            })
    }
}

impl From<i64> for TopK {
    fn from(k: i64) -> Self {
        Self(k)
    }
}

/// The sampling parameters of one input, each validated.
///
/// Build one from a JSON object holding `temperature`, `top_k`, `top_p`,
/// `repetition_penalty` and `u` ([`Params::from_json`]; other keys are
/// ignored), or from the validated newtypes directly.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Params {
    /// Temperature; 0 means greedy.
    pub temperature: Temperature,
    /// Top-k filter.
    pub top_k: TopK,
    /// Nucleus threshold.
    pub top_p: TopP,
    /// Repetition penalty.
    pub repetition_penalty: RepetitionPenalty,
    /// The uniform number of the draw.
    pub u: U,
}

impl Params {
    /// Reads and validates the five parameters from a JSON object. Unknown
    /// keys (`logits`, `previous_tokens`, anything else) are ignored, so the
    /// whole spec line, or a `"params"` sub-object, can be passed as is.
    pub fn from_json(value: &Value) -> Result<Self, InputError> {
        Self::from_object(as_object(value)?)
    }

    fn from_object(object: &Map<String, Value>) -> Result<Self, InputError> {
        Ok(Self {
            temperature: Temperature::new(number_field(object, "temperature")?)?,
            top_k: TopK::from_json(field(object, "top_k")?)?,
            top_p: TopP::new(number_field(object, "top_p")?)?,
            repetition_penalty: RepetitionPenalty::new(number_field(
                object,
                "repetition_penalty",
            )?)?,
            u: U::new(number_field(object, "u")?)?,
        })
    }

    /// Writes the parameters into a JSON object (the keys of the spec).
    fn write_into(&self, object: &mut Map<String, Value>) {
        object.insert("temperature".into(), self.temperature.get().into());
        object.insert("top_k".into(), self.top_k.get().into());
        object.insert("top_p".into(), self.top_p.get().into());
        object.insert(
            "repetition_penalty".into(),
            self.repetition_penalty.get().into(),
        );
        object.insert("u".into(), self.u.get().into());
    }

    /// The parameters as a JSON object with the spec's keys.
    pub fn to_json(&self) -> Value {
        let mut object = Map::new();
        self.write_into(&mut object);
        Value::Object(object)
    }
}

/// The logits: a non-empty vector of finite numbers and `-inf`.
///
/// NaN and `+inf` are rejected (the spec has no meaning for them); `-inf`
/// marks a token that can never be chosen. In JSON, `-inf` is written as the
/// string `"-inf"`, exactly; `"inf"`, `"+inf"`, `"-Infinity"`, `"nan"` and
/// every other string are rejected with their index.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Logits(Vec<f64>);

impl Logits {
    /// Validates a vector of logits (`f64::NEG_INFINITY` allowed).
    pub(crate) fn new(values: Vec<f64>) -> Result<Self, InputError> {
        if values.is_empty() {
            return Err(InputError::EmptyLogits);
        }
        if let Some(index) = values
            .iter()
            .position(|v| v.is_nan() || *v == f64::INFINITY)
        {
            return Err(InputError::InvalidLogit {
                index,
                value: quote_f64(values[index]),
            });
        }
        Ok(Self(values))
    }

    /// Validates a JSON array of numbers and `"-inf"` strings.
    pub(crate) fn from_json(value: &Value) -> Result<Self, InputError> {
        let Value::Array(items) = value else {
            return Err(InputError::WrongType {
                field: "logits",
                expected: "an array",
                value: quote(value),
            });
        };
        let mut values = Vec::with_capacity(items.len());
        for (index, item) in items.iter().enumerate() {
            let logit = match item {
                Value::Number(n) => n.as_f64(),
                Value::String(s) if s == "-inf" => Some(f64::NEG_INFINITY),
                _ => None,
            };
            match logit {
                Some(v) => values.push(v),
                None => {
                    return Err(InputError::InvalidLogit {
                        index,
                        value: quote(item),
                    });
                }
            }
        }
        Self::new(values)
    }

    /// The logits.
    pub(crate) fn as_slice(&self) -> &[f64] {
        &self.0
    }

    /// The logits as the spec's JSON array (`-inf` as the string `"-inf"`).
    pub(crate) fn to_json(&self) -> Value {
        Value::Array(
            self.0
                .iter()
                .map(|&v| {
                    if v == f64::NEG_INFINITY {
                        Value::from("-inf")
                    } else {
                        Value::from(v)
                    }
                })
                .collect(),
        )
    }
}

fn previous_tokens_from_json(value: &Value) -> Result<Vec<i64>, InputError> {
    let Value::Array(items) = value else {
        return Err(InputError::WrongType {
            field: "previous_tokens",
            expected: "an array of integers",
            value: quote(value),
        });
    };
    items
        .iter()
        .enumerate()
        .map(|(index, item)| {
            as_integer(item).ok_or_else(|| InputError::InvalidPreviousToken {
                index,
                value: quote(item),
            })
        })
        .collect()
}

/// One validated sampling problem: logits, previously generated tokens and
/// parameters.
///
/// `previous_tokens` may hold anything integral: duplicates and indices
/// outside `0..V` (negative or huge) are kept here and ignored by the penalty
/// step, as the spec says. Integers beyond `i64` saturate (they are out of
/// range either way).
#[derive(Debug, Clone, PartialEq)]
pub struct Input {
    logits: Logits,
    previous_tokens: Vec<i64>,
    params: Params,
}

impl Input {
    /// Assembles an input from parts that are already valid.
    fn new(logits: Logits, previous_tokens: Vec<i64>, params: Params) -> Self {
        Self {
            logits,
            previous_tokens,
            params,
        }
    }

    /// Builds an input from raw logits (`f64::NEG_INFINITY` allowed),
    /// validating them.
    pub fn from_parts(
        logits: Vec<f64>,
        previous_tokens: Vec<i64>,
        params: Params,
    ) -> Result<Self, InputError> {
        Ok(Self::new(Logits::new(logits)?, previous_tokens, params))
    }

    /// Builds an input from logits given as a JSON array (numbers and
    /// `"-inf"`), validating them.
    pub fn from_json_parts(
        logits: &Value,
        previous_tokens: Vec<i64>,
        params: Params,
    ) -> Result<Self, InputError> {
        Ok(Self::new(
            Logits::from_json(logits)?,
            previous_tokens,
            params,
        ))
    }

    /// Parses and validates one line of the spec's input format.
    pub fn from_json_str(text: &str) -> Result<Self, InputError> {
        Self::from_json_slice(text.as_bytes())
    }

    /// Like [`Input::from_json_str`], from bytes; invalid UTF-8 is reported as
    /// [`InputError::Json`].
    pub fn from_json_slice(bytes: &[u8]) -> Result<Self, InputError> {
        let value: Value =
            serde_json::from_slice(bytes).map_err(|e| InputError::Json(e.to_string()))?;
        Self::from_json(&value)
    }

    /// Validates a parsed JSON object in the spec's input format. Fields are
    /// checked in the spec's order (`logits`, `temperature`, `top_k`, `top_p`,
    /// `repetition_penalty`, `previous_tokens`, `u`) and the first problem is
    /// reported. Unknown keys are ignored.
    pub fn from_json(value: &Value) -> Result<Self, InputError> {
        let object = as_object(value)?;
        let logits = Logits::from_json(field(object, "logits")?)?;
        let temperature = Temperature::new(number_field(object, "temperature")?)?;
        let top_k = TopK::from_json(field(object, "top_k")?)?;
        let top_p = TopP::new(number_field(object, "top_p")?)?;
        let repetition_penalty =
            RepetitionPenalty::new(number_field(object, "repetition_penalty")?)?;
        let previous_tokens = previous_tokens_from_json(field(object, "previous_tokens")?)?;
        let u = U::new(number_field(object, "u")?)?;
        let params = Params {
            temperature,
            top_k,
            top_p,
            repetition_penalty,
            u,
        };
        Ok(Self::new(logits, previous_tokens, params))
    }

    /// The input in the spec's JSON format (one flat object).
    pub fn to_json(&self) -> Value {
        let mut object = Map::new();
        object.insert("logits".into(), self.logits.to_json());
        self.params.write_into(&mut object);
        object.insert(
            "previous_tokens".into(),
            Value::from(self.previous_tokens.clone()),
        );
        Value::Object(object)
    }

    /// The logits (validated: `-inf` or finite, at least one).
    pub fn logits(&self) -> &[f64] {
        self.logits.as_slice()
    }

    /// The previous tokens as given (duplicates and out-of-range included).
    pub fn previous_tokens(&self) -> &[i64] {
        &self.previous_tokens
    }

    /// The parameters.
    pub fn params(&self) -> &Params {
        &self.params
    }
}

impl std::str::FromStr for Input {
    type Err = InputError;
    fn from_str(text: &str) -> Result<Self, InputError> {
        Self::from_json_str(text)
    }
}

/// The JSON conversions shared by [`Params`] and [`Input`], both built on
/// their `from_json` and `to_json`: `TryFrom<&Value>`, `TryFrom<Value>`,
/// `Serialize` and `Deserialize`.
macro_rules! json_conversions {
    ($($name:ident),+) => {$(
        impl TryFrom<&Value> for $name {
            type Error = InputError;
            fn try_from(value: &Value) -> Result<Self, InputError> {
                Self::from_json(value)
            }
        }

        impl TryFrom<Value> for $name {
            type Error = InputError;
            fn try_from(value: Value) -> Result<Self, InputError> {
                Self::from_json(&value)
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                self.to_json().serialize(serializer)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let value = Value::deserialize(deserializer)?;
                Self::from_json(&value).map_err(serde::de::Error::custom)
            }
        }
    )+};
}

json_conversions!(Params, Input);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn integral_floats_count_as_integers() {
        assert_eq!(as_integer(&json!(2.0)), Some(2));
        assert_eq!(as_integer(&json!(-1.0)), Some(-1));
        assert_eq!(as_integer(&json!(1e30)), Some(i64::MAX));
        assert_eq!(as_integer(&json!(-1e30)), Some(i64::MIN));
        assert_eq!(as_integer(&json!(u64::MAX)), Some(i64::MAX));
        assert_eq!(as_integer(&json!(1.5)), None);
        assert_eq!(as_integer(&json!("2")), None);
        assert_eq!(as_integer(&json!(null)), None);
    }

    #[test]
    fn top_k_effective() {
        assert_eq!(TopK::new(-1).effective(4), None);
        assert_eq!(TopK::new(0).effective(4), None);
        assert_eq!(TopK::new(1).effective(4), Some(1));
        assert_eq!(TopK::new(3).effective(4), Some(3));
        assert_eq!(TopK::new(4).effective(4), None);
        assert_eq!(TopK::new(1_000_000).effective(4), None);
        assert_eq!(TopK::new(i64::MAX).effective(4), None);
        assert_eq!(TopK::new(i64::MIN).effective(4), None);
    }

    #[test]
    fn newtype_bounds() {
        assert!(Temperature::new(0.0).is_ok());
        assert!(Temperature::new(150.0).is_ok());
        assert!(Temperature::new(-0.1).is_err());
        assert!(Temperature::new(f64::INFINITY).is_err());
        assert!(Temperature::new(f64::NAN).is_err());
        assert!(TopP::new(1.0).is_ok());
        assert!(TopP::new(1e-300).is_ok());
        assert!(TopP::new(0.0).is_err());
        assert!(TopP::new(1.0000000000000002).is_err());
        assert!(TopP::new(f64::NAN).is_err());
        assert!(RepetitionPenalty::new(0.5).is_ok());
        assert!(RepetitionPenalty::new(0.0).is_err());
        assert!(RepetitionPenalty::new(f64::INFINITY).is_err());
        assert!(U::new(0.0).is_ok());
        assert!(U::new(0.9999999999999999).is_ok());
        assert!(U::new(1.0).is_err());
        assert!(U::new(-0.0).is_ok());
        assert!(U::new(-1e-300).is_err());
    }

    #[test]
    fn long_values_are_shortened_in_messages() {
        let long = Value::from("x".repeat(500));
        let quoted = quote(&long);
        assert_eq!(quoted.chars().count(), MAX_QUOTE + 1);
        assert!(quoted.ends_with('…'));
    }

    #[test]
    fn round_trips_through_json() {
        let line = r#"{"logits": [1.5, "-inf", -2], "temperature": 0.5, "top_k": 2,
            "top_p": 0.9, "repetition_penalty": 1.2, "previous_tokens": [0, 7, -1], "u": 0.25}"#;
        let input = Input::from_json_str(line).expect("valid");
        let again = Input::from_json(&input.to_json()).expect("valid");
        assert_eq!(input, again);
        let via_serde: Input = serde_json::from_str(line).expect("valid");
        assert_eq!(input, via_serde);
    }
}
