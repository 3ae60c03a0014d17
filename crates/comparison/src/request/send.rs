//! "What to send": for each endpoint, the request fields that bring that
//! server to transformers' distribution for the request, or why no request
//! can. Each answer is proven the way `compare translate --to` proves its
//! setups: the endpoint's reading of the proposed request runs on the same
//! fixtures as the table, beside the reference (transformers'
//! `generate(**request)`), and only a proposal that gives the same
//! distribution on every one of them is printed as one to send.
//!
//! Nothing here knows an engine: which of transformers' values are in play
//! is hf-sampling's answer (the processors it builds), and how a server reads
//! a request is its semantics' [`parity_core::Semantics::from_request`].

use parity_core::{AnySemantics, Comparison, Context, Distribution, Logits};
use serde::Serialize;
use serde_json::{Map, Value};

use super::super::report::Verdict;
use super::super::report::rows::verdict;

/// One fixture's logits and context, with the reference's distribution.
pub(crate) struct Proving<'a> {
    /// The fixture's name.
    pub name: &'a str,
    /// Its logits.
    pub logits: &'a Logits,
    /// Its context.
    pub context: &'a Context<'a>,
    /// transformers' distribution for the request.
    pub reference: &'a Distribution,
}

/// What to send to one endpoint.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Send {
    /// The endpoint ([`super::Endpoint::endpoint`]).
    pub endpoint: parity_core::Endpoint,
    /// The fields to add to (or change in) the request; empty when the
    /// request already gives transformers' distribution there. `null` when
    /// no request can (`cannot` says why).
    pub send: Option<Map<String, Value>>,
    /// Why no request brings it to transformers' distribution.
    pub cannot: Option<String>,
}

/// transformers' values that change its distribution, as request fields:
/// every resolved value of `params` (the reference's params, as its
/// semantics describes them) for which transformers builds a processor,
/// with `temperature 0` for greedy decoding (the OpenAI API's greedy
/// request).
pub(crate) fn in_play(params: &Map<String, Value>) -> Map<String, Value> {
    let greedy = params.get("do_sample") == Some(&Value::Bool(false));
    if greedy {
        return Map::from_iter([("temperature".to_string(), Value::from(0.0))]);
    }
    // Each value alone, with top-k's default 50 turned off: does
    // transformers build a processor for it?
    let alone = |key: &str, value: &Value| {
        let mut kwargs = Map::from_iter([
            ("do_sample".to_string(), Value::Bool(true)),
            ("top_k".to_string(), Value::from(0)),
        ]);
        kwargs.insert(key.to_string(), value.clone());
        hf_sampling::resolve(&kwargs, None)
            .ok()
            .and_then(|p| p.processor_names().ok())
            .is_some_and(|names| !names.is_empty())
    };
    params
        .iter()
        .filter(|(key, value)| *key != "do_sample" && alone(key, value))
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect()
}

/// How the endpoint `endpoint` of `semantics` reads `request`: its
/// distribution on every fixture and the fields of `needed` it drops, or
/// why it does not run.
fn reading(
    semantics: &dyn AnySemantics,
    endpoint: parity_core::Endpoint,
    request: &Map<String, Value>,
    config: Option<&Map<String, Value>>,
    needed: &Map<String, Value>,
    fixtures: &[Proving<'_>],
) -> Result<(Vec<Distribution>, Vec<String>), String> {
    let route = semantics
        .prepare_request(request, config)
        .into_iter()
        .find(|r| r.endpoint == endpoint)
        .ok_or_else(|| format!("{endpoint} does not read this request"))?;
    let dropped: Vec<String> = needed
        .keys()
        .filter(|k| route.ignored.contains(k))
        .cloned()
        .collect();
    let prepared = route
        .params
        .map_err(|e| format!("it refuses {}: {e}", Value::Object(request.clone())))?;
    let dists = fixtures
        .iter()
        .map(|f| {
            prepared
                .distribution(f.logits, f.context)
                .map_err(|e| format!("{}: {e}", f.name))
        })
        .collect::<Result<_, _>>()?;
    Ok((dists, dropped))
}

/// Whether `dists` are the reference's on every fixture; the first fixture
/// where not, with its TV.
fn differs(dists: &[Distribution], fixtures: &[Proving<'_>]) -> Option<String> {
    for (d, f) in dists.iter().zip(fixtures) {
        let cmp = match Comparison::new(f.reference.probs(), d.probs()) {
            Ok(cmp) => cmp,
            Err(e) => return Some(format!("{}: {e}", f.name)),
        };
        if verdict(&cmp, None) != Verdict::Same {
            return Some(format!("{} (TV {:.2e})", f.name, cmp.tv));
        }
    }
    None
}

/// What to send to `endpoint` (of `semantics`) so that it samples from
/// transformers' distribution for `request`: `in_play` added to the
/// request, then each added field dropped again where the proof holds
/// without it.
pub(crate) fn what_to_send(
    semantics: &dyn AnySemantics,
    endpoint: parity_core::Endpoint,
    request: &Map<String, Value>,
    config: Option<&Map<String, Value>>,
    in_play: &Map<String, Value>,
    fixtures: &[Proving<'_>],
) -> Send {
    let cannot = |why: String| Send {
        endpoint,
        send: None,
        cannot: Some(why),
    };
    let mut full = request.clone();
    let mut added: Vec<String> = Vec::new();
    for (key, value) in in_play {
        if full.get(key) != Some(value) {
            full.insert(key.clone(), value.clone());
            added.push(key.clone());
        }
    }
    match reading(semantics, endpoint, &full, config, in_play, fixtures) {
        Err(why) => return cannot(why),
        Ok((dists, dropped)) => match (differs(&dists, fixtures), dropped.as_slice()) {
            (None, _) => {}
            (Some(_), [one]) => return cannot(format!("it has no {one} field")),
            (Some(_), [_, _, ..]) => {
                return cannot(format!("it has no {} fields", dropped.join(", ")));
            }
            (Some(at), []) => {
                return cannot(format!(
                    "even sent every value transformers uses, it differs on {at}"
                ));
            }
        },
    }
    // The smallest proposal: drop each added field the proof holds without.
    let mut kept = full.clone();
    for key in &added {
        let mut without = kept.clone();
        match request.get(key) {
            Some(original) => without.insert(key.clone(), original.clone()),
            None => without.remove(key),
        };
        let holds = reading(semantics, endpoint, &without, config, &Map::new(), fixtures)
            .is_ok_and(|(dists, _)| differs(&dists, fixtures).is_none());
        if holds {
            kept = without;
        }
    }
    let send = added
        .iter()
        .filter(|k| kept.get(*k) != request.get(*k))
        .filter_map(|k| kept.get(k).map(|v| (k.clone(), v.clone())))
        .collect();
    Send {
        endpoint,
        send: Some(send),
        cannot: None,
    }
}

/// The advice in words: `send top_k 50, min_p 0.1`, `send it as is`, or
/// `cannot: it has no top_k field`.
pub(crate) fn text(send: &Send) -> String {
    match (&send.send, &send.cannot) {
        (Some(fields), _) if fields.is_empty() => "send it as is".to_string(),
        (Some(fields), _) => {
            let list: Vec<String> = fields.iter().map(|(k, v)| format!("{k} {v}")).collect();
            format!("send {}", list.join(", "))
        }
        (None, Some(why)) => format!("cannot: {why}"),
        (None, None) => "cannot".to_string(),
    }
}

/// What to send to every endpoint of `routes` but the first (the reference,
/// which the caller has checked runs), proven on the fixture `files`.
pub(crate) fn advise(
    semantics: &[Box<dyn AnySemantics>],
    request: &Map<String, Value>,
    config: Option<&Map<String, Value>>,
    routes: &[super::Routed<'_>],
    files: &[std::path::PathBuf],
) -> anyhow::Result<Vec<Send>> {
    use anyhow::Context as _;
    let Some(((first, Ok(reference)), rest)) = routes.split_first() else {
        anyhow::bail!("transformers refuses the request");
    };
    let loaded = files
        .iter()
        .map(|path| parity_core::Fixture::load(path).map_err(anyhow::Error::from))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let cases = loaded
        .iter()
        .map(|fx| super::super::report::rows::Case::fixture(fx, None))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let logits: Vec<Logits> = cases.iter().map(|c| Logits::from_f32(c.logits)).collect();
    let references = cases
        .iter()
        .zip(&logits)
        .map(|(c, l)| {
            reference
                .distribution(l, &c.context)
                .with_context(|| format!("{}: transformers' distribution", c.origin))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let fixtures: Vec<Proving<'_>> = cases
        .iter()
        .zip(&logits)
        .zip(&references)
        .map(|((c, l), r)| Proving {
            name: &c.name,
            logits: l,
            context: &c.context,
            reference: r,
        })
        .collect();
    let params = match &first.params {
        Some(Value::Object(p)) => p.clone(),
        _ => Map::new(),
    };
    let wanted = in_play(&params);
    Ok(rest
        .iter()
        .filter_map(|(e, _)| {
            let s = semantics.iter().find(|s| s.info().name == e.semantics)?;
            Some(what_to_send(
                &**s, e.endpoint, request, config, &wanted, &fixtures,
            ))
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            other => panic!("not an object: {other}"),
        }
    }

    fn send(send: Option<Value>, cannot: Option<&str>) -> Send {
        Send {
            endpoint: parity_core::Endpoint::Call("f()"),
            send: send.map(map),
            cannot: cannot.map(str::to_string),
        }
    }

    #[test]
    fn the_advice_in_words() {
        assert_eq!(text(&send(Some(json!({})), None)), "send it as is");
        assert_eq!(
            text(&send(Some(json!({"top_k": 50, "min_p": 0.1})), None)),
            "send min_p 0.1, top_k 50"
        );
        assert_eq!(
            text(&send(None, Some("it has no top_k field"))),
            "cannot: it has no top_k field"
        );
        assert_eq!(text(&send(None, None)), "cannot");
    }

    #[test]
    fn greedy_decoding_is_sent_as_temperature_zero() {
        assert_eq!(
            in_play(&map(
                json!({"do_sample": false, "temperature": 0.7, "top_k": 50})
            )),
            map(json!({"temperature": 0.0}))
        );
    }

    #[test]
    fn only_values_transformers_builds_a_processor_for_are_in_play() {
        let params = map(json!({
            "do_sample": true,
            "temperature": 0.7,
            "top_k": 50,
            "top_p": 1.0,
            "min_p": null,
            "typical_p": 1.0,
            "repetition_penalty": 1.0,
        }));
        assert_eq!(
            in_play(&params),
            map(json!({"temperature": 0.7, "top_k": 50}))
        );
        let params = map(json!({
            "do_sample": true,
            "temperature": 1.0,
            "top_k": 0,
            "top_p": 0.9,
            "min_p": 0.05,
            "repetition_penalty": 1.3,
        }));
        assert_eq!(
            in_play(&params),
            map(json!({"top_p": 0.9, "min_p": 0.05, "repetition_penalty": 1.3}))
        );
    }
}
