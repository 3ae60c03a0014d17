//! Hostile input to the `spec-sampler` binary (docs/robustness.md): one line
//! per row of the table, each answered by its own output line; plus the
//! 100 MB line. Empty input and a closed standard output are in `cli.rs`
//! (`empty_input_is_success_with_no_output`, `closed_stdout_is_not_a_panic`).

use std::io::Write;
use std::process::Output;

use serde_json::Value;

/// The parameters of a valid line, after `"logits": [...]`.
const REST: &str = r#""temperature": 1.0, "top_k": 0, "top_p": 1.0, "repetition_penalty": 1.0, "previous_tokens": [], "u": 0.5"#;

fn run(input: String) -> Output {
    let mut child = crate::spawn(&[]);
    let mut pipe = child.stdin.take().expect("stdin");
    let writer = std::thread::spawn(move || pipe.write_all(input.as_bytes()));
    let output = child.wait_with_output().expect("wait");
    writer.join().expect("writer").expect("all input read");
    output
}

/// A line with these logits and the valid parameters, with `field` replaced.
fn line(logits: &str, field: Option<(&str, &str)>) -> String {
    let mut rest = REST.to_string();
    if let Some((name, value)) = field {
        let start = rest.find(&format!("\"{name}\"")).expect("known field");
        let end = rest[start..].find(", ").map_or(rest.len(), |e| start + e);
        rest.replace_range(start..end, &format!("\"{name}\": {value}"));
    }
    format!(r#"{{"logits": {logits}, {rest}}}"#)
}

#[test]
fn every_row_of_the_table_gets_its_own_answer() {
    let l = "[1.0, 0.0, -1.0]";
    // (input line, expected error or the expected output line)
    let cases: Vec<(String, &str)> = vec![
        // malformed JSON
        (
            "{".into(),
            "invalid JSON: EOF while parsing an object at line 1 column 1",
        ),
        (
            "not json".into(),
            "invalid JSON: expected ident at line 1 column 2",
        ),
        (r#"[1, 2]"#.into(), "expected a JSON object, got [1,2]"),
        // wrong types
        (
            r#"{"logits": "1, 2"}"#.into(),
            "field `logits` must be an array",
        ),
        (
            line(l, Some(("temperature", "\"1\""))),
            "field `temperature` must be a number, got \"1\"",
        ),
        (
            line(l, Some(("previous_tokens", "[0, \"1\"]"))),
            "`previous_tokens[1]` must be an integer, got \"1\"",
        ),
        (
            line(l, Some(("previous_tokens", "[1.5]"))),
            "`previous_tokens[0]` must be an integer, got 1.5",
        ),
        // missing fields
        (r#"{"logits": [1.0]}"#.into(), "missing field `temperature`"),
        (
            REST.replace("\"temperature\"", "{\"temperature\"") + "}",
            "missing field `logits`",
        ),
        // empty logits
        (line("[]", None), "field `logits` must not be empty"),
        // NaN and infinities
        (
            line(r#"[0, "nan"]"#, None),
            "`logits[1]` must be a finite number or the string \"-inf\", got \"nan\"",
        ),
        (
            line(r#"[0, "inf"]"#, None),
            "`logits[1]` must be a finite number or the string \"-inf\", got \"inf\"",
        ),
        (
            line(r#"[0, "+inf"]"#, None),
            "`logits[1]` must be a finite number or the string \"-inf\", got \"+inf\"",
        ),
        (line("[0, NaN]", None), "invalid JSON: expected value"),
        (
            line("[0, 1e999]", None),
            "invalid JSON: number out of range",
        ),
        // temperature
        (
            line(l, Some(("temperature", "-1.0"))),
            "field `temperature` must be a finite number >= 0, got -1.0",
        ),
        (
            line(l, Some(("temperature", "\"nan\""))),
            "field `temperature` must be a number, got \"nan\"",
        ),
        // top_k
        (
            line(l, Some(("top_k", "2.5"))),
            "field `top_k` must be an integer, got 2.5",
        ),
        // top_p
        (
            line(l, Some(("top_p", "0.0"))),
            "field `top_p` must be a number in (0, 1], got 0.0",
        ),
        (
            line(l, Some(("top_p", "-0.5"))),
            "field `top_p` must be a number in (0, 1], got -0.5",
        ),
        (
            line(l, Some(("top_p", "1.5"))),
            "field `top_p` must be a number in (0, 1], got 1.5",
        ),
        (
            line(l, Some(("top_p", "\"nan\""))),
            "field `top_p` must be a number, got \"nan\"",
        ),
        // penalties
        (
            line(l, Some(("repetition_penalty", "0.0"))),
            "field `repetition_penalty` must be a finite number > 0, got 0.0",
        ),
        (
            line(l, Some(("repetition_penalty", "-2.0"))),
            "field `repetition_penalty` must be a finite number > 0, got -2.0",
        ),
    ];
    let answers: Vec<(String, &str)> = vec![
        // Unknown fields are ignored (documented): richer records pass as is.
        (
            line(l, None).replace("{\"logits\"", "{\"comment\": 1, \"logits\""),
            ANSWER_1_0_M1,
        ),
        // Every logit -inf: token -1 and zeros.
        (
            line(r#"["-inf", "-inf"]"#, None),
            r#"{"token_id":-1,"probs":[0.0,0.0]}"#,
        ),
        // ±3.4e38 with T = 1e-30: exact in f64, no overflow.
        (
            line("[3.4e38, 3.3e38, -3.4e38]", Some(("temperature", "1e-30"))),
            r#"{"token_id":0,"probs":[1.0,0.0,0.0]}"#,
        ),
        // T = 0 is greedy; T = 1e-30 its limit.
        (
            line(l, Some(("temperature", "0.0"))),
            r#"{"token_id":0,"probs":[1.0,0.0,0.0]}"#,
        ),
        (
            line(l, Some(("temperature", "1e-30"))),
            r#"{"token_id":0,"probs":[1.0,0.0,0.0]}"#,
        ),
        // k ≤ 0 and k ≥ V keep all, integral floats are integers.
        (line(l, Some(("top_k", "-3"))), ANSWER_1_0_M1),
        (line(l, Some(("top_k", "1e300"))), ANSWER_1_0_M1),
        (
            line(l, Some(("top_k", "18446744073709551616"))),
            ANSWER_1_0_M1,
        ),
        // A huge penalty on tokens 0 and 2: [1/1e300, 0, -1e300].
        (
            line(l, Some(("repetition_penalty", "1e300")))
                .replace("\"previous_tokens\": []", "\"previous_tokens\": [0, 2]"),
            // u = 0.5 is not < 0.5, so the draw passes token 0.
            r#"{"token_id":1,"probs":[0.5,0.5,0.0]}"#,
        ),
        // previous_tokens negative, ≥ V and huge are ignored.
        (
            line(l, Some(("repetition_penalty", "2.0"))).replace(
                "\"previous_tokens\": []",
                "\"previous_tokens\": [-1, 3, 9223372036854775807, 1e30]",
            ),
            ANSWER_1_0_M1,
        ),
    ];
    let input: String = cases
        .iter()
        .map(|c| c.0.as_str())
        .chain(answers.iter().map(|a| a.0.as_str()))
        .flat_map(|l| [l, "\n"])
        .collect();
    let output = run(input);
    let stdout = String::from_utf8(output.stdout).expect("utf-8");
    let stderr = String::from_utf8(output.stderr).expect("utf-8");
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), cases.len() + answers.len(), "{stdout}");
    for (i, ((input, message), out)) in cases.iter().zip(&lines).enumerate() {
        let v: Value = serde_json::from_str(out).expect("JSON");
        let got = v["error"]
            .as_str()
            .unwrap_or_else(|| panic!("{input}\nno error: {out}"));
        assert!(
            got.contains(message),
            "{input}\nexpected {message:?} in {got:?}"
        );
        assert!(
            stderr.contains(&format!("spec-sampler: line {}: ", i + 1)),
            "line {} not named:\n{stderr}",
            i + 1
        );
    }
    for ((input, expected), out) in answers.iter().zip(&lines[cases.len()..]) {
        assert_eq!(out, expected, "{input}");
    }
}

/// softmax([1, 0, -1]) = e/(e + 1 + 1/e) = 0.66524095577482185..., 1/(e + 1 + 1/e),
/// e^-1/(e + 1 + 1/e); with u = 0.5 the draw is token 0.
const ANSWER_1_0_M1: &str =
    r#"{"token_id":0,"probs":[0.6652409557748218,0.24472847105479764,0.09003057317038046]}"#;

#[test]
fn a_100_mb_line_is_refused_without_buffering_and_the_next_line_answered() {
    // Regression: the line was read whole and parsed (~2 GB for 100 MB);
    // now anything over 64 MiB is skipped as it streams past.
    let mut child = crate::spawn(&[]);
    let mut pipe = child.stdin.take().expect("stdin");
    let writer = std::thread::spawn(move || -> std::io::Result<()> {
        pipe.write_all(b"{\"logits\": [")?;
        let chunk = "0,".repeat(1 << 19); // 1 MiB
        for _ in 0..100 {
            pipe.write_all(chunk.as_bytes())?;
        }
        pipe.write_all(b"0], ")?;
        pipe.write_all(REST.as_bytes())?;
        pipe.write_all(b"}\n")?;
        writeln!(pipe, "{}", line("[0, 0]", None))
    });
    let output = child.wait_with_output().expect("wait");
    writer.join().expect("writer").expect("all input read");
    assert_eq!(output.status.code(), Some(1));
    // 67108864 = 64 MiB. [0, 0]: equal logits, 1/2 each; cumulative 0.5 is
    // not > u = 0.5, 1.0 is → token 1.
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "{\"error\":\"line is longer than 67108864 bytes; refusing to read it\"}\n\
         {\"token_id\":1,\"probs\":[0.5,0.5]}\n"
    );
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "spec-sampler: line 1: line is longer than 67108864 bytes; refusing to read it\n"
    );
}

#[test]
fn a_line_just_under_the_limit_is_read() {
    // 64 MiB exactly (without the newline) is accepted: ~16.7 M logits of 0
    // would be slow to sample, so the line is padded with spaces instead.
    let valid = line("[0, 0]", None);
    let mut input = " ".repeat(64 * 1024 * 1024 - valid.len());
    input.push_str(&valid);
    input.push('\n');
    let output = run(input);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    // [0, 0]: 1/2 each; cumulative 0.5 is not > u = 0.5 → token 1.
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "{\"token_id\":1,\"probs\":[0.5,0.5]}\n"
    );
}
