//! `compare probe` end to end: the committed recording replayed
//! (fixtures/server-probe/), usage errors, and one live run against a real
//! llama-server (scripts/build-llama-server.sh, scripts/fetch-model.sh).
//! Without the server binary or the model the live test fails when `CI` is
//! set and otherwise prints a skip note (as trace.rs does for the model).

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::{Map, Value};

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

// The JSON report read back with deny_unknown_fields: a field added to the
// output without docs/report-schema.md fails here.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Document {
    schema: u32,
    server: String,
    api: String,
    model: Option<String>,
    n_vocab: Option<usize>,
    prompt_ids: Option<Vec<i64>>,
    raw_entries: usize,
    logit_offset: Option<f64>,
    replayed: bool,
    probes: Vec<Probe>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Probe {
    request: Map<String, Value>,
    mode: String,
    samples: Option<usize>,
    tail_mass: f64,
    tail_cell: bool,
    server_kept: usize,
    explained_by: Vec<String>,
    closest: Option<Vec<String>>,
    draws_needed: Option<u64>,
    notes: Vec<String>,
    tv_to_transformers: Option<f64>,
    transformers_error: Option<String>,
    candidates: Vec<Candidate>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Candidate {
    semantics: String,
    endpoint: String,
    variant: Option<String>,
    params: Option<Value>,
    kept: Option<usize>,
    tv: Option<f64>,
    max_abs_diff: Option<f64>,
    p_value: Option<f64>,
    p_support: Option<f64>,
    p_shape: Option<f64>,
    verdict: String,
    error: Option<String>,
}

fn document(stdout: &[u8]) -> Document {
    serde_json::from_slice(stdout).unwrap_or_else(|e| panic!("{e}: {}", text(stdout)))
}

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

/// A running llama-server, killed on drop (also when the test fails).
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
#[cfg_attr(
    not(has_llama_server),
    ignore = "needs llama-server and the SmolLM2 GGUF (scripts/build-llama-server.sh, scripts/fetch-model.sh)"
)]
fn a_live_llama_server_is_explained_by_llama_cpp() {
    let binary = repo().join(".cache/llama-server/0.3.36/llama-server");
    let model = repo().join(".cache/models/SmolLM2-135M-Instruct.Q4_1.gguf");
    let missing: Vec<String> = [
        (&binary, "scripts/build-llama-server.sh"),
        (&model, "scripts/fetch-model.sh"),
    ]
    .iter()
    .filter(|(p, _)| !p.is_file())
    .map(|(p, how)| format!("{} is missing ({how} makes it)", p.display()))
    .collect();
    // Ignored (with the reason) when build.rs did not find them: gone since
    // the build is a failure, never a silent pass.
    assert!(
        missing.is_empty(),
        "{}, but it was there when this test was built (or CI is set)",
        missing.join("; ")
    );
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port");
    let child = Command::new(&binary)
        .arg("-m")
        .arg(&model)
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .args(["-c", "512", "-np", "1", "-t", "2", "--no-webui"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start llama-server");
    let _server = Server(child);
    let url = format!("http://127.0.0.1:{port}");
    let deadline = Instant::now() + Duration::from_secs(120);
    let request = r#"{"temperature": 0.7, "top_k": 0, "top_p": 1.0, "min_p": 0.0}"#;
    let record = std::env::temp_dir().join(format!("compare-probe-{}.json", std::process::id()));
    let record_arg = record.display().to_string();
    let args = [
        "probe",
        "--server",
        &url,
        "--api",
        "llama-server",
        "--prompt",
        "The cat sat on the",
        "--request",
        "{}",
        "--request",
        request,
        "--format",
        "json",
        "--record",
        &record_arg,
    ];
    let out = loop {
        let out = compare(&args, "");
        let loading = text(&out.stderr).contains("not ready")
            || text(&out.stderr).contains("connection refused");
        if out.status.code() == Some(0) || !loading || Instant::now() > deadline {
            break out;
        }
        std::thread::sleep(Duration::from_millis(500));
    };
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let live = document(&out.stdout);
    assert_eq!(live.probes.len(), 2);
    for p in &live.probes {
        assert!(p.explained_by.iter().any(|e| e == "llama.cpp"), "{p:?}");
    }
    let out = compare(&["probe", "--replay", &record_arg, "--format", "json"], "");
    let _ = std::fs::remove_file(&record);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let replayed = document(&out.stdout);
    assert_eq!(
        format!("{:?}", replayed.probes),
        format!("{:?}", live.probes),
        "the replay differs from the live run"
    );
}
