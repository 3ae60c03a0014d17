//! The written spec as [`parity_core::Semantics`] (`spec`).
//!
//! Its params are the spec's own five fields; `from_generate` maps
//! transformers' *resolved* generate kwargs onto them (the spec knows
//! temperature, top-k, top-p and the repetition penalty only), so a report row
//! `hf:spec` shows where the spec's tie and top-p rules part from
//! transformers' on the same effective settings.

use parity_core::{
    Against, Context, Distribution, Error, Explanation, Info, Logits, ParamInfo, Semantics,
};
use serde_json::{Map, Value};

use crate::{Input, Params, RepetitionPenalty, Temperature, TopK, TopP, U};

/// The keys of the spec's params.
const KEYS: [&str; 5] = ["temperature", "top_k", "top_p", "repetition_penalty", "u"];

static INFO: Info = Info {
    name: "spec",
    engine: "the written sampling spec (docs/spec.md), in f64",
    summary: "penalty, temperature (0 = greedy), top-k (ties to the smaller index), top-p \
              (through the first token reaching p), softmax; draws with the given u",
    verified_against: "the spec's worked examples and hand computations; a 60-digit reference \
                       on 5,300 adversarial cases (worst error 1.1e-16)",
    params: &[
        ParamInfo {
            name: "temperature",
            default: "required",
            meaning: "0 = greedy, else logits / T",
        },
        ParamInfo {
            name: "top_k",
            default: "required",
            meaning: "keep the k largest, ties to the smaller index; <= 0 or >= V keeps all",
        },
        ParamInfo {
            name: "top_p",
            default: "required",
            meaning: "in (0, 1]: keep through the first token whose cumulative mass is >= p",
        },
        ParamInfo {
            name: "repetition_penalty",
            default: "required",
            meaning: "> 0: divide positive / multiply negative logits of distinct input ids",
        },
        ParamInfo {
            name: "u",
            default: "required",
            meaning: "in [0, 1): the uniform number of the draw",
        },
    ],
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
        // `Params::from_json` ignores unknown keys (so a whole spec line can
        // be passed to it); in a record that would let `"previous_tokens"`
        // inside `params` silently mean "no context", so it is refused here.
        if let Some(key) = params.keys().find(|k| !KEYS.contains(&k.as_str())) {
            return Err(Error::new(format_args!(
                "params: unknown key `{key}` (the spec's parameters are {}; the context goes in `input_ids`)",
                KEYS.join(", ")
            )));
        }
        Params::from_json(&Value::Object(params.clone()))
            .map_err(|e| Error::new(format_args!("params: {e}")))
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
