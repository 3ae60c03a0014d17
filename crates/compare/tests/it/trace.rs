//! `compare trace` end to end, on the bundled traces (fixtures/traces/).
//!
//! The llama.cpp port needs no model (its logits are recorded). The candle
//! port runs SmolLM2 from `.cache/models/` (scripts/fetch-model.sh): without
//! the file these tests fail when `CI` is set and otherwise print a skip note.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use hf_sampling::HfRust;
use parity_core::{Context, Logits, Semantics};
use safetensors::tensor::TensorView;
use safetensors::{Dtype, SafeTensors};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::helpers::{compare, text};

fn traces_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/traces")
}

fn bundled(name: &str) -> String {
    traces_dir()
        .join(format!("{name}.safetensors"))
        .display()
        .to_string()
}

fn model_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../.cache/models/SmolLM2-135M-Instruct.Q4_1.gguf")
}

/// The model must be here: the tests that call this are ignored (with the
/// reason) when build.rs did not find it, so a model gone since the build
/// is a failure, never a silent pass.
fn require_model(test: &str) {
    assert!(
        model_path().is_file(),
        "{test}: {} is missing, but it was there when this test was built (build.rs ignores the \
         test without it): run scripts/fetch-model.sh, or `touch crates/compare/build.rs` to \
         rebuild",
        model_path().display()
    );
}

fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("compare-trace-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

// The JSON report read back with deny_unknown_fields: a field added to the
// output without docs/report-schema.md fails here.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Document {
    schema: u32,
    traces: Vec<Report>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Report {
    trace: String,
    file: String,
    prompt: String,
    text: Option<String>,
    kwargs: Map<String, Value>,
    kwargs_recorded: bool,
    port: String,
    port_semantics: String,
    port_setup: Option<String>,
    rows: Vec<Row>,
    summary: Summary,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Row {
    step: usize,
    token: i64,
    max_abs_logit_diff: f64,
    argmax: usize,
    port_argmax: usize,
    tv_raw: f64,
    logits: f64,
    sampling: f64,
    total: f64,
    kept: usize,
    kept_on_port_logits: usize,
    kept_port: usize,
    kept_set_changed: bool,
    scores_match: Option<bool>,
    p_diverged: f64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Stat {
    mean: f64,
    max: f64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Summary {
    steps: usize,
    max_abs_logit_diff: Stat,
    tv_raw: Stat,
    logits: Stat,
    sampling: Stat,
    total: Stat,
    argmax_flips: Vec<usize>,
    kept_set_changes: Vec<usize>,
    p_diverged_logits: f64,
    p_diverged: f64,
    scores_match: Option<usize>,
}

fn run_json(args: &[&str]) -> Document {
    let out = compare(args, "");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("the JSON report parses with deny_unknown_fields")
}

fn f32_rows(path: &Path, tensor: &str) -> Vec<Vec<f32>> {
    let data = std::fs::read(path).expect("read safetensors");
    let st = SafeTensors::deserialize(&data).expect("safetensors");
    let t = st.tensor(tensor).expect("tensor");
    assert_eq!(t.dtype(), Dtype::F32);
    let v = t.shape()[1];
    let flat: Vec<f32> = t
        .data()
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    flat.chunks_exact(v).map(<[f32]>::to_vec).collect()
}

fn trace_meta(path: &Path) -> (Map<String, Value>, usize, Vec<i64>) {
    let data = std::fs::read(path).expect("read trace");
    let (_, header) = SafeTensors::read_metadata(&data).expect("header");
    let meta = header.metadata().clone().expect("metadata");
    let kwargs = serde_json::from_str(&meta["kwargs"]).expect("kwargs");
    let prompt_len = meta["prompt_len"].parse().expect("prompt_len");
    let st = SafeTensors::deserialize(&data).expect("safetensors");
    let ids = st
        .tensor("input_ids")
        .expect("input_ids")
        .data()
        .chunks_exact(8)
        .map(|c| i64::from_le_bytes(c.try_into().expect("8 bytes")))
        .collect();
    (kwargs, prompt_len, ids)
}

/// Recomputes every row's *logits* distance from the exported port logits
/// with the `hf-rust` semantics called directly (not through `compare
/// trace`), and checks the two agree to 1e-6.
fn check_logits_distance_from_export(trace: &str, port: &str, dir: &Path, doc: &Document) {
    let trace_path = traces_dir().join(format!("{trace}.safetensors"));
    let exported = dir.join(format!("{trace}.{port}.safetensors"));
    let port_logits = f32_rows(&exported, "logits");
    let hf_logits = f32_rows(&trace_path, "logits");
    let (kwargs, prompt_len, ids) = trace_meta(&trace_path);
    let params = hf_sampling::resolve(&kwargs, None).expect("kwargs resolve");
    let report = &doc.traces[0];
    assert_eq!(report.rows.len(), port_logits.len());
    let hf = |logits: &[f32], ctx: &Context<'_>| {
        HfRust::default()
            .distribution(&Logits::from_f32(logits), ctx, &params)
            .expect("hf")
    };
    for (t, row) in report.rows.iter().enumerate() {
        let ctx = Context::new(&ids[..prompt_len + t], Some(prompt_len)).expect("context");
        let a = hf(&hf_logits[t], &ctx);
        let b = hf(&port_logits[t], &ctx);
        let tv: f64 = 0.5
            * a.probs()
                .iter()
                .zip(b.probs())
                .map(|(x, y)| (x - y).abs())
                .sum::<f64>();
        assert!(
            (tv - row.logits).abs() <= 1e-6,
            "{trace} step {t}: recomputed logits distance {tv} vs reported {} (tolerance 1e-6)",
            row.logits
        );
    }
}

fn check_triangle(doc: &Document) {
    for r in &doc.traces {
        for row in &r.rows {
            // TV is a metric: total ≤ logits + sampling (1e-12 for f64 rounding).
            assert!(
                row.total <= row.logits + row.sampling + 1e-12,
                "{} step {}: total {} > logits {} + sampling {}",
                r.trace,
                row.step,
                row.total,
                row.logits,
                row.sampling
            );
        }
    }
}

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
#[cfg_attr(
    not(has_model),
    ignore = "needs the SmolLM2 GGUF in .cache/models/ (scripts/fetch-model.sh)"
)]
fn candle_port_logits_distance_recomputes_from_exported_logits() {
    require_model("candle_port_logits_distance_recomputes_from_exported_logits");
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

/// A copy of a bundled trace (and its llama.cpp file) with metadata and
/// tensors changed by `edit`.
fn edited_trace(
    tag: &str,
    name: &str,
    edit: impl Fn(&mut HashMap<String, String>, &mut Vec<(String, Dtype, Vec<usize>, Vec<u8>)>),
) -> (PathBuf, PathBuf) {
    let dir = scratch(tag);
    let src = traces_dir().join(format!("{name}.safetensors"));
    let data = std::fs::read(&src).expect("read");
    let (_, header) = SafeTensors::read_metadata(&data).expect("header");
    let mut meta = header.metadata().clone().expect("metadata");
    let st = SafeTensors::deserialize(&data).expect("safetensors");
    let mut tensors: Vec<_> = st
        .tensors()
        .into_iter()
        .map(|(n, t)| (n, t.dtype(), t.shape().to_vec(), t.data().to_vec()))
        .collect();
    edit(&mut meta, &mut tensors);
    let views: Vec<(String, TensorView<'_>)> = tensors
        .iter()
        .map(|(n, d, s, b)| (n.clone(), TensorView::new(*d, s.clone(), b).expect("view")))
        .collect();
    let dst = dir.join(format!("{name}.safetensors"));
    std::fs::write(
        &dst,
        safetensors::serialize(views, Some(meta)).expect("serialize"),
    )
    .expect("write");
    std::fs::copy(
        traces_dir().join(format!("{name}.llamacpp.safetensors")),
        dir.join(format!("{name}.llamacpp.safetensors")),
    )
    .expect("copy llama.cpp file");
    (dir, dst)
}

#[test]
#[cfg_attr(
    not(has_model),
    ignore = "needs the SmolLM2 GGUF in .cache/models/ (scripts/fetch-model.sh)"
)]
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
    // The candle port: the model's hash is not the trace's.
    require_model("a_trace_from_another_model_is_detected");
    let out = compare(&["trace", "--trace", &trace.display().to_string()], "");
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains(&format!("expected {other}")), "{err}");
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

#[test]
#[cfg_attr(
    not(has_model),
    ignore = "needs the SmolLM2 GGUF in .cache/models/ (scripts/fetch-model.sh)"
)]
fn a_prompt_longer_than_the_context_window_is_refused() {
    require_model("a_prompt_longer_than_the_context_window_is_refused");
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
