//! Command-line arguments. Only clap types live here; `commands/` runs them.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Check that LLM engines turn the same logits into the same next-token
/// distribution: transformers (recorded and re-implemented), candle (the real
/// crate) and an exact written spec, side by side.
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
    /// Translate transformers generate kwargs into the candle setup that reproduces them.
    Translate(TranslateArgs),
    /// Show how each semantics breaks top-k ties (default: [3, 2, 2, 1] with k = 2).
    Ties(TiesArgs),
    /// Time hf-sampling's fast sampler beside candle's LogitsProcessor on this machine.
    Bench(BenchArgs),
}

/// Output format.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// A table for people.
    #[default]
    Text,
    /// One JSON document (see docs/report-schema.md).
    Json,
}

/// Arguments of `compare report`.
#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    /// Fixture files or folders of fixtures [default: the bundled SmolLM2 fixtures and the tie case].
    pub fixtures: Vec<PathBuf>,
    /// Only these settings, comma-separated (e.g. t07,k40,p09) [default: the article's six].
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    pub settings: Vec<String>,
    /// Run every setting a fixture recorded instead of the default six.
    #[arg(long, conflicts_with = "settings")]
    pub all_settings: bool,
    /// Only these pairs of semantics, comma-separated LEFT:RIGHT, from hf, hf-rust, candle,
    /// candle+hf-closure, spec (e.g. hf:candle,hf:spec) [default: hf against each other one].
    #[arg(long, value_delimiter = ',', value_name = "PAIRS")]
    pub pairs: Vec<String>,
    /// Real candle draws per candle row; every draw is replayed and must agree.
    #[arg(long, default_value_t = 1000, value_name = "N")]
    pub draws: usize,
    /// Seed of candle's LogitsProcessor (and of the replay).
    #[arg(long, default_value_t = 42, value_name = "S")]
    pub seed: u64,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
    /// Exit with status 1 if any row's total variation exceeds X.
    #[arg(long, value_name = "X")]
    pub max_tv: Option<f64>,
    /// Exit with status 1 if any row's max |p_left - p_right| exceeds X.
    #[arg(long, value_name = "X")]
    pub max_abs_diff: Option<f64>,
    /// Tokens listed per row that one side keeps and the other does not.
    #[arg(long, default_value_t = 3, value_name = "N")]
    pub show_tokens: usize,
}

impl Default for ReportArgs {
    fn default() -> Self {
        Self {
            fixtures: Vec::new(),
            settings: Vec::new(),
            all_settings: false,
            pairs: Vec::new(),
            draws: 1000,
            seed: 42,
            format: Format::Text,
            max_tv: None,
            max_abs_diff: None,
            show_tokens: 3,
        }
    }
}

/// Which semantics `compare dist` runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Semantics {
    /// transformers' generate (hf-sampling); params are generate kwargs.
    Hf,
    /// candle's LogitsProcessor (the real crate, mirrored); params name a Sampling variant.
    Candle,
    /// The written spec; params are temperature, top_k, top_p, repetition_penalty and u.
    Spec,
}

/// Arguments of `compare dist`.
#[derive(Debug, Clone, Args)]
pub struct DistArgs {
    /// The semantics that turns each record's logits into a distribution.
    #[arg(long, value_enum)]
    pub semantics: Semantics,
    /// A model's generation_config.json, whose values sit between the kwargs and
    /// transformers' defaults (hf only).
    #[arg(long, value_name = "FILE")]
    pub generation_config: Option<PathBuf>,
}

/// Arguments of `compare translate`.
#[derive(Debug, Clone, Args)]
pub struct TranslateArgs {
    /// transformers generate kwargs as a JSON object, e.g. '{"do_sample": true, "temperature": 0.7}'.
    #[arg(long, value_name = "JSON", default_value = "{}")]
    pub kwargs: String,
    /// A model's generation_config.json, whose values sit between the kwargs and
    /// transformers' defaults.
    #[arg(long, value_name = "FILE")]
    pub generation_config: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

/// Arguments of `compare ties`.
#[derive(Debug, Clone, Args)]
pub struct TiesArgs {
    /// Logits, comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        allow_hyphen_values = true,
        default_value = "3,2,2,1"
    )]
    pub logits: Vec<f32>,
    /// k of top-k.
    #[arg(long, default_value_t = 2)]
    pub k: usize,
    /// Real candle draws.
    #[arg(long, default_value_t = 10_000, value_name = "N")]
    pub draws: usize,
    /// Seed of candle's LogitsProcessor.
    #[arg(long, default_value_t = 42, value_name = "S")]
    pub seed: u64,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

/// Arguments of `compare bench`.
#[derive(Debug, Clone, Args)]
pub struct BenchArgs {
    /// Vocabulary sizes, comma-separated (empty: 32000,49152,151936,262144).
    #[arg(long, value_delimiter = ',', value_name = "V")]
    pub vocab: Vec<usize>,
    /// Timed calls per side and setting; the median is reported (at least 1).
    #[arg(long, default_value_t = 31, value_name = "N")]
    pub reps: usize,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}
