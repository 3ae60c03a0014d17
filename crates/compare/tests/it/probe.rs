//! `compare probe` end to end: the committed recording replayed
//! (fixtures/server-probe/) and usage errors. The live run against a real
//! llama-server is in tests/live/probe.rs.

use std::net::TcpListener;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::helpers::{compare, text, usage_error};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn recording() -> String {
    repo()
        .join("fixtures/server-probe/llama-server.json")
        .display()
        .to_string()
}

use crate::probe_doc::document;

#[test]
fn the_committed_recording_replays_and_names_llama_cpp() {
    let out = compare(&["probe", "--replay", &recording(), "--format", "json"], "");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc = document(&out.stdout);
    assert!(doc.replayed);
    for p in &doc.probes {
        assert_eq!(p.mode, "post-sampling");
        assert!(p.explained_by.iter().any(|e| e == "llama.cpp"), "{p:?}");
    }
    let out = compare(&["probe", "--replay", &recording()], "");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("explained by: llama.cpp"));
}

/// `--expect`: exit 0 when the semantics explains every request of the
/// recording (llama.cpp on llama-server's own), 1 when it does not
/// (transformers' defaults are ruled out there), with the reason on stderr.
#[test]
fn expect_passes_for_the_explaining_semantics_and_fails_for_another() {
    let out = compare(
        &["probe", "--replay", &recording(), "--expect", "llama.cpp"],
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("explained by: llama.cpp"));
    let out = compare(
        &["probe", "--replay", &recording(), "--expect", "hf-rust"],
        "",
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("--expect hf-rust: request [0] {}: hf-rust does not explain it: it is ruled out (explained by llama.cpp)"),
        "{stderr}"
    );
    // The report is still written.
    assert!(text(&out.stdout).contains("explained by: llama.cpp"));
}

/// A --record file is written even when the probe fails: here the server
/// is down, so it holds the options and no exchange.
#[test]
fn record_is_written_when_the_probe_fails() {
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port");
    let dead = format!("http://127.0.0.1:{port}");
    let record =
        std::env::temp_dir().join(format!("compare-probe-fail-{}.json", std::process::id()));
    let record_arg = record.display().to_string();
    let out = compare(
        &[
            "probe",
            "--server",
            &dead,
            "--api",
            "vllm",
            "--prompt",
            "Hi",
            "--request",
            "{}",
            "--record",
            &record_arg,
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("connection refused"),
        "{}",
        text(&out.stderr)
    );
    let written = std::fs::read_to_string(&record).expect("the recording was written");
    let _ = std::fs::remove_file(&record);
    let v: Value = serde_json::from_str(&written).expect("json");
    assert_eq!(v["options"]["api"], "vllm");
    assert_eq!(v["exchanges"], Value::Array(Vec::new()));
}

#[test]
fn bad_input_is_a_usage_error() {
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port");
    let dead = format!("http://127.0.0.1:{port}");
    let common = ["--prompt", "Hi", "--request", "{}"];
    let with = |extra: &[&str]| -> Vec<String> {
        extra
            .iter()
            .chain(common.iter())
            .map(|s| s.to_string())
            .collect()
    };
    let run = |args: Vec<String>, expected: &str| {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        usage_error("probe", &args, expected);
    };
    run(
        with(&["--server", &dead, "--api", "llama-server"]),
        "connection refused",
    );
    run(
        with(&["--server", &dead, "--api", "tgi"]),
        "expected one of llama-server, openai, vllm, sglang, mlx-lm, transformers-serve, ollama-v1, ollama",
    );
    run(
        with(&["--server", "https://example.invalid", "--api", "openai"]),
        "only http://",
    );
    run(
        with(&["--server", &dead, "--api", "openai"]),
        "connection refused",
    );
    // --record is checked before the first request.
    run(
        with(&[
            "--server",
            &dead,
            "--api",
            "openai",
            "--record",
            "/nonexistent/dir/rec.json",
        ]),
        "--record: cannot write /nonexistent/dir/rec.json",
    );
    run(
        vec![
            "--replay".into(),
            recording(),
            "--expect".into(),
            "no-such-engine".into(),
        ],
        "--expect \"no-such-engine\": no such semantics",
    );
    run(
        vec!["--replay".into(), "/nonexistent/probe.json".into()],
        "--replay: reading",
    );
}

/// `--repeat` is bounded (2 to 64), excludes `--samples`, and needs
/// llama-server; each is a usage error with its reason, before any request.
#[test]
fn repeat_is_bounded_and_needs_llama_server() {
    let base = [
        "--server",
        "http://127.0.0.1:9",
        "--prompt",
        "x",
        "--request",
        "{}",
    ];
    let with = |extra: &[&'static str]| {
        let mut v: Vec<&str> = base.to_vec();
        v.extend_from_slice(extra);
        v
    };
    usage_error(
        "probe",
        &with(&["--api", "llama-server", "--repeat", "65"]),
        "65 is not in 2..=64",
    );
    usage_error(
        "probe",
        &with(&["--api", "llama-server", "--repeat", "1"]),
        "1 is not in 2..=64",
    );
    usage_error(
        "probe",
        &with(&["--api", "llama-server", "--repeat", "4", "--samples", "3"]),
        "cannot be used with",
    );
    usage_error(
        "probe",
        &with(&["--api", "openai", "--repeat", "4"]),
        "--repeat needs --api llama-server (got openai)",
    );
}
