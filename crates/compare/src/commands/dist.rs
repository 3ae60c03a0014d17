//! `compare dist`: one semantics' distribution for each JSON-lines record.

use std::io::{BufRead, Write};

use anyhow::Context;
use hf_sampling::GenerationConfig;
use serde_json::Value;

use crate::cli::{DistArgs, Semantics};
use crate::jsonl::{self, Record, Summary, write_f32_array, write_f64_array};

/// Runs the batch; returns how it went (exit status 1 if any record failed).
pub fn run<R: BufRead, W: Write, E: Write>(
    args: &DistArgs,
    input: R,
    out: W,
    err: E,
) -> anyhow::Result<Summary> {
    let config = match &args.generation_config {
        Some(path) if args.semantics == Semantics::Hf => Some(
            GenerationConfig::from_path(path)
                .with_context(|| format!("reading {}", path.display()))?,
        ),
        Some(_) => anyhow::bail!("--generation-config only applies to --semantics hf"),
        None => None,
    };
    let summary = match args.semantics {
        Semantics::Hf => jsonl::drive(input, out, err, |line, answer| {
            hf_record(line, config.as_ref(), answer)
        }),
        Semantics::Spec => jsonl::drive(input, out, err, spec_record),
        Semantics::Candle => jsonl::drive(input, out, err, candle_record),
    };
    Ok(summary?)
}

fn hf_record(
    line: &[u8],
    config: Option<&GenerationConfig>,
    answer: &mut Vec<u8>,
) -> Result<(), String> {
    let record = Record::parse(line)?;
    let logits = record.logits.to_f32()?;
    let input_ids = record.input_ids()?;
    let params = hf_sampling::resolve(&record.params, config).map_err(|e| e.to_string())?;
    let out = hf_sampling::process(&logits, &input_ids, &params).map_err(|e| e.to_string())?;
    write!(answer, "{{\"kept\":{},\"probs\":", out.kept.len()).map_err(|e| e.to_string())?;
    write_f32_array(answer, &out.probs);
    answer.extend_from_slice(b",\"scores\":");
    write_f32_array(answer, &out.scores);
    answer.push(b'}');
    Ok(())
}

/// The keys of a spec record's `params`.
const SPEC_PARAMS: [&str; 5] = ["temperature", "top_k", "top_p", "repetition_penalty", "u"];

fn spec_record(line: &[u8], answer: &mut Vec<u8>) -> Result<(), String> {
    let record = Record::parse(line)?;
    let logits = record.logits.to_f64()?;
    let previous = record.input_ids()?;
    // `Params::from_json` ignores unknown keys (so a whole spec line can be
    // passed to it); here that would let `"previous_tokens"` inside `params`
    // silently mean "no context", so keys other than the five are refused.
    if let Some(key) = record
        .params
        .keys()
        .find(|k| !SPEC_PARAMS.contains(&k.as_str()))
    {
        return Err(format!(
            "params: unknown key `{key}` (the spec's parameters are {}; the context goes in `input_ids`)",
            SPEC_PARAMS.join(", ")
        ));
    }
    let params = spec_sampler::Params::from_json(&Value::Object(record.params))
        .map_err(|e| format!("params: {e}"))?;
    let input =
        spec_sampler::Input::from_parts(logits, previous, params).map_err(|e| e.to_string())?;
    let dist = spec_sampler::distribution(&input);
    let token = dist.draw(input.params().u);
    write!(
        answer,
        "{{\"kept\":{},\"token_id\":{token},\"probs\":",
        dist.kept().len()
    )
    .map_err(|e| e.to_string())?;
    write_f64_array(answer, dist.probs());
    answer.push(b'}');
    Ok(())
}

fn candle_record(line: &[u8], answer: &mut Vec<u8>) -> Result<(), String> {
    let record = Record::parse(line)?;
    let logits = record.logits.to_f32()?;
    let input_ids = record.input_ids()?;
    let params = candle_adapter::CandleParams::from_json(&Value::Object(record.params))
        .map_err(|e| format!("params: {e}"))?;
    let dist = candle_adapter::mirror(&logits, &input_ids, &params).map_err(|e| e.to_string())?;
    write!(answer, "{{\"kept\":{},\"probs\":", dist.kept.len()).map_err(|e| e.to_string())?;
    write_f64_array(answer, &dist.probs);
    answer.push(b'}');
    Ok(())
}
