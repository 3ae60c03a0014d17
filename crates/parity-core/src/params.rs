//! Pieces of params parsing that several engines' parsers share: refusing a
//! field the semantics does not read, and Python's `int(str)`, which the
//! servers written in Python apply to `logit_bias` keys.

use serde_json::{Map, Value};

use crate::semantics::Error;

/// The error for a params field `key` (= `value`) that `engine`'s semantics
/// does not read, listing the ones it does (`known`).
pub fn unknown_field(engine: &str, key: &str, value: &Value, known: &[&str]) -> Error {
    Error::new(format_args!(
        "unknown field `{key}` (= {value}) for {engine}; known: {}",
        known.join(", ")
    ))
}

/// Refuses `params` when one of its fields is not in `known`: the
/// [`unknown_field`] error for the first such field.
pub fn refuse_unknown(
    params: &Map<String, Value>,
    engine: &str,
    known: &[&str],
) -> Result<(), Error> {
    match params.iter().find(|(k, _)| !known.contains(&k.as_str())) {
        Some((k, v)) => Err(unknown_field(engine, k, v, known)),
        None => Ok(()),
    }
}

/// Python's `int(s)` for a string: surrounding whitespace, an optional
/// sign, decimal digits with single underscores between them. `None` where
/// Python raises (or the value does not fit an `i64`).
pub fn python_int(s: &str) -> Option<i64> {
    let t = s.trim();
    let (neg, digits) = match t.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    if digits.is_empty()
        || digits.starts_with('_')
        || digits.ends_with('_')
        || digits.contains("__")
        || !digits.chars().all(|c| c.is_ascii_digit() || c == '_')
    {
        return None;
    }
    let n: i64 = digits.replace('_', "").parse().ok()?;
    Some(if neg { -n } else { n })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_first_unknown_field_is_named_with_its_value() {
        let params = json!({"top_p": 0.9, "top_kk": 4});
        let params = params.as_object().cloned().unwrap_or_default();
        assert_eq!(refuse_unknown(&params, "e", &["top_p", "top_kk"]), Ok(()));
        assert_eq!(
            refuse_unknown(&params, "e", &["top_p", "top_k"])
                .unwrap_err()
                .to_string(),
            "unknown field `top_kk` (= 4) for e; known: top_p, top_k"
        );
    }
}
