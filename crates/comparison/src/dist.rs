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
        write_answer(answer, &dist, vocab.as_ref());
        Ok(())
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
fn write_answer(answer: &mut Vec<u8>, dist: &Distribution, vocab: Option<&Vocab>) {
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
            let fields: Vec<serde_json::Value> = tokens
                .iter()
                .map(|&t| match usize::try_from(t) {
                    Ok(id) => {
                        let (text, bytes) = text_fields(v.piece(id));
                        serde_json::json!({"id": id, "token": v.token(id), "text": text, "bytes": bytes})
                    }
                    Err(_) => serde_json::Value::Null,
                })
                .collect();
            answer.extend_from_slice(b",\"token_text\":");
            answer.extend_from_slice(serde_json::Value::Array(fields).to_string().as_bytes());
        }
    }
    answer.push(b'}');
}
