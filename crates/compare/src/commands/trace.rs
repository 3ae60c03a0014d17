//! `compare trace`: along a recorded transformers generation, how far is a
//! port's next-token distribution from transformers', step by step, and how
//! much of that is the model (its logits) and how much the sampling setup.
//!
//! A trace (`fixtures/traces/NAME.safetensors`, scripts/reference/
//! trace_reference.py, docs/fixtures.md) holds, per generated token, the
//! context, transformers' raw logits, the processed scores it drew from and
//! the token. The port's logits for the same contexts come from the real
//! port: candle-transformers' quantized llama run here (`candle-adapter`'s
//! `model`), or llama.cpp's logits recorded beside the trace
//! (`NAME.llamacpp.safetensors`, scripts/reference/trace_llamacpp.py).
//!
//! Per step, with T = transformers' semantics (`hf-rust` with the trace's
//! kwargs) and P = the port's sampling setup:
//! - *logits*   = TV(T on transformers' logits, T on the port's logits);
//! - *sampling* = TV(T on the port's logits, P on the port's logits);
//! - *total*    = TV(T on transformers' logits, P on the port's logits).
//!
//! TV is a metric, so total ≤ logits + sampling on every step.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use candle_adapter::model::{Expected, ModelError, QuantizedLlama};
use parity_core::metrics::{Comparison, argmax_first, max_logit_diff, softmax_f64};
use parity_core::{AnySemantics, Context, Logits, Vocab};
use safetensors::{Dtype, SafeTensors};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::cli::{Format, Port, TraceArgs};

/// The format tag of a trace file.
pub const TRACE_FORMAT: &str = "sampling-parity-trace/1";
/// The format tag of llama.cpp's logits beside a trace.
pub const LLAMACPP_FORMAT: &str = "sampling-parity-trace-llamacpp/1";
/// The format tag of `--export-logits` files.
pub const EXPORT_FORMAT: &str = "sampling-parity-port-logits/1";
/// The model the bundled traces were recorded from.
pub const MODEL_NAME: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";

/// A trace file over 256 MiB is refused unread (the bundled ones are 4.7 MB).
const MAX_TRACE_BYTES: u64 = 256 << 20;

/// Where scripts/fetch-model.sh puts the model.
pub fn default_model_path() -> PathBuf {
    repo_root().join(".cache/models").join(MODEL_NAME)
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The bundled traces: `fixtures/traces/*.safetensors` without the llama.cpp files.
pub fn bundled_traces() -> anyhow::Result<Vec<PathBuf>> {
    let dir = parity_core::fixture::bundled_dir().join("traces");
    let mut files: Vec<PathBuf> = parity_core::fixture::list_dir(&dir)?
        .into_iter()
        .filter(|p| !is_llamacpp_file(p))
        .collect();
    files.sort();
    Ok(files)
}

fn is_llamacpp_file(p: &Path) -> bool {
    p.file_name()
        .is_some_and(|n| n.to_string_lossy().ends_with(".llamacpp.safetensors"))
}

/// One recorded transformers generation.
#[derive(Debug, Clone)]
pub struct Trace {
    /// The file.
    pub path: PathBuf,
    /// `name` from the metadata.
    pub name: String,
    /// The generate kwargs it was recorded with.
    pub kwargs: Map<String, Value>,
    /// The user prompt before chat templating.
    pub prompt: String,
    /// Templated prompt length; step t's context is `input_ids[..prompt_len + t]`.
    pub prompt_len: usize,
    /// The torch seed.
    pub seed: u64,
    /// sha256 of the GGUF it was recorded from.
    pub gguf_sha256: String,
    /// The vocabulary size (length of every logits row).
    pub vocab_size: usize,
    /// Prompt and sampled tokens.
    pub input_ids: Vec<i64>,
    /// transformers' raw logits, one row per step.
    pub logits: Vec<Vec<f32>>,
    /// The processed scores per step: (id, score) of every finite entry.
    pub scores: Vec<Vec<(usize, f32)>>,
}

impl Trace {
    /// Number of steps.
    pub fn steps(&self) -> usize {
        self.logits.len()
    }

    /// The token sampled at step `t`.
    pub fn token(&self, t: usize) -> i64 {
        self.input_ids[self.prompt_len + t]
    }

    /// Step t's processed scores as a dense vector (-inf where filtered).
    pub fn dense_scores(&self, t: usize) -> Vec<f32> {
        let mut s = vec![f32::NEG_INFINITY; self.vocab_size];
        for &(id, v) in &self.scores[t] {
            s[id] = v;
        }
        s
    }
}

/// Reads at most `MAX_TRACE_BYTES` (`parity_core::fixture::read_at_most`: a
/// path such as /dev/zero never ends and reports no size).
fn read_bounded(path: &Path, what: &str) -> anyhow::Result<Vec<u8>> {
    parity_core::fixture::read_at_most(path, MAX_TRACE_BYTES)
        .with_context(|| format!("reading {what} {}", path.display()))?
        .map_err(|_| {
            anyhow::anyhow!(
                "{what} {} is over {MAX_TRACE_BYTES} bytes; refusing it",
                path.display()
            )
        })
}

struct File<'a> {
    path: &'a Path,
    st: SafeTensors<'a>,
    meta: std::collections::HashMap<String, String>,
}

impl<'a> File<'a> {
    fn parse(path: &'a Path, data: &'a [u8], format: &str) -> anyhow::Result<Self> {
        let bad = |e: safetensors::SafeTensorError| {
            anyhow::anyhow!("{}: not a safetensors file: {e}", path.display())
        };
        let (_, header) = SafeTensors::read_metadata(data).map_err(bad)?;
        let meta = header.metadata().clone().unwrap_or_default();
        let st = SafeTensors::deserialize(data).map_err(bad)?;
        let f = Self { path, st, meta };
        let got = f.text("format")?;
        if got != format {
            bail!(
                "{}: metadata `format` is {got:?}, expected {format:?}",
                path.display()
            );
        }
        Ok(f)
    }

    fn text(&self, key: &str) -> anyhow::Result<&str> {
        self.meta
            .get(key)
            .map(String::as_str)
            .with_context(|| format!("{}: metadata has no `{key}`", self.path.display()))
    }

    fn number(&self, key: &str) -> anyhow::Result<usize> {
        let s = self.text(key)?;
        s.parse().map_err(|_| {
            anyhow::anyhow!(
                "{}: metadata `{key}` is {s:?}, not a non-negative integer",
                self.path.display()
            )
        })
    }

    fn tensor(&self, name: &str, dtype: Dtype, dims: usize) -> anyhow::Result<(Vec<usize>, &[u8])> {
        let t = self
            .st
            .tensor(name)
            .map_err(|_| anyhow::anyhow!("{}: no tensor `{name}`", self.path.display()))?;
        if t.dtype() != dtype || t.shape().len() != dims {
            bail!(
                "{}: tensor `{name}` is {:?}{:?}, expected {dtype:?} with {dims} dimension(s)",
                self.path.display(),
                t.dtype(),
                t.shape()
            );
        }
        Ok((t.shape().to_vec(), t.data()))
    }

    fn i64s(&self, name: &str) -> anyhow::Result<Vec<i64>> {
        let (_, data) = self.tensor(name, Dtype::I64, 1)?;
        Ok(data
            .chunks_exact(8)
            .map(|c| i64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
            .collect())
    }

    fn f32s(&self, name: &str, dims: usize) -> anyhow::Result<(Vec<usize>, Vec<f32>)> {
        let (shape, data) = self.tensor(name, Dtype::F32, dims)?;
        let v = data
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        Ok((shape, v))
    }

    /// A [steps, V] f32 matrix of logits with no NaN or +inf.
    fn logits(&self, steps: usize, vocab: usize) -> anyhow::Result<Vec<Vec<f32>>> {
        let (shape, flat) = self.f32s("logits", 2)?;
        if shape != [steps, vocab] {
            bail!(
                "{}: tensor `logits` has shape {shape:?}, expected [{steps}, {vocab}] (steps, vocab_size)",
                self.path.display()
            );
        }
        if let Some(i) = flat.iter().position(|x| x.is_nan() || *x == f32::INFINITY) {
            bail!(
                "{}: logits[{}][{}] is {}",
                self.path.display(),
                i / vocab,
                i % vocab,
                flat[i]
            );
        }
        Ok(flat.chunks_exact(vocab).map(<[f32]>::to_vec).collect())
    }
}

/// Reads and checks a trace file; every error names the file and the field.
pub fn load_trace(path: &Path) -> anyhow::Result<Trace> {
    let data = read_bounded(path, "trace")?;
    parse_trace(path, &data)
}

/// Checks trace bytes (`path` is for messages): format, metadata, tensor
/// shapes, ids within the vocabulary, no NaN or +inf logit, sparse scores
/// within range. Every error starts with the path.
pub fn parse_trace(path: &Path, data: &[u8]) -> anyhow::Result<Trace> {
    let f = File::parse(path, data, TRACE_FORMAT)?;
    let p = path.display();
    let steps = f.number("steps")?;
    let vocab_size = f.number("vocab_size")?;
    let prompt_len = f.number("prompt_len")?;
    if steps == 0 || vocab_size == 0 || prompt_len == 0 {
        bail!(
            "{p}: steps ({steps}), vocab_size ({vocab_size}) and prompt_len ({prompt_len}) must be positive"
        );
    }
    let kwargs_text = f.text("kwargs")?;
    let kwargs: Map<String, Value> = serde_json::from_str(kwargs_text)
        .with_context(|| format!("{p}: metadata `kwargs` is not a JSON object: {kwargs_text}"))?;
    let seed_text = f.text("seed")?;
    let seed = seed_text
        .parse()
        .map_err(|_| anyhow::anyhow!("{p}: metadata `seed` is {seed_text:?}, not an integer"))?;
    let gguf_sha256 = f.text("gguf_sha256")?.to_string();
    let input_ids = f.i64s("input_ids")?;
    if prompt_len.checked_add(steps) != Some(input_ids.len()) {
        bail!(
            "{p}: input_ids has {} entries but prompt_len {prompt_len} + steps {steps} = {}",
            input_ids.len(),
            prompt_len as u128 + steps as u128
        );
    }
    if let Some((i, id)) = input_ids
        .iter()
        .enumerate()
        .find(|&(_, &id)| id < 0 || id as u128 >= vocab_size as u128)
    {
        bail!("{p}: input_ids[{i}] = {id} is not a token id (vocab_size {vocab_size})");
    }
    let tokens = f.i64s("tokens")?;
    if tokens.as_slice() != &input_ids[prompt_len..] {
        bail!("{p}: tensor `tokens` is not input_ids[prompt_len..]");
    }
    let logits = f.logits(steps, vocab_size)?;
    let offsets = f.i64s("scores.offsets")?;
    let ids = f.i64s("scores.ids")?;
    let (_, values) = f.f32s("scores.values", 1)?;
    if offsets.len() != steps + 1 || ids.len() != values.len() {
        bail!(
            "{p}: sparse scores: {} offsets for {steps} steps (need steps + 1), {} ids for {} values",
            offsets.len(),
            ids.len(),
            values.len()
        );
    }
    let mut scores = Vec::with_capacity(steps);
    for t in 0..steps {
        let (a, b) = (offsets[t], offsets[t + 1]);
        if a < 0 || b < a || b as u128 > ids.len() as u128 {
            bail!(
                "{p}: scores.offsets[{t}..={}] = {a}..{b} is not a range of the {} stored scores",
                t + 1,
                ids.len()
            );
        }
        let mut row = Vec::with_capacity((b - a) as usize);
        for k in a as usize..b as usize {
            let id = ids[k];
            if id < 0 || id as u128 >= vocab_size as u128 || !values[k].is_finite() {
                bail!(
                    "{p}: scores entry {k} (step {t}) is id {id} = {}; ids must be < vocab_size {vocab_size}, scores finite",
                    values[k]
                );
            }
            row.push((id as usize, values[k]));
        }
        scores.push(row);
    }
    Ok(Trace {
        path: path.to_path_buf(),
        name: f.text("name")?.to_string(),
        kwargs,
        prompt: f.text("prompt")?.to_string(),
        prompt_len,
        seed,
        gguf_sha256,
        vocab_size,
        input_ids,
        logits,
        scores,
    })
}

/// The llama.cpp logits file recorded beside a trace.
pub fn llamacpp_path(trace: &Path) -> PathBuf {
    let stem = trace
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    trace.with_file_name(format!("{stem}.llamacpp.safetensors"))
}

fn load_llamacpp(trace: &Trace) -> anyhow::Result<Vec<Vec<f32>>> {
    let path = llamacpp_path(&trace.path);
    if !path.is_file() {
        bail!(
            "{}: no llama.cpp logits for this trace (expected {}; record them with scripts/reference/trace_llamacpp.py)",
            trace.path.display(),
            path.display()
        );
    }
    let data = read_bounded(&path, "llama.cpp logits")?;
    let f = File::parse(&path, &data, LLAMACPP_FORMAT)?;
    let p = path.display();
    let sha = f.text("gguf_sha256")?;
    if sha != trace.gguf_sha256 {
        bail!(
            "{p}: recorded from a model with sha256 {sha}, but the trace {} is from {} (a trace from another model)",
            trace.path.display(),
            trace.gguf_sha256
        );
    }
    let vocab = f.number("vocab_size")?;
    if vocab != trace.vocab_size {
        bail!(
            "{p}: vocab_size {vocab}, but the trace {} has {} (a trace from another model)",
            trace.path.display(),
            trace.vocab_size
        );
    }
    if f.i64s("input_ids")? != trace.input_ids {
        bail!(
            "{p}: input_ids differ from the trace's {}: recorded along another generation",
            trace.path.display()
        );
    }
    f.logits(trace.steps(), trace.vocab_size)
}

/// The port's logits for every step of the trace.
fn port_logits(
    args: &TraceArgs,
    trace: &Trace,
    model: &mut Option<QuantizedLlama>,
    steps: usize,
    progress: &mut Progress,
) -> anyhow::Result<Vec<Vec<f32>>> {
    match args.port {
        Port::LlamaCpp => {
            let mut l = load_llamacpp(trace)?;
            l.truncate(steps);
            Ok(l)
        }
        Port::Candle => {
            let m = match model {
                Some(m) => m,
                None => model.insert(load_model(args, trace, progress)?),
            };
            if m.vocab_size() != trace.vocab_size {
                bail!(
                    "{}: vocab_size {}, but the model has {} (a trace from another model)",
                    trace.path.display(),
                    trace.vocab_size,
                    m.vocab_size()
                );
            }
            let name = trace.name.clone();
            m.teacher_forced(&trace.input_ids, trace.prompt_len, steps, |t| {
                progress.tick(&format!("{name}: candle step {}/{steps}", t + 1));
            })
            .with_context(|| format!("running the candle port along {}", trace.path.display()))
        }
    }
}

fn load_model(
    args: &TraceArgs,
    trace: &Trace,
    progress: &mut Progress,
) -> anyhow::Result<QuantizedLlama> {
    let path = args.model.clone().unwrap_or_else(default_model_path);
    progress.tick(&format!("loading {}", path.display()));
    let expected = Expected {
        sha256: Some(&trace.gguf_sha256),
        vocab_size: Some(trace.vocab_size),
    };
    match QuantizedLlama::load(&path, &expected) {
        Ok(m) => Ok(m),
        Err(ModelError::NotFound { path }) => Err(anyhow::anyhow!(
            "model file {} not found. Fetch it with\n    {}/scripts/fetch-model.sh\nor pass --model FILE (--port llama.cpp needs no model)",
            path.display(),
            repo_root().display()
        )),
        Err(e @ ModelError::WrongHash { .. }) => Err(anyhow::anyhow!(
            "{e}; the trace {} was recorded from {MODEL_NAME} (scripts/fetch-model.sh fetches it)",
            trace.path.display()
        )),
        Err(e) => Err(e.into()),
    }
}

/// Prints progress to stderr once a run has taken over a second, at most
/// twice a second.
struct Progress {
    start: Instant,
    last: Option<Instant>,
}

impl Progress {
    fn new() -> Self {
        Self {
            start: Instant::now(),
            last: None,
        }
    }

    fn tick(&mut self, what: &str) {
        let now = Instant::now();
        if now.duration_since(self.start) < Duration::from_secs(1)
            || self
                .last
                .is_some_and(|l| now.duration_since(l) < Duration::from_millis(500))
        {
            return;
        }
        self.last = Some(now);
        eprintln!("compare trace: {what}");
    }
}

/// One step of a trace.
#[derive(Debug, Clone, Serialize)]
pub struct StepRow {
    /// Step index (0 = the first generated token).
    pub step: usize,
    /// The token transformers sampled.
    pub token: i64,
    /// max |port logit − transformers logit|.
    pub max_abs_logit_diff: f64,
    /// transformers' raw argmax.
    pub argmax: usize,
    /// The port's raw argmax.
    pub port_argmax: usize,
    /// TV between the raw softmaxes (f64) of the two logit vectors.
    pub tv_raw: f64,
    /// TV(T on transformers' logits, T on the port's logits).
    pub logits: f64,
    /// TV(T on the port's logits, P on the port's logits).
    pub sampling: f64,
    /// TV(T on transformers' logits, P on the port's logits).
    pub total: f64,
    /// Tokens T keeps on transformers' logits.
    pub kept: usize,
    /// Tokens T keeps on the port's logits.
    pub kept_on_port_logits: usize,
    /// Tokens P keeps on the port's logits.
    pub kept_port: usize,
    /// Whether T keeps another set of tokens on the port's logits.
    pub kept_set_changed: bool,
    /// Whether hf-rust's scores on transformers' logits are bitwise the
    /// recorded processed scores (`null` with `--kwargs`: nothing recorded).
    pub scores_match: Option<bool>,
    /// 1 − Π over steps ≤ this one of (1 − total).
    pub p_diverged: f64,
}

/// Mean and max of one distance over the steps.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Stat {
    /// Mean over steps.
    pub mean: f64,
    /// Max over steps.
    pub max: f64,
}

impl Stat {
    fn of(xs: impl Iterator<Item = f64> + Clone) -> Self {
        let n = xs.clone().count().max(1) as f64;
        Self {
            mean: xs.clone().sum::<f64>() / n,
            max: xs.fold(0.0, f64::max),
        }
    }
}

/// What a trace's steps add up to.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// Steps compared.
    pub steps: usize,
    /// max |Δ logit| over steps.
    pub max_abs_logit_diff: Stat,
    /// TV of the raw softmaxes.
    pub tv_raw: Stat,
    /// The logits distance.
    pub logits: Stat,
    /// The sampling distance.
    pub sampling: Stat,
    /// The total distance.
    pub total: Stat,
    /// Steps where the port's raw argmax is not transformers'.
    pub argmax_flips: Vec<usize>,
    /// Steps where T keeps another set of tokens on the port's logits.
    pub kept_set_changes: Vec<usize>,
    /// 1 − Π(1 − logits_t): divergence within the steps from the logits alone.
    pub p_diverged_logits: f64,
    /// 1 − Π(1 − total_t): the probability the port's text diverges from
    /// transformers' within these steps under the best coupling.
    pub p_diverged: f64,
    /// Steps where hf-rust reproduced the recorded scores bitwise (`null` with `--kwargs`).
    pub scores_match: Option<usize>,
}

/// The report for one trace.
#[derive(Debug, Clone, Serialize)]
pub struct TraceReport {
    /// The trace's name.
    pub trace: String,
    /// The trace file.
    pub file: String,
    /// The user prompt.
    pub prompt: String,
    /// The text transformers generated over the steps compared, when the vocabulary is known.
    pub text: Option<String>,
    /// The generate kwargs transformers' side runs with.
    pub kwargs: Map<String, Value>,
    /// Whether `kwargs` are the ones the trace was recorded with.
    pub kwargs_recorded: bool,
    /// The port: `candle` or `llama.cpp`.
    pub port: String,
    /// The semantics that models the port's sampling.
    pub port_semantics: String,
    /// The port's sampling setup in words, when the semantics gives one.
    pub port_setup: Option<String>,
    /// Per step.
    pub rows: Vec<StepRow>,
    /// Over the steps.
    pub summary: Summary,
}

/// Computes the report for one trace given the port's logits.
pub fn compare_trace(
    trace: &Trace,
    port_logits: &[Vec<f32>],
    kwargs: &Map<String, Value>,
    kwargs_recorded: bool,
    registry: &[Box<dyn AnySemantics>],
    port_semantics: &str,
    port_params: Option<&Map<String, Value>>,
) -> anyhow::Result<(Vec<StepRow>, Summary, Option<String>)> {
    let hf = crate::registry::find(registry, "hf-rust")?
        .prepare(kwargs)
        .context("transformers would refuse these kwargs")?;
    let port_sem = crate::registry::find(registry, port_semantics)?;
    let port = match port_params {
        Some(p) => port_sem
            .prepare(p)
            .with_context(|| format!("--port-params for {port_semantics}"))?,
        None => port_sem
            .prepare_generate(kwargs)
            .with_context(|| {
                format!("{port_semantics} cannot express these kwargs; give its params with --port-params")
            })?
            .with_context(|| format!("{port_semantics}: translating the kwargs"))?,
    };
    let setup = port.describe();
    let mut rows = Vec::with_capacity(port_logits.len());
    let mut survive = 1.0f64;
    let mut survive_logits = 1.0f64;
    for (t, port_l) in port_logits.iter().enumerate() {
        let hf_l = &trace.logits[t];
        if port_l.len() != hf_l.len() {
            bail!(
                "step {t}: the port gives {} logits, transformers {}",
                port_l.len(),
                hf_l.len()
            );
        }
        let ids = &trace.input_ids[..trace.prompt_len + t];
        let ctx = Context::new(ids, Some(trace.prompt_len))?;
        let at = |e: parity_core::Error| anyhow::anyhow!("step {t}: {e}");
        let hf_logits = Logits::from_f32(hf_l);
        let port_logits = Logits::from_f32(port_l);
        let t_hf = hf.distribution(&hf_logits, &ctx).map_err(at)?;
        let t_port = hf.distribution(&port_logits, &ctx).map_err(at)?;
        let p_port = port.distribution(&port_logits, &ctx).map_err(at)?;
        let tv = |a: &[f64], b: &[f64]| -> anyhow::Result<f64> { Ok(Comparison::new(a, b)?.tv) };
        let logits = tv(t_hf.probs(), t_port.probs())?;
        let sampling = tv(t_port.probs(), p_port.probs())?;
        let total = tv(t_hf.probs(), p_port.probs())?;
        let scores_match = kwargs_recorded.then(|| {
            let recorded = trace.dense_scores(t);
            t_hf.scores().is_some_and(|s| {
                s.len() == recorded.len()
                    && s.iter()
                        .zip(&recorded)
                        .all(|(a, b)| a.to_bits() == b.to_bits())
            })
        });
        survive *= 1.0 - total;
        survive_logits *= 1.0 - logits;
        rows.push(StepRow {
            step: t,
            token: trace.token(t),
            max_abs_logit_diff: max_logit_diff(hf_l, port_l),
            argmax: argmax_first(hf_l),
            port_argmax: argmax_first(port_l),
            tv_raw: tv(&softmax_f64(hf_l), &softmax_f64(port_l))?,
            logits,
            sampling,
            total,
            kept: t_hf.kept().len(),
            kept_on_port_logits: t_port.kept().len(),
            kept_port: p_port.kept().len(),
            kept_set_changed: t_hf.kept() != t_port.kept(),
            scores_match,
            p_diverged: 1.0 - survive,
        });
    }
    let summary = Summary {
        steps: rows.len(),
        max_abs_logit_diff: Stat::of(rows.iter().map(|r| r.max_abs_logit_diff)),
        tv_raw: Stat::of(rows.iter().map(|r| r.tv_raw)),
        logits: Stat::of(rows.iter().map(|r| r.logits)),
        sampling: Stat::of(rows.iter().map(|r| r.sampling)),
        total: Stat::of(rows.iter().map(|r| r.total)),
        argmax_flips: rows
            .iter()
            .filter(|r| r.argmax != r.port_argmax)
            .map(|r| r.step)
            .collect(),
        kept_set_changes: rows
            .iter()
            .filter(|r| r.kept_set_changed)
            .map(|r| r.step)
            .collect(),
        p_diverged_logits: 1.0 - survive_logits,
        p_diverged: 1.0 - survive,
        scores_match: kwargs_recorded
            .then(|| rows.iter().filter(|r| r.scores_match == Some(true)).count()),
    };
    Ok((rows, summary, setup))
}

/// The JSON document of `compare trace --format json`.
#[derive(Debug, Serialize)]
struct Document<'a> {
    schema: u32,
    traces: &'a [TraceReport],
}

/// Runs `compare trace`.
pub fn run(args: &TraceArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    let registry = crate::registry::all(None);
    let port_semantics = args.port_semantics.clone().unwrap_or_else(|| {
        match args.port {
            Port::Candle => "candle",
            Port::LlamaCpp => "llama.cpp",
        }
        .to_string()
    });
    crate::registry::find(&registry, &port_semantics)?;
    let kwargs_override = args
        .kwargs
        .as_deref()
        .map(|j| super::json_object_arg("--kwargs", j))
        .transpose()?;
    let port_params = args
        .port_params
        .as_deref()
        .map(|j| super::json_object_arg("--port-params", j))
        .transpose()?;
    if args.steps == Some(0) {
        bail!("--steps must be at least 1");
    }
    let files = match &args.trace {
        Some(f) => vec![f.clone()],
        None => bundled_traces()?,
    };
    if files.is_empty() {
        bail!("no trace found in fixtures/traces/");
    }
    let traces = files
        .iter()
        .map(|f| load_trace(f))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let vocab = Vocab::load(&parity_core::fixture::bundled_dir().join("smollm2/vocab.json")).ok();
    let mut progress = Progress::new();
    let mut model = None;
    let mut reports = Vec::new();
    for trace in &traces {
        let steps = match args.steps {
            Some(n) if n > trace.steps() => bail!(
                "--steps {n}, but {} has only {} steps",
                trace.path.display(),
                trace.steps()
            ),
            Some(n) => n,
            None => trace.steps(),
        };
        let logits = port_logits(args, trace, &mut model, steps, &mut progress)?;
        if let Some(dir) = &args.export_logits {
            export(dir, trace, args.port, &logits)?;
        }
        let (kwargs, recorded) = match &kwargs_override {
            Some(k) => (k.clone(), *k == trace.kwargs),
            None => (trace.kwargs.clone(), true),
        };
        progress.tick(&format!("{}: distributions", trace.name));
        let (rows, summary, port_setup) = compare_trace(
            trace,
            &logits,
            &kwargs,
            recorded,
            &registry,
            &port_semantics,
            port_params.as_ref(),
        )
        .with_context(|| format!("trace {}", trace.path.display()))?;
        let text = vocab
            .as_ref()
            .filter(|v| v.len() == trace.vocab_size)
            .map(|v| {
                (0..steps)
                    .map(|t| decode(v.token(trace.token(t) as usize).unwrap_or("")))
                    .collect::<String>()
            });
        reports.push(TraceReport {
            trace: trace.name.clone(),
            file: trace.path.display().to_string(),
            prompt: trace.prompt.clone(),
            text,
            kwargs,
            kwargs_recorded: recorded,
            port: args.port.name().to_string(),
            port_semantics: port_semantics.clone(),
            port_setup,
            rows,
            summary,
        });
    }
    match args.format {
        Format::Json => {
            serde_json::to_writer_pretty(
                &mut *out,
                &Document {
                    schema: 1,
                    traces: &reports,
                },
            )?;
            writeln!(out)?;
        }
        Format::Text => {
            for (i, r) in reports.iter().enumerate() {
                if i > 0 {
                    writeln!(out)?;
                }
                write_text(out, r, vocab.as_ref())?;
            }
        }
    }
    Ok(())
}

/// Byte-level BPE token text (`Ġ` space, `Ċ` newline) for display.
fn decode(token: &str) -> String {
    token.replace('Ġ', " ").replace('Ċ', "\n")
}

fn export(dir: &Path, trace: &Trace, port: Port, logits: &[Vec<f32>]) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let path = dir.join(format!("{}.{}.safetensors", trace.name, port.name()));
    let flat: Vec<u8> = logits
        .iter()
        .flatten()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    let view = safetensors::tensor::TensorView::new(
        Dtype::F32,
        vec![logits.len(), trace.vocab_size],
        &flat,
    )?;
    let meta = std::collections::HashMap::from([
        ("format".to_string(), EXPORT_FORMAT.to_string()),
        ("trace".to_string(), trace.name.clone()),
        ("port".to_string(), port.name().to_string()),
        ("steps".to_string(), logits.len().to_string()),
    ]);
    let bytes = safetensors::serialize([("logits", view)], Some(meta))?;
    std::fs::write(&path, bytes).with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

fn sci(x: f64) -> String {
    if x == 0.0 {
        "0".to_string()
    } else {
        format!("{x:.2e}")
    }
}

fn write_text(out: &mut dyn Write, r: &TraceReport, vocab: Option<&Vocab>) -> anyhow::Result<()> {
    use parity_core::text::one_line;
    let s = &r.summary;
    writeln!(
        out,
        "{}: {:?} + {} sampled tokens",
        r.trace,
        one_line(&r.prompt).as_ref(),
        s.steps
    )?;
    if let Some(text) = &r.text {
        writeln!(out, "  text: {}", one_line(text))?;
    }
    let kw = serde_json::to_string(&r.kwargs)?;
    match s.scores_match {
        Some(n) => writeln!(
            out,
            "  transformers: generate(**{kw}); hf-rust reproduces the recorded scores at {n}/{} steps",
            s.steps
        )?,
        None => writeln!(
            out,
            "  transformers: hf-rust with {kw} (--kwargs: not the recorded setting)"
        )?,
    }
    writeln!(
        out,
        "  port: {} logits, sampled by `{}`{}",
        r.port,
        r.port_semantics,
        r.port_setup
            .as_deref()
            .map(|d| format!(": {d}"))
            .unwrap_or_default()
    )?;
    writeln!(
        out,
        "  step  token            max|Δlogit|  argmax          TV raw    logits  sampling     total  kept T/T'/P     P(div)"
    )?;
    for row in &r.rows {
        let tok = vocab
            .and_then(|v| v.token(row.token as usize))
            .map(|t| format!("{:?}", one_line(t).as_ref()))
            .unwrap_or_default();
        let tok: String = tok.chars().take(16).collect();
        let argmax = if row.argmax == row.port_argmax {
            "same".to_string()
        } else {
            format!("{}≠{}", row.argmax, row.port_argmax)
        };
        writeln!(
            out,
            "  {:>4}  {:<16} {:>11}  {:<13} {:>9} {:>9} {:>9} {:>9}  {:>13} {:>10}",
            row.step,
            tok,
            sci(row.max_abs_logit_diff),
            argmax,
            sci(row.tv_raw),
            sci(row.logits),
            sci(row.sampling),
            sci(row.total),
            format!(
                "{}/{}/{}{}",
                row.kept,
                row.kept_on_port_logits,
                row.kept_port,
                if row.kept_set_changed { "*" } else { "" }
            ),
            sci(row.p_diverged),
        )?;
    }
    let list = |v: &[usize]| {
        if v.is_empty() {
            "none".to_string()
        } else {
            v.iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        }
    };
    writeln!(
        out,
        "  mean/max: max|Δlogit| {}/{}, TV raw {}/{}, logits {}/{}, sampling {}/{}, total {}/{}",
        sci(s.max_abs_logit_diff.mean),
        sci(s.max_abs_logit_diff.max),
        sci(s.tv_raw.mean),
        sci(s.tv_raw.max),
        sci(s.logits.mean),
        sci(s.logits.max),
        sci(s.sampling.mean),
        sci(s.sampling.max),
        sci(s.total.mean),
        sci(s.total.max)
    )?;
    writeln!(
        out,
        "  argmax flips at steps: {}; kept set changes (*) at steps: {}",
        list(&s.argmax_flips),
        list(&s.kept_set_changes)
    )?;
    writeln!(
        out,
        "  P(text diverges within {} tokens, best coupling): {} from the logits alone, {} as the port runs",
        s.steps,
        sci(s.p_diverged_logits),
        sci(s.p_diverged)
    )?;
    Ok(())
}
