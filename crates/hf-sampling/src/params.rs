//! Parameter resolution: generate kwargs > `generation_config.json` > transformers defaults.
//!
//! Mirrors `GenerationMixin._prepare_generation_config` (transformers 5.23.0,
//! `generation/utils.py`; 4.57.6's where the `transformers` param says so,
//! see [`crate::version`]): a fresh config takes the model's
//! `generation_config.json` values where still unset, then
//! `GenerationConfig._get_default_generation_params()` where still unset, then
//! `generation_config.update(**kwargs)` sets every kwarg, `None` included.
//! Validation happens where transformers does it: in the processor
//! constructors that `_get_logits_processor` builds (so sampling-only values
//! are not checked when `do_sample` is false), plus the few raises in
//! `GenerationConfig.validate`.

use std::path::Path;

use parity_core::params::to_map;
use parity_core::{ParamInfo, ensure};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::constraints::{self, Constraints};
use crate::error::HfError;
use crate::version::{self, Passed, TransformersVersion};
use parity_core::py::{self, PyNum};
use parity_core::text::python_float_repr as float_repr;

parity_core::params! {
    /// Resolved transformers generation parameters (after kwargs >
    /// generation_config.json > transformers defaults). The defaults are
    /// transformers' global ones (`_get_default_generation_params`): greedy,
    /// T = 1, top-k 50, top-p 1, typical 1, penalty 1, cutoffs 0, no min-p.
    ///
    /// Values are held as Python holds them (f64); each processor casts to f32
    /// the way torch does. "Off" values are kept as given (e.g. `top_p = 1.5` is
    /// stored and ignored, as transformers ignores it). Each field but
    /// `constraints` is a sampling key: `compare semantics` lists it, and it
    /// serializes as its resolved value ([`GenerationParams::as_kwargs`]).
    #[derive(Debug, Clone, PartialEq, Serialize)]
    pub struct GenerationParams {
        /// Sample (`true`) or take the argmax (`false`, transformers' default).
        pub do_sample: bool = false
            => "sample (softmax + torch.multinomial) instead of greedy argmax",
        /// Temperature; 1.0 (default) adds no processor.
        pub temperature: f64 = 1.0 => "TemperatureLogitsWarper when != 1 (sampling only)",
        /// Top-k; `None` = off (`0` or `null`); default `Some(50)`.
        pub top_k: Option<usize> ["50"] = Some(50)
            => "TopKLogitsWarper, ties at the k-th kept; 0 or null = off",
        /// Top-p; values >= 1.0 (default 1.0) add no processor.
        pub top_p: f64 = 1.0
            => "TopPLogitsWarper when < 1 (ascending f32 cumsum <= 1 - p dropped)",
        /// Min-p; `None` (default) = off. Any value, even 0, adds the processor.
        pub min_p: Option<f64> => "MinPLogitsWarper when set",
        /// Typical-p mass; values >= 1.0 (default) add no processor.
        pub typical_p: f64 = 1.0 => "TypicalLogitsWarper when < 1",
        /// Epsilon cutoff; active only strictly between 0 and 1 (default 0.0).
        pub epsilon_cutoff: f64 = 0.0 => "EpsilonLogitsWarper when strictly between 0 and 1",
        /// Eta cutoff; active only strictly between 0 and 1 (default 0.0).
        pub eta_cutoff: f64 = 0.0 => "EtaLogitsWarper when strictly between 0 and 1",
        /// Repetition penalty; 1.0 (default) adds no processor. Applies in greedy
        /// mode too.
        pub repetition_penalty: f64 = 1.0
            => "RepetitionPenaltyLogitsProcessor over every input id, greedy too",
        /// Which transformers' rules (this crate's param, not a kwarg; see
        /// [`crate::version`]). Not a sampling key.
        #[serde(skip)]
        pub transformers: TransformersVersion ["\"5.23.0\""]
            => "\"5.23.0\" (every rule), \"5.0.0\" (the penalty raises for ids >= V) or \"4.57.6\" (also: GenerationConfig() holds 50/1.0/1.0, a file's null is a value, the object route's class-default merge, no top_h)",
        /// How the settings reach `generate()` (this crate's param, not a
        /// kwarg). Not a sampling key.
        #[serde(skip)]
        pub passed: Passed ["\"kwargs\""]
            => "\"kwargs\" (generate(**settings)) or \"generation_config\" (generate(generation_config=GenerationConfig(**settings)), as trl passes them)",
        /// Every other processor's kwargs (bad words, n-gram bans, min length,
        /// forced and suppressed tokens, ...) and the generation state they read
        /// (`eos_token_id`, `max_length`, `max_new_tokens`); default: none set.
        /// Not a sampling key (declared last: [`SAMPLING_KEYS`] and
        /// [`SAMPLING_PARAMS`] leave it out, [`SAMPLING_KEYS`] the two
        /// before it too).
        #[serde(skip)]
        pub constraints: Constraints => "",
    }
}

/// `s` without its last element (`constraints`, the one field of
/// [`GenerationParams`] that is not a sampling key).
const fn all_but_last<T>(s: &'static [T]) -> &'static [T] {
    match s.split_last() {
        Some((_, rest)) => rest,
        None => s,
    }
}

/// The sampling keys this crate models, in declaration order (all but
/// `transformers`, `passed` and `constraints`).
pub(crate) const SAMPLING_KEYS: &[&str] =
    all_but_last(all_but_last(all_but_last(GenerationParams::FIELDS)));

/// The params as `compare semantics` lists them: the sampling keys, the
/// version and the route.
pub(crate) const SAMPLING_PARAMS: &[ParamInfo] = all_but_last(GenerationParams::PARAMS);

/// `GenerationConfig` attributes that cannot change one step's distribution
/// for a decoder-only model: accepted and ignored.
const IGNORED_KEYS: &[&str] = &[
    // Read in the library only by `_beam_search` (generation/utils.py line
    // 3652 in 5.23.0, 3202 in 4.57.6), which `num_beams` refuses; 5.23.0's
    // contrastive search is the Hub's, which `penalty_alpha` refuses.
    "low_memory",
    // Read only by group beam search (the Hub's since 4.56; the mode needs
    // `num_beams > 1`, `get_generation_mode`), which `num_beams` refuses;
    // neither is validated (configuration_utils.py, 5.23.0 and 4.57.6).
    "num_beam_groups",
    "diversity_penalty",
    // Read only by prompt lookup (generation/utils.py 5.23.0 line 1321,
    // 4.57.6 line 1037), which `prompt_lookup_num_tokens` refuses.
    "max_matching_ngram_size",
    // Read only by assisted decoding (5.23.0 lines 1313 and 4102), which the
    // assistant keys and `prompt_lookup_num_tokens` refuse; validated
    // (see `validate`).
    "assistant_ensemble_weight",
    // Read only where assisted decoding picks its candidate generator
    // (`_get_candidate_generator`, generation/utils.py 5.23.0 line 1351,
    // and the assistant check at 1888), which those keys refuse.
    "speculation_type",
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
    // `if generation_config.token_healing:` (generation/utils.py 5.23.0
    // line 2933, 4.57.6 line 2491).
    ("token_healing", Neutral::Falsy),
    ("dola_layers", Neutral::Null),
    ("constraints", Neutral::Null),
    ("force_words_ids", Neutral::Null),
    ("prompt_lookup_num_tokens", Neutral::Null),
    ("assistant_early_exit", Neutral::Null),
    // `or self.use_mtp` (configuration_utils.py 5.23.0 line 575).
    ("use_mtp", Neutral::Falsy),
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
    One,
    /// Any value Python reads as false (`if value:`): `None`, `False`, 0,
    /// an empty string, list or dict.
    Falsy,
    /// Any number `<= 0` (a `> 0` test).
    NotPositive,
}

impl Neutral {
    fn accepts(self, v: &Value) -> bool {
        match (self, v) {
            (_, Value::Null) => true,
            (Self::One, Value::Number(n)) => PyNum::of(n).float() == 1.0,
            (Self::Falsy, v) => !truthy(v),
            (Self::NotPositive, Value::Number(n)) => PyNum::of(n).float() <= 0.0,
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
                k if SAMPLING_KEYS.contains(&k) => (!value.is_number()).then_some("a number"),
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
        Value::Number(n) => PyNum::of(n).float() != 0.0,
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// A Python number: (value as float, is a Python `float`). `bool` is an int.
pub(crate) fn number(v: &Value) -> Option<(f64, bool)> {
    PyNum::numeric(v).map(|n| (n.float(), n.is_float()))
}

fn wrong_type(key: &str, expected: &'static str, v: &Value) -> HfError {
    HfError::WrongType {
        key: key.into(),
        expected,
        value: v.to_string(),
    }
}

impl GenerationParams {
    /// The resolved sampling keys as JSON ([`SAMPLING_KEYS`], `null` for an
    /// unset top-k or min-p).
    pub(crate) fn sampling_map(&self) -> Map<String, Value> {
        to_map(self)
    }

    /// The resolved value of a kwarg [`crate::Acting`] reads: `Some(null)`
    /// for an unset one whose default is `None`, `None` for a kwarg these
    /// params do not hold (transformers' default then applies).
    pub(crate) fn resolved_value(&self, sampling: &Map<String, Value>, key: &str) -> Option<Value> {
        let c = &self.constraints;
        let ids =
            |v: &Option<Vec<i64>>| Some(v.as_ref().map_or(Value::Null, |v| Value::from(v.clone())));
        match key {
            k if SAMPLING_KEYS.contains(&k) => sampling.get(k).cloned(),
            "eos_token_id" => ids(&c.eos_token_id),
            "min_length" => c.min_length.map(Value::from),
            "min_new_tokens" => Some(c.min_new_tokens.map_or(Value::Null, Value::from)),
            "no_repeat_ngram_size" => c.no_repeat_ngram_size.map(Value::from),
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
        let mut out = self.sampling_map();
        if self.top_k.is_none() {
            out.insert("top_k".into(), Value::from(0));
        }
        out.retain(|_, v| !v.is_null());
        if self.transformers != TransformersVersion::default() {
            out.insert(
                version::VERSION_KEY.into(),
                Value::from(self.transformers.as_str()),
            );
        }
        out
    }

    /// Every sampling value that is not transformers' no-op (`do_sample`
    /// always): what a report prints as the effective parameters.
    pub(crate) fn sampling_values(&self) -> Map<String, Value> {
        let acting = self.acting();
        let mut out = self.sampling_map();
        out.retain(|key, _| key == "do_sample" || acting.acts(key));
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
        || key == PENALTY_ALPHA
}

/// Refused only where it switches to contrastive search
/// ([`contrastive_mode`]).
const PENALTY_ALPHA: &str = "penalty_alpha";

/// [`is_generate_kwarg`] for `version`: 4.57.6's and 5.0.0's
/// `GenerationConfig` lack some of 5.23.0's keys
/// ([`TransformersVersion::lacks`]); 4.57.6 has `return_legacy_cache`
/// (ignored).
fn is_kwarg_of(version: TransformersVersion, key: &str) -> bool {
    (version.is_4x() && key == "return_legacy_cache")
        || (is_generate_kwarg(key) && !version.lacks(key))
}

/// `GenerationConfig.validate`'s checks of keys that change nothing here,
/// which `generate()` still raises for (it validates in `update`):
/// configuration_utils.py 5.23.0 lines 668–676, 4.57.6 lines 543–544.
fn validate<'a>(
    transformers: TransformersVersion,
    get: &impl Fn(&str) -> Option<&'a Value>,
) -> Result<(), HfError> {
    let invalid = |key: &str, message: String| HfError::Invalid {
        key: key.into(),
        message,
    };
    // `early_stopping not in {None, True, False, "never"}` (4.57.6: no
    // `None`); a list or dict cannot be hashed into the set.
    if let Some(v) = get("early_stopping") {
        let ok = match v {
            Value::Null => !transformers.is_4x(),
            Value::Bool(_) => true,
            Value::Number(_) => number(v).is_some_and(|(x, _)| x == 0.0 || x == 1.0),
            Value::String(s) => s == "never",
            Value::Array(_) | Value::Object(_) => {
                return Err(invalid(
                    "early_stopping",
                    format!("TypeError: unhashable type: '{}'", py::type_name(v)),
                ));
            }
        };
        ensure!(
            ok,
            invalid(
                "early_stopping",
                format!(
                    "`early_stopping` must be a boolean or 'never', but is {}.",
                    py::str(v)
                )
            )
        );
    }
    // 5.23.0 only (4.57.6 has no such key).
    if let Some(v) = get("assistant_ensemble_weight").filter(|v| !v.is_null()) {
        let Some((w, _)) = number(v) else {
            return Err(invalid(
                "assistant_ensemble_weight",
                format!(
                    "TypeError: '<' not supported between instances of 'float' and '{}'",
                    py::type_name(v)
                ),
            ));
        };
        ensure!(
            0.0 < w && w < 1.0,
            invalid(
                "assistant_ensemble_weight",
                format!(
                    "`assistant_ensemble_weight` must be in the open interval `(0.0, 1.0)`, but is {}. \
                     Use `None` for standard (lossless) speculative decoding.",
                    py::str(v)
                )
            )
        );
    }
    Ok(())
}

/// `GenerationConfig.get_generation_mode`'s test for contrastive search
/// bar `penalty_alpha > 0` (configuration_utils.py, 5.23.0 lines 549–563;
/// 4.57.6 lines 477–491): no beams (`num_beams` None or 1; 4.57.6: 1),
/// `do_sample is not True` (4.57.6: `do_sample is False`, its default) and
/// `top_k > 1` (absent: 50). Each reading is `None` when absent. Where it
/// holds, `penalty_alpha > 0` switches `generate()` to contrastive search;
/// elsewhere nothing reads `penalty_alpha`.
pub(crate) fn contrastive_mode(
    transformers: TransformersVersion,
    do_sample: Option<&Value>,
    num_beams: Option<&Value>,
    top_k: Option<&Value>,
) -> bool {
    let greedy = match (transformers.is_4x(), do_sample) {
        (false, v) => v != Some(&Value::Bool(true)),
        (true, None) => true,
        (true, v) => v == Some(&Value::Bool(false)),
    };
    let one_beam = match num_beams {
        None => true,
        Some(Value::Null) => !transformers.is_4x(),
        Some(v) => number(v).is_some_and(|(x, _)| x == 1.0),
    };
    let top_k = match top_k {
        None => 50.0,
        Some(v) => number(v).map_or(f64::NAN, |(x, _)| x),
    };
    greedy && one_beam && top_k > 1.0
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
///
/// The settings may also hold this crate's two picks: `transformers`
/// (`"5.23.0"`, the default, or `"4.57.6"`) and `passed` (`"kwargs"`, the
/// default, or `"generation_config"`, for
/// `generate(generation_config=GenerationConfig(**settings))`); see
/// [`crate::version`] for what each changes.
pub fn resolve(
    kwargs: &Map<String, Value>,
    config: Option<&GenerationConfig>,
) -> Result<GenerationParams, HfError> {
    let (transformers, passed, settings) = version::split(kwargs)?;
    let mut p = match (transformers, passed) {
        (_, Passed::Kwargs) => resolve_kwargs(transformers, &settings, config)?,
        // 5.23.0: the object's `None`s are unset, filled from the model's
        // file, then the defaults (generation/utils.py lines 2108–2109).
        // A key the version does not know is a custom attribute no
        // processor reads.
        (TransformersVersion::V5_0 | TransformersVersion::V5_23, Passed::GenerationConfig) => {
            let mut set = settings;
            set.retain(|k, v| !v.is_null() && is_kwarg_of(transformers, k));
            resolve_kwargs(transformers, &set, config)?
        }
        (TransformersVersion::V4_57, Passed::GenerationConfig) => {
            let mut set = settings;
            set.retain(|k, _| is_kwarg_of(transformers, k));
            let merged = version::merge_object_4x(&set, config.map(GenerationConfig::values))?;
            resolve_kwargs(transformers, &merged, None)?
        }
    };
    p.passed = passed;
    Ok(p)
}

/// The sampling values transformers runs `kwargs` with: [`resolve`] on the
/// sampling keys alone (with this crate's `transformers` and `passed`
/// picks), so a kwarg outside them (a processor or search option that a
/// caller blocks or explains on its own) does not stop it. What a port to
/// another engine spells out: an unset or `null` value is transformers'
/// default, `top_k` 0 or `null` is off.
pub fn resolve_sampling(kwargs: &Map<String, Value>) -> Result<GenerationParams, HfError> {
    let sampling = parity_core::params::only(kwargs, |k| {
        SAMPLING_KEYS.contains(&k) || [version::VERSION_KEY, version::PASSED_KEY].contains(&k)
    });
    resolve(&sampling, None)
}

fn resolve_kwargs(
    transformers: TransformersVersion,
    kwargs: &Map<String, Value>,
    config: Option<&GenerationConfig>,
) -> Result<GenerationParams, HfError> {
    // Unknown kwargs first: transformers raises for them whatever the rest is.
    for (key, value) in kwargs {
        ensure!(
            is_kwarg_of(transformers, key) || value.is_null(),
            HfError::UnknownKwarg {
                key: key.clone(),
                value: value.to_string(),
            }
        );
    }

    // kwargs > config (non-null) > defaults; `None` = unset everywhere.
    // 4.57.6 builds the model's config as `GenerationConfig(**file)`, so a
    // sampling key's `null` there is a value (`top_k: null` is off).
    let raw_nulls = transformers.is_4x();
    let get = |key: &str| -> Option<&Value> {
        kwargs.get(key).or_else(|| {
            config.and_then(|c| {
                if raw_nulls && SAMPLING_KEYS.contains(&key) {
                    c.values().get(key)
                } else {
                    c.get(key)
                }
            })
        })
    };
    // Set and not `None` (what the processors' `is not None` tests see).
    let set = |key: &str| get(key).filter(|v| !v.is_null());

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
    validate(transformers, &get)?;
    // Contrastive search, which this crate does not model; a value Python
    // cannot compare with 0 raises there: refused too.
    if let Some(v) = set(PENALTY_ALPHA)
        && contrastive_mode(
            transformers,
            get("do_sample"),
            get("num_beams"),
            get("top_k"),
        )
        && number(v).is_none_or(|(x, _)| x > 0.0)
    {
        return Err(HfError::Unsupported {
            key: PENALTY_ALPHA.into(),
            value: v.to_string(),
        });
    }
    if let Some(v) = get("max_new_tokens")
        && let Some((x, _)) = number(v)
        && x <= 0.0
    {
        return Err(HfError::Invalid {
            key: "max_new_tokens".into(),
            message: format!(
                "`max_new_tokens` must be greater than 0, but is {}.",
                py::str(v)
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
                py::str(v)
            ),
        });
    }

    let mut p = GenerationParams {
        do_sample,
        constraints: Constraints::parse(get, do_sample)?,
        transformers,
        ..GenerationParams::default()
    };
    // RepetitionPenaltyLogitsProcessor is built in greedy mode too: added
    // when `repetition_penalty is not None and != 1.0`; requires
    // `isinstance(penalty, float) and penalty > 0`.
    if let Some(v) = set("repetition_penalty") {
        let n = number(v);
        ensure!(
            matches!(n, Some((x, float)) if x == 1.0 || (float && x > 0.0)),
            HfError::RepetitionPenalty { value: py::str(v) }
        );
        p.repetition_penalty = n.map_or(1.0, |(x, _)| x);
    }

    if !do_sample {
        // Warpers are not built: their values are never checked; a number is
        // kept as given, anything else leaves the default.
        for (key, slot) in [
            ("temperature", &mut p.temperature),
            ("top_p", &mut p.top_p),
            ("typical_p", &mut p.typical_p),
            ("epsilon_cutoff", &mut p.epsilon_cutoff),
            ("eta_cutoff", &mut p.eta_cutoff),
        ] {
            if let Some((x, _)) = get(key).and_then(number) {
                *slot = x;
            }
        }
        p.min_p = get("min_p").and_then(number).map(|(x, _)| x);
        if let Some(v) = get("top_k") {
            p.top_k = v.as_u64().filter(|&k| k > 0).map(saturating_usize);
        }
        return Ok(p);
    }

    // TemperatureLogitsWarper: added when `temperature is not None and != 1.0`;
    // requires `isinstance(temperature, float) and temperature > 0`.
    if let Some(v) = set("temperature") {
        let n = number(v);
        ensure!(
            matches!(n, Some((x, float)) if x == 1.0 || (float && x > 0.0)),
            HfError::Temperature {
                value: py::str(v),
                zero: n.is_some_and(|(x, _)| x == 0.0),
                string: v.is_string(),
            }
        );
        p.temperature = n.map_or(1.0, |(x, _)| x);
    }

    // TopKLogitsWarper: added when `top_k is not None and top_k != 0`;
    // requires `isinstance(top_k, int) and top_k > 0` (bool is an int).
    match get("top_k") {
        None => {}
        Some(Value::Null) => p.top_k = None,
        Some(v) => {
            let n = number(v);
            ensure!(
                matches!(n, Some((x, float)) if x == 0.0 || (!float && x > 0.0)),
                HfError::TopK { value: py::str(v) }
            );
            p.top_k = n
                .is_some_and(|(x, _)| x != 0.0)
                .then(|| v.as_u64().map_or(1, saturating_usize));
        }
    }

    // TopPLogitsWarper: added when `top_p < 1.0`; `float(top_p)` must be >= 0.
    if let Some(v) = set("top_p") {
        let (x, _) = number(v).ok_or_else(|| wrong_type("top_p", "a number", v))?;
        ensure!(
            x >= 0.0,
            HfError::TopP {
                value: float_repr(x),
            }
        );
        p.top_p = x;
    }

    // MinPLogitsWarper: added when `min_p is not None`; requires 0 <= min_p <= 1.
    if let Some(v) = set("min_p") {
        let (x, _) = number(v).ok_or_else(|| wrong_type("min_p", "a number", v))?;
        ensure!(
            (0.0..=1.0).contains(&x),
            HfError::MinP { value: py::str(v) }
        );
        p.min_p = Some(x);
    }

    // TypicalLogitsWarper: added when `typical_p < 1.0`; `float(mass)` must be > 0.
    if let Some(v) = set("typical_p") {
        let (x, _) = number(v).ok_or_else(|| wrong_type("typical_p", "a number", v))?;
        ensure!(
            x > 0.0,
            HfError::TypicalP {
                value: float_repr(x),
            }
        );
        p.typical_p = x;
    }

    // Epsilon/Eta warpers: added only when `0.0 < value < 1.0`, so no value
    // can make their constructors raise; other numbers are ignored.
    for (key, slot) in [
        ("epsilon_cutoff", &mut p.epsilon_cutoff),
        ("eta_cutoff", &mut p.eta_cutoff),
    ] {
        if let Some(v) = set(key) {
            *slot = number(v).ok_or_else(|| wrong_type(key, "a number", v))?.0;
        }
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
    // `x is not None and x != default` (a default of None: any value warns),
    // in transformers' order; Python's `True == 1.0`, and a string never
    // equals a float.
    let checks = [
        "temperature",
        "top_p",
        "min_p",
        "typical_p",
        "top_k",
        "epsilon_cutoff",
        "eta_cutoff",
    ];
    let defaults = GenerationParams::default().sampling_map();
    let sample_set = kwargs.contains_key("do_sample");
    checks
        .into_iter()
        .filter_map(|name| {
            let v = get(name).filter(|v| !v.is_null())?;
            let neutral = defaults.get(name).and_then(number).map(|(n, _)| n);
            let off = neutral.is_some_and(|n| number(v).is_some_and(|(x, _)| x == n));
            // `_should_warn`: not when the caller set `do_sample` but not this flag.
            let warned = !sample_set || kwargs.contains_key(name);
            (!off && warned).then(|| IgnoredFlag {
                name,
                detail: format!(
                    "`do_sample` is not set to `True`. However, `{name}` is set to `{value}` -- this \
                     flag is only used in sample-based generation modes. You should set \
                     `do_sample=True` or unset `{name}`.",
                    value = py::str(v)
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

    /// `get_generation_mode` (configuration_utils.py, 5.23.0 and 4.57.6):
    /// `penalty_alpha` is contrastive search only with one beam, no
    /// sampling, `top_k > 1` and `penalty_alpha > 0`; elsewhere nothing
    /// reads it and generate() runs as without it.
    #[test]
    fn penalty_alpha_is_refused_only_where_it_is_contrastive_search() {
        let refused = |v: Value| {
            matches!(
                resolve(v.as_object().expect("object"), None),
                Err(HfError::Unsupported { ref key, .. }) if key == "penalty_alpha"
            )
        };
        for v in [
            json!({"penalty_alpha": 0.6}),
            json!({"penalty_alpha": 0.6, "top_k": 2}),
            json!({"penalty_alpha": 0.6, "num_beams": null}),
            json!({"penalty_alpha": "x"}),
            json!({"penalty_alpha": 0.6, "transformers": "4.57.6"}),
            json!({"penalty_alpha": 0.6, "do_sample": false, "transformers": "4.57.6"}),
        ] {
            assert!(refused(v.clone()), "{v}");
        }
        for v in [
            json!({"penalty_alpha": 0.6, "do_sample": true}),
            json!({"penalty_alpha": 0.6, "top_k": 1}),
            json!({"penalty_alpha": 0.6, "top_k": null}),
            json!({"penalty_alpha": 0}),
            json!({"penalty_alpha": "x", "do_sample": true}),
            // 4.57.6 tests `do_sample is False`: 0 is not False, so sample
            // mode, which with a falsy do_sample draws the argmax.
            json!({"penalty_alpha": 0.6, "do_sample": 0, "transformers": "4.57.6"}),
        ] {
            assert!(!refused(v.clone()), "{v}");
            let without = {
                let mut m = v.as_object().expect("object").clone();
                m.remove("penalty_alpha");
                resolve(&m, None).expect("valid")
            };
            let with = resolve(v.as_object().expect("object"), None).expect("valid");
            assert_eq!(with, without, "{v}");
        }
        // low_memory is read by beam search only.
        let lm = json!({"do_sample": true, "low_memory": true});
        assert!(resolve(lm.as_object().expect("object"), None).is_ok());
    }

    /// `GenerationConfig.validate` raises for these in `generate()`, though
    /// nothing here reads them (configuration_utils.py 5.23.0 lines 668–676,
    /// 4.57.6 line 543); the keys only beam search, group beam search or
    /// prompt lookup read are accepted and change nothing.
    #[test]
    fn validate_raises_for_keys_that_change_nothing() {
        let run = |v: Value| resolve(v.as_object().expect("object"), None);
        let message = |v: Value| match run(v) {
            Err(HfError::Invalid { message, .. }) => message,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            message(json!({"early_stopping": 2})),
            "`early_stopping` must be a boolean or 'never', but is 2."
        );
        assert_eq!(
            message(json!({"early_stopping": null, "transformers": "4.57.6"})),
            "`early_stopping` must be a boolean or 'never', but is None."
        );
        assert_eq!(
            message(json!({"assistant_ensemble_weight": 1.5})),
            "`assistant_ensemble_weight` must be in the open interval `(0.0, 1.0)`, but is 1.5. \
             Use `None` for standard (lossless) speculative decoding."
        );
        let plain = run(json!({})).expect("valid");
        for v in [
            json!({"early_stopping": null}),
            json!({"early_stopping": 1.0}),
            json!({"early_stopping": "never"}),
            json!({"assistant_ensemble_weight": 0.5}),
            json!({"num_beam_groups": 3, "diversity_penalty": 1.0, "max_matching_ngram_size": 3}),
            // Read as `if token_healing:` / `or use_mtp`: falsy is off.
            json!({"token_healing": 0, "use_mtp": ""}),
            json!({"speculation_type": "dflash"}),
        ] {
            assert_eq!(run(v.clone()).expect("valid"), plain, "{v}");
        }
        for v in [json!({"token_healing": 1}), json!({"use_mtp": [0]})] {
            assert!(
                matches!(run(v.clone()), Err(HfError::Unsupported { .. })),
                "{v}"
            );
        }
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
