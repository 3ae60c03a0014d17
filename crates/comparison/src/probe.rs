//! `compare probe`: measure a running server over HTTP and name the
//! semantics that explain it. The work is `server_probe`'s; this file reads
//! the arguments, makes one call and prints the report (docs/probe.md).

use std::io::Write;

use anyhow::{Context, bail};
use server_probe::{Api, Options, Recording};

use crate::Engines;
use crate::cli::{Format, ProbeArgs};

/// Probes the server (or replays a recording) and writes the report.
pub fn run(args: &ProbeArgs, engines: &Engines, out: &mut dyn Write) -> anyhow::Result<()> {
    let semantics = &engines.semantics[..];
    let recorded = match &args.replay {
        Some(path) => Some(read_recording(path)?),
        None => None,
    };
    let repeated = match &recorded {
        Some(r) => r.options.repeat.is_some(),
        None => args.repeat.is_some(),
    };
    if repeated {
        return repeat(args, recorded.as_ref(), out);
    }
    let report = match &recorded {
        Some(recording) => server_probe::replay(recording, semantics)?,
        None => {
            let options = options(args)?;
            let (report, recording) = server_probe::probe(&options, semantics)?;
            record(args, &recording)?;
            report
        }
    };
    match args.format {
        Format::Json => {
            serde_json::to_writer_pretty(&mut *out, &report)?;
            writeln!(out)?;
        }
        Format::Text => server_probe::write_text(&report, out)?,
    }
    Ok(())
}

/// `--repeat N`, live or replayed.
fn repeat(
    args: &ProbeArgs,
    recorded: Option<&Recording>,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let report = match recorded {
        Some(recording) => server_probe::repeat::replay(recording)?,
        None => {
            let (report, recording) = server_probe::repeat::probe(&options(args)?)?;
            record(args, &recording)?;
            report
        }
    };
    match args.format {
        Format::Json => {
            serde_json::to_writer_pretty(&mut *out, &report)?;
            writeln!(out)?;
        }
        Format::Text => server_probe::repeat::write_text(&report, out)?,
    }
    Ok(())
}

fn read_recording(path: &std::path::Path) -> anyhow::Result<Recording> {
    let bytes = parity_core::fixture::read_at_most(path, 1 << 30)
        .with_context(|| format!("--replay: reading {}", path.display()))?
        .map_err(|_| anyhow::anyhow!("--replay: {} is over 1 GiB", path.display()))?;
    serde_json::from_slice(&bytes)
        .with_context(|| format!("--replay: {} is not a probe recording", path.display()))
}

fn record(args: &ProbeArgs, recording: &Recording) -> anyhow::Result<()> {
    if let Some(path) = &args.record {
        let text = serde_json::to_string(recording)?;
        std::fs::write(path, text + "\n")
            .with_context(|| format!("--record: writing {}", path.display()))?;
    }
    Ok(())
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
        seed: args.seed,
        top: args.top,
        timeout_secs: args.timeout,
        repeat: args.repeat.map(|n| n as usize),
    })
}
