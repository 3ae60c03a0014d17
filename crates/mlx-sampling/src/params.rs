//! The request fields `mlx_lm.server` 0.32.2 samples with, read and
//! validated as `APIHandler.do_POST` / `validate_model_parameters` read and
//! validate them (mlx_lm/server.py), and the literal port of generate
//! kwargs.

use std::collections::BTreeMap;

use parity_core::params::{Null, from_map, non_default, python_int, verbatim};
use parity_core::text::python_float_repr;
use parity_core::{Error, ensure};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

/// The most draws one request may ask to replay.
pub const MAX_DRAWS: usize = 100_000;

parity_core::params! {
    /// What `mlx_lm.server` hands to `make_sampler` and
    /// `make_logits_processors`, with the server's defaults: each field
    /// once, with what `compare semantics` says of it. Read by [`parse`]
    /// after [`validate_model_parameters`]; serialized (for `to_json`) with
    /// the server's field names.
    #[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
    #[serde(default, deny_unknown_fields)]
    pub struct MlxParams {
        /// `temperature` (server default 0.0: greedy).
        #[serde(deserialize_with = "py_f64")]
        pub temperature: f64 = 0.0 => "0 = greedy (server default); applied last",
        /// `top_p`: applied when 0 < top_p < 1.
        #[serde(deserialize_with = "py_f64")]
        pub top_p: f64 = 1.0 => "on untempered probs; only 0 < p < 1 filters (0 is off)",
        /// `top_k`: applied when > 0; must then be below the vocabulary size.
        #[serde(deserialize_with = "py_i64")]
        pub top_k: i64 = 0 => "exactly k (lower ids win ties); k >= vocab raises",
        /// `min_p`: applied when not 0.
        #[serde(deserialize_with = "py_f64")]
        pub min_p: f64 = 0.0 => "drop logprob < max + ln(min_p), untempered",
        /// `repetition_penalty`: applied when not 0 (0 is the server default).
        #[serde(deserialize_with = "py_f64")]
        pub repetition_penalty: f64 = 0.0 => "0 = off; l<0: l*p, else l/p, once per id",
        /// `repetition_context_size`: last n ids; 0 means all of them.
        #[serde(deserialize_with = "py_usize")]
        pub repetition_context_size: usize = 20 => "last n ids, prompt included; 0 = all",
        /// `presence_penalty`: applied when not 0.
        #[serde(deserialize_with = "py_f64")]
        pub presence_penalty: f64 = 0.0 => "subtracted once per id in its window",
        /// `presence_context_size`: last n ids; 0 means all of them.
        #[serde(deserialize_with = "py_usize")]
        pub presence_context_size: usize = 20 => "last n ids; 0 = all",
        /// `frequency_penalty`: applied when not 0.
        #[serde(deserialize_with = "py_f64")]
        pub frequency_penalty: f64 = 0.0 => "subtracted per occurrence in its window",
        /// `frequency_context_size`: last n ids; 0 means all of them.
        #[serde(deserialize_with = "py_usize")]
        pub frequency_context_size: usize = 20 => "last n ids; 0 = all",
        /// `xtc_probability`: XTC runs when > 0.
        #[serde(deserialize_with = "py_f64")]
        pub xtc_probability: f64 = 0.0 => "chance XTC applies per step (a JSON float)",
        /// `xtc_threshold`: must lie in [0, 0.5] when XTC runs.
        #[serde(deserialize_with = "py_f64")]
        pub xtc_threshold: f64 = 0.1 => "must be <= 0.5 when XTC runs",
        /// Ids XTC never removes (the server: the tokenizer's newline and EOS ids).
        #[serde(deserialize_with = "xtc_special_tokens")]
        pub xtc_special_tokens: Vec<i64> ["[]"]
            => "(not a request field) ids XTC keeps; the server: newline + EOS",
        /// `logit_bias`: id → bias, `{int(k): float(v) for k, v in
        /// logit_bias.items()}` as the server converts it.
        #[serde(deserialize_with = "logit_bias")]
        pub logit_bias: BTreeMap<i64, f64> => "{\"id\": bias}, added first",
        /// `seed` for `mx.random.seed` (its type checked by
        /// [`validate_model_parameters`]).
        pub seed: Option<u64> => "mx.random.seed before the step",
        /// How many successive seeded sampler calls to replay.
        #[serde(deserialize_with = "draws")]
        pub draws: Option<usize>
            => "(not a server field) replay this many seeded sampler calls",
    }
}

impl MlxParams {
    /// `make_sampler` returns the greedy sampler: `temp == 0`.
    pub fn is_greedy(&self) -> bool {
        self.temperature == 0.0
    }

    /// Whether top-p is in the chain (`0 < top_p < 1.0`).
    pub fn has_top_p(&self) -> bool {
        0.0 < self.top_p && self.top_p < 1.0
    }

    /// The params as JSON with the server's field names (non-defaults only).
    pub fn to_json(&self) -> Map<String, Value> {
        non_default(self)
    }
}

/// A JSON value as the Python number `json.loads` makes of it (a bool is an
/// int), for a field [`validate_model_parameters`] has checked.
fn py_f64<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    let v = Value::deserialize(d)?;
    python_number(&v)
        .map(|x| x.0)
        .ok_or_else(|| serde::de::Error::custom("expected a number"))
}

/// An `int` field's value, as the sampler receives it.
fn py_i64<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    py_f64(d).map(|x| x as i64)
}

/// A context size (at least 0: checked).
fn py_usize<'de, D: Deserializer<'de>>(d: D) -> Result<usize, D::Error> {
    py_f64(d).map(|x| x as usize)
}

fn xtc_special_tokens<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<i64>, D::Error> {
    let v = Value::deserialize(d)?;
    match &v {
        Value::Null => Ok(Vec::new()),
        Value::Array(a) => a
            .iter()
            .enumerate()
            .map(|(i, t)| {
                t.as_i64().ok_or_else(|| {
                    verbatim(format_args!(
                        "`xtc_special_tokens[{i}]` must be an integer token id, got {t}"
                    ))
                })
            })
            .collect(),
        _ => Err(verbatim(format_args!(
            "`xtc_special_tokens` must be a list of token ids, got {v}"
        ))),
    }
}

fn draws<'de, D: Deserializer<'de>>(d: D) -> Result<Option<usize>, D::Error> {
    let v = Value::deserialize(d)?;
    if v.is_null() {
        return Ok(None);
    }
    let n = v.as_u64().ok_or_else(|| {
        verbatim(format_args!(
            "`draws` = {v}: must be a non-negative integer"
        ))
    })?;
    if n > MAX_DRAWS as u64 {
        return Err(verbatim(format_args!(
            "`draws` = {n}: at most {MAX_DRAWS} draws are replayed"
        )));
    }
    Ok(Some(n as usize))
}

/// The Python types `_validate` accepts.
#[derive(Clone, Copy)]
enum Ty {
    /// `(float, int)`; a bool is an int in Python.
    Number,
    /// `int` (bool included).
    Int,
    /// `float` only.
    Float,
    /// `bool`.
    Bool,
    /// `str`.
    Str,
    /// `dict`.
    Dict,
}

/// A JSON value as the Python value `json.loads` makes of it, when it is a
/// number: (value, is a Python int).
fn python_number(v: &Value) -> Option<(f64, bool)> {
    parity_core::py::PyNum::numeric(v).map(|n| (n.float(), !n.is_float()))
}

/// `APIHandler._validate(name, type, min_val, max_val, optional)` on a
/// present value (mlx_lm/server.py 0.32.2, lines 1354-1377).
fn validate(
    name: &str,
    v: &Value,
    ty: Ty,
    min: Option<i64>,
    max: Option<i64>,
    optional: bool,
) -> Result<(), Error> {
    if optional && v.is_null() {
        return Ok(());
    }
    // The server's text, then the value it refused.
    let type_error =
        |allowed: &str| Error::new(format_args!("{name} must be of type {allowed} (got {v})"));
    let x = match ty {
        Ty::Number => {
            python_number(v)
                .ok_or_else(|| type_error("('float', 'int')"))?
                .0
        }
        Ty::Int => match python_number(v) {
            Some((x, true)) => x,
            _ => return Err(type_error("int")),
        },
        Ty::Float => match v {
            Value::Number(n) if parity_core::py::PyNum::of(n).is_float() => {
                parity_core::py::PyNum::of(n).float()
            }
            _ => return Err(type_error("float")),
        },
        Ty::Bool => match v {
            Value::Bool(b) => f64::from(u8::from(*b)),
            _ => return Err(type_error("bool")),
        },
        Ty::Str if v.is_string() => return Ok(()),
        Ty::Dict if v.is_object() => return Ok(()),
        Ty::Str => return Err(type_error("str")),
        Ty::Dict => return Err(type_error("dict")),
    };
    if let Some(lo) = min
        && x < lo as f64
    {
        return Err(Error::new(format_args!(
            "{name} must be at least {lo} (got {v})"
        )));
    }
    if let Some(hi) = max
        && x > hi as f64
    {
        return Err(Error::new(format_args!(
            "{name} must be at most {hi} (got {v})"
        )));
    }
    Ok(())
}

/// One `_validate(name, expected_type, min_val, max_val, optional)` call.
type Check = (&'static str, Ty, Option<i64>, Option<i64>, bool);

/// `validate_model_parameters`' checks in its order (mlx_lm/server.py
/// 0.32.2, lines 1381-1401). Each checks the attribute of the request field
/// of its name, but for [`attribute`]'s three.
const CHECKS: &[Check] = &[
    ("stream", Ty::Bool, None, None, false),
    ("max_tokens", Ty::Int, Some(1), None, false),
    ("temperature", Ty::Number, Some(0), None, false),
    ("top_p", Ty::Number, Some(0), Some(1), false),
    ("top_k", Ty::Int, Some(0), None, false),
    ("min_p", Ty::Number, Some(0), Some(1), false),
    ("num_draft_tokens", Ty::Int, Some(0), None, false),
    ("repetition_penalty", Ty::Number, Some(0), None, false),
    ("repetition_context_size", Ty::Int, Some(0), None, false),
    ("presence_penalty", Ty::Number, None, None, false),
    ("presence_context_size", Ty::Int, Some(0), None, false),
    ("frequency_penalty", Ty::Number, None, None, false),
    ("frequency_context_size", Ty::Int, Some(0), None, false),
    ("logprobs", Ty::Bool, None, None, false),
    // whitelist=[-1]
    ("top_logprobs", Ty::Int, Some(0), Some(11), false),
    ("xtc_probability", Ty::Float, Some(0), Some(1), false),
    ("xtc_threshold", Ty::Float, Some(0), Some(1), false),
    ("requested_model", Ty::Str, None, None, false),
    ("adapter", Ty::Str, None, None, true),
    ("seed", Ty::Int, None, None, true),
    ("logit_bias", Ty::Dict, None, None, true),
];

/// The request field behind `validate_model_parameters`' attribute `name`
/// (`do_POST`, server.py lines 1301 and 1306-1311): `max_tokens` is
/// `max_completion_tokens` unless that is absent or null.
fn attribute<'a>(request: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    match name {
        "max_tokens" => request
            .get("max_completion_tokens")
            .filter(|v| !v.is_null())
            .or_else(|| request.get("max_tokens")),
        "requested_model" => request.get("model"),
        "adapter" => request.get("adapters"),
        _ => request.get(name),
    }
}

/// Python's `float(value)` for a JSON value: numbers, bools, numeric
/// strings. `Err(true)` when Python raises `TypeError` (None, lists,
/// objects), `Err(false)` for `ValueError`.
fn python_float(v: &Value) -> Result<f64, bool> {
    match v {
        Value::Number(_) | Value::Bool(_) => python_number(v).map(|x| x.0).ok_or(false),
        // Rust's f64 parser takes what Python's float() takes here
        // (inf/infinity/nan in any case, signs, exponents), bar underscores.
        Value::String(s) => s.trim().parse::<f64>().map_err(|_| false),
        _ => Err(true),
    }
}

/// `{int(k): float(v) for k, v in logit_bias.items()}` as the server
/// converts it (server.py lines 1403-1407; null or not a dict: none, as
/// [`CHECKS`] has refused the latter).
fn convert_logit_bias(v: &Value) -> Result<BTreeMap<i64, f64>, Error> {
    let Value::Object(obj) = v else {
        return Ok(BTreeMap::new());
    };
    let bad = || {
        Error::new(format_args!(
            "logit_bias must be a dict of int to float (got {v})"
        ))
    };
    let mut out = BTreeMap::new();
    for (k, b) in obj {
        let id = python_int(k).ok_or_else(bad)?;
        let bias = python_float(b).map_err(|type_error| {
            if type_error {
                Error::new(format_args!(
                    "`logit_bias[\"{k}\"]` = {b}: float() raises TypeError, which mlx_lm.server does not catch (the connection closes without a response)"
                ))
            } else {
                bad()
            }
        })?;
        out.insert(id, bias);
    }
    Ok(out)
}

fn logit_bias<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<i64, f64>, D::Error> {
    convert_logit_bias(&Value::deserialize(d)?).map_err(verbatim)
}

/// `validate_model_parameters` in the server's order and words, on
/// `request`'s attributes ([`attribute`]): each [`CHECKS`] entry present,
/// then `logit_bias` converted, then `seed` (which `mx.random.seed` then
/// needs as an unsigned 64-bit integer).
fn validate_model_parameters(request: &Map<String, Value>) -> Result<(), Error> {
    for &(name, ty, min, max, optional) in CHECKS {
        let Some(v) = attribute(request, name) else {
            continue;
        };
        // -1 is whitelisted (after the type check, which it passes).
        if name != "top_logprobs" || python_number(v) != Some((-1.0, true)) {
            validate(name, v, ty, min, max, optional)?;
        }
    }
    if let Some(v) = request.get("logit_bias") {
        convert_logit_bias(v)?;
    }
    if let Some(v) = request.get("seed").filter(|v| !v.is_null()) {
        ensure!(
            v.is_u64(),
            "`seed` = {v}: mx.random.seed takes an unsigned 64-bit integer (the generation thread raises TypeError)"
        );
    }
    Ok(())
}

/// Parses `params` (the server's sampling field names, its defaults for
/// absent fields, its validation and messages) plus `xtc_special_tokens`
/// and `draws`. Unknown fields are refused.
pub fn parse(params: &Map<String, Value>) -> Result<MlxParams, Error> {
    parity_core::params::refuse_unknown(params, "mlx-lm", MlxParams::FIELDS)?;
    validate_model_parameters(params)?;
    let p: MlxParams = from_map(params, "mlx-lm", MlxParams::FIELDS, Null::Value)?;
    if let Some(n) = p.draws {
        ensure!(
            p.seed.is_some() || p.is_greedy(),
            "`draws` = {n} needs a `seed`: without one the server continues the thread's random state, which cannot be known"
        );
    }
    Ok(p)
}

parity_core::body! {
    /// `mlx_lm.server` 0.32.2's request body: every field `APIHandler`
    /// reads (mlx_lm/server.py: `do_POST`, lines 1299-1330 and 1340; the
    /// prompt, lines 1753-1781), once, under what the server does with it.
    /// It reads no other field: [`ServerRequest::other`].
    pub struct ServerRequest {
        /// Handed to `make_sampler` / `make_logits_processors` (lines
        /// 1312-1326 and 1329): [`MlxParams`]' request fields.
        sampling: Sampling {
            temperature, top_p, top_k, min_p,
            repetition_penalty, repetition_context_size,
            presence_penalty, presence_context_size,
            frequency_penalty, frequency_context_size,
            xtc_probability, xtc_threshold, logit_bias, seed,
        },
        /// Checked by `validate_model_parameters` ([`CHECKS`]), read for
        /// something else (the model, how much to generate, streaming,
        /// logprobs, speculative decoding).
        checked: Checked {
            stream, model, num_draft_tokens, adapters,
            max_completion_tokens, max_tokens, logprobs, top_logprobs,
        },
        /// Read unchecked, for something else (the prompt, stop words,
        /// streaming, the draft model).
        read: Read {
            stream_options, draft_model, chat_template_kwargs, stop,
            messages, tools, role_mapping, prompt,
        },
    }
}

/// `mlx_lm.server`'s route: it reads a `/v1/completions` body as it reads
/// a `/v1/chat/completions` one.
pub const SERVER_ROUTE: parity_core::Endpoint = parity_core::Endpoint::http(
    parity_core::Server::new("mlx_lm.server").at("0.32.2"),
    parity_core::Protocol::OpenaiChatAndCompletions,
);

/// `mlx_lm.server`'s reading of a chat-completions body: its defaults for
/// absent fields (`--temp 0.0`, `--top-p 1.0`, `--top-k 0`, `--min-p 0.0`,
/// penalties 0 over 20 tokens, XTC 0 / 0.1), then
/// `validate_model_parameters` in its order (the non-sampling fields too),
/// `logit_bias` converted. The XTC special ids come from the tokenizer,
/// which a request cannot set: they are empty here.
pub fn from_request(request: &Map<String, Value>) -> Result<MlxParams, Error> {
    validate_model_parameters(request)?;
    // Each field as sent: a JSON null is Python None, which `_validate`
    // refuses unless optional.
    let own = (Sampling::FIELDS.iter())
        .filter_map(|&k| Some((k.to_string(), request.get(k)?.clone())))
        .collect();
    parse(&own)
}

/// The literal port of transformers `generate(**kwargs)` to mlx-lm's
/// `make_sampler` / `make_logits_processors`: `temperature`, `top_p`,
/// `top_k` (None read as 0), `min_p` and `repetition_penalty` copied under
/// the same names (the repetition window keeps mlx-lm's default of 20);
/// `do_sample=False` becomes `temp=0` (greedy), and `do_sample=True`
/// without a temperature `temp=1.0` (mlx-lm's own default temp is 0,
/// greedy). `None` when the kwargs use what mlx-lm has no counterpart for
/// ([`hf_sampling::portable_kwargs`]: the typical, epsilon or eta warper
/// while sampling, beam search).
pub fn from_generate(kwargs: &Map<String, Value>) -> Option<Result<MlxParams, Error>> {
    let mut m = hf_sampling::portable_kwargs(kwargs)?;
    if m.get("top_k").is_some_and(Value::is_null) {
        m.insert("top_k".into(), Value::from(0));
    }
    match kwargs.get("do_sample") {
        Some(Value::Bool(false)) => {
            m.insert("temperature".into(), Value::from(0.0));
        }
        Some(Value::Bool(true)) if !m.contains_key("temperature") => {
            m.insert("temperature".into(), Value::from(1.0));
        }
        _ => {}
    }
    Some(parse(&m))
}

/// A float as Python prints it, for messages that quote one.
pub(crate) fn py(x: f64) -> String {
    python_float_repr(x)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn python_conversions() {
        assert_eq!(python_int(" 7 "), Some(7));
        assert_eq!(python_int("-1_0"), Some(-10));
        assert_eq!(python_int("3.0"), None);
        assert_eq!(python_float(&json!("-2.5")), Ok(-2.5));
        assert_eq!(python_float(&json!(" inf ")), Ok(f64::INFINITY));
        assert_eq!(python_float(&json!("big")), Err(false));
        assert_eq!(python_float(&Value::Null), Err(true));
    }

    #[test]
    fn defaults_are_the_servers() {
        let p = parse(&Map::new()).expect("empty");
        assert!(p.is_greedy());
        assert_eq!(p, MlxParams::default());
    }

    #[test]
    fn generate_port() {
        let p = from_generate(&obj(json!({"do_sample": true, "top_k": null})))
            .expect("portable")
            .expect("valid");
        assert_eq!((p.temperature, p.top_k), (1.0, 0));
        let g = from_generate(&obj(json!({"do_sample": false, "temperature": 0.7})))
            .expect("portable")
            .expect("valid");
        assert!(g.is_greedy());
        assert!(from_generate(&obj(json!({"do_sample": true, "typical_p": 0.5}))).is_none());
    }

    /// transformers 5.23.0 `generation/utils.py`: `TypicalLogitsWarper` only
    /// `if generation_config.do_sample:` (line 1597) and `typical_p < 1.0`
    /// (line 1629); the cutoffs only while sampling too (lines 1633, 1639).
    /// These kwargs change nothing in transformers, so they port (they used
    /// to be refused for `typical_p != 1` or any cutoff in (0, 1)).
    #[test]
    fn generate_port_follows_transformers_rule_for_typical_and_cutoffs() {
        for kwargs in [
            json!({"typical_p": 0.5}),
            json!({"do_sample": true, "typical_p": 1.5}),
            json!({"do_sample": false, "eta_cutoff": 0.001}),
        ] {
            assert!(from_generate(&obj(kwargs.clone())).is_some(), "{kwargs}");
        }
        let g = from_generate(&obj(json!({"typical_p": 0.5})))
            .expect("portable")
            .expect("valid");
        assert!(g.is_greedy());
    }

    /// mlx_lm/server.py 0.32.2 validates `seed` (line 1400) before
    /// `logit_bias` (line 1401), then converts `logit_bias` (lines
    /// 1403-1407) before `mx.random.seed` sees the seed. `from_request`
    /// used to check `logit_bias` first.
    #[test]
    fn seed_is_checked_before_logit_bias_and_its_range_after_the_conversion() {
        let e = |v: Value| from_request(&obj(v)).unwrap_err().to_string();
        assert_eq!(
            e(json!({"seed": "x", "logit_bias": 5})),
            "seed must be of type int (got \"x\")"
        );
        assert_eq!(
            e(json!({"seed": 7, "logit_bias": 5})),
            "logit_bias must be of type dict (got 5)"
        );
        assert_eq!(
            e(json!({"seed": -1, "logit_bias": {"a": 1}})),
            "logit_bias must be a dict of int to float (got {\"a\":1})"
        );
        assert!(e(json!({"seed": -1})).starts_with("`seed` = -1: mx.random.seed takes"));
    }

    /// The body declares each field once; its sampling fields are
    /// [`MlxParams`]' but this project's two; every checked field, and no
    /// other, is behind some `validate_model_parameters` attribute.
    #[test]
    fn the_body_is_the_servers_and_its_checks_read_it() {
        assert_eq!(parity_core::body::repeated(ServerRequest::FIELDS), None);
        let ours: Vec<&str> = (MlxParams::FIELDS.iter().copied())
            .filter(|f| !Sampling::FIELDS.contains(f))
            .collect();
        assert_eq!(ours, ["xtc_special_tokens", "draws"]);
        for group in ServerRequest::FIELDS {
            for &f in *group {
                let request = obj(json!({f: 1}));
                let checked = CHECKS.iter().any(|c| attribute(&request, c.0).is_some());
                assert_eq!(checked, !Read::FIELDS.contains(&f), "{f}");
            }
        }
        assert!(!ServerRequest::declares("xtc_special_tokens"));
    }

    #[test]
    fn draws_need_a_seed_unless_greedy() {
        let e = parse(&obj(json!({"temperature": 1, "draws": 3}))).unwrap_err();
        assert!(
            e.to_string().starts_with("`draws` = 3 needs a `seed`"),
            "{e}"
        );
        assert!(parse(&obj(json!({"draws": 3}))).is_ok());
    }
}
