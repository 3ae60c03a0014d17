//! mistral.rs request fields (`mistralrs-server-core/src/openai.rs`
//! `ChatCompletionRequest` → `mistralrs-core/src/sampler.rs` `SamplingParams`)
//! and the model-default merge of 0.9.2 (`SamplingParams::fill_model_defaults`,
//! called from `mistralrs-core/src/engine/add_request.rs`).

use parity_core::Error;
use serde_json::{Map, Value};

use std::collections::BTreeMap;

use parity_core::params::{Null, from_map, non_default};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Which mistral.rs sampler to reproduce.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
pub enum Version {
    /// Tag v0.9.1 (2026-08-14): raw top-p cutoff, frequency/presence over
    /// the whole context, no generation-config merge.
    #[serde(rename = "0.9.1")]
    V0_9_1,
    /// Tag v0.9.2 / commit 9e922623 (2026-08-22): top-p renormalised over
    /// the top-k, frequency/presence over generated ids, merge.
    #[default]
    #[serde(rename = "0.9.2")]
    V0_9_2,
}

parity_core::params! {
    /// The request's sampling fields, as mistral.rs holds them (unset =
    /// `None`; `null` is unset). mistral.rs validates none of their ranges:
    /// out-of-range values simply switch a filter off (top-p ≥ 1, min-p ≥ 1)
    /// or mean greedy (temperature < 1e-7, 0 included). Only what its
    /// deserialiser refuses is refused (a negative or fractional `top_k`, a
    /// non-integer bias key).
    #[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
    #[serde(default, deny_unknown_fields)]
    pub struct MistralRsParams {
        /// `temperature`; unset means 1.0 (`engine/add_request.rs`:
        /// `temperature.unwrap_or(1.0)`), below 1e-7 means argmax.
        pub temperature: Option<f64> ["1.0"]
            => "null is 1.0 (add_request.rs); < 1e-7 (0 included) = argmax",
        /// `top_k` (a `usize`; 0 is off).
        pub top_k: Option<usize> => "null or 0 = off; exactly k kept",
        /// `top_p`, used only strictly between 0 and 1.
        pub top_p: Option<f64> => "used only when 0 < top_p < 1",
        /// `min_p`, used only strictly between 0 and 1.
        pub min_p: Option<f64> => "used only when 0 < min_p < 1; drops p <= max_p * min_p",
        /// `frequency_penalty` (f32).
        pub frequency_penalty: Option<f32>
            => "per generated occurrence (whole context in 0.9.1)",
        /// `presence_penalty` (f32).
        pub presence_penalty: Option<f32> => "once per generated id (whole context in 0.9.1)",
        /// `repetition_penalty` (f32).
        pub repetition_penalty: Option<f32>
            => "every id in the context, after frequency/presence",
        /// `logit_bias`: token id → bias (keys read as Rust's `u32::from_str`).
        #[serde(serialize_with = "bias_out", deserialize_with = "bias_in")]
        pub logit_bias: Vec<(u32, f32)> => "{\"token id\": bias}, after the penalties",
        /// `dry_multiplier`: only 0 or unset ([`check`]: DRY needs the
        /// model's tokenizer for its sequence breakers).
        #[serde(skip_serializing)]
        pub dry_multiplier: Option<f64> => "only 0 (DRY needs the tokenizer)",
        /// Which sampler.
        pub version: Version ["\"0.9.2\""]
            => "\"0.9.2\" or \"0.9.1\" (before the 2026-08-18 top-p change)",
        /// How many successive draws to replay on these logits (this
        /// crate's; `null`: none). Each is one `WeightedIndex` draw from the
        /// engine's generator, as successive requests (or steps) would make.
        pub draws: Option<u64> => "draws replayed from the engine's Isaac64Rng (this crate's)",
        /// How many multinomial draws the engine's one generator made before
        /// this request (this crate's): 0 is a fresh engine; 1 is the first
        /// request to a freshly started `mistralrs-server`, whose startup
        /// dummy run draws once. Greedy draws take none.
        pub earlier_draws: u64 = 0
            => "0 = fresh engine, 1 = freshly started server (this crate's)",
    }
}

fn bias_in<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<(u32, f32)>, D::Error> {
    BTreeMap::<String, f32>::deserialize(d)?
        .into_iter()
        .map(|(k, b)| match k.parse() {
            Ok(id) => Ok((id, b)),
            Err(_) => Err(serde::de::Error::custom(format_args!(
                "key \"{k}\": invalid value, expected a u32 token id"
            ))),
        })
        .collect()
}

fn bias_out<S: Serializer>(bias: &[(u32, f32)], s: S) -> Result<S::Ok, S::Error> {
    s.collect_map(bias.iter().map(|(k, b)| (k.to_string(), f64::from(*b))))
}

impl MistralRsParams {
    /// The params as JSON (set fields only).
    pub fn to_json(&self) -> Map<String, Value> {
        non_default(self)
    }
}

/// Parses the request fields ([`MistralRsParams`]), then refuses what this
/// semantics cannot run.
pub(crate) fn parse(params: &Map<String, Value>) -> Result<MistralRsParams, Error> {
    let p: MistralRsParams = from_map(params, "mistral.rs", MistralRsParams::FIELDS, Null::Unset)?;
    check(&p)?;
    Ok(p)
}

/// Most draws (earlier and replayed together) one call replays.
pub(crate) const MAX_DRAWS: u64 = 10_000_000;

fn check(p: &MistralRsParams) -> Result<(), Error> {
    let total = p.earlier_draws.saturating_add(p.draws.unwrap_or(0));
    let what = match (p.earlier_draws, p.draws) {
        (0, _) => "`draws`",
        (_, None) => "`earlier_draws`",
        _ => "`earlier_draws` + `draws`",
    };
    parity_core::ensure!(
        total <= MAX_DRAWS,
        "{what} = {total}: at most {MAX_DRAWS} draws are replayed"
    );
    if let Some(d) = p.dry_multiplier {
        parity_core::ensure!(
            d == 0.0,
            "`dry_multiplier` = {d}: DRY needs the model's tokenizer for its sequence breakers, which this semantics does not have"
        );
    }
    Ok(())
}

parity_core::body! {
    /// mistral.rs v0.9.2's `ChatCompletionRequest`
    /// (mistralrs-server-core/src/openai.rs lines 1126-1261, made a request
    /// by `parse_request`, chat_completion.rs lines 569-1102): every field
    /// it reads, once (`max_tokens` under its alias `max_completion_tokens`
    /// too), under what sampling does with it. Without `deny_unknown_fields`, serde
    /// drops any other field: [`ChatCompletionRequest::other`].
    pub struct ChatCompletionRequest {
        /// `SamplingParams`' fields this crate models: [`MistralRsParams`]'
        /// request fields.
        sampling: Sampling {
            temperature, top_k, top_p, min_p, frequency_penalty,
            presence_penalty, repetition_penalty, logit_bias, dry_multiplier,
        },
        /// Constrain sampling with an llguidance grammar, which this crate
        /// does not model: refused when set to constrain ([`constraint`]).
        constraining: Constraining { grammar, response_format, tool_choice },
        /// Read for something else: the prompt and template, tools and
        /// agents, how much to generate and return; DRY's other settings
        /// (used only with a `dry_multiplier` other than 0, refused).
        read: Read {
            messages, model, adapter, logprobs, top_logprobs, max_tokens,
            max_completion_tokens, n, stop, ignore_eos, stream, tools,
            web_search_options, agent_permission, code_execution_permission,
            enable_shell, session_id, files, dry_base, dry_allowed_length,
            dry_sequence_breakers, enable_thinking, reasoning_effort,
            chat_template_kwargs, max_tool_rounds, truncate_sequence,
        },
    }
}

/// How a set [`Constraining`] field constrains mistral.rs's sampling, if
/// it does: a `grammar` always (chat_completion.rs lines 1036-1040); a
/// `response_format` but `{"type": "text"}` (lines 1041-1047); a
/// `tool_choice` requiring a tool call (`requires_tool_call`,
/// mistralrs-core/src/tools/request.rs lines 162-170), for which the
/// sampler switches to a tool-call grammar when it draws a stop token or
/// nears `max_tokens` (pipeline/sampling.rs lines 60-101, 786 and 820-825).
fn constraint(field: &str, v: &Value) -> Option<&'static str> {
    let auto = |v: &Value| *v == "none" || *v == "auto" || v.get("mode") == Some(&"auto".into());
    match field {
        "grammar" => Some("mistral.rs samples under the grammar (llguidance)"),
        "response_format" if v.get("type") != Some(&"text".into()) => {
            Some("mistral.rs samples under its JSON schema (llguidance)")
        }
        "tool_choice" if !auto(v) => Some(
            "it requires a tool call, which mistral.rs forces with a tool-call grammar (llguidance) when it draws a stop token or nears `max_tokens`",
        ),
        _ => None,
    }
}

/// The request mistral.rs v0.9.2 refuses before sampling: a `grammar` or a
/// `response_format` serde cannot read as its tagged enum
/// (mistralrs-server-core/src/openai.rs lines 442-457 and 603-618), or both
/// set (chat_completion.rs lines 1032-1034).
fn malformed(constraining: &Constraining) -> Result<(), Error> {
    let set = constraining.set();
    let tagged = |v: &Value, types: &[&str], content: bool| {
        v.get("type")
            .and_then(Value::as_str)
            .is_some_and(|t| types.contains(&t))
            && (!content || v.get("value").is_some())
    };
    for &(k, v) in &set {
        let shape = match k {
            "grammar" if !tagged(v, &["regex", "json_schema", "llguidance", "lark"], true) => {
                r#"{"type": "regex" | "json_schema" | "llguidance" | "lark", "value": ...}"#
            }
            "response_format" if !tagged(v, &["text", "json_object", "json_schema"], false) => {
                r#"{"type": "text" | "json_object" | "json_schema", ...}"#
            }
            // `JsonSchema { json_schema: JsonSchemaResponseFormat { name:
            // String, schema: Value } }` (openai.rs lines 596-618)
            "response_format"
                if tagged(v, &["json_schema"], false)
                    && !v.get("json_schema").is_some_and(|s| {
                        s.get("name").is_some_and(Value::is_string) && s.get("schema").is_some()
                    }) =>
            {
                r#"{"type": "json_schema", "json_schema": {"name": "...", "schema": ...}}"#
            }
            _ => continue,
        };
        return Err(Error::new(format_args!(
            "`{k}` = {v}: mistral.rs refuses the request, its serde reads `{k}` only as {shape} (openai.rs, v0.9.2)"
        )));
    }
    let has = |f: &str| set.iter().any(|&(k, _)| k == f);
    parity_core::ensure!(
        !(has("grammar") && has("response_format")),
        "`grammar` and `response_format` both set: mistral.rs refuses the request, they are mutually exclusive (chat_completion.rs lines 1032-1034, v0.9.2)"
    );
    Ok(())
}

/// What mistral.rs samples with for an OpenAI-style `request`, given the
/// model's `generation_config.json` (`None`: the model has none). Version
/// 0.9.2 fills every field the request leaves unset from the model's
/// defaults (`fill_model_defaults`): `temperature`, `top_k` (0 → unset),
/// `top_p`, `min_p`, `repetition_penalty`, and `suppress_tokens` as a bias
/// of -1e9; `do_sample: false` there means `top_k = 1` and no temperature,
/// top-p or min-p for the unset fields (so T = 1.0 over one token: greedy in
/// effect). 0.9.1 ignores the file. A temperature still unset after the
/// merge is 1.0 when the sampler is built. Request fields that do not shape
/// the distribution (`max_tokens`, `stop`, `seed`, ...) are dropped; one
/// that constrains sampling to a grammar is refused, naming it.
pub fn request_params(
    request: &Map<String, Value>,
    generation_config: Option<&Map<String, Value>>,
) -> Result<MistralRsParams, Error> {
    let body: ChatCompletionRequest = parity_core::body::read(request)?;
    malformed(&body.constraining)?;
    for (k, v) in body.constraining.set() {
        if let Some(why) = constraint(k, v) {
            return Err(parity_core::params::grammar_constrained(k, v, why));
        }
    }
    let own = parity_core::params::only(request, |k| MistralRsParams::FIELDS.contains(&k));
    let mut p = parse(&own)?;
    let Some(g) = generation_config.filter(|_| p.version == Version::V0_9_2) else {
        return Ok(p);
    };
    let num = |k: &str| g.get(k).and_then(Value::as_f64);
    if g.get("do_sample") == Some(&Value::Bool(false)) {
        p.top_k = p.top_k.or(Some(1));
    } else {
        p.temperature = p.temperature.or(num("temperature"));
        let k = g
            .get("top_k")
            .and_then(Value::as_u64)
            .and_then(|k| usize::try_from(k).ok());
        p.top_k = p.top_k.or(k.filter(|&k| k != 0));
        p.top_p = p.top_p.or(num("top_p"));
        p.min_p = p.min_p.or(num("min_p"));
    }
    p.repetition_penalty = p
        .repetition_penalty
        .or(num("repetition_penalty").map(|v| v as f32));
    if let Some(Value::Array(ids)) = g.get("suppress_tokens") {
        for id in ids.iter().filter_map(Value::as_u64) {
            if let Ok(id) = u32::try_from(id)
                && !p.logit_bias.iter().any(|(t, _)| *t == id)
            {
                p.logit_bias.push((id, -1.0e9));
            }
        }
    }
    Ok(p)
}

/// The literal port of transformers `generate(**kwargs)`: the same-named
/// fields copied (`temperature`, `top_k` with `None`/0 unset, `top_p`,
/// `min_p`, `repetition_penalty`). `do_sample=False` becomes
/// `temperature: 0`, which `Sampler::new` turns into argmax
/// (`temperature.is_none_or(|v| v < 1e-7)`); leaving the temperature out
/// would sample at T = 1.0. Without `do_sample` the fields are copied as
/// written (as the vLLM port does; mistral.rs has no such switch, and
/// `explain` says so). `None` when the kwargs switch on what mistral.rs
/// does not have ([`hf_sampling::portable_kwargs`]: the typical, epsilon or
/// eta warper while sampling, beam search).
pub(crate) fn from_generate(kwargs: &Map<String, Value>) -> Option<Result<MistralRsParams, Error>> {
    let mut m = hf_sampling::portable_kwargs(kwargs)?;
    if m.get("top_k")
        .is_some_and(|v| v.is_null() || v.as_u64() == Some(0))
    {
        m.remove("top_k");
    }
    if kwargs.get("do_sample") == Some(&Value::Bool(false)) {
        m.insert("temperature".into(), Value::from(0.0));
    }
    Some(parse(&m))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn refusal(request: Value) -> Option<String> {
        let request = request.as_object().cloned().expect("object");
        request_params(&request, None).err().map(|e| e.to_string())
    }

    /// chat_completion.rs (v0.9.2) lines 1036-1047: a grammar, or a
    /// response format but text, becomes the request's `Constraint`.
    #[test]
    fn grammars_and_json_formats_are_refused_naming_the_field() {
        let tail =
            "grammar-constrained sampling needs the model's vocabulary and is not reproduced";
        assert_eq!(
            refusal(json!({"grammar": {"type": "regex", "value": "a+"}})),
            Some(format!(
                "`grammar` = {{\"type\":\"regex\",\"value\":\"a+\"}}: mistral.rs samples under the grammar (llguidance); {tail}"
            ))
        );
        assert_eq!(
            refusal(json!({"response_format": {"type": "json_object"}})),
            Some(format!(
                "`response_format` = {{\"type\":\"json_object\"}}: mistral.rs samples under its JSON schema (llguidance); {tail}"
            ))
        );
        for unconstrained in [
            json!({"response_format": {"type": "text"}, "temperature": 0.5}),
            json!({"grammar": null, "response_format": null}),
        ] {
            assert_eq!(refusal(unconstrained.clone()), None, "{unconstrained}");
        }
    }

    /// mistralrs-core/src/tools/request.rs (v0.9.2) lines 162-170: only
    /// "none", "auto" and allowed tools in mode "auto" require no call.
    #[test]
    fn a_tool_choice_requiring_a_call_is_refused() {
        for required in [
            json!("required"),
            json!({"type": "function", "function": {"name": "f"}}),
            json!({"type": "function", "name": "f"}),
            json!({"type": "allowed_tools", "mode": "required", "tools": []}),
        ] {
            let e = refusal(json!({"tool_choice": required})).expect("refused");
            assert!(e.starts_with("`tool_choice` = "), "{e}");
            assert!(e.contains("it requires a tool call"), "{e}");
        }
        for free in [
            json!("auto"),
            json!("none"),
            json!({"type": "allowed_tools", "mode": "auto", "tools": []}),
        ] {
            assert_eq!(refusal(json!({"tool_choice": free})), None);
        }
    }

    /// openai.rs (v0.9.2) lines 442-457 and 603-618: serde reads both
    /// fields as tagged enums; chat_completion.rs lines 1032-1034 refuse
    /// the two together.
    #[test]
    fn malformed_or_clashing_constraints_are_the_servers_refusal() {
        let e = refusal(json!({"grammar": "root ::= \"a\""})).expect("refused");
        assert!(e.starts_with("`grammar` = \"root ::= \\\"a\\\"\": mistral.rs refuses the request, its serde reads `grammar` only as {\"type\": \"regex\""), "{e}");
        let e = refusal(json!({"response_format": {"type": "yaml"}})).expect("refused");
        assert!(e.contains("reads `response_format` only as"), "{e}");
        // JsonSchemaResponseFormat needs both `name` and `schema`
        for rf in [
            json!({"type": "json_schema"}),
            json!({"type": "json_schema", "json_schema": {"schema": {}}}),
            json!({"type": "json_schema", "json_schema": {"name": "x"}}),
        ] {
            let e = refusal(json!({ "response_format": rf })).expect("refused");
            assert!(e.contains("\"json_schema\": {\"name\""), "{e}");
        }
        let e = refusal(
            json!({"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {}}}}),
        );
        assert!(e.expect("refused").contains("not reproduced"));
        let e = refusal(
            json!({"grammar": {"type": "regex", "value": "a"}, "response_format": {"type": "text"}}),
        );
        assert!(e.expect("refused").contains("mutually exclusive"));
    }

    #[test]
    fn the_body_declares_each_field_once_and_the_modelled_ones_are_the_params() {
        assert_eq!(
            parity_core::body::repeated(ChatCompletionRequest::FIELDS),
            None
        );
        let ours: Vec<&str> = (MistralRsParams::FIELDS.iter().copied())
            .filter(|f| !Sampling::FIELDS.contains(f))
            .collect();
        assert_eq!(ours, ["version", "draws", "earlier_draws"]);
        assert!(!ChatCompletionRequest::declares("seed"));
    }
}
