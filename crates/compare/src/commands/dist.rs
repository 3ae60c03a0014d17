//! `compare dist`: one semantics' distribution for each JSON-lines record.

use std::io::{BufRead, Write};

use parity_core::jsonl::{self, Summary, write_f32_array, write_f64_array};
use parity_core::{AnySemantics, Context, Distribution, Precision, Record};

use crate::cli::DistArgs;
use crate::registry;

/// Runs the batch with a semantics from `registry` (built with the
/// `--generation-config` the args name); returns how it went (exit status 1
/// if any record failed).
pub fn run<R: BufRead, W: Write, E: Write>(
    args: &DistArgs,
    registry: &[Box<dyn AnySemantics>],
    input: R,
    out: W,
    err: E,
) -> anyhow::Result<Summary> {
    let semantics = registry::find(registry, &args.semantics)?;
    if args.generation_config.is_some() && !semantics.reads_generation_config() {
        anyhow::bail!(
            "--generation-config: {} does not read a model's generation_config.json",
            args.semantics
        );
    }
    let summary = jsonl::drive(input, out, err, "error: ", |line, answer| {
        let dist = answer_record(semantics, line)?;
        write_answer(answer, &dist);
        Ok(())
    })?;
    Ok(summary)
}

/// Parses one record and runs the semantics on it.
pub fn answer_record(semantics: &dyn AnySemantics, line: &[u8]) -> Result<Distribution, String> {
    let record = Record::parse(line)?;
    let logits = record.logits.to_logits()?;
    let input_ids = record.input_ids()?;
    let context = Context::new(&input_ids, record.prompt_len()?).map_err(|e| e.to_string())?;
    semantics
        .run(&logits, &context, &record.params)
        .map_err(|e| e.to_string())
}

/// `{"kept": N, "probs": [...], "scores": [...], "tokens": [...]}`: probs at
/// the engine's own precision; scores and tokens when the semantics has them.
fn write_answer(answer: &mut Vec<u8>, dist: &Distribution) {
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
    }
    answer.push(b'}');
}
