//! `compare probe` against a real llama-server (scripts/build-llama-server.sh)
//! running the SmolLM2 GGUF (scripts/fetch-model.sh): main.rs runs it only
//! when both are here (or CI is set).

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::helpers::{compare, text};
use crate::probe_doc::document;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A running llama-server, killed on drop (also when the test fails).
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub(crate) fn a_live_llama_server_is_explained_by_llama_cpp() {
    let binary = repo().join(".cache/llama-server/0.3.36/llama-server");
    let model = repo().join(".cache/models/SmolLM2-135M-Instruct.Q4_1.gguf");
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
