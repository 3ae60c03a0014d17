//! The request fields `mlx_lm.server` 0.32.2 samples with, read and
//! validated as `APIHandler.do_POST` / `validate_model_parameters` read and
//! validate them (mlx_lm/server.py), and the literal port of generate
//! kwargs.

use std::collections::BTreeMap;

use parity_core::Error;
use parity_core::params::python_int;
use parity_core::text::python_float_repr;
use serde_json::{Map, Number, Value};

/// The most draws one request may ask to replay.
pub const MAX_DRAWS: usize = 100_000;

/// What `mlx_lm.server` hands to `make_sampler` and
/// `make_logits_processors`, with the server's defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct MlxParams {
    /// `temperature` (server default 0.0: greedy).
    pub temperature: f64,
    /// `top_p`: applied when 0 < top_p < 1.
    pub top_p: f64,
    /// `top_k`: applied when > 0; must then be below the vocabulary size.
    pub top_k: i64,
    /// `min_p`: applied when not 0.
    pub min_p: f64,
    /// `repetition_penalty`: applied when not 0 (0 is the server default).
    pub repetition_penalty: f64,
    /// `repetition_context_size`: last n ids; 0 means all of them.
    pub repetition_context_size: usize,
    /// `presence_penalty`: applied when not 0.
    pub presence_penalty: f64,
    /// `presence_context_size`: last n ids; 0 means all of them.
    pub presence_context_size: usize,
    /// `frequency_penalty`: applied when not 0.
    pub frequency_penalty: f64,
    /// `frequency_context_size`: last n ids; 0 means all of them.
    pub frequency_context_size: usize,
    /// `xtc_probability`: XTC runs when > 0.
    pub xtc_probability: f64,
    /// `xtc_threshold`: must lie in [0, 0.5] when XTC runs.
    pub xtc_threshold: f64,
    /// Ids XTC never removes (the server: the tokenizer's newline and EOS ids).
    pub xtc_special_tokens: Vec<i64>,
    /// `logit_bias`: id → bias.
    pub logit_bias: BTreeMap<i64, f64>,
    /// `seed` for `mx.random.seed`.
    pub seed: Option<u64>,
    /// How many successive seeded sampler calls to replay.
    pub draws: Option<usize>,
}

impl Default for MlxParams {
    fn default() -> Self {
        Self {
            temperature: 0.0,
            top_p: 1.0,
            top_k: 0,
            min_p: 0.0,
            repetition_penalty: 0.0,
            repetition_context_size: 20,
            presence_penalty: 0.0,
            presence_context_size: 20,
            frequency_penalty: 0.0,
            frequency_context_size: 20,
            xtc_probability: 0.0,
            xtc_threshold: 0.1,
            xtc_special_tokens: Vec::new(),
            logit_bias: BTreeMap::new(),
            seed: None,
            draws: None,
        }
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
        let d = Self::default();
        let mut m = Map::new();
        let mut num = |k: &str, v: f64, dv: f64| {
            if v != dv {
                m.insert(k.into(), float(v));
            }
        };
        num("temperature", self.temperature, d.temperature);
        num("top_p", self.top_p, d.top_p);
        num("min_p", self.min_p, d.min_p);
        num(
            "repetition_penalty",
            self.repetition_penalty,
            d.repetition_penalty,
        );
        num(
            "presence_penalty",
            self.presence_penalty,
            d.presence_penalty,
        );
        num(
            "frequency_penalty",
            self.frequency_penalty,
            d.frequency_penalty,
        );
        num("xtc_probability", self.xtc_probability, d.xtc_probability);
        num("xtc_threshold", self.xtc_threshold, d.xtc_threshold);
        if self.top_k != 0 {
            m.insert("top_k".into(), Value::from(self.top_k));
        }
        for (k, v, dv) in [
            (
                "repetition_context_size",
                self.repetition_context_size,
                d.repetition_context_size,
            ),
            (
                "presence_context_size",
                self.presence_context_size,
                d.presence_context_size,
            ),
            (
                "frequency_context_size",
                self.frequency_context_size,
                d.frequency_context_size,
            ),
        ] {
            if v != dv {
                m.insert(k.into(), Value::from(v));
            }
        }
        if !self.xtc_special_tokens.is_empty() {
            m.insert(
                "xtc_special_tokens".into(),
                Value::from(self.xtc_special_tokens.clone()),
            );
        }
        if !self.logit_bias.is_empty() {
            let b: Map<String, Value> = self
                .logit_bias
                .iter()
                .map(|(k, v)| (k.to_string(), float(*v)))
                .collect();
            m.insert("logit_bias".into(), Value::Object(b));
        }
        if let Some(s) = self.seed {
            m.insert("seed".into(), Value::from(s));
        }
        if let Some(n) = self.draws {
            m.insert("draws".into(), Value::from(n));
        }
        m
    }
}

fn float(v: f64) -> Value {
    Number::from_f64(v).map_or(Value::Null, Value::Number)
}

/// The fields `parse` accepts: the server's sampling fields, the XTC
/// special ids (which the server takes from the tokenizer) and `draws`.
pub(crate) const FIELDS: &[&str] = &[
    "temperature",
    "top_p",
    "top_k",
    "min_p",
    "repetition_penalty",
    "repetition_context_size",
    "presence_penalty",
    "presence_context_size",
    "frequency_penalty",
    "frequency_context_size",
    "xtc_probability",
    "xtc_threshold",
    "xtc_special_tokens",
    "logit_bias",
    "seed",
    "draws",
];

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
}

/// A JSON value as the Python value `json.loads` makes of it, when it is a
/// number: (value, is a Python int).
fn python_number(v: &Value) -> Option<(f64, bool)> {
    match v {
        Value::Bool(b) => Some((f64::from(u8::from(*b)), true)),
        Value::Number(n) if n.is_f64() => n.as_f64().map(|x| (x, false)),
        Value::Number(n) => n.as_f64().map(|x| (x, true)),
        _ => None,
    }
}

/// `APIHandler._validate(name, type, min_val, max_val, optional)` on a
/// present value; `Ok(None)` for an accepted `None`.
fn validate(
    name: &str,
    v: &Value,
    ty: Ty,
    min: Option<i64>,
    max: Option<i64>,
    optional: bool,
) -> Result<Option<f64>, Error> {
    if optional && v.is_null() {
        return Ok(None);
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
            Value::Number(n) if n.is_f64() => n.as_f64().unwrap_or(f64::NAN),
            _ => return Err(type_error("float")),
        },
        Ty::Bool => match v {
            Value::Bool(b) => f64::from(u8::from(*b)),
            _ => return Err(type_error("bool")),
        },
        Ty::Str => {
            return if v.is_string() {
                Ok(None)
            } else {
                Err(type_error("str"))
            };
        }
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
    Ok(Some(x))
}

/// The sampling fields in `validate_model_parameters`' order, with their
/// type and bounds: (name, type, min, max).
const SAMPLING_CHECKS: &[(&str, Ty, Option<i64>, Option<i64>)] = &[
    ("temperature", Ty::Number, Some(0), None),
    ("top_p", Ty::Number, Some(0), Some(1)),
    ("top_k", Ty::Int, Some(0), None),
    ("min_p", Ty::Number, Some(0), Some(1)),
    ("repetition_penalty", Ty::Number, Some(0), None),
    ("repetition_context_size", Ty::Int, Some(0), None),
    ("presence_penalty", Ty::Number, None, None),
    ("presence_context_size", Ty::Int, Some(0), None),
    ("frequency_penalty", Ty::Number, None, None),
    ("frequency_context_size", Ty::Int, Some(0), None),
    ("xtc_probability", Ty::Float, Some(0), Some(1)),
    ("xtc_threshold", Ty::Float, Some(0), Some(1)),
];

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
/// converts it.
fn logit_bias(v: &Value) -> Result<BTreeMap<i64, f64>, Error> {
    let Value::Object(obj) = v else {
        return Err(Error::new(format_args!(
            "logit_bias must be of type dict (got {v})"
        )));
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

/// Parses `params` (the server's sampling field names, its defaults for
/// absent fields, its validation and messages) plus `xtc_special_tokens`
/// and `draws`. Unknown fields are refused.
pub fn parse(params: &Map<String, Value>) -> Result<MlxParams, Error> {
    parity_core::params::refuse_unknown(params, "mlx-lm", FIELDS)?;
    let mut p = MlxParams::default();
    for &(name, ty, min, max) in SAMPLING_CHECKS {
        let Some(v) = params.get(name) else { continue };
        let x = validate(name, v, ty, min, max, false)?.unwrap_or_default();
        match name {
            "temperature" => p.temperature = x,
            "top_p" => p.top_p = x,
            "top_k" => p.top_k = x as i64,
            "min_p" => p.min_p = x,
            "repetition_penalty" => p.repetition_penalty = x,
            "repetition_context_size" => p.repetition_context_size = x as usize,
            "presence_penalty" => p.presence_penalty = x,
            "presence_context_size" => p.presence_context_size = x as usize,
            "frequency_penalty" => p.frequency_penalty = x,
            "frequency_context_size" => p.frequency_context_size = x as usize,
            "xtc_probability" => p.xtc_probability = x,
            _ => p.xtc_threshold = x,
        }
    }
    if let Some(v) = params.get("seed")
        && validate("seed", v, Ty::Int, None, None, true)?.is_some()
    {
        let s = v.as_u64().ok_or_else(|| {
            Error::new(format_args!(
                "`seed` = {v}: mx.random.seed takes an unsigned 64-bit integer (the generation thread raises TypeError)"
            ))
        })?;
        p.seed = Some(s);
    }
    if let Some(v) = params.get("logit_bias").filter(|v| !v.is_null()) {
        p.logit_bias = logit_bias(v)?;
    }
    if let Some(v) = params.get("xtc_special_tokens").filter(|v| !v.is_null()) {
        let Value::Array(a) = v else {
            return Err(Error::new(format_args!(
                "`xtc_special_tokens` must be a list of token ids, got {v}"
            )));
        };
        p.xtc_special_tokens = a
            .iter()
            .enumerate()
            .map(|(i, t)| {
                t.as_i64().ok_or_else(|| {
                    Error::new(format_args!(
                        "`xtc_special_tokens[{i}]` must be an integer token id, got {t}"
                    ))
                })
            })
            .collect::<Result<_, _>>()?;
    }
    if let Some(v) = params.get("draws").filter(|v| !v.is_null()) {
        let n = v.as_u64().ok_or_else(|| {
            Error::new(format_args!(
                "`draws` = {v}: must be a non-negative integer"
            ))
        })?;
        if n > MAX_DRAWS as u64 {
            return Err(Error::new(format_args!(
                "`draws` = {n}: at most {MAX_DRAWS} draws are replayed"
            )));
        }
        if p.seed.is_none() && !p.is_greedy() {
            return Err(Error::new(format_args!(
                "`draws` = {n} needs a `seed`: without one the server continues the thread's random state, which cannot be known"
            )));
        }
        p.draws = Some(n as usize);
    }
    Ok(p)
}

/// Request fields `mlx_lm.server` reads besides the sampling ones (all
/// validated, none shapes one step's distribution).
const OTHER_READ: &[&str] = &[
    "stream",
    "stream_options",
    "model",
    "draft_model",
    "num_draft_tokens",
    "adapters",
    "max_completion_tokens",
    "max_tokens",
    "logprobs",
    "top_logprobs",
    "chat_template_kwargs",
    "stop",
    "messages",
    "tools",
    "role_mapping",
    "prompt",
];

/// Whether the server reads `field` (for [`parity_core::Route`]'s ignored list).
pub(crate) fn server_reads(field: &str) -> bool {
    (FIELDS.contains(&field) && field != "xtc_special_tokens" && field != "draws")
        || OTHER_READ.contains(&field)
}

/// `mlx_lm.server`'s reading of a chat-completions body: its defaults for
/// absent fields (`--temp 0.0`, `--top-p 1.0`, `--top-k 0`, `--min-p 0.0`,
/// penalties 0 over 20 tokens, XTC 0 / 0.1), then
/// `validate_model_parameters` in its order (the non-sampling fields too),
/// then `logit_bias` converted. The XTC special ids come from the
/// tokenizer, which a request cannot set: they are empty here.
pub fn from_request(request: &Map<String, Value>) -> Result<MlxParams, Error> {
    let get = |k: &str| request.get(k);
    let check = |name: &str, v: Option<&Value>, ty, min, max, optional| match v {
        Some(v) => validate(name, v, ty, min, max, optional).map(|_| ()),
        None => Ok(()),
    };
    // The fields read before the sampling ones; a JSON null is Python None.
    check("stream", get("stream"), Ty::Bool, None, None, false)?;
    let max_tokens = match get("max_completion_tokens") {
        Some(v) if !v.is_null() => Some(v),
        _ => get("max_tokens"),
    };
    check("max_tokens", max_tokens, Ty::Int, Some(1), None, false)?;
    let mut own = Map::new();
    for &(name, ty, min, max) in SAMPLING_CHECKS {
        if name == "repetition_penalty" {
            check(
                "num_draft_tokens",
                get("num_draft_tokens"),
                Ty::Int,
                Some(0),
                None,
                false,
            )?;
        }
        if name == "xtc_probability" {
            check("logprobs", get("logprobs"), Ty::Bool, None, None, false)?;
            // -1 is whitelisted (after the type check, which it passes).
            if let Some(v) = get("top_logprobs")
                && python_number(v) != Some((-1.0, true))
            {
                validate("top_logprobs", v, Ty::Int, Some(0), Some(11), false)?;
            }
        }
        if let Some(v) = get(name) {
            validate(name, v, ty, min, max, false)?;
            own.insert(name.into(), v.clone());
        }
    }
    check("requested_model", get("model"), Ty::Str, None, None, false)?;
    check("adapter", get("adapters"), Ty::Str, None, None, true)?;
    for k in ["seed", "logit_bias"] {
        if let Some(v) = get(k) {
            if k == "logit_bias" && !v.is_null() && !v.is_object() {
                return Err(Error::new(format_args!(
                    "logit_bias must be of type dict (got {v})"
                )));
            }
            own.insert(k.into(), v.clone());
        }
    }
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
            m.insert("temperature".into(), float(0.0));
        }
        Some(Value::Bool(true)) if !m.contains_key("temperature") => {
            m.insert("temperature".into(), float(1.0));
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
