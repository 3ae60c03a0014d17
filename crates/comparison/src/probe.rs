//! `compare probe`: measure a running server over HTTP and name the
//! semantics that explain it. The work is `server_probe`'s; this file reads
//! the arguments, makes one call and prints the report (docs/probe.md).

use std::io::Write;

use anyhow::{Context, bail};
use server_probe::{Api, Options, Recording};

use crate::Engines;
use crate::cli::{Format, ProbeArgs};

/// Probes the server (or replays a recording) and writes the report;
/// `Ok(true)` when `--expect` names a semantics that does not explain every
/// request (the command exits 1).
pub fn run(args: &ProbeArgs, engines: &Engines, out: &mut dyn Write) -> anyhow::Result<bool> {
    let semantics = &engines.semantics[..];
    if let Some(name) = &args.expect
        && !semantics.iter().any(|s| s.info().name == name.as_str())
    {
        let names: Vec<&str> = semantics.iter().map(|s| s.info().name).collect();
        bail!(
            "--expect {name:?}: no such semantics (one of {})",
            names.join(", ")
        );
    }
    let report = match &args.replay {
        Some(path) => {
            let bytes = parity_core::fixture::read_at_most(path, 1 << 30)
                .with_context(|| format!("--replay: reading {}", path.display()))?
                .map_err(|_| anyhow::anyhow!("--replay: {} is over 1 GiB", path.display()))?;
            let recording: Recording = serde_json::from_slice(&bytes).with_context(|| {
                format!("--replay: {} is not a probe recording", path.display())
            })?;
            server_probe::replay(&recording, semantics)?
        }
        None => {
            let options = options(args)?;
            // The --record file is opened before the first request, so a bad
            // path fails at once; it is written whatever the probe's outcome.
            let record = match &args.record {
                Some(path) => Some((
                    path,
                    std::fs::OpenOptions::new()
                        .write(true)
                        .create(true)
                        .truncate(false)
                        .open(path)
                        .with_context(|| format!("--record: cannot write {}", path.display()))?,
                )),
                None => None,
            };
            let (report, recording) = server_probe::probe(&options, semantics);
            if let Some((path, mut file)) = record {
                let text = serde_json::to_string(&recording)? + "\n";
                file.set_len(0)
                    .and_then(|()| file.write_all(text.as_bytes()))
                    .with_context(|| format!("--record: writing {}", path.display()))?;
                if report.is_err() {
                    eprintln!(
                        "--record: wrote the {} exchanges made before the failure to {}",
                        recording.exchanges.len(),
                        path.display()
                    );
                }
            }
            report?
        }
    };
    match args.format {
        Format::Json => {
            serde_json::to_writer_pretty(&mut *out, &report)?;
            writeln!(out)?;
        }
        Format::Text => server_probe::write_text(&report, out)?,
    }
    Ok(match &args.expect {
        None => false,
        Some(name) => {
            let failures = report.expect(name);
            for f in &failures {
                eprintln!("--expect {name}: {f}");
            }
            !failures.is_empty()
        }
    })
}

fn options(args: &ProbeArgs) -> anyhow::Result<Options> {
    let (Some(server), Some(api)) = (&args.server, &args.api) else {
        bail!("{}", server_probe::help::MISSING);
    };
    let prompt_ids = match &args.prompt_ids {
        None => None,
        Some(text) => Some(
            serde_json::from_str::<Vec<i64>>(text)
                .with_context(|| format!("--prompt-ids is not a JSON array of ids: {text}"))?,
        ),
    };
    let requests = args
        .request
        .iter()
        .map(|r| super::json_object_arg("--request", r))
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok(Options {
        server: server.clone(),
        api: Api::parse(api)?,
        model: args.model.clone(),
        prompt: args.prompt.clone(),
        prompt_ids,
        requests,
        samples: args.samples,
        auto_samples: None,
        seed: args.seed,
        top: args.top,
        timeout_secs: args.timeout,
    })
}
