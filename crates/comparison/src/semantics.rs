//! `compare semantics`: every semantics in the registry, with its engine,
//! what it was verified against, and its params' names and defaults.

use std::io::Write;

use serde::Serialize;

use super::report::SCHEMA;
use super::report::text::{wrap_width, wrapped};
use crate::Engines;
use crate::cli::{Format, SemanticsArgs};

/// `compare semantics --format json` (docs/report-schema.md).
#[derive(Serialize, schemars::JsonSchema)]
struct Document<'a> {
    /// The version of the JSON documents (`compare report`'s `schema`).
    schema: u32,
    /// Every semantics in the registry, in `compare semantics`' order.
    semantics: Vec<Entry<'a>>,
}

// Fields in alphabetical order, as the schema lists them.
/// One semantics.
#[derive(Serialize, schemars::JsonSchema)]
struct Entry<'a> {
    /// The engine and version it reproduces.
    engine: &'a str,
    /// The name `--semantics`, `--pairs` and reports use.
    name: &'a str,
    /// Its params, with their defaults.
    // A JSON value, so its objects' keys are sorted like the rest.
    #[schemars(with = "Vec<parity_core::ParamInfo>")]
    params: serde_json::Value,
    /// Whether `--generation-config` (a model's generation_config.json)
    /// changes what it samples with.
    reads_generation_config: bool,
    /// Where it stands in `compare report` when no `--pairs` is given.
    role: parity_core::Role,
    /// What `seed` does on each of its request routes.
    // A JSON value, like `params`.
    #[schemars(with = "Vec<parity_core::RouteSeed>")]
    seed: serde_json::Value,
    /// One line: what it computes.
    summary: &'a str,
    /// What it was verified against, and how.
    verified_against: &'a str,
}

/// Prints the list.
pub fn run(args: &SemanticsArgs, engines: &Engines, out: &mut dyn Write) -> anyhow::Result<()> {
    let all = &engines.semantics;
    match args.format {
        Format::Json => {
            let semantics: Vec<Entry<'_>> = all
                .iter()
                .map(|s| {
                    let info = s.info();
                    Ok(Entry {
                        engine: info.engine,
                        name: info.name,
                        params: serde_json::to_value(info.params)?,
                        reads_generation_config: s.reads_generation_config(),
                        role: s.role(),
                        seed: serde_json::to_value(s.seed())?,
                        summary: info.summary,
                        verified_against: info.verified_against,
                    })
                })
                .collect::<serde_json::Result<_>>()?;
            let doc = Document {
                schema: SCHEMA,
                semantics,
            };
            serde_json::to_writer_pretty(&mut *out, &doc)?;
            writeln!(out)?;
        }
        Format::Text => {
            let columns = wrap_width();
            for (i, s) in all.iter().enumerate() {
                let info = s.info();
                if i > 0 {
                    writeln!(out)?;
                }
                wrapped(out, columns, &format!("{}: ", info.name), 4, info.engine)?;
                wrapped(out, columns, "  ", 4, info.summary)?;
                wrapped(
                    out,
                    columns,
                    "  verified against: ",
                    4,
                    info.verified_against,
                )?;
                if s.reads_generation_config() {
                    writeln!(out, "  reads the model's generation_config.json")?;
                }
                let width = info.params.iter().map(|p| p.name.len()).max().unwrap_or(0);
                for p in info.params {
                    // A default such as ["penalties","dry",...] may break after its commas.
                    let text = format!("{}: {}", p.default.replace("\",\"", "\", \""), p.meaning);
                    let first = format!("    {:<width$}  default ", p.name);
                    wrapped(out, columns, &first, width + 6, &text)?;
                }
                for seed in s.seed() {
                    let label = format!("  seed, {}: ", seed.endpoint);
                    wrapped(out, columns, &label, 6, &seed.line())?;
                    if !seed.note.is_empty() {
                        wrapped(out, columns, "    note: ", 6, seed.note)?;
                    }
                }
            }
        }
    }
    Ok(())
}

/// The seed table of docs/semantics.md, from what each semantics states
/// ([`parity_core::Semantics::seed`]): one row per route and server setup.
/// A test keeps the committed table equal to this.
pub fn seed_table(semantics: &[Box<dyn parity_core::AnySemantics>]) -> String {
    let mut out = String::from(
        "| semantics | route | setup | with a seed | without | versions read | source |\n\
         |---|---|---|---|---|---|---|\n",
    );
    for s in semantics {
        for r in s.seed() {
            let setup = if r.setup.is_empty() {
                "default"
            } else {
                r.setup
            };
            out.push_str(&format!(
                "| `{}` | {} | {} | {} | {} | {} | {} |\n",
                s.info().name,
                r.endpoint,
                setup,
                r.given.words(),
                r.absent.words(),
                r.versions,
                r.source.replace('|', "\\|")
            ));
        }
    }
    out
}

/// The JSON Schema of this command's `--format json` document
/// ([`crate::json_schema`]).
pub(crate) fn json_schema() -> schemars::Schema {
    schemars::schema_for!(Document<'static>)
}
