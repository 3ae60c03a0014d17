//! Bad requests are refused as llama-server refuses them, naming the field.

use llamacpp_sampling::LlamaCpp;
use parity_core::{Context, Logits, Semantics};
use serde_json::{Value, json};

fn parse_err(v: Value) -> String {
    LlamaCpp
        .parse_params(v.as_object().expect("object"))
        .expect_err("refused")
        .to_string()
}

fn run(v: Value, logits: &[f32], ids: &[i64]) -> Result<parity_core::Distribution, String> {
    let params = LlamaCpp
        .parse_params(v.as_object().expect("object"))
        .map_err(|e| e.to_string())?;
    let ctx = Context::new(ids, None).map_err(|e| e.to_string())?;
    LlamaCpp
        .distribution(&Logits::from_f32(logits), &ctx, &params)
        .map_err(|e| e.to_string())
}

#[test]
fn negative_repeat_last_n_is_an_error_not_the_whole_context() {
    let e = parse_err(json!({"repeat_last_n": -1}));
    assert_eq!(
        e,
        "`repeat_last_n` = -1: llama-server refuses it (Value must be between 0 <= value <= 2147483647, but got -1)"
    );
}

#[test]
fn wrong_types_unknown_fields_and_model_features() {
    assert!(parse_err(json!({"temperature": "hot"})).starts_with("`temperature` = \"hot\""));
    assert!(parse_err(json!({"tempreature": 0.7})).starts_with("unknown field `tempreature`"));
    assert!(parse_err(json!({"ignore_eos": true})).starts_with("`ignore_eos` = true"));
    assert!(parse_err(json!({"stream": 1})).starts_with("`stream` = 1"));
    assert!(parse_err(json!({"samplers": ["top_k", 3]})).starts_with("`samplers[1]` = 3"));
    assert!(parse_err(json!({"draws": -3})).starts_with("`draws` = -3"));
    assert!(parse_err(json!({"draws": 1u64 << 40})).contains("at most 10000000 draws"));
    assert!(parse_err(json!({"min_keep": -1})).starts_with("`min_keep` = -1"));
}

#[test]
fn refusals_at_chain_build_name_the_field() {
    let logits = [3.0, 2.0, 1.0];
    let e = run(json!({"repeat_penalty": 0}), &logits, &[]).expect_err("refused");
    assert!(e.starts_with("`repeat_penalty` = 0"), "{e}");
    let e = run(json!({"dry_multiplier": 0.8}), &logits, &[]).expect_err("refused");
    assert!(e.starts_with("`dry_multiplier` = 0.8"), "{e}");
    let e = run(json!({"mirostat": 2}), &logits, &[]).expect_err("refused");
    assert!(e.starts_with("`mirostat` = 2"), "{e}");
    let e = run(json!({}), &logits, &[0, 3]).expect_err("refused");
    assert!(e.starts_with("`input_ids[1]` = 3"), "{e}");
    let e = run(json!({"draws": 5}), &logits, &[]).expect_err("refused");
    assert!(e.starts_with("`draws` needs a `seed`"), "{e}");
}

#[test]
fn hand_computed_default_chain() {
    // logits [3, 2, 1]: top_k 40 keeps all, top_p 0.95 on softmax
    // [0.665, 0.245, 0.090] keeps all three (0.665 + 0.245 = 0.910 < 0.95),
    // min_p 0.05 keeps logit >= 3 + ln 0.05 = 0.004, so all; temperature 0.8:
    // p ∝ e^(3/0.8), e^(2/0.8), e^(1/0.8) = [0.7200, 0.2060, 0.0740] (approx.)
    let d = run(json!({}), &[3.0, 2.0, 1.0], &[]).expect("runs");
    let z = (3.75f64).exp() + (2.5f64).exp() + (1.25f64).exp();
    let want = [(3.75f64).exp() / z, (2.5f64).exp() / z, (1.25f64).exp() / z];
    for (a, b) in d.probs().iter().zip(want) {
        assert!((a - b).abs() < 1e-6, "{a} vs {b}");
    }
    // greedy keeps the first maximum in array order. With the default chain
    // top_k 40 first partial-sorts [1, 3, 3] (std::partial_sort, heap based:
    // make_heap leaves [a0, a1, a2], sort_heap gives [a1, a2, a0] then
    // [a2, a1, a0]), so the tied maximum that comes first is id 2 ...
    let d = run(json!({"temperature": 0}), &[1.0, 3.0, 3.0], &[]).expect("runs");
    assert_eq!(d.kept(), &[2]);
    // ... while with no filter the array stays in id order and id 1 wins.
    let d = run(
        json!({"temperature": 0, "top_k": 0, "top_p": 1, "min_p": 0}),
        &[1.0, 3.0, 3.0],
        &[],
    )
    .expect("runs");
    assert_eq!(d.kept(), &[1]);
}

#[test]
fn the_penalty_window_includes_the_prompt() {
    // ids [0] repeated: repeat_penalty 2 halves logit 3 of id 0 -> 1.5, so with
    // temperature 0 the argmax moves to id 1 (2.0).
    let d = run(
        json!({"repeat_penalty": 2.0, "temperature": 0}),
        &[3.0, 2.0, 1.0],
        &[0],
    )
    .expect("runs");
    assert_eq!(d.kept(), &[1]);
    // outside the window (last 1 id is 2): no change
    let d = run(
        json!({"repeat_penalty": 2.0, "temperature": 0, "repeat_last_n": 1}),
        &[3.0, 2.0, 1.0],
        &[0, 2],
    )
    .expect("runs");
    assert_eq!(d.kept(), &[0]);
}

#[test]
fn a_seed_without_draws_replays_the_one_token_the_server_samples() {
    // llama-server samples one token per step with the request's seed: the
    // first of the N tokens a fresh chain with that seed returns.
    let logits = [3.0, 2.0, 2.0, 1.0];
    let one = run(json!({"seed": 42}), &logits, &[]).expect("runs");
    let five = run(json!({"seed": 42, "draws": 5}), &logits, &[]).expect("runs");
    let first = five.tokens().expect("five tokens")[0];
    assert_eq!(one.tokens(), Some(&[first][..]));
    // No seed, or -1 (a random seed per request): nothing to replay.
    for v in [json!({}), json!({"seed": -1})] {
        assert_eq!(run(v, &logits, &[]).expect("runs").tokens(), None);
    }
    // An explicit count still wins.
    let none = run(json!({"seed": 42, "draws": 0}), &logits, &[]).expect("runs");
    assert_eq!(none.tokens(), Some(&[][..]));
}

/// `compare semantics`' lists are derived from the request type; each
/// listed default, written out, is what the parser does with the field
/// left out.
#[test]
fn the_listed_params_and_defaults_are_the_parsers() {
    use parity_core::Semantics;
    assert_eq!(
        parity_core::params::defaults_agree(&llamacpp_sampling::LlamaCpp),
        Ok(())
    );
    let names: Vec<_> = llamacpp_sampling::LlamaCpp
        .info()
        .params
        .iter()
        .map(|p| p.name)
        .collect();
    assert_eq!(names.len(), 39, "{names:?}");
}
