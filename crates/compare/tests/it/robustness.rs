//! Hostile input (docs/robustness.md): every row of that table has a test here.
//!
//! Each test runs the built `compare` binary and checks the exit status, that
//! every record gets exactly one answer line, and the message: what was wrong
//! and where (line, field, index, file, tensor). The last tests replay the fuzz
//! corpus (`fuzz/corpus/<target>/`) and the crash reproducers
//! (`fuzz/regressions/<target>/`) through the fuzz harnesses themselves.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

#[path = "../../../../fuzz/src/lib.rs"]
#[allow(dead_code)]
mod harness;

const COMPARE: &str = env!("CARGO_BIN_EXE_compare");

/// Runs `compare` with `stdin` written from another thread (so a large input
/// and a large output cannot deadlock on the pipes).
fn run(args: &[&str], stdin: Vec<u8>) -> Output {
    let mut child = Command::new(COMPARE)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("compare starts");
    let mut pipe = child.stdin.take().expect("stdin");
    let writer = std::thread::spawn(move || {
        // The child may stop reading early (usage error): not a test failure.
        let _ = pipe.write_all(&stdin);
    });
    let out = child.wait_with_output().expect("compare finishes");
    writer.join().expect("stdin writer");
    out
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `compare dist --semantics <semantics>` on these lines: the exit status, one
/// parsed answer per non-blank line, and stderr.
fn dist(semantics: &str, lines: &[&str]) -> (Option<i32>, Vec<Value>, String) {
    let input = lines.join("\n").into_bytes();
    let out = run(&["dist", "--semantics", semantics], input);
    let stderr = text(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    let answers: Vec<Value> = text(&out.stdout)
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
fn all_errors(semantics: &str, cases: &[(&str, &str)]) {
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
fn answer(semantics: &str, line: &str) -> Value {
    let (status, answers, stderr) = dist(semantics, &[line]);
    assert_eq!(
        status,
        Some(0),
        "{semantics}: {line}\n{stderr}\n{answers:?}"
    );
    answers.into_iter().next().expect("one answer")
}

#[track_caller]
fn probs(answer: &Value) -> Vec<f64> {
    serde_json::from_value(answer["probs"].clone())
        .unwrap_or_else(|e| panic!("probs are numbers ({e}): {answer}"))
}

/// Element-wise |a - e| ≤ tol, printing both vectors on failure.
#[track_caller]
fn assert_close(actual: &[f64], expected: &[f64], tol: f64) {
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

const SPEC: &str =
    r#""temperature": 1.0, "top_k": 0, "top_p": 1.0, "repetition_penalty": 1.0, "u": 0.5"#;

fn hf(params: &str) -> String {
    format!(r#"{{"logits": [1.0, 0.0, -1.0], "params": {params}}}"#)
}

fn spec(params: &str) -> String {
    format!(r#"{{"logits": [1.0, 0.0, -1.0], "params": {{{params}}}}}"#)
}

fn candle(params: &str) -> String {
    format!(r#"{{"logits": [1.0, 0.0, -1.0], "params": {params}}}"#)
}

// ---------------------------------------------------------------- JSON shape

#[test]
fn malformed_json_is_an_invalid_record_under_every_semantics() {
    for semantics in ["hf", "spec", "candle"] {
        all_errors(
            semantics,
            &[
                (
                    "{",
                    "invalid record: EOF while parsing an object at line 1 column 1",
                ),
                (
                    "not json",
                    "invalid record: expected ident at line 1 column 2",
                ),
                (
                    r#"{"logits": [1, 2}"#,
                    "invalid record: expected `,` or `]` at line 1 column 17",
                ),
                (
                    r#"{"logits": [1]} trailing"#,
                    "invalid record: trailing characters",
                ),
                ("[1, 2]", "invalid record: invalid type: integer `1`"),
                (
                    "null",
                    "invalid record: invalid type: null, expected struct Record",
                ),
                (
                    "\u{feff}{\"logits\": [1]}",
                    "invalid record: expected value at line 1 column 1",
                ),
            ],
        );
    }
    // Bytes that are not UTF-8 are an invalid record too, not an I/O error.
    let out = run(
        &["dist", "--semantics", "hf"],
        b"{\"logits\": [\xff]}\n".to_vec(),
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stdout).contains("invalid record"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn wrong_types_name_the_field_and_index() {
    let common = [
        (
            r#"{"logits": "1, 2"}"#,
            "invalid type: string \"1, 2\", expected an array",
        ),
        (
            r#"{"logits": {"0": 1}}"#,
            "invalid type: map, expected an array",
        ),
        (
            r#"{"logits": [1, true]}"#,
            "`logits[1]` must be a finite number or the string \"-inf\", got a boolean",
        ),
        (
            r#"{"logits": [1, null]}"#,
            "`logits[1]` must be a finite number or the string \"-inf\", got null",
        ),
        (
            r#"{"logits": [1, [2]]}"#,
            "`logits[1]` must be a finite number or the string \"-inf\", got an array",
        ),
        (
            r#"{"logits": [1, "2"]}"#,
            "`logits[1]` must be a finite number or the string \"-inf\", got \"2\"",
        ),
        (
            r#"{"logits": [1], "input_ids": "0"}"#,
            "invalid record: invalid type: string \"0\", expected a sequence",
        ),
        (
            r#"{"logits": [1], "input_ids": [0, "1"]}"#,
            "`input_ids[1]` must be an integer, got \"1\"",
        ),
        (
            r#"{"logits": [1], "input_ids": [0, 1.5]}"#,
            "`input_ids[1]` must be an integer, got 1.5",
        ),
        (
            r#"{"logits": [1], "params": [1]}"#,
            "invalid record: invalid type: sequence, expected a map",
        ),
    ];
    for semantics in ["hf", "spec", "candle"] {
        all_errors(semantics, &common);
    }
    all_errors(
        "hf",
        &[
            (
                &hf(r#"{"do_sample": true, "temperature": "0.7"}"#),
                "`temperature` (=0.7) has to be a strictly positive float",
            ),
            (
                &hf(r#"{"do_sample": true, "top_p": "0.9"}"#),
                "`top_p` must be a number, but is \"0.9\"",
            ),
            (
                &hf(r#"{"do_sample": true, "top_k": [2]}"#),
                "`top_k` has to be a strictly positive integer, but is [2]",
            ),
        ],
    );
    all_errors(
        "spec",
        &[
            (
                &spec(
                    r#""temperature": "1", "top_k": 0, "top_p": 1.0, "repetition_penalty": 1.0, "u": 0.5"#,
                ),
                "params: field `temperature` must be a number, got \"1\"",
            ),
            (
                &spec(
                    r#""temperature": 1, "top_k": "2", "top_p": 1.0, "repetition_penalty": 1.0, "u": 0.5"#,
                ),
                "params: field `top_k` must be an integer, got \"2\"",
            ),
        ],
    );
    all_errors(
        "candle",
        &[
            (
                &candle(r#"{"sampling": 3}"#),
                "field `sampling`: must be one of",
            ),
            (
                &candle(r#"{"sampling": "All", "temperature": "1"}"#),
                "field `temperature`: must be a finite number (got \"1\")",
            ),
        ],
    );
}

#[test]
fn missing_fields_are_errors_or_documented_defaults() {
    for semantics in ["hf", "spec", "candle"] {
        all_errors(
            semantics,
            &[(
                r#"{"params": {}}"#,
                "invalid record: missing field `logits`",
            )],
        );
    }
    all_errors(
        "spec",
        &[
            (
                &spec(r#""temperature": 1.0, "top_k": 0, "top_p": 1.0, "repetition_penalty": 1.0"#),
                "params: missing field `u`",
            ),
            (
                r#"{"logits": [1, 0]}"#,
                "params: missing field `temperature`",
            ),
        ],
    );
    all_errors(
        "candle",
        &[
            (r#"{"logits": [1, 0]}"#, "field `sampling`: must be one of"),
            (
                &candle(r#"{"sampling": "TopK", "temperature": 1.0}"#),
                "field `k`",
            ),
        ],
    );
    // hf: every generate kwarg has a transformers default; no params is
    // greedy decoding, as `model.generate(input_ids)` is.
    let a = answer("hf", r#"{"logits": [1, 3, 3]}"#);
    assert_eq!(probs(&a), vec![0.0, 1.0, 0.0]);
}

#[test]
fn unknown_fields_are_refused() {
    for semantics in ["hf", "spec", "candle"] {
        all_errors(
            semantics,
            &[(
                r#"{"logits": [1], "input_id": [0]}"#,
                "invalid record: unknown field `input_id`, expected one of `logits`, `input_ids`, `prompt_len`, `params`",
            )],
        );
    }
    all_errors(
        "hf",
        &[(
            &hf(r#"{"do_sample": true, "temprature": 0.7}"#),
            "`temprature` (=0.7) is not a generation parameter",
        )],
    );
    // Regression: spec params ignored unknown keys, so `previous_tokens`
    // inside `params` silently meant "no context".
    all_errors(
        "spec",
        &[(
            &spec(&format!(r#"{SPEC}, "previous_tokens": [0]"#)),
            "params: unknown key `previous_tokens`",
        )],
    );
    all_errors(
        "candle",
        &[(
            &candle(r#"{"sampling": "All", "temperature": 1.0, "top_k": 2}"#),
            "unknown key `top_k`",
        )],
    );
    // hf: an unknown kwarg set to null is ignored, as transformers ignores it.
    answer("hf", &hf(r#"{"do_sample": true, "temprature": null}"#));
}

// ---------------------------------------------------------------- logits

#[test]
fn empty_logits_are_refused() {
    let hf_line = r#"{"logits": [], "params": {"do_sample": true}}"#;
    let spec_line = format!(r#"{{"logits": [], "params": {{{SPEC}}}}}"#);
    let candle_line = r#"{"logits": [], "params": {"sampling": "ArgMax"}}"#;
    all_errors("hf", &[(hf_line, "`logits` must not be empty")]);
    all_errors("spec", &[(&spec_line, "`logits` must not be empty")]);
    all_errors("candle", &[(candle_line, "`logits` must not be empty")]);
}

#[test]
fn nan_and_infinities_are_refused_with_their_index() {
    let cases = [
        (
            r#"{"logits": [0, "nan"]}"#,
            "`logits[1]` must be a finite number or the string \"-inf\", got \"nan\"",
        ),
        (
            r#"{"logits": [0, "NaN"]}"#,
            "`logits[1]` must be a finite number or the string \"-inf\", got \"NaN\"",
        ),
        (
            r#"{"logits": [0, "inf"]}"#,
            "`logits[1]` must be a finite number or the string \"-inf\", got \"inf\"",
        ),
        (
            r#"{"logits": [0, "+inf"]}"#,
            "`logits[1]` must be a finite number or the string \"-inf\", got \"+inf\"",
        ),
        (
            r#"{"logits": [0, "-Infinity"]}"#,
            "`logits[1]` must be a finite number or the string \"-inf\", got \"-Infinity\"",
        ),
        // Python's json.dumps writes these (read as "nan" and "inf").
        (
            r#"{"logits": [0, NaN]}"#,
            "`logits[1]` must be a finite number or the string \"-inf\", got \"nan\"",
        ),
        (
            r#"{"logits": [0, Infinity]}"#,
            "`logits[1]` must be a finite number or the string \"-inf\", got \"inf\"",
        ),
        (
            r#"{"logits": [0, 1e999]}"#,
            "invalid record: number out of range at line 1 column 20",
        ),
    ];
    for semantics in ["hf", "spec", "candle"] {
        all_errors(semantics, &cases);
    }
    // f32 semantics also refuse a number that only f64 can hold.
    for (semantics, params) in [("hf", "{}"), ("candle", r#"{"sampling": "ArgMax"}"#)] {
        all_errors(
            semantics,
            &[(
                &format!(r#"{{"logits": [0, 1e39], "params": {params}}}"#),
                "`logits[1]` = 1e39 does not fit in float32",
            )],
        );
    }
}

#[test]
fn every_logit_negative_infinity() {
    let l = r#""logits": ["-inf", "-inf", "-inf"]"#;
    // transformers: softmax of all -inf is NaN and multinomial raises...
    all_errors(
        "hf",
        &[(
            &format!(r#"{{{l}, "params": {{"do_sample": true}}}}"#),
            "every logit is -inf",
        )],
    );
    // ...but greedy takes torch.argmax, index 0.
    let a = answer(
        "hf",
        &format!(r#"{{{l}, "params": {{"do_sample": false}}}}"#),
    );
    assert_eq!(probs(&a), vec![1.0, 0.0, 0.0]);
    // The spec answers token -1 and all-zero probabilities.
    let a = answer("spec", &format!(r#"{{{l}, "params": {{{SPEC}}}}}"#));
    assert_eq!(
        (a["tokens"][0].as_i64(), probs(&a)),
        (Some(-1), vec![0.0; 3])
    );
    // candle: its softmax is NaN and WeightedIndex refuses it (candle's error).
    all_errors(
        "candle",
        &[(
            &format!(r#"{{{l}, "params": {{"sampling": "All", "temperature": 1.0}}}}"#),
            "candle: A weight is negative, too large or not a valid number",
        )],
    );
    let a = answer(
        "candle",
        &format!(r#"{{{l}, "params": {{"sampling": "ArgMax"}}}}"#),
    );
    assert_eq!(probs(&a), vec![1.0, 0.0, 0.0]);
}

#[test]
fn logits_near_f32_max_divided_by_a_small_temperature() {
    let l = r#""logits": [3.4e38, 3.3e38, -3.4e38]"#;
    // transformers: 3.4e38 / 0.5 overflows to +inf in f32; torch raises.
    all_errors(
        "hf",
        &[(
            &format!(r#"{{{l}, "params": {{"do_sample": true, "temperature": 0.5}}}}"#),
            "processed score 0 overflowed to +inf",
        )],
    );
    // The spec works in f64 and never forms ℓ/T: exp((3.3e38 - 3.4e38)/1e-30) = 0.
    let a = answer(
        "spec",
        &format!(
            r#"{{{l}, "params": {{"temperature": 1e-30, "top_k": 0, "top_p": 1.0, "repetition_penalty": 1.0, "u": 0.5}}}}"#
        ),
    );
    assert_eq!(probs(&a), vec![1.0, 0.0, 0.0]);
    // candle multiplies by 1/T in f32: +inf, NaN softmax, WeightedIndex refuses.
    all_errors(
        "candle",
        &[(
            &format!(r#"{{{l}, "params": {{"sampling": "All", "temperature": 0.5}}}}"#),
            "candle: A weight is negative, too large or not a valid number",
        )],
    );
}

// ---------------------------------------------------------------- parameters

#[test]
fn temperature_zero_negative_tiny_and_nan() {
    let t = |v: &str| hf(&format!(r#"{{"do_sample": true, "temperature": {v}}}"#));
    all_errors(
        "hf",
        &[
            (
                &t("0.0"),
                "`temperature` (=0.0) has to be a strictly positive float, otherwise your next token scores will be invalid. If you're looking for greedy decoding strategies, set `do_sample=False`.",
            ),
            (
                &t("-1.0"),
                "`temperature` (=-1.0) has to be a strictly positive float",
            ),
            (
                &t("\"nan\""),
                "`temperature` (=nan) has to be a strictly positive float",
            ),
            // Regression: 1e-50 is 0.0 in f32; 0/0 gave NaN probabilities and exit 0.
            (
                r#"{"logits": [0, -1], "params": {"do_sample": true, "temperature": 1e-50}}"#,
                "processed score 0 is NaN",
            ),
            (
                r#"{"logits": [-1, -2], "params": {"do_sample": true, "temperature": 1e-50}}"#,
                "every processed score is -inf",
            ),
        ],
    );
    // 1e-30 is a normal f32: [1, 0, -1] / 1e-30 = [1e30, 0, -1e30], one-hot.
    assert_eq!(probs(&answer("hf", &t("1e-30"))), vec![1.0, 0.0, 0.0]);

    let s = |v: &str| {
        spec(&format!(
            r#""temperature": {v}, "top_k": 0, "top_p": 1.0, "repetition_penalty": 1.0, "u": 0.5"#
        ))
    };
    all_errors(
        "spec",
        &[
            (
                &s("-1.0"),
                "params: field `temperature` must be a finite number >= 0, got -1.0",
            ),
            (
                &s("\"nan\""),
                "params: field `temperature` must be a number, got \"nan\"",
            ),
        ],
    );
    // T = 0 is greedy; T = 1e-30 is the limit of the exact math: one-hot too.
    assert_eq!(probs(&answer("spec", &s("0.0"))), vec![1.0, 0.0, 0.0]);
    assert_eq!(probs(&answer("spec", &s("1e-30"))), vec![1.0, 0.0, 0.0]);

    let c = |v: &str| candle(&format!(r#"{{"sampling": "All", "temperature": {v}}}"#));
    all_errors(
        "candle",
        &[
            (
                &c("0.0"),
                "candle: A weight is negative, too large or not a valid number",
            ),
            (
                &c("\"nan\""),
                "field `temperature`: must be a finite number",
            ),
        ],
    );
    // candle divides by any finite T: a negative one reverses the order.
    // softmax([-1, 0, 1]) = [0.0900306, 0.2447285, 0.6652410].
    assert_close(
        &probs(&answer("candle", &c("-1.0"))),
        &[
            0.090_030_573_170_380_46,
            0.244_728_471_054_797_64,
            0.665_240_955_774_821_9,
        ],
        1e-6,
    );
    assert_eq!(probs(&answer("candle", &c("1e-30"))), vec![1.0, 0.0, 0.0]);
}

#[test]
fn top_k_negative_huge_and_fractional() {
    let k = |v: &str| hf(&format!(r#"{{"do_sample": true, "top_k": {v}}}"#));
    all_errors(
        "hf",
        &[
            (
                &k("-1"),
                "`top_k` has to be a strictly positive integer, but is -1",
            ),
            (
                &k("2.5"),
                "`top_k` has to be a strictly positive integer, but is 2.5",
            ),
            (
                &k("2.0"),
                "`top_k` has to be a strictly positive integer, but is 2.0",
            ),
            (
                &k("1e30"),
                "`top_k` has to be a strictly positive integer, but is 1e+30",
            ),
        ],
    );
    // 2^64 - 1 is a Python int: keeps everything.
    assert_eq!(answer("hf", &k("18446744073709551615"))["kept"], 3);

    let s = |v: &str| {
        spec(&format!(
            r#""temperature": 1.0, "top_k": {v}, "top_p": 1.0, "repetition_penalty": 1.0, "u": 0.5"#
        ))
    };
    all_errors(
        "spec",
        &[(
            &s("2.5"),
            "params: field `top_k` must be an integer, got 2.5",
        )],
    );
    // k ≤ 0 and k ≥ V keep all (the spec's rule); integral floats are integers.
    for v in ["-5", "1e30", "18446744073709551616"] {
        assert_eq!(answer("spec", &s(v))["kept"], 3, "top_k {v}");
    }
    assert_eq!(answer("spec", &s("2.0"))["kept"], 2);

    let c = |v: &str| {
        candle(&format!(
            r#"{{"sampling": "TopK", "temperature": 1.0, "k": {v}}}"#
        ))
    };
    all_errors(
        "candle",
        &[
            (
                &c("-1"),
                "field `k`: must be a non-negative integer (got -1)",
            ),
            (
                &c("2.5"),
                "field `k`: must be a non-negative integer (got 2.5)",
            ),
            // candle fails at draw time on k = 0: the candidate list is empty.
            (&c("0"), "candle: Weights sequence is empty"),
        ],
    );
    assert_eq!(answer("candle", &c("18446744073709551615"))["kept"], 3);
}

#[test]
fn top_p_zero_negative_above_one_and_nan() {
    let p = |v: &str| hf(&format!(r#"{{"do_sample": true, "top_p": {v}}}"#));
    all_errors(
        "hf",
        &[
            (
                &p("-0.1"),
                "`top_p` has to be a float > 0 and < 1, but is -0.1",
            ),
            (&p("\"nan\""), "`top_p` must be a number, but is \"nan\""),
        ],
    );
    // transformers accepts 0 (keeps the top token) and ignores p ≥ 1.
    assert_eq!(answer("hf", &p("0.0"))["kept"], 1);
    assert_eq!(answer("hf", &p("1.5"))["kept"], 3);

    let s = |v: &str| {
        spec(&format!(
            r#""temperature": 1.0, "top_k": 0, "top_p": {v}, "repetition_penalty": 1.0, "u": 0.5"#
        ))
    };
    all_errors(
        "spec",
        &[
            (
                &s("0.0"),
                "params: field `top_p` must be a number in (0, 1], got 0.0",
            ),
            (
                &s("-0.1"),
                "params: field `top_p` must be a number in (0, 1], got -0.1",
            ),
            (
                &s("1.5"),
                "params: field `top_p` must be a number in (0, 1], got 1.5",
            ),
            (
                &s("\"nan\""),
                "params: field `top_p` must be a number, got \"nan\"",
            ),
        ],
    );

    let c = |v: &str| {
        candle(&format!(
            r#"{{"sampling": "TopP", "temperature": 1.0, "p": {v}}}"#
        ))
    };
    all_errors(
        "candle",
        &[(&c("\"nan\""), "field `p`: must be a finite number")],
    );
    // candle's TopP: p ≤ 0 or p ≥ 1 samples from the whole softmax.
    for v in ["0.0", "-0.1", "1.5"] {
        assert_eq!(answer("candle", &c(v))["kept"], 3, "p {v}");
    }
}

#[test]
fn penalties_zero_negative_and_huge() {
    let r = |v: &str| {
        format!(
            r#"{{"logits": [1.0, 0.0, -1.0], "input_ids": [0, 2], "params": {{"do_sample": true, "repetition_penalty": {v}}}}}"#
        )
    };
    all_errors(
        "hf",
        &[
            (
                &r("0.0"),
                "`repetition_penalty` has to be a strictly positive float, but is 0.0",
            ),
            (
                &r("-1.0"),
                "`repetition_penalty` has to be a strictly positive float, but is -1.0",
            ),
            // 1e300 is +inf in f32: -1 · inf = -inf, and 1 / inf = 0.
            (
                r#"{"logits": [-1.0, -2.0], "input_ids": [0, 1], "params": {"do_sample": true, "repetition_penalty": 1e300}}"#,
                "every processed score is -inf",
            ),
        ],
    );
    // 1e30 (finite in f32): [1/1e30, 0, -1e30] → softmax over {1e-30, 0}.
    let a = answer("hf", &r("1e30"));
    assert_close(&probs(&a), &[0.5, 0.5, 0.0], 1e-7);

    let s = |v: &str| {
        format!(
            r#"{{"logits": [1.0, 0.0, -1.0], "input_ids": [0, 2], "params": {{"temperature": 1.0, "top_k": 0, "top_p": 1.0, "repetition_penalty": {v}, "u": 0.5}}}}"#
        )
    };
    all_errors(
        "spec",
        &[
            (
                &s("0.0"),
                "params: field `repetition_penalty` must be a finite number > 0, got 0.0",
            ),
            (
                &s("-1.0"),
                "params: field `repetition_penalty` must be a finite number > 0, got -1.0",
            ),
        ],
    );
    // f64: [1/1e300, 0, -1e300]; exp(1e-300) : 1 : 0 → [0.5, 0.5, 0].
    assert_close(
        &probs(&answer("spec", &s("1e300"))),
        &[0.5, 0.5, 0.0],
        1e-12,
    );

    let c = |v: &str| {
        format!(
            r#"{{"logits": [1.0, 0.0, -1.0], "input_ids": [0, 2], "params": {{"sampling": "All", "temperature": 1.0, "repeat_penalty": {v}}}}}"#
        )
    };
    all_errors(
        "candle",
        &[
            (&c("1e39"), "field `repeat_penalty`: must be finite as f32"),
            // candle divides by 0 and fails at draw time.
            (
                &c("0.0"),
                "candle: A weight is negative, too large or not a valid number",
            ),
        ],
    );
    // candle takes a negative penalty as given: 1/-1 = -1, -1·-1 = 1.
    // softmax([-1, 0, 1]).
    assert_close(
        &probs(&answer("candle", &c("-1.0"))),
        &[
            0.090_030_573_170_380_46,
            0.244_728_471_054_797_64,
            0.665_240_955_774_821_9,
        ],
        1e-6,
    );
}

#[test]
fn input_ids_negative_out_of_range_and_huge() {
    let ids = |ids: &str, params: &str| {
        format!(r#"{{"logits": [1.0, 0.0, -1.0], "input_ids": {ids}, "params": {params}}}"#)
    };
    let hf_p = r#"{"do_sample": true, "repetition_penalty": 2.0}"#;
    let spec_p =
        r#"{"temperature": 1.0, "top_k": 0, "top_p": 1.0, "repetition_penalty": 2.0, "u": 0.5}"#;
    let candle_p = r#"{"sampling": "All", "temperature": 1.0, "repeat_penalty": 2.0}"#;
    all_errors(
        "hf",
        &[
            (
                &ids("[0, -1]", hf_p),
                "input_ids[1] = -1 is negative: token ids must be >= 0",
            ),
            (
                &ids("[1e30]", hf_p),
                "`input_ids[0]` must be an integer, got 1e+30",
            ),
            (
                &ids("[18446744073709551616]", hf_p),
                "`input_ids[0]` must be an integer, got 1.8446744073709552e+19",
            ),
        ],
    );
    all_errors(
        "candle",
        &[
            (
                &ids("[0, -1]", candle_p),
                "input_ids[1] = -1 is not a token id (candle takes u32 ids)",
            ),
            (
                &ids("[4294967296]", candle_p),
                "input_ids[0] = 4294967296 is not a token id",
            ),
        ],
    );
    // Ids ≥ V are ignored by every penalty (transformers, candle and the
    // spec); the spec ignores negative ids too.
    let unpenalised = [
        0.665_240_955_774_821_9,
        0.244_728_471_054_797_64,
        0.090_030_573_170_380_46,
    ];
    let big = "[3, 1000000, 9223372036854775807]";
    assert_close(&probs(&answer("hf", &ids(big, hf_p))), &unpenalised, 1e-6);
    assert_close(
        &probs(&answer("candle", &ids("[3, 4294967295]", candle_p))),
        &unpenalised,
        1e-6,
    );
    assert_close(
        &probs(&answer("spec", &ids(big, spec_p))),
        &unpenalised,
        1e-12,
    );
    assert_close(
        &probs(&answer("spec", &ids("[-1, -9223372036854775808]", spec_p))),
        &unpenalised,
        1e-12,
    );
}

// ---------------------------------------------------------------- the stream

#[test]
fn empty_and_blank_input_is_success_with_no_output() {
    for semantics in ["hf", "spec", "candle"] {
        for input in ["", "\n", "  \n\t\n\r\n"] {
            let out = run(
                &["dist", "--semantics", semantics],
                input.as_bytes().to_vec(),
            );
            assert_eq!(out.status.code(), Some(0), "{semantics} {input:?}");
            assert!(
                out.stdout.is_empty() && out.stderr.is_empty(),
                "{semantics} {input:?}"
            );
        }
    }
}

#[test]
fn a_100_mb_line_is_refused_and_the_next_line_answered() {
    // The line is streamed into the pipe; compare drops it once it passes
    // 64 MiB instead of buffering all of it.
    let mut child = Command::new(COMPARE)
        .args(["dist", "--semantics", "spec"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("compare starts");
    let mut pipe = child.stdin.take().expect("stdin");
    let writer = std::thread::spawn(move || -> std::io::Result<()> {
        pipe.write_all(b"{\"logits\": [")?;
        let chunk = "0,".repeat(1 << 19); // 1 MiB
        for _ in 0..100 {
            pipe.write_all(chunk.as_bytes())?;
        }
        pipe.write_all(b"0]}\n")?;
        writeln!(pipe, r#"{{"logits": [0, 0], "params": {{{SPEC}}}}}"#)
    });
    let out = child.wait_with_output().expect("compare finishes");
    writer
        .join()
        .expect("writer")
        .expect("compare read all input");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stdout),
        "{\"error\":\"line is longer than 67108864 bytes; refusing to read it\"}\n\
         {\"kept\":2,\"probs\":[0.5,0.5],\"tokens\":[1]}\n"
    );
    assert_eq!(
        text(&out.stderr),
        "error: line 1: line is longer than 67108864 bytes; refusing to read it\n"
    );
}

/// Spawns compare with a standard output whose reading end is already closed,
/// so its first write fails with EPIPE.
fn with_closed_stdout(args: &[&str], stdin: &[u8]) -> Output {
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    let mut child = Command::new(COMPARE)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(writer)
        .stderr(Stdio::piped())
        .spawn()
        .expect("compare starts");
    let mut pipe = child.stdin.take().expect("stdin");
    let input = stdin.to_vec();
    let feeder = std::thread::spawn(move || {
        let _ = pipe.write_all(&input);
    });
    let out = child.wait_with_output().expect("compare finishes");
    feeder.join().expect("feeder");
    out
}

#[test]
fn a_closed_standard_output_ends_every_command_quietly() {
    let records = format!("{}\n", hf(r#"{"do_sample": true}"#)).repeat(2000);
    let runs: [(&[&str], &[u8]); 5] = [
        (&["dist", "--semantics", "hf"], records.as_bytes()),
        (
            &[
                "translate",
                "--kwargs",
                r#"{"do_sample": true, "top_k": 40}"#,
            ],
            b"",
        ),
        (&["ties", "--draws", "100"], b""),
        (
            &[
                "report",
                "--draws",
                "10",
                "--settings",
                "top_k2",
                TIES_FIXTURE,
            ],
            b"",
        ),
        (&["--help"], b""),
    ];
    for (args, stdin) in runs {
        let out = with_closed_stdout(args, stdin);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
        assert!(
            !stderr.contains("panicked") && !stderr.contains("Broken pipe"),
            "{args:?}: {stderr}"
        );
    }
}

// ---------------------------------------------------------------- fixture files

const TIES_FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../fixtures/edge/ties_3221.safetensors"
);

/// A safetensors file from its parts: 8-byte header length, JSON header
/// (padded to 8 bytes), data.
fn safetensors(meta: &[(&str, &str)], tensors: &[(&str, &str, &[usize], &[u8])]) -> Vec<u8> {
    let mut header = serde_json::Map::new();
    header.insert(
        "__metadata__".into(),
        meta.iter()
            .map(|(k, v)| ((*k).to_string(), Value::from(*v)))
            .collect(),
    );
    let mut data = Vec::new();
    for (name, dtype, shape, bytes) in tensors {
        let start = data.len();
        data.extend_from_slice(bytes);
        header.insert(
            (*name).into(),
            serde_json::json!({"dtype": dtype, "shape": shape, "data_offsets": [start, data.len()]}),
        );
    }
    let mut header = serde_json::to_vec(&header).expect("header");
    while !header.len().is_multiple_of(8) {
        header.push(b' ');
    }
    let mut file = (header.len() as u64).to_le_bytes().to_vec();
    file.extend(header);
    file.extend(data);
    file
}

fn f32s(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

const META: [(&str, &str); 6] = [
    ("format", "sampling-parity-fixture/1"),
    ("kind", "edge"),
    ("description", "robustness test"),
    ("torch_version", "2.15.0"),
    ("transformers_version", "5.23.0"),
    (
        "settings",
        r#"[{"name": "top_k2", "kwargs": {"do_sample": true, "top_k": 2}}]"#,
    ),
];

/// A valid edge fixture: logits [3, 2, 2, 1], transformers' top-k 2 scores.
fn valid_fixture() -> Vec<u8> {
    let ninf = f32::NEG_INFINITY;
    safetensors(
        &META,
        &[
            ("logits", "F32", &[4], &f32s(&[3.0, 2.0, 2.0, 1.0])),
            ("input_ids", "I64", &[1], &0i64.to_le_bytes()),
            ("scores.top_k2", "F32", &[4], &f32s(&[3.0, 2.0, 2.0, ninf])),
        ],
    )
}

/// Writes `bytes` to a file named for the test and runs `compare report` on it.
fn report_on(name: &str, bytes: &[u8]) -> (Option<i32>, String, String, PathBuf) {
    let path =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("robustness-{name}.safetensors"));
    std::fs::write(&path, bytes).expect("write fixture");
    let p = path.to_str().expect("utf-8 path");
    let out = run(&["report", "--draws", "10", p], Vec::new());
    (
        out.status.code(),
        text(&out.stdout),
        text(&out.stderr),
        path,
    )
}

#[track_caller]
fn report_refuses(name: &str, bytes: &[u8], message: &str) {
    let (status, stdout, stderr, path) = report_on(name, bytes);
    assert_eq!(status, Some(2), "{name}: {stderr}");
    assert!(stdout.is_empty(), "{name}: {stdout}");
    let expected = format!("error: {}: {message}", path.display());
    assert!(
        stderr.starts_with(&expected),
        "{name}:\nexpected {expected:?}\ngot {stderr:?}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn a_valid_hand_made_fixture_is_reported() {
    let (status, stdout, stderr, _) = report_on("valid", &valid_fixture());
    assert_eq!(status, Some(0), "{stderr}");
    assert!(stdout.contains("top_k2"), "{stdout}");
}

#[test]
fn truncated_fixture_names_the_file() {
    let whole = valid_fixture();
    report_refuses(
        "truncated-data",
        &whole[..whole.len() - 3],
        "not a valid safetensors file: ",
    );
    report_refuses(
        "truncated-header",
        &whole[..20],
        "not a valid safetensors file: ",
    );
    report_refuses(
        "truncated-length",
        &whole[..5],
        "not a valid safetensors file: ",
    );
    report_refuses("empty", b"", "not a valid safetensors file: ");
    report_refuses(
        "text",
        b"this is not a fixture at all\n",
        "not a valid safetensors file: ",
    );
}

#[test]
fn header_that_lies_about_offsets_names_the_file() {
    let lie = |header_edit: &dyn Fn(&mut String)| {
        let whole = valid_fixture();
        let n = u64::from_le_bytes(whole[..8].try_into().expect("8 bytes")) as usize;
        let mut header = String::from_utf8(whole[8..8 + n].to_vec()).expect("utf-8 header");
        let before = header.clone();
        header_edit(&mut header);
        assert_ne!(before, header, "the edit must change the header");
        let mut file = (header.len() as u64).to_le_bytes().to_vec();
        file.extend(header.as_bytes());
        file.extend(&whole[8 + n..]);
        file
    };
    // Offsets past the end of the data.
    let past = lie(&|h: &mut String| *h = h.replace("[24,40]", "[24,4000]"));
    report_refuses("offsets-past-end", &past, "not a valid safetensors file: ");
    // Overlapping tensors.
    let overlap = lie(&|h: &mut String| *h = h.replace("[24,40]", "[8,24]"));
    report_refuses(
        "offsets-overlap",
        &overlap,
        "not a valid safetensors file: ",
    );
    // A header length larger than the file.
    let mut long = valid_fixture();
    long[..8].copy_from_slice(&(1u64 << 40).to_le_bytes());
    report_refuses("header-length", &long, "not a valid safetensors file: ");
    // A header length of 2^64 - 1 (overflows any `8 + n`).
    let mut huge = valid_fixture();
    huge[..8].copy_from_slice(&u64::MAX.to_le_bytes());
    report_refuses("header-length-max", &huge, "not a valid safetensors file: ");
}

#[test]
fn fixture_of_the_wrong_dtype_names_the_tensor() {
    let ninf = f32::NEG_INFINITY;
    let f16 = safetensors(
        &META,
        &[
            ("logits", "F16", &[8], &f32s(&[3.0, 2.0, 2.0, 1.0])),
            ("input_ids", "I64", &[1], &0i64.to_le_bytes()),
            ("scores.top_k2", "F32", &[4], &f32s(&[3.0, 2.0, 2.0, ninf])),
        ],
    );
    report_refuses(
        "dtype-f16",
        &f16,
        "tensor `logits`: dtype is F16, expected F32",
    );
    let ids = safetensors(
        &META,
        &[
            ("logits", "F32", &[4], &f32s(&[3.0, 2.0, 2.0, 1.0])),
            ("input_ids", "F64", &[1], &0f64.to_le_bytes()),
            ("scores.top_k2", "F32", &[4], &f32s(&[3.0, 2.0, 2.0, ninf])),
        ],
    );
    report_refuses(
        "dtype-ids",
        &ids,
        "tensor `input_ids`: dtype is F64, expected I64",
    );
}

#[test]
fn vocab_sizes_that_disagree_name_the_tensor() {
    let short = safetensors(
        &META,
        &[
            ("logits", "F32", &[4], &f32s(&[3.0, 2.0, 2.0, 1.0])),
            ("input_ids", "I64", &[1], &0i64.to_le_bytes()),
            ("scores.top_k2", "F32", &[3], &f32s(&[3.0, 2.0, 2.0])),
        ],
    );
    report_refuses(
        "vocab-mismatch",
        &short,
        "tensor `scores.top_k2`: has 3 entries but `logits` has 4",
    );
}

#[cfg(unix)]
#[test]
fn an_endless_file_is_refused_without_reading_it_all() {
    // Regression: /dev/zero reports size 0 and was read until out of memory.
    let out = run(&["report", "/dev/zero"], Vec::new());
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).starts_with("error: /dev/zero: more than 268435456 bytes"),
        "{}",
        text(&out.stderr)
    );
}

// ---------------------------------------------------------------- generation_config.json

fn config_file(name: &str, contents: &str) -> PathBuf {
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("robustness-{name}.json"));
    std::fs::write(&path, contents).expect("write config");
    path
}

#[test]
fn generation_config_unknown_keys_and_nulls_are_accepted() {
    // Unknown keys are kept and ignored (transformers keeps them as custom
    // attributes); null means unset, so transformers' default applies
    // (top_k: null here still gives top-k 50; in kwargs null turns it off).
    let path = config_file(
        "config-lenient",
        r#"{"do_sample": true, "temperature": 0.6, "top_k": null, "top_p": null, "my_custom_key": [1, {"x": null}], "_from_model_config": true, "transformers_version": "4.0"}"#,
    );
    let p = path.to_str().expect("utf-8");
    let out = run(&["translate", "--generation-config", p], Vec::new());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("\ntransformers: TemperatureLogitsWarper → TopKLogitsWarper\n"),
        "{stdout}"
    );
    // Each resolved value says where it came from.
    assert!(
        stdout.contains("temperature = 0.6  (generation_config.json)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("top_k = 50  (transformers' default)"),
        "{stdout}"
    );
    let (status, answers, stderr) = {
        let o = run(
            &["dist", "--semantics", "hf", "--generation-config", p],
            br#"{"logits": [1, 0]}"#.to_vec(),
        );
        (o.status.code(), text(&o.stdout), text(&o.stderr))
    };
    assert_eq!(status, Some(0), "{stderr}");
    // softmax([1, 0] / 0.6) = [0.8411309, 0.1588691].
    let a: Value = serde_json::from_str(answers.trim()).expect("JSON");
    assert_close(
        &probs(&a),
        &[0.841_130_895_052_954_8, 0.158_869_104_947_045_2],
        1e-6,
    );
}

#[test]
fn generation_config_wrong_types_and_bad_json_exit_2_naming_the_key() {
    let cases = [
        (
            "config-do-sample",
            r#"{"do_sample": "yes"}"#,
            r#"`do_sample` must be a boolean, but is "yes""#,
        ),
        (
            "config-temperature",
            r#"{"temperature": "hot"}"#,
            r#"`temperature` must be a number, but is "hot""#,
        ),
        (
            "config-top-k",
            r#"{"top_k": 2.5}"#,
            "`top_k` must be an integer, but is 2.5",
        ),
        (
            "config-array",
            "[1, 2]",
            "generation_config.json must be a JSON object, but is an array",
        ),
        (
            "config-truncated",
            r#"{"do_sample": true,"#,
            "generation_config.json is not valid JSON: EOF while parsing",
        ),
        (
            "config-empty",
            "",
            "generation_config.json is not valid JSON: EOF while parsing",
        ),
        (
            "config-beams",
            r#"{"num_beams": 4}"#,
            "`num_beams` (=4) changes transformers' distribution in a way hf-sampling does not implement",
        ),
    ];
    for (name, contents, message) in cases {
        let path = config_file(name, contents);
        let p = path.to_str().expect("utf-8");
        for args in [
            vec!["translate", "--generation-config", p],
            vec!["dist", "--semantics", "hf", "--generation-config", p],
        ] {
            let out = run(&args, br#"{"logits": [1, 0]}"#.to_vec());
            let stderr = text(&out.stderr);
            // translate refuses the whole run; dist refuses an unusable file
            // up front, and a config transformers would reject per record.
            let (want_status, want_stdout_empty) = match (args[0], name) {
                ("dist", "config-beams") => (Some(1), false),
                _ => (Some(2), true),
            };
            assert_eq!(out.status.code(), want_status, "{args:?}: {stderr}");
            assert_eq!(out.stdout.is_empty(), want_stdout_empty, "{args:?}");
            assert!(
                stderr.contains(message),
                "{args:?}\nexpected {message:?} in {stderr:?}"
            );
            assert!(!stderr.contains("panicked"), "{stderr}");
        }
    }
    // Missing file, and a config with another semantics.
    let out = run(
        &["translate", "--generation-config", "/nonexistent/g.json"],
        Vec::new(),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("/nonexistent/g.json: cannot read generation config"));
    let path = config_file("config-ok", "{}");
    let out = run(
        &[
            "dist",
            "--semantics",
            "spec",
            "--generation-config",
            path.to_str().expect("utf-8"),
        ],
        Vec::new(),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr)
            .contains("--generation-config: spec does not read a model's generation_config.json"),
        "{}",
        text(&out.stderr)
    );
}

#[cfg(unix)]
#[test]
fn an_endless_generation_config_is_refused() {
    // Regression: read_to_string("/dev/zero") never ends.
    let out = run(
        &["translate", "--generation-config", "/dev/zero"],
        Vec::new(),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("more than 16777216 bytes: not a generation_config.json"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn translate_kwargs_malformed_and_wrong_types() {
    for (kwargs, message) in [
        (r#"{"do_sample": tru"#, "--kwargs is not a JSON object"),
        ("[1]", "--kwargs is not a JSON object"),
        (
            r#"{"do_sample": true, "temperature": 0}"#,
            "`temperature` (=0) has to be a strictly positive float",
        ),
        (
            r#"{"do_sample": true, "top_k": -3}"#,
            "`top_k` has to be a strictly positive integer, but is -3",
        ),
    ] {
        let out = run(&["translate", "--kwargs", kwargs], Vec::new());
        assert_eq!(out.status.code(), Some(2), "{kwargs}");
        assert!(
            text(&out.stderr).contains(message),
            "{kwargs}: {}",
            text(&out.stderr)
        );
    }
}

// ---------------------------------------------------------------- candle-adapter

/// With T = 1e-310, `logits / T` overflows to +inf for every finite logit;
/// candle never computes it (it scales the noise by T in f32, which is 0), so
/// it returns the argmax, index 1. The adapter decides this on the f32 logits.
#[test]
fn gumbel_with_a_subnormal_temperature_is_candles_argmax() {
    let a = answer(
        "candle",
        r#"{"logits": [1, 2], "params": {"sampling": "GumbelSoftmax", "temperature": 1e-310}}"#,
    );
    assert_eq!(probs(&a), vec![0.0, 1.0]);
}

// ---------------------------------------------------------------- fuzz corpus

/// Every file of `fuzz/corpus/<target>/` and `fuzz/regressions/<target>/`.
fn corpus(target: &str) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let mut files = Vec::new();
    for dir in ["corpus", "regressions"] {
        let Ok(entries) = std::fs::read_dir(root.join(dir).join(target)) else {
            continue;
        };
        for entry in entries {
            let path = entry.expect("corpus entry").path();
            if path.is_file() {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// Replays one target's corpus through its harness, naming the file that fails.
fn replay(target: &str, harness: fn(&[u8]), at_least: usize) {
    let files = corpus(target);
    assert!(
        files.len() >= at_least,
        "{target}: only {} corpus files",
        files.len()
    );
    for path in files {
        let data = std::fs::read(&path).expect("read corpus file");
        let result = std::panic::catch_unwind(|| harness(&data));
        assert!(
            result.is_ok(),
            "{target}: {} fails its harness",
            path.display()
        );
    }
}

#[test]
fn fuzz_corpus_probe_replay_replays() {
    replay("probe_replay", harness::probe_replay, 4);
}

#[test]
fn fuzz_corpus_compare_dist_replays() {
    replay("compare_dist", harness::compare_dist, 10);
}

#[test]
fn fuzz_corpus_compare_diff_replays() {
    // The dist corpus: the same records, read as generate kwargs.
    replay("compare_dist", harness::compare_diff, 10);
}

#[test]
fn fuzz_corpus_compare_request_replays() {
    // The dist corpus: each record's params read as an OpenAI-style request.
    replay("compare_dist", harness::compare_request, 10);
}

#[test]
fn fuzz_corpus_hf_sampler_replays() {
    replay("hf_sampler", harness::hf_sampler, 20);
}

#[test]
fn fuzz_corpus_spec_line_replays() {
    replay("spec_line", harness::spec_line, 10);
}

#[test]
fn fuzz_corpus_fixture_replays() {
    replay("fixture", harness::fixture, 10);
}

#[test]
fn fuzz_corpus_speculative_args_replays() {
    replay("speculative_args", harness::speculative_args, 7);
}
