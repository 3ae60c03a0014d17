//! llama-server `/completion` fields, parsed as llama-server parses them.
//!
//! Rules from tools/server/server-schema.cpp (`make_llama_cmpl_schema`,
//! `field_num::eval`) and common/common.h (`common_params_sampling`
//! defaults) at llama.cpp 0c1e57098:
//!
//! * An absent or `null` field keeps the server default.
//! * Numbers are read with nlohmann::json's `get<T>()`: any JSON number or a
//!   boolean (`true` is 1) converts with a C++ `static_cast` (integers wrap
//!   to 32 bits, floats truncate toward zero, doubles round to float); a
//!   string, array or object is a type error.
//! * Soft limits are clamped: `top_k` to ≥ 0, `top_p`, `min_p`,
//!   `xtc_probability`, `xtc_threshold` to [0, 1], `temperature` to ≥ 0,
//!   `mirostat` to [0, 2]. Hard limits are errors: `repeat_last_n`,
//!   `dry_allowed_length`, `dry_penalty_last_n`, `min_keep` below 0,
//!   `n_predict` below -1, `adaptive_decay` outside [0, 0.99].
//! * `dry_base` below 1 is replaced by the default 1.75.
//! * `samplers` is an array of names (case-insensitive; `top-k`, `topk`,
//!   `nucleus`, `temp`, `typ` … are aliases; unknown names are dropped,
//!   common/sampling.cpp `common_sampler_types_from_names`) or a string of
//!   one-letter codes (`common_sampler_types_from_chars`); any other type is
//!   ignored.
//! * `logit_bias` is an array of `[token, bias]` pairs or an object
//!   `{"token": bias}`; a bias of `false` bans the token (-inf); pairs that
//!   are not two-element arrays, biases that are neither numbers nor `false`,
//!   and token ids outside the vocabulary are skipped silently.
//! * `seed` is read as uint32; -1 (4294967295) is `LLAMA_DEFAULT_SEED`, a
//!   fresh random seed per request.
//! * `draws` (not a server field) is how many seeded draws to replay; with
//!   a `seed` and no `draws` it is 1, the one token llama-server samples per
//!   step with that seed.
//!
//! llama-server ignores fields it does not know; this semantics refuses
//! them instead, so that a misspelt name cannot silently run the default.
//! Features that need the model (DRY's sequence breakers, `ignore_eos`,
//! string keys in `logit_bias`, grammars, `infill`) and the samplers that
//! replace `dist` (mirostat, `adaptive_p`) are refused with a message saying
//! so.

use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use parity_core::Error;
use parity_core::params::{Null, from_map, verbatim};

/// A sampler type of the `samplers` field (`common_sampler_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SamplerType {
    Dry,
    TopK,
    TopP,
    MinP,
    TypicalP,
    Temperature,
    Xtc,
    Infill,
    Penalties,
    TopNSigma,
    AdaptiveP,
}

impl SamplerType {
    pub(crate) fn from_name(name: &str) -> Option<Self> {
        use SamplerType::*;
        Some(match name.to_ascii_lowercase().as_str() {
            "dry" => Dry,
            "top_k" | "top-k" | "topk" => TopK,
            "top_p" | "top-p" | "topp" | "nucleus" => TopP,
            "top_n_sigma" | "top-n-sigma" | "topnsigma" => TopNSigma,
            "typ_p" | "typ-p" | "typp" | "typ" => TypicalP,
            "min_p" | "min-p" | "minp" => MinP,
            "temperature" | "temp" => Temperature,
            "xtc" => Xtc,
            "infill" => Infill,
            "penalties" => Penalties,
            "adaptive_p" | "adaptive-p" | "adaptivep" => AdaptiveP,
            _ => return None,
        })
    }

    pub(crate) fn from_char(c: char) -> Option<Self> {
        use SamplerType::*;
        Some(match c {
            'd' => Dry,
            'k' => TopK,
            'y' => TypicalP,
            'p' => TopP,
            's' => TopNSigma,
            'm' => MinP,
            't' => Temperature,
            'x' => Xtc,
            'i' => Infill,
            'e' => Penalties,
            'a' => AdaptiveP,
            _ => return None,
        })
    }

    /// The canonical name (`common_sampler_type_to_str`).
    pub(crate) fn name(self) -> &'static str {
        use SamplerType::*;
        match self {
            Dry => "dry",
            TopK => "top_k",
            TopP => "top_p",
            MinP => "min_p",
            TypicalP => "typ_p",
            Temperature => "temperature",
            Xtc => "xtc",
            Infill => "infill",
            Penalties => "penalties",
            TopNSigma => "top_n_sigma",
            AdaptiveP => "adaptive_p",
        }
    }
}

/// The most draws one request may ask to replay.
pub(crate) const MAX_DRAWS: u64 = 10_000_000;

/// `LLAMA_DEFAULT_SEED`.
pub(crate) const DEFAULT_SEED: u32 = u32::MAX;

/// The sampling parameters of one request after llama-server parsed it
/// (`common_params_sampling`), plus the number of draws to replay.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerParams {
    pub(crate) temp: f32,
    pub(crate) dynatemp_range: f32,
    pub(crate) dynatemp_exponent: f32,
    pub(crate) top_k: i32,
    pub(crate) top_p: f32,
    pub(crate) min_p: f32,
    pub(crate) top_n_sigma: f32,
    pub(crate) xtc_probability: f32,
    pub(crate) xtc_threshold: f32,
    pub(crate) typ_p: f32,
    pub(crate) penalty_last_n: i32,
    pub(crate) penalty_repeat: f32,
    pub(crate) penalty_freq: f32,
    pub(crate) penalty_present: f32,
    pub(crate) dry_multiplier: f32,
    pub(crate) dry_base: f32,
    pub(crate) dry_penalty_last_n: i32,
    pub(crate) mirostat: i32,
    pub(crate) min_keep: i32,
    pub(crate) seed: u32,
    pub(crate) samplers: Vec<SamplerType>,
    /// `(token, bias)` before the vocabulary check.
    pub(crate) logit_bias: Vec<(i32, f32)>,
    pub(crate) draws: Option<usize>,
    /// `backend_sampling` (common/common.h line 299: default false).
    pub(crate) backend_sampling: bool,
    /// `n_probs` (read only for whether backend sampling is dropped).
    pub(crate) n_probs: i32,
    /// `post_sampling_probs` (the same).
    pub(crate) post_sampling_probs: bool,
}

impl ServerParams {
    /// Whether llama-server runs this request's chain as backend sampling:
    /// asked for, and not dropped because `n_probs` wants pre-sampling
    /// probabilities (`tools/server/server-context.cpp` lines 1923–1928).
    pub(crate) fn uses_backend_sampling(&self) -> bool {
        let need_pre_sample_logits = self.n_probs > 0 && !self.post_sampling_probs;
        self.backend_sampling && !need_pre_sample_logits
    }

    /// The parameters that shape the distribution, as llama-server's
    /// `/completion` fields.
    /// Floats are written as their shortest float32 text (`0.7`, not the
    /// widened `0.699999988079071`), which reads back to the same float.
    pub fn describe(&self) -> Map<String, Value> {
        let samplers: Vec<&str> = self.samplers.iter().map(|s| s.name()).collect();
        let f = parity_core::jsonl::f32_value;
        [
            ("temperature", f(self.temp)),
            ("dynatemp_range", f(self.dynatemp_range)),
            ("top_k", Value::from(self.top_k)),
            ("top_p", f(self.top_p)),
            ("min_p", f(self.min_p)),
            ("typical_p", f(self.typ_p)),
            ("top_n_sigma", f(self.top_n_sigma)),
            ("xtc_probability", f(self.xtc_probability)),
            ("xtc_threshold", f(self.xtc_threshold)),
            ("repeat_last_n", Value::from(self.penalty_last_n)),
            ("repeat_penalty", f(self.penalty_repeat)),
            ("frequency_penalty", f(self.penalty_freq)),
            ("presence_penalty", f(self.penalty_present)),
            ("min_keep", Value::from(self.min_keep)),
            ("samplers", Value::from(samplers)),
        ]
        .into_iter()
        // only when on: the CPU chain is what every other request runs
        .chain(
            self.uses_backend_sampling()
                .then(|| ("backend_sampling", Value::from(true))),
        )
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }
}

impl Default for ServerParams {
    /// `common_params_sampling`'s defaults (common/common.h).
    fn default() -> Self {
        use SamplerType::*;
        Self {
            temp: 0.80,
            dynatemp_range: 0.0,
            dynatemp_exponent: 1.0,
            top_k: 40,
            top_p: 0.95,
            min_p: 0.05,
            top_n_sigma: -1.0,
            xtc_probability: 0.0,
            xtc_threshold: 0.10,
            typ_p: 1.0,
            penalty_last_n: 64,
            penalty_repeat: 1.0,
            penalty_freq: 0.0,
            penalty_present: 0.0,
            dry_multiplier: 0.0,
            dry_base: 1.75,
            dry_penalty_last_n: 64,
            mirostat: 0,
            min_keep: 0,
            seed: DEFAULT_SEED,
            samplers: vec![
                Penalties,
                Dry,
                TopNSigma,
                TopK,
                TypicalP,
                TopP,
                MinP,
                Xtc,
                Temperature,
            ],
            logit_bias: Vec::new(),
            draws: None,
            backend_sampling: false,
            n_probs: 0,
            post_sampling_probs: false,
        }
    }
}

/// `static_cast<int32_t>(double)` as x86-64 does it: truncation, and
/// INT_MIN for NaN and values out of range (the C++ conversion is undefined
/// there; `cvttsd2si` returns INT_MIN).
fn f64_to_i32(x: f64) -> i32 {
    if x > -2_147_483_649.0 && x < 2_147_483_648.0 {
        x as i32
    } else {
        i32::MIN
    }
}

fn to_i32(n: Num) -> i32 {
    match n {
        Num::Int(i) => i as i32,
        Num::Uint(u) => u as i32,
        Num::Float(f) => f64_to_i32(f),
        Num::Bool(b) => i32::from(b),
    }
}

/// `static_cast<uint32_t>`; from a double, x86-64 GCC converts through a
/// 64-bit `cvttsd2si` and keeps the low 32 bits.
fn to_u32(n: Num) -> u32 {
    match n {
        Num::Int(i) => i as u32,
        Num::Uint(u) => u as u32,
        Num::Float(f) => {
            let wide = if f > -9.223_372_036_854_776e18 && f < 9.223_372_036_854_776e18 {
                f as i64
            } else {
                i64::MIN
            };
            wide as u32
        }
        Num::Bool(b) => u32::from(b),
    }
}

fn to_f32(n: Num) -> f32 {
    match n {
        Num::Int(i) => i as f32,
        Num::Uint(u) => u as f32,
        Num::Float(f) => f as f32,
        Num::Bool(b) => f32::from(u8::from(b)),
    }
}

/// A JSON value as nlohmann::json's `get<arithmetic>()` sees it: any number
/// or a boolean (`true` is 1); another type is llama-server's type error.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Num {
    Int(i64),
    Uint(u64),
    Float(f64),
    Bool(bool),
}

impl<'de> Deserialize<'de> for Num {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        match &v {
            Value::Bool(b) => Ok(Num::Bool(*b)),
            Value::Number(n) => Ok(match (n.as_u64(), n.as_i64()) {
                (Some(u), _) => Num::Uint(u),
                (None, Some(i)) => Num::Int(i),
                _ => Num::Float(n.as_f64().unwrap_or(f64::NAN)),
            }),
            other => Err(refused("number", other)),
        }
    }
}

/// llama-server's type error (nlohmann::json's `type_name()` of the value).
fn refused<E: serde::de::Error>(expected: &str, v: &Value) -> E {
    let is = match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    E::custom(format_args!(
        "llama-server refuses it (type must be {expected}, but is {is})"
    ))
}

/// A boolean field (`get<bool>()`).
fn boolean<'de, D: Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
    match Value::deserialize(d)? {
        Value::Bool(b) => Ok(Some(b)),
        other => Err(refused("boolean", &other)),
    }
}

/// An int field with a hard lower limit (`field_num` with a minimum).
fn limited<'de, D: Deserializer<'de>>(d: D, min: i32) -> Result<Option<i32>, D::Error> {
    let x = to_i32(Num::deserialize(d)?);
    if x < min {
        return Err(serde::de::Error::custom(format_args!(
            "llama-server refuses it (Value must be between {min} <= value <= {}, but got {x})",
            i32::MAX
        )));
    }
    Ok(Some(x))
}

fn at_least_0<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i32>, D::Error> {
    limited(d, 0)
}

fn at_least_minus_1<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i32>, D::Error> {
    limited(d, -1)
}

fn adaptive_decay<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f32>, D::Error> {
    let x = to_f32(Num::deserialize(d)?);
    if !(0.0..=0.99f32).contains(&x) {
        return Err(serde::de::Error::custom(format_args!(
            "llama-server refuses it (Value must be between 0.000000 <= value <= 0.990000, but got {x:.6})"
        )));
    }
    Ok(Some(x))
}

/// `samplers`: an array of names (unknown names dropped, with a warning in
/// the server log), a string of one-letter codes, or (any other type) the
/// default left as it is.
fn samplers<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<SamplerType>>, D::Error> {
    match Value::deserialize(d)? {
        Value::Array(items) => {
            let mut out = Vec::new();
            for (i, item) in items.iter().enumerate() {
                let Value::String(name) = item else {
                    let e: D::Error = refused("string", item);
                    return Err(verbatim(format_args!("`samplers[{i}]` = {item}: {e}")));
                };
                out.extend(SamplerType::from_name(name));
            }
            Ok(Some(out))
        }
        Value::String(chars) => Ok(Some(
            chars.chars().filter_map(SamplerType::from_char).collect(),
        )),
        _ => Ok(None),
    }
}

fn logit_bias<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<(i32, f32)>>, D::Error> {
    parse_logit_bias(&Value::deserialize(d)?)
        .map(Some)
        .map_err(verbatim)
}

fn dry_sequence_breakers<'de, D: Deserializer<'de>>(d: D) -> Result<Option<()>, D::Error> {
    let v = Value::deserialize(d)?;
    if matches!(&v, Value::Array(a) if !a.is_empty() && a.iter().all(Value::is_string)) {
        return Ok(Some(()));
    }
    Err(verbatim(format_args!(
        "`dry_sequence_breakers` = {v}: llama-server refuses it (must be a non-empty array of strings)"
    )))
}

/// `grammar` (only the empty one) and `json_schema`: refused, they need
/// the model's vocabulary.
fn grammar<'de, D: Deserializer<'de>>(d: D, field: &str) -> Result<Option<()>, D::Error> {
    let v = Value::deserialize(d)?;
    if field == "grammar" && v.as_str().is_some_and(str::is_empty) {
        return Ok(Some(()));
    }
    Err(verbatim(parity_core::params::grammar_constrained(
        field, &v, "",
    )))
}

fn grammar_text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<()>, D::Error> {
    grammar(d, "grammar")
}

fn json_schema<'de, D: Deserializer<'de>>(d: D) -> Result<Option<()>, D::Error> {
    grammar(d, "json_schema")
}

/// A boolean field that, true, asks for what is not reproduced.
fn refused_if_true<'de, D: Deserializer<'de>>(
    d: D,
    why: &'static str,
) -> Result<Option<bool>, D::Error> {
    match boolean(d)? {
        Some(true) => Err(verbatim(why)),
        b => Ok(b),
    }
}

fn ignore_eos<'de, D: Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
    refused_if_true(
        d,
        "`ignore_eos` = true bans the model's end-of-generation tokens, which need the model's vocabulary; not reproduced",
    )
}

fn draws<'de, D: Deserializer<'de>>(d: D) -> Result<Option<usize>, D::Error> {
    let v = Value::deserialize(d)?;
    let n = v.as_u64().ok_or_else(|| {
        verbatim(format_args!(
            "`draws` = {v}: must be a non-negative integer"
        ))
    })?;
    if n > MAX_DRAWS {
        return Err(verbatim(format_args!(
            "`draws` = {n}: at most {MAX_DRAWS} draws are replayed"
        )));
    }
    Ok(Some(n as usize))
}

parity_core::params! {
    /// The fields of a llama-server `/completion` request this semantics
    /// accepts, each once, as llama-server reads it (absent or `null`: the
    /// server's default, shown as `common_params_sampling` (common/common.h)
    /// and `task_params` (tools/server/server-task.h) have it at 0c1e57098). Numbers
    /// convert as nlohmann::json's `get<T>()` does ([`Num`]); llama-server
    /// ignores fields it does not know, this semantics refuses them.
    #[derive(Debug, Clone, PartialEq, Deserialize)]
    #[serde(default, deny_unknown_fields)]
    pub(crate) struct Completion {
        /// `temp`, clamped to >= 0.
        pub temperature: Option<Num> ["0.8"]
            => "temperature, applied where `samplers` puts it (last by default); <= 0 is greedy; clamped to >= 0",
        /// `dynatemp_range`.
        pub dynatemp_range: Option<Num> ["0.0"]
            => "dynamic temperature: [temperature - range, temperature + range] by entropy",
        /// `dynatemp_exponent`.
        pub dynatemp_exponent: Option<Num> ["1.0"] => "dynamic temperature exponent",
        /// `top_k`, clamped to >= 0.
        pub top_k: Option<Num> ["40"]
            => "keep exactly k (ties cut by sort order); 0 disables; clamped to >= 0",
        /// `top_p`, clamped to [0, 1].
        pub top_p: Option<Num> ["0.95"]
            => "keep until the cumulative p reaches top_p; 1 disables; clamped to [0, 1]",
        /// `min_p`, clamped to [0, 1].
        pub min_p: Option<Num> ["0.05"]
            => "keep logit >= max + ln(min_p); 0 disables; clamped to [0, 1]",
        /// `top_n_sigma`.
        pub top_n_sigma: Option<Num> ["-1.0"] => "mask logits below max - n * std; <= 0 disables",
        /// `xtc_probability`, clamped to [0, 1].
        pub xtc_probability: Option<Num> ["0.0"]
            => "chance that XTC removes the top tokens; clamped to [0, 1]",
        /// `xtc_threshold`, clamped to [0, 1].
        pub xtc_threshold: Option<Num> ["0.1"] => "XTC probability threshold; > 0.5 disables",
        /// `typ_p`.
        pub typical_p: Option<Num> ["1.0"] => "locally typical sampling; >= 1 disables",
        /// `penalty_last_n`: below 0 is an error.
        #[serde(deserialize_with = "at_least_0")]
        pub repeat_last_n: Option<i32> ["64"]
            => "penalty window: last n ids of the whole context, prompt included; 0 disables; < 0 is an error",
        /// `penalty_repeat`.
        pub repeat_penalty: Option<Num> ["1.0"]
            => "divide positive / multiply non-positive logits of ids in the window",
        /// `penalty_freq`.
        pub frequency_penalty: Option<Num> ["0.0"] => "subtract count * value",
        /// `penalty_present`.
        pub presence_penalty: Option<Num> ["0.0"] => "subtract value once per id in the window",
        /// `dry_multiplier`: DRY needs the model's vocabulary (refused
        /// unless 0 when the chain would run it).
        pub dry_multiplier: Option<Num> ["0.0"]
            => "DRY repetition penalty; refused unless 0 (DRY needs the model's vocabulary)",
        /// `dry_base`: below 1 is replaced by 1.75.
        pub dry_base: Option<Num> ["1.75"] => "DRY base; < 1 is read as 1.75",
        /// `dry_allowed_length`: below 0 is an error; not used.
        #[serde(deserialize_with = "at_least_0")]
        pub dry_allowed_length: Option<i32> ["2"] => "checked (>= 0); DRY is not reproduced",
        /// `dry_penalty_last_n`: below 0 is an error.
        #[serde(deserialize_with = "at_least_0")]
        pub dry_penalty_last_n: Option<i32> ["64"] => "checked (>= 0); DRY is not reproduced",
        /// `dry_sequence_breakers`: a non-empty array of strings; not used.
        #[serde(deserialize_with = "dry_sequence_breakers")]
        pub dry_sequence_breakers: Option<()> ["[\"\\n\",\":\",\"\\\"\",\"*\"]"]
            => "checked (a non-empty array of strings); DRY is not reproduced",
        /// `mirostat`, clamped to [0, 2]; 1 and 2 replace `dist` (refused
        /// when the chain is built).
        pub mirostat: Option<Num> ["0"] => "only 0 (mirostat replaces dist); clamped to [0, 2]",
        /// `mirostat_tau`: type-checked, not used.
        pub mirostat_tau: Option<Num> ["5.0"] => "checked (a number); mirostat is not reproduced",
        /// `mirostat_eta`: type-checked, not used.
        pub mirostat_eta: Option<Num> ["0.1"] => "checked (a number); mirostat is not reproduced",
        /// `adaptive_target`: type-checked, not used.
        pub adaptive_target: Option<Num> ["-1.0"] => "checked (a number); adaptive_p is not reproduced",
        /// `adaptive_decay`: outside [0, 0.99] is an error; not used.
        #[serde(deserialize_with = "adaptive_decay")]
        pub adaptive_decay: Option<f32> ["0.9"]
            => "checked (in [0, 0.99]); adaptive_p is not reproduced",
        /// `min_keep`: below 0 is an error.
        #[serde(deserialize_with = "at_least_0")]
        pub min_keep: Option<i32> ["0"] => "top_p, min_p, typical and XTC keep at least this many",
        /// `n_probs`: type-checked; above 0 without `post_sampling_probs`
        /// it turns backend sampling off (the server needs pre-sampling
        /// probabilities).
        pub n_probs: Option<Num> ["0"]
            => "checked (a number); above 0 without post_sampling_probs it turns backend_sampling off",
        /// `n_predict`: below -1 is an error; not used.
        #[serde(deserialize_with = "at_least_minus_1")]
        pub n_predict: Option<i32> ["-1"] => "checked (>= -1); does not change the distribution",
        /// `seed`, as uint32; -1 (4294967295) is `LLAMA_DEFAULT_SEED`.
        pub seed: Option<Num> ["-1"] => "RNG seed of dist and XTC; -1 is random",
        /// `samplers`: names or one-letter codes.
        #[serde(deserialize_with = "samplers")]
        pub samplers: Option<Vec<SamplerType>>
            ["[\"penalties\",\"dry\",\"top_n_sigma\",\"top_k\",\"typ_p\",\"top_p\",\"min_p\",\"xtc\",\"temperature\"]"]
            => "chain order (names or one-letter codes); unknown names dropped",
        /// `logit_bias`, before the vocabulary check.
        #[serde(deserialize_with = "logit_bias")]
        pub logit_bias: Option<Vec<(i32, f32)>> ["[]"]
            => "[[id, bias], ...] or {\"id\": bias}; false bans",
        /// `ignore_eos`: only false (it needs the model's vocabulary).
        #[serde(deserialize_with = "ignore_eos")]
        pub ignore_eos: Option<bool> ["false"]
            => "only false (banning end-of-generation tokens needs the model's vocabulary)",
        /// `backend_sampling`: true runs the chain as ggml's CPU backend
        /// does (crate::backend): other top-k order, no `min_keep` in top-p
        /// and min-p, min-p strictly above its threshold, dynamic
        /// temperature over the whole row, dist in float; a top-k above the
        /// candidates aborts llama-server (an error here).
        #[serde(deserialize_with = "boolean")]
        pub backend_sampling: Option<bool> ["false"]
            => "true: the chain as ggml's CPU backend runs it (top_k above the vocabulary aborts the server: an error)",
        /// `grammar`: only the empty one.
        #[serde(deserialize_with = "grammar_text")]
        pub grammar: Option<()> ["\"\""] => "only \"\" (grammars need the model's vocabulary)",
        /// `json_schema`: refused.
        #[serde(deserialize_with = "json_schema")]
        pub json_schema: Option<()> => "refused (grammars need the model's vocabulary)",
        /// `stream`: type-checked, no effect on the distribution.
        #[serde(deserialize_with = "boolean")]
        pub stream: Option<bool> ["false"] => "checked (a boolean); does not change the distribution",
        /// `cache_prompt`: type-checked.
        #[serde(deserialize_with = "boolean")]
        pub cache_prompt: Option<bool> ["true"]
            => "checked (a boolean); does not change the distribution",
        /// `post_sampling_probs`: type-checked; true keeps backend sampling
        /// on with `n_probs` above 0.
        #[serde(deserialize_with = "boolean")]
        pub post_sampling_probs: Option<bool> ["false"]
            => "checked (a boolean); true keeps backend_sampling on with n_probs above 0",
        /// `return_tokens`: type-checked.
        #[serde(deserialize_with = "boolean")]
        pub return_tokens: Option<bool> ["false"]
            => "checked (a boolean); does not change the distribution",
        /// Not a server field: how many seeded draws to replay.
        #[serde(deserialize_with = "draws")]
        pub draws: Option<usize>
            => "(not a server field) replay this many seeded draws; null: 1 with a seed, else none",
    }
}

impl Completion {
    /// The request over the server's defaults `p`, converted and clamped
    /// as llama-server does.
    fn over(self, mut p: ServerParams) -> ServerParams {
        let f = |n: Option<Num>| n.map(to_f32);
        let set = |slot: &mut f32, v: Option<f32>| {
            if let Some(v) = v {
                *slot = v;
            }
        };
        set(
            &mut p.temp,
            f(self.temperature).map(|t| t.clamp(0.0, f32::INFINITY)),
        );
        set(&mut p.dynatemp_range, f(self.dynatemp_range));
        set(&mut p.dynatemp_exponent, f(self.dynatemp_exponent));
        if let Some(k) = self.top_k {
            p.top_k = to_i32(k).max(0);
        }
        set(&mut p.top_p, f(self.top_p).map(|x| x.clamp(0.0, 1.0)));
        set(&mut p.min_p, f(self.min_p).map(|x| x.clamp(0.0, 1.0)));
        set(&mut p.top_n_sigma, f(self.top_n_sigma));
        set(
            &mut p.xtc_probability,
            f(self.xtc_probability).map(|x| x.clamp(0.0, 1.0)),
        );
        set(
            &mut p.xtc_threshold,
            f(self.xtc_threshold).map(|x| x.clamp(0.0, 1.0)),
        );
        set(&mut p.typ_p, f(self.typical_p));
        p.penalty_last_n = self.repeat_last_n.unwrap_or(p.penalty_last_n);
        set(&mut p.penalty_repeat, f(self.repeat_penalty));
        set(&mut p.penalty_freq, f(self.frequency_penalty));
        set(&mut p.penalty_present, f(self.presence_penalty));
        set(&mut p.dry_multiplier, f(self.dry_multiplier));
        set(
            &mut p.dry_base,
            f(self.dry_base).map(|b| if b < 1.0 { 1.75 } else { b }),
        );
        p.dry_penalty_last_n = self.dry_penalty_last_n.unwrap_or(p.dry_penalty_last_n);
        if let Some(m) = self.mirostat {
            p.mirostat = to_i32(m).clamp(0, 2);
        }
        p.min_keep = self.min_keep.unwrap_or(p.min_keep);
        if let Some(s) = self.seed {
            p.seed = to_u32(s);
        }
        if let Some(s) = self.samplers {
            p.samplers = s;
        }
        if let Some(b) = self.logit_bias {
            p.logit_bias = b;
        }
        if let Some(d) = self.draws {
            p.draws = Some(d);
        }
        if let Some(b) = self.backend_sampling {
            p.backend_sampling = b;
        }
        if let Some(n) = self.n_probs {
            p.n_probs = to_i32(n);
        }
        if let Some(b) = self.post_sampling_probs {
            p.post_sampling_probs = b;
        }
        // llama-server samples one token per step with the request's seed, so a
        // seeded request without `draws` replays that one draw.
        if p.draws.is_none() && p.seed != DEFAULT_SEED {
            p.draws = Some(1);
        }
        p
    }
}

/// Parses a llama-server `/completion` request's sampling fields.
pub(crate) fn parse(request: &Map<String, Value>) -> Result<ServerParams, Error> {
    parse_over(ServerParams::default(), request)
}

/// Parses a request's sampling fields over the server's defaults `p`
/// (`eval_llama_cmpl_schema` starts from `params_base.sampling`,
/// tools/server/server-schema.cpp line 527).
pub(crate) fn parse_over(
    p: ServerParams,
    request: &Map<String, Value>,
) -> Result<ServerParams, Error> {
    let c: Completion = from_map(
        request,
        "llama.cpp (llama-server would ignore it)",
        Completion::FIELDS,
        Null::Unset,
    )?;
    Ok(c.over(p))
}

/// `strtol(key, &end, 10)` with `*end == 0`: optional leading whitespace and
/// sign, decimal digits, nothing after; the empty string reads as 0.
/// Overflow saturates at the long range. `None` when characters are left.
fn strtol_whole(key: &str) -> Option<i64> {
    let s = key.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let (neg, digits) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        // no conversion: end stays at the start of the key, so only an
        // empty key has *end == 0
        return key.is_empty().then_some(0);
    }
    let mut v: i64 = 0;
    for b in digits.bytes() {
        let d = i64::from(b - b'0');
        v = match v.checked_mul(10).and_then(|x| {
            if neg {
                x.checked_sub(d)
            } else {
                x.checked_add(d)
            }
        }) {
            Some(x) => x,
            None => return Some(if neg { i64::MIN } else { i64::MAX }),
        };
    }
    Some(v)
}

fn parse_bias(v: &Value) -> Option<f32> {
    match v {
        Value::Number(n) => Some(n.as_f64().map_or(0.0, |f| f as f32)),
        Value::Bool(false) => Some(f32::NEG_INFINITY),
        _ => None,
    }
}

fn parse_logit_bias(v: &Value) -> Result<Vec<(i32, f32)>, Error> {
    let mut out = Vec::new();
    match v {
        Value::Array(items) => {
            for (i, el) in items.iter().enumerate() {
                let Value::Array(pair) = el else { continue };
                if pair.len() != 2 {
                    continue;
                }
                let Some(bias) = parse_bias(&pair[1]) else {
                    continue;
                };
                match &pair[0] {
                    Value::Number(n) if n.is_i64() || n.is_u64() => {
                        let tok = n
                            .as_i64()
                            .map_or_else(|| n.as_u64().map_or(0, |u| u as i32), |x| x as i32);
                        out.push((tok, bias));
                    }
                    Value::String(s) => {
                        return Err(Error::new(format_args!(
                            "`logit_bias[{i}]` names the token by its text {}: that needs the model's tokenizer; give token ids",
                            Value::String(s.clone())
                        )));
                    }
                    _ => {}
                }
            }
        }
        Value::Object(items) => {
            for (key, val) in items {
                let Some(bias) = parse_bias(val) else {
                    continue;
                };
                match strtol_whole(key) {
                    Some(tok) => out.push((tok as i32, bias)),
                    None => {
                        return Err(Error::new(format_args!(
                            "`logit_bias` key {}: not a token id, and tokenizing text needs the model's tokenizer",
                            Value::String(key.clone())
                        )));
                    }
                }
            }
        }
        _ => {}
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn req(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    #[test]
    fn defaults_are_common_params_sampling() {
        let p = parse(&Map::new()).expect("empty request");
        assert_eq!((p.temp, p.top_k, p.top_p, p.min_p), (0.8, 40, 0.95, 0.05));
        assert_eq!((p.penalty_last_n, p.penalty_repeat), (64, 1.0));
        assert_eq!(p.seed, u32::MAX);
        assert_eq!(p.samplers.len(), 9);
    }

    #[test]
    fn soft_limits_clamp_and_true_is_one() {
        let p = parse(&req(
            json!({"top_k": -5, "top_p": 1.5, "temperature": -1, "min_p": true}),
        ))
        .expect("clamped");
        assert_eq!((p.top_k, p.top_p, p.temp, p.min_p), (0, 1.0, 0.0, 1.0));
        let p = parse(&req(json!({"top_k": 2.9, "seed": -1, "mirostat": 7}))).expect("cast");
        assert_eq!((p.top_k, p.seed, p.mirostat), (2, u32::MAX, 2));
        // 2^32 + 3 wraps to 3 in int32
        let p = parse(&req(json!({"top_k": 4_294_967_299u64}))).expect("wraps");
        assert_eq!(p.top_k, 3);
    }

    #[test]
    fn hard_limits_and_types_are_errors_naming_the_field() {
        let e = parse(&req(json!({"repeat_last_n": -1})))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("`repeat_last_n` = -1: llama-server refuses it"),
            "{e}"
        );
        assert!(e.contains("0 <= value <= 2147483647, but got -1"), "{e}");
        let e = parse(&req(json!({"top_k": "40"}))).unwrap_err().to_string();
        assert_eq!(
            e,
            "`top_k` = \"40\": llama-server refuses it (type must be number, but is string)"
        );
        let e = parse(&req(json!({"top_kk": 4}))).unwrap_err().to_string();
        assert!(e.starts_with("unknown field `top_kk`"), "{e}");
        let e = parse(&req(json!({"min_keep": -2})))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("`min_keep` = -2"), "{e}");
    }

    #[test]
    fn samplers_names_aliases_and_chars() {
        let p = parse(&req(
            json!({"samplers": ["Top-K", "bogus", "nucleus", "temp"]}),
        ))
        .expect("names");
        assert_eq!(
            p.samplers,
            vec![
                SamplerType::TopK,
                SamplerType::TopP,
                SamplerType::Temperature
            ]
        );
        let p = parse(&req(json!({"samplers": "kzpt"}))).expect("chars");
        assert_eq!(
            p.samplers,
            vec![
                SamplerType::TopK,
                SamplerType::TopP,
                SamplerType::Temperature
            ]
        );
        let p = parse(&req(json!({"samplers": 5}))).expect("ignored");
        assert_eq!(p.samplers.len(), 9);
    }

    #[test]
    fn logit_bias_forms() {
        let p = parse(&req(
            json!({"logit_bias": [[1, 2.5], [2, false], [3, true], [4], 7, [5.0, 1]]}),
        ))
        .expect("array form");
        assert_eq!(p.logit_bias, vec![(1, 2.5), (2, f32::NEG_INFINITY)]);
        let p = parse(&req(json!({"logit_bias": {"3": -1, " 4": false, "": 2}}))).expect("object");
        let mut got = p.logit_bias.clone();
        got.sort_by_key(|x| x.0);
        assert_eq!(got, vec![(0, 2.0), (3, -1.0), (4, f32::NEG_INFINITY)]);
        assert!(parse(&req(json!({"logit_bias": {"hello": 1}}))).is_err());
        assert!(parse(&req(json!({"logit_bias": [["hello", 1]]}))).is_err());
    }
}
