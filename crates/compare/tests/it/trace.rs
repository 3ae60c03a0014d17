//! `compare trace` end to end, on the bundled traces (fixtures/traces/).
//!
//! The llama.cpp port needs no model (its logits are recorded). The candle
//! port runs SmolLM2 from `.cache/models/` (scripts/fetch-model.sh): its
//! tests are in tests/live/trace.rs, which look for the model when they run.

use std::path::Path;

#[path = "../common/traces.rs"]
mod files;

use crate::helpers::{compare, text};
use files::{
    bundled, check_logits_distance_from_export, check_triangle, edited_trace, f32_rows, run_json,
    scratch, traces_dir,
};

#[test]
fn llamacpp_port_needs_no_model_and_its_logits_distance_recomputes() {
    let dir = scratch("llamacpp");
    let trace = "bicycle_p09";
    let doc = run_json(&[
        "trace",
        "--trace",
        &bundled(trace),
        "--port",
        "llama.cpp",
        "--model",
        "/nonexistent/model.gguf",
        "--format",
        "json",
        "--export-logits",
        &dir.display().to_string(),
    ]);
    assert_eq!(doc.schema, 2);
    let r = &doc.traces[0];
    assert_eq!(
        (r.port.as_str(), r.port_semantics.as_str()),
        ("llama.cpp", "llama.cpp")
    );
    assert_eq!(r.rows.len(), 24);
    // The exported logits are llama.cpp's recorded ones, bit for bit.
    let exported = f32_rows(
        &dir.join(format!("{trace}.llama.cpp.safetensors")),
        "logits",
    );
    let recorded = f32_rows(
        &traces_dir().join(format!("{trace}.llamacpp.safetensors")),
        "logits",
    );
    assert!(
        exported == recorded,
        "exported logits are not the recorded llama.cpp logits"
    );
    // hf-rust reproduces transformers' recorded scores at every step.
    assert_eq!(r.summary.scores_match, Some(24));
    check_logits_distance_from_export(trace, "llama.cpp", &dir, &doc);
    check_triangle(&doc);
    // llama.cpp's Q4_1 kernels are not transformers' f32 dequantised matmuls.
    assert!(r.summary.max_abs_logit_diff.max > 0.0);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn every_bundled_trace_keeps_the_triangle_inequality_under_llamacpp() {
    let doc = run_json(&["trace", "--port", "llama.cpp", "--format", "json"]);
    assert_eq!(doc.traces.len(), 3);
    check_triangle(&doc);
    for r in &doc.traces {
        assert_eq!(r.summary.scores_match, Some(r.rows.len()), "{}", r.trace);
        // p_diverged is 1 − Π(1 − total): recompute it from the rows.
        let p = 1.0 - r.rows.iter().map(|row| 1.0 - row.total).product::<f64>();
        assert!((p - r.summary.p_diverged).abs() < 1e-12, "{}", r.trace);
    }
}

#[test]
fn kwargs_override_and_port_params_are_used() {
    // transformers with top-k 1 is greedy; the port given the same top-k 1:
    // both one-hot, so the sampling distance is 0 whatever the logits.
    let doc = run_json(&[
        "trace",
        "--trace",
        &bundled("poem_t07_default"),
        "--port",
        "llama.cpp",
        "--kwargs",
        r#"{"do_sample": true, "top_k": 1}"#,
        "--port-params",
        r#"{"top_k": 1}"#,
        "--steps",
        "5",
        "--format",
        "json",
    ]);
    let r = &doc.traces[0];
    assert!(!r.kwargs_recorded);
    assert_eq!(r.summary.scores_match, None);
    assert_eq!(r.rows.len(), 5);
    for row in &r.rows {
        assert_eq!((row.kept, row.kept_port), (1, 1));
        assert_eq!(row.sampling, 0.0);
        // One-hot on both sides: the logits distance is 1 exactly when the argmax flips.
        let flipped = row.argmax != row.port_argmax;
        assert_eq!(row.logits, if flipped { 1.0 } else { 0.0 });
    }
}

#[test]
fn a_missing_model_says_how_to_fetch_it() {
    let out = compare(
        &[
            "trace",
            "--trace",
            &bundled("poem_t07_default"),
            "--model",
            "/nonexistent/m.gguf",
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
    let err = text(&out.stderr);
    assert!(
        err.starts_with("error: model file /nonexistent/m.gguf not found"),
        "{err}"
    );
    assert!(err.contains("scripts/fetch-model.sh"), "{err}");
    assert_eq!(
        err.lines().filter(|l| l.starts_with("error")).count(),
        1,
        "{err}"
    );
}

#[test]
fn a_wrong_model_file_is_named_by_its_hash() {
    let dir = scratch("wrong-model");
    let fake = dir.join("fake.gguf");
    std::fs::write(&fake, b"abc").expect("write");
    let out = compare(
        &[
            "trace",
            "--trace",
            &bundled("poem_t07_default"),
            "--model",
            &fake.display().to_string(),
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let err = text(&out.stderr);
    // sha256("abc") (FIPS 180-4 example).
    assert!(
        err.contains("sha256 ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad, expected b179c952"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `compare trace --trace FILE --port llama.cpp` (text output).
fn llamacpp_port(trace: &Path) -> std::process::Output {
    let file = trace.display().to_string();
    compare(&["trace", "--trace", &file, "--port", "llama.cpp"], "")
}

#[test]
fn a_trace_from_another_model_is_detected() {
    let other = "0".repeat(64);
    let (dir, trace) = edited_trace("other-model", "poem_t07_default", |meta, _| {
        meta.insert("gguf_sha256".into(), other.clone());
    });
    // llama.cpp's logits were recorded from the bundled model.
    let out = llamacpp_port(&trace);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let err = text(&out.stderr);
    assert!(
        err.contains(&format!(
            "but the trace {} is from {other}",
            trace.display()
        )),
        "{err}"
    );
    assert!(err.contains("a trace from another model"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_trace_with_another_vocabulary_size_is_refused() {
    let (dir, trace) = edited_trace("vocab", "poem_t07_default", |meta, _| {
        meta.insert("vocab_size".into(), "32000".into());
    });
    let out = llamacpp_port(&trace);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("input_ids[") && err.contains("vocab_size 32000")
            || err.contains("expected [24, 32000]"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The text report fits in 100 columns: the table's columns are sized for
/// 7-character figures, and the header and summary lines wrap (long JSON at
/// its commas).
#[test]
fn text_fits_in_100_columns() {
    let out = compare(&["trace", "--port", "llama.cpp"], "");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let t = text(&out.stdout);
    assert!(t.contains("  step token"), "{t}");
    let wide: Vec<&str> = t.lines().filter(|l| l.chars().count() > 100).collect();
    assert!(wide.is_empty(), "{wide:#?}");
}
