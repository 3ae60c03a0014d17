//! The JSON-lines driver shared by `compare dist`, `compare diff` and the
//! `spec-sampler` binary.
//!
//! Each non-empty input line is one record and gets exactly one output line,
//! either the answer or `{"error": "..."}`; the same message goes to standard
//! error with its line number, as one line of plain text ([`crate::text::one_line`]).
//! Lines are read one at a time into a reused buffer, so thousands of
//! 49,152-entry records stream in constant memory, and a line longer than
//! [`MAX_LINE_BYTES`] is refused without being buffered (parsing holds ~20
//! bytes per input byte, so a 100 MB line would otherwise need ~2 GB).
//! Answers are flushed whenever the next read might block, so an interactive
//! producer sees each answer at once while a batch is written in large chunks.
//! A reader that closes standard output ends the batch quietly.

use std::io::{self, BufRead, Write};

use crate::text::one_line;

/// Longest input line accepted (a 262,144-entry vocabulary written with full
/// precision is about 6 MB; this leaves room for any real model).
pub const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

/// How a batch ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Summary {
    /// Records answered.
    pub records: usize,
    /// Records answered with an error.
    pub failed: usize,
    /// Standard output was closed by its reader before the input ended.
    pub closed: bool,
}

/// Runs `handle` on every non-empty line of `input`, writing its answer (one
/// line, without the newline) or an error object to `out`, and each error
/// to `err` as `{prefix}line N: message`. Returns an I/O error only when
/// reading fails or writing fails for a reason other than a closed pipe.
pub fn drive<R: BufRead, W: Write, E: Write>(
    mut input: R,
    mut out: W,
    mut err: E,
    prefix: &str,
    mut handle: impl FnMut(&[u8], &mut Vec<u8>) -> Result<(), String>,
) -> io::Result<Summary> {
    let mut line = Vec::new();
    let mut answer = Vec::new();
    let mut summary = Summary {
        records: 0,
        failed: 0,
        closed: false,
    };
    let mut number = 0usize;
    loop {
        line.clear();
        number += 1;
        let status = read_bounded_line(&mut input, &mut line, MAX_LINE_BYTES).map_err(|e| {
            let hint = if e.kind() == io::ErrorKind::IsADirectory {
                " (the input is a folder: give a file of JSON lines, or pipe them in)"
            } else {
                ""
            };
            io::Error::new(
                e.kind(),
                format!("reading line {number} of the input: {e}{hint}"),
            )
        })?;
        let record = match status {
            LineStatus::Eof if line.is_empty() => break,
            LineStatus::TooLong => Err(format!(
                "line is longer than {MAX_LINE_BYTES} bytes; refusing to read it"
            )),
            _ => {
                // A UTF-8 byte order mark (what some Windows editors write
                // first) is not part of the JSON: RFC 8259 §8.1 lets a
                // parser ignore it, and serde_json does not.
                if number == 1 && line.starts_with(UTF8_BOM) {
                    line.drain(..UTF8_BOM.len());
                }
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                answer.clear();
                handle(&line, &mut answer)
            }
        };
        summary.records += 1;
        let written = match record {
            Ok(()) => out.write_all(&answer).and_then(|()| out.write_all(b"\n")),
            Err(message) => {
                summary.failed += 1;
                // Best effort: a closed or full standard error must not
                // stop the batch (the answer on stdout says the same).
                let _ = writeln!(err, "{prefix}line {number}: {}", one_line(&message));
                serde_json::to_writer(&mut out, &serde_json::json!({ "error": message }))
                    .map_err(io::Error::from)
                    .and_then(|()| out.write_all(b"\n"))
            }
        }
        .and_then(|()| {
            if input.fill_buf().map_or(true, <[u8]>::is_empty) {
                out.flush()
            } else {
                Ok(())
            }
        });
        if let Err(e) = written {
            return closed_or(e, summary);
        }
        if status == LineStatus::Eof {
            break;
        }
    }
    match out.flush() {
        Ok(()) => Ok(summary),
        Err(e) => closed_or(e, summary),
    }
}

/// The UTF-8 encoding of U+FEFF, the byte order mark.
const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// A closed standard output ends the batch with what it earned so far.
fn closed_or(error: io::Error, mut summary: Summary) -> io::Result<Summary> {
    if error.kind() == io::ErrorKind::BrokenPipe {
        summary.closed = true;
        Ok(summary)
    } else {
        Err(error)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LineStatus {
    Newline,
    Eof,
    TooLong,
}

/// Reads up to and excluding the next `\n`. A line over `max` bytes is skipped
/// to its end without being kept.
fn read_bounded_line<R: BufRead>(
    input: &mut R,
    line: &mut Vec<u8>,
    max: usize,
) -> io::Result<LineStatus> {
    let mut too_long = false;
    loop {
        let buf = match input.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buf.is_empty() {
            return Ok(if too_long {
                LineStatus::TooLong
            } else {
                LineStatus::Eof
            });
        }
        let (chunk, found) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (&buf[..i], Some(i + 1)),
            None => (buf, None),
        };
        if !too_long {
            if line.len() + chunk.len() > max {
                too_long = true;
                line.clear();
            } else {
                line.extend_from_slice(chunk);
            }
        }
        let used = found.unwrap_or(buf.len());
        input.consume(used);
        if found.is_some() {
            return Ok(if too_long {
                LineStatus::TooLong
            } else {
                LineStatus::Newline
            });
        }
    }
}

/// Writes f32 values as a JSON array: shortest round-trip numbers, and the
/// strings `"-inf"` / `"inf"` where JSON has no number.
pub fn write_f32_array(out: &mut Vec<u8>, values: &[f32]) {
    write_float_array(out, values);
}

/// A float32 as a JSON number, as short as reads back to the same f32
/// (0.7f32 is `0.7`, not its f64 widening 0.699999988079071); a value JSON
/// has no number for (NaN, an infinity) is `null`.
pub fn f32_value(x: f32) -> serde_json::Value {
    if !x.is_finite() {
        return serde_json::Value::Null;
    }
    ryu::Buffer::new()
        .format_finite(x)
        .parse::<f64>()
        .ok()
        .and_then(serde_json::Number::from_f64)
        .map_or(serde_json::Value::Null, serde_json::Value::Number)
}

/// Writes f64 values as a JSON array, like [`write_f32_array`].
pub fn write_f64_array(out: &mut Vec<u8>, values: &[f64]) {
    write_float_array(out, values);
}

/// Each value printed at its own precision (an f32 as the shortest f32).
fn write_float_array<F: ryu::Float + Copy + Into<f64>>(out: &mut Vec<u8>, values: &[F]) {
    let mut buf = ryu::Buffer::new();
    out.push(b'[');
    for (i, &x) in values.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let wide: f64 = x.into();
        let text: &[u8] = if wide.is_finite() {
            buf.format_finite(x).as_bytes()
        } else if wide == f64::NEG_INFINITY {
            b"\"-inf\""
        } else if wide == f64::INFINITY {
            b"\"inf\""
        } else {
            b"\"nan\""
        };
        out.extend_from_slice(text);
    }
    out.push(b']');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Record;

    fn run(input: &str) -> (String, String, Summary) {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let s = drive(
            input.as_bytes(),
            &mut out,
            &mut err,
            "error: ",
            |line, answer| {
                let r = Record::parse(line)?;
                let l = r.logits.to_logits()?.to_f32().map_err(|e| e.to_string())?;
                write_f32_array(answer, &l);
                Ok(())
            },
        )
        .expect("in-memory I/O");
        (
            String::from_utf8(out).expect("utf8"),
            String::from_utf8(err).expect("utf8"),
            s,
        )
    }

    #[test]
    fn an_f32_is_written_as_short_as_reads_back() {
        assert_eq!(f32_value(0.7).to_string(), "0.7");
        assert_eq!(f64::from(0.7f32).to_string(), "0.699999988079071");
        assert_eq!(f32_value(1.0).to_string(), "1.0");
        assert_eq!(f32_value(f32::MIN_POSITIVE).to_string(), "1.1754944e-38");
        assert_eq!(f32_value(f32::NAN), serde_json::Value::Null);
        assert_eq!(f32_value(f32::NEG_INFINITY), serde_json::Value::Null);
    }

    #[test]
    fn a_byte_order_mark_before_the_first_record_is_ignored() {
        let input = b"\xEF\xBB\xBF{\"a\": 1}\n\xEF\xBB\xBF{\"a\": 2}\n";
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let summary = drive(&input[..], &mut out, &mut err, "", |line, answer| {
            let v: serde_json::Value = serde_json::from_slice(line).map_err(|e| e.to_string())?;
            answer.extend_from_slice(v.to_string().as_bytes());
            Ok(())
        })
        .expect("drive");
        let out = String::from_utf8(out).expect("utf-8");
        let mut lines = out.lines();
        assert_eq!(lines.next(), Some(r#"{"a":1}"#));
        // Only the input's first bytes are a byte order mark; later, U+FEFF
        // is a character the record holds.
        assert!(
            lines.next().is_some_and(|l| l.starts_with(r#"{"error":"#)),
            "{out}"
        );
        assert_eq!((summary.records, summary.failed), (2, 1));
    }

    #[test]
    fn one_answer_per_non_empty_line() {
        let (out, err, s) = run("{\"logits\": [1, \"-inf\", 0.5]}\n\n  \n{\"logits\": [\"inf\"]}");
        assert_eq!(
            out,
            "[1.0,\"-inf\",0.5]\n{\"error\":\"`logits[0]` must be a finite number or the string \\\"-inf\\\", got \\\"inf\\\"\"}\n"
        );
        assert_eq!(
            err,
            "error: line 4: `logits[0]` must be a finite number or the string \"-inf\", got \"inf\"\n"
        );
        assert_eq!(
            s,
            Summary {
                records: 2,
                failed: 1,
                closed: false
            }
        );
    }

    #[test]
    fn unknown_fields_and_bad_json_are_errors() {
        let (out, _, s) = run("{\"logits\": [0], \"input_id\": []}\n{\"logits\": [0\n");
        assert_eq!(s.failed, 2);
        assert!(
            out.lines()
                .next()
                .is_some_and(|l| l.contains("unknown field `input_id`")),
            "{out}"
        );
    }

    #[test]
    fn control_characters_in_a_message_stay_on_one_stderr_line() {
        // Found by fuzzing (compare_dist): a key holding a JSON-escaped
        // newline (and here an escape sequence) was printed raw to stderr.
        let (out, err, s) = run(concat!(r#"{"logits": [0], "\nx\u001b[2J": 1}"#, "\n"));
        assert_eq!(s.failed, 1);
        assert_eq!(
            err,
            concat!(
                r#"error: line 1: invalid record: unknown field `\nx\u{1b}[2J`, "#,
                "expected one of `logits`, `input_ids`, `prompt_len`, `params`, `probs`, `logprobs` \
                 at line 1 column 30\n"
            )
        );
        assert!(out.contains(r#"unknown field `\nx\u001b[2J`"#), "{out}");
    }

    #[test]
    fn a_line_over_the_limit_is_skipped_without_buffering() {
        let mut input = std::io::Cursor::new(b"aaaaaaaaaa\nbb\n".to_vec());
        let mut line = Vec::new();
        assert_eq!(
            read_bounded_line(&mut input, &mut line, 4).expect("read"),
            LineStatus::TooLong
        );
        assert!(line.is_empty());
        assert_eq!(
            read_bounded_line(&mut input, &mut line, 4).expect("read"),
            LineStatus::Newline
        );
        assert_eq!(line, b"bb");
    }
}
