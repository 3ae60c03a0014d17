//! The recordings of real servers from PyPI (fixtures/server-probe/vllm.json
//! and mlx.json, made by scripts/servers/record.sh against vLLM 0.32.0 and
//! mlx_lm.server 0.32.2; fixtures/server-probe/README.md names each command
//! line) replayed offline with the full registry: no server or Python needed.

use std::path::Path;

use serde_json::Value;

use crate::helpers::{compare, text};

fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/server-probe")
        .join(name)
        .display()
        .to_string()
}

fn replay(name: &str) -> Value {
    let out = compare(
        &["probe", "--replay", &fixture(name), "--format", "json"],
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out.stdout)))
}

/// The verdict of the candidate `label` on `endpoint` (a substring) in the
/// probe of `request` (its JSON text).
fn verdicts<'a>(doc: &'a Value, request: &str, label: &str, endpoint: &str) -> Vec<&'a str> {
    let probe = doc["probes"]
        .as_array()
        .expect("probes")
        .iter()
        .find(|p| p["request"].to_string().as_str() == request)
        .unwrap_or_else(|| panic!("no probe of {request}"));
    let found: Vec<&str> = probe["candidates"]
        .as_array()
        .expect("candidates")
        .iter()
        .filter(|c| {
            c["semantics"] == label
                && c["variant"].is_null()
                && c["endpoint"].as_str().is_some_and(|e| e.contains(endpoint))
        })
        .map(|c| c["verdict"].as_str().expect("verdict"))
        .collect();
    assert!(
        !found.is_empty(),
        "{request}: no {label} on {endpoint}: {probe}"
    );
    found
}

/// Issue #36's "done when" for vLLM: on the whole vocabulary with the prompt
/// ids, `vllm` explains all four requests (`--expect vllm` exits 0), mlx-lm
/// (top_p before temperature: 216 tokens kept where vLLM keeps 32) is ruled
/// out on T 0.8 + top_p 0.9, and Ollama's /v1 routes (which ignore top_k and
/// keep 40) are ruled out on T 1.0 + top_k 20.
#[test]
fn the_vllm_recording_is_explained_by_vllm_and_rules_out_its_neighbours() {
    let out = compare(
        &[
            "probe",
            "--replay",
            &fixture("vllm.json"),
            "--expect",
            "vllm",
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc = replay("vllm.json");
    assert_eq!(doc["api"], "vllm");
    assert_eq!(doc["raw_entries"], 49152);
    for p in doc["probes"].as_array().expect("probes") {
        assert_eq!(p["mode"], "samples", "{p}");
        assert_eq!(p["samples"], 300, "{p}");
        assert!(
            p["explained_by"]
                .as_array()
                .expect("explained_by")
                .contains(&"vllm".into()),
            "{p}"
        );
    }
    let top_p = r#"{"temperature":0.8,"top_p":0.9}"#;
    assert_eq!(
        verdicts(&doc, top_p, "mlx-lm", "mlx_lm.server"),
        ["ruled out"]
    );
    let top_k = r#"{"temperature":1.0,"top_k":20}"#;
    assert_eq!(
        verdicts(&doc, top_k, "ollama", "/v1/"),
        ["ruled out", "ruled out"]
    );
}

/// `--expect` fails (exit 1, the request named) on a real recording where
/// the expected semantics does not explain: mlx-lm on vLLM's top_p request.
#[test]
fn expect_mlx_lm_fails_on_the_vllm_recording() {
    let out = compare(
        &[
            "probe",
            "--replay",
            &fixture("vllm.json"),
            "--expect",
            "mlx-lm",
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(r#"--expect mlx-lm: request [1] {"temperature":0.8,"top_p":0.9}: mlx-lm does not explain it: it is ruled out"#),
        "{stderr}"
    );
}
