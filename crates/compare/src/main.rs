//! The `compare` binary: parses arguments, runs the command, prints errors once
//! and maps outcomes to exit statuses (see the library crate docs).

use std::io::{self, IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches};

use compare::cli::{Cli, Command};
use compare::registry;
use comparison::cli::{ReportArgs, RequestArgs};
use comparison::{
    Progress, beam, bench, check, diff, dist, probe, report, request, semantics, speculative, ties,
    trace, translate,
};

fn main() -> ExitCode {
    let matches = registry::with_registry(Cli::command()).get_matches();
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    match registry::Options::from_matches(&matches).and_then(|options| run(cli, &options)) {
        Ok(code) => code,
        Err(err) if is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            let _ = writeln!(io::stderr(), "error: {}", comparison::error_text(&err));
            ExitCode::from(2)
        }
    }
}

/// Runs one command: its engines from the registry, one library call, its
/// verdict (`true`: exit 1).
fn run(cli: Cli, options: &registry::Options) -> anyhow::Result<ExitCode> {
    let mut progress = Progress::new(Box::new(io::stderr()), io::stderr().is_terminal());
    let command = cli
        .command
        .unwrap_or_else(|| Command::Report(ReportArgs::default()));
    // The commands whose exit status is a verdict finish it even when stdout
    // closes early (`| head -1`): a failed check exits 1 however stdout ends.
    let verdict = matches!(
        command,
        Command::Report(_)
            | Command::Dist(_)
            | Command::Diff(_)
            | Command::Check(_)
            | Command::Beam(_)
            | Command::Probe(_)
            | Command::Request(_)
    );
    let mut out = Stdout {
        inner: io::stdout().lock(),
        keep_going: verdict,
        error: None,
    };
    // The generation config and the file it came from (`--generation-config`
    // or a generation_config.json given as `--model-file`).
    let engines = |config: Option<&Path>| -> anyhow::Result<_> {
        let config = registry::command_generation_config(config, options)?;
        let engines = registry::engines(config.as_ref().map(|c| &c.config), options)?;
        Ok((config, engines))
    };
    let failed = match command {
        Command::Report(args) => {
            let (config, engines) = engines(args.generation_config.as_deref())?;
            let args = ReportArgs {
                generation_config: config.map(|c| c.path),
                ..args
            };
            report::run_to(&args, &engines, &mut progress, &mut out)?.over_threshold()
        }
        Command::Dist(args) => {
            let (_, engines) = engines(args.generation_config.as_deref())?;
            let summary = dist::run(&args, &engines, io::stdin().lock(), &mut out, io::stderr())?;
            // Like `diff`: a run that answers nothing is not a success.
            anyhow::ensure!(summary.records > 0, "{NO_RECORD}");
            summary.failed > 0
        }
        Command::Diff(args) => {
            let (_, engines) = engines(None)?;
            let (summary, differing) =
                diff::run(&args, &engines, io::stdin().lock(), &mut out, io::stderr())?;
            // Like `report`: a run that compares nothing must not pass a check.
            anyhow::ensure!(summary.records > 0, "{NO_RECORD}");
            summary.failed > 0 || (args.fail_on.is_some() && differing > 0)
        }
        Command::Check(args) => {
            let (_, engines) = engines(None)?;
            let (summary, failing) =
                check::run(&args, &engines, io::stdin().lock(), &mut out, io::stderr())?;
            anyhow::ensure!(
                summary.records > 0,
                "nothing checked: no record on stdin (one JSON object per line: logits, params, \
                 probs, ...)"
            );
            summary.failed > 0 || failing > 0
        }
        Command::Request(args) => {
            let (config, engines) = engines(args.generation_config.as_deref())?;
            let args = RequestArgs {
                generation_config: config.as_ref().map(|c| c.path.clone()),
                ..args
            };
            request::run(
                &args,
                config.as_ref().map(|c| &c.config),
                &engines,
                &mut out,
                &mut io::stderr(),
            )?
        }
        Command::Translate(args) => {
            let (config, engines) = engines(args.generation_config.as_deref())?;
            let config = config.map(|c| c.config);
            translate::run(&args, config.as_ref(), &engines, &mut progress, &mut out)
                .map(|()| false)?
        }
        Command::Bench(args) => {
            let (_, engines) = engines(None)?;
            bench::run(&args, &engines.bench, &mut out, &mut io::stderr()).map(|()| false)?
        }
        Command::Ties(args) => ties::run(&args, &engines(None)?.1, &mut out).map(|()| false)?,
        Command::Semantics(args) => {
            semantics::run(&args, &engines(None)?.1, &mut out).map(|()| false)?
        }
        Command::Speculative(args) => {
            speculative::run(&args, &engines(None)?.1, &mut out, &mut io::stderr())
                .map(|()| false)?
        }
        Command::Beam(args) => beam::run(&args, &engines(None)?.1, &mut progress, &mut out)?,
        Command::Trace(args) => {
            trace::run(&args, &engines(None)?.1, &mut progress, &mut out).map(|()| false)?
        }
        Command::Probe(args) => probe::run(&args, &engines(None)?.1, &mut out, &mut io::stderr())?,
    };
    out.flush()?;
    match out.error {
        // A reader that stopped early (a closed pipe) saw what it wanted; any
        // other write error is reported. Either way a failed check exits 1.
        Some(e) if failed => {
            if e.kind() != io::ErrorKind::BrokenPipe {
                let _ = writeln!(io::stderr(), "error: writing the output: {e}");
            }
            Ok(ExitCode::from(1))
        }
        Some(e) => Err(e.into()),
        None if failed => Ok(ExitCode::from(1)),
        None => Ok(ExitCode::SUCCESS),
    }
}

/// `dist` and `diff` on an empty standard input.
const NO_RECORD: &str =
    "nothing compared: no record on stdin (one JSON object per line: logits, params, ...)";

/// Standard output. With `keep_going`, the first write error is kept and
/// later writes are dropped, so a command still computes its verdict after
/// stdout closes; without, errors pass through and stop the command.
struct Stdout<W> {
    inner: W,
    keep_going: bool,
    error: Option<io::Error>,
}

impl<W: Write> Write for Stdout<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.error.is_some() {
            return Ok(buf.len());
        }
        match self.inner.write(buf) {
            Err(e) if self.keep_going && e.kind() != io::ErrorKind::Interrupted => {
                self.error = Some(e);
                Ok(buf.len())
            }
            other => other,
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.error.is_some() {
            return Ok(());
        }
        match self.inner.flush() {
            Err(e) if self.keep_going => {
                self.error = Some(e);
                Ok(())
            }
            other => other,
        }
    }
}

/// Whether `err` is a write to a closed pipe, also when serde_json wrapped it.
fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<io::Error>()
            .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
            || cause
                .downcast_ref::<serde_json::Error>()
                .is_some_and(|e| e.io_error_kind() == Some(io::ErrorKind::BrokenPipe))
    })
}
