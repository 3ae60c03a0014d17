//! `compare translate`: transformers generate kwargs → the candle setup.

use std::io::Write;

use anyhow::Context;
use hf_sampling::GenerationConfig;
use serde_json::{Map, Value, json};

use crate::cli::{Format, TranslateArgs};

/// Prints the translation of `args.kwargs` (and the optional generation config).
pub fn run(args: &TranslateArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    let kwargs: Map<String, Value> = serde_json::from_str(&args.kwargs)
        .with_context(|| format!("--kwargs is not a JSON object: {}", args.kwargs))?;
    let config = args
        .generation_config
        .as_deref()
        .map(|p| GenerationConfig::from_path(p).with_context(|| format!("reading {}", p.display())))
        .transpose()?;
    let params = hf_sampling::resolve(&kwargs, config.as_ref())
        .context("transformers would refuse these kwargs")?;
    let processors = params
        .processor_names()
        .context("transformers would refuse these kwargs")?;
    let t = candle_adapter::translate(&params).context("cannot translate")?;
    match args.format {
        Format::Json => {
            let doc = json!({
                "schema": 1,
                "kwargs": kwargs,
                "transformers_processors": processors,
                "translation": t,
            });
            serde_json::to_writer_pretty(&mut *out, &doc)?;
            writeln!(out)?;
        }
        Format::Text => {
            writeln!(
                out,
                "transformers: {}",
                if processors.is_empty() {
                    "no processor (raw logits)".to_string()
                } else {
                    processors.join(" → ")
                }
            )?;
            writeln!(
                out,
                "   sampling: {}",
                if params.do_sample {
                    "torch.multinomial"
                } else {
                    "greedy argmax"
                }
            )?;
            writeln!(out, "candle (plain): {}", describe(&t.candle))?;
            match &t.exact {
                Some(e) if t.plain_is_exact => writeln!(
                    out,
                    "candle (exact): the plain setup already matches; {}",
                    describe(e)
                )?,
                Some(e) => writeln!(out, "candle (exact): {}", describe(e))?,
                None => writeln!(
                    out,
                    "candle (exact): none: candle cannot reproduce this distribution"
                )?,
            }
            for w in &t.warnings {
                writeln!(out, "warning: {w}")?;
            }
        }
    }
    Ok(())
}

fn describe(cp: &candle_adapter::CandleParams) -> String {
    let mut s = format!("LogitsProcessor::from_sampling(seed, {})", cp.sampling);
    if let Some(k) = cp.hf_top_k {
        s.push_str(&format!(
            ", sampled with sample_f and a closure that keeps transformers' top {k} (ties included) and renormalises"
        ));
    }
    if let Some(rp) = &cp.repeat_penalty {
        s.push_str(&format!(
            "; first apply_repeat_penalty(logits, {}, {})",
            rp.penalty,
            match rp.window {
                candle_adapter::Window::Whole => "all input_ids".to_string(),
                candle_adapter::Window::LastN(n) => format!("the last {n} input_ids"),
            }
        ));
    }
    s
}
