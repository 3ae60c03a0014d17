//! mistral.rs request fields (`mistralrs-server-core/src/openai.rs`
//! `ChatCompletionRequest` → `mistralrs-core/src/sampler.rs` `SamplingParams`)
//! and the model-default merge of 0.9.2 (`SamplingParams::fill_model_defaults`,
//! called from `mistralrs-core/src/engine/add_request.rs`).

use parity_core::Error;
use serde_json::{Map, Number, Value};

/// Which mistral.rs sampler to reproduce.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Version {
    /// Tag v0.9.1 (2026-08-14): raw top-p cutoff, frequency/presence over
    /// the whole context, no generation-config merge.
    V0_9_1,
    /// Tag v0.9.2 / commit 9e922623 (2026-08-22): top-p renormalised over
    /// the top-k, frequency/presence over generated ids, merge.
    #[default]
    V0_9_2,
}

impl Version {
    fn as_str(self) -> &'static str {
        match self {
            Self::V0_9_1 => "0.9.1",
            Self::V0_9_2 => "0.9.2",
        }
    }
}

/// The request's sampling fields, as mistral.rs holds them (unset = `None`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MistralRsParams {
    /// Which sampler.
    pub version: Version,
    /// `temperature`; unset means 1.0 (`engine/add_request.rs`:
    /// `temperature.unwrap_or(1.0)`), below 1e-7 means argmax.
    pub temperature: Option<f64>,
    /// `top_k` (a `usize`; 0 is off).
    pub top_k: Option<usize>,
    /// `top_p`, used only strictly between 0 and 1.
    pub top_p: Option<f64>,
    /// `min_p`, used only strictly between 0 and 1.
    pub min_p: Option<f64>,
    /// `frequency_penalty` (f32).
    pub frequency_penalty: Option<f32>,
    /// `presence_penalty` (f32).
    pub presence_penalty: Option<f32>,
    /// `repetition_penalty` (f32).
    pub repetition_penalty: Option<f32>,
    /// `logit_bias`: token id → bias.
    pub logit_bias: Vec<(u32, f32)>,
}

impl MistralRsParams {
    /// The params as JSON (set fields only).
    pub fn to_json(&self) -> Map<String, Value> {
        let mut m = Map::new();
        let f = |v: f64| Number::from_f64(v).map_or(Value::Null, Value::Number);
        if let Some(t) = self.temperature {
            m.insert("temperature".into(), f(t));
        }
        if let Some(k) = self.top_k {
            m.insert("top_k".into(), Value::from(k));
        }
        for (name, v) in [("top_p", self.top_p), ("min_p", self.min_p)] {
            if let Some(v) = v {
                m.insert(name.into(), f(v));
            }
        }
        for (name, v) in [
            ("frequency_penalty", self.frequency_penalty),
            ("presence_penalty", self.presence_penalty),
            ("repetition_penalty", self.repetition_penalty),
        ] {
            if let Some(v) = v {
                m.insert(name.into(), f(f64::from(v)));
            }
        }
        if !self.logit_bias.is_empty() {
            let b: Map<String, Value> = self
                .logit_bias
                .iter()
                .map(|(k, v)| (k.to_string(), f(f64::from(*v))))
                .collect();
            m.insert("logit_bias".into(), Value::Object(b));
        }
        if self.version != Version::default() {
            m.insert("version".into(), Value::from(self.version.as_str()));
        }
        m
    }
}

pub(crate) const FIELDS: &[&str] = &[
    "temperature",
    "top_k",
    "top_p",
    "min_p",
    "frequency_penalty",
    "presence_penalty",
    "repetition_penalty",
    "logit_bias",
    "dry_multiplier",
    "version",
];

fn float(params: &Map<String, Value>, key: &str) -> Result<Option<f64>, Error> {
    match params.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => Ok(n.as_f64()),
        Some(other) => Err(Error::new(format_args!(
            "`{key}` = {other}: invalid type, expected a number (mistral.rs deserialises it as a float)"
        ))),
    }
}

/// Parses the request fields. mistral.rs validates none of their ranges:
/// out-of-range values simply switch a filter off (top-p ≥ 1, min-p ≥ 1)
/// or mean greedy (temperature < 1e-7, 0 included). Only what its deserialiser refuses
/// is refused (a negative or fractional `top_k`, a non-integer bias key).
pub(crate) fn parse(params: &Map<String, Value>) -> Result<MistralRsParams, Error> {
    parity_core::params::refuse_unknown(params, "mistral.rs", FIELDS)?;
    let version = match params.get("version") {
        None | Some(Value::Null) => Version::default(),
        Some(Value::String(s)) if s == "0.9.2" => Version::V0_9_2,
        Some(Value::String(s)) if s == "0.9.1" => Version::V0_9_1,
        Some(other) => {
            return Err(Error::new(format_args!(
                "`version` = {other}: expected \"0.9.2\" or \"0.9.1\""
            )));
        }
    };
    let top_k = match params.get("top_k") {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) => Some(
            n.as_u64()
                .and_then(|k| usize::try_from(k).ok())
                .ok_or_else(|| {
                    Error::new(format_args!("`top_k` = {n}: invalid value, expected usize"))
                })?,
        ),
        Some(other) => {
            return Err(Error::new(format_args!(
                "`top_k` = {other}: invalid type, expected usize"
            )));
        }
    };
    if let Some(d) = float(params, "dry_multiplier")?
        && d != 0.0
    {
        return Err(Error::new(format_args!(
            "`dry_multiplier` = {d}: DRY needs the model's tokenizer for its sequence breakers, which this semantics does not have"
        )));
    }
    let f32_of = |k: &str| float(params, k).map(|v| v.map(|v| v as f32));
    let mut logit_bias = Vec::new();
    match params.get("logit_bias") {
        None | Some(Value::Null) => {}
        Some(Value::Object(o)) => {
            for (k, v) in o {
                let id: u32 = k.parse().map_err(|_| {
                    Error::new(format_args!(
                        "`logit_bias` key \"{k}\": invalid value, expected a u32 token id"
                    ))
                })?;
                let b = v.as_f64().ok_or_else(|| {
                    Error::new(format_args!(
                        "`logit_bias[\"{k}\"]` = {v}: expected a number"
                    ))
                })?;
                logit_bias.push((id, b as f32));
            }
        }
        Some(other) => {
            return Err(Error::new(format_args!(
                "`logit_bias` = {other}: expected an object of token id → bias"
            )));
        }
    }
    Ok(MistralRsParams {
        version,
        temperature: float(params, "temperature")?,
        top_k,
        top_p: float(params, "top_p")?,
        min_p: float(params, "min_p")?,
        frequency_penalty: f32_of("frequency_penalty")?,
        presence_penalty: f32_of("presence_penalty")?,
        repetition_penalty: f32_of("repetition_penalty")?,
        logit_bias,
    })
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
/// the distribution (`max_tokens`, `stop`, `seed`, ...) are dropped.
pub fn request_params(
    request: &Map<String, Value>,
    generation_config: Option<&Map<String, Value>>,
) -> Result<MistralRsParams, Error> {
    let mut own = Map::new();
    for (k, v) in request {
        if FIELDS.contains(&k.as_str()) {
            own.insert(k.clone(), v.clone());
        }
    }
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
