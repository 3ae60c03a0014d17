//! `compare request`: one OpenAI-style request through every engine's server.

use serde_json::Value;

use crate::helpers::{compare, text, usage_error};

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
    // Every server the registry's semantics model, Ollama's engines labelled
    // with the versions they cover.
    for name in [
        "transformers serve /v1/chat/completions",
        "transformers serve /v1/completions",
        "llama-server /v1/chat/completions",
        "Ollama /v1/chat/completions",
        "Ollama /v1/completions",
        "Ollama v0.6.2–v0.25 Go engine /v1/chat/completions",
        "Ollama MLX runner (safetensors, v0.32.10–v0.33.0-rc2) /v1/chat/completions",
        "vllm serve /v1/chat/completions",
        "sglang 0.5.23 /v1/chat/completions",
        "mistralrs-server /v1/chat/completions",
        "mlx_lm.server 0.32.2 /v1/chat/completions (and /v1/completions)",
    ] {
        assert!(names.contains(&name), "{name} not in {names:?}");
    }
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
    // mlx_lm.server is greedy too unless the request sends a temperature
    // (its default is 0.0); this one does: all four kept.
    assert_eq!(
        cell(
            &a,
            "mlx_lm.server 0.32.2 /v1/chat/completions (and /v1/completions)"
        )["kept"]
            .as_u64(),
        Some(4)
    );
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
    // transformers serve refuses fields outside OpenAI's request params
    // (cli/serving/utils.py `_validate_request`, recorded in fixtures/serve).
    let (_, serve) = endpoint(&a, "transformers serve /v1/chat/completions");
    assert_eq!(
        serve["error"],
        "HTTP 422: Unexpected fields in the request: {'min_p', 'top_k'}"
    );
    assert_eq!(serve["ignored"], serde_json::json!([]));
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
        crate::helpers::usage_error("request", &[request, TIES], message);
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

#[test]
fn mistral_rs_samples_at_temperature_one_when_the_request_sends_none() {
    // mistralrs-core/src/engine/add_request.rs `temperature.unwrap_or(1.0)`
    // (v0.9.0–v0.9.2): at T = 1 on [3, 2, 2, 1] all four tokens can be drawn;
    // a greedy reading would keep one.
    let a = json(&["{}", TIES]);
    assert_eq!(
        cell(&a, "mistralrs-server /v1/chat/completions")["kept"].as_u64(),
        Some(4)
    );
}

#[test]
fn the_reference_says_which_fields_generate_would_refuse() {
    // generate(**body) raises on `frequency_penalty` and `seed`: the reference
    // runs without them, and its notes say so and why.
    let a = json(&[
        r#"{"temperature": 0.6, "top_p": 0.9, "frequency_penalty": 0.5, "seed": 7}"#,
        TIES,
    ]);
    let (_, reference) = endpoint(&a, "transformers generate(**request)");
    let notes = reference["notes"].to_string();
    assert!(notes.contains("frequency_penalty left out"), "{notes}");
    assert!(notes.contains("seed left out"), "{notes}");
    assert_eq!(reference["error"], Value::Null);
}

#[test]
fn the_ollama_go_engine_ignores_penalties() {
    // runner/ollamarunner/runner.go (f63eea3d2) hands NewSampler only
    // temperature, top_k, top_p, min_p and seed: a repeat penalty changes
    // nothing on the Go engine, while Ollama's llama-server path applies it.
    let a = json(&[r#"{"temperature": 1.0, "repeat_penalty": 1.5}"#, TIES]);
    let (_, go) = endpoint(
        &a,
        "Ollama v0.6.2–v0.25 Go engine /api/generate, /api/chat (options)",
    );
    assert_eq!(go["params"]["ignored"]["repeat_penalty"], 1.5, "{go}");
}

/// `--expect-tv-below X --against ROUTE`: exit 0 when the route is within X
/// of transformers on every bundled fixture, 1 with one line per fixture
/// when it is not, and 1 naming the routes when ROUTE names none. (vLLM at
/// temperature 0.7 on the SmolLM2 fixtures: TV 0.14 on write_k60, the
/// largest, where transformers' default top_k 50 cuts and vLLM does not.)
#[test]
fn expect_tv_below_passes_and_fails_on_the_bundled_fixtures() {
    let ok = compare(
        &[
            "request",
            r#"{"temperature": 0.7}"#,
            "--expect-tv-below",
            "0.2",
            "--against",
            "vllm",
        ],
        "",
    );
    assert_eq!(ok.status.code(), Some(0), "{}", text(&ok.stderr));
    let bad = compare(
        &[
            "request",
            r#"{"temperature": 0.7}"#,
            "--expect-tv-below",
            "0.05",
            "--against",
            "vllm",
        ],
        "",
    );
    assert_eq!(bad.status.code(), Some(1), "{}", text(&bad.stderr));
    assert!(
        text(&bad.stderr).contains("write_k60: vllm serve /v1/chat/completions is at TV 1.396e-1"),
        "{}",
        text(&bad.stderr)
    );
    assert!(!bad.stdout.is_empty(), "the answer is still written");
    let none = compare(
        &[
            "request",
            "{}",
            "--expect-tv-below",
            "0.05",
            "--against",
            "nosuch",
        ],
        "",
    );
    assert_eq!(none.status.code(), Some(1));
    assert!(text(&none.stderr).contains(r#"--against "nosuch" names no route"#));
    usage_error(
        "request",
        &["{}", "--expect-tv-below", "2", "--against", "vllm"],
        "is not a total variation in (0, 1]",
    );
}

#[test]
fn every_route_has_a_seed_line_with_its_rule_and_source() {
    let a = json(&[r#"{"temperature": 0.7, "seed": 3}"#, TIES]);
    let endpoints = a["endpoints"].as_array().expect("endpoints");
    for e in endpoints {
        let seed = e["seed"].as_array().expect("seed list");
        assert!(!seed.is_empty(), "{}: no seed rule", e["endpoint"]);
        for s in seed {
            assert!(
                s["given"]["rule"].is_string() && s["absent"]["rule"].is_string(),
                "{s}"
            );
            assert!(!s["source"].as_str().unwrap_or("").is_empty(), "{s}");
        }
    }
    let out = compare(&["request", r#"{"temperature": 0.7, "seed": 3}"#, TIES], "");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let seed_lines = stdout
        .lines()
        .filter(|l| l.starts_with("      seed: "))
        .count();
    assert_eq!(seed_lines, endpoints.len(), "{stdout}");
    // Four of the rules the engines state, as printed.
    let llama = endpoint(&a, "llama-server /v1/chat/completions").1;
    assert_eq!(llama["seed"][0]["given"]["rule"], "per-request");
    assert_eq!(llama["seed"][0]["absent"]["rule"], "random");
    let serve = endpoint(&a, "transformers serve /v1/chat/completions").1;
    assert_eq!(serve["seed"][0]["given"]["rule"], "process-global");
    let mistral = endpoint(&a, "mistralrs-server /v1/chat/completions").1;
    assert_eq!(mistral["seed"][0]["given"]["rule"], "ignored");
    let sglang = endpoint(&a, "sglang 0.5.23 /v1/completions").1;
    assert_eq!(sglang["seed"][0]["given"]["rule"], "ignored");
    assert_eq!(
        sglang["seed"][1]["setup"],
        "--enable-deterministic-inference"
    );
    assert_eq!(sglang["seed"][1]["absent"]["value"], "42");
}

#[test]
fn a_request_field_no_endpoint_reads_is_refused_with_the_nearest_one() {
    let out = compare(&["request", r#"{"temprature": 0.7}"#, TIES], "");
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
    let err = text(&out.stderr);
    assert!(
        err.contains(
            r#"request field "temprature": no endpoint reads it; did you mean temperature?"#
        ),
        "{err}"
    );
    assert!(err.contains("--allow-unknown"), "{err}");
    // A name near nothing: refused, with no suggestion.
    let out = compare(&["request", r#"{"zzqx": 1}"#, TIES], "");
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains(r#"request field "zzqx": no endpoint reads it"#),
        "{err}"
    );
    assert!(!err.contains("did you mean"), "{err}");
    // --allow-unknown runs it: every endpoint drops the field.
    let a = json(&[r#"{"temprature": 0.7}"#, TIES, "--allow-unknown"]);
    for e in a["endpoints"].as_array().expect("endpoints") {
        if e["error"].is_null() && e["semantics"] != "hf-rust" {
            assert!(
                e["ignored"]
                    .as_array()
                    .is_some_and(|i| i.contains(&"temprature".into())),
                "{e}"
            );
        }
    }
    // A field some servers read and others drop runs as before.
    json(&[r#"{"top_k": 40}"#, TIES]);
}

#[test]
fn every_endpoint_has_a_send_line_proven_on_the_fixtures() {
    let a = json(&[r#"{"do_sample": true, "temperature": 0.7, "top_p": 0.9}"#]);
    let endpoints = a["endpoints"].as_array().expect("endpoints").len();
    let send = a["send"].as_array().expect("send");
    assert_eq!(send.len(), endpoints - 1, "{send:#?}");
    for s in send {
        // Either fields to send, or why none can be.
        assert!(s["send"].is_object() != s["cannot"].is_string(), "{s}");
    }
    let out = compare(
        &[
            "request",
            r#"{"do_sample": true, "temperature": 0.7, "top_p": 0.9}"#,
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let t = text(&out.stdout);
    assert!(
        t.contains("What to send for transformers' distribution"),
        "{t}"
    );
}

/// A JSON `response_format` is a grammar on the servers that honour it
/// (llama-server: server-common.cpp:1258-1275 at 0c1e57098;
/// llama_cpp.server: llama_chat_format.py:672-675 at 0.3.36, recorded;
/// Ollama: openai.go FromChatRequest and llm/server.go `Completion`): each
/// refuses it naming the field, the others still run, and `{"type":
/// "text"}` constrains nothing.
#[test]
fn a_json_response_format_is_refused_where_it_constrains_sampling() {
    let chat = [
        "llama-server /v1/chat/completions",
        "llama_cpp.server /v1/chat/completions",
        "Ollama /v1/chat/completions",
        "Ollama v0.6.2–v0.25 Go engine /v1/chat/completions",
    ];
    let completions = ["llama_cpp.server /v1/completions", "Ollama /v1/completions"];
    for (format, refused) in [("json_object", true), ("text", false)] {
        let request =
            format!(r#"{{"temperature": 0.7, "response_format": {{"type": "{format}"}}}}"#);
        let a = json(&[&request, TIES]);
        for name in chat {
            match endpoint(&a, name).1["error"].as_str() {
                Some(err) => {
                    assert!(refused, "{format}, {name}: {err}");
                    assert!(err.starts_with("`response_format` = "), "{name}: {err}");
                    assert!(err.contains("not reproduced"), "{name}: {err}");
                }
                None => assert!(!refused, "{format}, {name} runs"),
            }
        }
        for name in completions {
            assert!(endpoint(&a, name).1["error"].is_null(), "{format}, {name}");
        }
    }
}
