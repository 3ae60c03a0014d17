//! An OpenAI-style request body read two ways by transformers.
//!
//! - **`generate(**request)`**, the reference `compare request` measures
//!   every engine against: the request's fields that are generate kwargs,
//!   with `do_sample=True` added when the request does not say (a request to
//!   a sampling endpoint means sampling; `generate()` itself decodes greedily
//!   without it) and `do_sample=False` at `temperature` 0 (transformers
//!   refuses temperature 0 while sampling). The model's generation config
//!   sits between these and transformers' defaults, as in `generate()`.
//! - **`transformers serve`** (5.23.0, `transformers/cli/serving/utils.py`
//!   `_build_generation_config` and `serving/chat_completion.py`): a deep
//!   copy of the model's generation config, then `temperature` (0 also sets
//!   `do_sample=False`), `top_p`, `frequency_penalty` as
//!   `repetition_penalty = 1 + frequency_penalty` and `logit_bias` as
//!   `sequence_bias`. Nothing else is read: `top_k`, `min_p`,
//!   `presence_penalty` and `repetition_penalty` are dropped, and
//!   `do_sample` stays what the generation config says (false when it says
//!   nothing), so the server decodes greedily at any temperature.

use serde_json::{Map, Number, Value};

use crate::params::is_generate_kwarg;

/// The generate kwargs `generate(**request)` runs with, and notes on what
/// was added: the request's generate kwargs, `do_sample` added as the
/// module docs say.
pub fn generate_kwargs(request: &Map<String, Value>) -> (Map<String, Value>, Vec<String>) {
    let mut kwargs: Map<String, Value> = request
        .iter()
        .filter(|(k, _)| is_generate_kwarg(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let mut notes = Vec::new();
    if !kwargs.contains_key("do_sample") {
        let greedy = kwargs.get("temperature").and_then(Value::as_f64) == Some(0.0);
        if greedy {
            kwargs.remove("temperature");
            notes.push("temperature 0: do_sample=False (greedy)".to_string());
        } else {
            notes.push("do_sample=True added (generate() is greedy without it)".to_string());
        }
        kwargs.insert("do_sample".into(), Value::Bool(!greedy));
    }
    (kwargs, notes)
}

/// The generate kwargs a port to another engine copies under the same name:
/// `temperature`, `top_p`, `min_p` and `repetition_penalty` when not null,
/// and `top_k` as written (null included: each engine reads "off" its own
/// way). `None` when the kwargs switch on what only transformers has here:
/// `typical_p` other than 1, an epsilon or eta cutoff strictly between 0 and
/// 1, or beam search.
pub fn portable_kwargs(kwargs: &Map<String, Value>) -> Option<Map<String, Value>> {
    let f = |k: &str| kwargs.get(k).and_then(Value::as_f64);
    if f("typical_p").is_some_and(|t| t != 1.0)
        || f("epsilon_cutoff").is_some_and(|e| e > 0.0 && e < 1.0)
        || f("eta_cutoff").is_some_and(|e| e > 0.0 && e < 1.0)
        || kwargs
            .get("num_beams")
            .and_then(Value::as_i64)
            .is_some_and(|b| b > 1)
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

/// The fields `transformers serve` reads from a chat-completions request.
pub(crate) const SERVE_FIELDS: &[&str] =
    &["temperature", "top_p", "frequency_penalty", "logit_bias"];

/// The generate kwargs `transformers serve` builds (over the model's
/// generation config, which the caller merges as `generate()` does), or the
/// field whose value it would fail to convert.
pub(crate) fn serve_kwargs(request: &Map<String, Value>) -> Result<Map<String, Value>, String> {
    let number = |key: &str| -> Result<Option<f64>, String> {
        match request.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v
                .as_f64()
                .map(Some)
                .ok_or_else(|| format!("request field `{key}` = {v} is not a number")),
        }
    };
    let mut kwargs = Map::new();
    if let Some(t) = number("temperature")? {
        kwargs.insert("temperature".into(), float(t));
        if t == 0.0 {
            kwargs.insert("do_sample".into(), Value::Bool(false));
        }
    }
    if let Some(p) = number("top_p")? {
        kwargs.insert("top_p".into(), float(p));
    }
    if let Some(f) = number("frequency_penalty")? {
        kwargs.insert("repetition_penalty".into(), float(1.0 + f));
    }
    match request.get("logit_bias") {
        None | Some(Value::Null) => {}
        Some(Value::Object(bias)) => {
            // `{(int(k),): v for k, v in logit_bias.items()}`: one-token sequences.
            let mut pairs = Vec::new();
            for (id, b) in bias {
                let id: i64 = id.trim().parse().map_err(|_| {
                    format!("request field `logit_bias` key {id:?} is not an integer")
                })?;
                pairs.push(Value::Array(vec![
                    Value::Array(vec![Value::from(id)]),
                    b.clone(),
                ]));
            }
            kwargs.insert("sequence_bias".into(), Value::Array(pairs));
        }
        Some(v) => return Err(format!("request field `logit_bias` = {v} is not an object")),
    }
    Ok(kwargs)
}

fn float(x: f64) -> Value {
    Number::from_f64(x).map_or(Value::Null, Value::Number)
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
        assert_eq!(notes.len(), 1);
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
        assert!(portable_kwargs(&map(json!({"typical_p": 0.9}))).is_none());
        assert!(portable_kwargs(&map(json!({"eta_cutoff": 0.001}))).is_none());
        assert!(portable_kwargs(&map(json!({"num_beams": 2}))).is_none());
    }

    #[test]
    fn serve_reads_four_fields() {
        // frequency_penalty 0.3 -> repetition_penalty 1 + 0.3 = 1.3.
        let k = serve_kwargs(&map(json!({
            "temperature": 0.7, "top_k": 40, "frequency_penalty": 0.3, "logit_bias": {"5": -2.0}
        })))
        .expect("valid");
        assert_eq!(
            Value::Object(k),
            json!({"temperature": 0.7, "repetition_penalty": 1.3, "sequence_bias": [[[5], -2.0]]})
        );
        let k = serve_kwargs(&map(json!({"temperature": 0.0}))).expect("valid");
        assert_eq!(
            Value::Object(k),
            json!({"temperature": 0.0, "do_sample": false})
        );
        assert_eq!(
            serve_kwargs(&map(json!({"top_p": "high"}))).unwrap_err(),
            "request field `top_p` = \"high\" is not a number"
        );
    }
}
