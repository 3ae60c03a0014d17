//! Every rejection names its field (and index) and quotes the value; the
//! accepted out-of-range values are accepted.

use serde_json::{Value, json};
use spec_sampler::{Input, InputError, Params, sample};

fn valid() -> Value {
    json!({
        "logits": [1.0, 2.0, "-inf"],
        "temperature": 1.0,
        "top_k": 0,
        "top_p": 1.0,
        "repetition_penalty": 1.0,
        "previous_tokens": [0],
        "u": 0.5
    })
}

fn with(field: &str, value: Value) -> Value {
    let mut line = valid();
    line[field] = value;
    line
}

#[track_caller]
fn rejects(value: &Value, needles: &[&str]) -> InputError {
    let error = match Input::from_json(value) {
        Ok(input) => panic!("accepted {value}: {input:?}"),
        Err(error) => error,
    };
    let message = error.to_string();
    for needle in needles {
        assert!(
            message.contains(needle),
            "message {message:?} lacks {needle:?}"
        );
    }
    error
}

#[test]
fn the_valid_base_is_valid() {
    assert!(Input::from_json(&valid()).is_ok());
}

#[test]
fn logit_strings_other_than_neg_inf() {
    for bad in [
        "inf",
        "+inf",
        "nan",
        "NaN",
        "-Infinity",
        "Infinity",
        " -inf",
        "-INF",
        "1.0",
        "",
    ] {
        let line = with("logits", json!([0.0, bad]));
        let error = rejects(&line, &["logits[1]", &format!("{:?}", bad)]);
        assert_eq!(
            error,
            InputError::InvalidLogit {
                index: 1,
                value: serde_json::to_string(bad).expect("string"),
            }
        );
    }
}

#[test]
fn logit_values_of_other_types() {
    for bad in [json!(null), json!(true), json!([1.0]), json!({"x": 1})] {
        rejects(&with("logits", json!([0.0, 1.0, bad])), &["logits[2]"]);
    }
}

#[test]
fn nan_and_plus_inf_from_rust() {
    let logits = |v: Vec<f64>| Input::from_parts(v, Vec::new(), neutral_params());
    let error = logits(vec![0.0, 1.0, f64::NAN]).expect_err("NaN");
    assert_eq!(
        error.to_string(),
        "`logits[2]` must be a finite number or the string \"-inf\", got NaN"
    );
    let error = logits(vec![f64::INFINITY]).expect_err("+inf");
    assert!(error.to_string().contains("logits[0]") && error.to_string().contains("inf"));
    assert!(logits(vec![f64::NEG_INFINITY]).is_ok());
}

#[test]
fn empty_or_non_array_logits() {
    assert_eq!(
        rejects(&with("logits", json!([])), &["logits", "empty"]),
        InputError::EmptyLogits
    );
    rejects(
        &with("logits", json!("1, 2")),
        &["logits", "array", "\"1, 2\""],
    );
    assert_eq!(
        Input::from_parts(vec![], Vec::new(), neutral_params()),
        Err(InputError::EmptyLogits)
    );
}

#[test]
fn missing_fields() {
    for field in [
        "logits",
        "temperature",
        "top_k",
        "top_p",
        "repetition_penalty",
        "previous_tokens",
        "u",
    ] {
        let mut line = valid();
        line.as_object_mut().expect("object").remove(field);
        assert_eq!(rejects(&line, &[field]), InputError::MissingField(field));
    }
}

#[test]
fn wrong_types() {
    rejects(
        &with("temperature", json!("1.0")),
        &["temperature", "number", "\"1.0\""],
    );
    rejects(&with("top_p", json!(null)), &["top_p", "null"]);
    rejects(
        &with("repetition_penalty", json!(true)),
        &["repetition_penalty", "true"],
    );
    rejects(&with("u", json!([0.5])), &["`u`", "[0.5]"]);
    rejects(&with("top_k", json!("2")), &["top_k", "integer", "\"2\""]);
    rejects(
        &with("previous_tokens", json!(3)),
        &["previous_tokens", "array", "3"],
    );
    rejects(
        &with("previous_tokens", json!({"0": 1})),
        &["previous_tokens"],
    );
}

#[test]
fn temperature_range() {
    rejects(&with("temperature", json!(-0.5)), &["temperature", "-0.5"]);
    rejects(
        &with("temperature", json!(-1e-300)),
        &["temperature", "-1e-300"],
    );
    assert!(Input::from_json(&with("temperature", json!(150.0))).is_ok());
    assert!(Input::from_json(&with("temperature", json!(0))).is_ok());
    assert!(Input::from_json(&with("temperature", json!(-0.0))).is_ok());
}

#[test]
fn top_p_range() {
    rejects(&with("top_p", json!(0.0)), &["top_p", "(0, 1]", "0.0"]);
    rejects(&with("top_p", json!(-0.1)), &["top_p", "-0.1"]);
    rejects(&with("top_p", json!(1.5)), &["top_p", "1.5"]);
    rejects(&with("top_p", json!(1.0000000000000002)), &["top_p"]);
    assert!(Input::from_json(&with("top_p", json!(1))).is_ok());
    assert!(Input::from_json(&with("top_p", json!(5e-324))).is_ok());
}

#[test]
fn repetition_penalty_range() {
    rejects(
        &with("repetition_penalty", json!(0.0)),
        &["repetition_penalty", "0.0"],
    );
    rejects(
        &with("repetition_penalty", json!(-2.0)),
        &["repetition_penalty", "-2.0"],
    );
    assert!(Input::from_json(&with("repetition_penalty", json!(0.5))).is_ok());
    assert!(Input::from_json(&with("repetition_penalty", json!(1000.0))).is_ok());
}

#[test]
fn u_range() {
    rejects(&with("u", json!(1.0)), &["`u`", "[0, 1)", "1.0"]);
    rejects(&with("u", json!(1)), &["`u`"]);
    rejects(&with("u", json!(-0.1)), &["`u`", "-0.1"]);
    rejects(&with("u", json!(2.5)), &["`u`", "2.5"]);
    assert!(Input::from_json(&with("u", json!(0))).is_ok());
    assert!(Input::from_json(&with("u", json!(0.9999999999999999))).is_ok());
}

#[test]
fn top_k_must_be_integral() {
    rejects(&with("top_k", json!(1.5)), &["top_k", "integer", "1.5"]);
    rejects(&with("top_k", json!(-0.5)), &["top_k", "-0.5"]);
    // Integral floats denote integers: 2.0 is 2, 1e9 is 10^9.
    for (value, k) in [
        (json!(2.0), 2),
        (json!(1e9), 1_000_000_000),
        (json!(-1.0), -1),
    ] {
        let input = Input::from_json(&with("top_k", value)).expect("integral top_k");
        assert_eq!(input.params().top_k.get(), k);
    }
    // Beyond i64: saturated, still "keep all".
    let input = Input::from_json(&with("top_k", json!(18446744073709551615u64))).expect("huge");
    assert_eq!(input.params().top_k.get(), i64::MAX);
    assert_eq!(input.params().top_k.effective(3), None);
}

#[test]
fn previous_tokens_must_be_integers() {
    rejects(
        &with("previous_tokens", json!([0, 1.5])),
        &["previous_tokens[1]", "1.5"],
    );
    rejects(
        &with("previous_tokens", json!([0, 1, "2"])),
        &["previous_tokens[2]", "\"2\""],
    );
    rejects(
        &with("previous_tokens", json!([null])),
        &["previous_tokens[0]", "null"],
    );
    let input = Input::from_json(&with("previous_tokens", json!([1.0, -3, 99]))).expect("valid");
    assert_eq!(input.previous_tokens(), &[1, -3, 99]);
}

#[test]
fn unknown_fields_are_ignored() {
    let mut line = valid();
    line["comment"] = json!("ignored");
    line["input_ids"] = json!([1, 2]);
    let a = Input::from_json(&line).expect("valid");
    let b = Input::from_json(&valid()).expect("valid");
    assert_eq!(a, b);
}

#[test]
fn not_json_or_not_an_object() {
    for text in [
        "",
        "{",
        "not json",
        "{\"logits\": [1,]}",
        "[1, 2, 3]",
        "null",
        "42",
    ] {
        let error = Input::from_json_str(text).expect_err(text);
        assert!(
            matches!(error, InputError::Json(_) | InputError::NotAnObject(_)),
            "{text:?}: {error:?}"
        );
    }
    assert!(
        Input::from_json_str("[1, 2]")
            .expect_err("array")
            .to_string()
            .contains("[1,2]")
    );
    // Numbers beyond f64 and invalid UTF-8 are JSON errors, not panics.
    let error = Input::from_json_str(r#"{"logits": [1e400]}"#).expect_err("overflow");
    assert!(matches!(error, InputError::Json(_)), "{error:?}");
    let error = Input::from_json_slice(b"{\"logits\": [\"\xff\"]}").expect_err("utf8");
    assert!(matches!(error, InputError::Json(_)), "{error:?}");
}

#[test]
fn params_alone_from_json() {
    let params = Params::from_json(&json!({
        "temperature": 0.7, "top_k": 40, "top_p": 0.9, "repetition_penalty": 1.1, "u": 0.3
    }))
    .expect("valid params");
    assert_eq!(params.temperature.get(), 0.7);
    assert_eq!(params.top_k.get(), 40);
    assert_eq!(params.top_p.get(), 0.9);
    assert_eq!(params.repetition_penalty.get(), 1.1);
    assert_eq!(params.u.get(), 0.3);
    let error = Params::from_json(&json!({"temperature": 0.7})).expect_err("missing");
    assert_eq!(error, InputError::MissingField("top_k"));
    let error = Params::from_json(&json!([0.7])).expect_err("not an object");
    assert!(matches!(error, InputError::NotAnObject(_)));
    assert_eq!(Params::try_from(params.to_json()), Ok(params));
}

#[test]
fn long_values_are_shortened_in_messages() {
    let long = "x".repeat(10_000);
    let message = rejects(&with("logits", json!([long])), &["logits[0]", "…"]).to_string();
    assert!(message.len() < 300, "{message}");
}

#[test]
fn huge_inputs_do_not_panic() {
    // A large vocabulary with every token penalised, extreme values everywhere.
    let logits: Vec<f64> = (0..5000)
        .map(|i| {
            if i % 7 == 0 {
                f64::NEG_INFINITY
            } else {
                (i as f64) * 1e300 - 2e303
            }
        })
        .collect();
    let params = Params::from_json(&json!({
        "temperature": 1e-308, "top_k": 1e18, "top_p": 1e-300, "repetition_penalty": 1e300, "u": 0.0
    }))
    .expect("valid params");
    let input = Input::from_parts(logits, (-10..6000).collect(), params).expect("valid");
    let out = sample(&input);
    // top_k 1e18 ≥ V keeps all; the largest weight is e^0 = 1 out of at most
    // 5000, so the first token in logit order already reaches top_p = 1e-300
    // and is kept alone: the final softmax is one-hot and sums to exactly 1.
    assert!(out.token_id >= 0);
    assert_eq!(out.probs.iter().sum::<f64>(), 1.0);
}

/// Temperature 1, no top-k, top-p 1, no penalty, u 0.
fn neutral_params() -> Params {
    Params::from_json(&json!({
        "temperature": 1.0, "top_k": 0, "top_p": 1.0, "repetition_penalty": 1.0, "u": 0.0
    }))
    .expect("valid params")
}

/// `compare semantics`' list is `SpecParams`' declaration: every field is
/// required (leaving one out is refused naming it), one of each is enough,
/// and an unknown key is the shared refusal naming the spec's fields.
#[test]
fn the_listed_params_are_the_parsers_and_all_required() {
    use parity_core::Semantics;
    use spec_sampler::Spec;
    let full =
        json!({"temperature": 0.7, "top_k": 2, "top_p": 0.9, "repetition_penalty": 1.1, "u": 0.5});
    let full = full.as_object().expect("object");
    let listed = Spec.info().params;
    let names: Vec<_> = listed.iter().map(|p| p.name).collect();
    assert_eq!(
        names,
        ["temperature", "top_k", "top_p", "repetition_penalty", "u"]
    );
    assert!(Spec.parse_params(full).is_ok());
    for p in listed {
        assert_eq!(p.default, "required", "{}", p.name);
        let mut one = full.clone();
        one.remove(p.name);
        let e = Spec.parse_params(&one).expect_err(p.name);
        assert_eq!(e.to_string(), format!("params: missing field `{}`", p.name));
    }
    let mut extra = full.clone();
    extra.insert("previous_tokens".into(), json!([1]));
    assert_eq!(
        Spec.parse_params(&extra).expect_err("unknown").to_string(),
        "params: unknown field `previous_tokens` (= [1]) for spec; known: temperature, top_k, \
         top_p, repetition_penalty, u"
    );
}
