//! End-to-end runs of the `spec-sampler` binary.

use std::io::Write;
use std::process::{Command, Output, Stdio};

use crate::{BIN, spawn};

const EXAMPLE_1: &str = r#"{"logits": [2.0, 1.0, 0.0, -1.0], "temperature": 1.0, "top_k": 2, "top_p": 1.0, "repetition_penalty": 1.0, "previous_tokens": [], "u": 0.3}"#;
const EXAMPLE_1_OUT: &str =
    r#"{"token_id":0,"probs":[0.7310585786300049,0.2689414213699951,0.0,0.0]}"#;
const EXAMPLE_2: &str = r#"{"logits": [0.5, 3.0, 1.0], "temperature": 0.0, "top_k": 0, "top_p": 1.0, "repetition_penalty": 1.0, "previous_tokens": [], "u": 0.99}"#;
const EXAMPLE_2_OUT: &str = r#"{"token_id":1,"probs":[0.0,1.0,0.0]}"#;

fn run_with(stdin: &[u8], args: &[&str]) -> Output {
    let mut child = spawn(args);
    let mut pipe = child.stdin.take().expect("stdin");
    let data = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        // The binary may exit before reading everything (usage errors).
        let _ = pipe.write_all(&data);
    });
    let output = child.wait_with_output().expect("wait");
    writer.join().expect("writer thread");
    output
}

fn run(stdin: &str) -> Output {
    run_with(stdin.as_bytes(), &[])
}

fn stdout_lines(output: &Output) -> Vec<String> {
    String::from_utf8(output.stdout.clone())
        .expect("utf-8 stdout")
        .lines()
        .map(str::to_owned)
        .collect()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn example_1_prints_its_result_line() {
    let output = run(&format!("{EXAMPLE_1}\n"));
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    assert_eq!(stdout_lines(&output), vec![EXAMPLE_1_OUT]);
    assert_eq!(stderr(&output), "");
}

#[test]
fn last_line_without_newline_and_crlf() {
    let output = run(&format!("{EXAMPLE_1}\r\n{EXAMPLE_2}"));
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(stdout_lines(&output), vec![EXAMPLE_1_OUT, EXAMPLE_2_OUT]);
}

#[test]
fn invalid_line_gets_an_error_object_and_exit_1() {
    let bad = EXAMPLE_1.replace("\"u\": 0.3", "\"u\": 1.5");
    let output = run(&format!("{bad}\n"));
    assert_eq!(output.status.code(), Some(1));
    let lines = stdout_lines(&output);
    assert_eq!(lines.len(), 1);
    let value: serde_json::Value = serde_json::from_str(&lines[0]).expect("json");
    let message = value["error"].as_str().expect("error string");
    assert!(
        message.contains("`u`") && message.contains("1.5"),
        "{message}"
    );
    assert_eq!(value.as_object().expect("object").len(), 1);
    let err = stderr(&output);
    assert!(err.contains("line 1") && err.contains(message), "{err}");
    assert!(!err.contains("panicked"));
}

#[test]
fn mixed_valid_invalid_and_blank_lines() {
    let input = format!(
        "{EXAMPLE_1}\n{}\n\n   \n{EXAMPLE_2}\nnot json\n{}\n",
        EXAMPLE_1.replace("[2.0, 1.0", "[\"inf\", 1.0"),
        EXAMPLE_2.replace("\"top_k\": 0", "\"top_k\": 1.5"),
    );
    let output = run(&input);
    assert_eq!(output.status.code(), Some(1));
    let lines = stdout_lines(&output);
    // One output line per non-blank input line, in order.
    assert_eq!(lines.len(), 5, "{lines:?}");
    assert_eq!(lines[0], EXAMPLE_1_OUT);
    assert!(
        lines[1].starts_with(r#"{"error":"#) && lines[1].contains("logits[0]"),
        "{}",
        lines[1]
    );
    assert_eq!(lines[2], EXAMPLE_2_OUT);
    assert!(lines[3].starts_with(r#"{"error":"#) && lines[3].contains("invalid JSON"));
    assert!(lines[4].contains("top_k") && lines[4].contains("1.5"));
    // Line numbers count every physical line, blank ones included.
    let err = stderr(&output);
    assert!(err.contains("line 2:"), "{err}");
    assert!(err.contains("line 6:"), "{err}");
    assert!(err.contains("line 7:"), "{err}");
    assert_eq!(err.lines().count(), 3, "{err}");
}

#[test]
fn empty_input_is_success_with_no_output() {
    let output = run("");
    assert_eq!(output.status.code(), Some(0));
    assert!(output.stdout.is_empty());
    let output = run("\n\n  \n");
    assert_eq!(output.status.code(), Some(0));
    assert!(output.stdout.is_empty());
}

#[test]
fn invalid_utf8_is_an_invalid_line_not_an_io_failure() {
    let mut input = b"{\"logits\": [\"\xff\xfe\"]}\n".to_vec();
    input.extend_from_slice(EXAMPLE_1.as_bytes());
    let output = run_with(&input, &[]);
    assert_eq!(output.status.code(), Some(1));
    let lines = stdout_lines(&output);
    assert_eq!(lines.len(), 2);
    assert!(lines[0].contains("invalid JSON"), "{}", lines[0]);
    assert_eq!(lines[1], EXAMPLE_1_OUT);
    assert!(stderr(&output).contains("line 1"));
}

#[test]
fn unreadable_stdin_exits_2() {
    // A directory opens but cannot be read: EISDIR.
    let dir = std::fs::File::open(env!("CARGO_MANIFEST_DIR")).expect("open directory");
    let output = Command::new(BIN)
        .stdin(Stdio::from(dir))
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(2));
    let err = stderr(&output);
    assert!(err.contains("reading standard input"), "{err}");
    assert!(!err.contains("panicked"));
}

#[test]
fn unwritable_stdout_exits_2() {
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        eprintln!("no /dev/full here; skipping");
        return;
    };
    let output = Command::new(BIN)
        .stdin(Stdio::piped())
        .stdout(Stdio::from(full))
        .stderr(Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            let mut stdin = child.stdin.take().expect("stdin");
            stdin.write_all(format!("{EXAMPLE_1}\n").as_bytes())?;
            drop(stdin);
            child.wait_with_output()
        })
        .expect("run");
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("writing standard output"));
}

#[test]
fn closed_stdout_is_not_a_panic() {
    let mut child = spawn(&[]);
    // Close the read end before anything is written.
    drop(child.stdout.take());
    let mut stdin = child.stdin.take().expect("stdin");
    let writer = std::thread::spawn(move || {
        for _ in 0..20_000 {
            if stdin.write_all(EXAMPLE_1.as_bytes()).is_err() || stdin.write_all(b"\n").is_err() {
                break;
            }
        }
    });
    let output = child.wait_with_output().expect("wait");
    writer.join().expect("writer");
    let err = stderr(&output);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(output.status.code(), Some(0), "{err}");
}

#[test]
fn usage_errors_and_help() {
    let output = run_with(b"", &["--bogus"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("usage"));
    let output = run_with(b"", &["--help"]);
    assert_eq!(output.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&output.stdout).contains("usage"));
}

#[test]
fn streams_many_lines() {
    let input: String = (0..500)
        .map(|_| format!("{EXAMPLE_1}\n{EXAMPLE_2}\n"))
        .collect();
    let output = run(&input);
    assert_eq!(output.status.code(), Some(0));
    let lines = stdout_lines(&output);
    assert_eq!(lines.len(), 1000);
    assert!(
        lines
            .chunks(2)
            .all(|pair| pair[0] == EXAMPLE_1_OUT && pair[1] == EXAMPLE_2_OUT)
    );
}

#[test]
fn bundled_examples_file() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/spec-examples.jsonl");
    let output = run(&std::fs::read_to_string(path).expect("examples file"));
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(
        stdout_lines(&output),
        vec![
            EXAMPLE_1_OUT,
            EXAMPLE_2_OUT,
            // Spec example 3, worked out in spec_examples.rs (example_3_penalty).
            r#"{"token_id":1,"probs":[0.38365173119055074,0.23269653761889864,0.38365173119055074]}"#,
        ]
    );
}

#[test]
fn closed_stderr_is_not_a_panic() {
    let mut child = spawn(&[]);
    drop(child.stderr.take());
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(b"not json\n").expect("write");
    drop(stdin);
    let output = child.wait_with_output().expect("wait");
    // 1 (an invalid line), not 101 (a panic).
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stdout).contains("invalid JSON"));
}
