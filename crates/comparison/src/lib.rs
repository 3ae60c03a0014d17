//! The comparison library behind `compare`: everything a command does
//! between parsing its arguments and printing, over any registry of
//! semantics.
//!
//! It holds the rows and their verdict rule (once, with its tolerance), pair
//! selection, proven fixes, summaries, the trace and beam comparisons and the
//! speculative table; each command's output, as a typed document (JSON,
//! docs/report-schema.md) and as text (and HTML for `report`). It names no
//! engine: the binary's registry hands it an [`Engines`] (every semantics,
//! every port, the defaults), and each semantics says what it is, what it
//! offers and why it differs through `parity_core::Semantics`.
//!
//! [`cli`] holds each command's options; they derive clap's `Args` so the
//! binary flattens them into its command line, but nothing here reads one.
//! Library code returns errors; only the binary prints them.

#![deny(missing_docs)]

pub mod cli;
mod engines;
mod progress;

pub mod beam;
pub mod bench;
pub mod check;
pub mod diff;
pub mod dist;
pub mod json_schema;
pub mod probe;
pub mod report;
pub mod request;
pub mod semantics;
pub mod speculative;
pub mod ties;
pub mod trace;
pub mod translate;

#[cfg(test)]
mod toy;

pub use engines::{BenchEngine, BenchStep, Defaults, Engines};
pub use progress::Progress;

/// A command-line argument that must be a JSON object (`--kwargs`,
/// `--port-params`, a registry's own flags): parsed, or an error naming the
/// flag and quoting the text.
pub fn json_object_arg(
    flag: &str,
    text: &str,
) -> anyhow::Result<serde_json::Map<String, serde_json::Value>> {
    use anyhow::Context;
    serde_json::from_str(text).with_context(|| format!("{flag} is not a JSON object: {text}"))
}

/// An error and its causes as `compare` prints them (and the Python
/// package raises them): `: `-separated like anyhow's `{:#}`, but each cause
/// only once: a message that already quotes its cause (an OS error a
/// library put in its own text and also gave as the source) does not
/// repeat it.
pub fn error_text(err: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in err.chain() {
        let part = cause.to_string();
        if text.contains(&part) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&part);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_json_object_arg_is_parsed() {
        let m = json_object_arg("--kwargs", r#"{"top_k": 5, "do_sample": true}"#).expect("object");
        assert_eq!(m.len(), 2);
        assert_eq!(m["top_k"], serde_json::json!(5));
    }

    #[test]
    fn a_json_arg_that_is_no_object_names_the_flag_and_quotes_the_text() {
        for text in ["[1, 2]", "{\"a\": ", "5"] {
            let err = json_object_arg("--port-params", text).expect_err("not an object");
            assert_eq!(
                err.to_string(),
                format!("--port-params is not a JSON object: {text}")
            );
            // serde_json's own words are the cause.
            assert!(err.source().is_some(), "{err:#}");
        }
    }

    #[test]
    fn error_text_joins_causes_like_anyhow() {
        let err = anyhow::anyhow!("inner").context("middle").context("outer");
        assert_eq!(error_text(&err), "outer: middle: inner");
        assert_eq!(error_text(&err), format!("{err:#}"));
    }

    #[test]
    fn error_text_drops_a_cause_its_message_already_quotes() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
        let err = anyhow::Error::new(io).context("reading x.json: no such file");
        assert_eq!(error_text(&err), "reading x.json: no such file");
        // anyhow repeats it.
        assert_eq!(
            format!("{err:#}"),
            "reading x.json: no such file: no such file"
        );
    }
}
