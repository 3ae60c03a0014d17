//! server-probe against a real llama-server (llama.cpp 0c1e57098, built by
//! scripts/build-llama-server.sh) running SmolLM2-135M-Instruct Q4_1
//! (scripts/fetch-model.sh). One server per test binary, started on a free
//! 127.0.0.1 port and killed on drop, even when a test fails.
//!
//! Without the binary or the model these tests fail when `CI` is set and
//! are otherwise ignored, with the reason (needs.rs: decided when the tests
//! run, so a server built after the first build is found).

// libtest-mimic's harness: these are tests, but not cfg(test), so clippy's
// allow-unwrap-in-tests (clippy.toml) does not reach them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use parity_core::AnySemantics;
use serde_json::{Map, Value, json};
use server_probe::{Api, Options, Report, Verdict};

mod needs;
mod repeat;
mod replay;
mod routes;

use needs::{Needed, plain, trial};

fn main() -> std::process::ExitCode {
    let args = libtest_mimic::Arguments::from_args();
    let live = |name: &str, test: fn()| {
        let needs = [
            Needed::file(SERVER, "scripts/build-llama-server.sh"),
            Needed::file(MODEL, "scripts/fetch-model.sh"),
        ];
        trial(name, "needs llama-server", &needs, test)
    };
    let trials = vec![
        live(
            "post_sampling_names_llama_cpp_on_every_request",
            post_sampling_names_llama_cpp_on_every_request,
        ),
        live(
            "samples_name_llama_cpp_and_rule_out_temperature_first",
            samples_name_llama_cpp_and_rule_out_temperature_first,
        ),
        live(
            "a_wrong_api_a_refused_request_and_a_dead_server_are_errors",
            a_wrong_api_a_refused_request_and_a_dead_server_are_errors,
        ),
        live(
            "the_openai_dialect_names_llama_cpp_behind_llama_servers_v1",
            the_openai_dialect_names_llama_cpp_behind_llama_servers_v1,
        ),
        live(
            "repeat::repeat_verdicts_agree_with_the_raw_distributions_on_a_two_slot_server",
            repeat::repeat_verdicts_agree_with_the_raw_distributions_on_a_two_slot_server,
        ),
        plain(
            "repeat::the_committed_repeat_recording_replays_with_the_same_report",
            repeat::the_committed_repeat_recording_replays_with_the_same_report,
        ),
        plain(
            "repeat::repeat_options_are_bounded_and_need_llama_server",
            repeat::repeat_options_are_bounded_and_need_llama_server,
        ),
        plain(
            "needs::missing_components_are_named_with_how_to_get_them",
            needs::missing_components_are_named_with_how_to_get_them,
        ),
        plain(
            "non_json_truncated_and_silent_answers_are_errors",
            non_json_truncated_and_silent_answers_are_errors,
        ),
        plain(
            "routes::each_api_serves_its_servers_routes",
            routes::each_api_serves_its_servers_routes,
        ),
        plain(
            "replay::the_committed_recording_replays_with_the_same_verdicts",
            replay::the_committed_recording_replays_with_the_same_verdicts,
        ),
    ];
    libtest_mimic::run(&args, trials).exit_code()
}

/// Where scripts/build-llama-server.sh puts llama-server.
const SERVER: &str = ".cache/llama-server/0.3.36/llama-server";

/// Where scripts/fetch-model.sh puts the model.
const MODEL: &str = ".cache/models/SmolLM2-135M-Instruct.Q4_1.gguf";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn binary() -> PathBuf {
    repo().join(SERVER)
}

fn model() -> PathBuf {
    repo().join(MODEL)
}

/// A running llama-server, killed on drop.
pub(crate) struct Server {
    child: Child,
    pub(crate) url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    l.local_addr().expect("local addr").port()
}

/// A llama-server with `slots` slots (`-np`), 256 tokens of context each.
pub(crate) fn start_with_slots(slots: usize) -> Server {
    let port = free_port();
    let child = Command::new(binary())
        .args(["-m"])
        .arg(model())
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .args(["-c", &(512 * slots).to_string(), "-np", &slots.to_string()])
        .args(["-t", "2", "--no-webui"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start llama-server");
    let server = Server {
        child,
        url: format!("http://127.0.0.1:{port}"),
    };
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let ok = minreq_health(&server.url);
        if ok {
            return server;
        }
        assert!(
            Instant::now() < deadline,
            "llama-server did not answer /health within 120 s"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

fn minreq_health(url: &str) -> bool {
    use std::io::{Read, Write};
    let Some(addr) = url.strip_prefix("http://") else {
        return false;
    };
    let Ok(mut s) = std::net::TcpStream::connect(addr) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    if s.write_all(
        format!("GET /health HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes(),
    )
    .is_err()
    {
        return false;
    }
    let mut text = String::new();
    let _ = s.read_to_string(&mut text);
    text.starts_with("HTTP/1.1 200")
}

/// A server of the calling test's own, killed when the test ends (also when
/// it fails); tests take turns (the lock), so one runs at a time. (A server
/// kept in a static for the whole binary is never dropped, so it outlived
/// `cargo test`.)
fn server() -> (std::sync::MutexGuard<'static, ()>, Server) {
    server_with_slots(1)
}

/// [`server`] with `slots` slots.
pub(crate) fn server_with_slots(slots: usize) -> (std::sync::MutexGuard<'static, ()>, Server) {
    static TURN: Mutex<()> = Mutex::new(());
    let turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    (turn, start_with_slots(slots))
}

pub(crate) fn registry() -> Vec<Box<dyn AnySemantics>> {
    vec![
        Box::new(hf_sampling::HfRust::new(None)),
        Box::new(llamacpp_sampling::LlamaCpp),
    ]
}

/// A probe that must succeed, and its recording.
fn live_probe(o: &Options, what: &str) -> (Report, server_probe::Recording) {
    let (report, recording) = server_probe::probe(o, &registry());
    (report.expect(what), recording)
}

pub(crate) fn obj(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// A prompt whose next token repeats a prompt token, so that penalties bite.
pub(crate) const PROMPT: &str =
    "The cat sat on the mat. The cat sat on the mat. The cat sat on the";

fn options(url: &str, requests: Vec<Value>, samples: Option<usize>) -> Options {
    Options {
        server: url.to_string(),
        api: Api::LlamaServer,
        model: None,
        prompt: Some(PROMPT.to_string()),
        prompt_ids: None,
        requests: requests.into_iter().map(obj).collect(),
        samples,
        auto_samples: None,
        seed: 1234,
        top: None,
        timeout_secs: 60,
        raw_from: None,
        vocab: None,
        repeat: None,
    }
}

/// The requests of the task: defaults, temperature only, top_k/top_p/min_p,
/// a reordered chain, a repeat penalty on the repeated prompt, XTC with
/// probability 1, greedy, and a few more.
pub(crate) fn requests() -> Vec<Value> {
    vec![
        json!({}),
        json!({"temperature": 0.7, "top_k": 0, "top_p": 1.0, "min_p": 0.0}),
        json!({"temperature": 1.3, "top_k": 20, "top_p": 0.9, "min_p": 0.02}),
        json!({"temperature": 1.5, "top_k": 0, "top_p": 0.95, "min_p": 0.05,
               "samplers": ["temperature", "top_p", "min_p"]}),
        json!({"repeat_penalty": 1.5, "repeat_last_n": 64, "temperature": 1.0,
               "top_k": 0, "top_p": 1.0, "min_p": 0.0}),
        json!({"xtc_probability": 1.0, "xtc_threshold": 0.01, "temperature": 1.0,
               "top_k": 0, "top_p": 1.0, "min_p": 0.0}),
        json!({"temperature": 0.0}),
        json!({"temperature": 2.0, "min_p": 0.1, "top_k": 0, "top_p": 1.0}),
        json!({"top_p": 0.5}),
        json!({"temperature": 0.8, "top_k": 10}),
        json!({"typical_p": 0.9, "temperature": 1.0, "top_k": 0, "top_p": 1.0, "min_p": 0.0}),
    ]
}

/// Every probe names `llama.cpp` with max |Δp| ≤ 1e-5; every candidate
/// (transformers, llama.cpp with temperature first) at TV ≥ 0.05 is ruled out.
pub(crate) fn check_post_sampling(report: &Report) {
    for p in &report.probes {
        let request = Value::Object(p.request.clone());
        assert_eq!(p.mode, "post-sampling");
        assert!(
            p.explained_by.iter().any(|e| e == "llama.cpp"),
            "{request}: explained by {:?}: {:#?}",
            p.explained_by,
            p.candidates
        );
        for c in &p.candidates {
            if c.label() == "llama.cpp" {
                let d = c.max_abs_diff.expect("scored");
                assert!(d <= 1e-5, "{request}: llama.cpp max |Δp| = {d:e}");
            }
            if c.tv.is_some_and(|tv| tv >= 0.05) {
                assert_eq!(c.verdict, Verdict::RuledOut, "{request}: {c:?}");
            }
        }
        assert!(p.tv_to_transformers.is_some(), "{request}: {p:?}");
    }
}

fn post_sampling_names_llama_cpp_on_every_request() {
    let (_turn, server) = server();
    let url = server.url.clone();
    let o = options(&url, requests(), None);
    let (report, recording) = live_probe(&o, "probe");
    assert_eq!(report.probes.len(), requests().len());
    check_post_sampling(&report);
    // Some candidate is ruled out on most requests (transformers' defaults
    // differ from llama-server's), and the penalty needed the offset.
    let ruled_out = report
        .probes
        .iter()
        .filter(|p| p.candidates.iter().any(|c| c.verdict == Verdict::RuledOut))
        .count();
    assert!(ruled_out >= 5, "only {ruled_out} probes rule anything out");
    assert!(report.logit_offset.is_some());
    // The replay gives the same report.
    let again = server_probe::replay(&recording, &registry()).expect("replay");
    assert_eq!(
        serde_json::to_value(&again.probes).ok(),
        serde_json::to_value(&report.probes).ok()
    );
    if let Ok(path) = std::env::var("SERVER_PROBE_WRITE_RECORDING") {
        // The recording replayed in CI: the whole raw distribution (the top
        // 10000 tokens of this small model still miss 0.3% of the mass)
        // and three requests that truncate, so their answers are short.
        // Token texts are dropped from the top lists to keep it small: the
        // probe reads ids and numbers only.
        let small = options(
            &url,
            vec![
                json!({}),
                json!({"temperature": 0.0}),
                json!({"top_k": 20, "temperature": 1.3}),
            ],
            None,
        );
        let (_, mut rec) = live_probe(&small, "small probe");
        drop_token_texts(&mut rec);
        let text = serde_json::to_string(&rec).expect("json");
        std::fs::write(path, text + "\n").expect("write recording");
    }
    if let Ok(path) = std::env::var("SERVER_PROBE_WRITE_REPORT") {
        let mut text = Vec::new();
        server_probe::write_text(&report, &mut text).expect("text");
        std::fs::write(path, text).expect("write report");
    }
}

/// Drops the `token` and `bytes` fields of the top lists' entries (the
/// probe reads ids and numbers only), which makes a recording about a
/// quarter of its size.
pub(crate) fn drop_token_texts(rec: &mut server_probe::Recording) {
    for e in &mut rec.exchanges {
        let Some(Value::Array(steps)) = e
            .response
            .as_mut()
            .and_then(|r| r.get_mut("completion_probabilities"))
        else {
            continue;
        };
        for step in steps {
            for list in ["top_logprobs", "top_probs"] {
                if let Some(Value::Array(items)) = step.get_mut(list) {
                    for item in items.iter_mut().filter_map(Value::as_object_mut) {
                        item.remove("token");
                        item.remove("bytes");
                    }
                }
            }
        }
    }
}

fn samples_name_llama_cpp_and_rule_out_temperature_first() {
    let (_turn, server) = server();
    let url = server.url.clone();
    // min_p before temperature (llama.cpp) against temperature first, at
    // T = 2; and llama-server's defaults against transformers' defaults.
    let requests = vec![
        json!({"temperature": 2.0, "min_p": 0.1, "top_k": 0, "top_p": 1.0}),
        json!({}),
    ];
    let o = options(&url, requests, Some(400));
    let (report, _) = live_probe(&o, "probe");
    for p in &report.probes {
        assert_eq!(p.mode, "samples");
        assert_eq!(p.samples, Some(400));
        let by = |label: &str| {
            p.candidates
                .iter()
                .find(|c| c.label() == label)
                .unwrap_or_else(|| panic!("no candidate {label}: {p:#?}"))
        };
        for c in &p.candidates {
            eprintln!(
                "{:?}: {}: p = {:?}, {:?}",
                p.request,
                c.label(),
                c.p_value,
                c.verdict
            );
        }
        let right = by("llama.cpp").p_value.expect("p");
        assert!(right > server_probe::EXPLAIN_P, "llama.cpp p = {right}");
        assert_eq!(p.explained_by, ["llama.cpp"]);
        for wrong in ["llama.cpp[temperature first]", "hf-rust"] {
            let pv = by(wrong).p_value.expect("p");
            assert!(pv < server_probe::RULE_OUT_P, "{wrong} p = {pv}");
            assert_eq!(by(wrong).verdict, Verdict::RuledOut);
        }
    }
}

fn a_wrong_api_a_refused_request_and_a_dead_server_are_errors() {
    let (_turn, server) = server();
    let url = server.url.clone();
    let mut o = options(&url, vec![json!({})], None);
    o.api = Api::Ollama;
    o.model = Some("m".into());
    o.samples = Some(1);
    let e = server_probe::probe(&o, &registry())
        .0
        .unwrap_err()
        .to_string();
    assert!(e.contains("is this a ollama server"), "{e}");

    let mut o = options(&url, vec![json!({"n_predict": -5})], None);
    o.prompt_ids = Some(vec![1, 2, 99_999_999]);
    o.prompt = None;
    let e = server_probe::probe(&o, &registry())
        .0
        .unwrap_err()
        .to_string();
    assert!(e.contains("outside the server's vocabulary"), "{e}");

    let o = options(&url, vec![json!({"temperature": "hot"})], None);
    let e = server_probe::probe(&o, &registry())
        .0
        .unwrap_err()
        .to_string();
    assert!(e.contains("refused the request (HTTP"), "{e}");

    let dead = format!("http://127.0.0.1:{}", free_port());
    let o = options(&dead, vec![json!({})], None);
    let e = server_probe::probe(&o, &registry())
        .0
        .unwrap_err()
        .to_string();
    assert!(e.contains("connection refused"), "{e}");
}

/// A one-connection server on 127.0.0.1 that answers every request with
/// `answer` (or never answers when `None`), for the transport's errors.
fn misbehaving(answer: Option<&'static str>) -> String {
    use std::io::{Read, Write};
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        if let Ok((mut s, _)) = listener.accept() {
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            match answer {
                Some(a) => {
                    let _ = s.write_all(a.as_bytes());
                }
                None => std::thread::sleep(Duration::from_secs(5)),
            }
        }
    });
    format!("http://127.0.0.1:{port}")
}

fn non_json_truncated_and_silent_answers_are_errors() {
    let run = |url: String| {
        let mut o = options(&url, vec![json!({})], None);
        o.timeout_secs = 1;
        server_probe::probe(&o, &registry())
            .0
            .unwrap_err()
            .to_string()
    };
    let e = run(misbehaving(Some(
        "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello",
    )));
    assert!(e.contains("the answer is not JSON"), "{e}");
    let e = run(misbehaving(Some(
        "HTTP/1.1 200 OK\r\nContent-Length: 100\r\nConnection: close\r\n\r\n{\"status\": \"o",
    )));
    assert!(
        e.contains("truncated") || e.contains("closed the connection"),
        "{e}"
    );
    let e = run(misbehaving(None));
    assert!(e.contains("no answer within 1 s"), "{e}");
}

/// The OpenAI dialect against llama-server's own `/v1/completions` (a real
/// OpenAI-compatible server): samples, the raw top 200 by id.
fn the_openai_dialect_names_llama_cpp_behind_llama_servers_v1() {
    let (_turn, server) = server();
    let url = server.url.clone();
    let mut o = options(&url, vec![json!({"temperature": 1.0})], Some(200));
    o.api = Api::Openai;
    o.top = Some(200);
    let (report, _) = live_probe(&o, "probe");
    let p = &report.probes[0];
    assert_eq!(report.n_vocab, None);
    assert!(report.model.is_some());
    assert_eq!(p.explained_by, ["llama.cpp"], "{p:#?}");
    for c in p.candidates.iter().filter(|c| c.semantics == "hf-rust") {
        assert_eq!(c.verdict, Verdict::RuledOut, "{c:?}");
    }
}
