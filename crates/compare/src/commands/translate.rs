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
    let resolved = hf_sampling::provenance(&kwargs, config.as_ref(), &params);
    match args.format {
        Format::Json => {
            let doc = json!({
                "schema": 1,
                "kwargs": kwargs,
                "resolved": resolved
                    .iter()
                    .map(|(key, value, source)| json!({ "key": key, "value": value, "source": source }))
                    .collect::<Vec<_>>(),
                "transformers_processors": processors,
                "translation": t,
            });
            serde_json::to_writer_pretty(&mut *out, &doc)?;
            writeln!(out)?;
        }
        Format::Text => {
            let from = |source: hf_sampling::Source| match source {
                hf_sampling::Source::Kwargs => "kwargs",
                hf_sampling::Source::GenerationConfig => "generation_config.json",
                hf_sampling::Source::Default => "transformers' default",
            };
            writeln!(out, "resolved:")?;
            for (key, value, source) in &resolved {
                writeln!(out, "  {key} = {value}  ({})", from(*source))?;
            }
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
            writeln!(out, "candle (plain): {}", t.candle.recipe())?;
            match &t.exact {
                Some(e) if t.plain_is_exact => writeln!(
                    out,
                    "candle (exact): the plain setup already matches; {}",
                    e.recipe()
                )?,
                Some(e) => writeln!(out, "candle (exact): {}", e.recipe())?,
                None => {
                    writeln!(
                        out,
                        "candle (exact): LogitsProcessor has no such filter; run transformers' whole \
                         chain behind candle's signature with candle_adapter::dropin::HfLogitsProcessor \
                         (exact, `compare dist --semantics hf-rust` shows its distribution):"
                    )?;
                    writeln!(
                        out,
                        "    let params = hf_sampling::resolve(&kwargs, None)?;  // these kwargs\n    \
                         let mut lp = candle_adapter::dropin::HfLogitsProcessor::new(seed, &params)?;\n    \
                         lp.set_prompt(&prompt_ids);\n    \
                         let token = lp.sample(&logits)?;  // logits: &candle_core::Tensor"
                    )?;
                }
            }
            for w in &t.warnings {
                writeln!(out, "warning: {w}")?;
            }
        }
    }
    Ok(())
}
