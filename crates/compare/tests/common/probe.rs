//! `compare probe --format json` read back, shared by tests/it/probe.rs and
//! tests/live/probe.rs.

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::helpers::text;

// The JSON report read back with deny_unknown_fields: a field added to the
// output without docs/report-schema.md fails here.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub(crate) struct Document {
    pub(crate) schema: u32,
    pub(crate) server: String,
    pub(crate) api: String,
    pub(crate) model: Option<String>,
    pub(crate) n_vocab: Option<usize>,
    pub(crate) prompt_ids: Option<Vec<i64>>,
    pub(crate) raw_entries: usize,
    pub(crate) revealed: usize,
    pub(crate) logit_offset: Option<f64>,
    pub(crate) replayed: bool,
    pub(crate) probes: Vec<Probe>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub(crate) struct Probe {
    pub(crate) request: Map<String, Value>,
    pub(crate) mode: String,
    pub(crate) samples: Option<usize>,
    pub(crate) tail_mass: f64,
    pub(crate) tail_cell: bool,
    pub(crate) server_kept: usize,
    pub(crate) explained_by: Vec<String>,
    pub(crate) consistent_with: Vec<String>,
    pub(crate) not_ruled_out: Vec<String>,
    pub(crate) closest: Option<Vec<String>>,
    pub(crate) draws_needed: Option<u64>,
    pub(crate) hidden_pairs: usize,
    pub(crate) notes: Vec<String>,
    pub(crate) tv_to_transformers: Option<f64>,
    pub(crate) transformers_error: Option<String>,
    pub(crate) candidates: Vec<Candidate>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub(crate) struct Candidate {
    pub(crate) semantics: String,
    pub(crate) endpoint: String,
    pub(crate) variant: Option<String>,
    pub(crate) params: Option<Value>,
    pub(crate) kept: Option<usize>,
    pub(crate) tv: Option<f64>,
    pub(crate) max_abs_diff: Option<f64>,
    pub(crate) p_value: Option<f64>,
    pub(crate) p_support: Option<f64>,
    pub(crate) p_shape: Option<f64>,
    pub(crate) verdict: String,
    pub(crate) error: Option<String>,
}

pub(crate) fn document(stdout: &[u8]) -> Document {
    serde_json::from_slice(stdout).unwrap_or_else(|e| panic!("{e}: {}", text(stdout)))
}
