//! The text output of every `compare` subcommand, pinned with insta.
//!
//! Each test runs the built binary on small committed inputs, with no random
//! draws (`--draws 0` where a command draws), so the whole output is
//! deterministic and takes well under a second. A snapshot holds the exit
//! code, stdout and stderr; its header names the command line.
//!
//! After an intended change: `INSTA_UPDATE=always cargo test --release -p
//! compare --test it snapshots` (or `cargo insta review`), then read the diff
//! of `tests/it/snapshots/*.snap`. With `CI` set, insta writes nothing and a
//! changed output fails.

use std::path::Path;

use crate::helpers::{compare, fixture, snapshot, text};

/// A committed file under the repository root, as an absolute path.
fn repo_file(path: &str) -> String {
    format!("{}/../../{path}", env!("CARGO_MANIFEST_DIR"))
}

/// Pins `compare report` on the SmolLM2 `write_k60` fixture, setting k40p09,
/// every default pair (candle's top-k-then-top-p row with its why and fix).
#[test]
fn report_smollm2_write_k60_k40p09() {
    snapshot!(
        "report_smollm2_write_k60_k40p09",
        &[
            "report",
            "--draws",
            "0",
            "--settings",
            "k40p09",
            &fixture("smollm2/write_k60"),
        ],
        "",
    );
}

/// Pins `compare dist --semantics hf` on three records: top-k 2 with a tie, a
/// repetition penalty, and a temperature of 0 refused (exit 1, error on stderr).
#[test]
fn dist_hf_three_records() {
    snapshot!(
        "dist_hf_three_records",
        &["dist", "--semantics", "hf"],
        concat!(
            r#"{"logits": [3, 2, 2, 1], "params": {"do_sample": true, "top_k": 2}}"#,
            "\n",
            r#"{"logits": [1.0, 0.0, -1.0], "input_ids": [0, 2], "params": {"do_sample": true, "temperature": 0.7, "repetition_penalty": 1.3}}"#,
            "\n",
            r#"{"logits": [1, 0], "params": {"do_sample": true, "temperature": 0}}"#,
            "\n",
        ),
    );
}

/// Pins `compare check --semantics hf-rust`: a sampler that puts all its
/// mass on the top token where transformers samples the whole vocabulary
/// (exit 1, explained), and one that matches on two equal logits.
#[test]
fn check_hf_rust_two_records() {
    snapshot!(
        "check_hf_rust_two_records",
        &["check", "--semantics", "hf-rust"],
        concat!(
            r#"{"logits": [2, 1, 0], "params": {"do_sample": true}, "probs": [1, 0, 0]}"#,
            "\n",
            r#"{"logits": [1, 1], "params": {"do_sample": true}, "probs": [0.5, 0.5]}"#,
            "\n",
        ),
    );
}

/// Pins `compare diff` (default pair hf:candle) on a top-k tie and a top-p record.
#[test]
fn diff_tie_and_top_p() {
    snapshot!(
        "diff_tie_and_top_p",
        &["diff"],
        concat!(
            r#"{"logits": [3, 2, 2, 1], "params": {"do_sample": true, "top_k": 2}}"#,
            "\n",
            r#"{"logits": [1.0, 0.0, -1.0], "params": {"do_sample": true, "temperature": 0.7, "top_p": 0.9}}"#,
            "\n",
        ),
    );
}

/// Pins `compare semantics`: every semantics with its engine, version and params.
#[test]
fn semantics_list() {
    snapshot!("semantics_list", &["semantics"], "");
}

/// Pins `compare request` of temperature 0.7, top-p 0.9 on the ties_3221 fixture.
#[test]
fn request_t07_p09_on_ties_3221() {
    snapshot!(
        "request_t07_p09_on_ties_3221",
        &[
            "request",
            r#"{"temperature": 0.7, "top_p": 0.9}"#,
            &fixture("edge/ties_3221"),
        ],
        "",
    );
}

/// Pins `compare translate` with no kwargs: transformers' defaults, greedy, to candle.
#[test]
fn translate_defaults() {
    snapshot!("translate_defaults", &["translate"], "");
}

/// Pins `compare translate` of T 0.7, top-k 40, top-p 0.9 to candle (the default).
#[test]
fn translate_k40_p09_to_candle() {
    snapshot!(
        "translate_k40_p09_to_candle",
        &[
            "translate",
            "--kwargs",
            r#"{"do_sample": true, "temperature": 0.7, "top_k": 40, "top_p": 0.9}"#,
        ],
        "",
    );
}

/// Pins `compare translate --to llama.cpp` of T 0.7, top-k 40, top-p 0.9, with
/// its proof on the bundled fixtures.
#[test]
fn translate_k40_p09_to_llama_cpp() {
    snapshot!(
        "translate_k40_p09_to_llama_cpp",
        &[
            "translate",
            "--kwargs",
            r#"{"do_sample": true, "temperature": 0.7, "top_k": 40, "top_p": 0.9}"#,
            "--to",
            "llama.cpp",
        ],
        "",
    );
}

/// Pins `compare ties --draws 0`: how each semantics cuts [3, 2, 2, 1] at k = 2.
#[test]
fn ties_default_logits() {
    snapshot!("ties_default_logits", &["ties", "--draws", "0"], "");
}

/// Pins `compare speculative` of a T 0.7 target and a k40p09 draft on ties_3221.
#[test]
fn speculative_on_ties_3221() {
    snapshot!(
        "speculative_on_ties_3221",
        &[
            "speculative",
            "--target",
            r#"hf:{"do_sample":true,"temperature":0.7,"top_k":0}"#,
            "--draft",
            r#"hf:{"do_sample":true,"temperature":0.7,"top_k":40,"top_p":0.9}"#,
            &fixture("edge/ties_3221"),
        ],
        "",
    );
}

/// Pins `compare beam --recorded`: every recorded transformers beam search replayed.
#[test]
fn beam_recorded() {
    snapshot!("beam_recorded", &["beam", "--recorded"], "");
}

/// Pins `compare trace --port llama.cpp` on the first 5 steps of the bicycle_p09
/// trace (llama.cpp's logits are recorded: no model needed).
#[test]
fn trace_llama_cpp_bicycle_p09_5_steps() {
    snapshot!(
        "trace_llama_cpp_bicycle_p09_5_steps",
        &[
            "trace",
            "--port",
            "llama.cpp",
            "--trace",
            &repo_file("fixtures/traces/bicycle_p09.safetensors"),
            "--steps",
            "5",
        ],
        "",
    );
}

/// Pins `compare probe --replay` of the committed llama-server recording.
#[test]
fn probe_replay_llama_server() {
    snapshot!(
        "probe_replay_llama_server",
        &[
            "probe",
            "--replay",
            &repo_file("fixtures/server-probe/llama-server.json"),
        ],
        "",
    );
}

/// Subcommands without a snapshot, and why.
const NOT_SNAPSHOTTED: [(&str, &str); 2] = [
    ("bench", "prints timings of this machine"),
    ("help", "clap's help, not a command's output"),
];

/// Every subcommand `compare --help` lists has a snapshot above, or a reason
/// in `NOT_SNAPSHOTTED`: a new subcommand fails here until it gets one.
#[test]
fn every_subcommand_has_a_snapshot() {
    let out = compare(&["--help"], "");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let help = text(&out.stdout);
    let commands: Vec<&str> = help
        .lines()
        .skip_while(|l| *l != "Commands:")
        .skip(1)
        .take_while(|l| !l.is_empty())
        // A command's line is indented by two; its wrapped description, more.
        .filter(|l| !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(commands.len() >= 10, "no command list in\n{help}");
    let snapshots = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/snapshots");
    for command in commands {
        if NOT_SNAPSHOTTED.iter().any(|(c, _)| *c == command) {
            continue;
        }
        let prefix = command.replace('.', "_");
        let found = std::fs::read_dir(&snapshots)
            .expect("snapshots directory")
            .filter_map(|e| e.ok())
            .any(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                name.starts_with(&format!("{prefix}_")) && name.ends_with(".snap")
            });
        assert!(
            found,
            "`compare {command}` has no snapshot in {} (add one to tests/it/snapshots.rs, or a reason to NOT_SNAPSHOTTED)",
            snapshots.display()
        );
    }
}

/// The widest a help or text-output line may be: the reports wrap at 100
/// columns when stdout is not a terminal, and clap's help at most there.
const MAX_COLUMNS: usize = 100;

/// The lines of `text` wider than [`MAX_COLUMNS`], numbered, for the message.
/// Lines of `text` over [`MAX_COLUMNS`], but for data and errors: a JSON
/// line is data (a program reads it), and an error stays on one line so a
/// search of a log finds the whole message (as cargo's and rustc's do).
fn too_wide(text: &str) -> Vec<String> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.starts_with('{') && !l.starts_with("error: "))
        .filter(|(_, l)| l.chars().count() > MAX_COLUMNS)
        .map(|(i, l)| format!("line {} ({} columns): {l}", i + 1, l.chars().count()))
        .collect()
}

/// Every help text (`compare --help` and each subcommand's) and every line
/// of the snapshots' stdout and stderr fits in 100 columns (clap wraps the
/// help at 100 columns where it cannot read a terminal's width).
#[test]
fn help_and_text_output_fit_in_100_columns() {
    let out = compare(&["--help"], "");
    let help = text(&out.stdout);
    let commands: Vec<&str> = help
        .lines()
        .skip_while(|l| *l != "Commands:")
        .skip(1)
        .take_while(|l| !l.is_empty())
        // A command's line is indented by two; its wrapped description, more.
        .filter(|l| !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .collect();
    assert!(commands.len() >= 10, "no command list in\n{help}");
    let mut wide = Vec::new();
    for args in std::iter::once(vec!["--help"]).chain(commands.iter().map(|c| vec![*c, "--help"])) {
        let out = compare(&args, "");
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            text(&out.stderr)
        );
        for line in too_wide(&text(&out.stdout)) {
            wide.push(format!("compare {}: {line}", args.join(" ")));
        }
    }
    let snapshots = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/snapshots");
    let mut files: Vec<_> = std::fs::read_dir(&snapshots)
        .expect("snapshots directory")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "snap"))
        .collect();
    files.sort();
    assert!(files.len() >= 10, "{}", snapshots.display());
    for file in files {
        let snap = std::fs::read_to_string(&file).expect("read snapshot");
        // insta's header (source, description, expression) sits between the
        // first two `---` lines; the output follows.
        let body = snap.splitn(3, "---\n").nth(2).unwrap_or_default();
        for line in too_wide(body) {
            wide.push(format!("{}: {line}", file.display()));
        }
    }
    assert!(
        wide.is_empty(),
        "{} lines over {MAX_COLUMNS} columns:\n{}",
        wide.len(),
        wide.join("\n")
    );
}
