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
            let _ = writeln!(io::stderr(), "error: {err:#}");
            ExitCode::from(2)
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let progress = io::stderr().is_terminal();
    let mut out = io::stdout().lock();
    let failed = match cli
        .command
        .unwrap_or_else(|| Command::Report(ReportArgs::default()))
    {
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
    };
    out.flush()?;
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<io::Error>()
            .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
    })
}
