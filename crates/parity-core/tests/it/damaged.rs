use std::collections::HashMap;
use std::path::Path;

use parity_core::fixture::{Fixture, FixtureError, MetadataProblem};
use safetensors::tensor::TensorView;
use safetensors::{Dtype, serialize};

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn i64_bytes(v: &[i64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

struct Builder {
    tensors: Vec<(String, Dtype, Vec<usize>, Vec<u8>)>,
    meta: HashMap<String, String>,
}

impl Builder {
    /// A valid edge fixture: logits [3,2,2,1], one greedy setting.
    fn valid() -> Self {
        let logits = [3.0f32, 2.0, 2.0, 1.0];
        let meta = [
            ("format", "sampling-parity-fixture/1"),
            ("kind", "edge"),
            ("description", "test"),
            ("torch_version", "2.15.0"),
            ("transformers_version", "5.23.0"),
            (
                "settings",
                r#"[{"name": "greedy", "kwargs": {"do_sample": false}}]"#,
            ),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        Self {
            tensors: vec![
                ("logits".into(), Dtype::F32, vec![4], f32_bytes(&logits)),
                ("input_ids".into(), Dtype::I64, vec![2], i64_bytes(&[0, 1])),
                (
                    "scores.greedy".into(),
                    Dtype::F32,
                    vec![4],
                    f32_bytes(&logits),
                ),
            ],
            meta,
        }
    }

    fn tensor(mut self, name: &str, dtype: Dtype, shape: Vec<usize>, data: Vec<u8>) -> Self {
        self.tensors.retain(|t| t.0 != name);
        self.tensors.push((name.into(), dtype, shape, data));
        self
    }

    fn without_tensor(mut self, name: &str) -> Self {
        self.tensors.retain(|t| t.0 != name);
        self
    }

    fn meta(mut self, key: &str, value: &str) -> Self {
        self.meta.insert(key.into(), value.into());
        self
    }

    fn without_meta(mut self, key: &str) -> Self {
        self.meta.remove(key);
        self
    }

    fn bytes(&self) -> Vec<u8> {
        let views: Vec<(String, TensorView<'_>)> = self
            .tensors
            .iter()
            .map(|(n, d, s, b)| {
                (
                    n.clone(),
                    TensorView::new(*d, s.clone(), b).expect("valid view"),
                )
            })
            .collect();
        serialize(views, Some(self.meta.clone())).expect("serialises")
    }

    fn load(&self) -> Result<Fixture, FixtureError> {
        Fixture::from_bytes(Path::new("t.safetensors"), &self.bytes())
    }

    fn error(&self) -> String {
        match self.load() {
            Ok(_) => panic!("expected an error"),
            Err(e) => e.to_string(),
        }
    }
}

#[test]
fn a_valid_file_loads() {
    let f = Builder::valid().load().expect("valid");
    assert_eq!(f.logits, vec![3.0, 2.0, 2.0, 1.0]);
    assert_eq!(f.input_ids, vec![0, 1]);
    assert_eq!(f.settings.len(), 1);
    assert_eq!(f.settings[0].kwargs.get("do_sample"), Some(&false.into()));
    assert!(f.model.is_none());
}

#[test]
fn truncated_file_names_the_file() {
    let bytes = Builder::valid().bytes();
    for cut in [0, 4, 8, 20, bytes.len() - 1] {
        let err = Fixture::from_bytes(Path::new("t.safetensors"), &bytes[..cut]).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.starts_with("t.safetensors: not a valid safetensors file"),
            "cut {cut}: {msg}"
        );
    }
}

#[test]
fn header_that_lies_about_offsets() {
    let mut bytes = Builder::valid().bytes();
    let text = String::from_utf8_lossy(&bytes).into_owned();
    // The first tensor's offsets are [0,16] or similar; claim far more data.
    let at = text
        .find("\"data_offsets\":[0,")
        .expect("offsets in header");
    let start = at + "\"data_offsets\":[0,".len();
    bytes[start] = b'9';
    let err = Fixture::from_bytes(Path::new("t.safetensors"), &bytes).unwrap_err();
    assert!(matches!(err, FixtureError::Container { .. }), "{err}");
}

#[test]
fn wrong_dtype_names_the_tensor() {
    let b = Builder::valid().tensor("logits", Dtype::F64, vec![4], vec![0; 32]);
    assert_eq!(
        b.error(),
        "t.safetensors: tensor `logits`: dtype is F64, expected F32"
    );
}

#[test]
fn vocab_sizes_that_disagree() {
    let b = Builder::valid().tensor(
        "scores.greedy",
        Dtype::F32,
        vec![3],
        f32_bytes(&[1.0, 2.0, 3.0]),
    );
    assert_eq!(
        b.error(),
        "t.safetensors: tensor `scores.greedy`: has 3 entries but `logits` has 4"
    );
}

#[test]
fn scores_without_a_setting() {
    let b = Builder::valid().tensor("scores.orphan", Dtype::F32, vec![4], f32_bytes(&[0.0; 4]));
    assert_eq!(
        b.error(),
        "t.safetensors: tensor `scores.orphan` has no setting with its kwargs in the `settings` metadata"
    );
}

#[test]
fn setting_without_scores_or_kwargs() {
    let b = Builder::valid().without_tensor("scores.greedy");
    assert_eq!(
        b.error(),
        "t.safetensors: tensor `scores.greedy` is missing"
    );
    let b = Builder::valid().meta("settings", r#"[{"name": "greedy"}]"#);
    assert!(
        b.error().contains("metadata key `settings` is invalid"),
        "{}",
        b.error()
    );
    assert!(
        b.error().contains("missing field `kwargs`"),
        "{}",
        b.error()
    );
}

#[test]
fn missing_and_bad_metadata() {
    assert_eq!(
        Builder::valid().without_meta("format").error(),
        "t.safetensors: metadata key `format` is missing"
    );
    let e = Builder::valid().meta("kind", "dream").error();
    assert_eq!(
        e,
        "t.safetensors: metadata key `kind` is invalid (\"dream\"): expected `model` or `edge`"
    );
}

#[test]
fn nan_and_positive_infinity_are_refused() {
    let b = Builder::valid().tensor(
        "logits",
        Dtype::F32,
        vec![4],
        f32_bytes(&[1.0, f32::NAN, 0.0, 0.0]),
    );
    assert_eq!(b.error(), "t.safetensors: tensor `logits`: entry 1 is NaN");
    let b = Builder::valid().tensor(
        "logits",
        Dtype::F32,
        vec![4],
        f32_bytes(&[1.0, 0.0, f32::INFINITY, 0.0]),
    );
    assert_eq!(b.error(), "t.safetensors: tensor `logits`: entry 2 is inf");
    let b = Builder::valid().tensor(
        "scores.greedy",
        Dtype::F32,
        vec![4],
        f32_bytes(&[1.0, 0.0, f32::NAN, 0.0]),
    );
    assert_eq!(
        b.error(),
        "t.safetensors: tensor `scores.greedy`: entry 2 is NaN"
    );
    // +inf scores are what transformers returns when a penalty overflows f32.
    let b = Builder::valid().tensor(
        "scores.greedy",
        Dtype::F32,
        vec![4],
        f32_bytes(&[1.0, 0.0, f32::INFINITY, 0.0]),
    );
    assert!(b.load().is_ok());
}

#[test]
fn two_dimensional_logits_are_refused() {
    let b = Builder::valid().tensor(
        "logits",
        Dtype::F32,
        vec![2, 2],
        f32_bytes(&[3.0, 2.0, 2.0, 1.0]),
    );
    assert_eq!(
        b.error(),
        "t.safetensors: tensor `logits`: shape is [2, 2], expected one dimension"
    );
}

#[test]
fn missing_file_is_an_io_error() {
    let err = Fixture::load(Path::new("/nonexistent/x.safetensors")).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("/nonexistent/x.safetensors: cannot read fixture"),
        "{err}"
    );
}

#[test]
fn prompt_len_plus_k_that_overflows_is_refused() {
    // Regression: prompt_len + k was added unchecked, so usize::MAX + 1
    // panicked in debug builds and wrapped to 0 (matching an empty context)
    // in release builds.
    let b = Builder::valid()
        .tensor("input_ids", Dtype::I64, vec![0], Vec::new())
        .meta("kind", "model");
    let b = [
        ("model", "m.gguf"),
        ("gguf_sha256", "0"),
        ("prompt_id", "p"),
        ("prompt", "p"),
        ("prompt_len", "18446744073709551615"),
        ("k", "1"),
        ("answer", "a"),
        ("full_answer", "a"),
        ("vocab", "vocab.json"),
    ]
    .into_iter()
    .fold(b, |b, (k, v)| b.meta(k, v));
    assert_eq!(
        b.error(),
        "t.safetensors: tensor `input_ids`: has 0 entries but prompt_len 18446744073709551615 + k 1 \
         = 18446744073709551616"
    );
}

#[cfg(unix)]
#[test]
fn endless_file_is_refused_without_reading_it_all() {
    // Regression: the size limit was checked on the metadata, which says 0
    // for /dev/zero, and then the whole "file" was read: out of memory.
    let e = Fixture::load(Path::new("/dev/zero"))
        .expect_err("not a fixture")
        .to_string();
    assert!(e.starts_with("/dev/zero: more than 268435456 bytes"), "{e}");
    let e = parity_core::Vocab::load(Path::new("/dev/zero"))
        .expect_err("not a vocabulary")
        .to_string();
    assert_eq!(
        e,
        "/dev/zero: vocabulary is larger than the 67108864-byte limit"
    );
}

/// A valid model fixture: the edge builder with `kind` model and every model
/// key, its two input ids being a 2-token prompt and no answer tokens.
fn valid_model() -> Builder {
    [
        ("kind", "model"),
        ("model", "m.gguf"),
        ("gguf_sha256", "0"),
        ("prompt_id", "p"),
        ("prompt", "p"),
        ("prompt_len", "2"),
        ("k", "0"),
        ("answer", ""),
        ("full_answer", "a"),
        ("vocab", "vocab.json"),
    ]
    .into_iter()
    .fold(Builder::valid(), |b, (k, v)| b.meta(k, v))
}

#[test]
fn a_valid_model_file_loads() {
    let f = valid_model().load().expect("valid");
    let m = f.model.expect("model metadata");
    assert_eq!((m.prompt_len, m.k), (2, 0));
    assert_eq!(m.vocab, Path::new("vocab.json"));
}

#[test]
fn every_missing_model_key_is_named_at_once() {
    let b = valid_model()
        .without_meta("prompt")
        .without_meta("k")
        .without_meta("vocab")
        .meta("prompt_len", "two");
    assert_eq!(
        b.error(),
        "t.safetensors: 4 metadata problems: key `prompt` is missing; \
         key `prompt_len` is invalid (\"two\"): expected a whole number; key `k` is missing; \
         key `vocab` is missing"
    );
    match valid_model()
        .without_meta("model")
        .without_meta("torch_version")
        .load()
    {
        Err(FixtureError::Metadata { path, problems }) => {
            assert_eq!(path, Path::new("t.safetensors"));
            assert_eq!(
                problems,
                vec![
                    MetadataProblem::Missing { key: "model" },
                    MetadataProblem::Missing {
                        key: "torch_version"
                    },
                ]
            );
        }
        other => panic!("expected FixtureError::Metadata, got {other:?}"),
    }
}

#[test]
fn every_missing_common_key_is_named_at_once() {
    // A file with no metadata at all: the six keys every fixture needs.
    // Without `kind` nobody knows whether the model keys are required, so
    // they are not listed.
    let b = [
        "format",
        "kind",
        "settings",
        "description",
        "torch_version",
        "transformers_version",
    ]
    .into_iter()
    .fold(Builder::valid(), |b, k| b.without_meta(k));
    assert_eq!(
        b.error(),
        "t.safetensors: 6 metadata problems: key `format` is missing; \
         key `kind` is missing; key `settings` is missing; key `description` is missing; \
         key `torch_version` is missing; key `transformers_version` is missing"
    );
}

#[test]
fn invalid_values_are_listed_with_missing_keys() {
    let b = Builder::valid()
        .meta("format", "sampling-parity-fixture/2")
        .meta("kind", "dream")
        .meta("rejected", "[1]")
        .without_meta("description");
    let e = b.error();
    assert!(e.starts_with("t.safetensors: 4 metadata problems: "), "{e}");
    for part in [
        "key `format` is invalid (\"sampling-parity-fixture/2\"): expected `sampling-parity-fixture/1`",
        "key `kind` is invalid (\"dream\"): expected `model` or `edge`",
        "key `rejected` is invalid (\"[1]\"): invalid type: integer `1`",
        "key `description` is missing",
    ] {
        assert!(e.contains(part), "{part:?} not in {e}");
    }
}

#[test]
fn every_bad_setting_name_is_listed() {
    let b = Builder::valid().meta(
        "settings",
        r#"[{"name": "Greedy", "kwargs": {}}, {"name": "greedy", "kwargs": {}},
            {"name": "greedy", "kwargs": {}}, {"name": "", "kwargs": {}}]"#,
    );
    assert_eq!(
        b.error(),
        "t.safetensors: 3 metadata problems: \
         key `settings` is invalid (\"Greedy\"): setting names are [a-z0-9_]+; \
         key `settings` is invalid (\"greedy\"): setting listed twice; \
         key `settings` is invalid (\"\"): setting names are [a-z0-9_]+"
    );
}

#[test]
fn one_metadata_problem_keeps_its_own_message() {
    assert_eq!(
        valid_model().without_meta("full_answer").error(),
        "t.safetensors: metadata key `full_answer` is missing"
    );
    assert!(matches!(
        valid_model().meta("k", "-1").load(),
        Err(FixtureError::BadMetadata { key: "k", .. })
    ));
}

#[test]
fn metadata_is_reported_before_tensors() {
    // Both the metadata and a tensor are broken: the metadata problems come
    // first, all of them, so one run lists every key to fix.
    let b = valid_model()
        .without_tensor("logits")
        .without_meta("answer")
        .without_meta("prompt_id");
    assert_eq!(
        b.error(),
        "t.safetensors: 2 metadata problems: key `prompt_id` is missing; \
         key `answer` is missing"
    );
    let b = valid_model().without_tensor("logits");
    assert_eq!(b.error(), "t.safetensors: tensor `logits` is missing");
}
