//! Token strings, so reports can say `ĠAI` instead of `id 15593`.
//!
//! The vocabulary is a JSON array of strings (index = token id) extracted once
//! from the GGUF's `tokenizer.ggml.tokens` by the reference script, so that
//! neither the tests nor the reports need the model.

use std::path::{Path, PathBuf};

/// Largest vocabulary file read (262,144 tokens as JSON are ~5 MB).
pub const MAX_VOCAB_BYTES: u64 = 64 * 1024 * 1024;

/// A model's token strings, indexed by id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Vocab {
    tokens: Vec<String>,
}

/// Why a vocabulary file could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum VocabError {
    /// The file could not be read.
    #[error("{path}: cannot read vocabulary: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is larger than any vocabulary should be (or never ends, like
    /// `/dev/zero`).
    #[error("{path}: vocabulary is larger than the {max}-byte limit")]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// The limit.
        max: u64,
    },
    /// The file is not a JSON array of strings.
    #[error("{path}: vocabulary is not a JSON array of strings: {source}")]
    Json {
        /// The file.
        path: PathBuf,
        /// The parse error (with line and column).
        source: serde_json::Error,
    },
}

impl Vocab {
    /// Reads a vocabulary file.
    pub fn load(path: &Path) -> Result<Self, VocabError> {
        let io = |source| VocabError::Io {
            path: path.to_path_buf(),
            source,
        };
        // Bounded read: a fixture names its vocabulary file, so a hostile one
        // could name an endless file such as /dev/zero.
        let bytes = crate::fixture::read_at_most(path, MAX_VOCAB_BYTES)
            .map_err(io)?
            .map_err(|_| VocabError::TooLarge {
                path: path.to_path_buf(),
                max: MAX_VOCAB_BYTES,
            })?;
        let tokens = serde_json::from_slice(&bytes).map_err(|source| VocabError::Json {
            path: path.to_path_buf(),
            source,
        })?;
        Ok(Self { tokens })
    }

    /// Builds a vocabulary from token strings.
    pub fn new(tokens: Vec<String>) -> Self {
        Self { tokens }
    }

    /// Number of tokens.
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    /// True when there are no tokens.
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// The token string for an id, if the id is in range.
    pub fn token(&self, id: usize) -> Option<&str> {
        self.tokens.get(id).map(String::as_str)
    }
}
