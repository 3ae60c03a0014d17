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

use std::io::{self, BufRead, BufReader, BufWriter, ErrorKind, Read, Write};
use std::process::ExitCode;

use spec_sampler::{Input, sample};

/// Longest input line accepted, as in `compare dist`: a 262,144-entry
/// vocabulary written with full precision is about 6 MB.
const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

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
        let read = read_line_bounded(&mut reader, &mut line, MAX_LINE_BYTES).map_err(|error| {
            IoFailure {
                context: "reading standard input",
                error,
            }
        })?;
        let parsed = match read {
            LineRead::Eof => break,
            LineRead::TooLong => Err(format!(
                "line is longer than {MAX_LINE_BYTES} bytes; refusing to read it"
            )),
            LineRead::Line if line.iter().all(u8::is_ascii_whitespace) => {
                line_number += 1;
                continue;
            }
            LineRead::Line => Input::from_json_slice(&line).map_err(|e| e.to_string()),
        };
        line_number += 1;

        let written = match parsed {
            Ok(input) => serde_json::to_writer(&mut writer, &sample(&input)),
            Err(message) => {
                all_valid = false;
                report(format_args!("line {line_number}: {message}"));
                serde_json::to_writer(&mut writer, &serde_json::json!({ "error": message }))
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

/// What [`read_line_bounded`] found.
enum LineRead {
    /// A line (without its `\n`) is in the buffer.
    Line,
    /// A line over the limit was read to its end and dropped.
    TooLong,
    /// No more input.
    Eof,
}

/// Reads the next line into `line`, without its `\n`. A line of more than
/// `max` bytes is consumed to its end but not kept, so memory stays bounded
/// whatever the input.
fn read_line_bounded(
    reader: &mut impl BufRead,
    line: &mut Vec<u8>,
    max: usize,
) -> io::Result<LineRead> {
    line.clear();
    let mut length = 0usize;
    let mut any = false;
    loop {
        let buf = match reader.fill_buf() {
            Ok(buf) => buf,
            Err(error) if error.kind() == ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        };
        if buf.is_empty() {
            break;
        }
        any = true;
        let (content, used, end) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (&buf[..i], i + 1, true),
            None => (buf, buf.len(), false),
        };
        length = length.saturating_add(content.len());
        if length <= max {
            line.extend_from_slice(content);
        } else {
            line.clear();
        }
        reader.consume(used);
        if end {
            break;
        }
    }
    Ok(match (any, length > max) {
        (false, _) => LineRead::Eof,
        (true, true) => LineRead::TooLong,
        (true, false) => LineRead::Line,
    })
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
