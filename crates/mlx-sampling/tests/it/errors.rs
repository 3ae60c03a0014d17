//! Parameter errors name the field and quote the bad value.

use mlx_sampling::MlxLm;
use parity_core::{Context, Logits, Semantics};
use serde_json::{Map, Value, json};

fn parse(v: Value) -> Result<mlx_sampling::MlxParams, String> {
    let m: Map<String, Value> = v.as_object().cloned().unwrap_or_default();
    MlxLm.parse_params(&m).map_err(|e| e.to_string())
}

#[test]
fn unknown_field_is_named_with_its_value() {
    let e = parse(json!({"repeat_penalty": 1.3})).unwrap_err();
    assert!(
        e.starts_with("unknown field `repeat_penalty` (= 1.3) for mlx-lm"),
        "{e}"
    );
}

#[test]
fn bad_values_quote_the_field() {
    for (params, want) in [
        (
            json!({"draws": -2}),
            "`draws` = -2: must be a non-negative integer",
        ),
        (
            json!({"seed": -1}),
            "`seed` = -1: mx.random.seed takes an unsigned 64-bit integer",
        ),
        (
            json!({"xtc_special_tokens": [1, "a"]}),
            "`xtc_special_tokens[1]` must be an integer token id, got \"a\"",
        ),
        (
            json!({"logit_bias": {"3": null}}),
            "`logit_bias[\"3\"]` = null: float() raises TypeError",
        ),
        (
            json!({"temperature": "hot"}),
            "temperature must be of type ('float', 'int')",
        ),
    ] {
        let e = parse(params.clone()).unwrap_err();
        assert!(e.starts_with(want), "{params}: {e}");
    }
}

#[test]
fn out_of_vocabulary_ids_are_refused_with_the_id() {
    let logits = Logits::from_f32(&[1.0, 2.0, 3.0]);
    let ids = [0, 7];
    let ctx = Context::new(&ids, None).expect("context");
    let p = parse(json!({"temperature": 1, "repetition_penalty": 1.2})).expect("valid");
    let e = MlxLm
        .distribution(&logits, &ctx, &p)
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("context id 7 is outside the vocabulary of 3"),
        "{e}"
    );
    let p = parse(json!({"temperature": 1, "logit_bias": {"-1": 2}})).expect("valid");
    let e = MlxLm
        .distribution(&logits, &ctx, &p)
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("logit_bias id -1 is outside the vocabulary"),
        "{e}"
    );
}

#[test]
fn top_k_at_the_vocabulary_size_raises_like_mlx() {
    let logits = Logits::from_f32(&[1.0, 2.0, 3.0]);
    let ctx = Context::new(&[], None).expect("context");
    let p = parse(json!({"temperature": 1, "top_k": 3})).expect("valid");
    let e = MlxLm
        .distribution(&logits, &ctx, &p)
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "`top_k` has to be an integer in the (0, 3) interval, but is 3."
    );
}

/// `compare semantics`' list is derived from `MlxParams`; each listed
/// default, written out, is what the parser does with the field left out.
#[test]
fn the_listed_params_and_defaults_are_the_parsers() {
    use parity_core::Semantics;
    assert_eq!(
        parity_core::params::defaults_agree(&mlx_sampling::MlxLm),
        Ok(())
    );
    let names: Vec<_> = mlx_sampling::MlxLm
        .info()
        .params
        .iter()
        .map(|p| p.name)
        .collect();
    assert_eq!(names, mlx_sampling::MlxParams::FIELDS);
}
