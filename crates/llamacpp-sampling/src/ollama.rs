//! Ollama's `options`, turned into the llama-server request Ollama sends.
//!
//! From the Ollama source at commit fb30760996871fa9460115c753afd2c60d4ab0f7
//! (tag v0.33.0-rc2):
//!
//! * api/types.go `DefaultOptions`: temperature 0.8, top_k 40, top_p 0.9,
//!   typical_p 1.0, repeat_last_n 64, repeat_penalty 1.0, presence_penalty
//!   0, frequency_penalty 0, seed -1; `min_p` is not set there, so it is 0.
//! * api/types.go `Options.FromMap`: JSON numbers arrive as float64; an int
//!   option takes `int64(value)` (truncation), a float32 option
//!   `float32(value)`; a value of the wrong JSON type is an error
//!   (`option "top_k" must be of type integer`); `null` keeps the default;
//!   an unknown option is logged and ignored (refused here, as everywhere in
//!   this project).
//! * llm/llama_server.go `llamaServerCompletionRequest`: Ollama sends
//!   `temperature`, `top_k`, `top_p`, `min_p`, `repeat_penalty`,
//!   `repeat_last_n`, `frequency_penalty`, `presence_penalty` and `seed`
//!   always, and `typical_p` only when it is not 0 (`omitempty`), to the
//!   llama-server it launched (which parses them as [`crate::params`] says).
//!   Go's JSON encoder cannot write an infinite float32, so such a request
//!   fails in Ollama.
//!
//! Ollama pins llama.cpp b10488 (LLAMA_CPP_VERSION) for that llama-server;
//! the chain replayed is the one of llama.cpp 0c1e57098 (see the crate docs).

use serde_json::{Map, Number, Value};

use parity_core::Error;

/// The options this semantics accepts, and whether each is an integer.
pub(crate) const OPTIONS: &[(&str, bool)] = &[
    ("temperature", false),
    ("top_k", true),
    ("top_p", false),
    ("min_p", false),
    ("typical_p", false),
    ("repeat_last_n", true),
    ("repeat_penalty", false),
    ("presence_penalty", false),
    ("frequency_penalty", false),
    ("seed", true),
];

/// The sampling fields of Ollama's `ChatCompletionRequest` (openai/openai.go
/// at fb3076099); Go's JSON decoder drops every other field unread.
pub(crate) const OPENAI_FIELDS: &[&str] = &[
    "temperature",
    "top_p",
    "frequency_penalty",
    "presence_penalty",
];

/// The `options` Ollama's OpenAI endpoint builds from a chat-completions
/// request (`FromChatRequest`): `temperature` and `top_p` as sent or 1.0
/// (not Ollama's own 0.8 and 0.9), the two penalties and `seed` as sent;
/// everything else keeps Ollama's defaults. Notes say which defaults bit.
pub(crate) fn openai_options(request: &Map<String, Value>) -> (Map<String, Value>, Vec<String>) {
    let mut options = Map::new();
    let mut notes = Vec::new();
    for field in ["temperature", "top_p"] {
        match request.get(field) {
            Some(v) if !v.is_null() => {
                options.insert(field.into(), v.clone());
            }
            _ => {
                options.insert(field.into(), Value::from(1.0));
                notes.push(format!("{field} 1.0: this endpoint's default when absent"));
            }
        }
    }
    for field in ["frequency_penalty", "presence_penalty", "seed"] {
        if let Some(v) = request.get(field).filter(|v| !v.is_null()) {
            options.insert(field.into(), v.clone());
        }
    }
    notes.push("top_k 40 (Ollama's default; the endpoint has no top_k field)".to_string());
    (options, notes)
}

/// Go's `int64(f)` on amd64: truncation; out of range gives the minimum.
fn go_int(f: f64) -> i64 {
    if f > -9.223_372_036_854_776e18 && f < 9.223_372_036_854_776e18 {
        f as i64
    } else {
        i64::MIN
    }
}

/// The llama-server request for these Ollama options (plus `draws`, passed
/// through for replay).
pub(crate) fn request(options: &Map<String, Value>) -> Result<Map<String, Value>, Error> {
    let mut ints: Vec<(&str, i64)> = vec![("top_k", 40), ("repeat_last_n", 64), ("seed", -1)];
    let mut floats: Vec<(&str, f32)> = vec![
        ("temperature", 0.8),
        ("top_p", 0.9),
        ("min_p", 0.0),
        ("typical_p", 1.0),
        ("repeat_penalty", 1.0),
        ("presence_penalty", 0.0),
        ("frequency_penalty", 0.0),
    ];
    let mut draws = None;
    for (key, val) in options {
        if key == "draws" {
            draws = Some(val.clone());
            continue;
        }
        let Some(&(_, is_int)) = OPTIONS.iter().find(|(n, _)| n == key) else {
            return Err(Error::new(format_args!(
                "unknown option `{key}` (Ollama would log \"invalid option provided\" and ignore it; known sampling options: {})",
                OPTIONS.iter().map(|o| o.0).collect::<Vec<_>>().join(", ")
            )));
        };
        if val.is_null() {
            continue;
        }
        let Some(f) = val.as_f64() else {
            let kind = if is_int { "integer" } else { "float32" };
            return Err(Error::new(format_args!(
                "`{key}` = {val}: Ollama refuses it (option \"{key}\" must be of type {kind})"
            )));
        };
        if is_int {
            if let Some(slot) = ints.iter_mut().find(|(n, _)| n == key) {
                slot.1 = go_int(f);
            }
        } else if let Some(slot) = floats.iter_mut().find(|(n, _)| n == key) {
            slot.1 = f as f32;
        }
    }
    let mut out = Map::new();
    for (name, v) in floats {
        if !v.is_finite() {
            return Err(Error::new(format_args!(
                "`{name}` is infinite as a float32: Ollama cannot send it (json: unsupported value: {})",
                if v > 0.0 { "+Inf" } else { "-Inf" }
            )));
        }
        if name == "typical_p" && v == 0.0 {
            continue; // omitempty
        }
        let n = Number::from_f64(f64::from(v)).unwrap_or_else(|| Number::from(0));
        out.insert(name.to_string(), Value::Number(n));
    }
    for (name, v) in ints {
        out.insert(name.to_string(), Value::Number(Number::from(v)));
    }
    if let Some(d) = draws {
        out.insert("draws".to_string(), d);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn empty_options_send_ollamas_defaults() {
        let r = request(&Map::new()).expect("defaults");
        let v = Value::Object(r);
        assert_eq!(v["top_k"], json!(40));
        assert_eq!(v["min_p"], json!(0.0));
        assert_eq!(v["seed"], json!(-1));
        // 0.9 and 0.8 as float32, widened exactly
        assert_eq!(v["top_p"], json!(f64::from(0.9f32)));
        assert_eq!(v["temperature"], json!(f64::from(0.8f32)));
        assert_eq!(v["typical_p"], json!(1.0));
    }

    #[test]
    fn ints_truncate_typical_zero_is_omitted_and_types_are_checked() {
        let o = json!({"top_k": 7.9, "typical_p": 0});
        let r = request(o.as_object().expect("object")).expect("ok");
        assert_eq!(r["top_k"], json!(7));
        assert!(!r.contains_key("typical_p"));
        let o = json!({"top_k": "7"});
        let e = request(o.as_object().expect("object"))
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "`top_k` = \"7\": Ollama refuses it (option \"top_k\" must be of type integer)"
        );
        let o = json!({"num_ctx": 4096});
        assert!(request(o.as_object().expect("object")).is_err());
    }
}
