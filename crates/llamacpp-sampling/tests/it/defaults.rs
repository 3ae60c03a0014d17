//! llama-server's layered defaults: a GGUF's `general.sampling.*` keys (the
//! file written by PyPI gguf's writer, fixtures/llamacpp/server-defaults/)
//! and the operator's flags, over the built-in defaults, as
//! common/common.cpp and common/arg.cpp at 0c1e57098 layer them.

use std::path::PathBuf;

use llamacpp_sampling::{LlamaServer, ServerDefaults};
use parity_core::gguf::GgufMetadata;
use parity_core::{FieldSource, Semantics};
use serde_json::{Map, Value, json};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/llamacpp/server-defaults")
        .join(name)
}

fn stamped() -> GgufMetadata {
    GgufMetadata::from_path(&fixture("stamped-keys.gguf"))
        .expect("readable")
        .expect("a GGUF")
}

fn route(server: &LlamaServer, request: Value) -> (Map<String, Value>, Vec<(String, FieldSource)>) {
    let request = request.as_object().cloned().unwrap_or_default();
    let r = server.from_request(&request, None).remove(0);
    let params = r.params.expect("accepted");
    let described = server.describe(&params).expect("fields").into_json();
    (
        described.as_object().cloned().unwrap_or_default(),
        r.sources,
    )
}

fn source(sources: &[(String, FieldSource)], field: &str) -> FieldSource {
    sources
        .iter()
        .find(|(k, _)| k == field)
        .map(|(_, s)| *s)
        .unwrap_or_else(|| panic!("no source for {field}: {sources:?}"))
}

#[test]
fn the_gguf_keys_fill_what_the_request_leaves_out() {
    let server = LlamaServer::new(ServerDefaults::new(Some(&stamped()), None).expect("valid"));
    let (p, sources) = route(&server, json!({"temperature": 0.7}));
    // 20, 0.8f, 0.1f from the file; temperature from the request; typical_p built in.
    assert_eq!(p["top_k"], json!(20));
    assert_eq!(p["top_p"], json!(0.8));
    assert_eq!(p["min_p"], json!(0.1));
    assert_eq!(p["temperature"], json!(0.7));
    assert_eq!(source(&sources, "top_k"), FieldSource::ModelFile);
    assert_eq!(source(&sources, "temperature"), FieldSource::Request);
    assert_eq!(source(&sources, "typical_p"), FieldSource::EngineDefault);
    let (p, sources) = route(&server, json!({}));
    assert_eq!(p["temperature"], json!(0.6));
    assert_eq!(source(&sources, "temperature"), FieldSource::ModelFile);
}

#[test]
fn a_flag_beats_the_gguf_key_and_a_request_beats_both() {
    let d = ServerDefaults::new(Some(&stamped()), Some("--top-k 25 --temp 0.9")).expect("valid");
    let server = LlamaServer::new(d);
    let (p, sources) = route(&server, json!({"top_p": 0.5}));
    assert_eq!(p["top_k"], json!(25));
    assert_eq!(p["temperature"], json!(0.9));
    assert_eq!(p["min_p"], json!(0.1));
    assert_eq!(p["top_p"], json!(0.5));
    assert_eq!(source(&sources, "top_k"), FieldSource::OperatorFlag);
    assert_eq!(source(&sources, "min_p"), FieldSource::ModelFile);
    assert_eq!(source(&sources, "top_p"), FieldSource::Request);
}

#[test]
fn flags_are_read_as_llama_server_reads_them() {
    // `--top_k` is `--top-k`; the last of two wins; --temp is clamped to >= 0.
    let d = ServerDefaults::new(None, Some("--top_k 5 --top-k 7 --temp -2")).expect("valid");
    let (p, _) = route(&LlamaServer::new(d), json!({}));
    assert_eq!(
        (p["top_k"].clone(), p["temperature"].clone()),
        (json!(7), json!(0.0))
    );
    for (flags, says) in [
        ("--mirostat 2", "`--mirostat` is not modelled"),
        ("--port 8080", "`--port` is not modelled"),
        ("--top-k", "needs a value"),
        ("--top-k abc", "refuses to start (std::stoi"),
        (
            "--repeat-penalty 0",
            "repeat-penalty must be finite and greater than 0",
        ),
        ("--repeat-last-n -1", "invalid repeat-last-n"),
    ] {
        let e = ServerDefaults::new(None, Some(flags))
            .expect_err(flags)
            .to_string();
        assert!(e.contains(says), "{flags}: {e}");
    }
}

#[test]
fn the_backend_sampling_flag_is_the_default_of_the_request_field() {
    // -bs / --backend-sampling (common/arg.cpp): no value; a request's own
    // `backend_sampling` still decides
    let server = LlamaServer::new(ServerDefaults::new(None, Some("-bs --top-k 5")).expect("valid"));
    let (p, sources) = route(&server, json!({}));
    assert_eq!(p["backend_sampling"], json!(true));
    assert_eq!(p["top_k"], json!(5));
    assert_eq!(
        source(&sources, "backend_sampling"),
        FieldSource::OperatorFlag
    );
    let (p, _) = route(&server, json!({"backend_sampling": false}));
    assert!(!p.contains_key("backend_sampling"), "{p:?}");
    let (p, sources) = route(
        &LlamaServer::new(ServerDefaults::new(None, Some("--backend-sampling")).expect("valid")),
        json!({"backend_sampling": true}),
    );
    assert_eq!(p["backend_sampling"], json!(true));
    assert_eq!(source(&sources, "backend_sampling"), FieldSource::Request);
    // n_probs without post_sampling_probs turns it off (the field is not shown)
    let (p, _) = route(&server, json!({"n_probs": 3}));
    assert!(!p.contains_key("backend_sampling"), "{p:?}");
    // the default top_k 40 above a 3-token vocabulary: the server would abort
    let params = server.parse_params(&Map::new()).expect("parses");
    let ctx = parity_core::Context::new(&[], None).expect("context");
    let err = server
        .distribution(
            &parity_core::Logits::from_f32(&[1.0, 2.0, 3.0]),
            &ctx,
            &params,
        )
        .expect_err("top-k 5 > 3");
    assert!(err.to_string().contains("aborts"), "{err}");
}
