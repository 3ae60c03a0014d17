//! `compare probe`: measure a running server over HTTP and name the
//! semantics that explain it. The work is `server_probe`'s; this file reads
//! the arguments, makes one call and prints the report (docs/probe.md).

use std::fs::File;
use std::io::Write;
use std::path::Path;

use anyhow::{Context, bail};
use server_probe::{Api, Options, Recording};

use crate::Engines;
use crate::cli::{Format, ProbeArgs};

/// Where a probe's exchanges come from.
enum Source<'a> {
    /// `--replay`: the recording, the files it names made relative to it.
    Replay(Recording),
    /// A live server, and the `--record` file, opened.
    Live(Options, Option<(&'a Path, File)>),
}

/// A resolved `compare probe`.
struct Plan<'a> {
    source: Source<'a>,
    /// `--repeat` (live) or a repeat recording: one condition asked again
    /// and again, not a samples or post-sampling probe.
    repeat: bool,
}

impl<'a> Plan<'a> {
    fn resolve(args: &'a ProbeArgs, engines: &Engines) -> anyhow::Result<Self> {
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
        let repeat = match &recorded {
            Some(r) => r.options.repeat.is_some(),
            None => args.repeat.is_some(),
        };
        if repeat && args.expect.is_some() {
            bail!("--expect takes a samples or post-sampling probe, not --repeat");
        }
        let source = match recorded {
            Some(mut recording) => {
                if let Some(dir) = args.replay.as_deref().and_then(Path::parent) {
                    let o = &mut recording.options;
                    for p in [&mut o.raw_from, &mut o.vocab].into_iter().flatten() {
                        if Path::new(p.as_str()).is_relative() {
                            *p = dir.join(&*p).display().to_string();
                        }
                    }
                }
                Source::Replay(recording)
            }
            None => {
                let options = options(args)?;
                Source::Live(options, open_record(args)?)
            }
        };
        Ok(Self { source, repeat })
    }
}

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
    let plan = Plan::resolve(args, engines)?;
    if plan.repeat {
        repeat(args.format, plan.source, out, err)?;
        return Ok(false);
    }
    let report = match plan.source {
        Source::Replay(recording) => server_probe::replay(&recording, &engines.semantics)?,
        Source::Live(options, file) => {
            let (report, recording) = server_probe::probe(&options, &engines.semantics);
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
    format: Format,
    source: Source<'_>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<()> {
    let report = match source {
        Source::Replay(recording) => server_probe::repeat::replay(&recording)?,
        Source::Live(options, file) => {
            let (report, recording) = server_probe::repeat::probe(&options)?;
            write_record(file, &recording, false, err)?;
            report
        }
    };
    match format {
        Format::Json => {
            serde_json::to_writer_pretty(&mut *out, &report)?;
            writeln!(out)?;
        }
        Format::Text => server_probe::repeat::write_text(&report, out)?,
    }
    Ok(())
}

fn read_recording(path: &Path) -> anyhow::Result<Recording> {
    let bytes = parity_core::fixture::read_at_most(path, 1 << 30)
        .with_context(|| format!("--replay: reading {}", path.display()))?
        .map_err(|_| anyhow::anyhow!("--replay: {} is over 1 GiB", path.display()))?;
    serde_json::from_slice(&bytes)
        .with_context(|| format!("--replay: {} is not a probe recording", path.display()))
}

/// The `--record` file, opened before the first request so that a bad path
/// fails at once.
fn open_record(args: &ProbeArgs) -> anyhow::Result<Option<(&Path, File)>> {
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
    file: Option<(&Path, File)>,
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
