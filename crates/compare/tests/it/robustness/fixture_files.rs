//! Fixture files: truncated, lying, mistyped and endless safetensors files.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::helpers::{run, text_lossy};

/// A safetensors file from its parts: 8-byte header length, JSON header
/// (padded to 8 bytes), data.
fn safetensors(meta: &[(&str, &str)], tensors: &[(&str, &str, &[usize], &[u8])]) -> Vec<u8> {
    let mut header = serde_json::Map::new();
    header.insert(
        "__metadata__".into(),
        meta.iter()
            .map(|(k, v)| ((*k).to_string(), Value::from(*v)))
            .collect(),
    );
    let mut data = Vec::new();
    for (name, dtype, shape, bytes) in tensors {
        let start = data.len();
        data.extend_from_slice(bytes);
        header.insert(
            (*name).into(),
            serde_json::json!({"dtype": dtype, "shape": shape, "data_offsets": [start, data.len()]}),
        );
    }
    let mut header = serde_json::to_vec(&header).expect("header");
    while !header.len().is_multiple_of(8) {
        header.push(b' ');
    }
    let mut file = (header.len() as u64).to_le_bytes().to_vec();
    file.extend(header);
    file.extend(data);
    file
}

fn f32s(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

const META: [(&str, &str); 6] = [
    ("format", "sampling-parity-fixture/1"),
    ("kind", "edge"),
    ("description", "robustness test"),
    ("torch_version", "2.15.0"),
    ("transformers_version", "5.23.0"),
    (
        "settings",
        r#"[{"name": "top_k2", "kwargs": {"do_sample": true, "top_k": 2}}]"#,
    ),
];

/// A valid edge fixture: logits [3, 2, 2, 1], transformers' top-k 2 scores.
fn valid_fixture() -> Vec<u8> {
    let ninf = f32::NEG_INFINITY;
    safetensors(
        &META,
        &[
            ("logits", "F32", &[4], &f32s(&[3.0, 2.0, 2.0, 1.0])),
            ("input_ids", "I64", &[1], &0i64.to_le_bytes()),
            ("scores.top_k2", "F32", &[4], &f32s(&[3.0, 2.0, 2.0, ninf])),
        ],
    )
}

/// Writes `bytes` to a file named for the test and runs `compare report` on it.
fn report_on(name: &str, bytes: &[u8]) -> (Option<i32>, String, String, PathBuf) {
    let path =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("robustness-{name}.safetensors"));
    std::fs::write(&path, bytes).expect("write fixture");
    let p = path.to_str().expect("utf-8 path");
    let out = run(&["report", "--draws", "10", p], Vec::new());
    (
        out.status.code(),
        text_lossy(&out.stdout),
        text_lossy(&out.stderr),
        path,
    )
}

#[track_caller]
fn report_refuses(name: &str, bytes: &[u8], message: &str) {
    let (status, stdout, stderr, path) = report_on(name, bytes);
    assert_eq!(status, Some(2), "{name}: {stderr}");
    assert!(stdout.is_empty(), "{name}: {stdout}");
    let expected = format!("error: {}: {message}", path.display());
    assert!(
        stderr.starts_with(&expected),
        "{name}:\nexpected {expected:?}\ngot {stderr:?}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn a_valid_hand_made_fixture_is_reported() {
    let (status, stdout, stderr, _) = report_on("valid", &valid_fixture());
    assert_eq!(status, Some(0), "{stderr}");
    assert!(stdout.contains("top_k2"), "{stdout}");
}

#[test]
fn truncated_fixture_names_the_file() {
    let whole = valid_fixture();
    report_refuses(
        "truncated-data",
        &whole[..whole.len() - 3],
        "not a valid safetensors file: ",
    );
    report_refuses(
        "truncated-header",
        &whole[..20],
        "not a valid safetensors file: ",
    );
    report_refuses(
        "truncated-length",
        &whole[..5],
        "not a valid safetensors file: ",
    );
    report_refuses("empty", b"", "not a valid safetensors file: ");
    report_refuses(
        "text",
        b"this is not a fixture at all\n",
        "not a valid safetensors file: ",
    );
}

#[test]
fn header_that_lies_about_offsets_names_the_file() {
    let lie = |header_edit: &dyn Fn(&mut String)| {
        let whole = valid_fixture();
        let n = u64::from_le_bytes(whole[..8].try_into().expect("8 bytes")) as usize;
        let mut header = String::from_utf8(whole[8..8 + n].to_vec()).expect("utf-8 header");
        let before = header.clone();
        header_edit(&mut header);
        assert_ne!(before, header, "the edit must change the header");
        let mut file = (header.len() as u64).to_le_bytes().to_vec();
        file.extend(header.as_bytes());
        file.extend(&whole[8 + n..]);
        file
    };
    // Offsets past the end of the data.
    let past = lie(&|h: &mut String| *h = h.replace("[24,40]", "[24,4000]"));
    report_refuses("offsets-past-end", &past, "not a valid safetensors file: ");
    // Overlapping tensors.
    let overlap = lie(&|h: &mut String| *h = h.replace("[24,40]", "[8,24]"));
    report_refuses(
        "offsets-overlap",
        &overlap,
        "not a valid safetensors file: ",
    );
    // A header length larger than the file.
    let mut long = valid_fixture();
    long[..8].copy_from_slice(&(1u64 << 40).to_le_bytes());
    report_refuses("header-length", &long, "not a valid safetensors file: ");
    // A header length of 2^64 - 1 (overflows any `8 + n`).
    let mut huge = valid_fixture();
    huge[..8].copy_from_slice(&u64::MAX.to_le_bytes());
    report_refuses("header-length-max", &huge, "not a valid safetensors file: ");
}

#[test]
fn fixture_of_the_wrong_dtype_names_the_tensor() {
    let ninf = f32::NEG_INFINITY;
    let f16 = safetensors(
        &META,
        &[
            ("logits", "F16", &[8], &f32s(&[3.0, 2.0, 2.0, 1.0])),
            ("input_ids", "I64", &[1], &0i64.to_le_bytes()),
            ("scores.top_k2", "F32", &[4], &f32s(&[3.0, 2.0, 2.0, ninf])),
        ],
    );
    report_refuses(
        "dtype-f16",
        &f16,
        "tensor `logits`: dtype is F16, expected F32",
    );
    let ids = safetensors(
        &META,
        &[
            ("logits", "F32", &[4], &f32s(&[3.0, 2.0, 2.0, 1.0])),
            ("input_ids", "F64", &[1], &0f64.to_le_bytes()),
            ("scores.top_k2", "F32", &[4], &f32s(&[3.0, 2.0, 2.0, ninf])),
        ],
    );
    report_refuses(
        "dtype-ids",
        &ids,
        "tensor `input_ids`: dtype is F64, expected I64",
    );
}

#[test]
fn vocab_sizes_that_disagree_name_the_tensor() {
    let short = safetensors(
        &META,
        &[
            ("logits", "F32", &[4], &f32s(&[3.0, 2.0, 2.0, 1.0])),
            ("input_ids", "I64", &[1], &0i64.to_le_bytes()),
            ("scores.top_k2", "F32", &[3], &f32s(&[3.0, 2.0, 2.0])),
        ],
    );
    report_refuses(
        "vocab-mismatch",
        &short,
        "tensor `scores.top_k2`: has 3 entries but `logits` has 4",
    );
}

#[cfg(unix)]
#[test]
fn an_endless_file_is_refused_without_reading_it_all() {
    // Regression: /dev/zero reports size 0 and was read until out of memory.
    let out = run(&["report", "/dev/zero"], Vec::new());
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text_lossy(&out.stderr).starts_with("error: /dev/zero: more than 268435456 bytes"),
        "{}",
        text_lossy(&out.stderr)
    );
}
