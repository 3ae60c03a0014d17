//! Arrays of numbers from the binary files people already have: NumPy's
//! `.npy` and plain safetensors (no project metadata), for `compare check`'s
//! logits and probabilities. A 151,936-token row is 600 KB of float32 here
//! instead of 1.5 MB of JSON text.
//!
//! Both readers take float32 or float64, little-endian, in C order, with one
//! or two dimensions (`[V]`: one row; `[N, V]`: N rows). Everything else is
//! refused with an error that names the file and what was found. Reads are
//! bounded ([`MAX_FILE_BYTES`]) and every size in a header is checked against
//! the bytes that are really there before anything is allocated.
//!
//! `.npy`: format versions 1.0, 2.0 and 3.0 as NumPy writes them
//! (`numpy/lib/format.py`, NumPy 2.x: the magic `\x93NUMPY`, a version, a
//! little-endian header length, then a Python dict literal with `descr`,
//! `fortran_order` and `shape`).

use std::fmt;
use std::path::{Path, PathBuf};

use safetensors::{Dtype, SafeTensors};

/// Largest array file read (1,000 rows of a 151,936-token vocabulary in
/// float64 are 1.2 GB).
pub const MAX_FILE_BYTES: u64 = 4 << 30;

/// Numbers as stored: float32 or float64.
#[derive(Debug, Clone, PartialEq)]
pub enum Values {
    /// float32.
    F32(Vec<f32>),
    /// float64.
    F64(Vec<f64>),
}

impl Values {
    fn len(&self) -> usize {
        match self {
            Self::F32(v) => v.len(),
            Self::F64(v) => v.len(),
        }
    }
}

/// A one- or two-dimensional array, as rows of equal length.
#[derive(Debug, Clone, PartialEq)]
pub struct Rows {
    /// The numbers, row after row.
    pub values: Values,
    /// Rows (1 for a one-dimensional array).
    pub rows: usize,
    /// Entries per row.
    pub width: usize,
}

/// One row, borrowed, in its stored precision.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Row<'a> {
    /// float32.
    F32(&'a [f32]),
    /// float64.
    F64(&'a [f64]),
}

impl Row<'_> {
    /// The row in f64 (float32 widens exactly).
    pub fn to_f64(&self) -> Vec<f64> {
        match self {
            Self::F32(r) => r.iter().map(|&x| f64::from(x)).collect(),
            Self::F64(r) => r.to_vec(),
        }
    }

    /// Entries in the row.
    pub fn len(&self) -> usize {
        match self {
            Self::F32(r) => r.len(),
            Self::F64(r) => r.len(),
        }
    }

    /// Whether the row is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Rows {
    /// Row `i` (`i < self.rows`).
    pub fn row(&self, i: usize) -> Row<'_> {
        let range = i * self.width..(i + 1) * self.width;
        match &self.values {
            Values::F32(v) => Row::F32(&v[range]),
            Values::F64(v) => Row::F64(&v[range]),
        }
    }

    fn new(values: Values, shape: &[usize]) -> Result<Self, String> {
        let (rows, width) = match *shape {
            [v] => (1, v),
            [n, v] => (n, v),
            _ => {
                return Err(format!(
                    "has shape {shape:?}; expected [V] (one row) or [N, V] (N rows)"
                ));
            }
        };
        if width == 0 || rows == 0 {
            return Err(format!("has shape {shape:?}: no entries"));
        }
        debug_assert_eq!(values.len(), rows * width);
        Ok(Self {
            values,
            rows,
            width,
        })
    }
}

/// Why an array file could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArrayError {
    /// The file.
    pub path: PathBuf,
    /// What is wrong, quoting what was found.
    pub message: String,
}

impl fmt::Display for ArrayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.message)
    }
}

impl std::error::Error for ArrayError {}

/// Reads `path`: a `.npy` file, or a safetensors file (`tensor`: which one;
/// `None`: the file must hold exactly one). Which format is decided by the
/// bytes (NumPy's magic), not the name.
pub fn read(path: &Path, tensor: Option<&str>) -> Result<Rows, ArrayError> {
    let error = |message: String| ArrayError {
        path: path.to_path_buf(),
        message,
    };
    let data = crate::fixture::read_at_most(path, MAX_FILE_BYTES)
        .map_err(|e| error(format!("cannot read it: {e}")))?
        .map_err(|_| {
            error(format!(
                "is over {MAX_FILE_BYTES} bytes; refusing to read it"
            ))
        })?;
    from_bytes(&data, tensor).map_err(error)
}

/// [`read`] on bytes already in memory; errors without the file name.
pub fn from_bytes(data: &[u8], tensor: Option<&str>) -> Result<Rows, String> {
    if data.starts_with(NPY_MAGIC) {
        if let Some(name) = tensor {
            return Err(format!(
                "is a .npy file, which holds one array: there is no tensor {name:?} to pick"
            ));
        }
        npy(data)
    } else {
        safetensors(data, tensor)
    }
}

const NPY_MAGIC: &[u8] = b"\x93NUMPY";

/// A `.npy` file's array.
fn npy(data: &[u8]) -> Result<Rows, String> {
    let major = *data.get(6).ok_or(".npy: the file ends inside its magic")?;
    let (len_bytes, len): (usize, usize) = match major {
        1 => {
            let b = data
                .get(8..10)
                .ok_or(".npy: the file ends inside its header")?;
            (2, usize::from(u16::from_le_bytes([b[0], b[1]])))
        }
        2 | 3 => {
            let b = data
                .get(8..12)
                .ok_or(".npy: the file ends inside its header")?;
            let n = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            (4, usize::try_from(n).map_err(|_| ".npy: header too long")?)
        }
        v => {
            return Err(format!(
                ".npy: format version {v} (NumPy writes 1, 2 and 3)"
            ));
        }
    };
    let start = 8 + len_bytes;
    let header = data
        .get(start..start + len)
        .ok_or_else(|| format!(".npy: the header says {len} bytes, the file ends before"))?;
    let header = std::str::from_utf8(header).map_err(|_| ".npy: the header is not text")?;
    let descr = dict_value(header, "descr")?;
    let fortran = dict_value(header, "fortran_order")?;
    let shape = dict_value(header, "shape")?;
    if fortran != "False" {
        return Err(format!(
            ".npy: fortran_order is {fortran}; save a C-ordered array (np.ascontiguousarray)"
        ));
    }
    let shape = tuple(shape)?;
    let dtype = match descr {
        "'<f4'" => Dtype::F32,
        "'<f8'" => Dtype::F64,
        other => {
            return Err(format!(
                ".npy: dtype {other}; expected float32 or float64, little-endian ('<f4', '<f8')"
            ));
        }
    };
    values(&data[start + len..], dtype, &shape).map_err(|e| format!(".npy: {e}"))
}

/// The text of `key`'s value in a `.npy` header (a Python dict literal):
/// up to the next `,` outside parentheses, or the closing `}`.
fn dict_value<'h>(header: &'h str, key: &str) -> Result<&'h str, String> {
    let quoted = format!("'{key}':");
    let at = header
        .find(&quoted)
        .ok_or_else(|| format!(".npy: the header has no {key:?}: {}", header.trim_end()))?;
    let rest = header[at + quoted.len()..].trim_start();
    let mut depth = 0usize;
    for (i, c) in rest.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' | '}' if depth == 0 => return Ok(rest[..i].trim()),
            _ => {}
        }
    }
    Err(format!(
        ".npy: the header's {key:?} has no end: {}",
        header.trim_end()
    ))
}

/// A shape tuple: `(3,)`, `(2, 5)`, `()`.
fn tuple(text: &str) -> Result<Vec<usize>, String> {
    let inner = text
        .strip_prefix('(')
        .and_then(|t| t.strip_suffix(')'))
        .ok_or_else(|| format!(".npy: shape {text} is not a tuple"))?;
    inner
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse()
                .map_err(|_| format!(".npy: shape {text} has {s:?}, not a size"))
        })
        .collect()
}

/// The one tensor of a safetensors file, or `name`.
fn safetensors(data: &[u8], name: Option<&str>) -> Result<Rows, String> {
    let st = SafeTensors::deserialize(data).map_err(|e| {
        format!("is neither a .npy file (no \\x93NUMPY magic) nor safetensors ({e})")
    })?;
    let mut names = st.names();
    names.sort();
    let name = match (name, &names[..]) {
        (Some(n), _) => n,
        (None, [only]) => *only,
        (None, _) => {
            return Err(format!(
                "holds {} tensors ({}); say which one with FILE:NAME",
                names.len(),
                names.join(", ")
            ));
        }
    };
    let view = st
        .tensor(name)
        .map_err(|_| format!("has no tensor {name:?} (it has: {})", names.join(", ")))?;
    let dtype = view.dtype();
    if !matches!(dtype, Dtype::F32 | Dtype::F64) {
        return Err(format!("tensor {name:?} is {dtype:?}; expected F32 or F64"));
    }
    values(view.data(), dtype, view.shape()).map_err(|e| format!("tensor {name:?}: {e}"))
}

/// Little-endian numbers of `dtype` in `shape`; the byte count must match.
fn values(bytes: &[u8], dtype: Dtype, shape: &[usize]) -> Result<Rows, String> {
    let size = if dtype == Dtype::F32 { 4 } else { 8 };
    let count = shape
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| format!("shape {shape:?} overflows"))?;
    let want = count
        .checked_mul(size)
        .ok_or_else(|| format!("shape {shape:?} overflows"))?;
    if bytes.len() != want {
        return Err(format!(
            "shape {shape:?} needs {want} bytes of data, the file has {}",
            bytes.len()
        ));
    }
    let values = if size == 4 {
        Values::F32(
            bytes
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect(),
        )
    } else {
        Values::F64(
            bytes
                .chunks_exact(8)
                .map(|c| f64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
                .collect(),
        )
    };
    Rows::new(values, shape)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `.npy` file as `numpy.save` writes one (version 1.0, header padded
    /// with spaces to a multiple of 64 bytes, ending in a newline).
    fn npy_bytes(descr: &str, shape: &str, payload: &[u8]) -> Vec<u8> {
        let mut header =
            format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
        while (10 + header.len() + 1) % 64 != 0 {
            header.push(' ');
        }
        header.push('\n');
        let mut out = NPY_MAGIC.to_vec();
        out.extend_from_slice(&[1, 0]);
        out.extend_from_slice(&(header.len() as u16).to_le_bytes());
        out.extend_from_slice(header.as_bytes());
        out.extend_from_slice(payload);
        out
    }

    #[test]
    fn npy_rows_in_both_precisions() {
        let payload: Vec<u8> = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        let rows = from_bytes(&npy_bytes("<f4", "(2, 3)", &payload), None).expect("valid");
        assert_eq!((rows.rows, rows.width), (2, 3));
        assert_eq!(rows.row(1), Row::F32(&[4.0, 5.0, 6.0]));
        let payload: Vec<u8> = [0.5f64, 0.5].iter().flat_map(|x| x.to_le_bytes()).collect();
        let rows = from_bytes(&npy_bytes("<f8", "(2,)", &payload), None).expect("valid");
        assert_eq!(rows.row(0).to_f64(), vec![0.5, 0.5]);
    }

    #[test]
    fn npy_refusals_say_what_was_found() {
        let err = from_bytes(&npy_bytes("<i8", "(1,)", &[0; 8]), None).unwrap_err();
        assert!(err.contains("dtype '<i8'"), "{err}");
        let err = from_bytes(&npy_bytes("<f4", "(3,)", &[0; 8]), None).unwrap_err();
        assert_eq!(
            err,
            ".npy: shape [3] needs 12 bytes of data, the file has 8"
        );
        let err = from_bytes(&npy_bytes("<f4", "(1, 1, 2)", &[0; 8]), None).unwrap_err();
        assert!(err.contains("expected [V] (one row) or [N, V]"), "{err}");
        let err =
            from_bytes(&npy_bytes("<f4", "(99999999999, 99999999999)", &[]), None).unwrap_err();
        assert!(err.contains("overflows"), "{err}");
        let err = from_bytes(&npy_bytes("<f4", "(0,)", &[]), None).unwrap_err();
        assert!(err.contains("no entries"), "{err}");
        assert!(from_bytes(b"\x93NUMPY", None).is_err());
    }

    #[test]
    fn plain_safetensors_without_metadata() {
        let data: Vec<u8> = [1.0f32, -1.0]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        let view = safetensors::tensor::TensorView::new(Dtype::F32, vec![2], &data).expect("ok");
        let bytes =
            safetensors::serialize([("x", view.clone()), ("y", view)], None).expect("serialize");
        let err = from_bytes(&bytes, None).unwrap_err();
        assert_eq!(err, "holds 2 tensors (x, y); say which one with FILE:NAME");
        let rows = from_bytes(&bytes, Some("y")).expect("named");
        assert_eq!(rows.row(0), Row::F32(&[1.0, -1.0]));
        let err = from_bytes(&bytes, Some("z")).unwrap_err();
        assert_eq!(err, "has no tensor \"z\" (it has: x, y)");
        let err = from_bytes(b"[[3, 2, 1]]", None).unwrap_err();
        assert!(err.starts_with("is neither a .npy file"), "{err}");
    }
}
