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
/// request (the command exits 1). Each failure, and the note that a failed
/// probe's exchanges were still recorded, is a line on `err`.
pub fn run(
    args: &ProbeArgs,
    engines: &Engines,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<bool> {
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
    let recorded = match &args.replay {
        Some(path) => Some(read_recording(path)?),
        None => None,
    };
    let repeated = match &recorded {
        Some(r) => r.options.repeat.is_some(),
        None => args.repeat.is_some(),
    };
    if repeated {
        if args.expect.is_some() {
            bail!("--expect takes a samples or post-sampling probe, not --repeat");
        }
        repeat(args, recorded.as_ref(), out, err)?;
        return Ok(false);
    }
    let report = match &recorded {
        Some(recording) => {
            // The files a recording names are relative to it.
            let mut recording = recording.clone();
            if let Some(dir) = args.replay.as_deref().and_then(std::path::Path::parent) {
                let o = &mut recording.options;
                for p in [&mut o.raw_from, &mut o.vocab].into_iter().flatten() {
                    if std::path::Path::new(p.as_str()).is_relative() {
                        *p = dir.join(&*p).display().to_string();
                    }
                }
            }
            server_probe::replay(&recording, semantics)?
        }
        None => {
            let options = options(args)?;
            let file = open_record(args)?;
            let (report, recording) = server_probe::probe(&options, semantics);
            write_record(file, &recording, report.is_err(), err)?;
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
                // Best effort: the exit status carries the verdict.
                let _ = writeln!(err, "--expect {name}: {f}");
            }
            !failures.is_empty()
        }
    })
}

/// `--repeat N`, live or replayed.
fn repeat(
    args: &ProbeArgs,
    recorded: Option<&Recording>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<()> {
    let report = match recorded {
        Some(recording) => server_probe::repeat::replay(recording)?,
        None => {
            let options = options(args)?;
            let file = open_record(args)?;
            let probed = server_probe::repeat::probe(&options);
            match probed {
                Ok((report, recording)) => {
                    write_record(file, &recording, false, err)?;
                    report
                }
                Err(e) => return Err(e.into()),
            }
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

/// The `--record` file, opened before the first request so that a bad path
/// fails at once.
fn open_record(args: &ProbeArgs) -> anyhow::Result<Option<(&std::path::Path, std::fs::File)>> {
    let Some(path) = &args.record else {
        return Ok(None);
    };
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .with_context(|| format!("--record: cannot write {}", path.display()))?;
    Ok(Some((path.as_path(), file)))
}

/// Writes the recording into the file [`open_record`] opened, whatever the
/// probe's outcome (`failed`: say how much was kept).
fn write_record(
    file: Option<(&std::path::Path, std::fs::File)>,
    recording: &Recording,
    failed: bool,
    err: &mut dyn Write,
) -> anyhow::Result<()> {
    let Some((path, mut file)) = file else {
        return Ok(());
    };
    let text = serde_json::to_string(recording)? + "\n";
    file.set_len(0)
        .and_then(|()| file.write_all(text.as_bytes()))
        .with_context(|| format!("--record: writing {}", path.display()))?;
    if failed {
        writeln!(
            err,
            "--record: wrote the {} exchanges made before the failure to {}",
            recording.exchanges.len(),
            path.display()
        )?;
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
        auto_samples: None,
        seed: args.seed,
        top: args.top,
        timeout_secs: args.timeout,
        raw_from: args.raw_from.as_ref().map(|p| p.display().to_string()),
        vocab: args.vocab.as_ref().map(|p| p.display().to_string()),
        repeat: args.repeat.map(|n| n as usize),
    })
}
