//! `compare trace`: along a recorded transformers generation, how far is a
//! port's next-token distribution from transformers', step by step, and how
//! much of that is the model (its logits) and how much the sampling setup.
//!
//! A trace (`fixtures/traces/NAME.safetensors`, scripts/reference/
//! trace_reference.py, docs/fixtures.md) holds, per generated token, the
//! context, transformers' raw logits, the processed scores it drew from and
//! the token. The port's logits for the same contexts come from the real
//! port, a [`parity_core::trace::Port`] of the registry ([`Engines::ports`]):
//! a model run here, or logits an engine recorded beside the trace
//! (`NAME.PORT.safetensors`). Each port lives in its engine's crate.
//!
//! Per step, with T = transformers' semantics (`hf-rust` with the trace's
//! kwargs) and P = the port's sampling setup:
//! - *logits*   = TV(T on transformers' logits, T on the port's logits);
//! - *sampling* = TV(T on the port's logits, P on the port's logits);
//! - *total*    = TV(T on transformers' logits, P on the port's logits).
//!
//! TV is a metric, so total ≤ logits + sampling on every step.

use std::io::Write;

use anyhow::{Context as _, bail};
use parity_core::metrics::{Comparison, argmax_first, max_logit_diff, softmax_f64};
use parity_core::trace::{Trace, bundled_traces, load_trace, write_port_logits};
use parity_core::{AnySemantics, Context, Logits, Vocab};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::cli::{Format, TraceArgs};
use crate::engines::find;
use crate::{Engines, Progress};

/// One step of a trace.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub(crate) struct StepRow {
    /// Step index (0 = the first generated token).
    pub step: usize,
    /// The token transformers sampled.
    pub token: i64,
    /// max |port logit − transformers logit|.
    pub max_abs_logit_diff: f64,
    /// transformers' raw argmax.
    pub argmax: usize,
    /// The port's raw argmax.
    pub port_argmax: usize,
    /// TV between the raw softmaxes (f64) of the two logit vectors.
    pub tv_raw: f64,
    /// TV(T on transformers' logits, T on the port's logits).
    pub logits: f64,
    /// TV(T on the port's logits, P on the port's logits).
    pub sampling: f64,
    /// TV(T on transformers' logits, P on the port's logits).
    pub total: f64,
    /// Tokens T keeps on transformers' logits.
    pub kept: usize,
    /// Tokens T keeps on the port's logits.
    pub kept_on_port_logits: usize,
    /// Tokens P keeps on the port's logits.
    pub kept_port: usize,
    /// Whether T keeps another set of tokens on the port's logits.
    pub kept_set_changed: bool,
    /// Whether hf-rust's scores on transformers' logits are bitwise the
    /// recorded processed scores (`null` with `--kwargs`: nothing recorded).
    pub scores_match: Option<bool>,
    /// 1 − Π over steps ≤ this one of (1 − total).
    pub p_diverged: f64,
}

/// Mean and max of one distance over the steps.
#[derive(Debug, Clone, Copy, Serialize, schemars::JsonSchema)]
pub struct Stat {
    /// Mean over steps.
    pub mean: f64,
    /// Max over steps.
    pub max: f64,
}

impl Stat {
    fn of(xs: impl Iterator<Item = f64> + Clone) -> Self {
        let n = xs.clone().count().max(1) as f64;
        Self {
            mean: xs.clone().sum::<f64>() / n,
            max: xs.fold(0.0, f64::max),
        }
    }
}

/// What a trace's steps add up to.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Summary {
    /// Steps compared.
    pub steps: usize,
    /// max |Δ logit| over steps.
    pub max_abs_logit_diff: Stat,
    /// TV of the raw softmaxes.
    pub tv_raw: Stat,
    /// The logits distance.
    pub logits: Stat,
    /// The sampling distance.
    pub sampling: Stat,
    /// The total distance.
    pub total: Stat,
    /// Steps where the port's raw argmax is not transformers'.
    pub argmax_flips: Vec<usize>,
    /// Steps where T keeps another set of tokens on the port's logits.
    pub kept_set_changes: Vec<usize>,
    /// 1 − Π(1 − logits_t): divergence within the steps from the logits alone.
    pub p_diverged_logits: f64,
    /// 1 − Π(1 − total_t): the probability the port's text diverges from
    /// transformers' within these steps under the best coupling.
    pub p_diverged: f64,
    /// Steps where hf-rust reproduced the recorded scores bitwise (`null` with `--kwargs`).
    pub scores_match: Option<usize>,
}

/// The report for one trace.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub(crate) struct TraceReport {
    /// The trace's name.
    pub trace: String,
    /// The trace file.
    pub file: String,
    /// The user prompt.
    pub prompt: String,
    /// The text transformers generated over the steps compared, when the vocabulary is known.
    pub text: Option<String>,
    /// The generate kwargs transformers' side runs with.
    pub kwargs: Map<String, Value>,
    /// Whether `kwargs` are the ones the trace was recorded with.
    pub kwargs_recorded: bool,
    /// The port (`compare trace --help` lists them).
    pub port: String,
    /// The semantics that models the port's sampling.
    pub port_semantics: String,
    /// The port's sampling setup in words, when the semantics gives one.
    pub port_setup: Option<String>,
    /// Per step.
    pub rows: Vec<StepRow>,
    /// Over the steps.
    pub summary: Summary,
}

/// Computes the report for one trace given the port's logits.
pub(crate) fn compare_trace(
    trace: &Trace,
    port_logits: &[Vec<f32>],
    kwargs: &Map<String, Value>,
    kwargs_recorded: bool,
    registry: &[Box<dyn AnySemantics>],
    port_semantics: &str,
    port_params: Option<&Map<String, Value>>,
) -> anyhow::Result<(Vec<StepRow>, Summary, Option<String>)> {
    let hf = registry
        .iter()
        .find(|s| s.role() == parity_core::Role::ReferenceComputed)
        .context("the registry has no computed reference (Role::ReferenceComputed)")?
        .prepare(kwargs)
        .context("transformers would refuse these kwargs")?;
    let port_sem = find(registry, port_semantics)?;
    let port = match port_params {
        Some(p) => port_sem
            .prepare(p)
            .with_context(|| format!("--port-params for {port_semantics}"))?,
        None => port_sem
            .prepare_generate(kwargs)
            .with_context(|| {
                format!("{port_semantics} cannot express these kwargs; give its params with --port-params")
            })?
            .with_context(|| format!("{port_semantics}: translating the kwargs"))?,
    };
    let setup = port.describe().map(|d| d.to_string());
    let mut rows = Vec::with_capacity(port_logits.len());
    let mut survive = 1.0f64;
    let mut survive_logits = 1.0f64;
    for (t, port_l) in port_logits.iter().enumerate() {
        let hf_l = &trace.logits[t];
        if port_l.len() != hf_l.len() {
            bail!(
                "step {t}: the port gives {} logits, transformers {}",
                port_l.len(),
                hf_l.len()
            );
        }
        let ids = &trace.input_ids[..trace.prompt_len + t];
        let ctx = Context::new(ids, Some(trace.prompt_len))?;
        let at = |e: parity_core::Error| anyhow::anyhow!("step {t}: {e}");
        let hf_logits = Logits::from_f32(hf_l);
        let port_logits = Logits::from_f32(port_l);
        let t_hf = hf.distribution(&hf_logits, &ctx).map_err(at)?;
        let t_port = hf.distribution(&port_logits, &ctx).map_err(at)?;
        let p_port = port.distribution(&port_logits, &ctx).map_err(at)?;
        let tv = |a: &[f64], b: &[f64]| -> anyhow::Result<f64> { Ok(Comparison::new(a, b)?.tv) };
        let logits = tv(t_hf.probs(), t_port.probs())?;
        let sampling = tv(t_port.probs(), p_port.probs())?;
        let total = tv(t_hf.probs(), p_port.probs())?;
        let scores_match = kwargs_recorded.then(|| {
            let recorded = trace.dense_scores(t);
            t_hf.scores().is_some_and(|s| {
                s.len() == recorded.len()
                    && s.iter()
                        .zip(&recorded)
                        .all(|(a, b)| a.to_bits() == b.to_bits())
            })
        });
        survive *= 1.0 - total;
        survive_logits *= 1.0 - logits;
        rows.push(StepRow {
            step: t,
            token: trace.token(t),
            max_abs_logit_diff: max_logit_diff(hf_l, port_l),
            argmax: argmax_first(hf_l),
            port_argmax: argmax_first(port_l),
            tv_raw: tv(&softmax_f64(hf_l), &softmax_f64(port_l))?,
            logits,
            sampling,
            total,
            kept: t_hf.kept().len(),
            kept_on_port_logits: t_port.kept().len(),
            kept_port: p_port.kept().len(),
            kept_set_changed: t_hf.kept() != t_port.kept(),
            scores_match,
            p_diverged: 1.0 - survive,
        });
    }
    let summary = Summary {
        steps: rows.len(),
        max_abs_logit_diff: Stat::of(rows.iter().map(|r| r.max_abs_logit_diff)),
        tv_raw: Stat::of(rows.iter().map(|r| r.tv_raw)),
        logits: Stat::of(rows.iter().map(|r| r.logits)),
        sampling: Stat::of(rows.iter().map(|r| r.sampling)),
        total: Stat::of(rows.iter().map(|r| r.total)),
        argmax_flips: rows
            .iter()
            .filter(|r| r.argmax != r.port_argmax)
            .map(|r| r.step)
            .collect(),
        kept_set_changes: rows
            .iter()
            .filter(|r| r.kept_set_changed)
            .map(|r| r.step)
            .collect(),
        p_diverged_logits: 1.0 - survive_logits,
        p_diverged: 1.0 - survive,
        scores_match: kwargs_recorded
            .then(|| rows.iter().filter(|r| r.scores_match == Some(true)).count()),
    };
    Ok((rows, summary, setup))
}

/// The JSON document of `compare trace --format json`.
#[derive(Debug, Serialize, schemars::JsonSchema)]
struct Document<'a> {
    schema: u32,
    traces: &'a [TraceReport],
}

/// A resolved `compare trace`: the port, the semantics its setup is read
/// by, the overrides, and each trace loaded with the steps it runs.
struct Plan<'e> {
    port: &'e dyn parity_core::trace::Port,
    port_semantics: String,
    kwargs: Option<Map<String, Value>>,
    port_params: Option<Map<String, Value>>,
    /// Each trace, with how many of its steps run.
    traces: Vec<(Trace, usize)>,
    vocab: Option<Vocab>,
}

impl<'e> Plan<'e> {
    fn resolve(args: &TraceArgs, engines: &'e Engines) -> anyhow::Result<Self> {
        let port = engines.port(args.port.as_deref().unwrap_or(engines.defaults.port))?;
        let port_semantics = args
            .port_semantics
            .clone()
            .unwrap_or_else(|| port.semantics().to_string());
        find(&engines.semantics, &port_semantics)?;
        let kwargs = args
            .kwargs
            .as_deref()
            .map(|j| super::json_object_arg("--kwargs", j))
            .transpose()?;
        let port_params = args
            .port_params
            .as_deref()
            .map(|j| super::json_object_arg("--port-params", j))
            .transpose()?;
        if args.steps == Some(0) {
            bail!("--steps must be at least 1");
        }
        let files = match &args.trace {
            Some(f) => vec![f.clone()],
            None => bundled_traces().map_err(anyhow::Error::msg)?,
        };
        if files.is_empty() {
            bail!("no trace found in fixtures/traces/");
        }
        let mut traces = Vec::new();
        for f in &files {
            let trace = load_trace(f).map_err(anyhow::Error::msg)?;
            let steps = match args.steps {
                Some(n) if n > trace.steps() => bail!(
                    "--steps {n}, but {} has only {} steps",
                    trace.path.display(),
                    trace.steps()
                ),
                Some(n) => n,
                None => trace.steps(),
            };
            traces.push((trace, steps));
        }
        let vocab =
            Vocab::load(&parity_core::fixture::bundled_dir()?.join("smollm2/vocab.json")).ok();
        Ok(Self {
            port,
            port_semantics,
            kwargs,
            port_params,
            traces,
            vocab,
        })
    }

    /// Runs the port on each trace and compares it step by step.
    fn reports(
        &self,
        args: &TraceArgs,
        registry: &[Box<dyn AnySemantics>],
        progress: &mut Progress,
    ) -> anyhow::Result<Vec<TraceReport>> {
        let port = self.port;
        let mut reports = Vec::new();
        for (trace, steps) in &self.traces {
            let steps = *steps;
            let logits = port
                .logits(trace, steps, args.model.as_deref(), &mut |what| {
                    progress.say(what)
                })
                .map_err(anyhow::Error::msg)?;
            if let Some(dir) = &args.export_logits {
                write_port_logits(dir, trace, port.name(), &logits).map_err(anyhow::Error::msg)?;
            }
            let (kwargs, recorded) = match &self.kwargs {
                Some(k) => (k.clone(), *k == trace.kwargs),
                None => (trace.kwargs.clone(), true),
            };
            progress.say(&format!("{}: distributions", trace.name));
            let (rows, summary, port_setup) = compare_trace(
                trace,
                &logits,
                &kwargs,
                recorded,
                registry,
                &self.port_semantics,
                self.port_params.as_ref(),
            )
            .with_context(|| format!("trace {}", trace.path.display()))?;
            let text = self
                .vocab
                .as_ref()
                .filter(|v| v.len() == trace.vocab_size)
                .map(|v| {
                    (0..steps)
                        .map(|t| decode(v.token(trace.token(t) as usize).unwrap_or("")))
                        .collect::<String>()
                });
            reports.push(TraceReport {
                trace: trace.name.clone(),
                file: trace.path.display().to_string(),
                prompt: trace.prompt.clone(),
                text,
                kwargs,
                kwargs_recorded: recorded,
                port: port.name().to_string(),
                port_semantics: self.port_semantics.clone(),
                port_setup,
                rows,
                summary,
            });
        }
        Ok(reports)
    }
}

/// Runs `compare trace`.
pub fn run(
    args: &TraceArgs,
    engines: &Engines,
    progress: &mut Progress,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let plan = Plan::resolve(args, engines)?;
    let reports = plan.reports(args, &engines.semantics, progress)?;
    match args.format {
        Format::Json => {
            serde_json::to_writer_pretty(
                &mut *out,
                &Document {
                    schema: super::report::SCHEMA,
                    traces: &reports,
                },
            )?;
            writeln!(out)?;
        }
        Format::Text => {
            for (i, r) in reports.iter().enumerate() {
                if i > 0 {
                    writeln!(out)?;
                }
                write_text(out, r, plan.vocab.as_ref())?;
            }
        }
    }
    Ok(())
}

/// Byte-level BPE token text (`Ġ` space, `Ċ` newline) for display.
fn decode(token: &str) -> String {
    token.replace('Ġ', " ").replace('Ċ', "\n")
}

fn sci(x: f64) -> String {
    crate::report::view::sci(Some(x))
}

fn write_text(out: &mut dyn Write, r: &TraceReport, vocab: Option<&Vocab>) -> anyhow::Result<()> {
    use parity_core::text::one_line;
    let s = &r.summary;
    writeln!(
        out,
        "{}: {:?} + {} sampled tokens",
        r.trace,
        one_line(&r.prompt).as_ref(),
        s.steps
    )?;
    let width = super::report::text::wrap_width();
    if let Some(text) = &r.text {
        super::report::text::wrapped(out, width, "  text: ", 4, &one_line(text))?;
    }
    // Spaces after commas let the JSON wrap; it stays valid JSON.
    let kw = serde_json::to_string(&r.kwargs)?.replace(',', ", ");
    let transformers = match s.scores_match {
        Some(n) => format!(
            "generate(**{kw}); hf-rust reproduces the recorded scores at {n}/{} steps",
            s.steps
        ),
        None => format!("hf-rust with {kw} (--kwargs: not the recorded setting)"),
    };
    super::report::text::wrapped(out, width, "  transformers: ", 4, &transformers)?;
    let port = format!(
        "{} logits, sampled by `{}`{}",
        r.port,
        r.port_semantics,
        r.port_setup
            .as_deref()
            .map(|d| format!(": {}", d.replace(',', ", ")))
            .unwrap_or_default()
    );
    super::report::text::wrapped(out, width, "  port: ", 4, &port)?;
    // Within 100 columns: every figure is at most 7 characters (`4.29e-2`),
    // the kept counts at most 12 (`50/50/49152*`).
    writeln!(
        out,
        "  {:>4} {:<12} {:>11} {:<11} {:>8} {:>8} {:>8} {:>8} {:>12} {:>7}",
        "step",
        "token",
        "max|Δlogit|",
        "argmax",
        "TV raw",
        "logits",
        "sampling",
        "total",
        "kept T/T'/P",
        "P(div)"
    )?;
    for row in &r.rows {
        // What the token reads as (byte-level BPE decoded: `" bicycle"`,
        // not `"Ġbicycle"`), quoted as everywhere else.
        let tok = vocab
            .and_then(|v| v.piece(row.token as usize))
            .map(|p| p.to_string())
            .unwrap_or_default();
        let tok: String = tok.chars().take(12).collect();
        let argmax = if row.argmax == row.port_argmax {
            "same".to_string()
        } else {
            format!("{}≠{}", row.argmax, row.port_argmax)
        };
        writeln!(
            out,
            "  {:>4} {:<12} {:>11} {:<11} {:>8} {:>8} {:>8} {:>8} {:>12} {:>7}",
            row.step,
            tok,
            sci(row.max_abs_logit_diff),
            argmax,
            sci(row.tv_raw),
            sci(row.logits),
            sci(row.sampling),
            sci(row.total),
            format!(
                "{}/{}/{}{}",
                row.kept,
                row.kept_on_port_logits,
                row.kept_port,
                if row.kept_set_changed { "*" } else { "" }
            ),
            sci(row.p_diverged),
        )?;
    }
    let list = |v: &[usize]| {
        if v.is_empty() {
            "none".to_string()
        } else {
            v.iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        }
    };
    let means = format!(
        "max|Δlogit| {}/{}, TV raw {}/{}, logits {}/{}, sampling {}/{}, total {}/{}",
        sci(s.max_abs_logit_diff.mean),
        sci(s.max_abs_logit_diff.max),
        sci(s.tv_raw.mean),
        sci(s.tv_raw.max),
        sci(s.logits.mean),
        sci(s.logits.max),
        sci(s.sampling.mean),
        sci(s.sampling.max),
        sci(s.total.mean),
        sci(s.total.max)
    );
    super::report::text::wrapped(out, width, "  mean/max: ", 4, &means)?;
    let changes = format!(
        "{}; kept set changes (*) at steps: {}",
        list(&s.argmax_flips),
        list(&s.kept_set_changes)
    );
    super::report::text::wrapped(out, width, "  argmax flips at steps: ", 4, &changes)?;
    let diverges = format!(
        "{} from the logits alone, {} as the port runs",
        sci(s.p_diverged_logits),
        sci(s.p_diverged)
    );
    let label = format!(
        "  P(text diverges within {} tokens, best coupling): ",
        s.steps
    );
    super::report::text::wrapped(out, width, &label, 4, &diverges)?;
    Ok(())
}

/// The JSON Schema of this command's `--format json` document
/// ([`crate::json_schema`]).
pub(crate) fn json_schema() -> schemars::Schema {
    schemars::schema_for!(Document<'static>)
}
