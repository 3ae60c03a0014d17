//! Refusals name the field and quote the bad value; the edges the engine
//! itself fails on fail here too.

use ollama_sampling::OllamaGo;
use parity_core::{Context, Logits, Semantics};
use serde_json::{Value, json};

fn parse(v: Value) -> Result<ollama_sampling::OllamaOptions, String> {
    OllamaGo::default()
        .parse_params(v.as_object().expect("object"))
        .map_err(|e| e.to_string())
}

fn dist(logits: &[f32], params: Value) -> Result<parity_core::Distribution, String> {
    let p = parse(params)?;
    let ctx = Context::new(&[], None).expect("context");
    OllamaGo::default()
        .distribution(&Logits::from_f32(logits), &ctx, &p)
        .map_err(|e| e.to_string())
}

#[test]
fn bad_values_are_quoted() {
    assert_eq!(
        parse(json!({"top_p": "high"})).unwrap_err(),
        "`top_p` = \"high\": Ollama refuses it (option \"top_p\" must be of type float32)"
    );
    assert_eq!(
        parse(json!({"seed": true})).unwrap_err(),
        "`seed` = true: Ollama refuses it (option \"seed\" must be of type integer)"
    );
    let e = parse(json!({"topk": 5})).unwrap_err();
    assert!(e.starts_with("unknown option `topk` (= 5;"), "{e}");
    assert!(
        parse(json!({"min_p": -1e300}))
            .unwrap_err()
            .contains("-Inf")
    );
    assert_eq!(
        parse(json!({"draws": 2.5})).unwrap_err(),
        "`draws` = 2.5: must be an integer from 0 to 1000000 (how many seeded draws to replay)"
    );
}

#[test]
fn draws_need_a_seed_and_nan_sums_fail() {
    let e = dist(&[1.0, 2.0], json!({"draws": 3})).unwrap_err();
    assert!(e.starts_with("`draws` needs a `seed`"), "{e}");
    let e = dist(&[f32::NEG_INFINITY; 3], json!({})).unwrap_err();
    assert!(e.contains("sample: logits sum to NaN"), "{e}");
    // greedy never computes a sum: token 0, as greedy() returns tokens[0]
    let d = dist(&[f32::NEG_INFINITY; 3], json!({"temperature": 0})).expect("greedy");
    assert_eq!(d.kept(), &[0]);
    let e = dist(&[], json!({})).unwrap_err();
    assert!(e.contains("no logits provided"), "{e}");
}

#[test]
fn penalties_and_context_change_nothing() {
    let logits = [3.0, 2.0, 2.0, 1.0, 0.5, -1.0, 0.0, 1.5];
    let plain = parse(json!({"seed": 7, "draws": 10})).expect("valid");
    let penalised = parse(json!({"seed": 7, "draws": 10, "repeat_penalty": 2.0,
        "presence_penalty": 1.5, "frequency_penalty": 1.0, "repeat_last_n": -1, "typical_p": 0.2}))
    .expect("accepted");
    let ids = [0i64, 0, 1, 2, 7];
    let with = Context::new(&ids, Some(2)).expect("context");
    let without = Context::new(&[], None).expect("context");
    let l = Logits::from_f32(&logits);
    let a = OllamaGo::default()
        .distribution(&l, &without, &plain)
        .expect("plain");
    let b = OllamaGo::default()
        .distribution(&l, &with, &penalised)
        .expect("penalised");
    assert_eq!(a, b);
}

#[test]
fn versions_outside_the_go_sampler_are_refused() {
    let e = parse(json!({"version": "0.5.13"})).unwrap_err();
    assert!(
        e.starts_with("`version` = \"0.5.13\": Ollama before v0.6.2"),
        "{e}"
    );
    let e = parse(json!({"version": "v0.30.0"})).unwrap_err();
    assert!(e.contains("use the `ollama` semantics"), "{e}");
    assert_eq!(
        parse(json!({"version": "0.17"})).unwrap_err(),
        "`version` = \"0.17\": expected an Ollama release such as \"0.17.5\" or \"0.25.0-rc0\""
    );
    assert_eq!(
        parse(json!({"version": 17})).unwrap_err(),
        "`version` = 17: expected a string such as \"0.17.5\""
    );
    // v0.17.5 – v0.17.8-rc1 default repeat_penalty to 1.0; the rest to 1.1
    let p = parse(json!({"version": "0.17.8-rc1"})).expect("penalty era");
    assert_eq!(
        (p.repeat_penalty, p.version.has_go_penalties()),
        (1.0, true)
    );
    let p = parse(json!({"version": "0.17.8-rc2"})).expect("reverted");
    assert_eq!(
        (p.repeat_penalty, p.version.has_go_penalties()),
        (1.1, false)
    );
}

/// `compare semantics`' list is derived from `OllamaOptions`; each listed
/// default, written out, is what the parser does with the field left out.
#[test]
fn the_listed_params_and_defaults_are_the_parsers() {
    use parity_core::Semantics;
    let go = ollama_sampling::OllamaGo::default();
    assert_eq!(parity_core::params::defaults_agree(&go), Ok(()));
    let names: Vec<_> = go.info().params.iter().map(|p| p.name).collect();
    assert_eq!(names, ollama_sampling::OllamaOptions::FIELDS);
}
