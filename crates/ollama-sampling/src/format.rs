//! Ollama's constrained output: a request's `format` (native `/api/generate`
//! and `/api/chat`) or `response_format` (OpenAI `/v1/chat/completions`)
//! becomes a grammar the sampler runs under. The rules are the same on every
//! engine that honours it and at every version modelled here:
//!
//! * `FromChatRequest` (openai/openai.go, at f63eea3d2 and v0.33.0-rc2)
//!   turns `response_format` `{"type": "json_object"}` into the format
//!   `"json"` and `{"type": "json_schema", "json_schema": {"schema": S}}`
//!   into `S` (the type lower-cased and trimmed); any other type, and a
//!   `json_schema` without `schema`, set none. `/v1/completions` has no such
//!   field.
//! * The format, a `json.RawMessage`: `null` or `""` is none, `"json"` is
//!   llama.cpp's JSON grammar, an object a JSON schema turned into a
//!   grammar; anything else is refused ("invalid format: …"). Go engine:
//!   llm/server.go `Completion` (v0.6.2 to v0.25.0-rc0, lines 1583-1603 at
//!   f63eea3d2), the grammar run by `sample.NewGrammarSampler`
//!   (runner/ollamarunner/runner.go:886-894); llama-server path:
//!   llm/llama_server.go (v0.30.0 lines 1338-1353, v0.33.0-rc2 1584-1599 and
//!   2308-2330), the grammar or schema sent to llama-server.
//!
//! Grammar-constrained sampling needs the model's vocabulary: such a request
//! is refused as not reproduced, naming the field. The MLX runner does not
//! forward a format at all ([`crate::mlx`]).

use parity_core::Error;
use serde_json::{Map, Value};

/// What a native request's `format` does.
pub(crate) fn native(request: &Map<String, Value>) -> Result<(), Error> {
    match request.get("format") {
        None => Ok(()),
        Some(v) => format("format", v, v),
    }
}

/// What an OpenAI chat request's `response_format` does, through the format
/// `FromChatRequest` makes of it.
pub(crate) fn openai_chat(request: &Map<String, Value>) -> Result<(), Error> {
    let Some(v) = request.get("response_format").filter(|v| !v.is_null()) else {
        return Ok(());
    };
    let Value::Object(rf) = v else {
        return Err(crate::openai::decode_error(
            "ChatCompletionRequest",
            "response_format",
            v,
            "openai.ResponseFormat",
        ));
    };
    let kind = match rf.get("type") {
        None | Some(Value::Null) => "",
        Some(Value::String(t)) => t.as_str(),
        Some(t) => {
            return Err(crate::openai::decode_error(
                "ResponseFormat",
                "type",
                t,
                "string",
            ));
        }
    };
    match kind.trim().to_lowercase().as_str() {
        "json_object" => format("response_format", v, &Value::from("json")),
        "json_schema" => match rf.get("json_schema").and_then(|s| s.get("schema")) {
            Some(schema) => format("response_format", v, schema),
            None => Ok(()),
        },
        _ => Ok(()),
    }
}

/// `format` (what the request sent as `field` = `sent`) as llm/server.go
/// reads it.
fn format(field: &str, sent: &Value, format: &Value) -> Result<(), Error> {
    match format {
        Value::Null => Ok(()),
        Value::String(s) if s.is_empty() => Ok(()),
        Value::String(s) if s == "json" => {
            Err(constrained(field, sent, "llama.cpp's JSON grammar"))
        }
        Value::Object(_) => Err(constrained(
            field,
            sent,
            "a grammar built from this JSON schema",
        )),
        other => Err(Error::new(format_args!(
            "`{field}` = {sent}: Ollama refuses it (invalid format: {:?}; expected \"json\" or a valid JSON Schema object)",
            other.to_string()
        ))),
    }
}

fn constrained(field: &str, sent: &Value, how: &str) -> Error {
    parity_core::params::grammar_constrained(
        field,
        sent,
        &format!("Ollama samples under {how} (`Completion` in llm/server.go, llm/llama_server.go)"),
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().cloned().expect("an object")
    }

    /// llm/server.go at f63eea3d2, lines 1583-1603: null and "" are no
    /// format, "json" and a schema object are grammars, the rest refused.
    #[test]
    fn a_format_is_a_grammar_unless_it_is_null_or_empty() {
        assert!(native(&map(json!({}))).is_ok());
        assert!(native(&map(json!({"format": null}))).is_ok());
        assert!(native(&map(json!({"format": ""}))).is_ok());
        for f in [json!("json"), json!({"type": "object"})] {
            let e = native(&map(json!({ "format": f })))
                .unwrap_err()
                .to_string();
            assert!(e.starts_with("`format` = "), "{e}");
            assert!(e.contains("not reproduced"), "{e}");
        }
        let e = native(&map(json!({"format": "JSON"})))
            .unwrap_err()
            .to_string();
        assert!(e.contains("invalid format: \"\\\"JSON\\\"\""), "{e}");
        let e = native(&map(json!({"format": 5}))).unwrap_err().to_string();
        assert!(e.contains("invalid format: \"5\""), "{e}");
    }

    /// openai/openai.go FromChatRequest: json_object is "json", json_schema
    /// its schema, other types (and a json_schema without one) nothing.
    #[test]
    fn a_json_response_format_becomes_a_format() {
        for rf in [
            json!({"type": "json_object"}),
            json!({"type": " JSON_Object "}),
            json!({"type": "json_schema", "json_schema": {"schema": {"type": "object"}}}),
        ] {
            let e = openai_chat(&map(json!({ "response_format": rf })))
                .unwrap_err()
                .to_string();
            assert!(e.starts_with("`response_format` = "), "{e}");
            assert!(e.contains("not reproduced"), "{e}");
        }
        for rf in [
            json!(null),
            json!({"type": "text"}),
            json!({"type": "json_schema"}),
            json!({"type": "json_schema", "json_schema": {"name": "x"}}),
            json!({}),
        ] {
            assert!(openai_chat(&map(json!({ "response_format": rf }))).is_ok());
        }
        let e = openai_chat(&map(json!({"response_format": "json"})))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("cannot unmarshal string into Go struct field ChatCompletionRequest.response_format of type openai.ResponseFormat"),
            "{e}"
        );
    }
}
