//! A file of cases recorded from a real engine: a safetensors file whose
//! string metadata holds the recorder's JSON (the cases, the versions, the
//! source fixture) and whose tensors hold the recorded vectors, as the
//! recorders under `scripts/reference/*/record.py` write them (vLLM,
//! SGLang, mistral.rs). The engines' replay tests read them through this
//! one reader.

use std::path::Path;

use safetensors::{Dtype, SafeTensors};
use serde_json::{Map, Value};

use crate::Error;

/// One recorded file.
#[derive(Debug, Clone)]
pub struct Recording {
    /// Its file name, for messages.
    pub name: String,
    /// The metadata, each value a JSON string as safetensors stores it.
    pub meta: Map<String, Value>,
    tensors: Vec<(String, Dtype, Vec<u8>)>,
}

impl Recording {
    /// Reads one file.
    pub fn load(path: &Path) -> Result<Self, Error> {
        let name = path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        let at = |e: &dyn std::fmt::Display| Error::new(format_args!("{}: {e}", path.display()));
        let data = std::fs::read(path).map_err(|e| at(&e))?;
        let (_, header) = SafeTensors::read_metadata(&data).map_err(|e| at(&e))?;
        let meta = header
            .metadata()
            .clone()
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| (k, Value::String(v)))
            .collect();
        let st = SafeTensors::deserialize(&data).map_err(|e| at(&e))?;
        let tensors = st
            .tensors()
            .into_iter()
            .map(|(k, v)| (k, v.dtype(), v.data().to_vec()))
            .collect();
        Ok(Self {
            name,
            meta,
            tensors,
        })
    }

    /// Every `*.safetensors` file of `dir`, in file-name order.
    pub fn list(dir: &Path) -> Result<Vec<Self>, Error> {
        let mut paths = Vec::new();
        let entries = std::fs::read_dir(dir)
            .map_err(|e| Error::new(format_args!("{}: {e}", dir.display())))?;
        for entry in entries {
            let path = entry
                .map_err(|e| Error::new(format_args!("{}: {e}", dir.display())))?
                .path();
            if path.extension().is_some_and(|e| e == "safetensors") {
                paths.push(path);
            }
        }
        paths.sort();
        paths.iter().map(|p| Self::load(p)).collect()
    }

    /// The bytes of tensor `key`, which must be of `dtype`.
    fn bytes(&self, key: &str, dtype: Dtype) -> Result<&[u8], Error> {
        let (_, d, b) = self
            .tensors
            .iter()
            .find(|(k, ..)| k == key)
            .ok_or_else(|| Error::new(format_args!("{}: no tensor `{key}`", self.name)))?;
        if *d != dtype {
            return Err(Error::new(format_args!(
                "{}: tensor `{key}` is {d:?}, expected {dtype:?}",
                self.name
            )));
        }
        Ok(b)
    }

    /// Tensor `key` as I64 values.
    pub fn i64s(&self, key: &str) -> Result<Vec<i64>, Error> {
        Ok(words::<8>(self.bytes(key, Dtype::I64)?)
            .map(i64::from_le_bytes)
            .collect())
    }

    /// Tensor `key` as F32 values.
    pub fn f32s(&self, key: &str) -> Result<Vec<f32>, Error> {
        Ok(words::<4>(self.bytes(key, Dtype::F32)?)
            .map(f32::from_le_bytes)
            .collect())
    }

    /// Tensor `key` as F64 values.
    pub fn f64s(&self, key: &str) -> Result<Vec<f64>, Error> {
        Ok(words::<8>(self.bytes(key, Dtype::F64)?)
            .map(f64::from_le_bytes)
            .collect())
    }

    /// Tensor `key` (U32) as the f32 values whose bit patterns it stores.
    pub fn f32_bits(&self, key: &str) -> Result<Vec<f32>, Error> {
        Ok(words::<4>(self.bytes(key, Dtype::U32)?)
            .map(|w| f32::from_bits(u32::from_le_bytes(w)))
            .collect())
    }

    /// Metadata value `key` as the string it is stored as.
    pub fn meta_str(&self, key: &str) -> Result<&str, Error> {
        self.meta
            .get(key)
            .and_then(Value::as_str)
            .ok_or_else(|| Error::new(format_args!("{}: no metadata `{key}`", self.name)))
    }

    /// Metadata value `key` read as JSON.
    pub fn meta_json(&self, key: &str) -> Result<Value, Error> {
        serde_json::from_str(self.meta_str(key)?).map_err(|e| {
            Error::new(format_args!(
                "{}: metadata `{key}` is not JSON: {e}",
                self.name
            ))
        })
    }
}

/// Little-endian words of `N` bytes (safetensors checked the length).
fn words<const N: usize>(bytes: &[u8]) -> impl Iterator<Item = [u8; N]> + '_ {
    bytes.chunks_exact(N).map(|c| {
        let mut w = [0; N];
        w.copy_from_slice(c);
        w
    })
}

/// FNV-1a 64 over the f32 values' little-endian bytes, as hex: how the
/// recorders hash a whole vector they do not store.
pub fn fnv1a64(values: &[f32]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for v in values {
        for b in v.to_le_bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    format!("{h:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a64_of_nothing_is_the_offset_basis() {
        assert_eq!(fnv1a64(&[]), "cbf29ce484222325");
    }

    #[test]
    fn missing_tensors_and_metadata_are_named() {
        let rec = Recording {
            name: "f.safetensors".into(),
            meta: Map::new(),
            tensors: vec![("x".into(), Dtype::F32, vec![0; 4])],
        };
        assert_eq!(rec.f32s("x").expect("f32"), vec![0.0]);
        assert_eq!(
            rec.i64s("x").expect_err("wrong dtype").to_string(),
            "f.safetensors: tensor `x` is F32, expected I64"
        );
        assert_eq!(
            rec.f32s("y").expect_err("absent").to_string(),
            "f.safetensors: no tensor `y`"
        );
        assert_eq!(
            rec.meta_str("cases").expect_err("absent").to_string(),
            "f.safetensors: no metadata `cases`"
        );
    }
}
