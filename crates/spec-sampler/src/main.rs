//! `spec-sampler`: the spec's sampler over a stream of JSON lines.
//!
//! Reads standard input; every non-blank line is one input object and gets
//! exactly one output line: `{"token_id": .., "probs": [...]}`, or
//! `{"error": "..."}` when the line is invalid (the message also goes to
//! standard error, prefixed with the line number). Blank lines are skipped.
//! A line longer than 64 MiB (`MAX_LINE_BYTES`) is answered with an error without
//! being kept in memory (a 100 MB line would otherwise take ~2 GB to parse).
//! Exit status: 0 when every line was valid, 1 when any was not, 2 on an I/O
//! failure or a usage error. A closed standard output (broken pipe) ends the
//! run quietly with the status earned so far.

use std::io::{self, BufReader, Write};
use std::process::ExitCode;

use parity_core::jsonl;
use spec_sampler::{Input, sample};

const USAGE: &str = "\
usage: spec-sampler < inputs.jsonl

Reads one JSON input per line (the decoding-sampler spec's format, docs/spec.md)
and writes one JSON result per non-blank line: {\"token_id\": N, \"probs\": [...]}
or {\"error\": \"...\"}. Exit status: 0 all lines valid, 1 some line invalid,
2 I/O or usage error.";

fn main() -> ExitCode {
    let mut args = std::env::args_os().skip(1);
    if let Some(arg) = args.next() {
        if arg == "-h" || arg == "--help" {
            let _ = writeln!(io::stdout(), "{USAGE}");
            return ExitCode::SUCCESS;
        }
        if arg == "-V" || arg == "--version" {
            let _ = writeln!(io::stdout(), "spec-sampler {}", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        report(format_args!(
            "unexpected argument {:?}\n\n{USAGE}",
            arg.to_string_lossy()
        ));
        return ExitCode::from(2);
    }

    let input = BufReader::with_capacity(1 << 16, io::stdin().lock());
    let output = io::BufWriter::with_capacity(1 << 16, io::stdout().lock());
    let summary = jsonl::drive(
        input,
        output,
        io::stderr().lock(),
        "spec-sampler: ",
        |line, answer| {
            let input = Input::from_json_slice(line).map_err(|e| e.to_string())?;
            serde_json::to_writer(answer, &sample(&input)).map_err(|e| e.to_string())
        },
    );
    match summary {
        Ok(s) if s.failed == 0 => ExitCode::SUCCESS,
        Ok(_) => ExitCode::from(1),
        Err(error) => {
            report(format_args!(
                "reading standard input or writing standard output: {error}"
            ));
            ExitCode::from(2)
        }
    }
}

/// Writes one diagnostic line to standard error. Unlike `eprintln!`, a closed
/// or full standard error is ignored rather than a panic.
fn report(message: std::fmt::Arguments<'_>) {
    let _ = writeln!(io::stderr().lock(), "spec-sampler: {message}");
}
