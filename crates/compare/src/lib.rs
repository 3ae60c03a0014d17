//! `compare`: reports how LLM engines' next-token sampling semantics differ on
//! the same logits: transformers (as recorded from the real library, and as
//! re-implemented in `hf-sampling`) beside every semantics of the registry.
//!
//! This crate is the command line and the list of engines: the subcommands
//! in [`cli`] (their options come from [`comparison::cli`]) and every engine
//! in [`registry`], the one place that names one. Each command is one call
//! into the `comparison` library; `main` parses, calls and maps the outcome
//! to an exit status. Standard output carries data only; messages and
//! progress go to standard error.
//!
//! Exit status: 0 success (and parity within any thresholds given), 1 a row
//! over a threshold or an invalid record in a batch, 2 usage, input or I/O
//! errors. A closed standard output (broken pipe) ends the run quietly,
//! except that a failed check still exits 1.

#![deny(missing_docs)]

pub mod cli;
pub mod registry;
