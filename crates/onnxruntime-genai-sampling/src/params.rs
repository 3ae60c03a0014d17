//! ONNX Runtime GenAI's search options (`Config::Search`, src/config.h), read
//! as `GeneratorParams.set_search_options(**options)` and a
//! `genai_config.json` `"search"` object read them.
//!
//! Rules (src/config.cpp `Search_Element::OnValue`, src/python/python.cpp
//! `SetSearchOptions`, src/generators.cpp `InitializeSamplingMethod`; read at
//! microsoft/onnxruntime-genai a0c04eb13, 0.16.0-dev, and checked against
//! the 0.18.0 wheel by the recorded cases):
//!
//! * A name `Search` does not know is refused (`Unknown value "NAME"`).
//! * `do_sample` takes a bool. The number fields take any number; the
//!   integer ones (`top_k`, `random_seed`, `num_beams`,
//!   `no_repeat_ngram_size`) go through `SafeDoubleToInt`, which refuses
//!   NaN/±inf, values outside int32 and fractions; the float ones (`top_p`,
//!   `temperature`, `repetition_penalty`) are rounded to float.
//! * When the generator is made with sampling on (not greedy), `top_p`
//!   outside [0, 1], a negative `top_k` and a `top_k` above the vocabulary
//!   are refused, and sampling with more than one beam.
//!
//! `draws` is this crate's: how many tokens to replay from the engine's
//! `std::mt19937` seeded with `random_seed`.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use parity_core::Error;
use parity_core::params::{Null, from_map, verbatim};

/// The most draws one request may ask to replay.
pub(crate) const MAX_DRAWS: u64 = 10_000_000;

parity_core::params! {
    /// The search options that decide a CPU sampling step, after ONNX
    /// Runtime GenAI read them (its defaults: `struct Search` in
    /// src/config.h).
    #[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
    #[serde(default, deny_unknown_fields)]
    pub struct SearchParams {
        /// `do_sample`: false (the default) takes the argmax whatever the
        /// other options say.
        #[serde(deserialize_with = "boolean")]
        pub do_sample: bool = false
            => "false = argmax (the default); sampling needs true",
        /// `top_k`: the default 50 applies whenever sampling is on; 1 is
        /// greedy; 0 switches top-k off, which leaves nucleus sampling with
        /// `top_p`.
        #[serde(deserialize_with = "int")]
        pub top_k: i32 = 50
            => "50; > 1: exactly k by std::partial_sort; 1 = greedy; 0 = nucleus only",
        /// `top_p`: used when 0 < top_p < 1; the default 0 with `top_k` 0
        /// keeps one token.
        #[serde(deserialize_with = "float")]
        pub top_p: f32 = 0.0
            => "0 (off with top_k > 1; with top_k 0 or 1 the nucleus of mass 0: one token)",
        /// `temperature`: 0 is greedy; otherwise the scores are multiplied
        /// by `1 / temperature` inside the softmax.
        #[serde(deserialize_with = "float")]
        pub temperature: f32 = 1.0 => "exp((score - max) * (1/T)); 0 = greedy",
        /// `repetition_penalty`: transformers' rule on every id of the
        /// sequence (prompt and generated).
        #[serde(deserialize_with = "float")]
        pub repetition_penalty: f32 = 1.0
            => "score < 0 ? score * p : score / p, once per id of the whole sequence",
        /// `no_repeat_ngram_size`: > 0 bans the tokens that would repeat an
        /// n-gram of the sequence (their score becomes the lowest float).
        #[serde(deserialize_with = "int")]
        pub no_repeat_ngram_size: i32 = 0 => "0 = off; > 0 bans repeated n-grams",
        /// `num_beams`: only 1 is a sampling step (beam search is refused
        /// with sampling, and is not this semantics).
        #[serde(deserialize_with = "int")]
        pub num_beams: i32 = 1 => "only 1 (beam search is not reproduced)",
        /// `random_seed`: ≥ 0 seeds the generator's `std::mt19937`; -1 (the
        /// default) seeds it from `std::random_device`.
        #[serde(deserialize_with = "int")]
        pub random_seed: i32 = -1
            => "-1 = std::random_device (not reproducible); >= 0 seeds std::mt19937",
        /// How many tokens to replay (this crate's): the first `draws` the
        /// generator seeded with `random_seed` returns on these logits, the
        /// context held fixed.
        pub draws: Option<u64> => "tokens replayed from std::mt19937(random_seed) (this crate's)",
    }
}

/// `JSON::Get<bool>`: a bool, else the type-mismatch error.
fn boolean<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    match Value::deserialize(d)? {
        Value::Bool(b) => Ok(b),
        other => Err(verbatim(format_args!(
            "`do_sample` = {other}: ONNX Runtime GenAI refuses it (do_sample - Expected a bool but saw a {})",
            json_kind(&other)
        ))),
    }
}

/// A number field: `JSON::Get<double>`, then for the integer fields
/// `SafeDoubleToInt` (src/config.cpp).
fn int<'de, D: Deserializer<'de>>(d: D) -> Result<i32, D::Error> {
    let x = number(d)?;
    if !x.is_finite() {
        return Err(serde::de::Error::custom(
            "cannot be converted to int32 (NaN or Inf)",
        ));
    }
    if x < f64::from(i32::MIN) || x > f64::from(i32::MAX) {
        return Err(serde::de::Error::custom(format_args!(
            "value {x} is out of int32 range [-2147483648, 2147483647]"
        )));
    }
    if x != x.trunc() {
        return Err(serde::de::Error::custom(format_args!(
            "value {x} is not an integer"
        )));
    }
    Ok(x as i32)
}

/// A float field: `static_cast<float>(JSON::Get<double>(value))`.
fn float<'de, D: Deserializer<'de>>(d: D) -> Result<f32, D::Error> {
    Ok(number(d)? as f32)
}

fn number<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    match Value::deserialize(d)? {
        Value::Number(n) => Ok(parity_core::py::PyNum::of(&n).float()),
        other => Err(serde::de::Error::custom(format_args!(
            "ONNX Runtime GenAI refuses it (Expected a number but saw a {})",
            json_kind(&other)
        ))),
    }
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Reads the options; a name `Search` does not know is refused.
pub(crate) fn parse(params: &Map<String, Value>) -> Result<SearchParams, Error> {
    let p: SearchParams = from_map(
        params,
        "onnxruntime-genai (its search options)",
        SearchParams::FIELDS,
        Null::Value,
    )?;
    if let Some(n) = p.draws {
        parity_core::ensure!(
            n <= MAX_DRAWS,
            "`draws` = {n}: at most {MAX_DRAWS} draws are replayed"
        );
        parity_core::ensure!(
            p.random_seed >= 0,
            "`draws` needs a `random_seed` >= 0: with -1 ONNX Runtime GenAI seeds from std::random_device"
        );
    }
    Ok(p)
}

/// How a step samples (`Generator::SamplingMethod`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// `SelectTop`: the first index of the maximum.
    Greedy,
    /// `SampleTopKTopP`: top-k, then the nucleus inside it.
    TopKTopP,
    /// `SampleTopK`.
    TopK,
    /// `SampleTopP`: the nucleus over the whole vocabulary.
    TopP,
}

impl SearchParams {
    /// `InitializeSamplingMethod` (src/generators.cpp), with its errors, for
    /// a vocabulary of `n_vocab`.
    pub(crate) fn mode(&self, n_vocab: usize) -> Result<Mode, Error> {
        // The Generator constructor's checks come first (generators.cpp:596-613).
        parity_core::ensure!(
            (1..=32).contains(&self.num_beams),
            "`num_beams` = {n}: ONNX Runtime GenAI refuses it (num_beams ({n}) must be in [1, 32])",
            n = self.num_beams
        );
        parity_core::ensure!(
            self.num_beams == 1 || n_vocab >= 2,
            "`num_beams` = {n}: ONNX Runtime GenAI refuses it (vocab_size ({n_vocab}) must be 2 or greater when using beam search (num_beams={n}))",
            n = self.num_beams
        );
        if !self.do_sample || self.top_k == 1 || self.temperature == 0.0 {
            parity_core::ensure!(
                self.num_beams == 1,
                "`num_beams` = {}: beam search is not a sampling step; not reproduced",
                self.num_beams
            );
            return Ok(Mode::Greedy);
        }
        parity_core::ensure!(
            self.num_beams == 1,
            "`num_beams` = {}: ONNX Runtime GenAI refuses it (TopK and TopP cannot be used with a beam search)",
            self.num_beams
        );
        parity_core::ensure!(
            (0.0..=1.0).contains(&self.top_p),
            "`top_p` = {}: ONNX Runtime GenAI refuses it (top_p must be between 0.0 and 1.0)",
            self.top_p
        );
        parity_core::ensure!(
            self.top_k >= 0,
            "`top_k` = {}: ONNX Runtime GenAI refuses it (top_k must be 0 or greater)",
            self.top_k
        );
        parity_core::ensure!(
            i64::from(self.top_k) <= n_vocab as i64,
            "`top_k` = {k}: ONNX Runtime GenAI refuses it (top_k ({k}) must be less than or equal to vocab_size ({n_vocab}))",
            k = self.top_k
        );
        Ok(if self.top_p > 0.0 && self.top_p < 1.0 && self.top_k > 1 {
            Mode::TopKTopP
        } else if self.top_k > 1 {
            Mode::TopK
        } else {
            Mode::TopP
        })
    }
}
