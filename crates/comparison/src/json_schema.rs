//! The JSON Schema of every `--format json` document, generated from the
//! output types themselves (schemars reads their serde attributes and doc
//! comments), so the schema cannot drift from what `compare` writes.
//!
//! The schemas are committed under `docs/schema/` (one file per document,
//! [`Document::file`]); `compare`'s tests regenerate them and fail when a
//! type and its committed schema disagree, and read real command output back
//! against them. docs/report-schema.md keeps the prose.

use schemars::Schema;

use crate::Engines;

/// One JSON document (or JSON-lines line) a command writes.
pub struct Document {
    /// The command and options that write it, e.g. `compare report --format json`.
    pub command: &'static str,
    /// File name under `docs/schema/`.
    pub file: &'static str,
    /// Whether the command writes one such document per input line
    /// (JSON lines) rather than one document.
    pub lines: bool,
    /// The schema, generated from the output type; `engines` name what the
    /// output names after them (`compare beam`'s compared search).
    pub schema: fn(&Engines) -> Schema,
}

impl Document {
    /// The schema, titled with the command that writes the document, for
    /// the registry's `engines`.
    pub fn generate(&self, engines: &Engines) -> Schema {
        let mut schema = (self.schema)(engines);
        schema.insert("title".into(), self.command.into());
        schema
    }

    /// The schema as the committed file holds it: pretty JSON and a newline.
    pub fn text(&self, engines: &Engines) -> serde_json::Result<String> {
        Ok(serde_json::to_string_pretty(&self.generate(engines))? + "\n")
    }
}

/// Every document, in the order docs/report-schema.md describes them.
pub fn documents() -> Vec<Document> {
    vec![
        Document {
            command: "compare report --format json",
            file: "report.json",
            lines: false,
            schema: |_| crate::report::json_schema(),
        },
        Document {
            command: "compare dist --semantics NAME",
            file: "dist-line.json",
            lines: true,
            schema: |_| crate::dist::json_schema(),
        },
        Document {
            command: "compare diff --format json",
            file: "diff-line.json",
            lines: true,
            schema: |_| crate::diff::json_schema(),
        },
        Document {
            command: "compare check --format json",
            file: "check-line.json",
            lines: true,
            schema: |_| crate::check::json_schema(),
        },
        Document {
            command: "compare semantics --format json",
            file: "semantics.json",
            lines: false,
            schema: |_| crate::semantics::json_schema(),
        },
        Document {
            command: "compare translate --format json",
            file: "translate.json",
            lines: false,
            schema: |_| crate::translate::json_schema(),
        },
        Document {
            command: "compare request --format json",
            file: "request.json",
            lines: false,
            schema: |_| crate::request::json_schema(),
        },
        Document {
            command: "compare ties --format json",
            file: "ties.json",
            lines: false,
            schema: |_| crate::ties::json_schema(),
        },
        Document {
            command: "compare speculative --format json",
            file: "speculative.json",
            lines: false,
            schema: |_| crate::speculative::json_schema(),
        },
        Document {
            command: "compare beam --format json",
            file: "beam.json",
            lines: false,
            schema: crate::beam::searches_schema,
        },
        Document {
            command: "compare beam --recorded --format json",
            file: "beam-recorded.json",
            lines: false,
            schema: |_| crate::beam::recorded_schema(),
        },
        Document {
            command: "compare beam --port NAME --format json",
            file: "beam-port.json",
            lines: false,
            schema: |_| crate::beam::port_schema(),
        },
        Document {
            command: "compare trace --format json",
            file: "trace.json",
            lines: false,
            schema: |_| crate::trace::json_schema(),
        },
        Document {
            command: "compare bench --format json",
            file: "bench.json",
            lines: false,
            schema: |_| crate::bench::json_schema(),
        },
        Document {
            command: "compare probe --format json",
            file: "probe.json",
            lines: false,
            schema: |_| schemars::schema_for!(server_probe::Report),
        },
        Document {
            command: "compare probe --repeat N --format json",
            file: "probe-repeat.json",
            lines: false,
            schema: |_| schemars::schema_for!(server_probe::repeat::RepeatReport),
        },
    ]
}

/// One line of a JSON-lines answer: the record's answer, or the error it got
/// (`{"error": "..."}`, as `parity_core::jsonl` writes it). Declared for the
/// schema only; the commands write the two shapes themselves.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum Line<T> {
    /// The record's answer.
    Answer(T),
    /// The record was invalid, or the semantics refused it.
    Error(ErrorLine),
}

/// The line of a record that failed.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ErrorLine {
    /// The record's number, counting from 1 (`compare check` only).
    #[serde(default)]
    pub record: Option<usize>,
    /// The message, as standard error also says it with the line number.
    pub error: String,
}

/// A float as the JSON-lines writers print it: a number, or a string where
/// JSON has none.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum Float {
    /// A finite value, at the engine's own precision.
    Number(f64),
    /// `"-inf"`, `"inf"` or `"nan"`.
    NonFinite(NonFinite),
}

/// The strings a non-finite [`Float`] is written as.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub enum NonFinite {
    /// −∞ (a token its engine masked).
    #[serde(rename = "-inf")]
    NegInf,
    /// +∞.
    #[serde(rename = "inf")]
    Inf,
    /// Not a number.
    #[serde(rename = "nan")]
    NaN,
}
