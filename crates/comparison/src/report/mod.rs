//! `compare report`: every pair of semantics on fixture logits, row by row.
//!
//! For each fixture and setting (a set of transformers generate kwargs),
//! each semantics of a pair turns the same logits into a full distribution:
//! `hf` from the scores transformers recorded, every other one from the
//! params its own crate derives from the kwargs
//! ([`parity_core::Semantics::from_generate`]). A row compares two of them.
//! Nothing here decides what a semantics does or why two differ: each crate
//! does; this module lines the answers up.
//!
//! Here: the run and its output; `plan` resolves the options first (with
//! `select`, which picks fixtures, settings and pairs), `rows` builds each
//! row in steps, `summary` counts them, `schema` is
//! the JSON wire format and `text` the table for people.

use std::io::{self, Write};

use anyhow::bail;
use parity_core::AnySemantics;

use crate::cli::{ReportArgs, ReportFormat};
use crate::{Engines, Progress};
use plan::{Input, Plan};

mod html;
mod plan;
pub(crate) mod rows;
mod schema;
pub(crate) mod select;
mod summary;
pub(crate) mod text;
pub(crate) mod view;

pub(crate) use schema::text_fields;
pub use schema::{
    Draws, FragileRow, IgnoredFlag, Penalty, Report, Row, Summary, TokenRow, TopToken,
    TransformersWarning, Verdict,
};
pub use select::DEFAULT_SETTINGS;

/// Version of the JSON document (`docs/report-schema.md`).
pub const SCHEMA: u32 = 2;

/// Probabilities closer than this are float rounding: the verdict is `same`.
pub const SAME_TOLERANCE: f64 = 1e-5;

/// The finished report.
pub struct Outcome {
    /// The report.
    pub report: Report,
}

impl Outcome {
    /// Any row over `--max-tv` / `--max-abs-diff` (exit status 1).
    pub fn over_threshold(&self) -> bool {
        self.report.summary.over_threshold > 0
    }
}

/// Runs the report and writes it: in text, each fixture's table as soon as
/// its rows are done (so a pipe sees them stream), then the summary; in
/// JSON and HTML, the whole document at the end.
pub fn run_to(
    args: &ReportArgs,
    engines: &Engines,
    progress: &mut Progress,
    out: &mut dyn Write,
) -> anyhow::Result<Outcome> {
    let width = text::wrap_width();
    let mut first = true;
    let mut on_fixture = |rows: &[Row]| -> io::Result<()> {
        if args.format == ReportFormat::Text && !rows.is_empty() {
            if !first {
                writeln!(out)?;
            }
            first = false;
            text::write_fixture(rows, width, out)?;
            out.flush()?;
        }
        Ok(())
    };
    let outcome = run_with(args, &engines.semantics, progress, &mut on_fixture)?;
    match args.format {
        ReportFormat::Json => {
            serde_json::to_writer_pretty(&mut *out, &outcome.report)?;
            writeln!(out)?;
        }
        ReportFormat::Html => html::write_page(&outcome.report, out)?,
        ReportFormat::Text => {
            writeln!(out)?;
            text::write_summary(&outcome.report.summary, out)?;
        }
    }
    Ok(outcome)
}

/// Runs the report with the semantics of `engines`, writing nothing.
pub fn run(
    args: &ReportArgs,
    engines: &Engines,
    progress: &mut Progress,
) -> anyhow::Result<Outcome> {
    run_with(args, &engines.semantics, progress, &mut |_| Ok(()))
}

fn run_with(
    args: &ReportArgs,
    registry: &[Box<dyn AnySemantics>],
    progress: &mut Progress,
    on_fixture: &mut dyn FnMut(&[Row]) -> io::Result<()>,
) -> anyhow::Result<Outcome> {
    let plan = Plan::resolve(args, registry)?;
    if let Some(w) = &plan.transformers_warning {
        // Best effort: stderr is for people; the JSON carries it too.
        let _ = w.write(text::wrap_width(), progress.notes());
    }
    for d in &plan.version_notes {
        let _ = text::wrapped(progress.notes(), text::wrap_width(), "note: ", 6, d);
    }
    let rows = run_plan(&plan, registry, progress, on_fixture)?;
    if rows.is_empty() {
        bail!("nothing compared: {}", plan.why_nothing);
    }
    let summary = summary::summarise(&rows, args);
    Ok(Outcome {
        report: Report {
            schema: SCHEMA,
            summary,
            rows,
            transformers_warning: plan.transformers_warning,
        },
    })
}

/// Every row of `plan`, in fixture order; `on_fixture` sees each fixture's
/// as soon as they are done.
fn run_plan(
    plan: &Plan,
    registry: &[Box<dyn AnySemantics>],
    progress: &mut Progress,
    on_fixture: &mut dyn FnMut(&[Row]) -> io::Result<()>,
) -> anyhow::Result<Vec<Row>> {
    let recorder = hf_sampling::Hf::default();
    // One fixture's rows: independent of every other fixture's, so they run
    // on every core (rayon) and come back here in fixture order.
    let fixture_rows = |i: usize| -> anyhow::Result<Vec<Row>> {
        let planned = &plan.fixtures[i];
        let fx = &planned.fixture;
        let vocab = fx.model.as_ref().and_then(|m| plan.vocabs.get(&m.vocab));
        let case = rows::CaseRows::new(rows::Case::fixture(fx, vocab)?, &recorder, registry);
        let mut rows = Vec::new();
        match &plan.input {
            Input::Kwargs { kwargs, config } => {
                let run = rows::Run {
                    name: "kwargs",
                    kwargs,
                    generation_config: config.as_ref().map(hf_sampling::GenerationConfig::values),
                    recorded: None,
                    exact: None,
                };
                rows.extend(case.setting_rows(&run, &plan.pairs, &plan.row_args)?);
            }
            Input::Recorded => {
                for &s in &planned.settings {
                    let run = rows::Run::recorded(&fx.settings[s]);
                    rows.extend(case.setting_rows(&run, &plan.pairs, &plan.row_args)?);
                }
            }
        }
        Ok(rows)
    };
    let mut rows = Vec::new();
    std::thread::scope(|scope| -> anyhow::Result<()> {
        let (tx, rx) = std::sync::mpsc::channel();
        let (fixture_rows, count) = (&fixture_rows, plan.fixtures.len());
        scope.spawn(move || {
            use rayon::prelude::*;
            // Stops handing out fixtures once the receiver is gone (an
            // earlier fixture failed).
            let _ = (0..count)
                .into_par_iter()
                .try_for_each_with(tx, |tx, i| tx.send((i, fixture_rows(i))));
        });
        let mut arrived = std::collections::BTreeMap::new();
        for (next, planned) in plan.fixtures.iter().enumerate() {
            let fx = &planned.fixture;
            progress.say(&format!("[{}/{}] {}", next + 1, count, fx.name));
            let result = loop {
                if let Some(r) = arrived.remove(&next) {
                    break r;
                }
                match rx.recv() {
                    Ok((i, r)) => {
                        arrived.insert(i, r);
                    }
                    Err(_) => bail!("the rows of {} were never computed", fx.path.display()),
                }
            };
            progress.done();
            if !planned.missing.is_empty() {
                progress.note(&format!(
                    "note: {} does not record {}; skipped there ({})",
                    fx.name,
                    planned.missing.join(", "),
                    fx.path.display()
                ));
            }
            let fixture_rows = result?;
            on_fixture(&fixture_rows)?;
            rows.extend(fixture_rows);
        }
        Ok(())
    })?;
    progress.done();
    Ok(rows)
}

/// The JSON Schema of this command's `--format json` document
/// ([`crate::json_schema`]).
pub(crate) fn json_schema() -> schemars::Schema {
    schemars::schema_for!(schema::Report)
}
