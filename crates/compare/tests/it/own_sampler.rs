//! `compare check`: a user's own probabilities against a semantics, from
//! JSON lines and from binary files; and the record reader refusing what is
//! not a record. The probabilities checked are transformers' own, recorded
//! in the fixtures (softmax of `scores.<setting>`), and the same with one
//! token added past the top-p cut.

use parity_core::Fixture;
use parity_core::metrics::softmax_f64;
use serde_json::{Value, json};

use crate::helpers::{compare, fixture, text, usage_error};

/// hello_k7's logits, its p09 kwargs and transformers' recorded p09
/// distribution.
fn recorded_p09() -> (Fixture, serde_json::Map<String, Value>, Vec<f64>) {
    let fx = Fixture::load(std::path::Path::new(&fixture("smollm2/hello_k7"))).expect("fixture");
    let setting = fx.setting("p09").expect("p09").clone();
    let probs = softmax_f64(&setting.scores);
    (fx, setting.kwargs, probs)
}

fn record(fx: &Fixture, kwargs: &serde_json::Map<String, Value>, probs: &[f64]) -> String {
    json!({
        "logits": fx.logits,
        "input_ids": fx.input_ids,
        "prompt_len": fx.model.as_ref().map(|m| m.prompt_len),
        "params": kwargs,
        "probs": probs,
    })
    .to_string()
}

#[test]
fn transformers_recorded_probabilities_pass_and_one_token_too_many_is_named() {
    let (fx, kwargs, probs) = recorded_p09();
    // The heaviest token transformers' top-p cut drops.
    let extra = (0..probs.len())
        .filter(|&i| probs[i] == 0.0)
        .max_by(|&a, &b| fx.logits[a].total_cmp(&fx.logits[b]).then(b.cmp(&a)))
        .expect("a cut token");
    let mut wrong = probs.clone();
    wrong[extra] = 0.01;
    let total: f64 = wrong.iter().sum();
    wrong.iter_mut().for_each(|p| *p /= total);
    let input = format!(
        "{}\n{}\n",
        record(&fx, &kwargs, &probs),
        record(&fx, &kwargs, &wrong)
    );
    let out = compare(
        &["check", "--semantics", "hf-rust", "--format", "json"],
        &input,
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let lines: Vec<Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["record"], 1);
    assert_eq!(lines[0]["verdict"], "same");
    assert!(lines[0].get("explanation").is_none());
    assert!(lines[0].get("probs").is_none(), "sparse unless --dense");
    assert_eq!(lines[1]["verdict"], "differs");
    assert_eq!(lines[1]["only_yours"][0]["id"], extra);
    let why = lines[1]["explanation"].as_str().expect("explanation");
    assert!(
        why.contains(&format!("1 token hf-rust never draws: token {extra} (p ")),
        "{why}"
    );
    // Only the first record: exit 0; text for people; --dense adds the vector.
    let first = record(&fx, &kwargs, &probs);
    let out = compare(
        &[
            "check",
            "--semantics",
            "hf-rust",
            "--dense",
            "--format",
            "json",
        ],
        &first,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let line: Value = serde_json::from_str(text(&out.stdout).trim()).expect("JSON");
    assert_eq!(
        line["probs"].as_array().expect("dense").len(),
        fx.logits.len()
    );
    let out = compare(&["check", "--semantics", "hf-rust"], &first);
    assert!(text(&out.stdout).starts_with("record 1: same against hf-rust  kept "));
}

#[test]
fn binary_files_without_project_metadata() {
    let (fx, kwargs, probs) = recorded_p09();
    let dir = std::env::temp_dir().join(format!("sp-check-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let bytes_f32: Vec<u8> = fx.logits.iter().flat_map(|x| x.to_le_bytes()).collect();
    let view = safetensors::tensor::TensorView::new(
        safetensors::Dtype::F32,
        vec![1, fx.logits.len()],
        &bytes_f32,
    )
    .expect("view");
    let logits = dir.join("logits.safetensors");
    safetensors::serialize_to_file([("logits", view)], None, &logits).expect("write");
    let bytes_f64: Vec<u8> = probs.iter().flat_map(|x| x.to_le_bytes()).collect();
    let view = safetensors::tensor::TensorView::new(
        safetensors::Dtype::F64,
        vec![probs.len()],
        &bytes_f64,
    )
    .expect("view");
    let yours = dir.join("probs.safetensors");
    safetensors::serialize_to_file([("p", view.clone()), ("q", view)], None, &yours)
        .expect("write");
    let params = Value::Object(kwargs).to_string();
    let (l, p) = (
        logits.display().to_string(),
        format!("{}:q", yours.display()),
    );
    let out = compare(
        &[
            "check",
            "--semantics",
            "hf-rust",
            "--logits",
            &l,
            "--probs",
            &p,
            "--params",
            &params,
            "--format",
            "json",
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let line: Value = serde_json::from_str(text(&out.stdout).trim()).expect("JSON");
    assert_eq!(line["verdict"], "same");
    // Two tensors and no name: the error lists them.
    let bare = yours.display().to_string();
    let out = compare(
        &[
            "check",
            "--semantics",
            "hf-rust",
            "--logits",
            &l,
            "--probs",
            &bare,
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("--probs: ")
            && err.contains("holds 2 tensors (p, q); say which one with FILE:NAME"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_bare_json_array_is_not_a_record() {
    // serde once read it by position as [logits, input_ids]: a greedy record, exit 0.
    for command in [
        vec!["dist", "--semantics", "hf-rust"],
        vec!["diff"],
        vec!["check", "--semantics", "hf-rust"],
    ] {
        let out = compare(&command, "[[3,2,1],[1,2,0]]\n");
        assert_eq!(out.status.code(), Some(1), "{command:?}");
        let err = text(&out.stderr);
        assert!(
            err.contains("a bare JSON array, not a record; a record is one JSON object per line"),
            "{command:?}: {err}"
        );
    }
}

#[test]
fn check_records_say_what_they_lack() {
    let out = compare(
        &["check", "--semantics", "hf-rust"],
        "{\"logits\": [1, 2]}\n{\"logits\": [1, 2], \"probs\": [0.5, 0.25]}\n",
    );
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("line 1: a check record carries your sampler's `probs`"),
        "{err}"
    );
    assert!(err.contains("line 2: `probs` sum to 0.75, not 1"), "{err}");
    // dist refuses probs (they would be ignored).
    let out = compare(
        &["dist", "--semantics", "hf-rust"],
        "{\"logits\": [1, 2], \"probs\": [0.5, 0.5]}\n",
    );
    assert!(text(&out.stderr).contains("`probs` is read by `compare check`"));
    usage_error(
        "check",
        &["--semantics", "hf-rust", "--probs", "x.npy"],
        "--logits",
    );
    usage_error("check", &["--semantics", "nope"], "unknown semantics");
    let out = compare(
        &[
            "check",
            "--semantics",
            "hf-rust",
            "--logits",
            "/nonexistent.npy",
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--logits needs --probs FILE or --logprobs FILE"));
}
