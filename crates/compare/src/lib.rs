//! `compare`: reports how LLM engines' next-token sampling semantics differ on
//! the same logits: transformers (as recorded from the real library, and as
//! re-implemented in `hf-sampling`) beside every semantics of the registry.
//!
//! This crate is glue: argument types in [`cli`], one module per subcommand in
//! [`commands`], and the list of semantics in [`registry`]. It is a library as well
//! as a binary so that tests and fuzz targets can drive the same code. Standard
//! output carries data only; messages and progress go to standard error.
//!
//! Exit status: 0 success (and parity within any thresholds given), 1 a row
//! over a threshold or an invalid record in a batch, 2 usage, input or I/O
//! errors. A closed standard output (broken pipe) ends the run quietly.

#![deny(missing_docs)]

pub mod cli;
pub mod commands;
pub mod registry;
