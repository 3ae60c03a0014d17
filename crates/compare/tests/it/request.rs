//! `compare request`: one OpenAI-style request through every engine's server.

use serde_json::Value;

use crate::cli::{compare, text};

const TIES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../fixtures/edge/ties_3221.safetensors"
);

fn json(args: &[&str]) -> Value {
    let mut all = vec!["request"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--format", "json"]);
    let out = compare(&all, "");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("JSON answer")
}

fn endpoint<'v>(answer: &'v Value, name: &str) -> (usize, &'v Value) {
    answer["endpoints"]
        .as_array()
        .expect("endpoints")
        .iter()
        .enumerate()
        .find(|(_, e)| e["endpoint"] == name)
        .unwrap_or_else(|| panic!("no endpoint {name}"))
}

fn cell<'v>(answer: &'v Value, name: &str) -> &'v Value {
    let (i, _) = endpoint(answer, name);
    &answer["fixtures"][0]["cells"][i]
}

#[test]
fn one_request_every_server_on_hand_computed_logits() {
    // Logits [3, 2, 2, 1] at temperature 1: p = e^(3,2,2,1) / Z with
    // Z = e³ + 2e² + e, i.e. p = (0.534447, 0.196612, 0.196612, 0.072329).
    let a = json(&[r#"{"temperature": 1.0}"#, TIES]);
    let names: Vec<&str> = a["endpoints"]
        .as_array()
        .expect("endpoints")
        .iter()
        .map(|e| e["endpoint"].as_str().expect("name"))
        .collect();
    assert_eq!(names[0], "transformers generate(**request)");
    assert_eq!(names.len(), 8, "{names:?}");
    // The reference keeps all four (top-k 50 >= 4 tokens) at distance 0.
    let reference = cell(&a, "transformers generate(**request)");
    assert_eq!(
        (reference["kept"].as_u64(), reference["tv"].as_f64()),
        (Some(4), Some(0.0))
    );
    // transformers serve keeps do_sample from the (absent) generation config:
    // greedy, so TV = 1 - e³/Z = 0.465553.
    let serve = cell(&a, "transformers serve /v1/chat/completions");
    assert_eq!(serve["kept"].as_u64(), Some(1));
    let tv = serve["tv"].as_f64().expect("tv");
    assert!((tv - 0.465_553_354_6).abs() < 1e-6, "{tv}");
    // Ollama's own options default top_p to 0.9: the sorted cumulative mass
    // reaches 0.928 after three tokens, so the fourth (e/Z = 0.072329) goes.
    let native = cell(&a, "Ollama /api/chat (options)");
    assert_eq!(native["kept"].as_u64(), Some(3));
    let tv = native["tv"].as_f64().expect("tv");
    assert!((tv - 0.072_329_488).abs() < 1e-6, "{tv}");
    // Its OpenAI endpoint sends top_p 1.0 instead: all four.
    let openai = cell(&a, "Ollama /v1/chat/completions");
    assert_eq!(openai["kept"].as_u64(), Some(4));
    let (_, e) = endpoint(&a, "Ollama /v1/chat/completions");
    assert_eq!(e["params"]["top_k"], 40);
    // llama-server's defaults (top_p 0.95, min_p 0.05 x 0.534 = 0.027 < 0.072) keep all four.
    let (_, e) = endpoint(&a, "llama-server /v1/chat/completions");
    assert_eq!(
        (e["params"]["top_k"].as_i64(), e["params"]["min_p"].as_f64()),
        (Some(40), Some(0.05))
    );
    assert_eq!(
        cell(&a, "llama-server /v1/chat/completions")["kept"].as_u64(),
        Some(4)
    );
}

#[test]
fn dropped_fields_are_named_per_server() {
    let a = json(&[r#"{"temperature": 0.7, "top_k": 2, "min_p": 0.1}"#, TIES]);
    let ignored = |name: &str| endpoint(&a, name).1["ignored"].clone();
    assert_eq!(
        ignored("transformers serve /v1/chat/completions"),
        serde_json::json!(["min_p", "top_k"])
    );
    assert_eq!(
        ignored("Ollama /v1/chat/completions"),
        serde_json::json!(["min_p", "top_k"])
    );
    assert_eq!(
        ignored("vllm serve /v1/chat/completions"),
        serde_json::json!([])
    );
    assert_eq!(
        ignored("transformers generate(**request)"),
        serde_json::json!([])
    );
    // generate keeps top-k's ties: [3, 2, 2, 1] with k = 2 keeps three; the
    // candle port keeps exactly two.
    assert_eq!(
        cell(&a, "transformers generate(**request)")["kept"].as_u64(),
        Some(3)
    );
    assert_eq!(
        cell(&a, "candle LogitsProcessor (literal port)")["kept"].as_u64(),
        Some(2)
    );
}

#[test]
fn a_refusing_server_does_not_hide_the_others() {
    let a = json(&[r#"{"temperature": 0.7, "use_beam_search": true}"#, TIES]);
    let (i, vllm) = endpoint(&a, "vllm serve /v1/chat/completions");
    let err = vllm["error"].as_str().expect("vLLM refuses");
    assert!(err.contains("`use_beam_search`"), "{err}");
    assert!(a["fixtures"][0]["cells"][i]["kept"].is_null());
    assert_eq!(
        cell(&a, "transformers generate(**request)")["kept"].as_u64(),
        Some(4)
    );
}

#[test]
fn bad_requests_are_usage_errors() {
    for (request, message) in [
        ("[1]", "the request must be a JSON object, got [1]"),
        ("{temperature", "the request is not JSON"),
        (r#"{"temperature": -1}"#, "refuses the request"),
    ] {
        crate::cli::usage_error("request", &[request, TIES], message);
    }
}

#[test]
fn text_names_every_server_within_100_columns() {
    let out = compare(&["request", r#"{"temperature": 0.7, "top_p": 0.9}"#], "");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let t = text(&out.stdout);
    for name in [
        "transformers serve",
        "vllm serve",
        "llama-server",
        "Ollama",
        "mistralrs-server",
    ] {
        assert!(t.contains(name), "{name} missing:\n{t}");
    }
    assert!(t.lines().all(|l| l.chars().count() <= 100), "{t}");
    // Every bundled SmolLM2 fixture gets a block.
    assert_eq!(t.matches("  endpoint ").count(), 6, "{t}");
}
