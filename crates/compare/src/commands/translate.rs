//! `compare translate`: transformers generate kwargs → the candle setup, or
//! the llama-server request and llama-cli flags, that reproduce them.
//!
//! A llama.cpp translation is proven before it is printed as exact: it runs
//! on every bundled SmolLM2 fixture beside transformers (hf-rust) and the
//! verdicts are printed with it.

use std::io::Write;

use anyhow::Context;
use hf_sampling::GenerationConfig;
use parity_core::{Comparison, Fixture, Logits};
use serde_json::{Map, Value, json};

use super::report::SAME_TOLERANCE;
use super::report::rows::Case;
use super::report::select;
use super::report::text::{wrap_width, wrapped};
use crate::cli::{Format, TranslateArgs, TranslateTo};
use crate::registry;

/// Prints the translation of `args.kwargs` (and the optional generation config).
pub fn run(args: &TranslateArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    let kwargs = super::json_object_arg("--kwargs", &args.kwargs)?;
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
    let resolved = hf_sampling::provenance(&kwargs, config.as_ref(), &params);
    if args.to == TranslateTo::LlamaCpp {
        return to_llama_cpp(
            args,
            &kwargs,
            config.as_ref(),
            &params,
            &resolved,
            &processors,
            out,
        );
    }
    let t = candle_adapter::translate(&params).context("cannot translate")?;
    match args.format {
        Format::Json => {
            let doc = json!({
                "schema": 1,
                "kwargs": kwargs,
                "resolved": resolved_json(&resolved),
                "transformers_processors": processors,
                "translation": t,
            });
            serde_json::to_writer_pretty(&mut *out, &doc)?;
            writeln!(out)?;
        }
        Format::Text => {
            write_resolved(&resolved, &processors, out)?;
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

type Resolved = [(&'static str, Value, hf_sampling::Source)];

fn resolved_json(resolved: &Resolved) -> Vec<Value> {
    resolved
        .iter()
        .map(|(key, value, source)| json!({ "key": key, "value": value, "source": source }))
        .collect()
}

fn write_resolved(
    resolved: &Resolved,
    processors: &[&str],
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let from = |source: hf_sampling::Source| match source {
        hf_sampling::Source::Kwargs => "kwargs",
        hf_sampling::Source::GenerationConfig => "generation_config.json",
        hf_sampling::Source::Default => "transformers' default",
    };
    writeln!(out, "resolved:")?;
    for (key, value, source) in resolved {
        writeln!(out, "  {key} = {value}  ({})", from(*source))?;
    }
    let chain = if processors.is_empty() {
        "no processor (raw logits)".to_string()
    } else {
        processors.join(" → ")
    };
    wrapped(out, wrap_width(), "transformers: ", 4, &chain)?;
    Ok(())
}

/// One fixture of the proof.
#[derive(Debug, serde::Serialize)]
struct Proof {
    fixture: String,
    same: bool,
    kept_transformers: usize,
    kept_llama_cpp: usize,
    tv: f64,
    max_abs_diff: f64,
}

/// The llama.cpp translation, proven on the bundled SmolLM2 fixtures.
fn to_llama_cpp(
    args: &TranslateArgs,
    kwargs: &Map<String, Value>,
    config: Option<&GenerationConfig>,
    params: &hf_sampling::GenerationParams,
    resolved: &Resolved,
    processors: &[&str],
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    // The resolved values as kwargs: what transformers really runs with.
    let mut full = params.as_kwargs();
    for (key, value) in kwargs {
        full.entry(key.clone()).or_insert_with(|| value.clone());
    }
    let translation = llamacpp_sampling::translate::matching_request(&full, args.context_len);
    let proof = match &translation {
        Ok(request) => prove(kwargs, config, request)?,
        Err(_) => Vec::new(),
    };
    match args.format {
        Format::Json => {
            let (request, flags, unmatched) = match &translation {
                Ok(r) => (
                    Value::Object(r.clone()),
                    json!(llamacpp_sampling::translate::cli_flags(r)),
                    json!([]),
                ),
                Err(u) => (Value::Null, Value::Null, json!(u)),
            };
            let doc = json!({
                "schema": 1,
                "kwargs": kwargs,
                "resolved": resolved_json(resolved),
                "transformers_processors": processors,
                "to": "llama.cpp",
                "llama_server_request": request,
                "llama_cli_flags": flags,
                "unmatched": unmatched,
                "recipe": llamacpp_sampling::translate::RECIPE,
                "proof": proof,
            });
            serde_json::to_writer_pretty(&mut *out, &doc)?;
            writeln!(out)?;
        }
        Format::Text => {
            write_resolved(resolved, processors, out)?;
            match &translation {
                Ok(request) => {
                    let width = wrap_width();
                    // Spaces after commas let the JSON wrap; it stays valid JSON.
                    let json = Value::Object(request.clone())
                        .to_string()
                        .replace(',', ", ");
                    wrapped(out, width, "llama-server request: ", 4, &json)?;
                    let flags = llamacpp_sampling::translate::cli_flags(request).join(" ");
                    wrapped(out, width, "llama-cli flags: ", 4, &flags)?;
                    writeln!(
                        out,
                        "  (repeat_last_n {} must be at least your context length: --context-len)",
                        args.context_len
                    )?;
                    wrapped(out, width, "why: ", 4, llamacpp_sampling::translate::RECIPE)?;
                    let same = proof.iter().filter(|p| p.same).count();
                    let max_tv = proof.iter().map(|p| p.tv).fold(0.0, f64::max);
                    writeln!(
                        out,
                        "proof: same as transformers on {same} of {} bundled SmolLM2 fixtures (max TV {max_tv:.2e})",
                        proof.len()
                    )?;
                    for p in proof.iter().filter(|p| !p.same) {
                        writeln!(
                            out,
                            "  differs on {}: kept {} vs {}, TV {:.2e}",
                            p.fixture, p.kept_transformers, p.kept_llama_cpp, p.tv
                        )?;
                    }
                }
                Err(unmatched) => {
                    writeln!(out, "llama.cpp cannot reproduce these kwargs:")?;
                    for u in unmatched {
                        writeln!(out, "  {u}")?;
                    }
                }
            }
        }
    }
    Ok(())
}

/// transformers (hf-rust) and llama.cpp with `request` on each bundled
/// SmolLM2 fixture.
fn prove(
    kwargs: &Map<String, Value>,
    config: Option<&GenerationConfig>,
    request: &Map<String, Value>,
) -> anyhow::Result<Vec<Proof>> {
    let semantics = registry::all(config);
    let hf = registry::find(&semantics, "hf-rust")?.prepare(kwargs)?;
    let llama = registry::find(&semantics, "llama.cpp")?.prepare(request)?;
    let mut proof = Vec::new();
    for (path, settings) in select::fixture_files(&[])? {
        if settings.is_some() {
            continue; // the 4-token tie demonstration
        }
        let fx = Fixture::load(&path)?;
        let case = Case::fixture(&fx, None)?;
        let logits = Logits::from_f32(case.logits);
        let left = hf.distribution(&logits, &case.context)?;
        let right = llama.distribution(&logits, &case.context)?;
        let cmp = Comparison::new(left.probs(), right.probs())?;
        proof.push(Proof {
            fixture: case.name.clone(),
            same: cmp.only_left.is_empty()
                && cmp.only_right.is_empty()
                && cmp.max_abs_diff <= SAME_TOLERANCE,
            kept_transformers: cmp.kept_left,
            kept_llama_cpp: cmp.kept_right,
            tv: cmp.tv,
            max_abs_diff: cmp.max_abs_diff,
        });
    }
    Ok(proof)
}
