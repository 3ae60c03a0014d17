//! Tokens shown as text beside their ids in `compare diff` and `compare ties`
//! with `--vocab`, and in the report's JSON.

use comparison::report::Report;

use crate::helpers::{compare, fixture, text};

/// The first four tokens of SmolLM2's vocab.json, as a vocabulary file: the
/// records here have four logits, and `--vocab` must have one token per logit.
fn vocab() -> String {
    let full = format!(
        "{}/../../fixtures/smollm2/vocab.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let tokens: Vec<String> =
        serde_json::from_slice(&std::fs::read(full).expect("vocab.json")).expect("JSON");
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("tokens-vocab");
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let path = dir.join(format!("vocab4-{}.json", std::process::id()));
    std::fs::write(&path, serde_json::to_vec(&tokens[..4]).expect("JSON")).expect("write");
    path.display().to_string()
}

#[test]
fn diff_and_ties_show_token_text_with_a_vocabulary() {
    // top-k 2 on [3, 2, 2, 1]: transformers keeps id 2 too, candle does not.
    // vocab.json ids 0, 1, 2: "<|endoftext|>", "<|im_start|>", "<|im_end|>".
    let record = r#"{"logits": [3, 2, 2, 1], "params": {"do_sample": true, "top_k": 2}}"#;
    let v = vocab();
    let out = compare(&["diff", "--pairs", "hf:candle", "--vocab", &v], record);
    let s = text(&out.stdout);
    assert!(s.contains(r#"only hf: "<|im_end|>" (2) 2.12e-1"#), "{s}");
    let out = compare(
        &[
            "diff",
            "--pairs",
            "hf:candle",
            "--vocab",
            &v,
            "--format",
            "json",
        ],
        record,
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON line");
    let only = &doc["rows"][0]["only_left"][0];
    assert_eq!(
        (only["id"].as_u64(), only["text"].as_str()),
        (Some(2), Some("<|im_end|>"))
    );

    let out = compare(&["ties", "--draws", "10", "--vocab", &v], "");
    let s = text(&out.stdout);
    let line = |s: &str, name: &str| {
        s.lines()
            .find(|l| l.starts_with(&format!("  {name} ")))
            .unwrap_or_else(|| panic!("no {name} line in {s}"))
            .to_string()
    };
    assert!(
        line(&s, "hf-rust")
            .contains(r#"keeps ["<|endoftext|>" (0), "<|im_start|>" (1), "<|im_end|>" (2)]"#),
        "{s}"
    );
    // Without a vocabulary, ids as before.
    let s = text(&compare(&["ties", "--draws", "10"], "").stdout);
    assert!(line(&s, "hf-rust").contains("keeps [0, 1, 2]"), "{s}");
}

#[test]
fn report_json_carries_decoded_text_and_incomplete_bytes() {
    let out = compare(
        &[
            "report",
            "--format",
            "json",
            "--draws",
            "0",
            "--settings",
            "t07_default",
            "--pairs",
            "hf:candle",
            &fixture("smollm2/hello_k0"),
        ],
        "",
    );
    let r: Report = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", text(&out.stderr)));
    let tokens: Vec<_> = r.rows.iter().flat_map(|x| &x.top).collect();
    // vocab.json[19556] is "Hello" and [176] is "å": byte 0xE5 alone, the
    // first byte of a three-byte character.
    let hello = tokens
        .iter()
        .find(|t| t.id == 19556)
        .expect("Hello in the top");
    assert_eq!(
        (hello.token.as_deref(), hello.text.as_deref()),
        (Some("Hello"), Some("Hello"))
    );
    let e5 = tokens
        .iter()
        .find(|t| t.id == 176)
        .expect("id 176 in the top");
    assert_eq!(
        (e5.token.as_deref(), e5.text.as_deref(), e5.bytes.as_deref()),
        (Some("å"), None, Some(&[0xE5][..]))
    );
    assert_eq!(e5.label(), "<0xE5> (176)");
}

#[test]
fn dist_names_drawn_tokens_with_a_vocabulary() {
    // softmax([3, 2, 2, 1]) = 0.534, 0.197, 0.197, 0.072: the cumulative mass
    // first reaches u = 0.7 at id 1 (0.534 + 0.197 = 0.731), vocab.json[1] =
    // "<|im_start|>".
    let record = r#"{"logits": [3, 2, 2, 1], "params": {"temperature": 1.0, "top_k": 0, "top_p": 1.0, "repetition_penalty": 1.0, "u": 0.7}}"#;
    let out = compare(
        &["dist", "--semantics", "spec", "--vocab", &vocab()],
        record,
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON line");
    assert_eq!(doc["tokens"], serde_json::json!([1]));
    assert_eq!(doc["token_text"][0]["text"], "<|im_start|>");
    // Without --vocab the answer has no token_text.
    let out = compare(&["dist", "--semantics", "spec"], record);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON line");
    assert!(doc.get("token_text").is_none(), "{doc}");
}
