//! Which transformers release the rules follow, and how the settings reach
//! `generate()`: the two params that pick a rule set, and the 4.x merge of
//! a `GenerationConfig` object with the model's generation config.
//!
//! Every rule of this crate holds for transformers 5.23.0. 5.0.0 (the first
//! 5.x) differs from it only by the repetition penalty on ids `>= V` (it
//! raises, as 4.57.6 does; the clamp arrived in 5.18.0), by lacking five
//! keys ([`TransformersVersion::lacks`]) and by two processor rules shared
//! with 4.57.6 (below): 254 of the 258 recorded generation-config cases
//! agree (`fixtures/genconfig/transformers-5.0.0.json`). For 4.57.6 (the
//! last 4.x on PyPI) the rules that differ, each read in that wheel and
//! recorded from it (`fixtures/genconfig/transformers-4.57.6.json`, made by
//! `scripts/reference/hf_reference.py --only genconfig --transformers
//! 4.57.6`), are:
//!
//! - **`GenerationConfig()` holds real values** (`generation/configuration_utils.py`
//!   lines 344–363: `do_sample` False, `temperature` 1.0, `top_k` 50, `top_p`
//!   1.0, `typical_p` 1.0, `repetition_penalty` 1.0, ...); 5.23.0's holds
//!   `None` and fills `_get_default_generation_params()` (line 602) in
//!   `_prepare_generation_config` (`generation/utils.py` line 2072).
//! - **A `null` in generation_config.json is a value**: 4.57.6 builds the
//!   model's config as `GenerationConfig(**file)` (`from_dict`,
//!   configuration_utils.py line 1194), so
//!   `top_k: null` turns top-k off, where 5.23.0 reads it as unset and uses 50.
//!   (For the other sampling keys `None` adds no processor, as their
//!   neutral value does.)
//! - **`generate(generation_config=GenerationConfig(**settings))`**
//!   ([`Passed::GenerationConfig`], what trl passes): 4.57.6 takes a model
//!   value for every attribute the object holds at its class default
//!   (`generation/utils.py` lines 1761–1785, when the model's file was saved
//!   by 4.50.0 or later), so an explicit `top_k=50` or `temperature=1.0` is
//!   replaced by the model's, and `top_k=None` stays `None` (off); then
//!   `temperature == 0.0` sets `do_sample=False` (line 1784). 5.23.0 fills
//!   only the object's `None`s from the model (lines 2108–2109: `defaults_only`),
//!   so `top_k=None` becomes the model's top-k or 50 (trl PR #4695).
//! - **Keys 4.57.6 does not have** (`top_h`, `use_mtp`, `max_cache_len`,
//!   `continuous_batching_config`, `speculation_type`,
//!   `assistant_ensemble_weight`) are unknown kwargs there:
//!   `_validate_model_kwargs` raises for a non-`None` one.
//! - **`RepetitionPenaltyLogitsProcessor` gathers every input id**
//!   (`generation/logits_process.py` 4.57.6 line 402, `torch.gather(scores, 1,
//!   input_ids)`): an id `>= V` raises `RuntimeError: index 64 is out of
//!   bounds for dimension 1 with size 64`; 5.23.0 clamps such ids onto a
//!   padding column and ignores them (line 426). 4.57.6 also penalises left padding
//!   (no `prompt_ignore_length` from the attention mask).
//!
//! What is the same, checked: `_get_logits_processor`'s order and
//! conditions (4.57.6 `generation/utils.py` lines 1090–1311 against 5.23.0's
//! 1410–1660 differ, for a decoder-only model given input ids, only by
//! `TopHLogitsWarper` and the penalty's padding),
//! the constructors' validation of temperature, top-k, top-p, min-p,
//! typical, epsilon and eta, and their arithmetic: the sampling processors'
//! `__call__` bodies are the same code (min-p keeps its top token by
//! `argsort` in 4.57.6 and by `topk` in 5.23.0, the same token for
//! `min_p <= 1`), and 4.57.6 regenerates every edge fixture's scores
//! (`fixtures/edge`, 23 files) bit for bit, except the five penalty settings
//! with ids `>= V`, which it rejects.
//!
//! The processors beyond the sampling kwargs (n-gram bans, bad words,
//! sequence bias, forced and suppressed tokens, min length rules, the
//! exponential length penalty, `remove_invalid_values`,
//! `renormalize_logits`) are modelled for all three versions, recorded from
//! each (`fixtures/processors/` for 5.23.0,
//! `fixtures/processors/transformers-{4.57.6,5.0.0}/`, by
//! `scripts/reference/hf_processors.py --transformers V`). Every setting
//! both versions accept gives bit-identical scores in all three (the
//! n-gram, sequence-bias and bad-words `__call__` bodies were rewritten
//! between 5.0.0 and 5.23.0, to the same numbers); two rules differ:
//!
//! - **A sequence bias on token id 0 raises in 4.57.6 and 5.0.0**:
//!   `SequenceBiasLogitsProcessor._validate_arguments` requires
//!   `token_id > 0` (`generation/logits_process.py` 4.57.6 line 1259, 5.0.0
//!   line 1363; message at 1267 / 1371, "... list of lists of positive
//!   integers and float, but is ..."); 5.23.0 requires `token_id >= 0`
//!   (line 1411, the same message at 1419)
//!   ([`TransformersVersion::sequence_bias_smallest_id`]).
//! - **A forced token that is also suppressed is accepted by 4.57.6 and
//!   5.0.0**: their `GenerationConfig.validate` (4.57.6
//!   `generation/configuration_utils.py` line 528, 5.0.0 line 577) has no
//!   check 2.7, which 5.23.0 has (lines 831–846: "Every token in
//!   `forced_eos_token_id` ([5]) is also in `suppress_tokens`. ..."); the
//!   forcing step then has every score `-inf` and greedy search takes token 0
//!   ([`TransformersVersion::rejects_forced_and_suppressed`]).
//!
//! (`top_h` is the third difference the recordings show, and a key one: 4.57.6
//! has no such attribute, [`TransformersVersion::lacks`].) [`differences`]
//! names both rules for the settings a user passes: `compare request` and
//! `compare report --kwargs` print them.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::HfError;

/// The key of generate's settings that picks [`TransformersVersion`] (this
/// crate's; not a transformers kwarg).
pub const VERSION_KEY: &str = "transformers";

/// The key that picks [`Passed`] (this crate's; not a transformers kwarg).
pub const PASSED_KEY: &str = "passed";

/// Which transformers release the rules follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum TransformersVersion {
    /// 4.57.6 (the last 4.x on PyPI): real values in `GenerationConfig()`,
    /// `null` in the model's file a value, the object route's class-default
    /// merge (see the module docs).
    #[serde(rename = "4.57.6")]
    V4_57,
    /// 5.0.0 (the first 5.x): 5.23.0's generation-config rules, but the
    /// repetition penalty gathers every input id (an id `>= V` raises, as in
    /// 4.57.6) and five of 5.23.0's keys do not exist yet.
    #[serde(rename = "5.0.0")]
    V5_0,
    /// 5.23.0: every rule of this crate.
    #[default]
    #[serde(rename = "5.23.0")]
    V5_23,
}

impl TransformersVersion {
    /// Every version modelled, oldest first.
    pub const ALL: [Self; 3] = [Self::V4_57, Self::V5_0, Self::V5_23];

    /// The version as transformers prints it (`"4.57.6"`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::V4_57 => "4.57.6",
            Self::V5_0 => "5.0.0",
            Self::V5_23 => "5.23.0",
        }
    }

    /// A 4.x release: `GenerationConfig()` holds real values, and 4.x's
    /// generation-config rules apply.
    pub fn is_4x(self) -> bool {
        self == Self::V4_57
    }

    /// `RepetitionPenaltyLogitsProcessor` gathers the scores at every input
    /// id, so an id `>= V` raises: 4.57.6 (`generation/logits_process.py`
    /// line 402) and 5.x before 5.18.0 (5.17.0's file has no clamp, 5.18.0's
    /// has `input_ids.clamp(max=vocab_size)`; recorded for 5.0.0).
    pub fn penalty_gathers_every_id(self) -> bool {
        self != Self::V5_23
    }

    /// The smallest token id `sequence_bias` accepts: 1 in 4.57.6 and 5.0.0
    /// (`token_id > 0`, `generation/logits_process.py` 4.57.6 line 1259,
    /// 5.0.0 line 1363), 0 in 5.23.0 (`token_id >= 0`, line 1411). Recorded:
    /// `fixtures/processors/*/edge_v8`'s `bias` and `bias_sample`.
    pub fn sequence_bias_smallest_id(self) -> i64 {
        match self {
            Self::V4_57 | Self::V5_0 => 1,
            Self::V5_23 => 0,
        }
    }

    /// Whether `GenerationConfig.validate` raises when every forced bos/eos
    /// token is also in `suppress_tokens` (check 2.7, 5.23.0
    /// `generation/configuration_utils.py` lines 831–846); 4.57.6's
    /// `validate` (line 528) and 5.0.0's (line 577) have no such check.
    /// Recorded: `fixtures/processors/*/edge_v8`'s `forced_suppressed`.
    pub fn rejects_forced_and_suppressed(self) -> bool {
        self == Self::V5_23
    }

    /// Whether this version's `GenerationConfig` has `key` among the keys
    /// 5.23.0's has: 4.57.6 lacks [`ONLY_5X`], 5.0.0 all of them but
    /// `top_h` (`vars(GenerationConfig())` of each).
    pub(crate) fn lacks(self, key: &str) -> bool {
        match self {
            Self::V4_57 => ONLY_5X.contains(&key),
            Self::V5_0 => key != "top_h" && ONLY_5X.contains(&key),
            Self::V5_23 => false,
        }
    }

    fn parse(v: &Value) -> Result<Self, HfError> {
        match v.as_str() {
            Some("4.57.6") => Ok(Self::V4_57),
            Some("5.0.0") => Ok(Self::V5_0),
            Some("5.23.0") => Ok(Self::V5_23),
            _ => Err(HfError::WrongType {
                key: VERSION_KEY.into(),
                expected: "\"4.57.6\", \"5.0.0\" or \"5.23.0\"",
                value: v.to_string(),
            }),
        }
    }
}

/// How generate's settings reach it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Passed {
    /// `generate(**settings)` (the usual call).
    #[default]
    Kwargs,
    /// `generate(generation_config=GenerationConfig(**settings))`.
    GenerationConfig,
}

impl Passed {
    fn parse(v: &Value) -> Result<Self, HfError> {
        match v.as_str() {
            Some("kwargs") => Ok(Self::Kwargs),
            Some("generation_config") => Ok(Self::GenerationConfig),
            _ => Err(HfError::WrongType {
                key: PASSED_KEY.into(),
                expected: "\"kwargs\" or \"generation_config\"",
                value: v.to_string(),
            }),
        }
    }
}

/// The two picks, taken out of `settings` (the rest are generate's).
pub(crate) fn split(
    settings: &Map<String, Value>,
) -> Result<(TransformersVersion, Passed, Map<String, Value>), HfError> {
    let mut rest = settings.clone();
    let version = match rest.remove(VERSION_KEY) {
        None | Some(Value::Null) => TransformersVersion::default(),
        Some(v) => TransformersVersion::parse(&v)?,
    };
    let passed = match rest.remove(PASSED_KEY) {
        None | Some(Value::Null) => Passed::default(),
        Some(v) => Passed::parse(&v)?,
    };
    Ok((version, passed, rest))
}

/// Keys transformers 5.23.0's `GenerationConfig` has and 4.57.6's has not
/// (`vars(GenerationConfig())` of each): unknown kwargs under 4.57.6.
pub(crate) const ONLY_5X: &[&str] = &[
    "top_h",
    "use_mtp",
    "max_cache_len",
    "continuous_batching_config",
    "speculation_type",
    "assistant_ensemble_weight",
];

/// 4.57.6's `GenerationConfig()` value of `key`, as JSON, for the keys a
/// model file's merge can change the step through (`None` elsewhere, as
/// `getattr(GenerationConfig(), key, None)` is for a custom key).
/// `generation/configuration_utils.py` lines 334–427.
fn class_default_4x(key: &str) -> Value {
    match key {
        "do_sample" | "remove_invalid_values" | "renormalize_logits" | "token_healing" => {
            Value::Bool(false)
        }
        "temperature" | "top_p" | "typical_p" | "repetition_penalty" => Value::from(1.0),
        "encoder_repetition_penalty" | "length_penalty" => Value::from(1.0),
        "epsilon_cutoff" | "eta_cutoff" => Value::from(0.0),
        "top_k" => Value::from(50),
        "max_length" => Value::from(20),
        "min_length" | "no_repeat_ngram_size" | "encoder_no_repeat_ngram_size" => Value::from(0),
        "num_beams" | "num_return_sequences" | "num_beam_groups" => Value::from(1),
        "diversity_penalty" => Value::from(0.0),
        "use_cache" => Value::Bool(true),
        _ => Value::Null,
    }
}

/// Python's `==` on the objects `json.loads` makes (`True == 1`, `1 == 1.0`).
fn py_eq(a: &Value, b: &Value) -> bool {
    let num = |v: &Value| parity_core::py::PyNum::numeric(v).map(parity_core::py::PyNum::float);
    match (num(a), num(b)) {
        (Some(x), Some(y)) => x == y,
        (None, None) => match (a, b) {
            (Value::Array(x), Value::Array(y)) => {
                x.len() == y.len() && x.iter().zip(y).all(|(x, y)| py_eq(x, y))
            }
            _ => a == b,
        },
        _ => false,
    }
}

/// `packaging.version.parse(v).base_version >= "4.50.0"` for a file's
/// `transformers_version` (absent: the running 4.57.6's own, line 433).
fn saved_by_4_50_or_later(file: &Map<String, Value>) -> Result<bool, HfError> {
    let Some(v) = file.get("transformers_version").filter(|v| !v.is_null()) else {
        return Ok(true);
    };
    let text = v.as_str().unwrap_or_default();
    let parts: Vec<u64> = text
        .split('.')
        .take(3)
        .map_while(|p| {
            let digits: String = p.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        })
        .collect();
    if parts.is_empty() {
        return Err(HfError::Invalid {
            key: "transformers_version".into(),
            message: format!("Invalid version: {v} (the generation config's transformers_version)"),
        });
    }
    let at = |i: usize| parts.get(i).copied().unwrap_or(0);
    Ok((at(0), at(1), at(2)) >= (4, 50, 0))
}

/// transformers 4.57.6's `_prepare_generation_config` for
/// `generate(generation_config=GenerationConfig(**settings))`
/// (`generation/utils.py` lines 1756–1785): the object's attributes (the
/// settings over the class defaults) with every one still at its class
/// default replaced by the model file's value where that differs from the
/// class default, then `do_sample=False` when the temperature is 0. A file
/// saved before 4.50.0 gives nothing but its token ids (lines 1791–1799),
/// and no temperature rule. Without a file the model's own config (the
/// class defaults, saved by 4.57.6) changes nothing but the temperature rule.
/// Returns the settings generate ends up with, all of them explicit (the
/// model file is not read again).
pub(crate) fn merge_object_4x(
    settings: &Map<String, Value>,
    file: Option<&Map<String, Value>>,
) -> Result<Map<String, Value>, HfError> {
    let mut out = settings.clone();
    // No file: the model's own config, at the class defaults and saved by
    // the running version, so only the temperature rule below applies.
    let empty = Map::new();
    let file = file.unwrap_or(&empty);
    if !saved_by_4_50_or_later(file)? {
        for key in [
            "bos_token_id",
            "eos_token_id",
            "pad_token_id",
            "decoder_start_token_id",
        ] {
            if out.get(key).is_none_or(Value::is_null)
                && let Some(v) = file.get(key)
            {
                out.insert(key.into(), v.clone());
            }
        }
        return Ok(out);
    }
    for (key, model) in file {
        if key.starts_with('_') || key == "transformers_version" {
            continue;
        }
        let default = class_default_4x(key);
        let held = out.get(key).cloned().unwrap_or_else(|| default.clone());
        if py_eq(&held, &default) && !py_eq(model, &default) {
            out.insert(key.clone(), model.clone());
        }
    }
    if out
        .get("temperature")
        .is_some_and(|t| py_eq(t, &Value::from(0.0)))
    {
        out.insert("do_sample".into(), Value::Bool(false));
    }
    Ok(out)
}

/// The keys of a model's generation_config.json that `GenerationConfig.to_diff_dict()`
/// drops under `version`, with their values: 4.57.6 drops every value equal
/// to `GenerationConfig()`'s (`generation/configuration_utils.py` lines
/// 1004–1025), so a file's `top_k: 50` or `temperature: 1.0` is gone when a
/// server re-reads the model's defaults through it (huggingface/datatrove PR
/// #481); 5.23.0's `GenerationConfig()` holds `None`, so only the file's
/// `null`s go. `transformers_version` is always kept (as the running
/// version's: `to_dict()` writes its own, line 1045).
pub fn dropped_by_to_diff_dict(
    version: TransformersVersion,
    file: &Map<String, Value>,
) -> Vec<(String, Value)> {
    file.iter()
        .filter(|(k, v)| {
            *k != "transformers_version"
                && match version {
                    TransformersVersion::V4_57 => py_eq(v, &class_default_4x(k)),
                    TransformersVersion::V5_0 | TransformersVersion::V5_23 => v.is_null(),
                }
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Where transformers 4.57.6 and 5.23.0 sample differently for the same
/// settings and model file, in words: for each way of passing the settings
/// ([`Passed`]), the sampling values (or the error) of each version when
/// they differ, and what 4.57.6's `to_diff_dict()` drops from the file.
/// Empty when the two agree. `settings` are generate's (a `transformers`
/// or `passed` key in them is replaced).
pub fn differences(
    settings: &Map<String, Value>,
    config: Option<&crate::GenerationConfig>,
) -> Vec<String> {
    let mut out = Vec::new();
    for (passed, call) in [
        (Passed::Kwargs, "generate(**kwargs)"),
        (
            Passed::GenerationConfig,
            "generate(generation_config=GenerationConfig(**kwargs))",
        ),
    ] {
        let at = |v: TransformersVersion| {
            let mut s = settings.clone();
            s.insert(VERSION_KEY.into(), Value::from(v.as_str()));
            s.insert(
                PASSED_KEY.into(),
                serde_json::to_value(passed).unwrap_or(Value::Null),
            );
            crate::resolve(&s, config)
        };
        let describe = |r: &Result<crate::GenerationParams, HfError>| match r {
            Ok(p) => describe_values(p),
            Err(e) => format!("raises ({e})"),
        };
        let (old, new) = (
            at(TransformersVersion::V4_57),
            at(TransformersVersion::V5_23),
        );
        let same = match (&old, &new) {
            (Ok(a), Ok(b)) => a.sampling_map() == b.sampling_map(),
            (Err(_), Err(_)) => true,
            _ => false,
        };
        if !same {
            out.push(format!(
                "transformers 4.57.6 and 5.23.0 differ for {call}: 4.57.6 samples with {}; \
                 5.23.0 with {}",
                describe(&old),
                describe(&new)
            ));
            continue;
        }
        // The same values, but a processor rule of one version raises where
        // the other builds the chain (`sequence_bias_smallest_id`,
        // `rejects_forced_and_suppressed`).
        if let (Ok(a), Ok(b)) = (&old, &new)
            && let Some(d) = chain_difference(a, b)
        {
            out.push(format!(
                "transformers 4.57.6 and 5.23.0 differ for {call}: {d}"
            ));
        }
    }
    if let Some(config) = config {
        let dropped = dropped_by_to_diff_dict(TransformersVersion::V4_57, config.values());
        if !dropped.is_empty() {
            let list: Vec<String> = dropped.iter().map(|(k, v)| format!("{k}={v}")).collect();
            out.push(format!(
                "transformers 4.57.6's GenerationConfig.to_diff_dict() drops {} from the model's \
                 generation config (equal to GenerationConfig()'s class defaults): a server that \
                 re-reads the model's defaults through it loses them; 5.23.0 keeps them",
                list.join(", ")
            ));
        }
    }
    out
}

/// Where `old` (4.57.6) and `new` (5.23.0) differ in whether the processor
/// chain can be built at all: one version raises, the other runs. Checked at a
/// prompt of one token (the version rules do not depend on its length).
fn chain_difference(
    old: &crate::GenerationParams,
    new: &crate::GenerationParams,
) -> Option<String> {
    match (old.processors_at(1), new.processors_at(1)) {
        (Err(e), Ok(_)) => Some(format!("4.57.6 raises ({e}); 5.23.0 accepts it")),
        (Ok(_), Err(e)) => Some(format!("4.57.6 accepts it; 5.23.0 raises ({e})")),
        _ => None,
    }
}

/// `do_sample` and every value that adds a processor, as `key value`.
fn describe_values(p: &crate::GenerationParams) -> String {
    let values = p.sampling_values();
    let mut parts: Vec<String> = values.iter().map(|(k, v)| format!("{k} {v}")).collect();
    if p.do_sample && p.top_k.is_none() {
        parts.push("top_k off".into());
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().cloned().expect("object")
    }

    #[test]
    fn the_4x_object_merge_replaces_class_defaults_only() {
        let file = map(json!({"do_sample": true, "temperature": 0.6, "top_k": 20}));
        let got = merge_object_4x(
            &map(json!({"temperature": 1.0, "top_k": null})),
            Some(&file),
        )
        .expect("merge");
        assert_eq!(
            Value::Object(got),
            json!({"do_sample": true, "temperature": 0.6, "top_k": null})
        );
        let old = map(json!({"top_k": 20, "transformers_version": "4.45.0", "eos_token_id": 2}));
        let got = merge_object_4x(&Map::new(), Some(&old)).expect("merge");
        assert_eq!(Value::Object(got), json!({"eos_token_id": 2}));
        let zero = merge_object_4x(
            &map(json!({"do_sample": true, "temperature": 0})),
            Some(&file),
        );
        assert_eq!(zero.expect("merge")["do_sample"], json!(false));
    }

    #[test]
    fn the_versions_differences_are_named() {
        let config = crate::GenerationConfig::from_json_str(
            r#"{"do_sample": true, "top_k": 50, "top_p": 0.9, "temperature": 0.6}"#,
        )
        .expect("config");
        let got = differences(&map(json!({"top_k": null})), Some(&config));
        // kwargs: both read top_k=None as off. The object: 4.x keeps None
        // (off), 5.x fills the file's 50. And 4.x's to_diff_dict drops top_k 50.
        assert_eq!(got.len(), 2, "{got:#?}");
        assert!(got[0].contains("GenerationConfig(**kwargs)"), "{}", got[0]);
        assert!(got[0].contains("top_k off; 5.23.0 with"), "{}", got[0]);
        assert!(got[1].contains("drops top_k=50"), "{}", got[1]);
        assert!(differences(&map(json!({"do_sample": true})), None).is_empty());
    }

    #[test]
    fn the_processor_rules_of_each_version_are_named() {
        // sequence_bias on id 0: 4.57.6 raises (`token_id > 0`), 5.23.0 accepts.
        let got = differences(&map(json!({"sequence_bias": [[[0], -1.0]]})), None);
        assert_eq!(got.len(), 2, "{got:#?}");
        assert!(got[0].contains("4.57.6 raises ("), "{}", got[0]);
        assert!(got[0].contains("5.23.0 accepts it"), "{}", got[0]);
        // A forced token also suppressed: 5.23.0's validate raises.
        let got = differences(
            &map(json!({"forced_eos_token_id": 3, "suppress_tokens": [3]})),
            None,
        );
        assert!(!got.is_empty(), "{got:#?}");
        assert!(
            got[0].contains("4.57.6 accepts it; 5.23.0 raises ("),
            "{}",
            got[0]
        );
        assert!(got[0].contains("suppress_tokens"), "{}", got[0]);
    }

    #[test]
    fn the_picks_are_taken_out_and_checked() {
        let (v, p, rest) = split(&map(
            json!({"transformers": "4.57.6", "passed": "generation_config", "top_k": 5}),
        ))
        .expect("valid");
        assert_eq!(
            (v, p),
            (TransformersVersion::V4_57, Passed::GenerationConfig)
        );
        assert_eq!(Value::Object(rest), json!({"top_k": 5}));
        let err = split(&map(json!({"transformers": "4.46"}))).expect_err("unknown version");
        assert!(err.to_string().contains("\"4.46\""), "{err}");
        assert_eq!(
            split(&Map::new()).expect("defaults").0,
            TransformersVersion::V5_23
        );
    }
}
