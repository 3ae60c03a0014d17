//! Ollama's options mapped onto llama-server's request.

use llamacpp_sampling::{LlamaCpp, Ollama};
use parity_core::{Context, Logits, Semantics};
use serde_json::json;

#[test]
fn empty_options_are_ollamas_defaults_not_llama_servers() {
    let logits = Logits::from_f32(&[2.0, 1.9, 1.0, 0.5, -3.0]);
    let ctx = Context::new(&[], None).expect("empty context");
    let o = Ollama
        .parse_params(json!({}).as_object().expect("object"))
        .expect("parses");
    let ollama = Ollama.distribution(&logits, &ctx, &o).expect("runs");
    let l = LlamaCpp
        .parse_params(
            json!({"temperature": 0.8, "top_k": 40, "top_p": 0.9, "min_p": 0.0})
                .as_object()
                .expect("object"),
        )
        .expect("parses");
    let same = LlamaCpp.distribution(&logits, &ctx, &l).expect("runs");
    assert_eq!(ollama.probs(), same.probs());
    // llama-server's own defaults (min_p 0.05) cut id 4: -3 < 2 + ln 0.05 = -0.996
    let server = LlamaCpp
        .parse_params(json!({}).as_object().expect("object"))
        .expect("parses");
    let d = LlamaCpp.distribution(&logits, &ctx, &server).expect("runs");
    assert!(!d.kept().contains(&4));
}

#[test]
fn ollama_refuses_what_llama_server_refuses() {
    let e = Ollama
        .parse_params(json!({"repeat_last_n": -1}).as_object().expect("object"))
        .expect_err("refused")
        .to_string();
    assert!(
        e.starts_with("`repeat_last_n` = -1: llama-server refuses it"),
        "{e}"
    );
    let e = Ollama
        .parse_params(json!({"temperature": true}).as_object().expect("object"))
        .expect_err("refused")
        .to_string();
    assert!(e.contains("must be of type float32"), "{e}");
}
