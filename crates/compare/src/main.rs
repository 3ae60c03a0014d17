//! The `compare` binary: parses arguments, runs the command, prints errors once
//! and maps outcomes to exit statuses (see the library crate docs).

use std::io::{self, IsTerminal, Write};
use std::process::ExitCode;

use clap::Parser;

use compare::cli::{Cli, Command, ReportArgs};
use compare::commands;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(err) if is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            let _ = writeln!(io::stderr(), "error: {err:#}");
            ExitCode::from(2)
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let stdout = io::stdout();
    let stderr = io::stderr();
    let progress = stderr.is_terminal();
    match cli
        .command
        .unwrap_or_else(|| Command::Report(ReportArgs::default()))
    {
        Command::Report(args) => {
            let outcome = commands::report::run(&args, progress)?;
            let mut out = stdout.lock();
            outcome.write(&args, &mut out)?;
            out.flush()?;
            Ok(status(outcome.over_threshold))
        }
        Command::Dist(args) => {
            let summary =
                commands::dist::run(&args, io::stdin().lock(), stdout.lock(), stderr.lock())?;
            Ok(status(summary.failed > 0))
        }
        Command::Translate(args) => {
            let mut out = stdout.lock();
            commands::translate::run(&args, &mut out)?;
            out.flush()?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Bench(args) => {
            let mut out = stdout.lock();
            let args = commands::bench::BenchArgs {
                vocab: args.vocab,
                format: args.format,
                reps: args.reps,
            };
            commands::bench::run(&args, &mut out)?;
            out.flush()?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Ties(args) => {
            let mut out = stdout.lock();
            commands::ties::run(&args, &mut out)?;
            out.flush()?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn status(failed: bool) -> ExitCode {
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<io::Error>()
            .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
    })
}
