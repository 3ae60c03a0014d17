//! Parameters: temperature, top-k, top-p, penalties and input ids at and
//! beyond their edge values.

use super::helpers::{all_errors, answer, assert_close, candle, hf, probs, spec};

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
                "params: `temperature` = \"nan\": invalid type: string \"nan\", expected f64",
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
                "`temperature` = \"nan\": invalid type: string \"nan\", expected f64",
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
        &[(&s("2.5"), "params: `top_k` = 2.5: expected an integer")],
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
                "`k` = -1: invalid value: integer `-1`, expected usize",
            ),
            (
                &c("2.5"),
                "`k` = 2.5: invalid type: floating point `2.5`, expected usize",
            ),
            // candle fails at draw time on k = 0: its own error, with why.
            (
                &c("0"),
                "candle: Weights sequence is empty/too long/unordered (candle's own error: k = 0 \
                 keeps no token to draw from)",
            ),
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
                "params: `top_p` = \"nan\": invalid type: string \"nan\", expected f64",
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
        &[(
            &c("\"nan\""),
            "`p` = \"nan\": invalid type: string \"nan\", expected f64",
        )],
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
