//! What a server samples an absent field with: `--model-file` (a GGUF's
//! `general.sampling.*` keys, or a generation_config.json), `--server-args`
//! (llama-server's flags), each field's source in `compare request`, the
//! generation config reaching vLLM and SGLang in `report` as in `request`,
//! and the real llama-server's recordings (fixtures/llamacpp/server-defaults/,
//! scripts/reference/llamacpp/record_server_defaults.py) replayed.

use std::path::PathBuf;

use serde_json::Value;

use crate::helpers::{compare, text};
use crate::probe_doc::{Candidate, Probe, document};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn stamped_keys() -> String {
    repo()
        .join("fixtures/llamacpp/server-defaults/stamped-keys.gguf")
        .display()
        .to_string()
}

fn json_ok(args: &[&str]) -> Value {
    let out = compare(args, "");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{args:?}: {}",
        text(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON")
}

fn endpoint<'a>(answer: &'a Value, semantics: &str) -> (usize, &'a Value) {
    answer["endpoints"]
        .as_array()
        .expect("endpoints")
        .iter()
        .enumerate()
        .find(|(_, e)| e["semantics"] == semantics)
        .unwrap_or_else(|| panic!("no {semantics} endpoint"))
}

fn tvs(answer: &Value, index: usize) -> Vec<f64> {
    answer["fixtures"]
        .as_array()
        .expect("fixtures")
        .iter()
        .map(|f| f["cells"][index]["tv"].as_f64().expect("a tv"))
        .collect()
}

#[test]
fn a_gguf_model_file_gives_llama_server_its_keys_with_their_source() {
    let gguf = stamped_keys();
    let plain = json_ok(&["request", r#"{"temperature": 0.7}"#, "--format", "json"]);
    let with = json_ok(&[
        "request",
        r#"{"temperature": 0.7}"#,
        "--model-file",
        &gguf,
        "--format",
        "json",
    ]);
    let (i, e) = endpoint(&with, "llama.cpp");
    let p = &e["params"];
    assert_eq!(
        (&p["top_k"], &p["top_p"], &p["min_p"]),
        (&20.into(), &0.8.into(), &0.1.into())
    );
    assert_eq!(e["sources"]["top_k"], "model-file");
    assert_eq!(e["sources"]["min_p"], "model-file");
    assert_eq!(e["sources"]["temperature"], "request");
    assert_eq!(e["sources"]["typical_p"], "engine-default");
    let (j, before) = endpoint(&plain, "llama.cpp");
    assert_eq!(before["params"]["top_k"], 40);
    assert_ne!(
        tvs(&with, i),
        tvs(&plain, j),
        "the TV to transformers must move"
    );
    // The text says it too.
    let out = compare(
        &["request", r#"{"temperature": 0.7}"#, "--model-file", &gguf],
        "",
    );
    let t = text(&out.stdout);
    assert!(
        t.contains(
            "from: model file: min_p, top_k, top_p; request: temperature; the rest: engine default"
        ),
        "{t}"
    );
}

#[test]
fn server_args_sit_over_the_gguf_and_under_the_request() {
    let gguf = stamped_keys();
    let answer = json_ok(&[
        "request",
        r#"{"top_p": 0.5}"#,
        "--model-file",
        &gguf,
        "--server-args",
        "--top-k 25 --temp 0.9",
        "--format",
        "json",
    ]);
    let (_, e) = endpoint(&answer, "llama.cpp");
    assert_eq!(e["params"]["top_k"], 25);
    assert_eq!(e["params"]["temperature"], 0.9);
    assert_eq!(e["params"]["min_p"], 0.1);
    assert_eq!(e["params"]["top_p"], 0.5);
    assert_eq!(e["sources"]["top_k"], "operator-flag");
    assert_eq!(e["sources"]["min_p"], "model-file");
    assert_eq!(e["sources"]["top_p"], "request");
}

#[test]
fn bad_model_files_and_flags_exit_2_naming_what_and_where() {
    let dir = std::env::temp_dir().join(format!("compare-model-file-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let keys = std::fs::read(stamped_keys()).expect("fixture");
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "zip.bin",
            b"PK\x03\x04 not a model".to_vec(),
            "neither a GGUF (no `GGUF` magic) nor a generation_config.json",
        ),
        (
            "cut.gguf",
            keys[..keys.len() - 3].to_vec(),
            "GGUF key `general.sampling.temp` at byte offset",
        ),
        (
            "huge.gguf",
            [
                b"GGUF".as_slice(),
                &3u32.to_le_bytes(),
                &0u64.to_le_bytes(),
                &(1u64 << 63).to_le_bytes(),
            ]
            .concat(),
            "GGUF at byte offset 16: key count 9223372036854775808 is over the 65536",
        ),
    ];
    for (name, bytes, says) in cases {
        let path = dir.join(name);
        std::fs::write(&path, bytes).expect("write");
        let p = path.display().to_string();
        let out = compare(&["request", "{}", "--model-file", &p], "");
        assert_eq!(out.status.code(), Some(2), "{name}");
        assert!(out.stdout.is_empty(), "{name}");
        let e = text(&out.stderr);
        assert!(e.contains(says) && e.contains(&p), "{name}: {e}");
    }
    let _ = std::fs::remove_dir_all(&dir);
    let out = compare(&["request", "{}", "--server-args", "--mirostat 2"], "");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("`--mirostat` is not modelled"),
        "{}",
        text(&out.stderr)
    );
}

/// Needs the SmolLM2 GGUF: run by tests/live, which skips it visibly
/// without the model.
#[allow(dead_code)]
pub(crate) fn the_real_smollm2_gguf_is_read_without_its_tensors() {
    let model = repo().join(".cache/models/SmolLM2-135M-Instruct.Q4_1.gguf");
    let m = model.display().to_string();
    let answer = json_ok(&["request", "{}", "--model-file", &m, "--format", "json"]);
    let (_, e) = endpoint(&answer, "llama.cpp");
    // SmolLM2's GGUF carries no general.sampling.* key: every default is built in.
    assert_eq!(e["params"]["top_k"], 40);
    assert_eq!(e["sources"]["top_k"], "engine-default");
}

/// The issue's new user: the model's generation config must reach vLLM and
/// SGLang in `report --kwargs` exactly as `compare request` merges it.
#[test]
fn report_gives_vllm_and_sglang_the_config_their_servers_merge() {
    let dir = std::env::temp_dir().join(format!("compare-gc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let gc = dir.join("generation_config.json");
    std::fs::write(
        &gc,
        r#"{"do_sample": true, "temperature": 0.6, "top_k": 20, "top_p": 0.95}"#,
    )
    .expect("write");
    let gc = gc.display().to_string();
    let request = json_ok(&[
        "request",
        r#"{"do_sample": true}"#,
        "--generation-config",
        &gc,
        "--format",
        "json",
    ]);
    let report = json_ok(&[
        "report",
        "--kwargs",
        r#"{"do_sample": true}"#,
        "--generation-config",
        &gc,
        "--pairs",
        "hf:vllm,hf:sglang",
        "--draws",
        "0",
        "--format",
        "json",
    ]);
    let _ = std::fs::remove_dir_all(&dir);
    let rows = report["rows"].as_array().expect("rows");
    let fixtures: Vec<&str> = request["fixtures"]
        .as_array()
        .expect("fixtures")
        .iter()
        .map(|f| f["fixture"].as_str().expect("name"))
        .collect();
    for semantics in ["vllm", "sglang"] {
        let (i, _) = endpoint(&request, semantics);
        let from_request = tvs(&request, i);
        let from_report: Vec<f64> = fixtures
            .iter()
            .map(|fx| {
                rows.iter()
                    .find(|r| r["right"] == semantics && r["fixture"] == *fx)
                    .and_then(|r| r["tv"].as_f64())
                    .unwrap_or_else(|| panic!("no {semantics} row for {fx}"))
            })
            .collect();
        for (a, b) in from_report.iter().zip(&from_request) {
            assert!(
                (a - b).abs() <= 1e-12,
                "{semantics}: report {a} vs request {b}"
            );
        }
    }
    // vLLM's merged setup is transformers' on every fixture (before the fix
    // it sampled the whole vocabulary at T 1: TV 0.644 on hello_k0).
    for r in rows.iter().filter(|r| r["right"] == "vllm") {
        assert_eq!(r["verdict"], "same", "{}", r["fixture"]);
    }
}

/// The real llama-server's recordings in fixtures/llamacpp/server-defaults/
/// (scripts/reference/llamacpp/record_server_defaults.py): the stamped GGUF
/// (general.sampling.* keys), the plain one started with sampling flags, and
/// the stamped one started with flags.
const RECORDINGS: [&str; 3] = ["stamped.json", "flags.json", "stamped-flags.json"];

/// The fields the recorded requests leave out, some or all of them.
const DEFAULTED: [&str; 4] = ["top_k", "top_p", "min_p", "temperature"];

fn server_recording(name: &str) -> PathBuf {
    repo().join("fixtures/llamacpp/server-defaults").join(name)
}

fn read_json(path: &std::path::Path) -> Value {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `/props` `default_generation_settings.params` of a recording.
fn recorded_defaults(recording: &Value) -> &serde_json::Map<String, Value> {
    recording["exchanges"]
        .as_array()
        .expect("exchanges")
        .iter()
        .find(|e| e["path"] == "/props")
        .and_then(|e| e.pointer("/response/default_generation_settings/params"))
        .and_then(Value::as_object)
        .expect("a /props exchange with default_generation_settings.params")
}

/// The plain llama.cpp candidate (not `[temperature first]`).
fn llama_cpp(p: &Probe) -> &Candidate {
    p.candidates
        .iter()
        .find(|c| c.semantics == "llama.cpp" && c.variant.is_none())
        .unwrap_or_else(|| panic!("no llama.cpp candidate: {p:?}"))
}

/// Replays `path` with `--expect llama.cpp`: the exit status and the report.
fn replay_expecting_llama_cpp(path: &str) -> (Option<i32>, Vec<Probe>) {
    let out = compare(
        &[
            "probe",
            "--replay",
            path,
            "--format",
            "json",
            "--expect",
            "llama.cpp",
        ],
        "",
    );
    (out.status.code(), document(&out.stdout).probes)
}

/// Issue #33's "done when": on requests that leave the fields out, the
/// llama.cpp candidate samples with what the real server reported in
/// `/props` (the GGUF's keys, the operator's flags) and `compare probe`
/// names it, within 1e-5 on every probability.
#[test]
fn the_real_servers_own_defaults_reach_the_llama_cpp_candidate() {
    let mut worst: f64 = 0.0;
    for name in RECORDINGS {
        let path = server_recording(name);
        let defaults = recorded_defaults(&read_json(&path)).clone();
        let (code, probes) = replay_expecting_llama_cpp(&path.display().to_string());
        assert_eq!(code, Some(0), "{name}: --expect llama.cpp");
        assert_eq!(probes.len(), 3, "{name}");
        for p in &probes {
            assert_eq!(p.mode, "post-sampling", "{name}");
            assert!(
                p.explained_by.iter().any(|e| e == "llama.cpp"),
                "{name}: {p:?}"
            );
            let c = llama_cpp(p);
            let d = c.max_abs_diff.expect("a max |Δp|");
            assert!(d <= 1e-5, "{name} {:?}: max |Δp| {d}", p.request);
            worst = worst.max(d);
            let params = c.params.as_ref().expect("params");
            let mut filled = 0;
            for key in DEFAULTED.iter().filter(|k| !p.request.contains_key(**k)) {
                // /props prints the server's float32 widened to double.
                let server = defaults[*key].as_f64().expect("a number") as f32;
                let candidate = params[*key].as_f64().expect("a number") as f32;
                assert_eq!(candidate, server, "{name} {:?}: {key}", p.request);
                filled += 1;
            }
            assert!(filled > 0, "{name}: {:?} leaves nothing out", p.request);
        }
    }
    eprintln!("server-defaults recordings: llama.cpp's largest max |Δp| {worst:e}");
}

/// The same recordings with `/props` answering llama.cpp's built-in
/// defaults (those of the real server on the plain GGUF with no flags,
/// fixtures/server-probe/llama-server.json): the candidate would sample
/// with top_k 40, min_p 0.05, temp 0.8 and is ruled out on every request,
/// so the test above can fail.
#[test]
fn with_the_built_in_defaults_alone_llama_cpp_is_ruled_out() {
    let plain = read_json(&repo().join("fixtures/server-probe/llama-server.json"));
    let built_in = recorded_defaults(&plain).clone();
    assert_eq!(built_in["top_k"], 40, "the plain server's /props");
    let dir = std::env::temp_dir().join(format!("compare-builtin-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    for name in RECORDINGS {
        let mut recording = read_json(&server_recording(name));
        assert_ne!(recorded_defaults(&recording), &built_in, "{name}");
        for e in recording["exchanges"].as_array_mut().expect("exchanges") {
            if e["path"] == "/props" {
                e["response"]["default_generation_settings"]["params"] =
                    Value::Object(built_in.clone());
            }
        }
        let path = dir.join(name);
        std::fs::write(&path, recording.to_string()).expect("write");
        let (code, probes) = replay_expecting_llama_cpp(&path.display().to_string());
        assert_eq!(code, Some(1), "{name}: --expect llama.cpp must fail");
        for p in &probes {
            assert!(
                !p.explained_by.iter().any(|e| e == "llama.cpp"),
                "{name}: {p:?}"
            );
            let c = llama_cpp(p);
            assert_eq!(c.verdict, "ruled out", "{name} {:?}", p.request);
            assert!(c.max_abs_diff.is_some_and(|d| d > 1e-3), "{name}: {c:?}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The layering `compare request` models (`--model-file`, `--server-args`:
/// built in < GGUF key < flag) gives exactly the defaults the real server
/// reported in `/props` for each recorded setup (manifest.json: which keys
/// file, which flags).
#[test]
fn the_modelled_layers_give_what_the_real_server_reported() {
    let manifest = read_json(&server_recording("manifest.json"));
    for name in RECORDINGS {
        let setup = &manifest["recordings"][name];
        let flags: Vec<&str> = setup["flags"]
            .as_array()
            .expect("flags")
            .iter()
            .map(|f| f.as_str().expect("a flag"))
            .collect();
        let flags = flags.join(" ");
        let keys = setup["keys_file"]
            .as_str()
            .map(|f| server_recording(f).display().to_string());
        let mut args = vec!["request", "{}", "--format", "json"];
        if let Some(k) = &keys {
            args.extend(["--model-file", k]);
        }
        if !flags.is_empty() {
            args.extend(["--server-args", &flags]);
        }
        let answer = json_ok(&args);
        let (_, e) = endpoint(&answer, "llama.cpp");
        let server = recorded_defaults(&read_json(&server_recording(name))).clone();
        for key in DEFAULTED {
            let modelled = e["params"][key].as_f64().expect("a number") as f32;
            let real = server[key].as_f64().expect("a number") as f32;
            assert_eq!(modelled, real, "{name}: {key} ({args:?})");
        }
    }
}

/// A generation_config.json with top_k 20 and temperature 0.6 in a temp
/// folder, removed on drop.
struct TempConfig(PathBuf);

impl TempConfig {
    fn new(tag: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("compare-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let gc = dir.join("generation_config.json");
        std::fs::write(
            &gc,
            r#"{"do_sample": true, "temperature": 0.6, "top_k": 20, "top_p": 0.95}"#,
        )
        .expect("write");
        Self(gc)
    }

    fn path(&self) -> String {
        self.0.display().to_string()
    }
}

impl Drop for TempConfig {
    fn drop(&mut self) {
        if let Some(dir) = self.0.parent() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// `compare request --model-file generation_config.json` names the file it
/// read in the answer, as `--generation-config` does (it was null).
#[test]
fn a_generation_config_model_file_is_named_in_the_answer() {
    let gc = TempConfig::new("gc-answer");
    let gc = gc.path();
    let request = r#"{"do_sample": true}"#;
    let by_model_file = json_ok(&["request", request, "--model-file", &gc, "--format", "json"]);
    let by_flag = json_ok(&[
        "request",
        request,
        "--generation-config",
        &gc,
        "--format",
        "json",
    ]);
    assert_eq!(by_model_file["generation_config"], gc.as_str());
    assert_eq!(by_model_file, by_flag);
    let out = compare(&["request", request, "--model-file", &gc], "");
    assert!(
        text(&out.stdout).contains(&format!("generation config: {gc}")),
        "{}",
        text(&out.stdout)
    );
}

/// The report's "why" for candle on `--kwargs` with a generation config:
/// transformers took top_k 20 (and T 0.6, top_p 0.95) from the config, so
/// the row names the config instead of "default top-k 50", and the fix is
/// translate's recipe for the merged setup, which then matches.
#[test]
fn candles_why_names_the_generation_config_not_the_default_top_k() {
    let gc = TempConfig::new("gc-why");
    let gc = gc.path();
    for config in [["--generation-config", &gc], ["--model-file", &gc]] {
        let report = json_ok(&[
            "report",
            "--kwargs",
            r#"{"do_sample": true}"#,
            config[0],
            config[1],
            "--pairs",
            "hf:candle",
            "--draws",
            "0",
            "--format",
            "json",
        ]);
        let rows = report["rows"].as_array().expect("rows");
        assert!(!rows.is_empty());
        for r in rows {
            let why = r["reason"].as_str().unwrap_or_default();
            assert!(!why.contains("default top-k 50"), "{config:?}: {why}");
            assert!(
                why.contains(
                    "generation config: transformers merges the model's \
                     generation_config.json under the kwargs ("
                ) && why.contains("top_k 20")
                    && why.contains("temperature 0.6"),
                "{config:?}: {why}"
            );
            assert_eq!(r["fix_params"]["hf_top_k"], 20, "{config:?}: {r}");
            assert_eq!(r["fix_verdict"], "same", "{config:?}: {why}");
        }
    }
}
