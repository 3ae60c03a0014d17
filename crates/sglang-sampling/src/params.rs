//! `SamplingParams` as SGLang 0.5.23 reads and validates them
//! (`sglang/srt/sampling/sampling_params.py`: `__post_init__`, `verify`),
//! and how its OpenAI server turns a request into them
//! (`sglang/srt/entrypoints/openai/protocol.py`:
//! `ChatCompletionRequest.to_sampling_params`, `CompletionRequest`;
//! `serving_completions.py`: `_build_sampling_params`;
//! `sglang/srt/configs/model_config.py`: `get_default_sampling_params`).

use std::collections::BTreeMap;

use parity_core::params::{DefaultFrom, Null, from_map, python_int};
use parity_core::py::{self, PyNum};
use parity_core::text::python_float_repr as py_float;
use parity_core::{Error, ensure};
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Number, Value};

/// `TOP_K_ALL` (`1 << 30`): what `top_k = -1` becomes in `__post_init__`.
pub const TOP_K_ALL: i64 = 1 << 30;
/// `_SAMPLING_EPS`: a temperature in `[0, 1e-6)` means greedy.
const SAMPLING_EPS: f64 = 1e-6;
/// Most draws one call replays (each hashes the whole vocabulary).
const MAX_DRAWS: u64 = 10_000;

/// The `SamplingParams` fields that shape one step's distribution, after
/// SGLang's `__post_init__` (greedy as `temperature = 1, top_k = 1`,
/// `top_k = -1` as [`TOP_K_ALL`]) and `verify`, plus the server flag that
/// decides whether `sampling_seed` is read.
#[derive(Debug, Clone, PartialEq)]
pub struct SglangParams {
    /// `temperature` after `__post_init__` (a greedy request has 1.0).
    pub temperature: f64,
    /// `top_p` (1.0 = off).
    pub top_p: f64,
    /// `top_k` after `__post_init__`: [`TOP_K_ALL`] = off, 1 = greedy.
    pub top_k: i64,
    /// `min_p` (0 = off).
    pub min_p: f64,
    /// `frequency_penalty`, over the generated tokens.
    pub frequency_penalty: f64,
    /// `presence_penalty`, over the generated tokens.
    pub presence_penalty: f64,
    /// `repetition_penalty`, over the generated tokens.
    pub repetition_penalty: f64,
    /// `logit_bias` as written (keys are token ids in strings), `None` when
    /// absent. Checked against the vocabulary when the distribution is built.
    pub logit_bias: Option<Vec<(String, f64)>>,
    /// `sampling_seed` (the OpenAI `seed`).
    pub sampling_seed: Option<i64>,
    /// The server's `--enable-deterministic-inference`: only then is
    /// `sampling_seed` read (42 when a request has none).
    pub enable_deterministic_inference: bool,
    /// How many seeded draws to replay (positions p, p+1, ...).
    pub draws: usize,
}

impl SglangParams {
    /// Greedy: `top_k <= 1` (`SamplingBatchInfo.is_all_greedy`), which is
    /// what a temperature below 1e-6 becomes.
    pub fn is_greedy(&self) -> bool {
        self.top_k <= 1
    }

    /// Whether the penalizer orchestrator runs (`is_required`).
    pub(crate) fn has_penalties(&self) -> bool {
        self.frequency_penalty != 0.0
            || self.presence_penalty != 0.0
            || self.repetition_penalty != 1.0
    }

    /// No top-p, top-k or min-p: `simple_sampling_case`.
    pub(crate) fn is_simple(&self) -> bool {
        self.top_p == 1.0 && self.top_k == TOP_K_ALL && self.min_p <= 0.0
    }

    /// The seed the deterministic path uses, when it is on.
    pub fn effective_seed(&self) -> Option<i64> {
        self.enable_deterministic_inference
            .then(|| self.sampling_seed.unwrap_or(42))
    }

    /// The params as JSON with SGLang's field names (non-default fields
    /// only; `top_k` off is written as -1, greedy as `temperature` 0).
    pub fn to_json(&self) -> Map<String, Value> {
        // The declared defaults after `__post_init__` (they pass `verify`:
        // a test says so).
        let Ok(d) = Raw::default().build() else {
            return Map::new();
        };
        let mut m = Map::new();
        let mut num = |k: &str, v: f64, dv: f64| {
            if v != dv {
                m.insert(k.into(), Value::from(v));
            }
        };
        if self.is_greedy() && self.temperature == 1.0 && self.top_k == 1 {
            num("temperature", 0.0, f64::NAN);
        } else {
            num("temperature", self.temperature, d.temperature);
            num("top_p", self.top_p, d.top_p);
            num("min_p", self.min_p, d.min_p);
        }
        num(
            "frequency_penalty",
            self.frequency_penalty,
            d.frequency_penalty,
        );
        num(
            "presence_penalty",
            self.presence_penalty,
            d.presence_penalty,
        );
        num(
            "repetition_penalty",
            self.repetition_penalty,
            d.repetition_penalty,
        );
        if !(self.is_greedy() && self.temperature == 1.0 && self.top_k == 1)
            && self.top_k != d.top_k
        {
            m.insert("top_k".into(), Value::from(self.top_k));
        }
        if let Some(b) = &self.logit_bias {
            let b: Map<String, Value> = b
                .iter()
                .map(|(k, v)| (k.clone(), Value::from(*v)))
                .collect();
            m.insert("logit_bias".into(), Value::Object(b));
        }
        if let Some(s) = self.sampling_seed {
            m.insert("sampling_seed".into(), Value::from(s));
        }
        if self.enable_deterministic_inference != d.enable_deterministic_inference {
            m.insert(
                "enable_deterministic_inference".into(),
                Value::Bool(self.enable_deterministic_inference),
            );
        }
        if self.draws != d.draws {
            m.insert("draws".into(), Value::from(self.draws));
        }
        m
    }
}

/// A number as SGLang holds it: an int stays an int (`SamplingParams`
/// does not coerce), which changes how its messages print it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Num {
    Int(i64),
    Float(f64),
}

impl From<PyNum> for Num {
    /// The JSON number as Python reads it (an int beyond i64, which
    /// SGLang's pydantic models would hold, becomes its float).
    fn from(n: PyNum) -> Self {
        match n.int64() {
            Some(i) => Self::Int(i),
            None => Self::Float(n.float()),
        }
    }
}

impl Num {
    fn value(self) -> f64 {
        match self {
            Self::Int(i) => i as f64,
            Self::Float(f) => f,
        }
    }
    /// `f"{x}"` in Python.
    fn py(self) -> String {
        match self {
            Self::Int(i) => i.to_string(),
            Self::Float(f) => py_float(f),
        }
    }
    /// The JSON number it was read from.
    fn to_json(self) -> Value {
        match self {
            Self::Int(i) => Value::from(i),
            Self::Float(f) => Value::from(f),
        }
    }
}

impl<'de> Deserialize<'de> for Num {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Self::from(PyNum::of(&Number::deserialize(d)?)))
    }
}

impl DefaultFrom<f64> for Num {
    fn default_from(value: f64) -> Self {
        Self::Float(value)
    }
}

impl DefaultFrom<i64> for Num {
    fn default_from(value: i64) -> Self {
        Self::Int(value)
    }
}

parity_core::params! {
    /// The native `/generate` API's `sampling_params` as
    /// `SamplingParams(**kw)` receives them, before `__post_init__`, plus
    /// the server flag that decides whether `sampling_seed` is read and
    /// this crate's `draws`. `null` means the field's default; unknown
    /// fields are refused.
    #[derive(Debug, Clone, PartialEq, Deserialize)]
    #[serde(default, deny_unknown_fields)]
    pub(crate) struct Raw {
        /// `temperature`.
        pub temperature: Num = 1.0 => "below 1e-6 = greedy (top_k 1); no upper bound",
        /// `top_p`.
        pub top_p: Num = 1.0 => "in (0, 1]; measured on the full-vocabulary mass",
        /// `top_k` (an int; -1 is [`TOP_K_ALL`]).
        pub top_k: Num = -1 => "-1 = off, else >= 1; exactly k by sorted position",
        /// `min_p`.
        pub min_p: Num = 0.0 => "keep p >= max_p * min_p, after top-k/top-p",
        /// `repetition_penalty`.
        pub repetition_penalty: Num = 1.0 => "in (0, 2]; generated ids only",
        /// `frequency_penalty`.
        pub frequency_penalty: Num = 0.0 => "per occurrence in the generated ids, in [-2, 2]",
        /// `presence_penalty`.
        pub presence_penalty: Num = 0.0 => "once per generated id, in [-2, 2]",
        /// `logit_bias` as written (keys are token ids in strings).
        #[serde(deserialize_with = "logit_bias")]
        pub logit_bias: Option<Vec<(String, f64)>>
            => "{\"token id\": bias}, added after the penalties",
        /// `sampling_seed` as written (`verify` checks its type).
        pub sampling_seed: Option<Value>
            => "read only with enable_deterministic_inference (else 42 there)",
        /// The server's `--enable-deterministic-inference`.
        pub enable_deterministic_inference: bool = false
            => "server flag: seeded murmur3/Gumbel draws, full sort, min_p refused",
        /// How many seeded draws to replay.
        pub draws: u64 = 1 => "seeded draws replayed at positions p, p+1, ... (this crate's)",
    }
}

impl Raw {
    /// `SamplingParams.__post_init__` then `verify` (all but the
    /// vocabulary checks of `logit_bias`, made in [`verify_vocab`]), then
    /// this crate's `draws` bound.
    pub(crate) fn build(self) -> Result<SglangParams, Error> {
        let mut temperature = self.temperature;
        let top_p = self.top_p;
        let mut top_k = match self.top_k {
            Num::Int(i) => i,
            Num::Float(f) => {
                return Err(Error::new(format_args!(
                    "`top_k` = {} is not an integer",
                    py_float(f)
                )));
            }
        };
        let (min_p, frequency_penalty, presence_penalty, repetition_penalty) = (
            self.min_p,
            self.frequency_penalty,
            self.presence_penalty,
            self.repetition_penalty,
        );
        // __post_init__: 0 <= T < 1e-6 is greedy (top_k = 1, T = 1).
        if (0.0..SAMPLING_EPS).contains(&temperature.value()) {
            temperature = Num::Float(1.0);
            top_k = 1;
        }
        if top_k == -1 {
            top_k = TOP_K_ALL;
        }
        // verify(), in SGLang's order.
        let t = temperature.value();
        ensure!(
            t.is_finite() && t >= 0.0,
            "temperature must be a non-negative finite number, got {}.",
            temperature.py()
        );
        let p = top_p.value();
        ensure!(
            0.0 < p && p <= 1.0,
            "top_p must be in (0, 1], got {}.",
            top_p.py()
        );
        ensure!(
            (0.0..=1.0).contains(&min_p.value()),
            "min_p must be in [0, 1], got {}.",
            min_p.py()
        );
        ensure!(
            top_k >= 1,
            "top_k must be -1 (disable) or at least 1, got {top_k}."
        );
        ensure!(
            (-2.0..=2.0).contains(&frequency_penalty.value()),
            "frequency_penalty must be in [-2, 2], got {}.",
            frequency_penalty.py()
        );
        ensure!(
            (-2.0..=2.0).contains(&presence_penalty.value()),
            "presence_penalty must be in [-2, 2], got {}.",
            presence_penalty.py()
        );
        let r = repetition_penalty.value();
        ensure!(
            0.0 < r && r <= 2.0,
            "repetition_penalty must be in (0, 2] (1.0 = no penalty), got {}.",
            repetition_penalty.py()
        );
        let sampling_seed = match self.sampling_seed {
            None => None,
            Some(Value::Number(n)) => match PyNum::of(&n) {
                PyNum::Int(i) => match i64::try_from(i) {
                    Ok(i) => Some(i),
                    Err(_) => {
                        return Err(Error::new(format_args!(
                            "sampling_seed must be in [-2**63, 2**63 - 1], got {i}."
                        )));
                    }
                },
                PyNum::Float(_) => {
                    return Err(Error::new("sampling_seed must be an integer, got float."));
                }
            },
            Some(v) => {
                let ty = py::type_name(&v);
                return Err(Error::new(format_args!(
                    "sampling_seed must be an integer, got {ty}. (`sampling_seed` = {v})"
                )));
            }
        };
        let draws = self.draws;
        ensure!(
            (1..=MAX_DRAWS).contains(&draws),
            "`draws` = {draws}: must be an integer in [1, {MAX_DRAWS}]"
        );
        Ok(SglangParams {
            temperature: t,
            top_p: p,
            top_k,
            min_p: min_p.value(),
            frequency_penalty: frequency_penalty.value(),
            presence_penalty: presence_penalty.value(),
            repetition_penalty: r,
            logit_bias: self.logit_bias,
            sampling_seed,
            enable_deterministic_inference: self.enable_deterministic_inference,
            draws: draws as usize,
        })
    }
}

/// `logit_bias`: an object of token id (a string) → bias, in key order.
fn logit_bias<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<(String, f64)>>, D::Error> {
    Ok(Some(
        BTreeMap::<String, f64>::deserialize(d)?
            .into_iter()
            .collect(),
    ))
}

/// `verify`'s vocabulary check of `logit_bias`, then the bias as
/// `SamplingBatchInfo.from_schedule_batch` builds it: keys deduplicated by
/// `int(key)` (the later key wins), each value an f32.
pub(crate) fn verify_vocab(p: &SglangParams, vocab: usize) -> Result<Vec<(usize, f32)>, Error> {
    let Some(bias) = &p.logit_bias else {
        return Ok(Vec::new());
    };
    let mut out: Vec<(usize, f32)> = Vec::new();
    for (k, b) in bias {
        let id = python_int(k).ok_or_else(|| {
            Error::new(format_args!(
                "invalid literal for int() with base 10: '{k}' (a `logit_bias` key)"
            ))
        })?;
        let id = usize::try_from(id)
            .ok()
            .filter(|&i| i < vocab)
            .ok_or_else(|| {
                Error::new(format_args!(
                    "logit_bias must has keys in [0, {}], got {k}.",
                    vocab.saturating_sub(1)
                ))
            })?;
        match out.iter_mut().find(|(i, _)| *i == id) {
            Some(slot) => slot.1 = *b as f32,
            None => out.push((id, *b as f32)),
        }
    }
    Ok(out)
}

/// Parses `params` as `SamplingParams(**params)` then `verify` would (the
/// native `/generate` API's `sampling_params`).
pub(crate) fn parse(params: &Map<String, Value>) -> Result<SglangParams, Error> {
    let raw: Raw = from_map(params, "sglang", Raw::FIELDS, Null::Unset)?;
    raw.build()
}

parity_core::body! {
    /// The fields of SGLang 0.5.23's OpenAI requests (`ChatCompletionRequest`,
    /// `CompletionRequest`, sglang/srt/entrypoints/openai/protocol.py) that
    /// shape or refuse one step's sampling, each once; the requests' other
    /// fields do not ([`SamplingRequest::other`]).
    pub struct SamplingRequest {
        /// Taken from a model's `generation_config.json` when a chat request
        /// leaves them unset (`ModelConfig.get_default_sampling_params`,
        /// `--sampling-defaults model`, the default):
        /// [`GENERATION_CONFIG_FIELDS`].
        defaulted: Defaulted { repetition_penalty, temperature, top_k, top_p, min_p },
        /// Read from the request only (0 when absent, never merged).
        penalties: Penalties { frequency_penalty, presence_penalty },
        /// Passed on: `logit_bias`, and `seed` as `sampling_seed`.
        passed: Passed { logit_bias, seed },
        /// Change what SGLang samples and are not modelled here (grammars,
        /// custom processors, watermarks, EOS masking): a request setting
        /// one is refused, the first in this order.
        unmodelled: Unmodelled {
            regex,
            ebnf,
            json_schema,
            response_format,
            custom_logit_processor,
            custom_params,
            watermark,
            min_tokens,
        },
    }
}

/// The sampling fields SGLang takes from a model's `generation_config.json`:
/// presence and frequency penalties are not among them.
pub const GENERATION_CONFIG_FIELDS: &[&str] = Defaulted::FIELDS;

/// Whether the sampling params are read from request field `field`.
pub(crate) fn consumed(field: &str) -> bool {
    [Defaulted::FIELDS, Penalties::FIELDS, Passed::FIELDS]
        .iter()
        .any(|g| g.contains(&field))
}

/// Which OpenAI endpoint a request goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    /// `/v1/chat/completions`: `ChatCompletionRequest`, with the model's
    /// generation config merged.
    Chat,
    /// `/v1/completions`: `CompletionRequest`, no generation config.
    Completions,
}

/// SGLang's OpenAI server, at the version this crate reads.
pub const SERVER: parity_core::Server = parity_core::Server::new("sglang").at("0.5.23");

impl Endpoint {
    /// The route compare names.
    pub const fn route(self) -> parity_core::Endpoint {
        parity_core::Endpoint::http(
            SERVER,
            match self {
                Endpoint::Chat => parity_core::Protocol::OpenaiChat,
                Endpoint::Completions => parity_core::Protocol::OpenaiCompletions,
            },
        )
    }
}

/// A pydantic field type of the request model.
#[derive(Clone, Copy)]
enum Field {
    /// `float` (or `Optional[float]` when nullable).
    Float { nullable: bool },
    /// `int` (or `Optional[int]`).
    Int { nullable: bool },
}

/// Pydantic's reading of one request field (lax mode): `None` for absent or
/// (when nullable) null; an error with pydantic's message otherwise.
fn pydantic(request: &Map<String, Value>, key: &str, field: Field) -> Result<Option<Num>, Error> {
    let refuse = |msg: &str, v: &Value| {
        Err(Error::new(format_args!(
            "request field `{key}` = {v}: {msg} (pydantic; SGLang answers 400)"
        )))
    };
    let Some(v) = request.get(key) else {
        return Ok(None);
    };
    match (field, v) {
        (Field::Float { nullable: true } | Field::Int { nullable: true }, Value::Null) => Ok(None),
        (Field::Float { .. }, Value::Null) => refuse("Input should be a valid number", v),
        (Field::Int { .. }, Value::Null) => refuse("Input should be a valid integer", v),
        (Field::Float { .. }, Value::Number(n)) => Ok(Some(Num::Float(PyNum::of(n).float()))),
        (Field::Int { .. }, Value::Number(n)) => match (PyNum::of(n).int64(), PyNum::of(n).float())
        {
            (Some(i), _) => Ok(Some(Num::Int(i))),
            (None, f) if f.fract() == 0.0 && f.abs() < 9.2e18 => Ok(Some(Num::Int(f as i64))),
            (None, _) => refuse(
                "Input should be a valid integer, got a number with a fractional part",
                v,
            ),
        },
        (Field::Float { .. }, _) => refuse("Input should be a valid number", v),
        (Field::Int { .. }, _) => refuse("Input should be a valid integer", v),
    }
}

/// What an OpenAI-style request to SGLang's server samples with.
///
/// Chat (`ChatCompletionRequest`): `temperature`, `top_p`, `top_k`,
/// `min_p` and `repetition_penalty` are optional; each absent (or null)
/// one comes from the model's `generation_config.json` when given (SGLang's
/// default `--sampling-defaults model`), else SGLang's default.
/// `frequency_penalty` and `presence_penalty` default to 0 and are never
/// merged; `seed` becomes `sampling_seed`. Completions (`CompletionRequest`):
/// every field has a concrete default and no generation config is read; a
/// null number is a validation error. The result then goes through
/// `SamplingParams.__post_init__` and `verify`, whose errors SGLang returns
/// as HTTP 400 with their text.
pub fn request_params(
    endpoint: Endpoint,
    request: &Map<String, Value>,
    generation_config: Option<&Map<String, Value>>,
) -> Result<SglangParams, Error> {
    for &k in Unmodelled::FIELDS {
        if let Some(v) = request.get(k) {
            // a `response_format` of type "text" sets no constraint
            // (protocol.py:1238-1253, serving_completions.py:177-193 at 0.5.23)
            let inert = v.is_null()
                || (k == "min_tokens" && v.as_u64() == Some(0))
                || (k == "response_format" && v.get("type") == Some(&Value::from("text")));
            if !inert {
                return Err(Error::new(format_args!(
                    "request field `{k}` (= {v}) changes SGLang's sampling and is not modelled by the sglang semantics"
                )));
            }
        }
    }
    let chat = endpoint == Endpoint::Chat;
    let f = Field::Float { nullable: chat };
    let i = Field::Int { nullable: chat };
    let pen = Field::Float { nullable: false };
    // Pydantic validates every field and reports all failures at once.
    let mut failures = Vec::new();
    let mut read = |key: &str, field: Field| match pydantic(request, key, field) {
        Ok(v) => v,
        Err(e) => {
            failures.push(e.to_string());
            None
        }
    };
    let temperature = read("temperature", f);
    let top_p = read("top_p", f);
    let top_k = read("top_k", i);
    let min_p = read("min_p", f);
    let frequency_penalty = read("frequency_penalty", pen);
    let presence_penalty = read("presence_penalty", pen);
    let repetition_penalty = read("repetition_penalty", f);
    let sampling_seed = match request.get("seed") {
        // Past i64: pydantic takes any int; verify() then refuses it.
        Some(v @ Value::Number(n)) if n.is_u64() => Some(v.clone()),
        _ => match read("seed", Field::Int { nullable: true }) {
            Some(Num::Int(s)) => Some(Value::from(s)),
            _ => None,
        },
    };
    if !failures.is_empty() {
        return Err(Error::new(failures.join("; ")));
    }
    let mut raw = [
        ("temperature", temperature),
        ("top_p", top_p),
        ("top_k", top_k),
        ("min_p", min_p),
        ("frequency_penalty", frequency_penalty),
        ("presence_penalty", presence_penalty),
        ("repetition_penalty", repetition_penalty),
    ];
    if let (true, Some(gc)) = (chat, generation_config) {
        for (key, own) in &mut raw {
            if own.is_some() || !GENERATION_CONFIG_FIELDS.contains(key) {
                continue;
            }
            *own = match gc.get(*key) {
                None | Some(Value::Null) => None,
                Some(Value::Number(n)) => Some(Num::from(PyNum::of(n))),
                Some(other) => {
                    return Err(Error::new(format_args!(
                        "generation_config `{key}` = {other} is not a number"
                    )));
                }
            };
        }
    }
    // What SamplingParams(**kw) then receives.
    let mut kw: Map<String, Value> = raw
        .iter()
        .filter_map(|(k, v)| v.map(|v| (k.to_string(), v.to_json())))
        .collect();
    for (k, v) in [
        ("logit_bias", request.get("logit_bias")),
        ("sampling_seed", sampling_seed.as_ref()),
    ] {
        if let Some(v) = v {
            kw.insert(k.into(), v.clone());
        }
    }
    parse(&kw)
}

/// The literal port of transformers `generate(**kwargs)` to SGLang
/// `sampling_params`: `temperature`, `top_p`, `min_p`,
/// `repetition_penalty` copied; `top_k` copied as written (`None` is
/// SGLang's -1, off; 0, transformers' "off", is refused by SGLang);
/// `do_sample=False` becomes `temperature=0`, SGLang's greedy. `None` when
/// the kwargs use what SGLang has no counterpart for
/// ([`hf_sampling::portable_kwargs`]: the typical, epsilon or eta warper
/// while sampling, beam search).
pub(crate) fn from_generate(kwargs: &Map<String, Value>) -> Option<Result<SglangParams, Error>> {
    Some(parse(&literal_request(kwargs)?))
}

/// The literal port's request: [`hf_sampling::portable_kwargs`], with
/// `do_sample=False` as `temperature` 0 (`None`: not expressible).
pub(crate) fn literal_request(kwargs: &Map<String, Value>) -> Option<Map<String, Value>> {
    let mut m = hf_sampling::portable_kwargs(kwargs)?;
    if kwargs.get("do_sample") == Some(&Value::Bool(false)) {
        m.insert("temperature".into(), Value::from(0.0));
    }
    Some(m)
}

#[cfg(test)]
mod tests {
    /// Each field of the request body is declared in one group only.
    #[test]
    fn the_request_body_declares_each_field_once() {
        assert_eq!(parity_core::body::repeated(SamplingRequest::FIELDS), None);
    }

    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    /// protocol.py:1238-1253 and serving_completions.py:177-193 (0.5.23):
    /// only json_schema, json_object and structural_tag constrain.
    #[test]
    fn a_text_response_format_is_no_constraint() {
        for endpoint in [Endpoint::Chat, Endpoint::Completions] {
            let text = obj(json!({"temperature": 0.7, "response_format": {"type": "text"}}));
            assert!(request_params(endpoint, &text, None).is_ok());
            let json = obj(json!({"temperature": 0.7, "response_format": {"type": "json_object"}}));
            let e = request_params(endpoint, &json, None)
                .unwrap_err()
                .to_string();
            assert!(e.starts_with("request field `response_format`"), "{e}");
        }
    }

    #[test]
    fn greedy_is_top_k_one_at_temperature_one() {
        let p = parse(&obj(json!({"temperature": 0, "top_k": 0, "top_p": 0.5}))).expect("valid");
        assert_eq!((p.temperature, p.top_k, p.top_p), (1.0, 1, 0.5));
        assert!(p.is_greedy());
        let p = parse(&obj(json!({"temperature": 9e-7}))).expect("valid");
        assert!(p.is_greedy());
        let p = parse(&obj(json!({"temperature": 1e-6}))).expect("valid");
        assert!(!p.is_greedy());
    }

    #[test]
    fn messages_print_ints_as_ints() {
        // SamplingParams does not coerce: SamplingParams(temperature=-1) says "got -1."
        let e = parse(&obj(json!({"temperature": -1}))).unwrap_err();
        assert_eq!(
            e.to_string(),
            "temperature must be a non-negative finite number, got -1."
        );
        let e = parse(&obj(json!({"top_p": 2}))).unwrap_err();
        assert_eq!(e.to_string(), "top_p must be in (0, 1], got 2.");
    }

    #[test]
    fn the_declared_defaults_pass_verify() {
        let d = Raw::default().build().expect("defaults are valid");
        assert_eq!((d.temperature, d.top_k, d.draws), (1.0, TOP_K_ALL, 1));
        assert_eq!(d.to_json(), Map::new());
    }

    #[test]
    fn python_int_reads_keys_like_int() {
        assert_eq!(python_int(" 07 "), Some(7));
        assert_eq!(python_int("-3"), Some(-3));
        assert_eq!(python_int("1_000"), Some(1000));
        assert_eq!(python_int("1__0"), None);
        assert_eq!(python_int("x"), None);
        assert_eq!(python_int(""), None);
    }

    #[test]
    fn duplicate_bias_keys_keep_the_later() {
        let p = parse(&obj(json!({"logit_bias": {"5": 1.0, "05": 2.0}}))).expect("valid");
        // serde_json's Map orders keys: "05" before "5", so "5" is the later.
        assert_eq!(verify_vocab(&p, 10).expect("in vocab"), vec![(5, 1.0)]);
    }

    #[test]
    fn literal_port_of_generate_kwargs() {
        let k = obj(json!({"do_sample": false, "repetition_penalty": 1.3}));
        let p = from_generate(&k).expect("expressible").expect("valid");
        assert!(p.is_greedy());
        let k = obj(json!({"do_sample": true, "top_k": 0}));
        let e = from_generate(&k).expect("expressible").unwrap_err();
        assert_eq!(
            e.to_string(),
            "top_k must be -1 (disable) or at least 1, got 0."
        );
        assert!(from_generate(&obj(json!({"do_sample": true, "typical_p": 0.9}))).is_none());
    }

    /// transformers 5.23.0 `generation/utils.py` adds `TypicalLogitsWarper`
    /// only `if generation_config.do_sample:` (line 1597) and
    /// `typical_p < 1.0` (line 1629), the epsilon warper only for
    /// `0.0 < epsilon_cutoff < 1.0` while sampling (line 1633): these
    /// kwargs change nothing there and port (hf_sampling::Acting; they used
    /// to be refused for `typical_p != 1` or a cutoff in (0, 1)).
    #[test]
    fn warpers_transformers_does_not_run_do_not_block_the_port() {
        for k in [
            json!({"do_sample": true, "typical_p": 1.5}),
            json!({"do_sample": false, "typical_p": 0.9, "epsilon_cutoff": 0.5}),
        ] {
            assert!(from_generate(&obj(k.clone())).is_some(), "{k}");
        }
    }
}
