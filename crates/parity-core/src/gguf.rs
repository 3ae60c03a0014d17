//! A GGUF file's metadata, read bounded and without its tensors.
//!
//! What it is for: the sampling defaults a model file carries
//! (`general.sampling.*`, written by llama.cpp's converter from the model's
//! `generation_config.json`) are the first layer under a llama.cpp server's
//! request. Only the header and the key/value section are read; the tensor
//! infos and the weights after them are never touched, so a 40 GB model costs
//! a few megabytes of reading (mostly its tokenizer arrays, which are skipped
//! over, not kept).
//!
//! The layout is ggml's `gguf.cpp` (llama.cpp 0c1e57098, `gguf_init_from_file_impl`):
//! the magic `GGUF`, a `u32` version (2 or 3: version 1's 32-bit counts are
//! refused, as ggml refuses them), `u64` tensor and key counts, then per key a
//! string (`u64` length and bytes), a `u32` type and the value, little-endian.
//! An array is a `u32` element type, a `u64` count and the elements.
//!
//! Bounds: every count and length is checked against the bytes left in the
//! file before anything is allocated or skipped (a count of 2^60 is an error
//! naming its key and byte offset, not an allocation), keys are at most
//! [`MAX_KEY_LEN`] bytes, kept string values at most [`MAX_STRING_LEN`], and
//! at most [`MAX_KEYS`] keys are read. A duplicate key is an error, as in ggml.
//!
//! Hand-written on purpose: the GGUF crates on crates.io either map or read the
//! whole file to reach the tensors (candle's `gguf_file`, which only
//! candle-adapter may use, and the standalone parsers), and none bounds a
//! hostile header's counts before allocating; this reader needs ~200 lines and
//! keeps no tensor data.

use std::fmt;
use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom};
use std::path::Path;

/// The most keys read from one file (real models have a few dozen).
pub const MAX_KEYS: u64 = 1 << 16;
/// The longest key, in bytes.
pub const MAX_KEY_LEN: u64 = 1 << 16;
/// The longest string value kept, in bytes (a chat template is tens of KiB).
pub const MAX_STRING_LEN: u64 = 16 << 20;

/// A GGUF value type (ggml's `enum gguf_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GgufType {
    /// `GGUF_TYPE_UINT8`.
    U8,
    /// `GGUF_TYPE_INT8`.
    I8,
    /// `GGUF_TYPE_UINT16`.
    U16,
    /// `GGUF_TYPE_INT16`.
    I16,
    /// `GGUF_TYPE_UINT32`.
    U32,
    /// `GGUF_TYPE_INT32`.
    I32,
    /// `GGUF_TYPE_FLOAT32`.
    F32,
    /// `GGUF_TYPE_BOOL`.
    Bool,
    /// `GGUF_TYPE_STRING`.
    String,
    /// `GGUF_TYPE_ARRAY`.
    Array,
    /// `GGUF_TYPE_UINT64`.
    U64,
    /// `GGUF_TYPE_INT64`.
    I64,
    /// `GGUF_TYPE_FLOAT64`.
    F64,
}

impl GgufType {
    fn from_u32(t: u32) -> Option<Self> {
        use GgufType::*;
        Some(match t {
            0 => U8,
            1 => I8,
            2 => U16,
            3 => I16,
            4 => U32,
            5 => I32,
            6 => F32,
            7 => Bool,
            8 => String,
            9 => Array,
            10 => U64,
            11 => I64,
            12 => F64,
            _ => return None,
        })
    }

    /// The size of one value in bytes; `None` for strings and arrays.
    fn size(self) -> Option<u64> {
        use GgufType::*;
        match self {
            U8 | I8 | Bool => Some(1),
            U16 | I16 => Some(2),
            U32 | I32 | F32 => Some(4),
            U64 | I64 | F64 => Some(8),
            String | Array => None,
        }
    }

    /// ggml's name for it (`gguf_type_name`).
    pub fn name(self) -> &'static str {
        use GgufType::*;
        match self {
            U8 => "u8",
            I8 => "i8",
            U16 => "u16",
            I16 => "i16",
            U32 => "u32",
            I32 => "i32",
            F32 => "f32",
            Bool => "bool",
            String => "str",
            Array => "arr",
            U64 => "u64",
            I64 => "i64",
            F64 => "f64",
        }
    }
}

/// One metadata value. Arrays keep only their element type and length.
#[derive(Debug, Clone, PartialEq)]
pub enum GgufValue {
    /// An unsigned integer of 8 to 64 bits, with its type.
    Uint(GgufType, u64),
    /// A signed integer of 8 to 64 bits, with its type.
    Int(GgufType, i64),
    /// A `f32`.
    F32(f32),
    /// A `f64`.
    F64(f64),
    /// A bool (ggml stores a byte; non-zero is true).
    Bool(bool),
    /// A string (GGUF strings are UTF-8; invalid bytes are replaced).
    String(String),
    /// An array, skipped: its element type and count.
    Array(GgufType, u64),
}

impl GgufValue {
    /// The value's type.
    pub fn kind(&self) -> GgufType {
        match self {
            GgufValue::Uint(t, _) | GgufValue::Int(t, _) => *t,
            GgufValue::F32(_) => GgufType::F32,
            GgufValue::F64(_) => GgufType::F64,
            GgufValue::Bool(_) => GgufType::Bool,
            GgufValue::String(_) => GgufType::String,
            GgufValue::Array(..) => GgufType::Array,
        }
    }
}

/// Why a file's metadata could not be read: what, at which byte offset, in
/// which key.
#[derive(Debug, thiserror::Error)]
pub struct GgufError {
    /// Byte offset in the file where the bad field starts.
    pub offset: u64,
    /// The key being read, when the error is inside one.
    pub key: Option<String>,
    /// What is wrong.
    pub what: String,
}

impl fmt::Display for GgufError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.key {
            Some(k) => write!(
                f,
                "GGUF key `{k}` at byte offset {}: {}",
                self.offset, self.what
            ),
            None => write!(f, "GGUF at byte offset {}: {}", self.offset, self.what),
        }
    }
}

/// A GGUF file's header and key/value metadata.
#[derive(Debug, Clone, PartialEq)]
pub struct GgufMetadata {
    /// The format version (2 or 3).
    pub version: u32,
    /// The number of tensors the header announces (their infos are not read).
    pub tensor_count: u64,
    /// Every key, in file order, with its value.
    pub entries: Vec<(String, GgufValue)>,
}

impl GgufMetadata {
    /// Whether `prefix` (a file's first bytes) starts with GGUF's magic.
    pub fn is_gguf(prefix: &[u8]) -> bool {
        prefix.starts_with(b"GGUF")
    }

    /// Reads the metadata of the file at `path`.
    pub fn from_path(path: &Path) -> io::Result<Result<Self, GgufError>> {
        let file = File::open(path)?;
        let len = file.metadata()?.len();
        Ok(Self::from_reader(BufReader::new(file), len))
    }

    /// Reads the metadata of a GGUF held in memory.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, GgufError> {
        Self::from_reader(io::Cursor::new(bytes), bytes.len() as u64)
    }

    /// Reads the metadata from `reader`, which holds `len` bytes in all.
    pub fn from_reader<R: Read + Seek>(reader: R, len: u64) -> Result<Self, GgufError> {
        let mut r = Reader {
            inner: reader,
            pos: 0,
            len,
            key: None,
        };
        let magic = r.bytes(4, "the magic")?;
        if magic != b"GGUF" {
            return Err(r.error_at(
                0,
                format!("not a GGUF file: it starts with {magic:02x?}, not `GGUF`"),
            ));
        }
        let at = r.pos;
        let version = r.u32("the version")?;
        if !(2..=3).contains(&version) {
            return Err(r.error_at(
                at,
                format!("GGUF version {version} is not read (ggml reads versions 2 and 3)"),
            ));
        }
        let tensor_count = r.u64("the tensor count")?;
        let at = r.pos;
        let n_kv = r.u64("the key count")?;
        if n_kv > MAX_KEYS {
            return Err(r.error_at(
                at,
                format!("key count {n_kv} is over the {MAX_KEYS} this reader takes"),
            ));
        }
        let mut entries: Vec<(String, GgufValue)> = Vec::new();
        for _ in 0..n_kv {
            let at = r.pos;
            let key = r.string(MAX_KEY_LEN, "a key")?;
            if entries.iter().any(|(k, _)| *k == key) {
                return Err(
                    r.error_at(at, format!("duplicate key `{key}` (ggml refuses the file)"))
                );
            }
            r.key = Some(key.clone());
            let value = r.value()?;
            r.key = None;
            entries.push((key, value));
        }
        Ok(Self {
            version,
            tensor_count,
            entries,
        })
    }

    /// The value of `key`, if the file has it.
    pub fn get(&self, key: &str) -> Option<&GgufValue> {
        self.entries.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }
}

struct Reader<R> {
    inner: R,
    pos: u64,
    len: u64,
    key: Option<String>,
}

impl<R: Read + Seek> Reader<R> {
    fn error_at(&self, offset: u64, what: String) -> GgufError {
        GgufError {
            offset,
            key: self.key.clone(),
            what,
        }
    }

    fn left(&self) -> u64 {
        self.len.saturating_sub(self.pos)
    }

    /// Checks that `n` bytes are left for `what`.
    fn need(&self, n: u64, what: &str) -> Result<(), GgufError> {
        if n > self.left() {
            return Err(self.error_at(
                self.pos,
                format!(
                    "truncated: {what} needs {n} bytes, the file has {} left (it is {} bytes)",
                    self.left(),
                    self.len
                ),
            ));
        }
        Ok(())
    }

    fn bytes(&mut self, n: u64, what: &str) -> Result<Vec<u8>, GgufError> {
        self.need(n, what)?;
        let mut buf = vec![0u8; n as usize];
        let at = self.pos;
        self.inner
            .read_exact(&mut buf)
            .map_err(|e| self.error_at(at, format!("reading {what}: {e}")))?;
        self.pos += n;
        Ok(buf)
    }

    fn skip(&mut self, n: u64, what: &str) -> Result<(), GgufError> {
        self.need(n, what)?;
        let at = self.pos;
        let off = i64::try_from(n).map_err(|_| self.error_at(at, format!("{what}: {n} bytes")))?;
        self.inner
            .seek(SeekFrom::Current(off))
            .map_err(|e| self.error_at(at, format!("skipping {what}: {e}")))?;
        self.pos += n;
        Ok(())
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N], GgufError> {
        let v = self.bytes(N as u64, what)?;
        let mut a = [0u8; N];
        a.copy_from_slice(&v);
        Ok(a)
    }

    fn u32(&mut self, what: &str) -> Result<u32, GgufError> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }

    fn u64(&mut self, what: &str) -> Result<u64, GgufError> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }

    fn string(&mut self, max: u64, what: &str) -> Result<String, GgufError> {
        let at = self.pos;
        let n = self.u64(&format!("the length of {what}"))?;
        if n > max {
            return Err(self.error_at(
                at,
                format!("{what} is {n} bytes long, over the {max} this reader keeps"),
            ));
        }
        let bytes = self.bytes(n, what)?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    fn kind(&mut self, what: &str) -> Result<GgufType, GgufError> {
        let at = self.pos;
        let t = self.u32(what)?;
        GgufType::from_u32(t)
            .ok_or_else(|| self.error_at(at, format!("{what} {t} is not a GGUF type (0 to 12)")))
    }

    fn value(&mut self) -> Result<GgufValue, GgufError> {
        let kind = self.kind("the value type")?;
        self.scalar(kind)
    }

    fn scalar(&mut self, kind: GgufType) -> Result<GgufValue, GgufError> {
        use GgufType::*;
        Ok(match kind {
            U8 => GgufValue::Uint(kind, u64::from(self.array::<1>("a u8")?[0])),
            I8 => GgufValue::Int(kind, i64::from(self.array::<1>("an i8")?[0] as i8)),
            U16 => GgufValue::Uint(kind, u64::from(u16::from_le_bytes(self.array("a u16")?))),
            I16 => GgufValue::Int(kind, i64::from(i16::from_le_bytes(self.array("an i16")?))),
            U32 => GgufValue::Uint(kind, u64::from(self.u32("a u32")?)),
            I32 => GgufValue::Int(kind, i64::from(i32::from_le_bytes(self.array("an i32")?))),
            U64 => GgufValue::Uint(kind, self.u64("a u64")?),
            I64 => GgufValue::Int(kind, i64::from_le_bytes(self.array("an i64")?)),
            F32 => GgufValue::F32(f32::from_le_bytes(self.array("an f32")?)),
            F64 => GgufValue::F64(f64::from_le_bytes(self.array("an f64")?)),
            Bool => GgufValue::Bool(self.array::<1>("a bool")?[0] != 0),
            String => GgufValue::String(self.string(MAX_STRING_LEN, "the string value")?),
            Array => {
                let elem = self.kind("the array's element type")?;
                let at = self.pos;
                let n = self.u64("the array's length")?;
                match elem.size() {
                    Some(size) => {
                        let bytes = n.checked_mul(size).filter(|b| *b <= self.left());
                        let Some(bytes) = bytes else {
                            return Err(self.error_at(
                                at,
                                format!(
                                    "array of {n} {} values needs more than the {} bytes left in the file",
                                    elem.name(),
                                    self.left()
                                ),
                            ));
                        };
                        self.skip(bytes, "the array's values")?;
                    }
                    None if elem == String => {
                        // Each string is at least its 8-byte length.
                        if n.checked_mul(8).is_none_or(|b| b > self.left()) {
                            return Err(self.error_at(
                                at,
                                format!(
                                    "array of {n} strings needs more than the {} bytes left in the file",
                                    self.left()
                                ),
                            ));
                        }
                        for i in 0..n {
                            let len = self.u64(&format!("the length of string {i}"))?;
                            self.skip(len, &format!("string {i} of the array"))?;
                        }
                    }
                    None => {
                        return Err(self.error_at(
                            at,
                            "an array of arrays is not read (ggml refuses nested arrays)".into(),
                        ));
                    }
                }
                GgufValue::Array(elem, n)
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A GGUF header and key/value section, written the way ggml's
    /// `gguf_write_to_buf` lays them out.
    struct Writer(Vec<u8>);

    impl Writer {
        fn new(n_kv: u64) -> Self {
            let mut w = Writer(b"GGUF".to_vec());
            w.0.extend(3u32.to_le_bytes());
            w.0.extend(0u64.to_le_bytes());
            w.0.extend(n_kv.to_le_bytes());
            w
        }
        fn str(&mut self, s: &str) {
            self.0.extend((s.len() as u64).to_le_bytes());
            self.0.extend(s.as_bytes());
        }
        fn kv_f32(&mut self, k: &str, v: f32) {
            self.str(k);
            self.0.extend(6u32.to_le_bytes());
            self.0.extend(v.to_le_bytes());
        }
        fn kv_i32(&mut self, k: &str, v: i32) {
            self.str(k);
            self.0.extend(5u32.to_le_bytes());
            self.0.extend(v.to_le_bytes());
        }
    }

    #[test]
    fn reads_scalars_strings_and_skips_arrays() {
        let mut w = Writer::new(4);
        w.kv_f32("general.sampling.top_p", 0.95);
        w.kv_i32("general.sampling.top_k", 20);
        w.str("general.name");
        w.0.extend(8u32.to_le_bytes());
        w.str("SmolLM2");
        w.str("tokenizer.ggml.tokens");
        w.0.extend(9u32.to_le_bytes());
        w.0.extend(8u32.to_le_bytes());
        w.0.extend(2u64.to_le_bytes());
        w.str("a");
        w.str("bc");
        let m = GgufMetadata::from_bytes(&w.0).expect("reads");
        assert_eq!(m.get("general.sampling.top_p"), Some(&GgufValue::F32(0.95)));
        assert_eq!(
            m.get("general.sampling.top_k"),
            Some(&GgufValue::Int(GgufType::I32, 20))
        );
        assert_eq!(
            m.get("general.name"),
            Some(&GgufValue::String("SmolLM2".into()))
        );
        assert_eq!(
            m.get("tokenizer.ggml.tokens"),
            Some(&GgufValue::Array(GgufType::String, 2))
        );
    }

    #[test]
    fn hostile_headers_name_the_offset_or_key() {
        let e = GgufMetadata::from_bytes(b"PK\x03\x04rest").unwrap_err();
        assert!(e.to_string().contains("not a GGUF file"), "{e}");
        let mut w = Writer::new(u64::MAX);
        w.kv_i32("x", 1);
        let e = GgufMetadata::from_bytes(&w.0).unwrap_err();
        assert_eq!(e.offset, 16, "{e}");
        assert!(
            e.to_string().contains("key count 18446744073709551615"),
            "{e}"
        );
        let mut w = Writer::new(1);
        w.str("tokenizer.ggml.scores");
        w.0.extend(9u32.to_le_bytes());
        w.0.extend(6u32.to_le_bytes());
        w.0.extend((1u64 << 62).to_le_bytes());
        let e = GgufMetadata::from_bytes(&w.0).unwrap_err();
        assert_eq!(e.key.as_deref(), Some("tokenizer.ggml.scores"), "{e}");
        assert!(
            e.to_string().contains("array of 4611686018427387904 f32"),
            "{e}"
        );
        let mut w = Writer::new(1);
        w.kv_f32("general.sampling.temp", 0.6);
        let cut = &w.0[..w.0.len() - 2];
        let e = GgufMetadata::from_bytes(cut).unwrap_err();
        assert!(e.to_string().contains("truncated"), "{e}");
        assert_eq!(e.key.as_deref(), Some("general.sampling.temp"));
        let mut w = Writer::new(1);
        w.str("k");
        w.0.extend(13u32.to_le_bytes());
        let e = GgufMetadata::from_bytes(&w.0).unwrap_err();
        assert!(e.to_string().contains("13 is not a GGUF type"), "{e}");
    }
}
