//! Traces: recorded transformers generations (`fixtures/traces/NAME.safetensors`,
//! scripts/reference/trace_reference.py, docs/fixtures.md), the files that
//! ports record beside them, and the [`Port`] capability: the logits a real
//! port gives at each step of a trace (a model run here, or logits an engine
//! recorded). `compare trace` compares them with transformers'; the
//! registry lists the ports, each engine's crate implements its own.
//!
//! Every reader is bounded ([`MAX_TRACE_BYTES`]) and every error names the
//! file and the field.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use safetensors::{Dtype, SafeTensors};
use serde_json::{Map, Value};

use crate::semantics::Error;

/// The format tag of a trace file.
pub const TRACE_FORMAT: &str = "sampling-parity-trace/1";
/// The format tag of `compare trace --export-logits` files.
pub const EXPORT_FORMAT: &str = "sampling-parity-port-logits/1";
/// A trace file (or a port's file beside it) over 256 MiB is refused unread
/// (the bundled ones are 4.7 MB).
pub const MAX_TRACE_BYTES: u64 = 256 << 20;

type Result<T> = std::result::Result<T, Error>;

macro_rules! err {
    ($($t:tt)*) => { Error::new(format!($($t)*)) };
}

macro_rules! bail {
    ($($t:tt)*) => { return Err(err!($($t)*)) };
}

/// A real port of the model a trace was recorded from: the logits it gives
/// for each step's context (`input_ids[..prompt_len + t]`).
pub trait Port: Send + Sync {
    /// Its name on the command line (`--port NAME`) and in reports.
    fn name(&self) -> &'static str;
    /// The registry semantics that samples like it, by default.
    fn semantics(&self) -> &'static str;
    /// The logits of the first `steps` steps of `trace`. `model` is the
    /// user's `--model FILE` for a port that runs a model here; `progress`
    /// hears what takes a while.
    fn logits(
        &self,
        trace: &Trace,
        steps: usize,
        model: Option<&Path>,
        progress: &mut dyn FnMut(&str),
    ) -> Result<Vec<Vec<f32>>>;

    /// The model this port runs here, for a search over prefixes (`compare
    /// beam --port`); `None` for a port whose logits were recorded, which
    /// has no logits for prefixes nobody ran. `model` is the user's `--model
    /// FILE`; `gguf_sha256` names the model the recordings were made with.
    fn prefix_model(
        &self,
        model: Option<&Path>,
        gguf_sha256: &str,
        progress: &mut dyn FnMut(&str),
    ) -> Option<Result<Box<dyn PrefixModel>>> {
        let _ = (model, gguf_sha256, progress);
        None
    }
}

/// A model that gives the logits for the token after any prefix, in the order
/// a search asks for them (a tree of prefixes, each its parent plus a
/// token). It may keep state between calls, such as a KV cache per prefix.
pub trait PrefixModel {
    /// Vocabulary size.
    fn vocab_size(&self) -> usize;
    /// The float32 logits of the token after `ids`.
    fn logits(&mut self, ids: &[i64]) -> Result<Vec<f32>>;
    /// Forgets stored state (between independent searches).
    fn clear(&mut self);
}

/// The bundled traces: the `fixtures/traces/*.safetensors` whose stem has no
/// dot (a port's recording beside a trace is `NAME.PORT.safetensors`).
pub fn bundled_traces() -> Result<Vec<PathBuf>> {
    let dir = crate::fixture::bundled_dir()
        .map_err(|e| err!("{e}"))?
        .join("traces");
    let mut files: Vec<PathBuf> = crate::fixture::list_dir(&dir)
        .map_err(|e| err!("{e}"))?
        .into_iter()
        .filter(|p| {
            p.file_stem()
                .is_some_and(|s| !s.to_string_lossy().contains('.'))
        })
        .collect();
    files.sort();
    Ok(files)
}

/// Writes a port's logits along `trace` into `dir` as
/// `NAME.PORT.safetensors` (`compare trace --export-logits`): tensor
/// `logits` `[steps, V]` f32 and the metadata `format` ([`EXPORT_FORMAT`]),
/// `trace`, `port` and `steps`. Returns the file written.
pub fn write_port_logits(
    dir: &Path,
    trace: &Trace,
    port: &str,
    logits: &[Vec<f32>],
) -> Result<PathBuf> {
    std::fs::create_dir_all(dir).map_err(|e| err!("creating {}: {e}", dir.display()))?;
    let path = dir.join(format!("{}.{port}.safetensors", trace.name));
    if let Some((t, row)) = logits
        .iter()
        .enumerate()
        .find(|(_, row)| row.len() != trace.vocab_size)
    {
        bail!(
            "{port}'s logits at step {t} have {} entries, but {} has a vocabulary of {}",
            row.len(),
            trace.path.display(),
            trace.vocab_size
        );
    }
    let flat: Vec<u8> = logits
        .iter()
        .flatten()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    let view = safetensors::tensor::TensorView::new(
        Dtype::F32,
        vec![logits.len(), trace.vocab_size],
        &flat,
    )
    .map_err(|e| err!("{}: {e}", path.display()))?;
    let meta = HashMap::from([
        ("format".to_string(), EXPORT_FORMAT.to_string()),
        ("trace".to_string(), trace.name.clone()),
        ("port".to_string(), port.to_string()),
        ("steps".to_string(), logits.len().to_string()),
    ]);
    let bytes = safetensors::serialize([("logits", view)], Some(meta))
        .map_err(|e| err!("{}: {e}", path.display()))?;
    std::fs::write(&path, bytes).map_err(|e| err!("writing {}: {e}", path.display()))?;
    Ok(path)
}

/// The file a port recorded beside `trace`: `NAME.PORT.safetensors`.
pub fn beside(trace: &Path, port: &str) -> PathBuf {
    let stem = trace
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    trace.with_file_name(format!("{stem}.{port}.safetensors"))
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
pub fn read_bounded(path: &Path, what: &str) -> Result<Vec<u8>> {
    crate::fixture::read_at_most(path, MAX_TRACE_BYTES)
        .map_err(|e| err!("reading {what} {}: {e}", path.display()))?
        .map_err(|_| {
            err!(
                "{what} {} is over {MAX_TRACE_BYTES} bytes; refusing it",
                path.display()
            )
        })
}

/// A safetensors file with string metadata, read with every error naming
/// the file, the key or the tensor.
pub struct TensorFile<'a> {
    path: &'a Path,
    st: SafeTensors<'a>,
    meta: HashMap<String, String>,
}

impl<'a> TensorFile<'a> {
    /// Parses `data` (from `path`, for messages) and checks its metadata
    /// `format` is `format`.
    pub fn parse(path: &'a Path, data: &'a [u8], format: &str) -> Result<Self> {
        let bad = |e: safetensors::SafeTensorError| {
            err!("{}: not a safetensors file: {e}", path.display())
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

    /// A metadata value.
    pub fn text(&self, key: &str) -> Result<&str> {
        self.meta
            .get(key)
            .map(String::as_str)
            .ok_or_else(|| err!("{}: metadata has no `{key}`", self.path.display()))
    }

    /// A metadata value that must be a non-negative integer.
    pub fn number(&self, key: &str) -> Result<usize> {
        let s = self.text(key)?;
        s.parse().map_err(|_| {
            err!(
                "{}: metadata `{key}` is {s:?}, not a non-negative integer",
                self.path.display()
            )
        })
    }

    fn tensor(&self, name: &str, dtype: Dtype, dims: usize) -> Result<(Vec<usize>, &[u8])> {
        let t = self
            .st
            .tensor(name)
            .map_err(|_| err!("{}: no tensor `{name}`", self.path.display()))?;
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

    /// A one-dimensional i64 tensor.
    pub fn i64s(&self, name: &str) -> Result<Vec<i64>> {
        let (_, data) = self.tensor(name, Dtype::I64, 1)?;
        Ok(data
            .chunks_exact(8)
            .map(|c| i64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
            .collect())
    }

    /// An f32 tensor with `dims` dimensions: its shape and values.
    pub fn f32s(&self, name: &str, dims: usize) -> Result<(Vec<usize>, Vec<f32>)> {
        let (shape, data) = self.tensor(name, Dtype::F32, dims)?;
        let v = data
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        Ok((shape, v))
    }

    /// A [steps, V] f32 matrix of logits with no NaN or +inf.
    pub fn logits(&self, steps: usize, vocab: usize) -> Result<Vec<Vec<f32>>> {
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
pub fn load_trace(path: &Path) -> Result<Trace> {
    let data = read_bounded(path, "trace")?;
    parse_trace(path, &data)
}

/// Checks trace bytes (`path` is for messages): format, metadata, tensor
/// shapes, ids within the vocabulary, no NaN or +inf logit, sparse scores
/// within range. Every error starts with the path.
pub fn parse_trace(path: &Path, data: &[u8]) -> Result<Trace> {
    let f = TensorFile::parse(path, data, TRACE_FORMAT)?;
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
        .map_err(|e| err!("{p}: metadata `kwargs` is not a JSON object: {kwargs_text}: {e}"))?;
    let seed_text = f.text("seed")?;
    let seed = seed_text
        .parse()
        .map_err(|_| err!("{p}: metadata `seed` is {seed_text:?}, not an integer"))?;
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
