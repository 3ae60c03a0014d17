//! Request fields that no endpoint reads: a typo such as `temprature` would
//! otherwise run as the request without it (every server drops it) and show
//! as "ignores: temprature" once per endpoint. `compare request` refuses
//! such a field, naming the nearest field some endpoint does read, unless
//! `--allow-unknown`. A field that some servers read and others drop is not
//! unknown: those run as before.
//!
//! Whether an endpoint reads a field is the engine's own answer: the field
//! alone is routed through every semantics ([`AnySemantics::prepare_request`])
//! and compared with a name no engine knows. Where the two are read alike
//! (both dropped, both refused with the same words), the endpoint does not
//! read the field.

use anyhow::bail;
use parity_core::AnySemantics;
use serde_json::{Map, Value};

/// A field name no engine reads.
const NONCE: &str = "compare_request_no_such_field";

/// The smallest similarity (strsim's normalised Damerau-Levenshtein, 1 for
/// equal names) of a suggestion: one edit in a 4-letter name.
const SIMILAR: f64 = 0.75;

/// How each endpoint reads `{name: value}`: whether it drops the field, and
/// its refusal, with `NONCE` written as `name` (so that a refusal naming
/// the field reads the same for both names).
fn reading(
    semantics: &[Box<dyn AnySemantics>],
    config: Option<&Map<String, Value>>,
    name: &str,
    value: &Value,
    shown_as: &str,
) -> Vec<(bool, Option<String>)> {
    let request = Map::from_iter([(name.to_string(), value.clone())]);
    semantics
        .iter()
        .flat_map(|s| s.prepare_request(&request, config))
        .map(|route| {
            let dropped = route.ignored.iter().any(|k| k == name);
            let refusal = route
                .params
                .err()
                .map(|e| e.to_string().replace(NONCE, shown_as));
            (dropped, refusal)
        })
        .collect()
}

/// Whether some endpoint reads `name` (given `value`) otherwise than a
/// field no engine knows.
fn read_by_some(
    semantics: &[Box<dyn AnySemantics>],
    config: Option<&Map<String, Value>>,
    name: &str,
    value: &Value,
) -> bool {
    reading(semantics, config, name, value, name) != reading(semantics, config, NONCE, value, name)
}

/// Field names to suggest: transformers' generate kwargs and the params
/// every endpoint runs with (their names are mostly the request's).
fn vocabulary(params: &[Option<&Value>]) -> Vec<String> {
    let mut names: Vec<String> = hf_sampling::resolve(&Map::new(), None)
        .map(|p| p.as_kwargs().keys().cloned().collect())
        .unwrap_or_default();
    for p in params.iter().flatten() {
        if let Value::Object(fields) = p {
            for (key, value) in fields.iter() {
                names.push(key.clone());
                if let Value::Object(inner) = value {
                    names.extend(inner.keys().cloned());
                }
            }
        }
    }
    names.sort_unstable();
    names.dedup();
    names
}

/// The field some endpoint reads that is nearest to `name`, if one is near.
fn nearest(
    semantics: &[Box<dyn AnySemantics>],
    config: Option<&Map<String, Value>>,
    name: &str,
    value: &Value,
    vocabulary: &[String],
) -> Option<String> {
    let mut near: Vec<(f64, &String)> = vocabulary
        .iter()
        .map(|word| (strsim::normalized_damerau_levenshtein(name, word), word))
        .filter(|(similarity, word)| *similarity >= SIMILAR && *word != name)
        .collect();
    near.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    near.into_iter()
        .map(|(_, word)| word)
        .find(|word| read_by_some(semantics, config, word, value))
        .cloned()
}

/// Fails, naming each field of `request` that no endpoint reads and the
/// nearest one that some endpoint does; `params` are the endpoints' params
/// for the whole request (their field names are suggestions too).
pub(crate) fn refuse_unknown(
    semantics: &[Box<dyn AnySemantics>],
    request: &Map<String, Value>,
    config: Option<&Map<String, Value>>,
    params: &[Option<&Value>],
) -> anyhow::Result<()> {
    let unknown: Vec<(&String, &Value)> = request
        .iter()
        .filter(|(name, value)| !read_by_some(semantics, config, name, value))
        .collect();
    if unknown.is_empty() {
        return Ok(());
    }
    let words = vocabulary(params);
    let lines: Vec<String> = unknown
        .iter()
        .map(|(name, value)| {
            let field = Value::String((*name).clone());
            match nearest(semantics, config, name, value, &words) {
                Some(near) => {
                    format!("request field {field}: no endpoint reads it; did you mean {near}?")
                }
                None => format!("request field {field}: no endpoint reads it"),
            }
        })
        .collect();
    bail!(
        "{}\n(--allow-unknown runs the request anyway; every endpoint drops such a field)",
        lines.join("\n")
    )
}
