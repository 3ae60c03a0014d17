//! `compare dist`: one semantics' distribution for each JSON-lines record.

use std::io::{BufRead, Write};

use parity_core::jsonl::{self, Summary, write_f32_array, write_f64_array};
use parity_core::{AnySemantics, Context, Distribution, Precision, Record, Vocab};

use super::report::text_fields;

use crate::Engines;
use crate::cli::DistArgs;

/// Runs the batch with a semantics from `registry` (built with the
/// `--generation-config` the args name); returns how it went (exit status 1
/// if any record failed).
pub fn run<R: BufRead, W: Write, E: Write>(
    args: &DistArgs,
    engines: &Engines,
    input: R,
    out: W,
    err: E,
) -> anyhow::Result<Summary> {
    let semantics = engines.find(&args.semantics)?;
    if args.generation_config.is_some() && !semantics.reads_generation_config() {
        anyhow::bail!(
            "--generation-config: {} does not read a model's generation_config.json",
            args.semantics
        );
    }
    let vocab = args.vocab.load()?;
    let summary = jsonl::drive(input, out, err, "error: ", |line, answer| {
        let dist = answer_record(semantics, line)?;
        args.vocab.check(vocab.as_ref(), dist.probs().len())?;
        write_answer(answer, &dist, vocab.as_ref())
    })?;
    Ok(summary)
}

/// Parses one record and runs the semantics on it.
pub(crate) fn answer_record(
    semantics: &dyn AnySemantics,
    line: &[u8],
) -> Result<Distribution, String> {
    let record = Record::parse(line)?;
    let logits = record.logits.to_logits()?;
    let input_ids = record.input_ids()?;
    let context = Context::new(&input_ids, record.prompt_len()?).map_err(|e| e.to_string())?;
    semantics
        .run(&logits, &context, &record.params)
        .map_err(|e| e.to_string())
}

/// `{"kept": N, "probs": [...], "scores": [...], "tokens": [...],
/// "token_text": [...]}`: probs at the engine's own precision; scores and
/// tokens when the semantics has them; token_text with a vocabulary.
fn write_answer(
    answer: &mut Vec<u8>,
    dist: &Distribution,
    vocab: Option<&Vocab>,
) -> Result<(), String> {
    answer.extend_from_slice(format!("{{\"kept\":{},\"probs\":", dist.kept().len()).as_bytes());
    match dist.precision() {
        Precision::F32 => {
            let probs: Vec<f32> = dist.probs().iter().map(|&p| p as f32).collect();
            write_f32_array(answer, &probs);
        }
        Precision::F64 => write_f64_array(answer, dist.probs()),
    }
    if let Some(scores) = dist.scores() {
        answer.extend_from_slice(b",\"scores\":");
        write_f32_array(answer, scores);
    }
    if let Some(tokens) = dist.tokens() {
        let list: Vec<String> = tokens.iter().map(i64::to_string).collect();
        answer.extend_from_slice(format!(",\"tokens\":[{}]", list.join(",")).as_bytes());
        if let Some(v) = vocab {
            // Each drawn token's fields, as in a report row (null for −1).
            let fields: Vec<Option<DrawnToken>> = tokens
                .iter()
                .map(|&t| {
                    usize::try_from(t).ok().map(|id| {
                        let (text, bytes) = text_fields(v.piece(id));
                        DrawnToken {
                            bytes,
                            id,
                            text,
                            token: v.token(id).map(str::to_string),
                        }
                    })
                })
                .collect();
            answer.extend_from_slice(b",\"token_text\":");
            serde_json::to_writer(&mut *answer, &fields).map_err(|e| e.to_string())?;
        }
    }
    answer.push(b'}');
    Ok(())
}

/// One answer line as [`write_answer`] writes it. The writer is hand-written
/// (a whole vocabulary of floats per line, at the engine's precision), so
/// this type is declared for the schema and for reading lines back; the
/// tests read real `compare dist` output into it.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Answer {
    /// Tokens with positive probability.
    pub kept: usize,
    /// The distribution the engine draws from, at the engine's own precision.
    pub probs: Vec<crate::json_schema::Float>,
    /// The engine's processed scores, when it exposes them (transformers'
    /// `output_scores`).
    #[serde(default)]
    pub scores: Option<Vec<crate::json_schema::Float>>,
    /// Tokens the semantics drew (the spec's answer for the record's `u`;
    /// −1 when nothing has mass).
    #[serde(default)]
    pub tokens: Option<Vec<i64>>,
    /// With `--vocab` and `tokens`: each drawn token's fields (null for −1).
    #[serde(default)]
    pub token_text: Option<Vec<Option<DrawnToken>>>,
}

/// A drawn token's fields in `token_text`, as in a report row (in
/// alphabetical order, as the line has always listed them).
#[derive(Debug, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DrawnToken {
    /// Its bytes, when they are not complete UTF-8.
    pub bytes: Option<Vec<u8>>,
    /// Token id.
    pub id: usize,
    /// What it reads as, when its bytes are complete UTF-8.
    pub text: Option<String>,
    /// The vocabulary string, if known.
    pub token: Option<String>,
}

/// The JSON Schema of one `compare dist` line ([`crate::json_schema`]).
pub(crate) fn json_schema() -> schemars::Schema {
    schemars::schema_for!(crate::json_schema::Line<Answer>)
}

#[cfg(test)]
mod tests {
    use super::*;
    use parity_core::Role;

    #[test]
    fn a_record_runs_the_semantics_on_its_logits() {
        let toy = crate::toy::toy("toy", Role::Default);
        let dist = answer_record(&*toy, br#"{"logits": [1, 3, 3]}"#).expect("runs");
        // The first argmax.
        assert_eq!(dist.probs(), [0.0, 1.0, 0.0]);
    }

    #[test]
    fn a_bad_record_is_an_error_in_words() {
        let toy = crate::toy::toy("toy", Role::Default);
        assert_eq!(
            answer_record(&*toy, br#"{"logits": [0], "params": {"k": 1}}"#).expect_err("refused"),
            "params: unknown key `k`"
        );
        let err = answer_record(&*toy, b"{").expect_err("not JSON");
        assert!(!err.is_empty());
        let err = answer_record(&*toy, br#"{"params": {}}"#).expect_err("no logits");
        assert!(err.contains("logits"), "{err}");
    }
}
