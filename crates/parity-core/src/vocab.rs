//! Token strings, so reports can say `ĠAI` instead of `id 15593`.
//!
//! The vocabulary is a JSON array of strings (index = token id) extracted once
//! from the GGUF's `tokenizer.ggml.tokens` by the reference script, so that
//! neither the tests nor the reports need the model.

use std::path::{Path, PathBuf};

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
        let text = std::fs::read_to_string(path).map_err(|source| VocabError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let tokens = serde_json::from_str(&text).map_err(|source| VocabError::Json {
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
