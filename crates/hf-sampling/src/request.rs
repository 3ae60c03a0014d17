//! An OpenAI-style request body read two ways by transformers.
//!
//! - **`generate(**request)`**, the reference `compare request` measures
//!   every engine against ([`generate_reference`]). The real `model.generate(**body)`
//!   raises on most OpenAI fields: a kwarg that is neither a generation
//!   parameter nor a model input is refused by `_validate_model_kwargs`
//!   (transformers 5.23.0, `generation/utils.py`: `ValueError: The following
//!   `model_kwargs` are not used by the model: ['frequency_penalty', 'seed']`),
//!   unless its value is `None`. So the reference is `generate()` with the
//!   request's generation parameters only, and [`Reference::removed`] says
//!   which fields were left out and why ([`Removal`]): what `dist`, `diff`
//!   and `translate` report as an error (they call `generate()` with the
//!   kwargs as given) is what `compare request` has to leave out to compute
//!   a reference at all. `do_sample=True` is added when the request does not
//!   say (a request to a sampling endpoint means sampling; `generate()`
//!   itself decodes greedily without it), and `temperature` 0 becomes
//!   `do_sample=False` (transformers refuses temperature 0 while sampling).
//!   The model's generation config sits between these and transformers'
//!   defaults, as in `generate()`.
//! - **`transformers serve`** (5.23.0): [`crate::serve_request`], which refuses
//!   (HTTP 422) the fields `generate()` would accept, such as `top_k`.
//!
//! [`routes`] is both as compare routes: the reference first, then one per
//! serve endpoint. The reference notes where transformers 4.57.6 would
//! sample differently for the same request and model file
//! ([`crate::version::differences`]).

use parity_core::{Endpoint, Route, not_sampling};
use serde_json::{Map, Value};

use crate::params::{GenerationConfig, GenerationParams, is_generate_kwarg, resolve};
use crate::serve::{ServeEndpoint, serve_request};

/// Why [`generate_reference`] leaves a request field out of `generate(**request)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Removal {
    /// What the model reads (`model`, `messages`, `prompt`, `suffix`,
    /// `tools`): the fixture supplies the context and the logits instead.
    Input,
    /// Not a generation parameter, so `generate()` raises on it, and it
    /// does not change one step's distribution (`max_tokens`, `stream`,
    /// `n`, `stop`, `seed`, ...).
    NotSampling,
    /// Not a generation parameter, so `generate()` raises on it, yet a
    /// server that reads it samples differently (`frequency_penalty`,
    /// `presence_penalty`, `logit_bias`, ...): the reference runs without
    /// it, and a server that applies it differs from the reference by it.
    NotAKwarg,
    /// `temperature` 0: transformers refuses it while sampling, so the
    /// reference decodes greedily (`do_sample=False`) instead.
    GreedyTemperature,
}

/// A field [`generate_reference`] left out, and why.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Removed {
    /// The request field.
    pub field: String,
    /// Why.
    pub reason: Removal,
}

impl Removed {
    /// The reason in words, for a report line (`field: reason`).
    pub fn text(&self) -> String {
        let raises = format!(
            "not a generate() kwarg: generate(**request) raises \"ValueError: The following \
             `model_kwargs` are not used by the model: ['{}']\"",
            self.field
        );
        match self.reason {
            Removal::Input => "the input, not a sampling setting: the fixture supplies the \
                               context and logits"
                .into(),
            Removal::NotSampling => {
                format!("{raises}; it does not change one step's distribution")
            }
            Removal::NotAKwarg => format!(
                "{raises}; the reference runs without it, so a server that applies it differs \
                 from the reference by it"
            ),
            Removal::GreedyTemperature => "temperature 0: transformers refuses it while sampling; \
                                           the reference decodes greedily (do_sample=False)"
                .into(),
        }
    }
}

/// What [`generate_reference`] runs `generate()` with.
#[derive(Debug, Clone, PartialEq)]
pub struct Reference {
    /// The generate kwargs.
    pub kwargs: Map<String, Value>,
    /// Request fields left out, in request order.
    pub removed: Vec<Removed>,
    /// What was added, in words (`do_sample`).
    pub added: Vec<String>,
}

/// Request fields that are the model's input rather than a setting.
const INPUTS: &[&str] = &[
    "model",
    "messages",
    "prompt",
    "suffix",
    "tools",
    "tool_choice",
];

/// `generate(**request)` as the reference runs it: see the module docs.
pub fn generate_reference(request: &Map<String, Value>) -> Reference {
    let mut kwargs = Map::new();
    let mut removed = Vec::new();
    for (k, v) in request {
        let reason = if is_generate_kwarg(k) {
            None
        } else if INPUTS.contains(&k.as_str()) {
            Some(Removal::Input)
        } else if v.is_null() {
            // `_validate_model_kwargs` skips None values: generate() accepts it.
            None
        } else if not_sampling(k) {
            Some(Removal::NotSampling)
        } else {
            Some(Removal::NotAKwarg)
        };
        match reason {
            Some(reason) => removed.push(Removed {
                field: k.clone(),
                reason,
            }),
            None => {
                kwargs.insert(k.clone(), v.clone());
            }
        }
    }
    let mut added = Vec::new();
    if !kwargs.contains_key("do_sample") {
        let greedy = kwargs.get("temperature").and_then(Value::as_f64) == Some(0.0);
        if greedy {
            kwargs.remove("temperature");
            removed.push(Removed {
                field: "temperature".into(),
                reason: Removal::GreedyTemperature,
            });
        } else {
            added.push("do_sample=True added (generate() is greedy without it)".to_string());
        }
        kwargs.insert("do_sample".into(), Value::Bool(!greedy));
    }
    Reference {
        kwargs,
        removed,
        added,
    }
}

/// The generate kwargs `generate(**request)` runs with, and notes on what
/// was added and left out ([`generate_reference`] in words).
pub fn generate_kwargs(request: &Map<String, Value>) -> (Map<String, Value>, Vec<String>) {
    let r = generate_reference(request);
    let mut notes = r.added;
    notes.extend(
        r.removed
            .iter()
            .filter(|m| m.reason != Removal::Input)
            .map(|m| format!("{} left out: {}", m.field, m.text())),
    );
    (r.kwargs, notes)
}

/// The reference route: `generate(**request)`, a library call.
pub const GENERATE: Endpoint = Endpoint::Call("transformers generate(**request)");

/// Every way transformers reads `request`, as compare routes: the
/// reference `generate(**request)` (over `config`, the model's generation
/// config), then `transformers serve` on each endpoint of
/// [`ServeEndpoint::ALL`] for a model with that generation config.
pub fn routes(
    request: &Map<String, Value>,
    config: Option<&GenerationConfig>,
) -> Vec<Route<GenerationParams>> {
    let (kwargs, notes) = generate_kwargs(request);
    let mut generate = Route::new(
        GENERATE,
        resolve(&kwargs, config).map_err(parity_core::Error::new),
    );
    generate.notes = notes;
    // The reference is 5.23.0's; where 4.57.6 reads the same request and
    // model file differently, say so.
    generate
        .notes
        .extend(crate::version::differences(&kwargs, config));
    let mut out = vec![generate];
    out.extend(
        ServeEndpoint::ALL
            .iter()
            .map(|&e| serve_request(e, request, config).into_route()),
    );
    out
}

/// The generate kwargs a port to another engine copies under the same name:
/// `temperature`, `top_p`, `min_p` and `repetition_penalty` when not null,
/// and `top_k` as written (null included: each engine reads "off" its own
/// way). `None` when the kwargs switch on what only transformers has here
/// ([`crate::Acting`]): the typical, epsilon or eta warper (only while
/// sampling; `typical_p` acts below 1, the cutoffs strictly between 0 and 1),
/// or beam search (`num_beams` other than 1).
pub fn portable_kwargs(kwargs: &Map<String, Value>) -> Option<Map<String, Value>> {
    let acting = crate::Acting::of(kwargs);
    if ["typical_p", "epsilon_cutoff", "eta_cutoff", "num_beams"]
        .iter()
        .any(|k| acting.acts(k))
    {
        return None;
    }
    let mut m = Map::new();
    for k in ["temperature", "top_p", "min_p", "repetition_penalty"] {
        if let Some(v) = kwargs.get(k).filter(|v| !v.is_null()) {
            m.insert(k.into(), v.clone());
        }
    }
    if let Some(v) = kwargs.get("top_k") {
        m.insert("top_k".into(), v.clone());
    }
    Some(m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().cloned().expect("object")
    }

    #[test]
    fn generate_adds_do_sample_and_keeps_only_kwargs() {
        let (k, notes) = generate_kwargs(&map(json!({
            "temperature": 0.7, "top_p": 0.9, "frequency_penalty": 0.5, "messages": []
        })));
        assert_eq!(
            Value::Object(k),
            json!({"temperature": 0.7, "top_p": 0.9, "do_sample": true})
        );
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(notes[1].starts_with("frequency_penalty left out: not a generate() kwarg"));
        let (k, _) = generate_kwargs(&map(json!({"temperature": 0})));
        assert_eq!(Value::Object(k), json!({"do_sample": false}));
    }

    #[test]
    fn portable_kwargs_copy_same_named_fields_or_refuse() {
        let k = portable_kwargs(&map(json!({
            "do_sample": true, "temperature": 0.7, "top_k": null, "top_p": null, "typical_p": 1.0
        })))
        .expect("portable");
        assert_eq!(Value::Object(k), json!({"temperature": 0.7, "top_k": null}));
        let sampling = |k: &str, v: f64| map(json!({"do_sample": true, k: v}));
        assert!(portable_kwargs(&sampling("typical_p", 0.9)).is_none());
        assert!(portable_kwargs(&sampling("eta_cutoff", 0.001)).is_none());
        assert!(portable_kwargs(&map(json!({"num_beams": 2}))).is_none());
    }

    /// transformers 5.23.0 `generation/utils.py` line 1629 adds
    /// `TypicalLogitsWarper` only `if typical_p is not None and typical_p < 1.0`,
    /// and line 1597 only while sampling: `typical_p` 1.5, or 0.9 without
    /// `do_sample`, changes nothing, so the kwargs port (they used to be
    /// refused for `typical_p != 1`). `num_beams` 0 is not `None` or 1, so
    /// `get_generation_mode` (configuration_utils.py line 551) picks beam
    /// search (it used to count as no beams).
    #[test]
    fn portable_kwargs_follow_transformers_rule() {
        let port = |v: Value| portable_kwargs(&map(v));
        assert!(port(json!({"do_sample": true, "typical_p": 1.5})).is_some());
        assert!(port(json!({"do_sample": false, "typical_p": 0.9})).is_some());
        assert!(port(json!({"typical_p": 0.9, "epsilon_cutoff": 0.5})).is_some());
        assert!(port(json!({"do_sample": true, "epsilon_cutoff": 0.5})).is_none());
        assert!(port(json!({"num_beams": 0})).is_none());
    }
}
