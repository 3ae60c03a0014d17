//! `compare beam` end to end: every recorded transformers run reproduced,
//! exit 1 when a recording is not, the default comparison on a recorded
//! configuration, and every usage error.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use crate::helpers::{compare, text};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
}

#[test]
fn recorded_every_run_is_reproduced() {
    let out = compare(&["beam", "--recorded"], "");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("transformers_beams.jsonl: 288 of 288 reproduced"),
        "{stdout}"
    );
    assert!(
        stdout.contains("smollm2_beams.jsonl: 8 of 8 reproduced (max |score difference| 0.0e0)"),
        "{stdout}"
    );

    let out = compare(&["beam", "--recorded", "--format", "json"], "");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let files = doc["files"].as_array().expect("files");
    let totals: Vec<(u64, u64)> = files
        .iter()
        .map(|f| {
            (
                f["total"].as_u64().expect("n"),
                f["reproduced"].as_u64().expect("n"),
            )
        })
        .collect();
    assert_eq!(totals, vec![(288, 288), (8, 8)]);
    // transformers' float32 log_softmax against the replay's: 1.9e-6 at most.
    assert!(files[0]["max_score_diff"].as_f64().expect("diff") < 1e-5);
}

/// `beam --recorded` on a copy of the bundled fixtures whose toy-model
/// recording `write` makes (the SmolLM2 one copied as it is), found through
/// `SAMPLING_PARITY_FIXTURES`.
fn recorded_with(tag: &str, write: impl FnOnce(&Path)) -> Output {
    let dir = std::env::temp_dir().join(format!("compare-beam-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("smollm2")).expect("temp dir");
    std::fs::create_dir_all(dir.join("beam")).expect("temp dir");
    write(&dir.join("beam/transformers_beams.jsonl"));
    std::fs::copy(
        fixtures().join("beam/smollm2_beams.jsonl"),
        dir.join("beam/smollm2_beams.jsonl"),
    )
    .expect("copy");
    let out = Command::new(env!("CARGO_BIN_EXE_compare"))
        .args(["beam", "--recorded"])
        .env("SAMPLING_PARITY_FIXTURES", &dir)
        .output()
        .expect("runs");
    let _ = std::fs::remove_dir_all(&dir);
    out
}

/// A recording over 64 MiB (a sparse file of zeros) is refused after reading
/// the limit, not read whole: exit 2 naming the file and the limit.
#[test]
fn an_oversized_recording_is_refused_without_reading_it_all() {
    let out = recorded_with("big", |path| {
        let big = std::fs::File::create(path).expect("create");
        big.set_len(65 << 20).expect("sparse 65 MiB");
    });
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("transformers_beams.jsonl: more than 67108864 bytes"),
        "{stderr}"
    );
}

/// A copy of the recordings with one score moved by 1e-3: exit 1, and the
/// run is named.
#[test]
fn recorded_exits_1_when_a_run_is_not_reproduced() {
    let out = recorded_with("tampered", |path| {
        let toy = std::fs::read_to_string(fixtures().join("beam/transformers_beams.jsonl"))
            .expect("recording");
        // m1_b2_lp1.0_F_r1 recorded -0.7170367240905762.
        let tampered = toy.replacen("-0.7170367240905762]", "-0.7180367240905762]", 1);
        assert_ne!(tampered, toy);
        std::fs::write(path, tampered).expect("write");
    });
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("287 of 288 reproduced"), "{stdout}");
    assert!(
        stdout.contains("transformers_beams.jsonl:2 m1_b2_lp1.0_F_r1"),
        "{stdout}"
    );
}

/// The defaults (num_beams 2, length_penalty 1, early_stopping false, one
/// sequence, 6 new tokens) are recorded for toy model 1 and prompt [7, 4]:
/// transformers generated [8, 9, 0, 2] with score -0.7170367.
#[test]
fn default_comparison_on_the_toy_models_and_smollm2() {
    let out = compare(&["beam", "--format", "json"], "");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let cases = doc["cases"].as_array().expect("cases");
    assert_eq!(
        cases.len(),
        6 + 8,
        "six toy models and prompts, eight SmolLM2 runs"
    );
    let first = &cases[0];
    assert_eq!(first["prompt"], serde_json::json!([7, 4]));
    let best = &first["transformers"]["beams"][0];
    assert_eq!(best["generated"], serde_json::json!([8, 9, 0, 2]));
    assert!((best["score"].as_f64().expect("score") + 0.717_036_7).abs() < 1e-6);
    assert_eq!(first["recorded"]["reproduced"], true);
    // Every SmolLM2 run is a recording, reproduced.
    for c in &cases[6..] {
        assert_eq!(c["recorded"]["reproduced"], true, "{c}");
    }
    // The tutorial's best sequence matches transformers' on some cases and not on others.
    let same = cases.iter().filter(|c| c["same_best"] == true).count();
    assert!(same > 0 && same < cases.len(), "{same}");

    let out = compare(&["beam"], "");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("-0.7170  [8, 9, 0, 2]"), "{stdout}");
    assert!(stdout.contains("recorded by transformers 5.23: reproduced"));
    assert!(stdout.lines().all(|l| l.chars().count() <= 100), "{stdout}");
}

fn usage_error(args: &[&str], expected: &str) {
    crate::helpers::usage_error("beam", args, expected);
}

#[test]
fn usage_errors() {
    usage_error(
        &["--num-beams", "0"],
        "--num-beams: 0, but beam search needs",
    );
    usage_error(
        &["--num-beams", "1"],
        "transformers then runs greedy decoding",
    );
    usage_error(&["--num-beams", "65"], "--num-beams: 65 is more than 64");
    usage_error(
        &["--num-beams", "2", "--num-return-sequences", "3"],
        "--num-return-sequences: 3 is more than --num-beams 2",
    );
    usage_error(
        &["--num-return-sequences", "0"],
        "--num-return-sequences: 0",
    );
    usage_error(
        &["--max-new-tokens", "0"],
        "--max-new-tokens: 0 is not in 1..=1000",
    );
    usage_error(
        &["--length-penalty", "NaN"],
        "--length-penalty: NaN is not a finite",
    );
    usage_error(
        &["--early-stopping", "sometimes"],
        "invalid value 'sometimes'",
    );
    usage_error(&["--recorded", "--num-beams", "3"], "cannot be used with");
}
