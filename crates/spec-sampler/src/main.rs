//! `spec-sampler`: the spec's sampler over a stream of JSON lines.
//!
//! Reads standard input; every non-blank line is one input object and gets
//! exactly one output line: `{"token_id": .., "probs": [...]}`, or
//! `{"error": "..."}` when the line is invalid (the message also goes to
//! standard error, prefixed with the line number). Blank lines are skipped.
//! Exit status: 0 when every line was valid, 1 when any was not, 2 on an I/O
//! failure or a usage error. A closed standard output (broken pipe) ends the
//! run quietly with the status earned so far.

use std::io::{self, BufRead, BufReader, BufWriter, ErrorKind, Read, Write};
use std::process::ExitCode;

use spec_sampler::{Input, sample};

const USAGE: &str = "\
usage: spec-sampler < inputs.jsonl

Reads one JSON input per line (the decoding-sampler spec's format) and writes
one JSON result per non-blank line: {\"token_id\": N, \"probs\": [...]} or
{\"error\": \"...\"}. Exit status: 0 all lines valid, 1 some line invalid,
2 I/O or usage error.";

/// How the run ended, short of an I/O failure.
enum Outcome {
    /// Every line was valid.
    AllValid,
    /// At least one line was invalid.
    SomeInvalid,
}

/// An I/O failure, with what was being done.
struct IoFailure {
    context: &'static str,
    error: io::Error,
}

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

    let stdin = io::stdin().lock();
    let stdout = io::stdout().lock();
    match run(stdin, stdout) {
        Ok(Outcome::AllValid) => ExitCode::SUCCESS,
        Ok(Outcome::SomeInvalid) => ExitCode::from(1),
        Err(IoFailure { context, error }) => {
            report(format_args!("{context}: {error}"));
            ExitCode::from(2)
        }
    }
}

fn run(input: impl Read, output: impl Write) -> Result<Outcome, IoFailure> {
    let mut reader = BufReader::with_capacity(1 << 16, input);
    let mut writer = BufWriter::with_capacity(1 << 16, output);
    let mut line = Vec::new();
    let mut line_number: u64 = 0;
    let mut all_valid = true;
    let outcome = |all_valid: bool| {
        if all_valid {
            Outcome::AllValid
        } else {
            Outcome::SomeInvalid
        }
    };

    loop {
        line.clear();
        let read = reader
            .read_until(b'\n', &mut line)
            .map_err(|error| IoFailure {
                context: "reading standard input",
                error,
            })?;
        if read == 0 {
            break;
        }
        line_number += 1;
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }

        let written = match Input::from_json_slice(&line) {
            Ok(input) => serde_json::to_writer(&mut writer, &sample(&input)),
            Err(error) => {
                all_valid = false;
                report(format_args!("line {line_number}: {error}"));
                serde_json::to_writer(
                    &mut writer,
                    &serde_json::json!({ "error": error.to_string() }),
                )
            }
        }
        .map_err(io::Error::from)
        .and_then(|()| writer.write_all(b"\n"))
        // Flush whenever the next read might block, so an interactive
        // producer gets each answer at once while a batch is written in
        // large chunks.
        .and_then(|()| {
            if reader.buffer().is_empty() {
                writer.flush()
            } else {
                Ok(())
            }
        });
        if let Err(error) = written {
            return write_failure(error, outcome(all_valid));
        }
    }
    match writer.flush() {
        Ok(()) => Ok(outcome(all_valid)),
        Err(error) => write_failure(error, outcome(all_valid)),
    }
}

/// Writes one diagnostic line to standard error. Unlike `eprintln!`, a closed
/// or full standard error is ignored rather than a panic.
fn report(message: std::fmt::Arguments<'_>) {
    let _ = writeln!(io::stderr().lock(), "spec-sampler: {message}");
}

/// A reader that closed our standard output is not an error: stop quietly.
fn write_failure(error: io::Error, so_far: Outcome) -> Result<Outcome, IoFailure> {
    if error.kind() == ErrorKind::BrokenPipe {
        Ok(so_far)
    } else {
        Err(IoFailure {
            context: "writing standard output",
            error,
        })
    }
}
