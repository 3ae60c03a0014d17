//! The command line: the subcommands, each with its options from
//! [`comparison::cli`] (the registry adds the lists of names, see
//! [`crate::registry::with_registry`]).

use clap::{Parser, Subcommand};
use comparison::cli::{
    BeamArgs, BenchArgs, CheckRecordsArgs, DiffArgs, DistArgs, ProbeArgs, ReportArgs, RequestArgs,
    SemanticsArgs, SpeculativeArgs, TiesArgs, TraceArgs, TranslateArgs,
};

/// Check that LLM engines turn the same logits into the same next-token
/// distribution: transformers (recorded and re-implemented) beside every other
/// engine's sampling semantics (`compare semantics` lists them), side by side.
///
/// Without a subcommand, runs the default report on the bundled fixtures.
#[derive(Debug, Parser)]
#[command(name = "compare", version, max_term_width = 100)]
pub struct Cli {
    /// What to do; `report` when omitted.
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Compare every pair of semantics on fixture logits (the default command).
    Report(ReportArgs),
    /// Read JSON-lines records on stdin; print one semantics' distribution for each.
    Dist(DistArgs),
    /// Read JSON-lines records (params = generate kwargs) on stdin; compare pairs of semantics on each.
    Diff(DiffArgs),
    /// Check your own sampler: its probabilities (records on stdin, or .npy/safetensors files)
    /// against one semantics' distribution for the same logits.
    Check(CheckRecordsArgs),
    /// Send one OpenAI-style request to every engine: what each server samples with, and how far
    /// each lands from transformers on the fixtures.
    Request(RequestArgs),
    /// Translate transformers generate kwargs into another engine's setup that reproduces them.
    Translate(TranslateArgs),
    /// Show how each semantics breaks top-k ties (default: [3, 2, 2, 1] with k = 2).
    Ties(TiesArgs),
    /// Time hf-sampling's fast sampler beside a real engine's sampler on this machine.
    Bench(BenchArgs),
    /// List every semantics: engine, version, what it was verified against, params.
    Semantics(SemanticsArgs),
    /// Speculative decoding: each verifier's first emitted token against the target, exactly.
    Speculative(SpeculativeArgs),
    /// Beam search: transformers 5.23 replayed beside another search (or --recorded: every
    /// recording).
    Beam(BeamArgs),
    /// Along a recorded transformers generation, compare a real port's logits and sampling per token.
    Trace(TraceArgs),
    /// Measure a running inference server over HTTP and name the semantics that explain what it
    /// samples from (docs/probe.md).
    Probe(ProbeArgs),
}
