//! The `compare` binary: parses arguments, runs the command, prints errors once
//! and maps outcomes to exit statuses (see the library crate docs).

use std::io::{self, IsTerminal, Write};
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches};

use compare::cli::{Cli, Command, ReportArgs};
use compare::{commands, registry};

fn main() -> ExitCode {
    let matches = registry::with_names_in_help(Cli::command()).get_matches();
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    match run(cli) {
        Ok(code) => code,
        Err(err) if is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            let _ = writeln!(io::stderr(), "error: {}", chain_text(&err));
            ExitCode::from(2)
        }
    }
}

/// The error and its causes, `: `-separated like anyhow's `{:#}`, but each
/// cause only once: a message that already quotes its cause (an OS error a
/// library put in its own text and also gave as the source) does not repeat it.
fn chain_text(err: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in err.chain() {
        let part = cause.to_string();
        if text.contains(&part) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&part);
    }
    text
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let progress = io::stderr().is_terminal();
    let command = cli
        .command
        .unwrap_or_else(|| Command::Report(ReportArgs::default()));
    // The commands whose exit status is a verdict finish it even when stdout
    // closes early (`| head -1`): a failed check exits 1 however stdout ends.
    let verdict = matches!(
        command,
        Command::Report(_) | Command::Dist(_) | Command::Diff(_) | Command::Beam(_)
    );
    let mut out = Stdout {
        inner: io::stdout().lock(),
        keep_going: verdict,
        error: None,
    };
    let failed = match command {
        Command::Report(args) => {
            let config = registry::generation_config(args.generation_config.as_deref())?;
            let semantics = registry::all(config.as_ref());
            let outcome = commands::report::run_to(&args, &semantics, progress, &mut out)?;
            outcome.over_threshold()
        }
        Command::Dist(args) => {
            let config = registry::generation_config(args.generation_config.as_deref())?;
            let semantics = registry::all(config.as_ref());
            let summary = commands::dist::run(
                &args,
                &semantics,
                io::stdin().lock(),
                &mut out,
                io::stderr(),
            )?;
            summary.failed > 0
        }
        Command::Diff(args) => {
            let semantics = registry::all(None);
            let (summary, differing) = commands::diff::run(
                &args,
                &semantics,
                io::stdin().lock(),
                &mut out,
                io::stderr(),
            )?;
            // Like `report`: a run that compares nothing must not pass a check.
            anyhow::ensure!(
                summary.records > 0,
                "nothing compared: no record on stdin (one JSON object per line: logits, params, ...)"
            );
            summary.failed > 0 || (args.fail_on.is_some() && differing > 0)
        }
        Command::Request(args) => {
            let config = registry::generation_config(args.generation_config.as_deref())?;
            let model = registry::ollama_model_params(args.ollama_model_params.as_deref())?;
            let semantics = registry::with_ollama_model_params(config.as_ref(), model.as_ref())?;
            commands::request::run(&args, config.as_ref(), &semantics, &mut out).map(|()| false)?
        }
        Command::Translate(args) => {
            let config = registry::generation_config(args.generation_config.as_deref())?;
            let model = registry::ollama_model_params(args.ollama_model_params.as_deref())?;
            let semantics = registry::with_ollama_model_params(config.as_ref(), model.as_ref())?;
            commands::translate::run(&args, config.as_ref(), &semantics, &mut out)
                .map(|()| false)?
        }
        Command::Bench(args) => {
            commands::bench::run(&args, &mut out, &mut io::stderr()).map(|()| false)?
        }
        Command::Ties(args) => {
            commands::ties::run(&args, &registry::all(None), &mut out).map(|()| false)?
        }
        Command::Semantics(args) => {
            commands::semantics::run(&args, &registry::all(None), &mut out).map(|()| false)?
        }
        Command::Speculative(args) => {
            commands::speculative::run(&args, &registry::all(None), &mut out, &mut io::stderr())
                .map(|()| false)?
        }
        Command::Beam(args) => commands::beam::run(&args, &mut out)?,
        Command::Trace(args) => {
            commands::trace::run(&args, &registry::all(None), &mut out).map(|()| false)?
        }
        Command::Probe(args) => {
            commands::probe::run(&args, &registry::all(None), &mut out).map(|()| false)?
        }
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
