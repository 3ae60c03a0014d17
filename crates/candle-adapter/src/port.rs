//! candle as a trace port (`compare trace --port candle`): candle-transformers'
//! quantized llama run here on the GGUF the trace was recorded from,
//! teacher-forced along the trace. The model is loaded once, on the first
//! trace that needs it, and checked against the trace (sha256, vocabulary).

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use parity_core::Error;
use parity_core::trace::{Port, PrefixModel, Trace};

use crate::model::{Expected, ModelError, PrefixCache, QuantizedLlama};

/// The model the bundled traces were recorded from.
pub const MODEL_NAME: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";

/// Where scripts/fetch-model.sh puts the model.
pub fn default_model_path() -> PathBuf {
    repo_root().join(".cache/models").join(MODEL_NAME)
}

/// Two folders up from this crate's, taken lexically (so that paths print
/// as `ROOT/.cache/...`, not `ROOT/crates/candle-adapter/../../.cache/...`).
fn repo_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest
        .ancestors()
        .nth(2)
        .map_or_else(|| manifest.join("../.."), Path::to_path_buf)
}

/// The candle port; see the module doc.
#[derive(Default)]
pub struct CandlePort {
    model: Mutex<Option<QuantizedLlama>>,
}

impl CandlePort {
    fn load(path: &Path, trace: &Trace) -> Result<QuantizedLlama, Error> {
        let expected = Expected {
            sha256: Some(&trace.gguf_sha256),
            vocab_size: Some(trace.vocab_size),
        };
        QuantizedLlama::load(path, &expected).map_err(|e| match e {
            ModelError::NotFound { path } => Error::new(format_args!(
                "model file {} not found. Fetch it with\n    {}/scripts/fetch-model.sh\nor pass --model FILE (a port whose logits were recorded, such as --port llama.cpp, needs no model)",
                path.display(),
                repo_root().display()
            )),
            e @ ModelError::WrongHash { .. } => Error::new(format_args!(
                "{e}; the trace {} was recorded from {MODEL_NAME} (scripts/fetch-model.sh fetches it)",
                trace.path.display()
            )),
            e => Error::new(e),
        })
    }
}

/// candle's prefix logits for a search: [`PrefixCache`] (each prefix one
/// token past its parent's KV cache, as a generation loop runs it).
struct CandlePrefixes(PrefixCache);

impl PrefixModel for CandlePrefixes {
    fn vocab_size(&self) -> usize {
        self.0.model().vocab_size()
    }

    fn logits(&mut self, ids: &[i64]) -> Result<Vec<f32>, Error> {
        let ids: Vec<u32> = ids
            .iter()
            .enumerate()
            .map(|(i, &t)| {
                u32::try_from(t).map_err(|_| {
                    Error::new(format_args!(
                        "ids[{i}] = {t} is not a token id (candle takes u32 ids)"
                    ))
                })
            })
            .collect::<Result<_, _>>()?;
        self.0.logits(&ids).map_err(Error::new)
    }

    fn clear(&mut self) {
        self.0.clear();
    }
}

impl Port for CandlePort {
    fn name(&self) -> &'static str {
        "candle"
    }

    fn semantics(&self) -> &'static str {
        "candle"
    }

    fn logits(
        &self,
        trace: &Trace,
        steps: usize,
        model: Option<&Path>,
        progress: &mut dyn FnMut(&str),
    ) -> Result<Vec<Vec<f32>>, Error> {
        let mut slot = self
            .model
            .lock()
            .map_err(|_| Error::new("the candle model's lock was poisoned by a panic"))?;
        let m = match &mut *slot {
            Some(m) => m,
            None => {
                let path = model.map_or_else(default_model_path, Path::to_path_buf);
                progress(&format!("loading {}", path.display()));
                slot.insert(Self::load(&path, trace)?)
            }
        };
        if m.vocab_size() != trace.vocab_size {
            return Err(Error::new(format_args!(
                "{}: vocab_size {}, but the model has {} (a trace from another model)",
                trace.path.display(),
                trace.vocab_size,
                m.vocab_size()
            )));
        }
        let name = trace.name.clone();
        m.teacher_forced(&trace.input_ids, trace.prompt_len, steps, |t| {
            progress(&format!("{name}: candle step {}/{steps}", t + 1));
        })
        .map_err(|e| {
            Error::new(format_args!(
                "running the candle port along {}: {e}",
                trace.path.display()
            ))
        })
    }

    fn prefix_model(
        &self,
        model: Option<&Path>,
        gguf_sha256: &str,
        progress: &mut dyn FnMut(&str),
    ) -> Option<Result<Box<dyn PrefixModel>, Error>> {
        let path = model.map_or_else(default_model_path, Path::to_path_buf);
        progress(&format!("loading {}", path.display()));
        let expected = Expected {
            sha256: Some(gguf_sha256),
            vocab_size: None,
        };
        Some(
            QuantizedLlama::load(&path, &expected)
                .map(|m| Box::new(CandlePrefixes(PrefixCache::new(m))) as Box<dyn PrefixModel>)
                .map_err(|e| match e {
                    ModelError::NotFound { path } => Error::new(format_args!(
                        "model file {} not found. Fetch it with\n    {}/scripts/fetch-model.sh\nor pass --model FILE",
                        path.display(),
                        repo_root().display()
                    )),
                    e @ ModelError::WrongHash { .. } => Error::new(format_args!(
                        "{e}; the recordings were made with {MODEL_NAME} (scripts/fetch-model.sh fetches it)"
                    )),
                    e => Error::new(e),
                }),
        )
    }
}
