//! Fixture files: real logits and what transformers' own `generate` made of them.
//!
//! A fixture is one safetensors file written by `scripts/reference/hf_reference.py`
//! (see `docs/fixtures.md`). It holds the raw logits of one step, the context
//! that produced them, and for every generate setting the processed scores
//! transformers returned. Loading checks every invariant the rest of the project
//! relies on, so a damaged or hand-edited file is reported here — naming the
//! file and the tensor or metadata key — instead of becoming a wrong number later.
//! Metadata is checked first and as a whole: a file with several missing or
//! invalid keys gets one error that lists every one of them.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

use safetensors::{Dtype, SafeTensors};
use serde::Deserialize;
use serde_json::{Map, Value};

/// The `format` metadata value this loader understands.
pub const FORMAT: &str = "sampling-parity-fixture/1";

/// Largest fixture file the loader reads (a 262,144-entry vocabulary with
/// twenty settings is ~21 MB; anything far larger is not a fixture).
pub const MAX_FILE_BYTES: u64 = 256 * 1024 * 1024;

/// What produced a fixture's logits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FixtureKind {
    /// A real model's forward pass on a real context.
    Model,
    /// Hand-built logits returned by a stub model, to exercise edge cases.
    Edge,
}

impl fmt::Display for FixtureKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Model => "model",
            Self::Edge => "edge",
        })
    }
}

/// Where a model fixture's context comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelMeta {
    /// GGUF file name of the model.
    pub model: String,
    /// sha256 of that GGUF file.
    pub gguf_sha256: String,
    /// Short name of the prompt (`hello`, `write`).
    pub prompt_id: String,
    /// The user prompt before chat templating.
    pub prompt: String,
    /// Number of tokens in the chat-templated prompt.
    pub prompt_len: usize,
    /// Number of the model's own greedy answer tokens appended to the prompt.
    pub k: usize,
    /// Decoded text of those k tokens.
    pub answer: String,
    /// Decoded text of the whole greedy answer.
    pub full_answer: String,
    /// Vocabulary file, resolved against the fixture's folder.
    pub vocab: PathBuf,
}

/// One generate setting and the scores transformers produced with it.
#[derive(Debug, Clone, PartialEq)]
pub struct Setting {
    /// Setting name, e.g. `k40p09`.
    pub name: String,
    /// The exact keyword arguments passed to `generate`.
    pub kwargs: Map<String, Value>,
    /// `output_scores` of the single generated step: f32, -inf where filtered.
    pub scores: Vec<f32>,
}

/// A setting transformers refused, with its error message.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rejected {
    /// Setting name.
    pub name: String,
    /// The keyword arguments that were refused.
    pub kwargs: Map<String, Value>,
    /// transformers' exception text.
    pub error: String,
}

/// One loaded and checked fixture file.
#[derive(Debug, Clone, PartialEq)]
pub struct Fixture {
    /// The file it was read from.
    pub path: PathBuf,
    /// File stem, e.g. `hello_k7`.
    pub name: String,
    /// Model or edge.
    pub kind: FixtureKind,
    /// One-line description of what the file is for.
    pub description: String,
    /// torch version that produced it.
    pub torch_version: String,
    /// transformers version that produced it.
    pub transformers_version: String,
    /// Present for model fixtures.
    pub model: Option<ModelMeta>,
    /// Raw logits of the step (`output_logits`).
    pub logits: Vec<f32>,
    /// The whole context passed to generate.
    pub input_ids: Vec<i64>,
    /// Settings in the order they were run.
    pub settings: Vec<Setting>,
    /// Settings transformers refused.
    pub rejected: Vec<Rejected>,
}

/// Why a fixture could not be loaded. Every variant names the file.
#[derive(Debug, thiserror::Error)]
pub enum FixtureError {
    /// The bundled fixtures' folder is nowhere [`bundled_dir`] looks.
    #[error("{0}")]
    NoBundled(String),
    /// The file could not be read.
    #[error("{path}: cannot read fixture: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is larger than any fixture should be (`bytes` is how much was
    /// read before giving up: the limit plus one).
    #[error(
        "{path}: more than {max} bytes (the limit for a fixture; read {bytes} before stopping)"
    )]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size.
        bytes: u64,
        /// The limit.
        max: u64,
    },
    /// The safetensors container itself is damaged (truncated, lying header, ...).
    #[error("{path}: not a valid safetensors file: {message}")]
    Container {
        /// The file.
        path: PathBuf,
        /// What the safetensors parser said.
        message: String,
    },
    /// A required metadata key is missing (and it is the file's only
    /// metadata problem; see [`FixtureError::Metadata`]).
    #[error("{path}: metadata key `{key}` is missing")]
    MissingMetadata {
        /// The file.
        path: PathBuf,
        /// The key.
        key: &'static str,
    },
    /// A metadata value does not parse or is not allowed (and it is the
    /// file's only metadata problem; see [`FixtureError::Metadata`]).
    #[error("{path}: metadata key `{key}` is invalid ({value:?}): {reason}")]
    BadMetadata {
        /// The file.
        path: PathBuf,
        /// The key.
        key: &'static str,
        /// The offending value (truncated to 200 characters).
        value: String,
        /// Why it is rejected.
        reason: String,
    },
    /// Several metadata keys are missing or invalid: every one is listed, so
    /// a hand-written file can be fixed in one pass.
    #[error("{path}: {} metadata problems: {}", problems.len(), ListProblems(problems))]
    Metadata {
        /// The file.
        path: PathBuf,
        /// Every problem, in the order the keys are checked.
        problems: Vec<MetadataProblem>,
    },
    /// A required tensor is missing.
    #[error("{path}: tensor `{tensor}` is missing")]
    MissingTensor {
        /// The file.
        path: PathBuf,
        /// Tensor name.
        tensor: String,
    },
    /// A tensor has the wrong dtype or shape, or holds a forbidden value.
    #[error("{path}: tensor `{tensor}`: {reason}")]
    BadTensor {
        /// The file.
        path: PathBuf,
        /// Tensor name.
        tensor: String,
        /// What is wrong.
        reason: String,
    },
    /// A `scores.*` tensor has no entry in the `settings` metadata.
    #[error("{path}: tensor `{tensor}` has no setting with its kwargs in the `settings` metadata")]
    OrphanScores {
        /// The file.
        path: PathBuf,
        /// Tensor name.
        tensor: String,
    },
    /// The fixture folder could not be listed.
    #[error("{path}: cannot list fixtures: {source}")]
    ListDir {
        /// The folder.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// One missing or invalid metadata key of a fixture file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MetadataProblem {
    /// The key is absent.
    Missing {
        /// The key.
        key: &'static str,
    },
    /// The value does not parse or is not allowed.
    Invalid {
        /// The key.
        key: &'static str,
        /// The offending value (truncated to 200 characters).
        value: String,
        /// Why it is rejected.
        reason: String,
    },
}

impl fmt::Display for MetadataProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Missing { key } => write!(f, "key `{key}` is missing"),
            Self::Invalid { key, value, reason } => {
                write!(f, "key `{key}` is invalid ({value:?}): {reason}")
            }
        }
    }
}

/// `; `-separated problems, for [`FixtureError::Metadata`]'s message.
struct ListProblems<'a>(&'a [MetadataProblem]);

impl fmt::Display for ListProblems<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{p}")?;
        }
        Ok(())
    }
}

/// The bundled fixtures' folder, wherever the code runs; the one lookup
/// every command, port and test uses: the folder in
/// `SAMPLING_PARITY_FIXTURES` (an error if it holds no `smollm2/`), the
/// source tree this crate was built from, `fixtures/` in the working
/// directory, or `fixtures/` beside the executable or one of its parents (a
/// copied or installed binary). Otherwise an error that says where it
/// looked.
pub fn bundled_dir() -> Result<PathBuf, FixtureError> {
    let holds_fixtures = |dir: &Path| dir.join("smollm2").is_dir();
    // Empty (`SAMPLING_PARITY_FIXTURES=`) is unset, as a shell user means it.
    if let Some(dir) = std::env::var_os(FIXTURES_ENV).filter(|d| !d.is_empty()) {
        let dir = PathBuf::from(dir);
        if holds_fixtures(&dir) {
            return Ok(dir);
        }
        return Err(FixtureError::NoBundled(format!(
            "{FIXTURES_ENV}={} has no smollm2/ folder of fixtures",
            dir.display()
        )));
    }
    let mut looked = vec![format!("{FIXTURES_ENV} (unset or empty)")];
    // The source tree's root is two folders up from this crate's; taken
    // lexically, so paths print as `ROOT/fixtures/...`, not
    // `ROOT/crates/parity-core/../../fixtures/...`.
    let source = Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .map_or_else(|| PathBuf::from("fixtures"), |root| root.join("fixtures"));
    let mut candidates = vec![source, PathBuf::from("fixtures")];
    if let Ok(exe) = std::env::current_exe() {
        candidates.extend(exe.ancestors().skip(1).map(|d| d.join("fixtures")));
    }
    for dir in candidates {
        if holds_fixtures(&dir) {
            return Ok(dir);
        }
        looked.push(dir.display().to_string());
    }
    Err(FixtureError::NoBundled(format!(
        "cannot find the bundled fixtures; looked in: {}. Set {FIXTURES_ENV} to the \
         repository's fixtures/ folder, or name fixture files",
        looked.join(", ")
    )))
}

/// The environment variable naming the bundled fixtures' folder.
pub const FIXTURES_ENV: &str = "SAMPLING_PARITY_FIXTURES";

/// Every committed fixture file: `fixtures/smollm2/*.safetensors` then
/// `fixtures/edge/*.safetensors`, each group sorted by name.
pub fn bundled_fixtures() -> Result<Vec<PathBuf>, FixtureError> {
    let root = bundled_dir()?;
    let mut all = Vec::new();
    for group in ["smollm2", "edge"] {
        all.extend(list_dir(&root.join(group))?);
    }
    Ok(all)
}

/// The `*.safetensors` files directly inside `dir`, sorted by name.
pub fn list_dir(dir: &Path) -> Result<Vec<PathBuf>, FixtureError> {
    let list_error = |source| FixtureError::ListDir {
        path: dir.to_path_buf(),
        source,
    };
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(list_error)? {
        let entry = entry.map_err(list_error)?;
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "safetensors") {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SettingMeta {
    name: String,
    kwargs: Map<String, Value>,
}

impl Fixture {
    /// Reads and checks one fixture file.
    pub fn load(path: &Path) -> Result<Self, FixtureError> {
        let io = |source| FixtureError::Io {
            path: path.to_path_buf(),
            source,
        };
        // The size is checked while reading, not from the metadata: a device
        // such as /dev/zero reports 0 bytes and never ends, and reading it
        // whole would take all the memory there is.
        let data = read_at_most(path, MAX_FILE_BYTES)
            .map_err(io)?
            .map_err(|bytes| FixtureError::TooLarge {
                path: path.to_path_buf(),
                bytes,
                max: MAX_FILE_BYTES,
            })?;
        Self::from_bytes(path, &data)
    }

    /// Parses and checks fixture bytes; `path` is used for messages and to
    /// resolve the vocabulary file.
    pub fn from_bytes(path: &Path, data: &[u8]) -> Result<Self, FixtureError> {
        let p = || path.to_path_buf();
        let container = |e: safetensors::SafeTensorError| FixtureError::Container {
            path: p(),
            message: e.to_string(),
        };
        let (_, header) = SafeTensors::read_metadata(data).map_err(container)?;
        let st = SafeTensors::deserialize(data).map_err(container)?;
        let empty = HashMap::new();
        let mut meta = Meta {
            path,
            map: header.metadata().as_ref().unwrap_or(&empty),
            problems: Vec::new(),
        };

        // Every metadata key is checked before any tensor, and every problem
        // is collected, so one error names all of them. A missing or invalid
        // value reads as "" (or 0, or `edge`); it is never used, because the
        // collected problems are returned first.
        if let Some(format) = meta.get("format")
            && format != FORMAT
        {
            meta.invalid("format", format, format!("expected `{FORMAT}`"));
        }
        let kind = match meta.get("kind") {
            Some("model") => Some(FixtureKind::Model),
            Some("edge") => Some(FixtureKind::Edge),
            Some(other) => {
                meta.invalid("kind", other, "expected `model` or `edge`".into());
                None
            }
            None => None,
        };
        let metas = meta.settings();
        let rejected = match meta.map.get("rejected") {
            None => Vec::new(),
            Some(json) => serde_json::from_str(json).unwrap_or_else(|e| {
                meta.invalid("rejected", json, e.to_string());
                Vec::new()
            }),
        };
        // Model keys are required only when `kind` says so; with `kind`
        // missing or invalid nobody knows, and that problem is reported.
        let model = (kind == Some(FixtureKind::Model)).then(|| {
            let model = meta.text("model");
            let gguf_sha256 = meta.text("gguf_sha256");
            let prompt_id = meta.text("prompt_id");
            let prompt = meta.text("prompt");
            let prompt_len = meta.number("prompt_len");
            let k = meta.number("k");
            let answer = meta.text("answer");
            let full_answer = meta.text("full_answer");
            let vocab = path
                .parent()
                .unwrap_or(Path::new("."))
                .join(meta.text("vocab"));
            ModelMeta {
                model,
                gguf_sha256,
                prompt_id,
                prompt,
                prompt_len,
                k,
                answer,
                full_answer,
                vocab,
            }
        });
        let description = meta.text("description");
        let torch_version = meta.text("torch_version");
        let transformers_version = meta.text("transformers_version");
        meta.finish()?;
        let kind = kind.unwrap_or(FixtureKind::Edge);

        let logits = read_f32(path, &st, "logits")?;
        if logits.is_empty() {
            return Err(bad_tensor(path, "logits", "is empty".into()));
        }
        if let Some(i) = logits
            .iter()
            .position(|x| x.is_nan() || *x == f32::INFINITY)
        {
            return Err(bad_tensor(
                path,
                "logits",
                format!("entry {i} is {}", logits[i]),
            ));
        }
        let input_ids = read_i64(path, &st, "input_ids")?;

        let mut settings = Vec::with_capacity(metas.len());
        for m in metas {
            let tensor = format!("scores.{}", m.name);
            let scores = read_f32(path, &st, &tensor)?;
            if scores.len() != logits.len() {
                return Err(bad_tensor(
                    path,
                    &tensor,
                    format!(
                        "has {} entries but `logits` has {}",
                        scores.len(),
                        logits.len()
                    ),
                ));
            }
            // +inf is legal in scores: a penalty below 1 can push a huge logit
            // past f32::MAX, and that is what transformers returned. NaN never is.
            if let Some(i) = scores.iter().position(|x| x.is_nan()) {
                return Err(bad_tensor(
                    path,
                    &tensor,
                    format!("entry {i} is {}", scores[i]),
                ));
            }
            settings.push(Setting {
                name: m.name,
                kwargs: m.kwargs,
                scores,
            });
        }
        for name in st.names() {
            if let Some(setting) = name.strip_prefix("scores.")
                && !settings.iter().any(|s| s.name == setting)
            {
                return Err(FixtureError::OrphanScores {
                    path: p(),
                    tensor: name.to_string(),
                });
            }
        }

        // checked_add: both numbers come from the file, and a wrapped sum
        // (prompt_len = usize::MAX, k = 1) would match an empty context.
        if let Some(m) = &model
            && m.prompt_len.checked_add(m.k) != Some(input_ids.len())
        {
            return Err(bad_tensor(
                path,
                "input_ids",
                format!(
                    "has {} entries but prompt_len {} + k {} = {}",
                    input_ids.len(),
                    m.prompt_len,
                    m.k,
                    m.prompt_len as u128 + m.k as u128
                ),
            ));
        }

        Ok(Self {
            path: p(),
            name: path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default(),
            kind,
            description,
            torch_version,
            transformers_version,
            model,
            logits,
            input_ids,
            settings,
            rejected,
        })
    }

    /// The vocabulary size, V.
    pub fn vocab_size(&self) -> usize {
        self.logits.len()
    }

    /// The setting with this name, if the fixture recorded it.
    pub fn setting(&self, name: &str) -> Option<&Setting> {
        self.settings.iter().find(|s| s.name == name)
    }
}

/// Reads a whole file of at most `max` bytes. `Ok(Err(n))` when it holds
/// more: reading stopped after `n > max` bytes, so memory stays bounded even
/// for endless files such as `/dev/zero`.
pub fn read_at_most(path: &Path, max: u64) -> std::io::Result<Result<Vec<u8>, u64>> {
    use std::io::Read;
    let mut data = Vec::new();
    std::fs::File::open(path)?
        .take(max.saturating_add(1))
        .read_to_end(&mut data)?;
    let read = data.len() as u64;
    Ok(if read > max { Err(read) } else { Ok(data) })
}

/// Reads metadata keys and collects every problem instead of stopping at the
/// first.
struct Meta<'a> {
    path: &'a Path,
    map: &'a HashMap<String, String>,
    problems: Vec<MetadataProblem>,
}

impl<'a> Meta<'a> {
    fn get(&mut self, key: &'static str) -> Option<&'a str> {
        let value = self.map.get(key).map(String::as_str);
        if value.is_none() {
            self.problems.push(MetadataProblem::Missing { key });
        }
        value
    }

    /// The value, or "" (with the problem recorded) when it is missing.
    fn text(&mut self, key: &'static str) -> String {
        self.get(key).unwrap_or_default().to_string()
    }

    /// A decimal whole number, or 0 (with the problem recorded).
    fn number(&mut self, key: &'static str) -> usize {
        let Some(v) = self.get(key) else { return 0 };
        v.parse().unwrap_or_else(|_| {
            self.invalid(key, v, "expected a whole number".into());
            0
        })
    }

    /// The `settings` list, every name checked; empty when it does not parse.
    fn settings(&mut self) -> Vec<SettingMeta> {
        let Some(json) = self.get("settings") else {
            return Vec::new();
        };
        let metas: Vec<SettingMeta> = match serde_json::from_str(json) {
            Ok(metas) => metas,
            Err(e) => {
                self.invalid("settings", json, e.to_string());
                return Vec::new();
            }
        };
        for (i, m) in metas.iter().enumerate() {
            if m.name.is_empty()
                || !m
                    .name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
            {
                self.invalid("settings", &m.name, "setting names are [a-z0-9_]+".into());
            } else if metas[..i].iter().any(|earlier| earlier.name == m.name) {
                self.invalid("settings", &m.name, "setting listed twice".into());
            }
        }
        metas
    }

    fn invalid(&mut self, key: &'static str, value: &str, reason: String) {
        self.problems.push(MetadataProblem::Invalid {
            key,
            value: value.chars().take(200).collect(),
            reason,
        });
    }

    /// One problem keeps its own error variant and message; several are
    /// reported together.
    fn finish(self) -> Result<(), FixtureError> {
        let path = self.path.to_path_buf();
        let mut problems = self.problems;
        match problems.len() {
            0 => Ok(()),
            1 => Err(match problems.remove(0) {
                MetadataProblem::Missing { key } => FixtureError::MissingMetadata { path, key },
                MetadataProblem::Invalid { key, value, reason } => FixtureError::BadMetadata {
                    path,
                    key,
                    value,
                    reason,
                },
            }),
            _ => Err(FixtureError::Metadata { path, problems }),
        }
    }
}

fn bad_tensor(path: &Path, tensor: &str, reason: String) -> FixtureError {
    FixtureError::BadTensor {
        path: path.to_path_buf(),
        tensor: tensor.to_string(),
        reason,
    }
}

/// Reads a rank-1 tensor of the given dtype as little-endian chunks.
fn read_1d<'a>(
    path: &Path,
    st: &SafeTensors<'a>,
    name: &str,
    dtype: Dtype,
) -> Result<&'a [u8], FixtureError> {
    let view = st.tensor(name).map_err(|_| FixtureError::MissingTensor {
        path: path.to_path_buf(),
        tensor: name.to_string(),
    })?;
    if view.dtype() != dtype {
        return Err(bad_tensor(
            path,
            name,
            format!("dtype is {:?}, expected {dtype:?}", view.dtype()),
        ));
    }
    if view.shape().len() != 1 {
        return Err(bad_tensor(
            path,
            name,
            format!("shape is {:?}, expected one dimension", view.shape()),
        ));
    }
    Ok(view.data())
}

fn read_f32(path: &Path, st: &SafeTensors<'_>, name: &str) -> Result<Vec<f32>, FixtureError> {
    let data = read_1d(path, st, name, Dtype::F32)?;
    Ok(data
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}

fn read_i64(path: &Path, st: &SafeTensors<'_>, name: &str) -> Result<Vec<i64>, FixtureError> {
    let data = read_1d(path, st, name, Dtype::I64)?;
    Ok(data
        .chunks_exact(8)
        .map(|c| i64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
        .collect())
}
