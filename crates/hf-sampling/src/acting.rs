//! Which of transformers' processors act for a set of generate kwargs: the
//! one answer the engine crates read when they decide what they cannot
//! express (they used to re-derive it from the raw kwargs, and disagreed:
//! `typical_p != 1` in one crate, `< 1` in another; issue #24).
//!
//! # The rule
//!
//! transformers **5.23.0**, `generation/utils.py`,
//! `GenerationMixin._get_logits_processor` (decoder-only model, the prompt as
//! `encoder_input_ids`, no custom processors), adds in this order:
//!
//! | processor | added when (line) |
//! |---|---|
//! | `UnbatchedClassifierFreeGuidanceLogitsProcessor` | `guidance_scale is not None and != 1` (1431) |
//! | `SequenceBiasLogitsProcessor` | `sequence_bias is not None` (1441) |
//! | `EncoderRepetitionPenaltyLogitsProcessor` | `encoder_repetition_penalty is not None and != 1.0` (1449) |
//! | `RepetitionPenaltyLogitsProcessor` | `repetition_penalty is not None and != 1.0` (1466) |
//! | `NoRepeatNGramLogitsProcessor` | `no_repeat_ngram_size is not None and > 0` (1482) |
//! | `EncoderNoRepeatNGramLogitsProcessor` | `encoder_no_repeat_ngram_size is not None and > 0` (1491) |
//! | `NoBadWordsLogitsProcessor` | `bad_words_ids is not None` (1508) |
//! | `MinLengthLogitsProcessor` | an eos id and `min_length > 0` (1515) |
//! | `MinNewTokensLengthLogitsProcessor` | an eos id and `min_new_tokens > 0` (1527) |
//! | `ForcedBOSTokenLogitsProcessor` | `forced_bos_token_id is not None` (1547) |
//! | `ForcedEOSTokenLogitsProcessor` | `forced_eos_token_id is not None` (1553) |
//! | `InfNanRemoveLogitsProcessor` | `remove_invalid_values is True` (1561) |
//! | `ExponentialDecayLengthPenalty` | `exponential_decay_length_penalty is not None` (1563) |
//! | `SuppressTokensLogitsProcessor` | `suppress_tokens is not None` (1571) |
//! | `SuppressTokensAtBeginLogitsProcessor` | `begin_suppress_tokens is not None` (1578) |
//!
//! then, only `if generation_config.do_sample:` (1597, Python truthiness), the
//! warpers:
//!
//! | warper | added when (line) |
//! |---|---|
//! | `TemperatureLogitsWarper` | `temperature is not None and != 1.0` (1612) |
//! | `TopHLogitsWarper` | `top_h is not None` (1614) |
//! | `TopKLogitsWarper` | `top_k is not None and != 0` (1616) |
//! | `TopPLogitsWarper` | `top_p is not None and < 1.0` (1620) |
//! | `MinPLogitsWarper` | `min_p is not None` (1624) |
//! | `TypicalLogitsWarper` | `typical_p is not None and < 1.0` (1629) |
//! | `EpsilonLogitsWarper` | `epsilon_cutoff is not None and 0.0 < epsilon_cutoff < 1.0` (1633) |
//! | `EtaLogitsWarper` | `eta_cutoff is not None and 0.0 < eta_cutoff < 1.0` (1639) |
//!
//! and last the watermark processor (`watermarking_config is not None`,
//! 1647) and `LogitNormalization` (`renormalize_logits is True`, 1655).
//!
//! So `typical_p` above 1 adds nothing, and nothing rejects it
//! (`GenerationConfig.validate` only warns about `typical_p != 1.0` when not
//! sampling; `TypicalLogitsWarper.__init__`, `generation/logits_process.py`
//! line 864, rejects masses outside (0, 1), but it is never built for them).
//!
//! Two kwargs replace sampling itself rather than add a processor
//! (`generation/configuration_utils.py`, `GenerationConfig.get_generation_mode`,
//! lines 551–570): `num_beams` other than `None` and 1 is beam search
//! (`beam_sample` when `do_sample is True`), and `penalty_alpha > 0` with
//! `top_k > 1` is contrastive search when `do_sample is not True` and there
//! is no beam search. [`Acting`] lists those too, after the processors.
//!
//! Values are read as Python reads the kwargs' JSON (`true` is the int 1,
//! `null` is `None`, an absent kwarg has transformers' default from
//! `GenerationConfig._get_default_generation_params`). A value Python cannot
//! order against a float (a string for `typical_p`) makes `generate()` raise
//! a `TypeError` before any processor runs: such a value is left out here,
//! and [`crate::resolve`] reports it. The length rules read as for an empty
//! prompt (`min_length = min_new_tokens` when that is set): a rule that acts
//! there is one that can mask a token at some step. The eos id is the
//! kwargs' `eos_token_id` (a model's `generation_config.json` may set one
//! too: [`crate::GenerationParams::acting`] sees it).

use serde_json::{Map, Value};

use crate::GenerationParams;
use crate::params::{contrastive_mode, number, truthy};
use crate::version::TransformersVersion;

/// `x != 1.0` (temperature, repetition penalty, lines 1466 and 1612).
pub(crate) fn not_one(x: f64) -> bool {
    x != 1.0
}

/// `x < 1.0` (top-p and typical-p, lines 1620 and 1629).
pub(crate) fn below_one(x: f64) -> bool {
    x < 1.0
}

/// `0.0 < x < 1.0` (epsilon and eta cutoffs, lines 1633 and 1639).
pub(crate) fn open_unit(x: f64) -> bool {
    0.0 < x && x < 1.0
}

/// One processor (or decoding method) that `generate()` runs for the kwargs.
#[derive(Debug, Clone, PartialEq)]
pub struct Act {
    /// transformers' class name (`TypicalLogitsWarper`), or for a decoding
    /// method that replaces sampling its `GenerationMode` value
    /// (`beam_search`, `beam_sample`, `contrastive_search`).
    pub name: &'static str,
    /// The kwarg that switches it on (`typical_p`).
    pub kwarg: &'static str,
    /// That kwarg's value as the kwargs give it.
    pub value: Value,
}

/// The processors `generate(**kwargs)` runs on one step's logits, in
/// `_get_logits_processor`'s order, each with the value that switched it on,
/// then the decoding methods that replace sampling: see the module docs for
/// the rule.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Acting {
    acts: Vec<Act>,
    sampling: bool,
}

impl Acting {
    /// What acts for these generate kwargs (raw or resolved: an absent
    /// kwarg has transformers' default, which never acts except `top_k` 50
    /// while sampling).
    pub fn of(kwargs: &Map<String, Value>) -> Self {
        Self::from_getter(|key| kwargs.get(key).cloned())
    }

    /// Built from a reading of each kwarg: `None` when absent, `Some(null)`
    /// when `None` in Python.
    fn from_getter(get: impl Fn(&str) -> Option<Value>) -> Self {
        // An absent kwarg: transformers' default (`_get_default_generation_params`).
        let value = |key: &str, default: Value| get(key).unwrap_or(default);
        let float = |v: &Value| number(v).map(|(x, _)| x);
        // Python's `v is not None and v != x`: a non-number differs from x.
        let ne = |v: &Value, x: f64| !v.is_null() && float(v).is_none_or(|n| n != x);
        let positive = |v: &Value| float(v).is_some_and(|n| n > 0.0);
        let sampling = get("do_sample").is_some_and(|v| truthy(&v));
        let mut acts = Vec::new();
        let mut push = |name: &'static str, kwarg: &'static str, v: Value, on: bool| {
            if on {
                acts.push(Act {
                    name,
                    kwarg,
                    value: v,
                });
            }
        };

        let v = value("guidance_scale", Value::Null);
        let on = ne(&v, 1.0);
        push(
            "UnbatchedClassifierFreeGuidanceLogitsProcessor",
            "guidance_scale",
            v,
            on,
        );
        let v = value("sequence_bias", Value::Null);
        let on = !v.is_null();
        push("SequenceBiasLogitsProcessor", "sequence_bias", v, on);
        let v = value("encoder_repetition_penalty", Value::from(1.0));
        let on = ne(&v, 1.0);
        push(
            "EncoderRepetitionPenaltyLogitsProcessor",
            "encoder_repetition_penalty",
            v,
            on,
        );
        let v = value("repetition_penalty", Value::from(1.0));
        let on = ne(&v, 1.0);
        push(
            "RepetitionPenaltyLogitsProcessor",
            "repetition_penalty",
            v,
            on,
        );
        let v = value("no_repeat_ngram_size", Value::from(0));
        let on = positive(&v);
        push(
            "NoRepeatNGramLogitsProcessor",
            "no_repeat_ngram_size",
            v,
            on,
        );
        let v = value("encoder_no_repeat_ngram_size", Value::from(0));
        let on = positive(&v);
        push(
            "EncoderNoRepeatNGramLogitsProcessor",
            "encoder_no_repeat_ngram_size",
            v,
            on,
        );
        let v = value("bad_words_ids", Value::Null);
        let on = !v.is_null();
        push("NoBadWordsLogitsProcessor", "bad_words_ids", v, on);
        let eos = get("eos_token_id").is_some_and(|v| !v.is_null());
        // `_prepare_generated_length`: min_length = min_new_tokens + prompt length.
        let min_new = value("min_new_tokens", Value::Null);
        let (key, v) = if min_new.is_null() {
            ("min_length", value("min_length", Value::from(0)))
        } else {
            ("min_new_tokens", min_new.clone())
        };
        let on = eos && positive(&v);
        push("MinLengthLogitsProcessor", key, v, on);
        let on = eos && positive(&min_new);
        push(
            "MinNewTokensLengthLogitsProcessor",
            "min_new_tokens",
            min_new,
            on,
        );
        for (name, kwarg) in [
            ("ForcedBOSTokenLogitsProcessor", "forced_bos_token_id"),
            ("ForcedEOSTokenLogitsProcessor", "forced_eos_token_id"),
        ] {
            let v = value(kwarg, Value::Null);
            let on = !v.is_null();
            push(name, kwarg, v, on);
        }
        let v = value("remove_invalid_values", Value::Bool(false));
        let on = v == Value::Bool(true);
        push(
            "InfNanRemoveLogitsProcessor",
            "remove_invalid_values",
            v,
            on,
        );
        for (name, kwarg) in [
            (
                "ExponentialDecayLengthPenalty",
                "exponential_decay_length_penalty",
            ),
            ("SuppressTokensLogitsProcessor", "suppress_tokens"),
            (
                "SuppressTokensAtBeginLogitsProcessor",
                "begin_suppress_tokens",
            ),
        ] {
            let v = value(kwarg, Value::Null);
            let on = !v.is_null();
            push(name, kwarg, v, on);
        }

        if sampling {
            let v = value("temperature", Value::from(1.0));
            let on = ne(&v, 1.0);
            push("TemperatureLogitsWarper", "temperature", v, on);
            let v = value("top_h", Value::Null);
            let on = !v.is_null();
            push("TopHLogitsWarper", "top_h", v, on);
            let v = value("top_k", Value::from(50));
            let on = ne(&v, 0.0);
            push("TopKLogitsWarper", "top_k", v, on);
            let v = value("top_p", Value::from(1.0));
            let on = float(&v).is_some_and(below_one);
            push("TopPLogitsWarper", "top_p", v, on);
            let v = value("min_p", Value::Null);
            let on = !v.is_null();
            push("MinPLogitsWarper", "min_p", v, on);
            let v = value("typical_p", Value::from(1.0));
            let on = float(&v).is_some_and(below_one);
            push("TypicalLogitsWarper", "typical_p", v, on);
            for (name, kwarg) in [
                ("EpsilonLogitsWarper", "epsilon_cutoff"),
                ("EtaLogitsWarper", "eta_cutoff"),
            ] {
                let v = value(kwarg, Value::from(0.0));
                let on = float(&v).is_some_and(open_unit);
                push(name, kwarg, v, on);
            }
        }
        let v = value("watermarking_config", Value::Null);
        let on = !v.is_null();
        push("WatermarkLogitsProcessor", "watermarking_config", v, on);
        let v = value("renormalize_logits", Value::Bool(false));
        let on = v == Value::Bool(true);
        push("LogitNormalization", "renormalize_logits", v, on);

        // get_generation_mode: `do_sample is True` (identity, not truthiness).
        let sample_is_true = get("do_sample") == Some(Value::Bool(true));
        let beams = value("num_beams", Value::from(1));
        let beam = ne(&beams, 1.0);
        let mode = if sample_is_true {
            "beam_sample"
        } else {
            "beam_search"
        };
        push(mode, "num_beams", beams, beam);
        let alpha = value("penalty_alpha", Value::Null);
        let (do_sample, num_beams, top_k) = (get("do_sample"), get("num_beams"), get("top_k"));
        let on = contrastive_mode(
            TransformersVersion::default(),
            do_sample.as_ref(),
            num_beams.as_ref(),
            top_k.as_ref(),
        ) && positive(&alpha);
        push("contrastive_search", "penalty_alpha", alpha, on);

        Self { acts, sampling }
    }

    /// Every processor that acts, in order.
    pub fn iter(&self) -> impl Iterator<Item = &Act> {
        self.acts.iter()
    }

    /// The processor the kwarg `kwarg` switches on, if it acts.
    pub fn get(&self, kwarg: &str) -> Option<&Act> {
        self.acts.iter().find(|a| a.kwarg == kwarg)
    }

    /// Whether the kwarg `kwarg` switches on a processor.
    pub fn acts(&self, kwarg: &str) -> bool {
        self.get(kwarg).is_some()
    }

    /// Whether the warpers run (`do_sample` is truthy).
    pub fn sampling(&self) -> bool {
        self.sampling
    }

    /// `"{kwarg} = {value}: {why}"` for each of `kwargs` that acts, in the
    /// order given: how the engine crates list what they cannot express.
    pub fn blocked(&self, kwargs: &[&str], why: &str) -> Vec<String> {
        kwargs
            .iter()
            .filter_map(|k| self.get(k))
            .map(|a| format!("{} = {}: {why}", a.kwarg, a.value))
            .collect()
    }
}

/// What transformers runs that no server sampler chain modelled here has
/// (llama.cpp's, Ollama's Go sampler, mlx-lm's and Ollama's MLX runner): the
/// constraint processors, the epsilon and eta cutoffs, and the other
/// decoding modes. The engines pass it to [`Acting::blocked`], each adding
/// what else it lacks.
pub const NOT_IN_SAMPLER_CHAINS: &[&str] = &[
    "bad_words_ids",
    "encoder_repetition_penalty",
    "epsilon_cutoff",
    "eta_cutoff",
    "no_repeat_ngram_size",
    "num_beams",
    "penalty_alpha",
    "sequence_bias",
];

impl GenerationParams {
    /// [`Acting`] for these resolved parameters (and the generation config
    /// values they hold, such as its `eos_token_id`). The kwargs [`crate::resolve`]
    /// refuses (beam search, guidance, watermarking, the encoder processors)
    /// never show.
    pub fn acting(&self) -> Acting {
        let sampling = self.sampling_map();
        Acting::from_getter(|key| self.resolved_value(&sampling, key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn names(v: Value) -> Vec<&'static str> {
        Acting::of(v.as_object().expect("object"))
            .iter()
            .map(|a| a.name)
            .collect()
    }

    /// The order and the conditions of `_get_logits_processor` (transformers
    /// 5.23.0 `generation/utils.py` lines 1410–1657), checked against the
    /// chain the crate runs.
    #[test]
    fn agrees_with_the_processor_chain() {
        let kwargs = json!({
            "do_sample": true, "temperature": 0.7, "top_h": 0.5, "top_k": 5, "top_p": 0.9,
            "min_p": 0.1, "typical_p": 0.9, "epsilon_cutoff": 0.01, "eta_cutoff": 0.01,
            "repetition_penalty": 1.2, "sequence_bias": [[[1], 0.5]], "no_repeat_ngram_size": 2,
            "bad_words_ids": [[3]], "min_new_tokens": 2, "eos_token_id": 5,
            "forced_bos_token_id": 1, "forced_eos_token_id": 5, "remove_invalid_values": true,
            "exponential_decay_length_penalty": [2, 1.1], "suppress_tokens": [6],
            "begin_suppress_tokens": [7], "renormalize_logits": true
        });
        let map = kwargs.as_object().expect("object");
        let p = crate::resolve(map, None).expect("valid");
        assert_eq!(names(kwargs.clone()), p.processor_names().expect("valid"));
        let typed: Vec<_> = p.acting().iter().map(|a| a.name).collect();
        assert_eq!(typed, names(kwargs));
        for off in [
            json!({}),
            json!({"do_sample": true, "top_k": 0, "typical_p": 1.5, "top_p": 1.0}),
            json!({"do_sample": false, "typical_p": 0.5, "temperature": 0.3}),
        ] {
            let p = crate::resolve(off.as_object().expect("object"), None).expect("valid");
            assert_eq!(names(off), p.processor_names().expect("valid"));
        }
    }

    /// `typical_p is not None and typical_p < 1.0` (line 1629): above 1 no
    /// warper, and none at all unless sampling (line 1597).
    #[test]
    fn typical_acts_below_one_and_only_when_sampling() {
        assert_eq!(
            names(json!({"do_sample": true, "top_k": null, "typical_p": 0.9})),
            ["TypicalLogitsWarper"]
        );
        assert!(names(json!({"do_sample": true, "top_k": null, "typical_p": 1.5})).is_empty());
        assert!(names(json!({"typical_p": 0.9})).is_empty());
        // `if generation_config.do_sample:` is truthiness: 1 samples.
        assert_eq!(
            names(json!({"do_sample": 1, "top_k": 0, "typical_p": 0.9})),
            ["TypicalLogitsWarper"]
        );
        // A string cannot be ordered against 1.0 (TypeError): left out.
        assert!(names(json!({"do_sample": true, "top_k": 0, "typical_p": "0.9"})).is_empty());
    }

    /// `get_generation_mode` (configuration_utils.py lines 551–570).
    #[test]
    fn beam_and_contrastive_search() {
        let a = Acting::of(json!({"num_beams": 2}).as_object().expect("object"));
        assert_eq!(a.get("num_beams").map(|a| a.name), Some("beam_search"));
        let a = Acting::of(
            json!({"num_beams": 1, "penalty_alpha": 0.6})
                .as_object()
                .expect("o"),
        );
        assert_eq!(
            a.get("penalty_alpha").map(|a| a.name),
            Some("contrastive_search")
        );
        // Sampling, or top_k <= 1: no contrastive search.
        let a = Acting::of(
            json!({"do_sample": true, "penalty_alpha": 0.6})
                .as_object()
                .expect("o"),
        );
        assert!(!a.acts("penalty_alpha"));
        let a = Acting::of(
            json!({"top_k": 1, "penalty_alpha": 0.6})
                .as_object()
                .expect("o"),
        );
        assert!(!a.acts("penalty_alpha"));
        assert_eq!(
            Acting::of(
                json!({"num_beams": 3, "eta_cutoff": 0.5})
                    .as_object()
                    .expect("o")
            )
            .blocked(&["eta_cutoff", "num_beams"], "none here"),
            ["num_beams = 3: none here"]
        );
    }
}
