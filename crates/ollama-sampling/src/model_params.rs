//! A model's published parameters (its Modelfile `PARAMETER`s, the
//! `application/vnd.ollama.image.params` layer), read from what
//! `ollama show --parameters` prints: every Ollama engine layers them under
//! a request's options.

use serde_json::{Map, Value};

use parity_core::Error;

use crate::api::{self, Kind};

/// The model's parameters as JSON, from the text `ollama show --parameters`
/// prints (the `parameters` string of `/api/show`): server/routes.go
/// `GetModelInfo` writes one `fmt.Sprintf("%-*s %#v", 30, key, value)` line
/// per parameter, one line per element for a list (`stop`). Values are Go
/// syntax: numbers, `true`/`false`, double-quoted strings. A Modelfile's
/// own `PARAMETER key value` lines are read too (the keyword is
/// case-insensitive: parser/parser.go `isValidCommand` and the command
/// switch lower it, at v0.33.0-rc2 (fb30760); a list option's value may be
/// bare text there). Lines are not checked against Ollama's options here;
/// each engine's `with_model_params` does that.
pub fn model_params_from_show(text: &str) -> Result<Map<String, Value>, Error> {
    let mut out = Map::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let (line, modelfile) = match line.split_once(char::is_whitespace) {
            Some((word, rest)) if word.eq_ignore_ascii_case("PARAMETER") => (rest.trim(), true),
            _ => (line, false),
        };
        let (key, raw) = line.split_once(char::is_whitespace).ok_or_else(|| {
            Error::new(format_args!(
                "`ollama show --parameters` line {}: {line:?} has no value",
                n + 1
            ))
        })?;
        let raw = raw.trim();
        let list = api::option(key).is_some_and(|o| o.kind == Kind::Strings);
        // Go's %#v of a float64, bool or string reads as JSON, except the
        // escapes strconv.Quote has and JSON lacks (\x, \a, \v, \U).
        let value: Value = match serde_json::from_str(raw) {
            Ok(v) => v,
            Err(_) if modelfile && list => Value::String(raw.to_string()),
            Err(_) => {
                return Err(Error::new(format_args!(
                    "`ollama show --parameters` line {}: the value of `{key}`, {raw}, is not a number, boolean or plain quoted string",
                    n + 1
                )));
            }
        };
        if list {
            // A list key only ever holds an array.
            if let Value::Array(items) = out
                .entry(key.to_string())
                .or_insert_with(|| Value::Array(Vec::new()))
            {
                items.push(value);
            }
        } else if out.insert(key.to_string(), value).is_some() {
            return Err(Error::new(format_args!(
                "`ollama show --parameters` line {}: `{key}` appears twice",
                n + 1
            )));
        }
    }
    Ok(out)
}
