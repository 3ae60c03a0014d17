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

/// A running llama-server under `timeout` (so it cannot outlive the test by
/// more than its bound), stopped on drop (also when the test fails): SIGTERM
/// to `timeout` by its PID, which passes it on to the server.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let stopped = Command::new("kill")
            .args(["-TERM", &self.0.id().to_string()])
            .status()
            .is_ok_and(|s| s.success());
        if !stopped {
            let _ = self.0.kill();
        }
        let _ = self.0.wait();
    }
}

/// Starts the real llama-server on the SmolLM2 GGUF with `flags` (127.0.0.1,
/// a free port); its URL.
fn start(flags: &[&str]) -> (Server, String) {
    let binary = repo().join(".cache/llama-server/0.3.36/llama-server");
    let model = repo().join(".cache/models/SmolLM2-135M-Instruct.Q4_1.gguf");
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port");
    let child = Command::new("timeout")
        .arg("600")
        .arg(&binary)
        .arg("-m")
        .arg(&model)
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .args(["-c", "512", "-np", "1", "-t", "2", "--no-webui"])
        .args(flags)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start llama-server");
    (Server(child), format!("http://127.0.0.1:{port}"))
}

/// Runs `compare` with `args` until the server has loaded (120 s at most).
fn probe_when_ready(args: &[&str]) -> std::process::Output {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let out = compare(args, "");
        let loading = text(&out.stderr).contains("not ready")
            || text(&out.stderr).contains("connection refused");
        if out.status.code() == Some(0) || !loading || Instant::now() > deadline {
            return out;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

pub(crate) fn a_live_llama_server_is_explained_by_llama_cpp() {
    let (_server, url) = start(&[]);
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
    let out = probe_when_ready(&args);
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

/// Issue #33: llama-server started with sampling flags fills the fields a
/// request leaves out with them (`/props` reports them); the probe gives
/// the llama.cpp candidate those defaults and names it within 1e-5.
pub(crate) fn a_live_llama_server_with_sampling_flags_is_explained_by_llama_cpp() {
    let (_server, url) = start(&["--top-k", "25", "--temp", "0.9", "--min-p", "0.02"]);
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
        r#"{"temperature": 0.7, "top_p": 1.0, "min_p": 0.0}"#,
        "--expect",
        "llama.cpp",
        "--format",
        "json",
    ];
    let out = probe_when_ready(&args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let live = document(&out.stdout);
    assert_eq!(live.probes.len(), 2);
    for (p, (top_k, temperature)) in live.probes.iter().zip([(25, 0.9), (25, 0.7)]) {
        assert!(p.explained_by.iter().any(|e| e == "llama.cpp"), "{p:?}");
        let c = p
            .candidates
            .iter()
            .find(|c| c.semantics == "llama.cpp" && c.variant.is_none())
            .expect("the llama.cpp candidate");
        assert!(c.max_abs_diff.is_some_and(|d| d <= 1e-5), "{c:?}");
        let params = c.params.as_ref().expect("params");
        assert_eq!(params["top_k"], top_k, "{c:?}");
        assert_eq!(
            params["temperature"].as_f64().map(|t| t as f32),
            Some(temperature),
            "{c:?}"
        );
    }
}

/// One `/v1/chat/completions` answer's text from the live server, retried
/// while it loads (503 or no connection, 120 s at most).
fn chat(url: &str, extra: &serde_json::Value) -> String {
    let mut body = serde_json::json!({
        "messages": [{"role": "user", "content": "Hello"}],
        "max_tokens": 1,
        "temperature": 0.0,
    });
    for (k, v) in extra.as_object().expect("an object") {
        body[k] = v.clone();
    }
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let answer = minreq::post(format!("{url}/v1/chat/completions"))
            .with_header("Content-Type", "application/json")
            .with_body(body.to_string())
            .with_timeout(60)
            .send();
        match answer {
            Ok(r) if r.status_code == 200 => {
                let doc: serde_json::Value =
                    serde_json::from_slice(r.as_bytes()).expect("a JSON answer");
                return doc["choices"][0]["message"]["content"]
                    .as_str()
                    .expect("the answer's text")
                    .to_string();
            }
            Ok(r) if r.status_code != 503 => {
                panic!("HTTP {}: {}", r.status_code, r.as_str().unwrap_or("?"))
            }
            _ if Instant::now() > deadline => panic!("llama-server did not answer in 120 s"),
            _ => std::thread::sleep(Duration::from_millis(500)),
        }
    }
}

/// A `response_format` of type `json_object` is a grammar on the real
/// llama-server's chat endpoint (tools/server/server-common.cpp:1258-1275
/// at 0c1e57098): its greedy token changes, while `{"type": "text"}` leaves
/// it; `compare request` refuses the first on llama-server's route and runs
/// the second.
pub(crate) fn a_json_response_format_constrains_the_real_llama_servers_chat() {
    let (_server, url) = start(&[]);
    let plain = chat(&url, &serde_json::json!({}));
    let plain_text = chat(
        &url,
        &serde_json::json!({"response_format": {"type": "text"}}),
    );
    let json = chat(
        &url,
        &serde_json::json!({"response_format": {"type": "json_object"}}),
    );
    assert_eq!(
        plain, plain_text,
        "a text response_format changed the greedy token"
    );
    assert_ne!(
        plain, json,
        "json_object did not constrain the greedy token"
    );
    let route = "llama-server /v1/chat/completions";
    for (format, refused) in [("json_object", true), ("text", false)] {
        let request =
            format!(r#"{{"temperature": 0.7, "response_format": {{"type": "{format}"}}}}"#);
        let out = compare(&["request", &request, "--format", "json"], "");
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
        let e = doc["endpoints"]
            .as_array()
            .expect("endpoints")
            .iter()
            .find(|e| e["endpoint"] == route)
            .expect("llama-server's route");
        assert_eq!(e["error"].is_string(), refused, "{format}: {e}");
    }
}
