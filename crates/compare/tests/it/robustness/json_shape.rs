//! JSON shape: malformed records, wrong types, missing and unknown fields.

use super::helpers::{SPEC, all_errors, answer, candle, hf, probs, spec};
use crate::helpers::{run, text_lossy};

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
                (
                    "[1, 2]",
                    "invalid record: a bare JSON array, not a record; a record is one JSON \
                     object per line",
                ),
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
        text_lossy(&out.stdout).contains("invalid record"),
        "{}",
        text_lossy(&out.stdout)
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
                "params: `temperature` = \"1\": invalid type: string \"1\", expected f64",
            ),
            (
                &spec(
                    r#""temperature": 1, "top_k": "2", "top_p": 1.0, "repetition_penalty": 1.0, "u": 0.5"#,
                ),
                "params: `top_k` = \"2\": expected an integer",
            ),
        ],
    );
    all_errors(
        "candle",
        &[
            (
                &candle(r#"{"sampling": 3}"#),
                "`sampling` = 3: invalid type: integer `3`, expected a string",
            ),
            (
                &candle(r#"{"sampling": "All", "temperature": "1"}"#),
                "`temperature` = \"1\": invalid type: string \"1\", expected f64",
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
            (r#"{"logits": [1, 0]}"#, "missing field `sampling`"),
            (
                &candle(r#"{"sampling": "TopK", "temperature": 1.0}"#),
                "`sampling` = \"TopK\": missing field `k`",
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
            "params: unknown field `previous_tokens` (= [0]) for spec",
        )],
    );
    all_errors(
        "candle",
        &[(
            &candle(r#"{"sampling": "All", "temperature": 1.0, "top_k": 2}"#),
            "unknown field `top_k` (= 2) for candle",
        )],
    );
    // hf: an unknown kwarg set to null is ignored, as transformers ignores it.
    answer("hf", &hf(r#"{"do_sample": true, "temprature": null}"#));
}
