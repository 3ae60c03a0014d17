//! The stream: blank input, a 100 MB line, a closed standard output.

use std::io::Write;
use std::process::{Command, Stdio};

use super::helpers::{SPEC, hf};
use crate::helpers::{COMPARE, run, text_lossy, with_closed_stdout};

const TIES_FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../fixtures/edge/ties_3221.safetensors"
);

#[test]
fn empty_and_blank_input_is_a_usage_error_with_no_output() {
    // Like `diff` (issue #39): a batch that answers nothing is no success.
    for semantics in ["hf", "spec", "candle"] {
        for input in ["", "\n", "  \n\t\n\r\n"] {
            let out = run(
                &["dist", "--semantics", semantics],
                input.as_bytes().to_vec(),
            );
            assert_eq!(out.status.code(), Some(2), "{semantics} {input:?}");
            assert!(
                out.stdout.is_empty()
                    && String::from_utf8_lossy(&out.stderr).contains("nothing compared"),
                "{semantics} {input:?}"
            );
        }
    }
}

#[test]
fn a_100_mb_line_is_refused_and_the_next_line_answered() {
    // The line is streamed into the pipe; compare drops it once it passes
    // 64 MiB instead of buffering all of it.
    let mut child = Command::new(COMPARE)
        .args(["dist", "--semantics", "spec"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("compare starts");
    let mut pipe = child.stdin.take().expect("stdin");
    let writer = std::thread::spawn(move || -> std::io::Result<()> {
        pipe.write_all(b"{\"logits\": [")?;
        let chunk = "0,".repeat(1 << 19); // 1 MiB
        for _ in 0..100 {
            pipe.write_all(chunk.as_bytes())?;
        }
        pipe.write_all(b"0]}\n")?;
        writeln!(pipe, r#"{{"logits": [0, 0], "params": {{{SPEC}}}}}"#)
    });
    let out = child.wait_with_output().expect("compare finishes");
    writer
        .join()
        .expect("writer")
        .expect("compare read all input");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text_lossy(&out.stdout),
        "{\"error\":\"line is longer than 67108864 bytes; refusing to read it\"}\n\
         {\"kept\":2,\"probs\":[0.5,0.5],\"tokens\":[1]}\n"
    );
    assert_eq!(
        text_lossy(&out.stderr),
        "error: line 1: line is longer than 67108864 bytes; refusing to read it\n"
    );
}

#[test]
fn a_closed_standard_output_ends_every_command_quietly() {
    let records = format!("{}\n", hf(r#"{"do_sample": true}"#)).repeat(2000);
    let runs: [(&[&str], &[u8]); 5] = [
        (&["dist", "--semantics", "hf"], records.as_bytes()),
        (
            &[
                "translate",
                "--kwargs",
                r#"{"do_sample": true, "top_k": 40}"#,
            ],
            b"",
        ),
        (&["ties", "--draws", "100"], b""),
        (
            &[
                "report",
                "--draws",
                "10",
                "--settings",
                "top_k2",
                TIES_FIXTURE,
            ],
            b"",
        ),
        (&["--help"], b""),
    ];
    for (args, stdin) in runs {
        let out = with_closed_stdout(args, stdin);
        let stderr = text_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
        assert!(
            !stderr.contains("panicked") && !stderr.contains("Broken pipe"),
            "{args:?}: {stderr}"
        );
    }
}
