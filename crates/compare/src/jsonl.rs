//! The JSON-lines driver shared by `compare dist` for every semantics.
//!
//! Each non-empty input line is one record and gets exactly one output line,
//! either the result or `{"error": "..."}`; the same message goes to standard
//! error with its line number. Lines are read one at a time into a reused
//! buffer, so thousands of 49,152-entry records stream in constant memory, and
//! a line longer than [`MAX_LINE_BYTES`] is refused without being buffered.

use std::io::{self, BufRead, Write};

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, SeqAccess, Visitor};
use serde_json::{Map, Value};

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
}

/// Runs `handle` on every non-empty line of `input`, writing its answer (one
/// line, without the newline) or an error object to `out`. Returns an I/O
/// error only when reading or writing fails.
pub fn drive<R: BufRead, W: Write, E: Write>(
    mut input: R,
    mut out: W,
    mut err: E,
    mut handle: impl FnMut(&[u8], &mut Vec<u8>) -> Result<(), String>,
) -> io::Result<Summary> {
    let mut line = Vec::new();
    let mut answer = Vec::new();
    let mut summary = Summary {
        records: 0,
        failed: 0,
    };
    let mut number = 0usize;
    loop {
        line.clear();
        number += 1;
        let status = read_bounded_line(&mut input, &mut line, MAX_LINE_BYTES)?;
        let record = match status {
            LineStatus::Eof if line.is_empty() => break,
            LineStatus::TooLong => Err(format!(
                "line is longer than {MAX_LINE_BYTES} bytes; refusing to read it"
            )),
            _ => {
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                answer.clear();
                handle(&line, &mut answer)
            }
        };
        summary.records += 1;
        match record {
            Ok(()) => {
                out.write_all(&answer)?;
                out.write_all(b"\n")?;
            }
            Err(message) => {
                summary.failed += 1;
                serde_json::to_writer(&mut out, &serde_json::json!({ "error": message }))?;
                out.write_all(b"\n")?;
                writeln!(err, "error: line {number}: {}", one_line(&message))?;
            }
        }
        if status == LineStatus::Eof {
            break;
        }
    }
    out.flush()?;
    Ok(summary)
}

/// The message as one line of plain text for standard error: control
/// characters are written as escapes (`\n`, `\u{1b}`). serde quotes an
/// unknown key as it was decoded, so `{"a\nb": 0}` would otherwise split one
/// record's error over two lines, and an escape sequence in a key would reach
/// the terminal. (The JSON answer on stdout is escaped by serde_json.)
fn one_line(message: &str) -> std::borrow::Cow<'_, str> {
    if message.chars().any(char::is_control) {
        message
            .chars()
            .map(|c| {
                if c.is_control() {
                    c.escape_default().to_string()
                } else {
                    c.to_string()
                }
            })
            .collect::<String>()
            .into()
    } else {
        message.into()
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

/// One `compare dist` record: the logits, the context and the semantics'
/// own parameters. Unknown top-level fields are refused so a misspelt
/// `input_ids` cannot silently mean "no context".
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Record {
    /// Logits: numbers or the string `"-inf"`.
    pub logits: RawLogits,
    /// The context (prompt and generated tokens so far).
    #[serde(default)]
    pub input_ids: Vec<Value>,
    /// The semantics' parameters.
    #[serde(default)]
    pub params: Map<String, Value>,
}

impl Record {
    /// Parses one line.
    pub fn parse(line: &[u8]) -> Result<Self, String> {
        serde_json::from_slice(line).map_err(|e| format!("invalid record: {e}"))
    }

    /// The context as integers, naming the first entry that is not one.
    pub fn input_ids(&self) -> Result<Vec<i64>, String> {
        self.input_ids
            .iter()
            .enumerate()
            .map(|(i, v)| {
                v.as_i64()
                    .ok_or_else(|| format!("`input_ids[{i}]` must be an integer, got {v}"))
            })
            .collect()
    }
}

/// Logits as written in the record, before any semantics decides which
/// precision they are read in.
#[derive(Debug, Default)]
pub struct RawLogits(pub Vec<RawLogit>);

/// One logit as written: a number, or a string (only `"-inf"` is valid).
#[derive(Debug, Clone, PartialEq)]
pub enum RawLogit {
    /// A JSON number.
    Number(f64),
    /// A JSON string.
    Text(String),
    /// Any other JSON value, described.
    Other(&'static str),
}

impl RawLogits {
    /// The logits as f32, as transformers and candle hold them: finite numbers
    /// that fit in f32, or `"-inf"`. Errors name the index and quote the value.
    pub fn to_f32(&self) -> Result<Vec<f32>, String> {
        self.convert(|i, x| {
            let y = x as f32;
            if y.is_finite() {
                Ok(y)
            } else {
                Err(format!("`logits[{i}]` = {x:e} does not fit in float32"))
            }
        })
    }

    /// The logits as f64, as the spec sampler reads them: any JSON number, or
    /// `"-inf"`. Errors name the index and quote the value.
    pub fn to_f64(&self) -> Result<Vec<f64>, String> {
        self.convert(|_, x| Ok(x))
    }

    /// Numbers through `number(index, value)`, `"-inf"` to -inf, anything
    /// else an error naming its index; an empty array is an error too.
    fn convert<T: From<f32>>(
        &self,
        number: impl Fn(usize, f64) -> Result<T, String>,
    ) -> Result<Vec<T>, String> {
        if self.0.is_empty() {
            return Err("`logits` must not be empty".into());
        }
        self.0
            .iter()
            .enumerate()
            .map(|(i, raw)| match raw {
                RawLogit::Number(x) => number(i, *x),
                RawLogit::Text(s) if s == "-inf" => Ok(T::from(f32::NEG_INFINITY)),
                RawLogit::Text(s) => Err(not_a_logit(i, &format!("{s:?}"))),
                RawLogit::Other(what) => Err(not_a_logit(i, what)),
            })
            .collect()
    }
}

/// The error for a logit that is neither a number nor `"-inf"`.
fn not_a_logit(index: usize, got: &str) -> String {
    format!("`logits[{index}]` must be a finite number or the string \"-inf\", got {got}")
}

impl<'de> Deserialize<'de> for RawLogits {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Seq;
        impl<'de> Visitor<'de> for Seq {
            type Value = RawLogits;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an array of numbers or \"-inf\"")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<RawLogits, A::Error> {
                let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1 << 20));
                while let Some(x) = seq.next_element::<RawLogit>()? {
                    out.push(x);
                }
                Ok(RawLogits(out))
            }
        }
        d.deserialize_seq(Seq)
    }
}

impl<'de> Deserialize<'de> for RawLogit {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct One;
        impl<'de> Visitor<'de> for One {
            type Value = RawLogit;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a number or \"-inf\"")
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<RawLogit, E> {
                Ok(RawLogit::Number(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<RawLogit, E> {
                Ok(RawLogit::Number(v as f64))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<RawLogit, E> {
                Ok(RawLogit::Number(v as f64))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RawLogit, E> {
                Ok(RawLogit::Text(v.to_string()))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<RawLogit, E> {
                Ok(RawLogit::Other("a boolean"))
            }
            fn visit_unit<E: de::Error>(self) -> Result<RawLogit, E> {
                Ok(RawLogit::Other("null"))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<RawLogit, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(RawLogit::Other("an array"))
            }
            fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<RawLogit, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(RawLogit::Other("an object"))
            }
        }
        d.deserialize_any(One)
    }
}

/// Writes f32 values as a JSON array: shortest round-trip numbers, and the
/// strings `"-inf"` / `"inf"` where JSON has no number.
pub fn write_f32_array(out: &mut Vec<u8>, values: &[f32]) {
    write_float_array(out, values);
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

    fn run(input: &str) -> (String, String, Summary) {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let s = drive(input.as_bytes(), &mut out, &mut err, |line, answer| {
            let r = Record::parse(line)?;
            let l = r.logits.to_f32()?;
            write_f32_array(answer, &l);
            Ok(())
        })
        .expect("in-memory I/O");
        (
            String::from_utf8(out).expect("utf8"),
            String::from_utf8(err).expect("utf8"),
            s,
        )
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
                failed: 1
            }
        );
    }

    #[test]
    fn overflowing_and_odd_logits_name_their_index() {
        let (out, _, _) = run("{\"logits\": [0, 1e39]}\n{\"logits\": [0, true]}\n{\"logits\": []}");
        let lines: Vec<_> = out.lines().collect();
        assert!(
            lines[0].contains("`logits[1]` = 1e39 does not fit in float32"),
            "{}",
            lines[0]
        );
        assert!(
            lines[1].contains(
                "`logits[1]` must be a finite number or the string \\\"-inf\\\", got a boolean"
            ),
            "{}",
            lines[1]
        );
        assert!(
            lines[2].contains("`logits` must not be empty"),
            "{}",
            lines[2]
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
                "expected one of `logits`, `input_ids`, `params` at line 1 column 30\n"
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
