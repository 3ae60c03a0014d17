//! `compare semantics`: every semantics in the registry, with its engine,
//! what it was verified against, and its params' names and defaults.

use std::io::Write;

use serde_json::json;

use super::report::SCHEMA;
use super::report::text::{wrap_width, wrapped};
use crate::Engines;
use crate::cli::{Format, SemanticsArgs};

/// Prints the list.
pub fn run(args: &SemanticsArgs, engines: &Engines, out: &mut dyn Write) -> anyhow::Result<()> {
    let all = &engines.semantics;
    match args.format {
        Format::Json => {
            let list: Vec<_> = all
                .iter()
                .map(|s| {
                    let info = s.info();
                    json!({
                        "name": info.name,
                        "engine": info.engine,
                        "summary": info.summary,
                        "verified_against": info.verified_against,
                        "reads_generation_config": s.reads_generation_config(),
                        "role": s.role(),
                        "params": info.params,
                    })
                })
                .collect();
            serde_json::to_writer_pretty(
                &mut *out,
                &json!({ "schema": SCHEMA, "semantics": list }),
            )?;
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
            }
        }
    }
    Ok(())
}
