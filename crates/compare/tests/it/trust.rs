//! No check passes by accident, and the rough edges a new user hits
//! (issue 27): thresholds that cannot fail, a verdict lost to a closed pipe,
//! a diff of nothing, tests that pass without their real component, greedy
//! kwargs that look like sampling, unbounded sizes, Python's JSON floats and
//! lines wider than the terminal.

use std::path::Path;

use serde_json::Value;

use crate::helpers::{compare, text, usage_error, with_closed_stdout};

/// Runs `compare` with its stdout a pipe whose reading end is closed before
/// the first byte is written (a reader such as `head -c0`); returns the exit
/// status and stderr.
fn with_stdout_closed(args: &[&str], stdin: &str) -> (Option<i32>, String) {
    let out = with_closed_stdout(args, stdin.as_bytes());
    (out.status.code(), text(&out.stderr))
}

fn vocab_path() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/smollm2/vocab.json")
        .display()
        .to_string()
}

/// Every line of `s` at most 100 columns.
#[track_caller]
fn narrow(what: &str, s: &str) {
    for line in s.lines() {
        assert!(
            line.chars().count() <= 100,
            "{what}: a line of {} columns:\n{line}",
            line.chars().count()
        );
    }
}

#[test]
fn thresholds_that_could_never_fail_are_usage_errors() {
    // TV and max |Δp| lie in [0, 1]: NaN compares false with every figure and
    // anything above 1 can never be exceeded, so each would pass any report.
    for flag in ["--max-tv", "--max-abs-diff"] {
        for value in ["NaN", "nan", "inf", "1e999", "2", "-0.1", "x"] {
            let arg = format!("{flag}={value}");
            usage_error(
                "report",
                &[&arg],
                &format!("{value} is not a number in the range [0, 1]"),
            );
        }
    }
}

#[test]
fn a_failed_check_exits_1_however_stdout_ends() {
    // The default report has rows with TV well above 0.01 (candle's literal
    // port: transformers' default top-k 50).
    for format in ["text", "json"] {
        let (code, err) = with_stdout_closed(
            &[
                "report", "--draws", "0", "--max-tv", "0.01", "--format", format,
            ],
            "",
        );
        assert_eq!(code, Some(1), "{format}: {err}");
        assert!(!err.contains("Broken pipe"), "{format}: {err}");
    }
    // Nothing failed: a reader that stopped early is not an error.
    let (code, err) = with_stdout_closed(&["report", "--draws", "0", "--format", "json"], "");
    assert_eq!(code, Some(0), "{err}");
    // diff --fail-on finishes the batch: the second record differs.
    let same = r#"{"logits": [3, 2, 1], "params": {"do_sample": true, "top_k": 2}}"#;
    let differs = r#"{"logits": [3, 2, 2, 1], "params": {"do_sample": true, "top_k": 2}}"#;
    let input = format!("{same}\n{differs}\n");
    let (code, err) = with_stdout_closed(&["diff", "--fail-on", "differs"], &input);
    assert_eq!(code, Some(1), "{err}");
    let (code, err) = with_stdout_closed(&["diff", "--fail-on", "differs"], &format!("{same}\n"));
    assert_eq!(code, Some(0), "{err}");
}

#[test]
fn a_diff_or_dist_of_nothing_is_a_usage_error() {
    for args in [
        &["diff", "--fail-on", "differs"][..],
        &["dist", "--semantics", "hf"],
    ] {
        for input in ["", "\n  \n"] {
            let out = compare(args, input);
            assert_eq!(out.status.code(), Some(2), "{args:?} {input:?}");
            assert!(
                text(&out.stderr).contains("nothing compared: no record on stdin"),
                "{}",
                text(&out.stderr)
            );
        }
    }
}

#[test]
fn ties_refuses_logits_that_are_not_float32() {
    for (logits, expected) in [
        ("nan,1,2", "is NaN"),
        ("1,inf,2", "is +inf: only -inf (a masked token) is allowed"),
        ("1e39,1,2", "\"1e39\" does not fit in float32"),
        ("1,x,2", "\"x\" is not a number"),
    ] {
        let out = compare(&["ties", "--draws", "0", "--logits", logits], "");
        assert_eq!(out.status.code(), Some(2), "{logits}");
        assert!(out.stdout.is_empty(), "{logits}");
        let err = text(&out.stderr);
        assert!(err.contains(expected), "{logits}: {err}");
    }
    // -inf masks a token.
    let out = compare(&["ties", "--draws", "0", "--logits", "3,2,2,-inf"], "");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

#[test]
fn a_string_temperature_is_called_a_string() {
    let record = r#"{"logits": [3, 2, 1], "params": {"do_sample": true, "temperature": "0.7"}}"#;
    let out = compare(&["dist", "--semantics", "hf"], &format!("{record}\n"));
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("(=0.7) has to be a strictly positive float"),
        "{err}"
    );
    assert!(err.contains("The value is a JSON string"), "{err}");
}

#[test]
fn an_empty_fixtures_variable_is_unset() {
    let out = std::process::Command::new(crate::helpers::COMPARE)
        .args(["report", "--draws", "0"])
        .env("SAMPLING_PARITY_FIXTURES", "")
        .output()
        .expect("run compare");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // Paths print from the root, not through the crate's folder.
    let t = text(&out.stdout);
    assert!(!t.contains("/../../"), "{t}");
}

#[test]
fn sampling_kwargs_without_do_sample_say_what_transformers_says() {
    let kwargs = r#"{"temperature":0.7,"top_p":0.9}"#;
    let detail = "`do_sample` is not set to `True`. However, `temperature` is set to `0.7` -- this \
                  flag is only used in sample-based generation modes. You should set \
                  `do_sample=True` or unset `temperature`.";
    let message = "The following generation flags are not valid and may be ignored: \
                   ['temperature', 'top_p']. Set `TRANSFORMERS_VERBOSITY=info` for more details.";
    let out = compare(&["translate", "--to", "llama.cpp", "--kwargs", kwargs], "");
    assert_eq!(out.status.code(), Some(0));
    // Wrapped on stderr: compare with the spaces normalised.
    let err = text(&out.stderr)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        err.starts_with("warning: without `do_sample=True` transformers decodes greedily"),
        "{err}"
    );
    assert!(err.contains(message), "{err}");
    assert!(err.contains(detail), "{err}");
    narrow("translate stderr", &text(&out.stderr));
    let out = compare(
        &[
            "translate",
            "--to",
            "llama.cpp",
            "--kwargs",
            kwargs,
            "--format",
            "json",
        ],
        "",
    );
    let doc: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(doc["transformers_warning"]["message"], message);
    assert_eq!(
        doc["transformers_warning"]["flags"][0]["flag"],
        "temperature"
    );
    assert_eq!(doc["transformers_warning"]["flags"][0]["detail"], detail);
    let sampling = r#"{"do_sample":true,"temperature":0.7}"#;
    let out = compare(&["translate", "--kwargs", sampling, "--format", "json"], "");
    let doc: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(doc["transformers_warning"], Value::Null);
    assert!(!text(&out.stderr).contains("warning: without"));
    // report --kwargs: the same warning, and the field in the JSON document.
    let out = compare(
        &[
            "report", "--kwargs", kwargs, "--draws", "0", "--format", "json",
        ],
        "",
    );
    let err = text(&out.stderr)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(err.contains(message), "{err}");
    let doc: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(doc["transformers_warning"]["flags"][1]["flag"], "top_p");
}

#[test]
fn diff_shows_the_repeat_windows_logit_gap() {
    // 100 distinct context ids, all logits 2.0, repetition_penalty 1.3: hf
    // penalises ids 0..99, candle[last 64] only 36..99, so ids 0..35 keep 2.0
    // where transformers has 2.0 / 1.3 = 1.538...: max |Δ logit| = 2 - 2/1.3
    // = 0.4615 (4.615e-1 in f32 too).
    let ids: Vec<String> = (0..100).map(|i| i.to_string()).collect();
    let logits = vec!["2.0"; 200].join(", ");
    let record = format!(
        r#"{{"logits": [{logits}], "input_ids": [{}], "params": {{"do_sample": true, "repetition_penalty": 1.3}}}}"#,
        ids.join(", ")
    );
    let out = compare(&["diff"], &record);
    let s = text(&out.stdout);
    // The [last 64] row's block, up to the next row.
    let start = s
        .find("  hf:candle[last 64]")
        .unwrap_or_else(|| panic!("{s}"));
    let block = &s[start..];
    let block = &block[..block[2..].find("\n  hf:").map_or(block.len(), |i| i + 2)];
    let words = block.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(words.contains("max |Δ logit| 4.615e-1"), "{block}");
    narrow("diff", &s);
    let out = compare(&["diff", "--format", "json"], &record);
    let doc: Value = serde_json::from_slice(&out.stdout).expect("json");
    let rows = doc["rows"].as_array().expect("rows");
    let window = rows
        .iter()
        .find(|r| r["variant"] == "last 64")
        .expect("a last-64 row");
    let gap = window["penalty"]["max_logit_diff"].as_f64().expect("gap");
    assert!((gap - (2.0 - 2.0 / 1.3f32 as f64)).abs() < 1e-6, "{gap}");
}

#[test]
fn sizes_are_bounded_with_a_clear_error() {
    usage_error(
        "report",
        &["--draws", "18446744073709551615"],
        "18446744073709551615 is not in 0..=10000000",
    );
    usage_error(
        "report",
        &["--draws", "4294967296"],
        "4294967296 is not in 0..=10000000",
    );
    usage_error("ties", &["--draws", "4294967296"], "is not in 0..=10000000");
    usage_error(
        "bench",
        &["--vocab", "100000000000"],
        "100000000000 is not in 2..=16777216",
    );
    usage_error(
        "bench",
        &["--reps", "18446744073709551615"],
        "is not in 1..=1000000",
    );
    usage_error("speculative", &["--k", "4294967296"], "is not in 0..=1024");
    usage_error(
        "translate",
        &["--context-len", "0"],
        "0 is not in 1..=2147483647",
    );
}

#[test]
fn a_vocabulary_of_another_size_is_refused_naming_both_sizes() {
    let vocab = vocab_path();
    let expected = format!("--vocab {vocab}: 49152 tokens, but there are 4 logits");
    let record = r#"{"logits": [3, 2, 2, 1], "params": {"do_sample": true, "top_k": 2}}"#;
    for args in [
        vec!["diff", "--vocab", &vocab],
        vec!["dist", "--semantics", "hf", "--vocab", &vocab],
    ] {
        let out = compare(&args, record);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(
            text(&out.stderr).contains(&expected),
            "{}",
            text(&out.stderr)
        );
    }
    usage_error("ties", &["--vocab", &vocab], &expected);
}

#[test]
fn an_os_error_is_printed_once() {
    let out = compare(&["diff", "--vocab", "/nonexistent/vocab.json"], "");
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert_eq!(err.matches("No such file or directory").count(), 1, "{err}");
    let out = compare(&["report", "/nonexistent/fixture.safetensors"], "");
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert_eq!(err.matches("No such file or directory").count(), 1, "{err}");
}

#[test]
fn python_json_floats_are_read_in_records() {
    // json.dumps([3.0, 2.0, float("-inf")]) == "[3.0, 2.0, -Infinity]"
    let ok = r#"{"logits": [3.0, 2.0, -Infinity], "params": {"do_sample": true}}"#;
    let out = compare(&["dist", "--semantics", "hf"], ok);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let answer: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(answer["kept"], 2);
    let nan = r#"{"logits": [3.0, NaN], "params": {"do_sample": true}}"#;
    let out = compare(&["dist", "--semantics", "hf"], nan);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("`logits[1]` must be a finite number or the string \"-inf\", got \"nan\""),
        "{err}"
    );
    let inf = r#"{"logits": [Infinity, 1.0], "params": {}}"#;
    let out = compare(&["dist", "--semantics", "hf"], inf);
    let err = text(&out.stderr);
    assert!(
        err.contains("`logits[0]` must be a finite number or the string \"-inf\", got \"inf\""),
        "{err}"
    );
    // A parameter that accepts "-inf" accepts -Infinity: hf's recorded `scores`.
    let scores = r#"{"logits": [3.0, 2.0, 1.0], "params": {"scores": [3.0, 2.0, -Infinity]}}"#;
    let out = compare(&["dist", "--semantics", "hf"], scores);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

#[test]
fn text_output_fits_in_100_columns() {
    let out = compare(&["semantics"], "");
    narrow("semantics", &text(&out.stdout));
    let vocab = vocab_path();
    // A record whose rows explain at length (top-k then top-p, default top-k 50).
    let logits: Vec<String> = (0..49152)
        .map(|i| format!("{}", -(i as f64) / 500.0))
        .collect();
    let record = format!(
        r#"{{"logits": [{}], "params": {{"do_sample": true, "top_p": 0.9, "temperature": 0.7}}}}"#,
        logits.join(",")
    );
    let out = compare(&["diff", "--vocab", &vocab, "--show-tokens", "8"], &record);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let s = text(&out.stdout);
    assert!(s.contains("why:"), "{s}");
    narrow("diff", &s);
    let out = compare(
        &[
            "translate",
            "--kwargs",
            r#"{"do_sample":true,"top_k":40,"top_p":0.9,"repetition_penalty":1.3}"#,
        ],
        "",
    );
    narrow("translate", &text(&out.stdout));
    narrow("translate stderr", &text(&out.stderr));
}

#[test]
fn a_named_setting_a_fixture_does_not_record_is_reported_skipped() {
    // The tie fixture records top_k2 (and t07); hello_k7 records t07, not top_k2.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
    let ties = dir.join("edge/ties_3221.safetensors").display().to_string();
    let hello = dir
        .join("smollm2/hello_k7.safetensors")
        .display()
        .to_string();
    let out = compare(
        &[
            "report",
            &ties,
            &hello,
            "--settings",
            "top_k2,t07",
            "--draws",
            "0",
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains("note: hello_k7 does not record top_k2; skipped there"),
        "{err}"
    );
    assert!(!err.contains("note: ties_3221"), "{err}");
}
