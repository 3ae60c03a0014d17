//! Token strings, so reports can say `" AI" (15593)` instead of `id 15593`.
//!
//! The vocabulary is a JSON array of strings (index = token id) extracted once
//! from the GGUF's `tokenizer.ggml.tokens` by the reference script, so that
//! neither the tests nor the reports need the model.

use std::path::{Path, PathBuf};

use crate::token::Piece;

/// Largest vocabulary file read (262,144 tokens as JSON are ~5 MB).
pub const MAX_VOCAB_BYTES: u64 = 64 * 1024 * 1024;

/// A model's token strings, indexed by id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Vocab {
    tokens: Vec<String>,
    /// Whether the strings are byte-level BPE ([`crate::token::is_byte_level`]).
    byte_level: bool,
}

/// Why a vocabulary file could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum VocabError {
    /// The file could not be read.
    #[error("{path}: cannot read vocabulary: {cause}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error, in the message only (not also a `source()`, which
        /// would print it twice in an error chain).
        cause: std::io::Error,
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
    #[error("{path}: vocabulary is not a JSON array of strings: {cause}")]
    Json {
        /// The file.
        path: PathBuf,
        /// The parse error (with line and column), in the message only.
        cause: serde_json::Error,
    },
}

impl Vocab {
    /// Reads a vocabulary file.
    pub fn load(path: &Path) -> Result<Self, VocabError> {
        let io = |cause| VocabError::Io {
            path: path.to_path_buf(),
            cause,
        };
        // Bounded read: a fixture names its vocabulary file, so a hostile one
        // could name an endless file such as /dev/zero.
        let bytes = crate::fixture::read_at_most(path, MAX_VOCAB_BYTES)
            .map_err(io)?
            .map_err(|_| VocabError::TooLarge {
                path: path.to_path_buf(),
                max: MAX_VOCAB_BYTES,
            })?;
        let tokens = serde_json::from_slice(&bytes).map_err(|cause| VocabError::Json {
            path: path.to_path_buf(),
            cause,
        })?;
        Ok(Self::new(tokens))
    }

    /// Builds a vocabulary from token strings.
    pub fn new(tokens: Vec<String>) -> Self {
        let byte_level = crate::token::is_byte_level(tokens.iter().map(String::as_str));
        Self { tokens, byte_level }
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

    /// What the token reads as, if the id is in range.
    pub fn piece(&self, id: usize) -> Option<Piece> {
        self.token(id).map(|t| Piece::new(t, self.byte_level))
    }

    /// The token for people, with its id beside it: `" the" (260)`,
    /// `<0xE5 0xA4> (18614)`, or `id 7` out of range.
    pub fn label(&self, id: usize) -> String {
        label(self.piece(id).as_ref(), id)
    }
}

/// `" the" (260)` for a known token, `id 260` for an unknown one.
pub fn label(piece: Option<&Piece>, id: usize) -> String {
    match piece {
        Some(p) => format!("{p} ({id})"),
        None => format!("id {id}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_decode_byte_level_tokens() {
        let v = Vocab::new(vec!["<|endoftext|>".into(), "Ġthe".into(), "å¤".into()]);
        assert_eq!(v.label(0), r#""<|endoftext|>" (0)"#);
        assert_eq!(v.label(1), r#"" the" (1)"#);
        assert_eq!(v.label(2), "<0xE5 0xA4> (2)");
        assert_eq!(v.label(3), "id 3");
        let sp = Vocab::new(vec!["▁the".into(), "é".into()]);
        assert_eq!(sp.label(1), r#""é" (1)"#);
    }
}
