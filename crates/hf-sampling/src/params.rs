//! Parameter resolution: generate kwargs > `generation_config.json` > transformers defaults.
//!
//! Mirrors `GenerationMixin._prepare_generation_config` (transformers 5.23.0,
//! `generation/utils.py`): a fresh config takes the model's
//! `generation_config.json` values where still unset, then
//! `GenerationConfig._get_default_generation_params()` where still unset, then
//! `generation_config.update(**kwargs)` sets every kwarg, `None` included.
//! Validation happens where transformers does it: in the processor
//! constructors that `_get_logits_processor` builds (so sampling-only values
//! are not checked when `do_sample` is false), plus the few raises in
//! `GenerationConfig.validate`.

use std::path::Path;

use serde_json::{Map, Value};

use crate::constraints::{self, Constraints};
use crate::error::HfError;
use crate::pyfmt::{float_repr, value_str};

/// Resolved transformers generation parameters (after kwargs >
/// generation_config.json > transformers defaults).
///
/// Values are held as Python holds them (f64); each processor casts to f32
/// the way torch does. "Off" values are kept as given (e.g. `top_p = 1.5` is
/// stored and ignored, as transformers ignores it).
#[derive(Debug, Clone, PartialEq)]
pub struct GenerationParams {
    /// Sample (`true`) or take the argmax (`false`, transformers' default).
    pub do_sample: bool,
    /// Temperature; 1.0 (default) adds no processor.
    pub temperature: f64,
    /// Top-k; `None` = off (`0` or `null`); default `Some(50)`.
    pub top_k: Option<usize>,
    /// Top-p; values >= 1.0 (default 1.0) add no processor.
    pub top_p: f64,
    /// Min-p; `None` (default) = off. Any value, even 0, adds the processor.
    pub min_p: Option<f64>,
    /// Typical-p mass; values >= 1.0 (default) add no processor.
    pub typical_p: f64,
    /// Epsilon cutoff; active only strictly between 0 and 1 (default 0.0).
    pub epsilon_cutoff: f64,
    /// Eta cutoff; active only strictly between 0 and 1 (default 0.0).
    pub eta_cutoff: f64,
    /// Repetition penalty; 1.0 (default) adds no processor. Applies in greedy
    /// mode too.
    pub repetition_penalty: f64,
    /// Every other processor's kwargs (bad words, n-gram bans, min length,
    /// forced and suppressed tokens, ...) and the generation state they read
    /// (`eos_token_id`, `max_length`, `max_new_tokens`); default: none set.
    pub constraints: Constraints,
}

impl Default for GenerationParams {
    /// transformers' global defaults (`_get_default_generation_params`): greedy,
    /// T = 1, top-k 50, top-p 1, typical 1, penalty 1, cutoffs 0, no min-p.
    fn default() -> Self {
        Self {
            do_sample: false,
            temperature: 1.0,
            top_k: Some(50),
            top_p: 1.0,
            min_p: None,
            typical_p: 1.0,
            epsilon_cutoff: 0.0,
            eta_cutoff: 0.0,
            repetition_penalty: 1.0,
            constraints: Constraints::default(),
        }
    }
}

/// The sampling keys this crate models.
pub(crate) const SAMPLING_KEYS: [&str; 9] = [
    "do_sample",
    "temperature",
    "top_k",
    "top_p",
    "min_p",
    "typical_p",
    "epsilon_cutoff",
    "eta_cutoff",
    "repetition_penalty",
];

/// `GenerationConfig` attributes that cannot change one step's distribution
/// for a decoder-only model: accepted and ignored.
const IGNORED_KEYS: &[&str] = &[
    "early_stopping",
    "max_time",
    "stop_strings",
    "use_cache",
    "cache_implementation",
    "cache_config",
    "max_cache_len",
    "length_penalty",
    "num_return_sequences",
    "output_attentions",
    "output_hidden_states",
    "output_scores",
    "output_logits",
    "return_dict_in_generate",
    "pad_token_id",
    "bos_token_id",
    "decoder_start_token_id",
    "compile_config",
    "disable_compile",
    "prefill_chunk_size",
    "transformers_version",
    "is_assistant",
    "num_assistant_tokens",
    "num_assistant_tokens_schedule",
    "assistant_confidence_threshold",
    "assistant_lookbehind",
    "target_lookbehind",
];

/// `GenerationConfig` attributes that add processors or switch the decoding
/// method. Accepted only at a value with no effect (`null`, or the listed
/// neutral number/bool); anything else is [`HfError::Unsupported`].
const UNSUPPORTED_KEYS: &[(&str, Neutral)] = &[
    ("num_beams", Neutral::One),
    ("guidance_scale", Neutral::One),
    ("watermarking_config", Neutral::Null),
    ("token_healing", Neutral::False),
    ("penalty_alpha", Neutral::Null),
    ("dola_layers", Neutral::Null),
    ("low_memory", Neutral::Null),
    ("diversity_penalty", Neutral::Zero),
    ("num_beam_groups", Neutral::One),
    ("constraints", Neutral::Null),
    ("force_words_ids", Neutral::Null),
    ("prompt_lookup_num_tokens", Neutral::Null),
    ("max_matching_ngram_size", Neutral::Null),
    ("assistant_early_exit", Neutral::Null),
    ("assistant_ensemble_weight", Neutral::Null),
    ("speculation_type", Neutral::Null),
    ("use_mtp", Neutral::False),
    ("continuous_batching_config", Neutral::Null),
    // A decoder-only model's prompt is `encoder_input_ids` (transformers
    // 5.23.0 generation/utils.py line 2989 passes `inputs_tensor`, the
    // input ids), so these processors act on it (lines 1449 and 1491).
    ("encoder_repetition_penalty", Neutral::One),
    ("encoder_no_repeat_ngram_size", Neutral::NotPositive),
];

#[derive(Clone, Copy)]
enum Neutral {
    Null,
    Zero,
    One,
    False,
    /// Any number `<= 0` (a `> 0` test).
    NotPositive,
}

impl Neutral {
    fn accepts(self, v: &Value) -> bool {
        match (self, v) {
            (_, Value::Null) => true,
            (Self::Zero, Value::Number(n)) => n.as_f64() == Some(0.0),
            (Self::One, Value::Number(n)) => n.as_f64() == Some(1.0),
            (Self::False, Value::Bool(b)) => !b,
            (Self::NotPositive, Value::Number(n)) => n.as_f64().is_some_and(|x| x <= 0.0),
            (Self::NotPositive, Value::Bool(b)) => !b,
            _ => false,
        }
    }
}

/// Largest `generation_config.json` read by [`GenerationConfig::from_path`].
const MAX_CONFIG_BYTES: u64 = 16 * 1024 * 1024;

/// A parsed `generation_config.json`.
///
/// Unknown keys are tolerated (transformers keeps them as custom entries);
/// the sampling keys must have a usable JSON type. `null` here means "unset":
/// transformers' defaults still apply (unlike `null` in kwargs).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GenerationConfig {
    values: Map<String, Value>,
}

impl GenerationConfig {
    /// Every key of the file, as read.
    pub fn values(&self) -> &Map<String, Value> {
        &self.values
    }

    /// Parse the text of a `generation_config.json`.
    pub fn from_json_str(s: &str) -> Result<Self, HfError> {
        let v: Value = serde_json::from_str(s)?;
        let Value::Object(values) = v else {
            return Err(HfError::NotAnObject {
                found: json_type(&v),
            });
        };
        Self::from_values(values)
    }

    /// A `generation_config.json`'s keys, already parsed (what
    /// [`GenerationConfig::values`] gives back), checked as
    /// [`GenerationConfig::from_json_str`] checks them.
    pub fn from_values(values: Map<String, Value>) -> Result<Self, HfError> {
        for (key, value) in &values {
            if value.is_null() {
                continue;
            }
            let expected = match key.as_str() {
                "do_sample" => (!value.is_boolean()).then_some("a boolean"),
                "top_k" => (!(value.is_u64() || value.is_i64())).then_some("an integer"),
                "temperature" | "top_p" | "min_p" | "typical_p" | "epsilon_cutoff"
                | "eta_cutoff" | "repetition_penalty" => (!value.is_number()).then_some("a number"),
                _ => None,
            };
            if let Some(expected) = expected {
                return Err(HfError::WrongType {
                    key: key.clone(),
                    expected,
                    value: value.to_string(),
                });
            }
        }
        Ok(Self { values })
    }

    /// Read and parse a `generation_config.json` file.
    pub fn from_path(p: &Path) -> Result<Self, HfError> {
        use std::io::Read;
        let io = |source| HfError::Io {
            path: p.to_path_buf(),
            source,
        };
        // Bounded read: a path such as /dev/zero never ends, and reading it
        // whole would exhaust memory. Real configs are a few hundred bytes.
        let mut bytes = Vec::new();
        std::fs::File::open(p)
            .and_then(|f| f.take(MAX_CONFIG_BYTES + 1).read_to_end(&mut bytes))
            .map_err(io)?;
        if bytes.len() as u64 > MAX_CONFIG_BYTES {
            return Err(io(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("more than {MAX_CONFIG_BYTES} bytes: not a generation_config.json"),
            )));
        }
        let text = String::from_utf8(bytes)
            .map_err(|e| io(std::io::Error::new(std::io::ErrorKind::InvalidData, e)))?;
        Self::from_json_str(&text)
    }

    /// The value the file sets for `key` (`None` when absent or `null`).
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.values.get(key).filter(|v| !v.is_null())
    }
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Python truthiness of the object `json.loads` would make (`if x:`).
pub(crate) fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|x| x != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// A Python number: (value as float, is a Python `float`). `bool` is an int.
pub(crate) fn number(v: &Value) -> Option<(f64, bool)> {
    match v {
        Value::Bool(b) => Some((if *b { 1.0 } else { 0.0 }, false)),
        Value::Number(n) => Some((n.as_f64()?, n.is_f64())),
        _ => None,
    }
}

fn wrong_type(key: &str, expected: &'static str, v: &Value) -> HfError {
    HfError::WrongType {
        key: key.into(),
        expected,
        value: v.to_string(),
    }
}

impl GenerationParams {
    /// The resolved value of one of [`SAMPLING_KEYS`] as JSON (`null` for an
    /// unset top-k or min-p; any other key reads as `repetition_penalty`).
    pub(crate) fn sampling_value(&self, key: &str) -> Value {
        match key {
            "do_sample" => Value::from(self.do_sample),
            "temperature" => Value::from(self.temperature),
            "top_k" => self.top_k.map_or(Value::Null, Value::from),
            "top_p" => Value::from(self.top_p),
            "min_p" => self.min_p.map_or(Value::Null, Value::from),
            "typical_p" => Value::from(self.typical_p),
            "epsilon_cutoff" => Value::from(self.epsilon_cutoff),
            "eta_cutoff" => Value::from(self.eta_cutoff),
            _ => Value::from(self.repetition_penalty),
        }
    }

    /// The resolved value of a kwarg [`crate::Acting`] reads: `Some(null)`
    /// for an unset one whose default is `None`, `None` for a kwarg these
    /// params do not hold (transformers' default then applies).
    pub(crate) fn resolved_value(&self, key: &str) -> Option<Value> {
        let c = &self.constraints;
        let ids =
            |v: &Option<Vec<i64>>| Some(v.as_ref().map_or(Value::Null, |v| Value::from(v.clone())));
        match key {
            k if SAMPLING_KEYS.contains(&k) => Some(self.sampling_value(k)),
            "eos_token_id" => ids(&c.eos_token_id),
            "min_length" => c.min_length.clone().map(Value::Number),
            "min_new_tokens" => Some(c.min_new_tokens.clone().map_or(Value::Null, Value::Number)),
            "no_repeat_ngram_size" => c.no_repeat_ngram_size.clone().map(Value::Number),
            "bad_words_ids" => Some(c.bad_words_ids.clone().unwrap_or(Value::Null)),
            "sequence_bias" => Some(c.sequence_bias.clone().unwrap_or(Value::Null)),
            "forced_bos_token_id" => Some(c.forced_bos_token_id.map_or(Value::Null, Value::from)),
            "forced_eos_token_id" => ids(&c.forced_eos_token_id),
            "remove_invalid_values" => Some(Value::Bool(c.remove_invalid_values)),
            "exponential_decay_length_penalty" => Some(
                c.exponential_decay_length_penalty
                    .map_or(Value::Null, |(a, b)| Value::from(vec![a, b])),
            ),
            "suppress_tokens" => ids(&c.suppress_tokens),
            "begin_suppress_tokens" => ids(&c.begin_suppress_tokens),
            "renormalize_logits" => Some(Value::Bool(c.renormalize_logits)),
            "top_h" => Some(c.top_h.map_or(Value::Null, Value::from)),
            _ => None,
        }
    }

    /// Every sampling key with its resolved value, as kwargs that resolve to
    /// these params again: top-k off is `0` (transformers reads `0` as off),
    /// an unset min-p is left out.
    pub fn as_kwargs(&self) -> Map<String, Value> {
        let mut out = Map::new();
        for key in SAMPLING_KEYS {
            match (key, self.sampling_value(key)) {
                ("top_k", Value::Null) => {
                    out.insert(key.into(), Value::from(0));
                }
                (_, Value::Null) => {}
                (_, v) => {
                    out.insert(key.into(), v);
                }
            }
        }
        out
    }

    /// Every sampling value that is not transformers' no-op (`do_sample`
    /// always), in [`SAMPLING_KEYS`] order: what a report prints as the
    /// effective parameters.
    pub(crate) fn sampling_values(&self) -> Map<String, Value> {
        let mut out = Map::new();
        out.insert("do_sample".into(), Value::from(self.do_sample));
        let acting = self.acting();
        for &key in &SAMPLING_KEYS[1..] {
            if acting.acts(key) {
                out.insert(key.into(), self.sampling_value(key));
            }
        }
        out
    }
}

/// Whether `generate()` accepts `key` as a kwarg (a sampling key, a
/// constraint, one accepted and ignored, or one accepted at a neutral value).
pub(crate) fn is_generate_kwarg(key: &str) -> bool {
    SAMPLING_KEYS.contains(&key)
        || IGNORED_KEYS.contains(&key)
        || constraints::KEYS.contains(&key)
        || UNSUPPORTED_KEYS.iter().any(|(k, _)| *k == key)
}

/// Resolve generate kwargs against an optional model `generation_config.json`
/// and transformers' defaults, validating as transformers does.
///
/// - Precedence: kwargs > config > defaults. `null` in kwargs is a value
///   (`top_k: null` turns top-k off); `null` in the config means unset.
/// - Sampling-only keys are validated only when `do_sample` is truthy, as
///   transformers builds (and so validates) the warpers only then; with
///   `do_sample` false they are ignored whatever their value.
/// - Other real `GenerationConfig` keys are ignored when they cannot change
///   one step's distribution, and rejected ([`HfError::Unsupported`]) when
///   they would and this crate does not model them.
/// - Unknown kwargs with a non-null value are rejected
///   ([`HfError::UnknownKwarg`]), mirroring transformers' `model_kwargs` check;
///   unknown `null` kwargs are ignored, as transformers ignores them.
pub fn resolve(
    kwargs: &Map<String, Value>,
    config: Option<&GenerationConfig>,
) -> Result<GenerationParams, HfError> {
    // Unknown kwargs first: transformers raises for them whatever the rest is.
    for (key, value) in kwargs {
        let known = SAMPLING_KEYS.contains(&key.as_str())
            || IGNORED_KEYS.contains(&key.as_str())
            || constraints::KEYS.contains(&key.as_str())
            || UNSUPPORTED_KEYS.iter().any(|(k, _)| k == key);
        if !known && !value.is_null() {
            return Err(HfError::UnknownKwarg {
                key: key.clone(),
                value: value.to_string(),
            });
        }
    }

    // kwargs > config (non-null) > defaults; `None` = unset everywhere.
    let get = |key: &str| -> Option<&Value> {
        kwargs.get(key).or_else(|| config.and_then(|c| c.get(key)))
    };

    for (key, neutral) in UNSUPPORTED_KEYS {
        if let Some(v) = get(key)
            && !neutral.accepts(v)
        {
            return Err(HfError::Unsupported {
                key: (*key).into(),
                value: v.to_string(),
            });
        }
    }
    if let Some(v) = get("max_new_tokens")
        && let Some((x, _)) = number(v)
        && x <= 0.0
    {
        return Err(HfError::Invalid {
            key: "max_new_tokens".into(),
            message: format!(
                "`max_new_tokens` must be greater than 0, but is {}.",
                value_str(v)
            ),
        });
    }

    let do_sample = get("do_sample").is_some_and(truthy);
    if let Some(v) = get("num_return_sequences")
        && let Some((x, _)) = number(v)
        && x > 1.0
        && !do_sample
    {
        return Err(HfError::Invalid {
            key: "num_return_sequences".into(),
            message: format!(
                "Greedy methods (do_sample != True) without beam search do not support \
                 `num_return_sequences` different than 1 (got {}).",
                value_str(v)
            ),
        });
    }

    let mut p = GenerationParams {
        do_sample,
        constraints: Constraints::parse(get, do_sample)?,
        ..GenerationParams::default()
    };

    // RepetitionPenaltyLogitsProcessor is built in greedy mode too.
    match get("repetition_penalty") {
        None => {}
        Some(Value::Null) => p.repetition_penalty = 1.0,
        Some(v) => match number(v) {
            Some((1.0, _)) => p.repetition_penalty = 1.0,
            Some((x, true)) if x > 0.0 => p.repetition_penalty = x,
            _ => {
                return Err(HfError::RepetitionPenalty {
                    value: value_str(v),
                });
            }
        },
    }

    let default_or = |key: &str, default: f64| -> f64 {
        match get(key) {
            None => default,
            Some(v) => number(v).map_or(default, |(x, _)| x),
        }
    };

    if !do_sample {
        // Warpers are not built: their values are never checked or used.
        p.temperature = default_or("temperature", 1.0);
        p.top_p = default_or("top_p", 1.0);
        p.typical_p = default_or("typical_p", 1.0);
        p.epsilon_cutoff = default_or("epsilon_cutoff", 0.0);
        p.eta_cutoff = default_or("eta_cutoff", 0.0);
        p.min_p = get("min_p").and_then(number).map(|(x, _)| x);
        p.top_k = match get("top_k") {
            None => Some(50),
            Some(v) => v.as_u64().filter(|&k| k > 0).map(saturating_usize),
        };
        return Ok(p);
    }

    // TemperatureLogitsWarper: added when `temperature is not None and != 1.0`;
    // requires `isinstance(temperature, float) and temperature > 0`.
    match get("temperature") {
        None | Some(Value::Null) => p.temperature = 1.0,
        Some(v) => match number(v) {
            Some((1.0, _)) => p.temperature = 1.0,
            Some((x, true)) if x > 0.0 => p.temperature = x,
            n => {
                return Err(HfError::Temperature {
                    value: value_str(v),
                    zero: n.is_some_and(|(x, _)| x == 0.0),
                    string: v.is_string(),
                });
            }
        },
    }

    // TopKLogitsWarper: added when `top_k is not None and top_k != 0`;
    // requires `isinstance(top_k, int) and top_k > 0` (bool is an int).
    p.top_k = match get("top_k") {
        None => Some(50),
        Some(Value::Null) => None,
        Some(v) => match number(v) {
            Some((0.0, _)) => None,
            Some((x, false)) if x > 0.0 => Some(v.as_u64().map_or(1, saturating_usize)),
            _ => {
                return Err(HfError::TopK {
                    value: value_str(v),
                });
            }
        },
    };

    // TopPLogitsWarper: added when `top_p < 1.0`; `float(top_p)` must be >= 0.
    p.top_p = match get("top_p") {
        None | Some(Value::Null) => 1.0,
        Some(v) => match number(v) {
            Some((x, _)) if x < 0.0 => {
                return Err(HfError::TopP {
                    value: float_repr(x),
                });
            }
            Some((x, _)) => x,
            None => return Err(wrong_type("top_p", "a number", v)),
        },
    };

    // MinPLogitsWarper: added when `min_p is not None`; requires 0 <= min_p <= 1.
    p.min_p = match get("min_p") {
        None | Some(Value::Null) => None,
        Some(v) => match number(v) {
            Some((x, _)) if (0.0..=1.0).contains(&x) => Some(x),
            Some(_) => {
                return Err(HfError::MinP {
                    value: value_str(v),
                });
            }
            None => return Err(wrong_type("min_p", "a number", v)),
        },
    };

    // TypicalLogitsWarper: added when `typical_p < 1.0`; `float(mass)` must be > 0.
    p.typical_p = match get("typical_p") {
        None | Some(Value::Null) => 1.0,
        Some(v) => match number(v) {
            Some((x, _)) if x <= 0.0 => {
                return Err(HfError::TypicalP {
                    value: float_repr(x),
                });
            }
            Some((x, _)) => x,
            None => return Err(wrong_type("typical_p", "a number", v)),
        },
    };

    // Epsilon/Eta warpers: added only when `0.0 < value < 1.0`, so no value
    // can make their constructors raise; other numbers are ignored.
    for (key, slot) in [
        ("epsilon_cutoff", &mut p.epsilon_cutoff),
        ("eta_cutoff", &mut p.eta_cutoff),
    ] {
        *slot = match get(key) {
            None | Some(Value::Null) => 0.0,
            Some(v) => match number(v) {
                Some((x, _)) => x,
                None => return Err(wrong_type(key, "a number", v)),
            },
        };
    }

    Ok(p)
}

fn saturating_usize(k: u64) -> usize {
    usize::try_from(k).unwrap_or(usize::MAX)
}

/// A sampling flag transformers ignores because `do_sample` is not `True`:
/// its name and the detail transformers logs for it at INFO level.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IgnoredFlag {
    /// The flag (`temperature`, `top_p`, ...).
    pub name: &'static str,
    /// transformers' detail line, e.g. "`do_sample` is not set to `True`. However,
    /// `temperature` is set to `0.7` -- this flag is only used in sample-based generation
    /// modes. You should set `do_sample=True` or unset `temperature`."
    pub detail: String,
}

/// The sampling flags transformers 5.23.0 warns about when generate kwargs
/// set them without `do_sample=True` (generation/configuration_utils.py,
/// `GenerationConfig.validate`, check 2.1, as `generation_config.update(**kwargs)`
/// runs it): greedy decoding ignores them. Values are read kwargs > generation
/// config > defaults, like [`resolve`]; a flag from the generation config is
/// skipped when the kwargs set `do_sample` and not the flag (`_should_warn`).
/// Empty when `do_sample` is `True`.
pub fn ignored_sampling_flags(
    kwargs: &Map<String, Value>,
    config: Option<&GenerationConfig>,
) -> Vec<IgnoredFlag> {
    let get = |key: &str| -> Option<&Value> {
        kwargs.get(key).or_else(|| config.and_then(|c| c.get(key)))
    };
    // `if self.do_sample is not True`: 1 or "yes" are not `True`.
    if get("do_sample") == Some(&Value::Bool(true)) {
        return Vec::new();
    }
    // `x is not None and x != neutral` (None: any value warns); Python's
    // `True == 1.0`, and a string never equals a float.
    let checks: [(&'static str, Option<f64>); 7] = [
        ("temperature", Some(1.0)),
        ("top_p", Some(1.0)),
        ("min_p", None),
        ("typical_p", Some(1.0)),
        ("top_k", Some(50.0)),
        ("epsilon_cutoff", Some(0.0)),
        ("eta_cutoff", Some(0.0)),
    ];
    let sample_set = kwargs.contains_key("do_sample");
    checks
        .into_iter()
        .filter_map(|(name, neutral)| {
            let v = get(name).filter(|v| !v.is_null())?;
            let off = neutral.is_some_and(|n| number(v).is_some_and(|(x, _)| x == n));
            // `_should_warn`: not when the caller set `do_sample` but not this flag.
            let warned = !sample_set || kwargs.contains_key(name);
            (!off && warned).then(|| IgnoredFlag {
                name,
                detail: format!(
                    "`do_sample` is not set to `True`. However, `{name}` is set to `{value}` -- this \
                     flag is only used in sample-based generation modes. You should set \
                     `do_sample=True` or unset `{name}`.",
                    value = value_str(v)
                ),
            })
        })
        .collect()
}

/// The warning transformers 5.23.0 logs (once, at WARNING level) for these
/// flags (`GenerationConfig.validate`), e.g. "The following generation flags
/// are not valid and may be ignored: ['temperature', 'top_p']. Set
/// `TRANSFORMERS_VERBOSITY=info` for more details."; `None` when empty.
pub fn ignored_flags_warning(flags: &[IgnoredFlag]) -> Option<String> {
    if flags.is_empty() {
        return None;
    }
    let names: Vec<String> = flags.iter().map(|f| format!("'{}'", f.name)).collect();
    Some(format!(
        "The following generation flags are not valid and may be ignored: [{}]. Set \
         `TRANSFORMERS_VERBOSITY=info` for more details.",
        names.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn as_kwargs_resolves_back_to_the_same_params() {
        let kwargs = json!({"do_sample": true, "temperature": 0.6, "top_p": 0.9});
        let p = resolve(kwargs.as_object().expect("object"), None).expect("valid");
        let back = p.as_kwargs();
        // transformers' hidden default top_k 50 is written out; min_p stays unset.
        assert_eq!(back["top_k"], json!(50));
        assert!(!back.contains_key("min_p"));
        assert_eq!(resolve(&back, None).expect("valid"), p);
        // top-k off reads back as 0, which transformers also reads as off.
        let off = resolve(json!({"top_k": null}).as_object().expect("object"), None).expect("ok");
        assert_eq!(off.as_kwargs()["top_k"], json!(0));
        assert_eq!(resolve(&off.as_kwargs(), None).expect("valid").top_k, None);
    }

    #[test]
    fn sampling_flags_without_do_sample_are_named_as_transformers_names_them() {
        let flags = |v: Value| ignored_sampling_flags(v.as_object().expect("object"), None);
        let got = flags(json!({"temperature": 0.7, "top_p": 0.9}));
        let names: Vec<_> = got.iter().map(|f| f.name).collect();
        assert_eq!(names, ["temperature", "top_p"]);
        // The text of transformers 5.23.0's generation/configuration_utils.py.
        assert_eq!(
            got[0].detail,
            "`do_sample` is not set to `True`. However, `temperature` is set to `0.7` -- this flag \
             is only used in sample-based generation modes. You should set `do_sample=True` or \
             unset `temperature`."
        );
        assert_eq!(
            ignored_flags_warning(&got).as_deref(),
            Some(
                "The following generation flags are not valid and may be ignored: \
                 ['temperature', 'top_p']. Set `TRANSFORMERS_VERBOSITY=info` for more details."
            )
        );
        // Sampling, neutral values, and `do_sample=False` with the flag: as transformers.
        assert!(flags(json!({"do_sample": true, "temperature": 0.7})).is_empty());
        assert!(flags(json!({"temperature": 1.0, "top_k": 50, "top_p": null})).is_empty());
        assert_eq!(
            flags(json!({"do_sample": false, "top_k": 40}))[0].name,
            "top_k"
        );
        assert_eq!(ignored_flags_warning(&[]), None);
        // A generation config's flag is not the caller's when the caller set do_sample only.
        let config = GenerationConfig::from_json_str(r#"{"temperature": 0.6}"#).expect("config");
        let kwargs = json!({"do_sample": false});
        let from_config =
            ignored_sampling_flags(kwargs.as_object().expect("object"), Some(&config));
        assert!(from_config.is_empty());
        let none = ignored_sampling_flags(&Map::new(), Some(&config));
        assert_eq!(none[0].name, "temperature");
    }
}
