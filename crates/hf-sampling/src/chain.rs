//! Which processors `_get_logits_processor` builds, in which order, and the
//! errors their constructors raise (transformers 5.23.0,
//! `generation/utils.py`, decoder-only model, no beam search, no custom
//! processors):
//!
//! 1. `SequenceBiasLogitsProcessor` if `sequence_bias` is not None;
//! 2. `RepetitionPenaltyLogitsProcessor` if `repetition_penalty != 1`;
//! 3. `NoRepeatNGramLogitsProcessor` if `no_repeat_ngram_size > 0`;
//! 4. `NoBadWordsLogitsProcessor` if `bad_words_ids` is not None;
//! 5. `MinLengthLogitsProcessor` if an eos id is set and `min_length > 0`
//!    (`min_length = min_new_tokens + prompt length` when `min_new_tokens`
//!    is set);
//! 6. `MinNewTokensLengthLogitsProcessor` if an eos id is set and
//!    `min_new_tokens > 0`;
//! 7. `ForcedBOSTokenLogitsProcessor` / 8. `ForcedEOSTokenLogitsProcessor`
//!    if their token is not None;
//! 9. `InfNanRemoveLogitsProcessor` if `remove_invalid_values is True`;
//! 10. `ExponentialDecayLengthPenalty` if its pair is not None;
//! 11. `SuppressTokensLogitsProcessor` / 12. `SuppressTokensAtBeginLogitsProcessor`
//!     if their list is not None;
//!
//! then, only when sampling, the warpers: temperature, `TopHLogitsWarper` (if
//! `top_h` is not None), top-k, top-p, min-p, typical, epsilon, eta; and last
//! `LogitNormalization` if `renormalize_logits is True`.
//!
//! Before any of them, `GenerationConfig.validate` raises when every forced
//! bos/eos token is also suppressed.

use crate::acting::{below_one, not_one, open_unit};
use crate::constraints::{bad_words_arg, sequence_bias_arg};
use crate::error::HfError;
use crate::{GenerationParams, Processor};
use parity_core::text::python_float_repr as float_repr;

fn invalid(key: &str, message: String) -> HfError {
    HfError::Invalid {
        key: key.into(),
        message,
    }
}

/// Python's `x > 0` (false for NaN).
fn positive(x: f64) -> bool {
    x > 0.0
}

/// torch's repr of a 1-D long tensor, as transformers' messages print it.
fn tensor_repr(ids: &[i64]) -> String {
    let items: Vec<String> = ids.iter().map(i64::to_string).collect();
    format!("tensor([{}])", items.join(", "))
}

/// The eos check of `ForcedEOSTokenLogitsProcessor` and
/// `ExponentialDecayLengthPenalty`.
fn non_negative(key: &str, ids: &[i64]) -> Result<(), HfError> {
    if ids.iter().any(|&i| i < 0) {
        return Err(invalid(
            key,
            format!(
                "`eos_token_id` has to be a list of positive integers, but is {}",
                tensor_repr(ids)
            ),
        ));
    }
    Ok(())
}

pub(crate) fn build(
    params: &GenerationParams,
    prompt_len: usize,
) -> Result<Vec<Processor>, HfError> {
    let c = &params.constraints;
    let n = prompt_len as i64;
    let eos = c.eos_token_id.as_deref();
    let mut list = Vec::new();

    // generate's checks before any processor exists (transformers 5.23.0,
    // generation/utils.py). `_prepare_special_tokens`: with no pad token,
    // `pad_token_tensor = eos_token_tensor[0]`, an IndexError on `[]`.
    if eos.is_some_and(<[i64]>::is_empty) && !c.pad_token_id_set {
        return Err(invalid(
            "eos_token_id",
            "index 0 is out of bounds for dimension 0 with size 0 (`eos_token_id` is [] and \
             `pad_token_id` is unset: generate takes the pad token from `eos_token_id[0]`)"
                .into(),
        ));
    }
    // `_validate_generated_length`, after `_prepare_generated_length` set
    // `max_length` (`max_new_tokens` + prompt, or 20 + prompt by default).
    let max_length = c.max_length_at(prompt_len);
    if prompt_len as f64 >= max_length {
        return Err(invalid(
            "max_length",
            format!(
                "Input length of input_ids is {prompt_len}, but `max_length` is set to {}. This \
                 can lead to unexpected behavior. You should consider increasing `max_length` or, \
                 better yet, setting `max_new_tokens`.",
                c.max_length_repr(prompt_len)
            ),
        ));
    }

    // GenerationConfig.validate, 2.7 (5.23.0 only: 4.57.6 and 5.0.0 accept
    // the pair and force a row of `-inf`; see `crate::version`).
    if let Some(suppressed) = &c.suppress_tokens
        && params.transformers.rejects_forced_and_suppressed()
    {
        let forced = [
            (
                "forced_bos_token_id",
                c.forced_bos_token_id.map(|i| vec![i]),
            ),
            ("forced_eos_token_id", c.forced_eos_token_id.clone()),
        ];
        for (key, ids) in forced {
            let Some(mut ids) = ids else { continue };
            ids.sort_unstable();
            ids.dedup();
            if !ids.is_empty() && ids.iter().all(|i| suppressed.contains(i)) {
                let list: Vec<String> = ids.iter().map(i64::to_string).collect();
                return Err(invalid(
                    key,
                    format!(
                        "Every token in `{key}` ([{}]) is also in `suppress_tokens`. Forcing a token \
                         while suppressing it sets all logits to `-inf` at the forcing step, which \
                         produces `nan` probabilities and crashes generation. Remove the overlapping \
                         token(s) from either `{key}` or `suppress_tokens` (if you meant to prevent an \
                         early EOS token, use `min_new_tokens` instead).",
                        list.join(", ")
                    ),
                ));
            }
        }
    }

    if let Some(v) = &c.sequence_bias {
        list.push(Processor::SequenceBias {
            biases: sequence_bias_arg(v, params.transformers.sequence_bias_smallest_id())?,
        });
    }
    let p = params.repetition_penalty;
    if not_one(p) {
        if !positive(p) {
            return Err(HfError::RepetitionPenalty {
                value: float_repr(p),
            });
        }
        list.push(Processor::RepetitionPenalty { penalty: p });
    }
    if let Some(size) = c.no_repeat_ngram_size
        && positive(size.float())
    {
        let Some(size) = size.int().and_then(|s| usize::try_from(s).ok()) else {
            return Err(invalid(
                "no_repeat_ngram_size",
                format!(
                    "`ngram_size` has to be a strictly positive integer, but is {}",
                    size.str()
                ),
            ));
        };
        list.push(Processor::NoRepeatNGram { size });
    }
    if let Some(v) = &c.bad_words_ids {
        let mut words: Vec<Vec<i64>> = Vec::new();
        for w in bad_words_arg(v, eos)? {
            if !words.contains(&w) {
                words.push(w);
            }
        }
        list.push(Processor::NoBadWords { words });
    }
    // min_length = min_new_tokens + prompt length when min_new_tokens is set.
    let (min_length, min_length_str) = match (c.min_new_tokens, c.min_length) {
        (Some(m), _) => match m.int64() {
            Some(i) => (Some(i.saturating_add(n) as f64), None),
            None => {
                let x = m.float() + prompt_len as f64;
                (Some(x), Some(float_repr(x)))
            }
        },
        (None, Some(m)) => (Some(m.float()), m.int64().is_none().then(|| m.str())),
        (None, None) => (None, None),
    };
    if let (Some(eos), Some(ml)) = (eos, min_length)
        && positive(ml)
    {
        if let Some(shown) = min_length_str {
            return Err(invalid(
                "min_length",
                format!("`min_length` has to be a non-negative integer, but is {shown}"),
            ));
        }
        list.push(Processor::MinLength {
            min_length: ml as i64,
            eos: eos.to_vec(),
        });
    }
    if let (Some(eos), Some(m)) = (eos, c.min_new_tokens)
        && positive(m.float())
    {
        let Some(min_new_tokens) = m.int64() else {
            return Err(invalid(
                "min_new_tokens",
                format!(
                    "`min_new_tokens` has to be a positive integer, but is {}",
                    m.str()
                ),
            ));
        };
        list.push(Processor::MinNewTokens {
            prompt_len,
            min_new_tokens,
            eos: eos.to_vec(),
        });
    }
    if let Some(id) = c.forced_bos_token_id {
        list.push(Processor::ForcedBos { id });
    }
    if let Some(ids) = &c.forced_eos_token_id {
        non_negative("forced_eos_token_id", ids)?;
        list.push(Processor::ForcedEos {
            max_length: c.max_length_at(prompt_len),
            ids: ids.clone(),
        });
    }
    if c.remove_invalid_values {
        list.push(Processor::InfNanRemove);
    }
    if let Some((start, factor)) = c.exponential_decay_length_penalty {
        let Some(eos) = eos else {
            return Err(invalid(
                "exponential_decay_length_penalty",
                "`exponential_decay_length_penalty` needs an `eos_token_id`; without one \
                 transformers fails with \"Could not infer dtype of NoneType\""
                    .into(),
            ));
        };
        non_negative("eos_token_id", eos)?;
        list.push(Processor::ExponentialDecay {
            start: start + prompt_len as f64,
            factor,
            eos: eos.to_vec(),
        });
    }
    if let Some(ids) = &c.suppress_tokens {
        list.push(Processor::SuppressTokens { ids: ids.clone() });
    }
    if let Some(ids) = &c.begin_suppress_tokens {
        let bump = prompt_len <= 1 && c.forced_bos_token_id.is_some();
        list.push(Processor::SuppressTokensAtBegin {
            ids: ids.clone(),
            begin_index: prompt_len + usize::from(bump),
        });
    }

    if params.do_sample {
        warpers(params, &mut list)?;
    }
    if c.renormalize_logits {
        list.push(Processor::LogitNormalization);
    }
    Ok(list)
}

/// The warpers, built only when sampling, in `_get_logits_processor`'s order.
fn warpers(params: &GenerationParams, list: &mut Vec<Processor>) -> Result<(), HfError> {
    let t = params.temperature;
    if not_one(t) {
        if !positive(t) {
            return Err(HfError::Temperature {
                value: float_repr(t),
                zero: t == 0.0,
                string: false,
            });
        }
        list.push(Processor::Temperature { temperature: t });
    }
    if let Some(h) = params.constraints.top_h {
        if !(positive(h) && h <= 1.0) {
            return Err(invalid(
                "top_h",
                "`top_h` must be in the range (0, 1].".into(),
            ));
        }
        list.push(Processor::TopH { top_h: h });
    }
    if let Some(k) = params.top_k.filter(|&k| k != 0) {
        list.push(Processor::TopK { top_k: k });
    }
    if below_one(params.top_p) {
        if params.top_p < 0.0 {
            return Err(HfError::TopP {
                value: float_repr(params.top_p),
            });
        }
        list.push(Processor::TopP {
            top_p: params.top_p,
        });
    }
    if let Some(m) = params.min_p {
        if !(0.0..=1.0).contains(&m) {
            return Err(HfError::MinP {
                value: float_repr(m),
            });
        }
        list.push(Processor::MinP { min_p: m });
    }
    if below_one(params.typical_p) {
        if !positive(params.typical_p) {
            return Err(HfError::TypicalP {
                value: float_repr(params.typical_p),
            });
        }
        list.push(Processor::Typical {
            mass: params.typical_p,
        });
    }
    if open_unit(params.epsilon_cutoff) {
        list.push(Processor::Epsilon {
            epsilon: params.epsilon_cutoff,
        });
    }
    if open_unit(params.eta_cutoff) {
        list.push(Processor::Eta {
            epsilon: params.eta_cutoff,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::resolve;

    /// Every processor at once: the order of `_get_logits_processor`
    /// (transformers 5.23.0 `generation/utils.py`), warpers after the
    /// constraints, renormalisation last.
    #[test]
    fn every_processor_in_transformers_order() {
        let kwargs = json!({
            "do_sample": true, "temperature": 0.7, "top_h": 0.5, "top_k": 5, "top_p": 0.9,
            "min_p": 0.1, "typical_p": 0.9, "epsilon_cutoff": 0.01, "eta_cutoff": 0.01,
            "repetition_penalty": 1.2, "sequence_bias": [[[1], 0.5]], "no_repeat_ngram_size": 2,
            "bad_words_ids": [[3]], "min_length": 4, "min_new_tokens": 2, "eos_token_id": 5,
            "forced_bos_token_id": 1, "forced_eos_token_id": 5, "remove_invalid_values": true,
            "exponential_decay_length_penalty": [2, 1.1], "suppress_tokens": [6],
            "begin_suppress_tokens": [7], "renormalize_logits": true
        });
        let p = resolve(kwargs.as_object().expect("object"), None).expect("valid");
        let names: Vec<&str> = p
            .processors_at(3)
            .expect("valid")
            .iter()
            .map(|x| x.name())
            .collect();
        assert_eq!(
            names,
            [
                "SequenceBiasLogitsProcessor",
                "RepetitionPenaltyLogitsProcessor",
                "NoRepeatNGramLogitsProcessor",
                "NoBadWordsLogitsProcessor",
                "MinLengthLogitsProcessor",
                "MinNewTokensLengthLogitsProcessor",
                "ForcedBOSTokenLogitsProcessor",
                "ForcedEOSTokenLogitsProcessor",
                "InfNanRemoveLogitsProcessor",
                "ExponentialDecayLengthPenalty",
                "SuppressTokensLogitsProcessor",
                "SuppressTokensAtBeginLogitsProcessor",
                "TemperatureLogitsWarper",
                "TopHLogitsWarper",
                "TopKLogitsWarper",
                "TopPLogitsWarper",
                "MinPLogitsWarper",
                "TypicalLogitsWarper",
                "EpsilonLogitsWarper",
                "EtaLogitsWarper",
                "LogitNormalization",
            ]
        );
        // Greedy: no warpers, renormalisation still last.
        let mut greedy = p.clone();
        greedy.do_sample = false;
        let names = greedy.processor_names().expect("valid");
        assert_eq!(names.last(), Some(&"LogitNormalization"));
        assert!(!names.contains(&"TemperatureLogitsWarper"));
    }

    #[test]
    fn lengths_count_from_the_prompt() {
        let kwargs = json!({"min_new_tokens": 2, "eos_token_id": 5, "max_new_tokens": 4,
                            "forced_eos_token_id": 5, "begin_suppress_tokens": [1]});
        let p = resolve(kwargs.as_object().expect("object"), None).expect("valid");
        let list = p.processors_at(10).expect("valid");
        // min_length = 2 + 10; max_length = 4 + 10; begin index = prompt length.
        assert!(list.contains(&crate::Processor::MinLength {
            min_length: 12,
            eos: vec![5]
        }));
        assert!(list.contains(&crate::Processor::ForcedEos {
            max_length: 14.0,
            ids: vec![5]
        }));
        assert!(list.contains(&crate::Processor::SuppressTokensAtBegin {
            ids: vec![1],
            begin_index: 10
        }));
        // No eos id: neither min-length processor exists.
        let kwargs = json!({"min_new_tokens": 2});
        let p = resolve(kwargs.as_object().expect("object"), None).expect("valid");
        assert!(p.processors_at(10).expect("valid").is_empty());
    }
}
