//! The spec's three examples (`docs/spec.md`, "Worked examples"), input
//! and output verbatim.

use spec_sampler::{Input, Output, sample};

const EXAMPLE_1: &str = r#"{"logits": [2.0, 1.0, 0.0, -1.0], "temperature": 1.0, "top_k": 2, "top_p": 1.0, "repetition_penalty": 1.0, "previous_tokens": [], "u": 0.3}"#;

fn check(input: &str, expected: &str) {
    let output = sample(&Input::from_json_str(input).expect("valid example"));
    let expected: Output = serde_json::from_str(expected).expect("expected output parses");
    // Exact equality: these are the spec's printed values.
    assert_eq!(output, expected);
}

#[test]
fn example_1_top_k_two() {
    // top-k = 2 keeps 0 and 1: e^2/(e^2+e^1) = 1/(1+e^-1) = 0.7310585786300049,
    // e^1/(e^2+e^1) = 0.2689414213699951; u = 0.3 < 0.7311 → token 0.
    check(
        EXAMPLE_1,
        r#"{"token_id": 0, "probs": [0.7310585786300049, 0.2689414213699951, 0.0, 0.0]}"#,
    );
}

#[test]
fn example_2_greedy() {
    // T = 0: argmax is index 1 (3.0); one-hot; u ignored.
    check(
        r#"{"logits": [0.5, 3.0, 1.0], "temperature": 0.0, "top_k": 0, "top_p": 1.0, "repetition_penalty": 1.0, "previous_tokens": [], "u": 0.99}"#,
        r#"{"token_id": 1, "probs": [0.0, 1.0, 0.0]}"#,
    );
}

#[test]
fn example_3_penalty() {
    // Token 1: 1.0 > 0 so 1.0/2 = 0.5. Softmax of [1, 0.5, 1]:
    // 1/(2+e^-0.5) = 1/2.6065306597126334 = 0.38365173119055074,
    // e^-0.5/(2+e^-0.5) = 0.23269653761889864.
    // Cumulative 0.3837 ≤ 0.5, then 0.6163 > 0.5 → token 1.
    check(
        r#"{"logits": [1.0, 1.0, 1.0], "temperature": 1.0, "top_k": 0, "top_p": 1.0, "repetition_penalty": 2.0, "previous_tokens": [1], "u": 0.5}"#,
        r#"{"token_id": 1, "probs": [0.38365173119055074, 0.23269653761889864, 0.38365173119055074]}"#,
    );
}

#[test]
fn example_1_serialises_as_the_spec_prints_it() {
    let input = Input::from_json_str(EXAMPLE_1).expect("valid");
    // The probabilities worked out in example_1_top_k_two.
    assert_eq!(
        sample(&input).to_json_line(),
        r#"{"token_id":0,"probs":[0.7310585786300049,0.2689414213699951,0.0,0.0]}"#
    );
}
