//! Logits: empty, NaN and infinities, every logit -inf, near f32::MAX.

use super::helpers::{SPEC, all_errors, answer, probs};

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
