//! A real model on candle: a GGUF llama (SmolLM2-135M-Instruct in this
//! workspace) run by candle-transformers' `quantized_llama`, returning raw
//! logits as plain `Vec<f32>`.
//!
//! This is the port a user writes when they move a model from transformers
//! to candle: the weights stay quantised (Q4_1 here) and candle's quantised
//! matmuls dequantise on the fly, while transformers dequantises the whole
//! GGUF to f32 first. `compare trace` feeds it the tokens transformers
//! sampled (teacher forcing) and compares the logits step by step.
//!
//! How it runs (candle-transformers 0.11.1,
//! `src/models/quantized_llama.rs`): `ModelWeights::from_gguf`, then
//! `forward(ids, index_pos)` with its own KV cache; the prompt goes in as one
//! batch (candle builds the causal mask), every later token alone, as
//! candle's `quantized` example generates. Positions are limited by
//! `MAX_SEQ_LEN` (its rotary tables) and the GGUF's `llama.context_length`.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use candle_core::quantized::gguf_file;
use candle_core::{Device, Tensor};
use candle_transformers::models::quantized_llama::{MAX_SEQ_LEN, ModelWeights};

use sha2::{Digest, Sha256};

/// What can go wrong loading or running a model. Messages name the file and
/// quote the bad value.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// The model file does not exist.
    #[error("model file {} not found", path.display())]
    NotFound {
        /// The path that was tried.
        path: PathBuf,
    },
    /// The file exists but could not be read.
    #[error("reading model file {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file's sha256 is not the expected one: another model, another
    /// quantisation, or a damaged download.
    #[error("model file {} has sha256 {actual}, expected {expected} (another model or a damaged file)", path.display())]
    WrongHash {
        /// The file.
        path: PathBuf,
        /// The digest asked for.
        expected: String,
        /// The file's digest.
        actual: String,
    },
    /// The file is not a GGUF llama that candle can load.
    #[error("model file {}: not a GGUF llama candle can load: {message}", path.display())]
    Gguf {
        /// The file.
        path: PathBuf,
        /// candle's message.
        message: String,
    },
    /// The model's vocabulary is not the expected size.
    #[error("model file {} has a vocabulary of {actual} tokens, expected {expected}", path.display())]
    WrongVocab {
        /// The file.
        path: PathBuf,
        /// The size asked for.
        expected: usize,
        /// The model's size.
        actual: usize,
    },
    /// The sequence needs more positions than the model can hold.
    #[error(
        "the sequence needs {needed} positions but the context window is {window} (candle's MAX_SEQ_LEN {MAX_SEQ_LEN}, the GGUF's llama.context_length)"
    )]
    TooLong {
        /// Positions the run needs.
        needed: usize,
        /// The model's context window.
        window: usize,
    },
    /// A token id is not in the vocabulary.
    #[error("ids[{index}] = {value} is not a token id (vocabulary of {vocab})")]
    BadToken {
        /// Position in the ids.
        index: usize,
        /// The id.
        value: i64,
        /// Vocabulary size.
        vocab: usize,
    },
    /// The arguments of a run do not fit together.
    #[error("{0}")]
    Argument(String),
    /// candle failed while running the model.
    #[error("candle: {0}")]
    Candle(String),
}

impl From<candle_core::Error> for ModelError {
    fn from(mut e: candle_core::Error) -> Self {
        while let candle_core::Error::WithBacktrace { inner, .. } = e {
            e = *inner;
        }
        ModelError::Candle(e.to_string())
    }
}

/// What the caller expects of a model file; `None` fields are not checked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Expected<'a> {
    /// The file's sha256, 64 lowercase hex digits.
    pub sha256: Option<&'a str>,
    /// The vocabulary size (length of the logits).
    pub vocab_size: Option<usize>,
}

/// The sha256 of a file, as 64 lowercase hex digits.
pub fn file_sha256(path: &Path) -> Result<String, ModelError> {
    let mut file = open(path)?;
    let mut hash = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf).map_err(|source| ModelError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        if n == 0 {
            return Ok(hash.finalize().iter().map(|b| format!("{b:02x}")).collect());
        }
        hash.update(&buf[..n]);
    }
}

fn open(path: &Path) -> Result<File, ModelError> {
    File::open(path).map_err(|source| {
        if source.kind() == std::io::ErrorKind::NotFound {
            ModelError::NotFound {
                path: path.to_path_buf(),
            }
        } else {
            ModelError::Io {
                path: path.to_path_buf(),
                source,
            }
        }
    })
}

/// A GGUF llama loaded by candle-transformers' `quantized_llama`, on the CPU.
pub struct QuantizedLlama {
    weights: ModelWeights,
    vocab_size: usize,
    context_window: usize,
    tokens: Vec<String>,
    merges: Vec<String>,
    tokenizer_model: Option<String>,
}

impl std::fmt::Debug for QuantizedLlama {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QuantizedLlama")
            .field("vocab_size", &self.vocab_size)
            .field("context_window", &self.context_window)
            .finish_non_exhaustive()
    }
}

impl QuantizedLlama {
    /// Loads a GGUF file, after checking its sha256 when `expected` names one
    /// (before parsing: a wrong file is reported as wrong, not as corrupt),
    /// then its vocabulary size.
    pub fn load(path: &Path, expected: &Expected<'_>) -> Result<Self, ModelError> {
        if let Some(want) = expected.sha256 {
            let actual = file_sha256(path)?;
            if actual != want.to_ascii_lowercase() {
                return Err(ModelError::WrongHash {
                    path: path.to_path_buf(),
                    expected: want.to_string(),
                    actual,
                });
            }
        }
        let mut file = open(path)?;
        let gguf = |e: candle_core::Error| ModelError::Gguf {
            path: path.to_path_buf(),
            message: ModelError::from(e).to_string(),
        };
        let content = gguf_file::Content::read(&mut file).map_err(gguf)?;
        let strings = |key: &str| -> Vec<String> {
            content
                .metadata
                .get(key)
                .and_then(|v| v.to_vec().ok())
                .map(|v| {
                    v.iter()
                        .filter_map(|s| s.to_string().ok().cloned())
                        .collect()
                })
                .unwrap_or_default()
        };
        let tokens = strings("tokenizer.ggml.tokens");
        let merges = strings("tokenizer.ggml.merges");
        let tokenizer_model = content
            .metadata
            .get("tokenizer.ggml.model")
            .and_then(|v| v.to_string().ok().cloned());
        let context_length = content
            .metadata
            .get("llama.context_length")
            .and_then(|v| v.to_u32().ok())
            .map_or(MAX_SEQ_LEN, |n| n as usize);
        let weights = ModelWeights::from_gguf(content, &mut file, &Device::Cpu).map_err(gguf)?;
        let mut model = Self {
            weights,
            vocab_size: 0,
            context_window: context_length.min(MAX_SEQ_LEN),
            tokens,
            merges,
            tokenizer_model,
        };
        // The logits' length is the vocabulary the sampler sees (the output
        // matrix's rows), which may exceed the tokenizer's list; ask the model.
        model.vocab_size = model.forward_raw(&[0], 0)?.len();
        model.weights.clear_kv_cache();
        if let Some(want) = expected.vocab_size
            && want != model.vocab_size
        {
            return Err(ModelError::WrongVocab {
                path: path.to_path_buf(),
                expected: want,
                actual: model.vocab_size,
            });
        }
        Ok(model)
    }

    /// The length of the logits.
    pub fn vocab_size(&self) -> usize {
        self.vocab_size
    }

    /// How many positions the model can hold.
    pub fn context_window(&self) -> usize {
        self.context_window
    }

    /// The GGUF's `tokenizer.ggml.tokens` (index = id); empty when absent.
    pub fn tokens(&self) -> &[String] {
        &self.tokens
    }

    /// The GGUF's `tokenizer.ggml.merges`; empty when absent.
    pub fn merges(&self) -> &[String] {
        &self.merges
    }

    /// The GGUF's `tokenizer.ggml.model` (`gpt2` for byte-level BPE).
    pub fn tokenizer_model(&self) -> Option<&str> {
        self.tokenizer_model.as_deref()
    }

    /// Forgets the KV cache: the next [`forward`](Self::forward) starts a new sequence.
    pub fn reset(&mut self) {
        self.weights.clear_kv_cache();
    }

    /// Feeds `ids` at positions `pos..pos + ids.len()` (after the ones the KV
    /// cache holds) and returns the logits of the last one.
    pub fn forward(&mut self, ids: &[u32], pos: usize) -> Result<Vec<f32>, ModelError> {
        if ids.is_empty() {
            return Err(ModelError::Argument(
                "forward needs at least one token".into(),
            ));
        }
        let needed = pos.saturating_add(ids.len());
        if needed > self.context_window {
            return Err(ModelError::TooLong {
                needed,
                window: self.context_window,
            });
        }
        if let Some((index, &value)) = ids
            .iter()
            .enumerate()
            .find(|&(_, &t)| t as usize >= self.vocab_size)
        {
            return Err(ModelError::BadToken {
                index,
                value: i64::from(value),
                vocab: self.vocab_size,
            });
        }
        self.forward_raw(ids, pos)
    }

    fn forward_raw(&mut self, ids: &[u32], pos: usize) -> Result<Vec<f32>, ModelError> {
        let input = Tensor::new(ids, &Device::Cpu)?.unsqueeze(0)?;
        let logits = self.weights.forward(&input, pos)?;
        Ok(logits.squeeze(0)?.to_vec1::<f32>()?)
    }

    /// Teacher forcing: the logits the model gives for step `t` in
    /// `0..steps`, whose context is `ids[..prompt_len + t]`. The prompt goes
    /// in as one batch, then one token per step, on a fresh KV cache.
    /// `progress(t)` is called after each step.
    pub fn teacher_forced(
        &mut self,
        ids: &[i64],
        prompt_len: usize,
        steps: usize,
        mut progress: impl FnMut(usize),
    ) -> Result<Vec<Vec<f32>>, ModelError> {
        if prompt_len == 0 || steps == 0 {
            return Err(ModelError::Argument(format!(
                "teacher forcing needs a prompt and at least one step (prompt_len {prompt_len}, steps {steps})"
            )));
        }
        // Step t reads ids[prompt_len + t - 1]: the last step needs
        // prompt_len + steps - 1 ids and as many positions.
        let needed = prompt_len + steps - 1;
        if needed > ids.len() {
            return Err(ModelError::Argument(format!(
                "{steps} steps after a prompt of {prompt_len} need {needed} ids, got {}",
                ids.len()
            )));
        }
        if needed > self.context_window {
            return Err(ModelError::TooLong {
                needed,
                window: self.context_window,
            });
        }
        let mut as_u32 = Vec::with_capacity(needed);
        for (index, &value) in ids[..needed].iter().enumerate() {
            match u32::try_from(value) {
                Ok(t) if (t as usize) < self.vocab_size => as_u32.push(t),
                _ => {
                    return Err(ModelError::BadToken {
                        index,
                        value,
                        vocab: self.vocab_size,
                    });
                }
            }
        }
        self.reset();
        let mut out = Vec::with_capacity(steps);
        out.push(self.forward(&as_u32[..prompt_len], 0)?);
        progress(0);
        for t in 1..steps {
            let pos = prompt_len + t - 1;
            out.push(self.forward(&as_u32[pos..=pos], pos)?);
            progress(t);
        }
        Ok(out)
    }
}

/// Logits for token prefixes as a generation loop computes them: the first
/// prefix in one batch, then one token at a time on the KV cache of the
/// longest prefix computed before. A beam search asks for every beam's
/// prefix at every step; each is its parent plus one token, so each costs one
/// token's forward pass instead of the whole prefix. The states are
/// candle's own `ModelWeights` (their tensors are reference-counted, so a
/// snapshot shares the weights and the cache it extends).
pub struct PrefixCache {
    model: QuantizedLlama,
    /// Per prefix computed: the model's state after it (its KV cache) and
    /// its logits, so a prefix asked again (every beam starts as the
    /// prompt) costs nothing.
    states: std::collections::HashMap<Vec<u32>, (ModelWeights, Vec<f32>)>,
    /// Token positions run through the model so far.
    tokens_run: usize,
}

impl PrefixCache {
    /// A cache over `model`, empty.
    pub fn new(model: QuantizedLlama) -> Self {
        Self {
            model,
            states: std::collections::HashMap::new(),
            tokens_run: 0,
        }
    }

    /// The model.
    pub fn model(&self) -> &QuantizedLlama {
        &self.model
    }

    /// Token positions run through the model so far: what the cache saves
    /// shows here (a search's cost is one position per new prefix).
    pub fn tokens_run(&self) -> usize {
        self.tokens_run
    }

    /// Forgets every stored state (between independent searches).
    pub fn clear(&mut self) {
        self.states.clear();
    }

    /// The logits after `ids` (the logits of its last position).
    pub fn logits(&mut self, ids: &[u32]) -> Result<Vec<f32>, ModelError> {
        if ids.is_empty() {
            return Err(ModelError::Argument(
                "a prefix needs at least one token".into(),
            ));
        }
        if let Some((_, logits)) = self.states.get(ids) {
            return Ok(logits.clone());
        }
        let cached = (1..ids.len())
            .rev()
            .find_map(|k| self.states.get(&ids[..k]).map(|(w, _)| (k, w.clone())));
        let logits = match cached {
            Some((k, weights)) => {
                self.model.weights = weights;
                let mut logits = Vec::new();
                for pos in k..ids.len() {
                    logits = self.model.forward(&ids[pos..=pos], pos)?;
                    self.tokens_run += 1;
                    if pos + 1 < ids.len() {
                        self.states.insert(
                            ids[..=pos].to_vec(),
                            (self.model.weights.clone(), logits.clone()),
                        );
                    }
                }
                logits
            }
            None => {
                self.model.reset();
                self.tokens_run += ids.len();
                self.model.forward(ids, 0)?
            }
        };
        self.states
            .insert(ids.to_vec(), (self.model.weights.clone(), logits.clone()));
        Ok(logits)
    }
}

#[cfg(test)]
mod tests {
    use super::file_sha256;

    /// FIPS 180-4's "abc" example (NIST CSRC "SHA256.pdf"), read from a file
    /// in chunks as a model file is.
    #[test]
    fn file_sha256_is_sha256() -> Result<(), Box<dyn std::error::Error>> {
        let path = std::env::temp_dir().join(format!("sampling-parity-sha-{}", std::process::id()));
        std::fs::write(&path, b"abc")?;
        let digest = file_sha256(&path);
        std::fs::remove_file(&path)?;
        assert_eq!(
            digest?,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        Ok(())
    }
}
