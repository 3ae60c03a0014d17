//! The written spec as [`parity_core::Semantics`] (`spec`).
//!
//! Its params are the spec's own five fields; `from_generate` maps
//! transformers' *resolved* generate kwargs onto them (the spec knows
//! temperature, top-k, top-p and the repetition penalty only), so a report row
//! `hf:spec` shows where the spec's tie and top-p rules part from
//! transformers' on the same effective settings.

use parity_core::params::{Null, from_map};
use parity_core::{Against, Context, Distribution, Error, Explanation, Info, Logits, Semantics};
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use crate::{Input, Params, RepetitionPenalty, Temperature, TopK, TopP, U};

parity_core::params! {
    /// The spec's params as a record's `params` holds them, each declared
    /// once: all five required (a missing one is refused in the spec's order
    /// by [`spec_params`]), `null` refused, no other key (the context goes in
    /// `input_ids`); their ranges are the newtypes' ([`Temperature`], ...).
    #[derive(Debug, Deserialize)]
    #[serde(default, deny_unknown_fields)]
    struct SpecParams {
        /// [`Temperature`].
        #[serde(deserialize_with = "present")]
        temperature: Option<f64> ["required"] => "0 = greedy, else logits / T",
        /// [`TopK`]: an integer, or a float with an integral value.
        #[serde(deserialize_with = "integer")]
        top_k: Option<i64> ["required"]
            => "keep the k largest, ties to the smaller index; <= 0 or >= V keeps all",
        /// [`TopP`].
        #[serde(deserialize_with = "present")]
        top_p: Option<f64> ["required"]
            => "in (0, 1]: keep through the first token whose cumulative mass is >= p",
        /// [`RepetitionPenalty`].
        #[serde(deserialize_with = "present")]
        repetition_penalty: Option<f64> ["required"]
            => "> 0: divide positive / multiply negative logits of distinct input ids",
        /// [`U`].
        #[serde(deserialize_with = "present")]
        u: Option<f64> ["required"] => "in [0, 1): the uniform number of the draw",
    }
}

/// A key given with a value (`null` refused).
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// `top_k` as [`TopK`] reads it from JSON (an integral float is the integer
/// it denotes; beyond `i64`, saturated).
fn integer<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    let v = Value::deserialize(d)?;
    crate::input::as_integer(&v)
        .map(Some)
        .ok_or_else(|| serde::de::Error::custom("expected an integer"))
}

/// Reads `params` as [`SpecParams`] (an unknown key, `null` or a value of
/// another type refused naming the key), then each field in the spec's
/// order: present, then in its newtype's range.
fn spec_params(params: &Map<String, Value>) -> Result<Params, Error> {
    let p: SpecParams = from_map(params, "spec", SpecParams::FIELDS, Null::Value)?;
    let need = |v: Option<f64>, name: &'static str| v.ok_or(crate::InputError::MissingField(name));
    let params = (|| {
        Ok::<_, crate::InputError>(Params {
            temperature: Temperature::new(need(p.temperature, "temperature")?)?,
            top_k: TopK::new(p.top_k.ok_or(crate::InputError::MissingField("top_k"))?),
            top_p: TopP::new(need(p.top_p, "top_p")?)?,
            repetition_penalty: RepetitionPenalty::new(need(
                p.repetition_penalty,
                "repetition_penalty",
            )?)?,
            u: U::new(need(p.u, "u")?)?,
        })
    })();
    params.map_err(Error::new)
}

static INFO: Info = Info {
    name: "spec",
    engine: "the written sampling spec (docs/spec.md), in f64",
    summary: "penalty, temperature (0 = greedy), top-k (ties to the smaller index), top-p \
              (through the first token reaching p), softmax; draws with the given u",
    verified_against: "the spec's worked examples and hand computations; a 60-digit reference \
                       on 5,300 adversarial cases (worst error 1.1e-16)",
    params: SpecParams::PARAMS,
};

/// The written spec.
#[derive(Debug, Clone, Copy, Default)]
pub struct Spec;

impl Semantics for Spec {
    type Params = Params;

    fn info(&self) -> &'static Info {
        &INFO
    }

    fn role(&self) -> parity_core::Role {
        parity_core::Role::Default
    }

    fn parse_params(&self, params: &Map<String, Value>) -> Result<Params, Error> {
        spec_params(params).map_err(|e| Error::new(format_args!("params: {e}")))
    }

    fn distribution(
        &self,
        logits: &Logits,
        context: &Context<'_>,
        params: &Params,
    ) -> Result<Distribution, Error> {
        let input = Input::from_parts(
            logits.as_f64().to_vec(),
            context.input_ids().to_vec(),
            *params,
        )
        .map_err(Error::new)?;
        let dist = crate::distribution(&input);
        let token = crate::draw(dist.probs(), params.u.get());
        Ok(dist.with_tokens(vec![token]))
    }

    fn from_generate(&self, kwargs: &Map<String, Value>) -> Option<Result<Params, Error>> {
        let p = match hf_sampling::resolve(kwargs, None) {
            Ok(p) => p,
            Err(e) => return Some(Err(Error::new(e))),
        };
        // Every processor transformers runs (hf_sampling::Acting) must be one the spec has.
        let only_spec_processors = p
            .acting()
            .iter()
            .all(|a| ["temperature", "top_k", "top_p", "repetition_penalty"].contains(&a.kwarg));
        if !only_spec_processors || (p.do_sample && p.top_p <= 0.0) {
            return None;
        }
        let top_k = p.top_k.filter(|_| p.do_sample).unwrap_or(0);
        let params = (|| {
            Ok::<_, crate::InputError>(Params {
                temperature: Temperature::new(if p.do_sample { p.temperature } else { 0.0 })?,
                top_k: TopK::new(i64::try_from(top_k).unwrap_or(i64::MAX)),
                top_p: TopP::new(if p.do_sample { p.top_p.min(1.0) } else { 1.0 })?,
                repetition_penalty: RepetitionPenalty::new(p.repetition_penalty)?,
                u: U::new(0.5)?,
            })
        })();
        Some(params.map_err(Error::new))
    }

    fn explain(&self, row: &Against<'_>, params: &Params) -> Explanation {
        let cmp = row.comparison;
        let mut reasons = Vec::new();
        let top_k = params.top_k.effective(row.logits.len());
        let sampling = params.temperature.get() > 0.0;
        if let Some(k) = top_k.filter(|_| sampling)
            && cmp.kept_left > k
        {
            reasons.push(hf_sampling::rules::top_k_tie(
                cmp.kept_left,
                k,
                "the spec (smaller index first)",
            ));
        }
        let sets_differ = !cmp.only_left.is_empty() || !cmp.only_right.is_empty();
        if sampling && params.top_p.get() < 1.0 && sets_differ {
            let tied = cmp.only_left.iter().any(|a| {
                cmp.only_right
                    .iter()
                    .any(|b| row.logits[a.id].to_bits() == row.logits[b.id].to_bits())
            });
            reasons.push(if tied {
                hf_sampling::rules::top_p_tie("the spec")
            } else {
                hf_sampling::rules::top_p_boundary("the spec")
            });
        }
        Explanation { reasons, fix: None }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn port(v: Value) -> Option<Result<Params, Error>> {
        Spec.from_generate(v.as_object().expect("object"))
    }

    /// The spec ports kwargs exactly when every processor transformers runs
    /// is one it has (hf_sampling::Acting). transformers 5.23.0
    /// `generation/utils.py` builds the warpers only
    /// `if generation_config.do_sample:` (line 1597), so greedy min_p or
    /// typical_p changes nothing (they used to block the port), while
    /// `NoRepeatNGramLogitsProcessor` runs greedy too (line 1482; it used to
    /// be ignored, though the spec has no n-gram ban).
    #[test]
    fn ports_exactly_what_transformers_runs() {
        let greedy = port(json!({"do_sample": false, "min_p": 0.1, "typical_p": 0.5}))
            .expect("portable")
            .expect("valid");
        assert_eq!(greedy.temperature.get(), 0.0);
        assert!(port(json!({"do_sample": true, "typical_p": 1.5})).is_some());
        assert!(port(json!({"do_sample": true, "typical_p": 0.5})).is_none());
        assert!(port(json!({"no_repeat_ngram_size": 2})).is_none());
    }
}
