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
//! (both dropped, both refused with the same words, or run with the same
//! params), the endpoint does not read the field.

use anyhow::bail;
use parity_core::AnySemantics;
use serde_json::{Map, Value};

/// A field name no engine reads.
const NONCE: &str = "compare_request_no_such_field";

/// The smallest similarity (strsim's normalised Damerau-Levenshtein, 1 for
/// equal names) of a suggestion: one edit in a 4-letter name.
const SIMILAR: f64 = 0.75;

/// How each endpoint reads `{name: value}`: whether it drops the field,
/// and its refusal or what it runs with (its params described: a field an
/// endpoint neither drops nor refuses may still set them, as a generate
/// kwarg does for `generate(**request)`), with `NONCE` written as `name` (so
/// that a refusal naming the field reads the same for both names).
fn reading(
    semantics: &[Box<dyn AnySemantics>],
    config: Option<&Map<String, Value>>,
    name: &str,
    value: &Value,
    shown_as: &str,
) -> Vec<(bool, Result<String, String>)> {
    let request = Map::from_iter([(name.to_string(), value.clone())]);
    semantics
        .iter()
        .flat_map(|s| s.prepare_request(&request, config))
        .map(|route| {
            let dropped = route.ignored.iter().any(|k| k == name);
            let read = match route.params {
                Ok(p) => Ok(format!("{:?}", p.describe())),
                Err(e) => Err(e.to_string()),
            }
            .map_err(|e| e.replace(NONCE, shown_as));
            (dropped, read)
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// transformers' readings of a request (`generate(**request)` and
    /// `transformers serve`), and a toy server that reads `top_k` and
    /// `top_p` (`transformers serve` refuses `top_k`).
    fn semantics() -> Vec<Box<dyn AnySemantics>> {
        vec![
            Box::new(hf_sampling::HfRust::new(None)),
            crate::toy::server("toy", &["top_k", "top_p"]),
        ]
    }

    fn map(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            other => panic!("not an object: {other}"),
        }
    }

    fn refusal(request: Value, params: &[Option<&Value>]) -> Option<String> {
        refuse_unknown(&semantics(), &map(request), None, params)
            .err()
            .map(|e| e.to_string())
    }

    const ANYWAY: &str =
        "(--allow-unknown runs the request anyway; every endpoint drops such a field)";

    #[test]
    fn fields_some_endpoint_reads_pass() {
        assert_eq!(refusal(json!({}), &[]), None);
        assert_eq!(
            refusal(json!({"temperature": 0.7, "top_p": 0.9, "top_k": 20}), &[]),
            None
        );
    }

    #[test]
    fn a_typo_is_refused_with_the_nearest_field_read() {
        assert_eq!(
            refusal(json!({"temprature": 0.7, "top_p": 0.9}), &[]),
            Some(format!(
                "request field \"temprature\": no endpoint reads it; did you mean temperature?\n{ANYWAY}"
            ))
        );
    }

    #[test]
    fn a_field_near_nothing_is_refused_without_a_suggestion() {
        assert_eq!(
            refusal(json!({"zzzz_qqqq": 1, "b": 2}), &[]),
            Some(format!(
                "request field \"b\": no endpoint reads it\n\
                 request field \"zzzz_qqqq\": no endpoint reads it\n{ANYWAY}"
            ))
        );
    }

    #[test]
    fn equally_near_suggestions_go_alphabetically() {
        // top_k and top_p are one substitution away, and read: top_k first.
        let words = vocabulary(&[]);
        assert_eq!(
            nearest(&semantics(), None, "top_q", &json!(1), &words).as_deref(),
            Some("top_k")
        );
    }

    #[test]
    fn a_suggestion_is_a_field_some_endpoint_reads() {
        // `temperatur` is nearer to `temperatu` than `temperature`, but no
        // endpoint reads it.
        let params = json!({"temperatur": 1.0});
        let words = vocabulary(&[Some(&params)]);
        assert!(words.contains(&"temperatur".to_string()));
        assert_eq!(
            nearest(&semantics(), None, "temperatu", &json!(1.0), &words).as_deref(),
            Some("temperature")
        );
        // A name is never its own suggestion.
        assert_eq!(
            nearest(&semantics(), None, "temperatur", &json!(1.0), &words).as_deref(),
            Some("temperature")
        );
    }

    #[test]
    fn the_vocabulary_holds_generate_kwargs_and_the_endpoints_params() {
        let a = json!({"n_probs": 0, "sampler": {"penalty_last_n": 64}});
        let b = json!({"n_probs": 1});
        let words = vocabulary(&[Some(&a), None, Some(&b), Some(&json!("not an object"))]);
        for w in [
            "temperature",
            "top_k",
            "n_probs",
            "sampler",
            "penalty_last_n",
        ] {
            assert!(words.contains(&w.to_string()), "{w}: {words:?}");
        }
        let mut sorted = words.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(words, sorted, "sorted, each once");
    }

    /// A generate kwarg only `generate(**request)` reads (`epsilon_cutoff`):
    /// that route neither drops nor refuses it, nor a field it leaves out,
    /// but its params differ. It used to be refused as read by no endpoint.
    #[test]
    fn a_kwarg_only_the_reference_reads_is_not_unknown() {
        let semantics: Vec<Box<dyn AnySemantics>> = vec![Box::new(hf_sampling::HfRust::new(None))];
        let request = Map::from_iter([("epsilon_cutoff".to_string(), Value::from(0.1))]);
        // The reference reads it: its params carry it.
        let routes = semantics[0].prepare_request(&request, None);
        let reference = routes[0].params.as_ref().expect("generate() accepts it");
        assert!(
            format!("{:?}", reference.describe()).contains("epsilon_cutoff"),
            "the reference runs with epsilon_cutoff"
        );
        // Fails: refused as "no endpoint reads it" (and so is
        // `compare request '{"epsilon_cutoff": 0.1}'` with the whole
        // registry, while with --allow-unknown the reference shows
        // `epsilon_cutoff 0.1` among its values).
        assert!(
            refuse_unknown(&semantics, &request, None, &[]).is_ok(),
            "epsilon_cutoff is read by generate(**request)"
        );
    }
}
