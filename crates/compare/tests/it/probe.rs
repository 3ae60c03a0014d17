//! `compare probe` end to end: the committed recording replayed
//! (fixtures/server-probe/) and usage errors. The live run against a real
//! llama-server is in tests/live/probe.rs.

use std::net::TcpListener;
use std::path::{Path, PathBuf};

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

#[path = "../common/probe.rs"]
mod document;

use document::document;

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
        "expected llama-server, openai or ollama",
    );
    run(
        with(&["--server", "https://example.invalid", "--api", "openai"]),
        "only http://",
    );
    run(
        with(&["--server", &dead, "--api", "openai"]),
        "has no post-sampling probabilities: give --samples N",
    );
    run(
        vec!["--replay".into(), "/nonexistent/probe.json".into()],
        "--replay: reading",
    );
}
