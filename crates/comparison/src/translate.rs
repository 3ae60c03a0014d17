//! `compare translate`: transformers generate kwargs → the setup of another
//! engine that reproduces them, as that engine's semantics gives it
//! ([`parity_core::Semantics::translate`]).
//!
//! A translation that is a setup of its semantics is proven before it is
//! printed as exact: it runs on every bundled SmolLM2 fixture beside
//! transformers (the computed reference) and the verdicts are printed with it.

use std::io::Write;

use anyhow::Context;
use hf_sampling::GenerationConfig;
use parity_core::{
    AnySemantics, Comparison, Fixture, Logits, Role, TranslateOptions, TranslationLine,
};
use serde::Serialize;
use serde_json::{Map, Value};

use super::report::rows::{Case, verdict};
use super::report::select;
use super::report::text::{wrap_width, wrapped};
use super::report::{SCHEMA, TransformersWarning, Verdict};
use crate::cli::{Format, TranslateArgs};
use crate::{Engines, Progress};

/// `compare translate --format json` (docs/report-schema.md); fields in
/// alphabetical order, as the schema lists them. Values of other types
/// (the proof, the warning) go through `serde_json::Value`, whose objects
/// keep their keys sorted too.
#[derive(Serialize, schemars::JsonSchema)]
struct Document<'a> {
    kwargs: &'a Map<String, Value>,
    #[schemars(with = "Option<Vec<Proof>>")]
    proof: Option<Value>,
    resolved: Vec<ResolvedValue<'a>>,
    sampling: bool,
    schema: u32,
    to: &'a str,
    transformers_processors: &'a [&'a str],
    #[schemars(with = "Option<TransformersWarning>")]
    transformers_warning: Value,
    translation: &'a Map<String, Value>,
}

/// A resolved `compare translate`: the kwargs as transformers resolves
/// them (and warns about), and the engine they go to.
struct Plan<'e> {
    kwargs: Map<String, Value>,
    params: hf_sampling::GenerationParams,
    processors: Vec<&'static str>,
    resolved: Vec<(&'static str, Value, hf_sampling::Source)>,
    warning: Option<TransformersWarning>,
    to: &'e str,
    engine: &'e dyn AnySemantics,
    /// The resolved values as kwargs: what transformers really runs with.
    full: Map<String, Value>,
}

impl<'e> Plan<'e> {
    fn resolve(
        args: &'e TranslateArgs,
        config: Option<&GenerationConfig>,
        engines: &'e Engines,
    ) -> anyhow::Result<Self> {
        let kwargs = super::json_object_arg("--kwargs", &args.kwargs)?;
        let params = hf_sampling::resolve(&kwargs, config)
            .context("transformers would refuse these kwargs")?;
        let processors = params
            .processor_names()
            .context("transformers would refuse these kwargs")?;
        let resolved = hf_sampling::provenance(&kwargs, config, &params);
        let warning = TransformersWarning::for_kwargs(&kwargs, config);
        let to = args.to.as_deref().unwrap_or(engines.defaults.translation);
        let engine = engines.find(to)?;
        let mut full = params.as_kwargs();
        for (key, value) in &kwargs {
            full.entry(key.clone()).or_insert_with(|| value.clone());
        }
        Ok(Self {
            kwargs,
            params,
            processors,
            resolved,
            warning,
            to,
            engine,
            full,
        })
    }
}

/// Prints the translation of `args.kwargs` (and the optional generation
/// config) for the engine `--to` names: whatever its semantics'
/// [`parity_core::Semantics::translate`] gives, proven on the bundled
/// fixtures when it is a setup of that semantics.
/// `config` is the `--generation-config` the registry was built with.
pub fn run(
    args: &TranslateArgs,
    config: Option<&GenerationConfig>,
    engines: &Engines,
    progress: &mut Progress,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let Plan {
        kwargs,
        params,
        processors,
        resolved,
        warning,
        to,
        engine,
        full,
    } = Plan::resolve(args, config, engines)?;
    if let Some(w) = &warning {
        // Best effort: stderr is for people; the JSON carries it too.
        let _ = w.write(wrap_width(), progress.notes());
    }
    let registry = &engines.semantics[..];
    let options = TranslateOptions {
        context_len: args.context_len,
    };
    let translation = engine
        .translate(&full, &options)
        .with_context(|| {
            format!(
                "{to} has no translation (--to takes one of: {})",
                engines.translators().join(", ")
            )
        })?
        .context("cannot translate")?;
    let proof = match &translation.params {
        Some(setup) => prove(&kwargs, registry, engine, setup)?,
        None => Vec::new(),
    };
    match args.format {
        Format::Json => {
            let doc = Document {
                kwargs: &kwargs,
                proof: translation
                    .params
                    .as_ref()
                    .map(|_| serde_json::to_value(&proof))
                    .transpose()?,
                resolved: resolved_json(&resolved),
                sampling: params.do_sample,
                schema: SCHEMA,
                to,
                transformers_processors: &processors,
                transformers_warning: serde_json::to_value(&warning)?,
                translation: &translation.json,
            };
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
            let width = wrap_width();
            for line in &translation.lines {
                match line {
                    TranslationLine::Wrapped { label, text } => {
                        wrapped(out, width, label, 4, text)?;
                    }
                    // Short lines and code blocks (several lines) stay as they are.
                    TranslationLine::Plain(text)
                        if text.contains('\n') || text.chars().count() <= width =>
                    {
                        writeln!(out, "{text}")?;
                    }
                    TranslationLine::Plain(text) => {
                        // Keep the line's own indent; continuation lines go two deeper.
                        let indent = text.len() - text.trim_start_matches(' ').len();
                        wrapped(out, width, &text[..indent], indent + 2, text)?;
                    }
                }
            }
            if translation.params.is_some() {
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
                        p.fixture, p.kept_transformers, p.kept_engine, p.tv
                    )?;
                }
            }
        }
    }
    Ok(())
}

type Resolved = [(&'static str, Value, hf_sampling::Source)];

/// One resolved generate parameter (fields in alphabetical order).
#[derive(Serialize, schemars::JsonSchema)]
struct ResolvedValue<'a> {
    /// The parameter.
    key: &'a str,
    /// Where its value came from.
    source: hf_sampling::Source,
    /// The value transformers runs with.
    value: &'a Value,
}

fn resolved_json(resolved: &Resolved) -> Vec<ResolvedValue<'_>> {
    resolved
        .iter()
        .map(|(key, value, source)| ResolvedValue {
            key,
            source: *source,
            value,
        })
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
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
struct Proof {
    fixture: String,
    same: bool,
    kept_transformers: usize,
    kept_engine: usize,
    tv: f64,
    max_abs_diff: f64,
}

/// transformers (its computed reference) and `engine` with `setup` on each
/// bundled SmolLM2 fixture.
fn prove(
    kwargs: &Map<String, Value>,
    registry: &[Box<dyn AnySemantics>],
    engine: &dyn AnySemantics,
    setup: &Map<String, Value>,
) -> anyhow::Result<Vec<Proof>> {
    let reference = registry
        .iter()
        .find(|s| s.role() == Role::ReferenceComputed)
        .context("the registry has no computed reference (Role::ReferenceComputed)")?;
    let hf = reference.prepare(kwargs)?;
    let engine_setup = engine.prepare(setup)?;
    let mut proof = Vec::new();
    for (path, settings) in select::fixture_files(&[])? {
        if settings.is_some() {
            continue; // the 4-token tie demonstration
        }
        let fx = Fixture::load(&path)?;
        let case = Case::fixture(&fx, None)?;
        let logits = Logits::from_f32(case.logits);
        let left = hf.distribution(&logits, &case.context)?;
        let right = engine_setup.distribution(&logits, &case.context)?;
        let cmp = Comparison::new(left.probs(), right.probs())?;
        proof.push(Proof {
            fixture: case.name.clone(),
            same: verdict(&cmp, None) == Verdict::Same,
            kept_transformers: cmp.kept_left,
            kept_engine: cmp.kept_right,
            tv: cmp.tv,
            max_abs_diff: cmp.max_abs_diff,
        });
    }
    Ok(proof)
}

/// The exact setup `engine` offers for these generate kwargs (its
/// [`AnySemantics::translate`] of the kwargs as transformers resolves them,
/// the machinery `compare translate --to` proves), as its params; or why
/// there is none, in words. `compare diff --setup exact` runs it.
pub(crate) fn exact_params(
    engine: &dyn AnySemantics,
    kwargs: &Map<String, Value>,
    context_len: usize,
) -> Result<Map<String, Value>, String> {
    let params = hf_sampling::resolve(kwargs, None)
        .map_err(|e| format!("transformers would refuse these kwargs: {e}"))?;
    let mut full = params.as_kwargs();
    for (key, value) in kwargs {
        full.entry(key.clone()).or_insert_with(|| value.clone());
    }
    let options = TranslateOptions {
        context_len: context_len.max(1),
    };
    match engine.translate(&full, &options) {
        None => Err("its crate offers no exact setup (no `compare translate --to` recipe)".into()),
        Some(Err(e)) => Err(e.to_string()),
        Some(Ok(translation)) => translation.params.ok_or_else(|| {
            let words: Vec<String> = translation
                .lines
                .iter()
                .map(|line| match line {
                    TranslationLine::Wrapped { label, text } => format!("{label}{text}"),
                    TranslationLine::Plain(text) => text.trim().to_string(),
                })
                .collect();
            format!("no setup reproduces these kwargs ({})", words.join(" "))
        }),
    }
}

/// The JSON Schema of this command's `--format json` document
/// ([`crate::json_schema`]).
pub(crate) fn json_schema() -> schemars::Schema {
    schemars::schema_for!(Document<'static>)
}
