//! The fuzz corpus (`fuzz/corpus/<target>/`) and crash reproducers
//! (`fuzz/regressions/<target>/`), replayed through the fuzz harnesses themselves.

use std::path::{Path, PathBuf};

#[path = "../../../../../fuzz/src/lib.rs"]
#[allow(dead_code)]
mod harness;

/// Every file of `fuzz/corpus/<target>/` and `fuzz/regressions/<target>/`.
fn corpus(target: &str) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let mut files = Vec::new();
    for dir in ["corpus", "regressions"] {
        let Ok(entries) = std::fs::read_dir(root.join(dir).join(target)) else {
            continue;
        };
        for entry in entries {
            let path = entry.expect("corpus entry").path();
            if path.is_file() {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// Replays one target's corpus through its harness, naming the file that fails.
fn replay(target: &str, harness: fn(&[u8]), at_least: usize) {
    let files = corpus(target);
    assert!(
        files.len() >= at_least,
        "{target}: only {} corpus files",
        files.len()
    );
    for path in files {
        let data = std::fs::read(&path).expect("read corpus file");
        let result = std::panic::catch_unwind(|| harness(&data));
        assert!(
            result.is_ok(),
            "{target}: {} fails its harness",
            path.display()
        );
    }
}

#[test]
fn fuzz_corpus_beam_recording_replays() {
    replay("beam_recording", harness::beam_recording, 8);
}

#[test]
fn fuzz_corpus_probe_replay_replays() {
    replay("probe_replay", harness::probe_replay, 5);
}

#[test]
fn fuzz_corpus_compare_dist_replays() {
    replay("compare_dist", harness::compare_dist, 10);
}

#[test]
fn fuzz_corpus_compare_diff_replays() {
    // The dist corpus: the same records, read as generate kwargs.
    replay("compare_dist", harness::compare_diff, 10);
}

#[test]
fn fuzz_corpus_compare_request_replays() {
    // The dist corpus: each record's params read as an OpenAI-style request.
    replay("compare_dist", harness::compare_request, 10);
}

#[test]
fn fuzz_corpus_gguf_metadata_replays() {
    replay("gguf_metadata", harness::gguf_metadata, 8);
}

#[test]
fn fuzz_corpus_hf_sampler_replays() {
    replay("hf_sampler", harness::hf_sampler, 20);
}

#[test]
fn fuzz_corpus_spec_line_replays() {
    replay("spec_line", harness::spec_line, 10);
}

#[test]
fn fuzz_corpus_fixture_replays() {
    replay("fixture", harness::fixture, 10);
}

#[test]
fn fuzz_corpus_speculative_args_replays() {
    replay("speculative_args", harness::speculative_args, 7);
}

#[test]
fn fuzz_corpus_compare_check_replays() {
    replay("compare_check", harness::compare_check, 5);
}

#[test]
fn fuzz_corpus_arrays_replays() {
    replay("arrays", harness::arrays, 10);
}
