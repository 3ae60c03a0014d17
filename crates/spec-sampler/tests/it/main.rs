//! Integration tests for spec-sampler: one binary, one module per concern.

mod cases;
mod cli;
mod properties;
mod robustness;
mod spec_examples;
mod validation;

use serde_json::{Value, json};
use spec_sampler::{Input, Output, sample};

/// Builds a spec input line from its fields; logits may mix numbers and "-inf".
pub fn line(
    logits: Value,
    temperature: f64,
    top_k: i64,
    top_p: f64,
    repetition_penalty: f64,
    previous_tokens: &[i64],
    u: f64,
) -> Value {
    json!({
        "logits": logits,
        "temperature": temperature,
        "top_k": top_k,
        "top_p": top_p,
        "repetition_penalty": repetition_penalty,
        "previous_tokens": previous_tokens,
        "u": u,
    })
}

/// Validates and samples a JSON input, panicking (in the test) if invalid.
pub fn run(value: &Value) -> Output {
    let input = Input::from_json(value).unwrap_or_else(|e| panic!("invalid test input: {e}"));
    sample(&input)
}

/// Asserts element-wise |actual - expected| ≤ tolerance, printing both on failure.
#[track_caller]
pub fn assert_close(actual: &[f64], expected: &[f64], tolerance: f64) {
    let ok = actual.len() == expected.len()
        && actual
            .iter()
            .zip(expected)
            .all(|(a, e)| (a - e).abs() <= tolerance);
    assert!(
        ok,
        "probs differ by more than {tolerance:e}\n  actual:   {actual:?}\n  expected: {expected:?}"
    );
}
