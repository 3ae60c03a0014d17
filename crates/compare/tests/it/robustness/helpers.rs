//! Helpers the robustness tests share: `compare dist` on JSON lines, its
//! answers and errors, and record builders for each semantics.

use serde_json::Value;

use crate::helpers::{run, text_lossy};

/// `compare dist --semantics <semantics>` on these lines: the exit status, one
/// parsed answer per non-blank line, and stderr.
pub fn dist(semantics: &str, lines: &[&str]) -> (Option<i32>, Vec<Value>, String) {
    let input = lines.join("\n").into_bytes();
    let out = run(&["dist", "--semantics", semantics], input);
    let stderr = text_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    let answers: Vec<Value> = text_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    let records = lines.iter().filter(|l| !l.trim().is_empty()).count();
    assert_eq!(answers.len(), records, "one answer per record:\n{stderr}");
    (out.status.code(), answers, stderr)
}

/// Asserts every answer is an error containing the matching needle, and that
/// stderr names each line number.
#[track_caller]
pub fn all_errors(semantics: &str, cases: &[(&str, &str)]) {
    let lines: Vec<&str> = cases.iter().map(|c| c.0).collect();
    let (status, answers, stderr) = dist(semantics, &lines);
    assert_eq!(status, Some(1), "{semantics}: an invalid record exits 1");
    for (i, ((line, needle), answer)) in cases.iter().zip(&answers).enumerate() {
        let message = answer["error"]
            .as_str()
            .unwrap_or_else(|| panic!("{semantics}: {line}\nexpected an error, got {answer}"));
        assert!(
            message.contains(needle),
            "{semantics}: {line}\nexpected {needle:?} in {message:?}"
        );
        let at = format!("error: line {}: ", i + 1);
        assert!(stderr.contains(&at), "{semantics}: no `{at}` in\n{stderr}");
    }
}

/// Runs one valid record and returns its answer.
#[track_caller]
pub fn answer(semantics: &str, line: &str) -> Value {
    let (status, answers, stderr) = dist(semantics, &[line]);
    assert_eq!(
        status,
        Some(0),
        "{semantics}: {line}\n{stderr}\n{answers:?}"
    );
    answers.into_iter().next().expect("one answer")
}

#[track_caller]
pub fn probs(answer: &Value) -> Vec<f64> {
    serde_json::from_value(answer["probs"].clone())
        .unwrap_or_else(|e| panic!("probs are numbers ({e}): {answer}"))
}

/// Element-wise |a - e| ≤ tol, printing both vectors on failure.
#[track_caller]
pub fn assert_close(actual: &[f64], expected: &[f64], tol: f64) {
    let ok = actual.len() == expected.len()
        && actual
            .iter()
            .zip(expected)
            .all(|(a, e)| (a - e).abs() <= tol);
    assert!(
        ok,
        "differ by more than {tol:e}\n  actual:   {actual:?}\n  expected: {expected:?}"
    );
}

pub const SPEC: &str =
    r#""temperature": 1.0, "top_k": 0, "top_p": 1.0, "repetition_penalty": 1.0, "u": 0.5"#;

pub fn hf(params: &str) -> String {
    format!(r#"{{"logits": [1.0, 0.0, -1.0], "params": {params}}}"#)
}

pub fn spec(params: &str) -> String {
    format!(r#"{{"logits": [1.0, 0.0, -1.0], "params": {{{params}}}}}"#)
}

pub fn candle(params: &str) -> String {
    format!(r#"{{"logits": [1.0, 0.0, -1.0], "params": {params}}}"#)
}
