//! What a token reads as: the vocabulary string decoded to the text a person
//! sees, `"Ġthe"` as `" the"` and `"å¤§"` as `"大"`.
//!
//! Byte-level BPE vocabularies (GPT-2's scheme, used by SmolLM2, Llama 3,
//! Qwen and most models whose tokenizer is `ByteLevel`) store each token's
//! bytes as characters: every byte maps to one printable character, the
//! printable ASCII and Latin-1 bytes to themselves and the other 68 (space,
//! control bytes, 0x7F–0xA0, 0xAD) to U+0100 onwards in byte order
//! (`bytes_to_unicode` in OpenAI's `gpt-2/src/encoder.py`, reused by
//! Hugging Face tokenizers' `ByteLevel` pre-tokenizer). Decoding maps each
//! character back to its byte. A token is a piece of a byte sequence, so its
//! bytes need not be complete UTF-8 (`"å¤"` is the first two bytes of 大):
//! such a token is shown as its bytes, `<0xE5 0xA4>`.
//!
//! Whether a vocabulary is byte-level is not recorded anywhere a fixture
//! holds (the GGUF's `tokenizer.ggml.model` is not copied), so
//! [`is_byte_level`] decides from the strings: in a byte-level vocabulary
//! every token is made of those 256 characters (SmolLM2: all 49,152), while
//! a SentencePiece vocabulary marks word starts with `▁` (U+2581), outside
//! the table, in most of its tokens. Tokens of other vocabularies, and
//! tokens of a byte-level one that use a character outside the table (an
//! added token), are shown as they are written.

use std::fmt;

use crate::text::quoted;

/// Bytes GPT-2's `bytes_to_unicode` maps to themselves: `!`..=`~`,
/// `¡`..=`¬`, `®`..=`ÿ`.
fn maps_to_itself(b: u8) -> bool {
    matches!(b, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF)
}

/// The byte a byte-level character stands for; `None` outside the table.
pub fn byte_of(c: char) -> Option<u8> {
    let c = u32::from(c);
    if let Ok(b) = u8::try_from(c)
        && maps_to_itself(b)
    {
        return Some(b);
    }
    // The n-th byte that does not map to itself maps to U+0100 + n.
    let n = c.checked_sub(0x100)?;
    (0..=255u8).filter(|&b| !maps_to_itself(b)).nth(n as usize)
}

/// A token's bytes, when every character of it is in the byte-level table.
pub fn byte_level_bytes(token: &str) -> Option<Vec<u8>> {
    token.chars().map(byte_of).collect()
}

/// Whether a vocabulary is byte-level BPE: at least 99 % of its non-empty
/// tokens are made of byte-level characters only (a few added tokens may not
/// be; padded ids are `""`).
pub fn is_byte_level<'a>(tokens: impl IntoIterator<Item = &'a str>) -> bool {
    let (mut all, mut table) = (0usize, 0usize);
    for t in tokens.into_iter().filter(|t| !t.is_empty()) {
        all += 1;
        if t.chars().all(|c| byte_of(c).is_some()) {
            table += 1;
        }
    }
    all > 0 && table * 100 >= all * 99
}

/// What a token reads as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// Text: the decoded UTF-8 of a byte-level token, or the string as the
    /// vocabulary writes it.
    Text(String),
    /// Bytes that are not complete UTF-8 (part of a multi-byte character).
    Bytes(Vec<u8>),
}

impl Piece {
    /// A vocabulary string read as a byte-level token (`byte_level`) or as
    /// written.
    pub fn new(token: &str, byte_level: bool) -> Self {
        if byte_level && let Some(bytes) = byte_level_bytes(token) {
            return match String::from_utf8(bytes) {
                Ok(text) => Self::Text(text),
                Err(e) => Self::Bytes(e.into_bytes()),
            };
        }
        Self::Text(token.to_string())
    }

    /// The text itself, or `<0xE5 0xA4>` for bytes (for JSON, which escapes
    /// its strings itself).
    pub fn plain(&self) -> String {
        match self {
            Self::Text(t) => t.clone(),
            Self::Bytes(b) => bytes_text(b),
        }
    }
}

fn bytes_text(bytes: &[u8]) -> String {
    let hex: Vec<String> = bytes.iter().map(|b| format!("0x{b:02X}")).collect();
    format!("<{}>", hex.join(" "))
}

/// For people: text in double quotes with whitespace, control and invisible
/// characters escaped (`" the"`, `"\n"`, `"\u{a0}"`), bytes as `<0xE5 0xA4>`.
impl fmt::Display for Piece {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Text(t) => f.write_str(&quoted(t)),
            Self::Bytes(b) => f.write_str(&bytes_text(b)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(token: &str) -> String {
        Piece::new(token, true).to_string()
    }

    #[test]
    fn the_table_round_trips_all_256_bytes() {
        // bytes_to_unicode: 188 bytes map to themselves, 68 to U+0100..U+0143.
        let mut seen = [false; 256];
        for c in (0u32..0x144).filter_map(char::from_u32) {
            if let Some(b) = byte_of(c) {
                assert!(!seen[b as usize], "byte {b} twice");
                seen[b as usize] = true;
            }
        }
        assert!(seen.iter().all(|&s| s));
        assert_eq!(byte_of('\u{144}'), None);
        assert_eq!(byte_of(' '), None); // space is written as Ġ
        assert_eq!(byte_of('Ġ'), Some(b' ')); // U+0120: the 33rd remapped byte
        assert_eq!(byte_of('Ā'), Some(0x00)); // U+0100: the first
        assert_eq!(byte_of('Ċ'), Some(b'\n')); // U+010A: byte 10
        assert_eq!(byte_of('ł'), Some(0xA0)); // U+0142: the 67th, NBSP
        assert_eq!(byte_of('Ń'), Some(0xAD)); // U+0143: the last, soft hyphen
    }

    #[test]
    fn tokens_read_as_people_read_them() {
        // SmolLM2 ids beside each: vocab.json[id].
        assert_eq!(shown("Ġthe"), r#"" the""#); // 260
        assert_eq!(shown("å¤§"), r#""大""#); // 41479: E5 A4 A7
        assert_eq!(shown("å¤"), "<0xE5 0xA4>"); // 18614: 大 without its last byte
        assert_eq!(shown("Ċ"), r#""\n""#); // 198
        assert_eq!(shown("ĊĊ"), r#""\n\n""#); // 1116
        assert_eq!(shown("ĉ"), r#""\t""#); // 197
        assert_eq!(shown("Ġ"), r#"" ""#); // 216
        assert_eq!(shown("Âł"), r#""\u{a0}""#); // 15442: C2 A0, NBSP
        assert_eq!(shown("<|im_end|>"), r#""<|im_end|>""#); // 2
        assert_eq!(shown("\""), r#""\"""#); // 18
        assert_eq!(shown("\\"), r#""\\""#); // 62
        assert_eq!(shown("ĠâĢľ"), r#"" “""#); // " “": E2 80 9C
        assert_eq!(shown("ðŁ"), "<0xF0 0x9F>"); // start of an emoji
    }

    #[test]
    fn other_vocabularies_are_shown_as_written() {
        // SentencePiece: ▁ is outside the table, so the vocabulary is not
        // byte-level and "é" stays "é" (byte-level would read it as 0xE9).
        let sp = ["<unk>", "▁the", "▁a", "é", "s"];
        assert!(!is_byte_level(sp));
        assert_eq!(Piece::new("é", false).to_string(), r#""é""#);
        assert_eq!(Piece::new("é", true).to_string(), "<0xE9>");
        assert!(is_byte_level(["Ġthe", "a", "", "<|im_end|>"]));
        assert!(!is_byte_level([""]));
        // An added token with a character outside the table, in a
        // byte-level vocabulary, is shown as written.
        assert_eq!(shown("<｜end｜>"), r#""<｜end｜>""#);
    }

    #[test]
    fn plain_is_unescaped_text_or_the_bytes() {
        assert_eq!(Piece::new("Ċ", true).plain(), "\n");
        assert_eq!(Piece::new("å¤", true).plain(), "<0xE5 0xA4>");
    }
}
