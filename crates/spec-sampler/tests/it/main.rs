//! Integration tests for spec-sampler: one binary, one module per concern.

mod cases;
mod cli;
mod properties;
mod robustness;
mod spec_examples;
mod validation;

use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};
use spec_sampler::{Input, Output, sample};

/// The `spec-sampler` binary built for these tests.
pub const BIN: &str = env!("CARGO_BIN_EXE_spec-sampler");

/// Starts the binary with `args` and its three standard streams piped.
pub fn spawn(args: &[&str]) -> Child {
    Command::new(BIN)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn spec-sampler")
}

/// A spec input line for `logits` (numbers and "-inf") with neutral
/// parameters: temperature 1, top_k 0, top_p 1, repetition_penalty 1, no
/// previous tokens, u 0. Each case sets only the parameters it is about.
pub fn line(logits: Value) -> Line {
    Line {
        logits,
        temperature: 1.0,
        top_k: 0,
        top_p: 1.0,
        repetition_penalty: 1.0,
        previous_tokens: Vec::new(),
        u: 0.0,
    }
}

/// A spec input line under construction; see [`line`].
pub struct Line {
    logits: Value,
    temperature: f64,
    top_k: i64,
    top_p: f64,
    repetition_penalty: f64,
    previous_tokens: Vec<i64>,
    u: f64,
}

impl Line {
    pub fn temperature(self, temperature: f64) -> Self {
        Self {
            temperature,
            ..self
        }
    }

    pub fn top_k(self, top_k: i64) -> Self {
        Self { top_k, ..self }
    }

    pub fn top_p(self, top_p: f64) -> Self {
        Self { top_p, ..self }
    }

    pub fn repetition_penalty(self, repetition_penalty: f64) -> Self {
        Self {
            repetition_penalty,
            ..self
        }
    }

    pub fn previous_tokens(self, previous_tokens: &[i64]) -> Self {
        Self {
            previous_tokens: previous_tokens.to_vec(),
            ..self
        }
    }

    pub fn u(self, u: f64) -> Self {
        Self { u, ..self }
    }

    /// The line as the spec's JSON object.
    pub fn json(&self) -> Value {
        json!({
            "logits": self.logits,
            "temperature": self.temperature,
            "top_k": self.top_k,
            "top_p": self.top_p,
            "repetition_penalty": self.repetition_penalty,
            "previous_tokens": self.previous_tokens,
            "u": self.u,
        })
    }

    /// The validated input, panicking (in the test) if invalid.
    pub fn input(&self) -> Input {
        Input::from_json(&self.json()).unwrap_or_else(|e| panic!("invalid test input: {e}"))
    }

    /// Validates and samples the line.
    pub fn run(&self) -> Output {
        sample(&self.input())
    }
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
