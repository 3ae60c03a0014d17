//! The bundled traces (fixtures/traces/) and `compare trace --format json`
//! read back, shared by tests/it/trace.rs and tests/live/trace.rs (the
//! candle port's tests, which need the model).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use hf_sampling::HfRust;
use parity_core::{Context, Logits, Semantics};
use safetensors::tensor::TensorView;
use safetensors::{Dtype, SafeTensors};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::helpers::{compare, text};

pub(crate) fn traces_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/traces")
}

pub(crate) fn bundled(name: &str) -> String {
    traces_dir()
        .join(format!("{name}.safetensors"))
        .display()
        .to_string()
}

pub(crate) fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("compare-trace-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

// The JSON report read back with deny_unknown_fields: a field added to the
// output without docs/report-schema.md fails here.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // tests/live reads no `schema`
pub(crate) struct Document {
    pub(crate) schema: u32,
    pub(crate) traces: Vec<Report>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub(crate) struct Report {
    pub(crate) trace: String,
    pub(crate) file: String,
    pub(crate) prompt: String,
    pub(crate) text: Option<String>,
    pub(crate) kwargs: Map<String, Value>,
    pub(crate) kwargs_recorded: bool,
    pub(crate) port: String,
    pub(crate) port_semantics: String,
    pub(crate) port_setup: Option<String>,
    pub(crate) rows: Vec<Row>,
    pub(crate) summary: Summary,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub(crate) struct Row {
    pub(crate) step: usize,
    pub(crate) token: i64,
    pub(crate) max_abs_logit_diff: f64,
    pub(crate) argmax: usize,
    pub(crate) port_argmax: usize,
    pub(crate) tv_raw: f64,
    pub(crate) logits: f64,
    pub(crate) sampling: f64,
    pub(crate) total: f64,
    pub(crate) kept: usize,
    pub(crate) kept_on_port_logits: usize,
    pub(crate) kept_port: usize,
    pub(crate) kept_set_changed: bool,
    pub(crate) scores_match: Option<bool>,
    pub(crate) p_diverged: f64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub(crate) struct Stat {
    pub(crate) mean: f64,
    pub(crate) max: f64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub(crate) struct Summary {
    pub(crate) steps: usize,
    pub(crate) max_abs_logit_diff: Stat,
    pub(crate) tv_raw: Stat,
    pub(crate) logits: Stat,
    pub(crate) sampling: Stat,
    pub(crate) total: Stat,
    pub(crate) argmax_flips: Vec<usize>,
    pub(crate) kept_set_changes: Vec<usize>,
    pub(crate) p_diverged_logits: f64,
    pub(crate) p_diverged: f64,
    pub(crate) scores_match: Option<usize>,
}

pub(crate) fn run_json(args: &[&str]) -> Document {
    let out = compare(args, "");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("the JSON report parses with deny_unknown_fields")
}

pub(crate) fn f32_rows(path: &Path, tensor: &str) -> Vec<Vec<f32>> {
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

pub(crate) fn trace_meta(path: &Path) -> (Map<String, Value>, usize, Vec<i64>) {
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
pub(crate) fn check_logits_distance_from_export(
    trace: &str,
    port: &str,
    dir: &Path,
    doc: &Document,
) {
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

pub(crate) fn check_triangle(doc: &Document) {
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

/// A copy of a bundled trace (and its llama.cpp file) with metadata and
/// tensors changed by `edit`.
pub(crate) fn edited_trace(
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
