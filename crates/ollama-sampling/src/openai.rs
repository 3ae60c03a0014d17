//! Ollama's OpenAI-compatible layer (`openai/openai.go`, `FromChatRequest`
//! and `FromCompleteRequest`): how a `/v1/chat/completions` or
//! `/v1/completions` body becomes Ollama options, with Go's JSON decoder's
//! type checks and its 400 texts, as at f63eea3d2 (the Go engine). The MLX
//! runner's routes ([`crate::mlx`], fb3076099, v0.33.0-rc2) call
//! these too: the options it builds are the same there, and the one check
//! fb3076099's openai.go adds (a `stop` item that is not a string is a 400)
//! is in [`crate::mlx::request`], which applies it before this layer.

use parity_core::Error;
use serde_json::{Map, Value};

parity_core::body! {
    /// The fields of Ollama's OpenAI `ChatCompletionRequest` and
    /// `CompletionRequest` (`openai/openai.go`) that become options; Go's
    /// JSON decoder drops every other field unread for sampling.
    pub struct OpenaiBody {
        /// Read into options ([`chat_options`], [`completion_options`]).
        options: OpenaiOptions { temperature, top_p, seed, frequency_penalty, presence_penalty },
    }
}

/// Whether the OpenAI layer reads body field `field` into options (for a
/// route's ignored fields): the same on both endpoints and every engine.
pub(crate) fn reads(field: &str) -> bool {
    OpenaiOptions::FIELDS.contains(&field)
}

/// The Go type a JSON value must decode into, named for the error.
pub(crate) fn decode_error(strukt: &str, field: &str, val: &Value, go_type: &str) -> Error {
    let kind = match val {
        Value::Bool(_) => "bool".to_string(),
        Value::String(_) => "string".to_string(),
        Value::Array(_) => "array".to_string(),
        Value::Object(_) => "object".to_string(),
        Value::Number(n) => format!("number {n}"),
        Value::Null => "null".to_string(),
    };
    Error::new(format_args!(
        "`{field}` = {val}: Ollama answers 400 (json: cannot unmarshal {kind} into Go struct field {strukt}.{field} of type {go_type})"
    ))
}

/// A `*float64` / `*float32` / `*int` field of an OpenAI request body, as Go's
/// JSON decoder reads it: absent or null → `None`.
pub(crate) fn field(
    request: &Map<String, Value>,
    strukt: &str,
    name: &str,
    go_type: &str,
) -> Result<Option<Value>, Error> {
    let Some(v) = request.get(name).filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    let ok = match go_type {
        "int" => v.as_i64().is_some(),
        "float32" => v.as_f64().is_some_and(|f| (f as f32).is_finite()),
        _ => v.as_f64().is_some(),
    };
    if ok {
        Ok(Some(v.clone()))
    } else {
        Err(decode_error(strukt, name, v, go_type))
    }
}

/// `FromChatRequest`'s options for a chat-completions body.
pub fn chat_options(request: &Map<String, Value>) -> Result<Map<String, Value>, Error> {
    const S: &str = "ChatCompletionRequest";
    let mut options = Map::new();
    for name in ["temperature", "top_p"] {
        let v = field(request, S, name, "float64")?.unwrap_or(Value::from(1.0));
        options.insert(name.into(), v);
    }
    if let Some(v) = field(request, S, "seed", "int")? {
        options.insert("seed".into(), v);
    }
    for name in ["frequency_penalty", "presence_penalty"] {
        if let Some(v) = field(request, S, name, "float64")? {
            options.insert(name.into(), v);
        }
    }
    Ok(options)
}

/// `FromCompleteRequest`'s options for a completions body.
pub fn completion_options(request: &Map<String, Value>) -> Result<Map<String, Value>, Error> {
    const S: &str = "CompletionRequest";
    let mut options = Map::new();
    let t = field(request, S, "temperature", "float32")?.unwrap_or(Value::from(1.0));
    options.insert("temperature".into(), t);
    if let Some(v) = field(request, S, "seed", "int")? {
        options.insert("seed".into(), v);
    }
    for name in ["frequency_penalty", "presence_penalty"] {
        let v = field(request, S, name, "float32")?.unwrap_or(Value::from(0.0));
        options.insert(name.into(), v);
    }
    let p = field(request, S, "top_p", "float32")?
        .filter(|_| !completion_top_p_defaulted(request))
        .unwrap_or(Value::from(1.0));
    options.insert("top_p".into(), p);
    Ok(options)
}

/// Whether `FromCompleteRequest` sends its own top_p 1.0 for `request`:
/// `if r.TopP != 0.0` on the float32 the decoder made of it, so an absent,
/// `null` or (as a float32) zero `top_p`.
pub(crate) fn completion_top_p_defaulted(request: &Map<String, Value>) -> bool {
    request
        .get("top_p")
        .is_none_or(|v| v.is_null() || v.as_f64().is_some_and(|p| p as f32 == 0.0))
}

#[cfg(test)]
mod tests {
    /// Each field of the request body is declared in one group only.
    #[test]
    fn the_request_body_declares_each_field_once() {
        assert_eq!(parity_core::body::repeated(OpenaiBody::FIELDS), None);
    }

    use super::*;
    use serde_json::json;

    /// `CompletionRequest.TopP` is a float32: a top_p that rounds to 0 there
    /// is `r.TopP == 0.0`, so the endpoint sends 1.0.
    #[test]
    fn completions_top_p_is_tested_as_the_float32() {
        let top_p = |v: Value| {
            let o = completion_options(v.as_object().expect("object")).expect("valid");
            o["top_p"].clone()
        };
        assert_eq!(top_p(json!({"top_p": 1e-50})), json!(1.0));
        assert_eq!(top_p(json!({"top_p": 0})), json!(1.0));
        assert_eq!(top_p(json!({"top_p": 0.5})), json!(0.5));
    }
}
