//! Each command's options. They derive clap's `Args` so the binary
//! flattens them into its command line (and adds what comes from its
//! registry: the lists of names in the help, the parsers that check them);
//! this crate never reads a command line.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use parity_core::DrawCount;

/// Output format.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// For people.
    #[default]
    Text,
    /// JSON for programs (the option's help says its shape; docs/report-schema.md).
    Json,
}

/// Output format of `compare report`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    /// A table per fixture, for people.
    #[default]
    Text,
    /// One JSON document (see docs/report-schema.md).
    Json,
    /// One self-contained HTML page: summary, TV heatmap, a chart per row.
    Html,
}

/// Arguments of `compare report`.
#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    /// Fixture files or folders of fixtures [default: the bundled SmolLM2 fixtures and the tie case].
    pub fixtures: Vec<PathBuf>,
    /// Only these settings, comma-separated (e.g. t07,k40,p09); a name no fixture records is an
    /// error [default: on model fixtures the six settings of the seed article
    /// (t07_default,t07,k40,p09,k40p09,rep13); on edge fixtures all they record].
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    pub settings: Vec<String>,
    /// Run every setting a fixture recorded instead of the default six.
    #[arg(long, conflicts_with = "settings")]
    pub all_settings: bool,
    /// Run these generate kwargs (a JSON object) on every fixture's logits instead of its
    /// recorded settings. Nothing transformers recorded matches them, so its side is computed
    /// by hf-rust and the rows say `hf-rust`.
    #[arg(long, value_name = "JSON", conflicts_with_all = ["settings", "all_settings"])]
    pub kwargs: Option<String>,
    /// A model's generation_config.json, between --kwargs and transformers' defaults.
    #[arg(long, value_name = "FILE", requires = "kwargs")]
    pub generation_config: Option<PathBuf>,
    /// Only these pairs of semantics, comma-separated LEFT:RIGHT (`compare report --help` lists
    /// the names) [default: transformers against each semantics of the default report].
    #[arg(long, value_delimiter = ',', value_name = "PAIRS")]
    pub pairs: Vec<String>,
    /// Real draws per row whose engine can be run here; every draw is replayed and must agree.
    /// `auto`: one where the engine's token is a function of the logits (argmax), 250 where it
    /// draws from a distribution (a mirror wrong on 2.8 % of the unit interval escapes them with
    /// probability at most 0.001); N: exactly N on every row (0: none; at most 10000000).
    #[arg(long, default_value = "auto", value_name = "N|auto", value_parser = draw_count)]
    pub draws: DrawCount,
    /// Seed of the real draws (and of the replay).
    #[arg(long, default_value_t = 42, value_name = "S")]
    pub seed: u64,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: ReportFormat,
    /// Tokens listed per row that one side keeps and the other does not.
    #[arg(long, default_value_t = 3, value_name = "N")]
    pub show_tokens: usize,
    /// The check a CI pipeline runs: thresholds and what fails (last: its
    /// help heading holds for the options after it).
    #[command(flatten)]
    pub check: CheckArgs,
}

impl Default for ReportArgs {
    fn default() -> Self {
        Self {
            fixtures: Vec::new(),
            settings: Vec::new(),
            all_settings: false,
            kwargs: None,
            generation_config: None,
            pairs: Vec::new(),
            draws: DrawCount::Auto,
            seed: 42,
            format: ReportFormat::Text,
            check: CheckArgs::default(),
            show_tokens: 3,
        }
    }
}

/// `compare report`'s check: a row over a threshold, or not `same` with
/// `--fail-on differs`, exits with status 1.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Check (exit status 1 on a failing row)")]
pub struct CheckArgs {
    /// Exit with status 1 if any row's total variation exceeds X (a number in [0, 1]).
    #[arg(long, value_name = "X", value_parser = unit_threshold)]
    pub max_tv: Option<f64>,
    /// Exit with status 1 if any row's max |p_left - p_right| exceeds X (a number in [0, 1]).
    #[arg(long, value_name = "X", value_parser = unit_threshold)]
    pub max_abs_diff: Option<f64>,
    /// Exit with status 1 if any row's verdict is not `same` (a kept set that
    /// differs by one token of tiny mass fails too, unlike --max-tv).
    #[arg(long, value_enum, value_name = "WHAT")]
    pub fail_on: Option<FailOn>,
    /// Let --max-tv, --max-abs-diff and --fail-on pass rows whose whole difference is a
    /// decision float rounding could flip (a tie at the top-k cut, a top-p mass within a few
    /// ulps of p, ...; the row's `fragile` list).
    #[arg(long)]
    pub ignore_fragile: bool,
}

/// The most real draws `--draws` takes: each is kept (and replayed), so an
/// unbounded count could exhaust memory before the first draw.
pub const MAX_DRAWS: usize = 10_000_000;

/// The largest vocabulary `compare bench` builds logits for (2^24 tokens,
/// 64 times the largest real vocabulary it times by default).
pub const MAX_BENCH_VOCAB: usize = 1 << 24;

/// `--draws`: 0 to [`MAX_DRAWS`].
fn draws_arg() -> clap::builder::RangedU64ValueParser<usize> {
    clap::builder::RangedU64ValueParser::<usize>::new().range(0..=MAX_DRAWS as u64)
}

/// `report --draws`: `auto` or 0 to [`MAX_DRAWS`].
fn draw_count(s: &str) -> Result<DrawCount, String> {
    if s == "auto" {
        return Ok(DrawCount::Auto);
    }
    match s.parse::<usize>() {
        Ok(n) if n <= MAX_DRAWS => Ok(DrawCount::Exactly(n)),
        Ok(_) => Err(format!("{s} is not in 0..={MAX_DRAWS}")),
        Err(_) => Err(format!(
            "`{s}` is neither `auto` nor a whole number of draws (0..={MAX_DRAWS})"
        )),
    }
}

/// `--max-tv`, `--max-abs-diff`: a number in [0, 1]. TV and max |Δp| never
/// exceed 1, so a larger threshold (`2`, `inf`, `1e999`) could never fail a
/// check, and NaN compares false with every figure: both would pass by
/// accident.
fn unit_threshold(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(x) if (0.0..=1.0).contains(&x) => Ok(x),
        _ => Err(format!(
            "{text} is not a number in the range [0, 1] (TV and max |Δp| lie in [0, 1]: a \
             threshold outside it, or NaN, could never fail)"
        )),
    }
}

/// Arguments of `compare dist`.
#[derive(Debug, Clone, Args)]
pub struct DistArgs {
    /// The semantics that turns each record's logits into a distribution
    /// (`compare semantics` lists them with their params).
    #[arg(long)]
    pub semantics: String,
    /// A model's generation_config.json, for the semantics whose engine reads
    /// one (transformers: between the kwargs and its defaults).
    #[arg(long, value_name = "FILE")]
    pub generation_config: Option<PathBuf>,
    /// The model's vocabulary, to show tokens as text.
    #[command(flatten)]
    pub vocab: VocabArg,
}

/// `--vocab FILE`, for the commands that show tokens (`dist`, `diff`,
/// `ties`).
#[derive(Debug, Clone, Default, Args)]
pub struct VocabArg {
    /// A vocabulary file (a JSON array of token strings, as fixtures/smollm2/vocab.json), so
    /// tokens are shown as text beside their ids (`dist`: in `token_text`).
    #[arg(long = "vocab", value_name = "FILE")]
    pub path: Option<PathBuf>,
}

impl VocabArg {
    /// The vocabulary, if one was given.
    pub fn load(&self) -> anyhow::Result<Option<parity_core::Vocab>> {
        Ok(self
            .path
            .as_deref()
            .map(parity_core::Vocab::load)
            .transpose()?)
    }

    /// `vocab` (what [`Self::load`] gave) must have one token per logit: a
    /// vocabulary of another model would label every token wrongly. The
    /// error names the file and both sizes.
    pub fn check(&self, vocab: Option<&parity_core::Vocab>, logits: usize) -> Result<(), String> {
        match (vocab, &self.path) {
            (Some(v), Some(path)) if v.len() != logits => Err(format!(
                "--vocab {}: {} tokens, but there are {logits} logits (the vocabulary of another \
                 model?)",
                path.display(),
                v.len()
            )),
            _ => Ok(()),
        }
    }
}

/// Which setup `compare diff` gives each engine's side.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub enum Setup {
    /// The kwargs read literally, as a naive port does.
    #[default]
    Literal,
    /// The engine's setup that reproduces transformers, where its crate has one: a semantics
    /// of its own (`compare semantics`), or the setup `compare translate --to` gives; a note
    /// on stderr names each side that stays literal and why.
    Exact,
}

/// Arguments of `compare diff`.
#[derive(Debug, Clone, Args)]
pub struct DiffArgs {
    /// Pairs of semantics, comma-separated LEFT:RIGHT (`compare diff --help` lists the names
    /// and the default).
    #[arg(long, value_delimiter = ',', value_name = "PAIRS")]
    pub pairs: Vec<String>,
    /// Each side's setup: `exact` swaps in the engine's semantics set up to reproduce
    /// transformers, where it has one.
    #[arg(long, value_enum, default_value_t)]
    pub setup: Setup,
    /// Output: a block per record for people, or one JSON object per record
    /// (`{"record": N, "rows": [...]}`, rows as in docs/report-schema.md).
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
    /// Exit with status 1 if any row's verdict is not `same`.
    #[arg(long, value_enum, value_name = "WHAT")]
    pub fail_on: Option<FailOn>,
    /// Tokens listed per row that one side keeps and the other does not.
    #[arg(long, default_value_t = 3, value_name = "N")]
    pub show_tokens: usize,
    /// The model's vocabulary, to show tokens as text.
    #[command(flatten)]
    pub vocab: VocabArg,
}

/// Arguments of `compare check`.
#[derive(Debug, Clone, Args)]
pub struct CheckRecordsArgs {
    /// The semantics your probabilities are checked against; each record's `params` are its own
    /// (as `compare dist` reads them).
    #[arg(long)]
    pub semantics: String,
    /// Logits as rows of a binary file instead of records on stdin: `.npy` or safetensors
    /// ([V] or [N, V], float32 or float64; FILE:NAME picks a safetensors tensor).
    #[arg(long, value_name = "FILE")]
    pub logits: Option<String>,
    /// With --logits: your probabilities, one row per row of logits (same formats).
    #[arg(
        long,
        value_name = "FILE",
        requires = "logits",
        conflicts_with = "logprobs"
    )]
    pub probs: Option<String>,
    /// With --logits: your log-probabilities instead (-inf for a token never drawn).
    #[arg(long, value_name = "FILE", requires = "logits")]
    pub logprobs: Option<String>,
    /// With --logits: the semantics' params for every row, a JSON object.
    #[arg(long, value_name = "JSON", requires = "logits")]
    pub params: Option<String>,
    /// With --logits: every row's context, a JSON array of token ids.
    #[arg(long, value_name = "JSON", requires = "logits")]
    pub input_ids: Option<String>,
    /// With --logits: how many of --input-ids are prompt [default: all].
    #[arg(long, value_name = "N", requires = "logits")]
    pub prompt_len: Option<usize>,
    /// Also print the semantics' whole distribution (`probs`, V numbers) per record.
    #[arg(long)]
    pub dense: bool,
    /// Pass records whose whole difference is a decision float rounding could flip.
    #[arg(long)]
    pub ignore_fragile: bool,
    /// Output: a line per record for people, or one JSON object per record (docs/python.md).
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

/// What fails a check besides the thresholds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FailOn {
    /// Any row whose verdict is not `same`.
    Differs,
}

/// Arguments of `compare request`.
#[derive(Debug, Clone, Args)]
pub struct RequestArgs {
    /// The request body as JSON, e.g. '{"temperature": 0.7, "top_p": 0.9}' (OpenAI chat-completions
    /// fields, or generate kwargs: each engine reads what its server reads).
    pub request: String,
    /// Fixture files or folders of fixtures [default: the bundled SmolLM2 fixtures].
    pub fixtures: Vec<PathBuf>,
    /// The model's generation_config.json, for the engines that merge it (`compare semantics`
    /// says which).
    #[arg(long, value_name = "FILE")]
    pub generation_config: Option<PathBuf>,
    /// Exit 1 unless the --against route is within this total variation of the reference
    /// (transformers' generate(**request)) on every fixture.
    #[arg(long, value_name = "X", requires = "against",
          value_parser = clap::builder::ValueParser::new(parse_tv_bar))]
    pub expect_tv_below: Option<f64>,
    /// The route (an endpoint as listed, or a semantics: all its routes) --expect-tv-below checks.
    #[arg(long, value_name = "ROUTE", requires = "expect_tv_below")]
    pub against: Option<String>,
    /// Run a request with fields that no endpoint reads (without it, such a field is an error
    /// that names the nearest field some endpoint does read).
    #[arg(long)]
    pub allow_unknown: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

/// A total-variation bar: a number in (0, 1].
fn parse_tv_bar(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(x) if x > 0.0 && x <= 1.0 => Ok(x),
        Ok(x) => Err(format!("{x} is not a total variation in (0, 1]")),
        Err(e) => Err(format!("{text:?} is not a number ({e})")),
    }
}

/// Arguments of `compare translate`.
#[derive(Debug, Clone, Args)]
pub struct TranslateArgs {
    /// transformers generate kwargs as a JSON object, e.g. '{"do_sample": true, "temperature": 0.7}'.
    #[arg(long, value_name = "JSON", default_value = "{}")]
    pub kwargs: String,
    /// The engine to translate for: a semantics that offers a translation (the
    /// list and the default are in `compare translate --help`).
    #[arg(long, value_name = "NAME")]
    pub to: Option<String>,
    /// Your context length (an engine whose penalty sees a last-n window must cover all of it;
    /// 1 to 2147483647, the largest window a 32-bit engine option holds).
    #[arg(long, default_value_t = 4096, value_name = "N",
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=i32::MAX as u64))]
    pub context_len: usize,
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
    /// Logits, comma-separated: numbers that fit in float32, or -inf (a masked token).
    #[arg(
        long,
        value_delimiter = ',',
        allow_hyphen_values = true,
        default_value = "3,2,2,1",
        value_parser = logit_arg
    )]
    pub logits: Vec<f32>,
    /// k of top-k.
    #[arg(long, default_value_t = 2)]
    pub k: usize,
    /// Real draws from each engine that can be run here (each replayed where its RNG is
    /// mirrored; 0: none; at most 10000000).
    #[arg(long, default_value_t = 10_000, value_name = "N", value_parser = draws_arg())]
    pub draws: usize,
    /// Seed of the real draws.
    #[arg(long, default_value_t = 42, value_name = "S")]
    pub seed: u64,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
    /// The model's vocabulary, to show tokens as text.
    #[command(flatten)]
    pub vocab: VocabArg,
}

/// Arguments of `compare semantics`.
#[derive(Debug, Clone, Args)]
pub struct SemanticsArgs {
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

/// Arguments of `compare bench`.
#[derive(Debug, Clone, Args)]
pub struct BenchArgs {
    /// Vocabulary sizes, comma-separated, each 2 to 16777216 [default: 32000,49152,151936,262144].
    #[arg(long, value_delimiter = ',', value_name = "V",
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(2..=MAX_BENCH_VOCAB as u64))]
    pub vocab: Vec<usize>,
    /// Timed calls per side and setting; the median is reported (1 to 1000000).
    #[arg(long, default_value_t = 31, value_name = "N", value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1_000_000))]
    pub reps: usize,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
    /// Which SIMD level our sampler's passes run at: native (the best this
    /// CPU has: x86-64-v3 with AVX2 and FMA, else the baseline) or baseline
    /// (SSE2 on x86-64, whatever the CPU has); see docs/performance.md.
    #[arg(long, default_value = "native", value_parser = dispatch_arg())]
    pub dispatch: hf_sampling::Dispatch,
}

/// `--dispatch`: hf-sampling's own [`hf_sampling::Dispatch`], by name.
fn dispatch_arg() -> impl clap::builder::TypedValueParser<Value = hf_sampling::Dispatch> {
    use clap::builder::TypedValueParser as _;
    clap::builder::PossibleValuesParser::new(["native", "baseline"]).map(|s| match s.as_str() {
        "baseline" => hf_sampling::Dispatch::Baseline,
        _ => hf_sampling::Dispatch::Native,
    })
}

/// Arguments of `compare speculative`.
#[derive(Debug, Clone, Args)]
pub struct SpeculativeArgs {
    /// Fixture files or folders of fixtures [default: the bundled SmolLM2 fixtures].
    pub fixtures: Vec<PathBuf>,
    /// The target model's sampling, SEMANTICS:PARAMS with PARAMS a JSON object of that
    /// semantics' params (e.g. 'hf:{"do_sample":true,"temperature":0.7}'; `compare semantics`
    /// lists them) [default: a set of pairs on the SmolLM2 fixtures].
    #[arg(long, value_name = "SEMANTICS:PARAMS", requires = "draft")]
    pub target: Option<String>,
    /// The draft model's sampling, SEMANTICS:PARAMS, on the same logits (or --draft-perturb's).
    #[arg(long, value_name = "SEMANTICS:PARAMS", requires = "target")]
    pub draft: Option<String>,
    /// Give the draft a perturbed copy of the logits, a weaker draft: each logit plus
    /// SCALE·u with u uniform in [-1, 1) from SplitMix64 seeded with SEED (e.g. 1.5:7).
    #[arg(long, value_name = "SCALE:SEED", requires = "draft")]
    pub draft_perturb: Option<String>,
    /// Take the draft's logits from this fixture instead of each target fixture (a draft
    /// model's own logits for the same prompt); its vocabulary must be the target's.
    #[arg(long, value_name = "FILE", requires = "draft")]
    pub draft_fixture: Option<PathBuf>,
    /// Draft tokens per step (K), for the expected lengths (1 to 1024).
    #[arg(long, default_value_t = 4, value_name = "K",
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(0..=1024))]
    pub k: usize,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

/// transformers' `early_stopping`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub enum EarlyStoppingArg {
    /// `False`: stop when the best running beam cannot beat the worst finished one.
    #[default]
    False,
    /// `True`: stop as soon as `num_beams` beams are finished.
    True,
    /// `"never"`: the heuristic at the longest possible length.
    Never,
}

/// Arguments of `compare beam`.
#[derive(Debug, Clone, Args)]
pub struct BeamArgs {
    /// `num_beams` (2 or more: transformers runs greedy decoding with 1; at most 64).
    #[arg(long, default_value_t = 2, value_name = "N")]
    pub num_beams: usize,
    /// `length_penalty`: finished scores are sum / generated_len^L.
    #[arg(
        long,
        default_value_t = 1.0,
        value_name = "L",
        allow_hyphen_values = true
    )]
    pub length_penalty: f64,
    /// `early_stopping`.
    #[arg(long, value_enum, default_value_t, value_name = "WHEN")]
    pub early_stopping: EarlyStoppingArg,
    /// `num_return_sequences` (at most num_beams).
    #[arg(long, default_value_t = 1, value_name = "R")]
    pub num_return_sequences: usize,
    /// `max_new_tokens` (1 to 1000).
    #[arg(long, default_value_t = 6, value_name = "M")]
    pub max_new_tokens: usize,
    /// Replay every recorded transformers run (fixtures/beam/) instead; exit 1 if any is not
    /// reproduced (same sequences, scores within 1e-5).
    #[arg(
        long,
        conflicts_with_all = [
            "num_beams", "length_penalty", "early_stopping", "num_return_sequences",
            "max_new_tokens",
        ]
    )]
    pub recorded: bool,
    /// Rerun the SmolLM2 recordings on this port's model, run here (the real model, from
    /// scripts/fetch-model.sh), and say where its beams part from the ones transformers
    /// recorded (`compare beam --help` lists the ports that run a model).
    #[arg(long, value_name = "NAME", conflicts_with = "recorded")]
    pub port: Option<String>,
    /// The model file for --port [default: where scripts/fetch-model.sh puts it].
    #[arg(long, value_name = "FILE", requires = "port")]
    pub model: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

/// Arguments of `compare trace`.
#[derive(Debug, Clone, Default, Args)]
pub struct TraceArgs {
    /// A trace file (scripts/reference/trace_reference.py) [default: every bundled trace in
    /// fixtures/traces/].
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// transformers generate kwargs as a JSON object, instead of the ones the trace was recorded with.
    #[arg(long, value_name = "JSON")]
    pub kwargs: Option<String>,
    /// Whose logits are compared with transformers': a model run here, or logits an engine
    /// recorded beside the trace.
    #[arg(long, value_name = "NAME")]
    pub port: Option<String>,
    /// The semantics that samples for the port [default: the port's own].
    #[arg(long, value_name = "NAME")]
    pub port_semantics: Option<String>,
    /// The port semantics' params as a JSON object [default: its translation of the kwargs
    /// (`from_generate`), e.g. a literal port].
    #[arg(long, value_name = "JSON")]
    pub port_params: Option<String>,
    /// Only the first N steps of each trace.
    #[arg(long, value_name = "N")]
    pub steps: Option<usize>,
    /// The model file for a port that runs a model here [default: .cache/models/
    /// SmolLM2-135M-Instruct.Q4_1.gguf, where scripts/fetch-model.sh puts it].
    #[arg(long, value_name = "FILE")]
    pub model: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
    /// Write the port's logits per step into DIR/<trace>.<port>.safetensors (tensor `logits`,
    /// [steps, V] f32).
    #[arg(long, value_name = "DIR")]
    pub export_logits: Option<PathBuf>,
}

/// Arguments of `compare probe` (docs/probe.md).
#[derive(Debug, Args)]
pub struct ProbeArgs {
    /// The server's base URL, e.g. http://127.0.0.1:8080 (plain HTTP; nothing else is contacted).
    #[arg(long, value_name = "URL", required_unless_present = "replay")]
    pub server: Option<String>,
    /// The server's API.
    #[arg(long, value_name = "API", required_unless_present = "replay",
          help = server_probe::help::API)]
    pub api: Option<String>,
    /// The model name requests carry.
    #[arg(long, value_name = "NAME", help = server_probe::help::MODEL)]
    pub model: Option<String>,
    /// The prompt as text.
    #[arg(long, value_name = "TEXT", conflicts_with = "prompt_ids", help = server_probe::help::PROMPT)]
    pub prompt: Option<String>,
    /// The prompt as a JSON array of token ids.
    #[arg(long, value_name = "JSON")]
    pub prompt_ids: Option<String>,
    /// A request's sampling fields as a JSON object in the API's own names; repeat for more.
    #[arg(long, value_name = "JSON", required_unless_present = "replay")]
    pub request: Vec<String>,
    /// Draw N single-token samples per request.
    #[arg(long, value_name = "N", help = server_probe::help::SAMPLES)]
    pub samples: Option<usize>,
    /// Seed of the first request; sample i uses seed + i.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Raw top log-probabilities to ask for.
    #[arg(long, value_name = "K", help = server_probe::help::TOP)]
    pub top: Option<usize>,
    /// For a server that returns no logprobs (transformers serve): take the raw list from this
    /// other --record file of the same model and prompt (relative paths in a recording are
    /// relative to it).
    #[arg(long, value_name = "FILE")]
    pub raw_from: Option<std::path::PathBuf>,
    /// The model's token strings (a JSON array, index = id), to turn a drawn token's text into
    /// its id (servers that answer text only) and to tell the vocabulary's size where the server
    /// does not (mlx_lm.server).
    #[arg(long, value_name = "FILE")]
    pub vocab: Option<std::path::PathBuf>,
    /// Send the one request N times under each condition (cold then warm, cache off,
    /// concurrent) and report whether the logits or the seeded draw moved (2 to 64;
    /// docs/probe.md).
    #[arg(long, value_name = "N", conflicts_with = "samples",
          value_parser = clap::value_parser!(u64).range(2..=server_probe::repeat::MAX_REPEAT as u64))]
    pub repeat: Option<u64>,
    /// Seconds to wait for each answer.
    #[arg(long, value_name = "SECONDS", default_value_t = 60)]
    pub timeout: u64,
    /// Write everything the server returned (and the exact request bodies) to FILE.
    #[arg(long, value_name = "FILE", conflicts_with = "replay")]
    pub record: Option<PathBuf>,
    /// Re-run a recorded probe offline from FILE (no server).
    #[arg(long, value_name = "FILE")]
    pub replay: Option<PathBuf>,
    /// Exit 1 unless this semantics (a registry name, e.g. llama.cpp) explains every request:
    /// it fits the server and every candidate that differs from it is ruled out.
    #[arg(long, value_name = "SEMANTICS")]
    pub expect: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

/// One `--logits` value: a number that fits in float32 (`1e39` would parse as
/// +inf) or `-inf`; NaN and +inf are refused, quoting the value.
fn logit_arg(text: &str) -> Result<f32, String> {
    let x: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a number"))?;
    if x.is_nan() {
        return Err(format!(
            "{text:?} is NaN: a logit is a number (-inf masks a token)"
        ));
    }
    if x == f64::NEG_INFINITY {
        return Ok(f32::NEG_INFINITY);
    }
    if x == f64::INFINITY {
        return Err(format!(
            "{text:?} is +inf: only -inf (a masked token) is allowed"
        ));
    }
    let y = x as f32;
    if !y.is_finite() {
        return Err(format!(
            "{text:?} does not fit in float32 (|x| <= {:e})",
            f32::MAX
        ));
    }
    Ok(y)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_are_auto_or_a_count_up_to_the_cap() {
        assert_eq!(draw_count("auto"), Ok(DrawCount::Auto));
        assert_eq!(draw_count("0"), Ok(DrawCount::Exactly(0)));
        assert_eq!(draw_count("10000000"), Ok(DrawCount::Exactly(MAX_DRAWS)));
        assert_eq!(
            draw_count("10000001"),
            Err("10000001 is not in 0..=10000000".to_string())
        );
        for bad in ["Auto", "-1", "1e3", ""] {
            assert_eq!(
                draw_count(bad),
                Err(format!(
                    "`{bad}` is neither `auto` nor a whole number of draws (0..=10000000)"
                ))
            );
        }
    }

    #[test]
    fn a_threshold_is_a_number_in_the_unit_interval() {
        assert_eq!(unit_threshold("0"), Ok(0.0));
        assert_eq!(unit_threshold(" 1 "), Ok(1.0));
        assert_eq!(unit_threshold("1e-5"), Ok(1e-5));
        for bad in ["2", "-0.1", "inf", "NaN", "x"] {
            let err = unit_threshold(bad).expect_err("refused");
            assert!(
                err.starts_with(&format!("{bad} is not a number in the range [0, 1]")),
                "{err}"
            );
        }
    }

    #[test]
    fn a_tv_bar_is_in_the_half_open_unit_interval() {
        assert_eq!(parse_tv_bar("1"), Ok(1.0));
        assert_eq!(parse_tv_bar("1e-9"), Ok(1e-9));
        // Spaces around the number are read as `--max-tv` reads them.
        assert_eq!(parse_tv_bar(" 0.2 "), Ok(0.2));
        assert_eq!(
            parse_tv_bar("0"),
            Err("0 is not a total variation in (0, 1]".to_string())
        );
        assert_eq!(
            parse_tv_bar("NaN"),
            Err("NaN is not a total variation in (0, 1]".to_string())
        );
        let err = parse_tv_bar("x").expect_err("refused");
        assert!(err.starts_with(r#""x" is not a number ("#), "{err}");
    }

    #[test]
    fn a_logit_fits_in_float32_or_is_minus_infinity() {
        assert_eq!(logit_arg("1.5"), Ok(1.5));
        assert_eq!(logit_arg(" -2 "), Ok(-2.0));
        assert_eq!(logit_arg("-inf"), Ok(f32::NEG_INFINITY));
        assert_eq!(logit_arg("-3.4e38"), Ok(-3.4e38));
        assert_eq!(
            logit_arg("inf"),
            Err(r#""inf" is +inf: only -inf (a masked token) is allowed"#.to_string())
        );
        assert_eq!(
            logit_arg("nan"),
            Err(r#""nan" is NaN: a logit is a number (-inf masks a token)"#.to_string())
        );
        assert_eq!(
            logit_arg("1e39"),
            Err(r#""1e39" does not fit in float32 (|x| <= 3.4028235e38)"#.to_string())
        );
        assert_eq!(
            logit_arg("one"),
            Err(r#""one" is not a number"#.to_string())
        );
    }
}
