//! `compare trace`'s candle port, which runs SmolLM2 from `.cache/models/`
//! (scripts/fetch-model.sh): these tests need the model (main.rs).

use crate::helpers::{compare, text};
use crate::traces::{
    bundled, check_logits_distance_from_export, check_triangle, edited_trace, run_json, scratch,
};

pub(crate) fn candle_port_logits_distance_recomputes_from_exported_logits() {
    let dir = scratch("candle");
    let trace = "cook_k40p09rep";
    let doc = run_json(&[
        "trace",
        "--trace",
        &bundled(trace),
        "--format",
        "json",
        "--export-logits",
        &dir.display().to_string(),
    ]);
    let r = &doc.traces[0];
    assert_eq!(
        (r.port.as_str(), r.port_semantics.as_str()),
        ("candle", "candle")
    );
    assert_eq!(r.summary.scores_match, Some(24));
    check_logits_distance_from_export(trace, "candle", &dir, &doc);
    check_triangle(&doc);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The candle port refuses a trace whose model hash is not the model's.
pub(crate) fn a_trace_from_another_model_is_detected_by_candle() {
    let other = "0".repeat(64);
    let (dir, trace) = edited_trace("other-model-candle", "poem_t07_default", |meta, _| {
        meta.insert("gguf_sha256".into(), other.clone());
    });
    let out = compare(&["trace", "--trace", &trace.display().to_string()], "");
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains(&format!("expected {other}")), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

pub(crate) fn a_prompt_longer_than_the_context_window_is_refused() {
    // 5000 prompt ids (token 28 repeated) and one step: candle's
    // quantized_llama holds MAX_SEQ_LEN = 4096 positions.
    let prompt_len = 5000usize;
    let (dir, trace) = edited_trace("too-long", "poem_t07_default", |meta, tensors| {
        meta.insert("prompt_len".into(), prompt_len.to_string());
        meta.insert("steps".into(), "1".into());
        for (name, _, shape, bytes) in tensors.iter_mut() {
            match name.as_str() {
                "input_ids" => {
                    *shape = vec![prompt_len + 1];
                    *bytes = std::iter::repeat_n(28i64, prompt_len + 1)
                        .flat_map(i64::to_le_bytes)
                        .collect();
                }
                "tokens" => {
                    *shape = vec![1];
                    *bytes = 28i64.to_le_bytes().to_vec();
                }
                "logits" => {
                    shape[0] = 1;
                    bytes.truncate(shape[1] * 4);
                }
                "scores.offsets" => {
                    *shape = vec![2];
                    let first_end = i64::from_le_bytes(bytes[8..16].try_into().expect("8"));
                    *bytes = [0i64, first_end]
                        .iter()
                        .flat_map(|x| x.to_le_bytes())
                        .collect();
                }
                _ => {}
            }
        }
    });
    let out = compare(&["trace", "--trace", &trace.display().to_string()], "");
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let err = text(&out.stderr);
    assert!(
        err.contains("the sequence needs 5000 positions but the context window is 4096"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
