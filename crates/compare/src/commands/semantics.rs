//! `compare semantics`: every semantics in the registry, with its engine,
//! what it was verified against, and its params' names and defaults.

use std::io::Write;

use serde_json::json;

use parity_core::AnySemantics;

use super::report::SCHEMA;
use crate::cli::{Format, SemanticsArgs};

/// Prints the list.
pub fn run(
    args: &SemanticsArgs,
    all: &[Box<dyn AnySemantics>],
    out: &mut dyn Write,
) -> anyhow::Result<()> {
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
            serde_json::to_writer_pretty(&mut *out, &json!({ "schema": SCHEMA, "semantics": list }))?;
            writeln!(out)?;
        }
        Format::Text => {
            for (i, s) in all.iter().enumerate() {
                let info = s.info();
                if i > 0 {
                    writeln!(out)?;
                }
                writeln!(out, "{}: {}", info.name, info.engine)?;
                writeln!(out, "  {}", info.summary)?;
                writeln!(out, "  verified against: {}", info.verified_against)?;
                if s.reads_generation_config() {
                    writeln!(out, "  reads the model's generation_config.json")?;
                }
                let width = info.params.iter().map(|p| p.name.len()).max().unwrap_or(0);
                for p in info.params {
                    writeln!(
                        out,
                        "    {:<width$}  default {}: {}",
                        p.name, p.default, p.meaning
                    )?;
                }
            }
        }
    }
    Ok(())
}
