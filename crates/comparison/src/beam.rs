//! `compare beam`: transformers 5.23's beam search (replayed by
//! `hf_sampling::beam`) beside the registry's other beam search
//! ([`Engines::beam`]), on the hashed toy models and the recorded SmolLM2
//! runs; with `--recorded`, every recorded transformers run replayed and
//! counted.
//!
//! The recordings are `fixtures/beam/transformers_beams.jsonl` (the toy
//! models, `scripts/reference/beam_reference.py`) and
//! `fixtures/beam/smollm2_beams.jsonl` (SmolLM2 with the log-probabilities of
//! every prefix it was run on, `scripts/reference/beam_smollm2_reference.py`).
//! A table of recorded log-probabilities only holds the prefixes its own run
//! visited, so the SmolLM2 runs always use their recorded kwargs; the command
//! line's kwargs apply to the toy models.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use hf_sampling::beam::{
    BeamConfig, BeamOutput, TableLm, ToyLm, log_softmax, transformers_beam_search,
};
use parity_core::beam::{
    BeamError, BeamRequest, BeamSearch, Beams, LanguageModel, first_difference,
};
use parity_core::trace::PrefixModel;
use serde::ser::SerializeStruct as _;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::Engines;
use crate::Progress;
use crate::cli::{BeamArgs, EarlyStoppingArg, Format};

/// Scores within this of the recording count as reproduced (transformers'
/// float32 `log_softmax` against the replay's f64-then-f32 one).
pub(crate) const SCORE_TOLERANCE: f32 = 1e-5;

/// Most beams `compare beam` runs (each step holds `num_beams · V` scores).
pub(crate) const MAX_BEAMS: usize = 64;

/// Most new tokens `compare beam` generates.
pub(crate) const MAX_NEW_TOKENS: usize = 1000;

/// The largest vocabulary a recorded toy model may have (the bundled ones
/// have 10 to 16 tokens; each step scores every token of every beam).
pub(crate) const MAX_TOY_VOCAB: usize = 1 << 10;

/// The largest vocabulary a recorded table may declare (SmolLM2 has 49,152;
/// every lookup builds a row of this many log-probabilities).
pub(crate) const MAX_TABLE_VOCAB: usize = 1 << 20;

/// One recorded transformers run.
#[derive(Debug)]
pub struct Recorded {
    /// Where it comes from (`file:line`).
    pub origin: String,
    /// The run's name (toy) or prompt name (SmolLM2).
    pub name: String,
    /// The model.
    pub model: Model,
    /// Prompt ids.
    pub prompt: Vec<i64>,
    /// The generate kwargs as recorded.
    pub kwargs: Map<String, Value>,
    /// The kwargs as the replay reads them.
    pub config: BeamConfig,
    /// transformers' `sequences`.
    pub sequences: Vec<Vec<i64>>,
    /// transformers' `sequences_scores`.
    pub scores: Vec<f32>,
    /// The GGUF the recording's model was (header `gguf_sha256`; SmolLM2 only).
    pub gguf_sha256: Option<String>,
}

/// The model a recorded run used.
#[derive(Debug)]
pub enum Model {
    /// A hashed toy model, with its pad id and its recorded parameters.
    Toy(ToyLm, i64, Value),
    /// SmolLM2's recorded log-probabilities.
    Table(TableLm),
}

impl Model {
    fn lm(&self) -> &dyn LanguageModel {
        match self {
            Self::Toy(lm, ..) => lm,
            Self::Table(lm) => lm,
        }
    }
}

/// The two recording files in the bundled fixtures.
pub(crate) fn recording_paths() -> anyhow::Result<(PathBuf, PathBuf)> {
    let dir = parity_core::fixture::bundled_dir()?.join("beam");
    Ok((
        dir.join("transformers_beams.jsonl"),
        dir.join("smollm2_beams.jsonl"),
    ))
}

/// The largest recording file read (the bundled ones are under 200 kB; the
/// SmolLM2 tables grow with the prefixes a run visits).
pub(crate) const MAX_RECORDING_BYTES: u64 = 64 << 20;

/// Reads a recording file (either format, told by its header line), at most
/// [`MAX_RECORDING_BYTES`] of it.
pub fn load(path: &Path) -> anyhow::Result<Vec<Recorded>> {
    let bytes = parity_core::fixture::read_at_most(path, MAX_RECORDING_BYTES)
        .with_context(|| format!("{}: cannot read", path.display()))?
        .map_err(|read| {
            anyhow::anyhow!(
                "{}: more than {MAX_RECORDING_BYTES} bytes (the limit for a beam recording; read \
                 {read} before stopping)",
                path.display()
            )
        })?;
    let text =
        String::from_utf8(bytes).with_context(|| format!("{}: not UTF-8 text", path.display()))?;
    parse(&text, &path.display().to_string())
}

/// The header line of a recording file: which of the two formats follows,
/// and what recorded it (`scripts/reference/beam_reference.py`,
/// `beam_smollm2_reference.py`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Header {
    format: FileFormat,
    /// `torch.__version__` of the recording.
    #[serde(rename = "torch_version")]
    _torch_version: String,
    /// `transformers.__version__` of the recording.
    #[serde(rename = "transformers_version")]
    _transformers_version: String,
    /// The recorder script.
    #[serde(rename = "generator")]
    _generator: String,
    /// The GGUF file name (SmolLM2 only).
    #[serde(default, rename = "model")]
    _model: Option<String>,
    /// Its sha256 (SmolLM2 only): a port's logits must come from the same weights.
    #[serde(default)]
    gguf_sha256: Option<String>,
    /// How many log-probabilities each prefix's row keeps (SmolLM2 only).
    #[serde(default, rename = "top")]
    _top: Option<usize>,
}

/// The two formats.
#[derive(Debug, Clone, Copy, Deserialize)]
enum FileFormat {
    /// Hashed toy models, one run per line ([`ToyRecord`]).
    #[serde(rename = "sampling-parity-beam/1")]
    Toy,
    /// SmolLM2's recorded log-probabilities, one run per line ([`TableRecord`]).
    #[serde(rename = "sampling-parity-beam-table/1")]
    Table,
}

/// One toy-model run: transformers' `generate` on a hashed toy model.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ToyRecord {
    name: String,
    model: ToyModel,
    prompt: Vec<i64>,
    kwargs: Map<String, Value>,
    /// The toy model's logits after the prompt, as transformers computed
    /// them (the tests of [`ToyLm`] check it against them).
    #[serde(rename = "first_logits")]
    _first_logits: Vec<f64>,
    sequences: Vec<Vec<i64>>,
    sequences_scores: Vec<f32>,
}

/// A hashed toy model's parameters ([`ToyLm`]).
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ToyModel {
    seed: u64,
    vocab: usize,
    eos: usize,
    pad: i64,
    eos_slope: f64,
    /// Every id that ends a beam (default: `[eos]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    eos_ids: Option<Vec<i64>>,
}

/// One SmolLM2 run with the log-probabilities of every prefix it visited.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TableRecord {
    prompt: String,
    prompt_ids: Vec<i64>,
    kwargs: Map<String, Value>,
    eos_token_ids: Vec<i64>,
    #[serde(default)]
    pad_token_id: Option<i64>,
    vocab_size: usize,
    table: Vec<TableRow>,
    sequences: Vec<Vec<i64>>,
    sequences_scores: Vec<f32>,
}

/// A visited prefix (the tokens after the prompt) and its most likely next
/// tokens as `[token, log-probability]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TableRow {
    generated: Vec<i64>,
    top: Vec<(usize, f32)>,
}

/// `line` as a `T`; an error names the field's path (`table[3].top[0]`)
/// and quotes serde's reason.
fn typed<T: serde::de::DeserializeOwned>(line: &str) -> anyhow::Result<T> {
    let mut de = serde_json::Deserializer::from_str(line);
    serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        // An unknown or missing field's message names it already.
        let named = inner.to_string().contains(&format!("`{path}`"));
        if path == "." || named || inner.is_syntax() || inner.is_eof() {
            anyhow::anyhow!("{inner}")
        } else {
            anyhow::anyhow!("`{path}`: {inner}")
        }
    })
}

/// Parses a recording; errors name `origin`, the line and the field. Every
/// field of both formats is declared: an unknown one is an error.
pub fn parse(text: &str, origin: &str) -> anyhow::Result<Vec<Recorded>> {
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let Some((h, header)) = lines.next() else {
        bail!("{origin}: empty, expected a header line");
    };
    let header: Header = typed(header).with_context(|| {
        format!(
            "{origin}:{}: header (`format` \"sampling-parity-beam/1\" or \
             \"sampling-parity-beam-table/1\")",
            h + 1
        )
    })?;
    let sha = match (header.format, header.gguf_sha256) {
        (FileFormat::Table, None) => bail!("{origin}:{}: header: missing `gguf_sha256`", h + 1),
        (_, sha) => sha,
    };
    lines
        .map(|(i, line)| {
            let at = format!("{origin}:{}", i + 1);
            let rec = match header.format {
                FileFormat::Toy => typed(line).and_then(toy_record),
                FileFormat::Table => typed(line).and_then(|r| table_record(r, sha.clone())),
            };
            rec.and_then(bounded)
                .with_context(|| at.clone())
                .map(|mut rec| {
                    rec.origin = at;
                    rec
                })
        })
        .collect()
}

fn toy_record(r: ToyRecord) -> anyhow::Result<Recorded> {
    let m = r.model;
    if m.vocab > MAX_TOY_VOCAB {
        bail!(
            "`model.vocab` = {} is more than {MAX_TOY_VOCAB} (the toy models have 10 to 16 \
             tokens)",
            m.vocab
        );
    }
    // The label and the "same model" test read the parameters as recorded
    // (a JSON value: its keys sorted, as the label always showed them).
    let params = serde_json::to_value(&m)?;
    let eos_ids = match m.eos_ids {
        Some(ids) => ids,
        None => vec![i64::try_from(m.eos)?],
    };
    let lm = ToyLm {
        seed: m.seed,
        vocab: m.vocab,
        eos: m.eos,
        eos_slope: m.eos_slope,
    };
    let config = BeamConfig::from_kwargs(&r.kwargs, eos_ids, Some(m.pad))?;
    Ok(Recorded {
        origin: String::new(),
        gguf_sha256: None,
        name: r.name,
        model: Model::Toy(lm, m.pad, params),
        prompt: r.prompt,
        kwargs: r.kwargs,
        config,
        sequences: r.sequences,
        scores: r.sequences_scores,
    })
}

fn table_record(r: TableRecord, gguf_sha256: Option<String>) -> anyhow::Result<Recorded> {
    if r.vocab_size > MAX_TABLE_VOCAB {
        bail!(
            "`vocab_size` = {} is more than {MAX_TABLE_VOCAB} (SmolLM2 has 49152)",
            r.vocab_size
        );
    }
    let rows: Vec<_> = r
        .table
        .into_iter()
        .map(|row| (row.generated, row.top))
        .collect();
    let lm = TableLm::new(r.prompt_ids.clone(), r.vocab_size, rows)?;
    let config = BeamConfig::from_kwargs(&r.kwargs, r.eos_token_ids, r.pad_token_id)?;
    Ok(Recorded {
        origin: String::new(),
        gguf_sha256,
        name: r.prompt,
        model: Model::Table(lm),
        prompt: r.prompt_ids,
        kwargs: r.kwargs,
        config,
        sequences: r.sequences,
        scores: r.sequences_scores,
    })
}

/// The command line's bounds hold for a recording too: a search's work
/// grows with both, and a file names them.
fn bounded(rec: Recorded) -> anyhow::Result<Recorded> {
    if rec.config.num_beams > MAX_BEAMS {
        bail!(
            "`num_beams` = {} is more than {MAX_BEAMS}",
            rec.config.num_beams
        );
    }
    if rec.config.max_new_tokens > MAX_NEW_TOKENS {
        bail!(
            "`max_new_tokens` = {} is more than {MAX_NEW_TOKENS}",
            rec.config.max_new_tokens
        );
    }
    Ok(rec)
}

/// Whether a replay reproduces a recording, and by how much scores differ.
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    /// Same sequences and every score within [`SCORE_TOLERANCE`].
    pub reproduced: bool,
    /// Largest |score difference| (when the sequences have the same count).
    pub max_score_diff: f32,
    /// What differs, in words (`None` when reproduced).
    pub problem: Option<String>,
}

/// Replays one recording with transformers' beam search.
pub fn check(rec: &Recorded) -> Check {
    match transformers_beam_search(rec.model.lm(), &rec.prompt, &rec.config) {
        Err(e) => Check {
            reproduced: false,
            max_score_diff: f32::NAN,
            problem: Some(format!("the replay fails: {e}")),
        },
        Ok(out) => compare_output(&out, &rec.sequences, &rec.scores),
    }
}

fn compare_output(out: &BeamOutput, sequences: &[Vec<i64>], scores: &[f32]) -> Check {
    let max_score_diff = if out.scores.len() == scores.len() {
        out.scores
            .iter()
            .zip(scores)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f32::max)
    } else {
        f32::NAN
    };
    let same_sequences = out.sequences == sequences;
    let reproduced = same_sequences && max_score_diff <= SCORE_TOLERANCE;
    let problem = (!reproduced).then(|| {
        format!(
            "transformers recorded {sequences:?} scores {scores:?}; the replay gives {:?} \
             scores {:?}",
            out.sequences, out.scores
        )
    });
    Check {
        reproduced,
        max_score_diff,
        problem,
    }
}

/// The command line's kwargs as transformers' generate kwargs, validated.
pub fn kwargs(args: &BeamArgs) -> anyhow::Result<Map<String, Value>> {
    if args.num_beams == 0 {
        bail!("--num-beams: 0, but beam search needs at least one beam");
    }
    if args.num_beams == 1 {
        bail!("--num-beams: 1, but transformers then runs greedy decoding, not beam search");
    }
    if args.num_beams > MAX_BEAMS {
        bail!(
            "--num-beams: {} is more than {MAX_BEAMS} (the toy models have 10 to 16 tokens)",
            args.num_beams
        );
    }
    if args.num_return_sequences == 0 {
        bail!("--num-return-sequences: 0, but transformers returns at least one sequence");
    }
    if args.num_return_sequences > args.num_beams {
        bail!(
            "--num-return-sequences: {} is more than --num-beams {} (transformers raises)",
            args.num_return_sequences,
            args.num_beams
        );
    }
    if args.max_new_tokens == 0 || args.max_new_tokens > MAX_NEW_TOKENS {
        bail!(
            "--max-new-tokens: {} is not in 1..={MAX_NEW_TOKENS}",
            args.max_new_tokens
        );
    }
    if !args.length_penalty.is_finite() {
        bail!(
            "--length-penalty: {} is not a finite number",
            args.length_penalty
        );
    }
    let early = match args.early_stopping {
        EarlyStoppingArg::False => json!(false),
        EarlyStoppingArg::True => json!(true),
        EarlyStoppingArg::Never => json!("never"),
    };
    let mut m = Map::new();
    m.insert("num_beams".into(), json!(args.num_beams));
    m.insert("do_sample".into(), json!(false));
    m.insert("length_penalty".into(), json!(args.length_penalty));
    m.insert("early_stopping".into(), early);
    m.insert(
        "num_return_sequences".into(),
        json!(args.num_return_sequences),
    );
    m.insert("max_new_tokens".into(), json!(args.max_new_tokens));
    Ok(m)
}

/// What `compare beam` runs.
enum Mode<'e> {
    /// `--recorded`: transformers' recorded searches replayed.
    Recorded,
    /// `--port`: the recorded SmolLM2 searches on a port's logits.
    Port(&'e dyn parity_core::trace::Port),
    /// The searches, with the command line's kwargs.
    Search(Map<String, Value>),
}

/// A resolved `compare beam`: both recordings, loaded, and the mode.
struct Plan<'e> {
    toy_path: PathBuf,
    toy: Vec<Recorded>,
    smollm2_path: PathBuf,
    smollm2: Vec<Recorded>,
    mode: Mode<'e>,
}

impl<'e> Plan<'e> {
    fn resolve(args: &BeamArgs, engines: &'e Engines) -> anyhow::Result<Self> {
        let (toy_path, smollm2_path) = recording_paths()?;
        let toy = load(&toy_path)?;
        let smollm2 = load(&smollm2_path)?;
        let mode = if args.recorded {
            Mode::Recorded
        } else if let Some(port) = &args.port {
            Mode::Port(engines.port(port)?)
        } else {
            Mode::Search(kwargs(args)?)
        };
        Ok(Self {
            toy_path,
            toy,
            smollm2_path,
            smollm2,
            mode,
        })
    }
}

/// Runs the command; `Ok(true)` when a recording was not reproduced (exit 1).
pub fn run(
    args: &BeamArgs,
    engines: &Engines,
    progress: &mut Progress,
    out: &mut dyn Write,
) -> anyhow::Result<bool> {
    let Plan {
        toy_path,
        toy,
        smollm2_path,
        smollm2,
        mode,
    } = Plan::resolve(args, engines)?;
    let kwargs = match mode {
        Mode::Recorded => {
            return replay_all(
                &[(&toy_path, &toy), (&smollm2_path, &smollm2)],
                args.format,
                out,
            );
        }
        Mode::Port(port) => {
            return port_beams(args, port, &smollm2, progress, out).map(|()| false);
        }
        Mode::Search(kwargs) => kwargs,
    };
    let mut cases = Vec::new();
    // The distinct (toy model, prompt) pairs, in file order.
    let mut seen: Vec<(String, Vec<i64>)> = Vec::new();
    for rec in &toy {
        let Model::Toy(lm, pad, params) = &rec.model else {
            continue;
        };
        let key = (params.to_string(), rec.prompt.clone());
        if seen.contains(&key) {
            continue;
        }
        seen.push(key);
        let config = BeamConfig::from_kwargs(&kwargs, rec.config.eos_token_ids.clone(), Some(*pad))
            .context("the command line's kwargs")?;
        let same_run = toy.iter().find(|r| {
            matches!(&r.model, Model::Toy(_, _, p) if p == params)
                && r.prompt == rec.prompt
                && r.config == config
        });
        cases.push(case(
            &*engines.beam,
            lm,
            format!("toy model {params}"),
            &rec.prompt,
            &kwargs,
            &config,
            same_run,
        )?);
    }
    for rec in &smollm2 {
        let Model::Table(lm) = &rec.model else {
            continue;
        };
        let mut c = case(
            &*engines.beam,
            lm,
            "SmolLM2-135M-Instruct".into(),
            &rec.prompt,
            &rec.kwargs,
            &rec.config,
            Some(rec),
        )?;
        c.prompt_name = Some(rec.name.clone());
        cases.push(c);
    }
    match args.format {
        Format::Json => {
            let doc = SearchesDoc {
                cases: cases.iter().map(|c| c.to_doc(&*engines.beam)).collect(),
                kwargs: &kwargs,
                schema: crate::report::SCHEMA,
            };
            serde_json::to_writer_pretty(&mut *out, &doc)?;
            writeln!(out)?;
        }
        Format::Text => {
            writeln!(
                out,
                "beam search, transformers 5.23 (replayed) beside {}; generated tokens",
                engines.beam.label()
            )?;
            writeln!(out, "toy models, with")?;
            writeln!(out, "  {}", kwargs_text(&kwargs))?;
            let mut smollm2_header = false;
            for c in &cases {
                if c.label.starts_with("SmolLM2") && !smollm2_header {
                    smollm2_header = true;
                    writeln!(out)?;
                    writeln!(
                        out,
                        "SmolLM2-135M-Instruct from its recorded log-probabilities, each run with \
                         its recorded kwargs"
                    )?;
                }
                c.write_text(&*engines.beam, out)?;
            }
        }
    }
    Ok(false)
}

/// The beam kwargs as `key=value`, in a fixed order (do_sample is false).
fn kwargs_text(kwargs: &Map<String, Value>) -> String {
    [
        "num_beams",
        "length_penalty",
        "early_stopping",
        "num_return_sequences",
        "max_new_tokens",
    ]
    .iter()
    .filter_map(|k| kwargs.get(*k).map(|v| format!("{k}={v}")))
    .collect::<Vec<_>>()
    .join(" ")
}

/// `compare beam --format json` (docs/report-schema.md). The documents'
/// fields are in alphabetical order, as the schema lists them; float32
/// scores are widened to f64, as they always were printed.
#[derive(Serialize, schemars::JsonSchema)]
struct SearchesDoc<'a> {
    cases: Vec<CaseDoc<'a>>,
    kwargs: &'a Map<String, Value>,
    schema: u32,
}

/// One model and prompt, both searches.
#[derive(schemars::JsonSchema)]
struct CaseDoc<'a> {
    first_difference: Option<usize>,
    kwargs: &'a Map<String, Value>,
    model: &'a str,
    prompt: &'a [i64],
    prompt_name: Option<&'a str>,
    recorded: Option<RecordedDoc>,
    same_best: bool,
    transformers: SearchDoc<'a>,
    // The compared search's beams, keyed by its name (`compared_key`; the
    // schema's property is renamed to it in `searches_schema`).
    compared: SearchDoc<'a>,
    #[schemars(skip)]
    compared_key: &'static str,
}

/// [`CaseDoc`]'s fields in order, the compared search's under its name.
impl Serialize for CaseDoc<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut doc = serializer.serialize_struct("CaseDoc", 9)?;
        doc.serialize_field("first_difference", &self.first_difference)?;
        doc.serialize_field("kwargs", &self.kwargs)?;
        doc.serialize_field("model", &self.model)?;
        doc.serialize_field("prompt", &self.prompt)?;
        doc.serialize_field("prompt_name", &self.prompt_name)?;
        doc.serialize_field("recorded", &self.recorded)?;
        doc.serialize_field("same_best", &self.same_best)?;
        doc.serialize_field("transformers", &self.transformers)?;
        doc.serialize_field(self.compared_key, &self.compared)?;
        doc.end()
    }
}

/// One search's beams, or why it could not run.
#[derive(Serialize, schemars::JsonSchema)]
#[serde(untagged)]
enum SearchDoc<'a> {
    Beams { beams: Vec<BeamDoc>, steps: usize },
    Error { error: &'a str },
}

/// A returned beam: the tokens after the prompt and the score.
#[derive(Serialize, schemars::JsonSchema)]
struct BeamDoc {
    generated: Vec<i64>,
    score: f64,
}

/// Whether transformers recorded this very configuration, and its replay.
#[derive(Serialize, schemars::JsonSchema)]
struct RecordedDoc {
    max_score_diff: f64,
    reproduced: bool,
}

/// `--recorded`: every recording file replayed.
#[derive(Serialize, schemars::JsonSchema)]
struct RecordedRunsDoc<'a> {
    files: Vec<FileDoc<'a>>,
    schema: u32,
    score_tolerance: f64,
}

/// One recording file.
#[derive(Serialize, schemars::JsonSchema)]
struct FileDoc<'a> {
    failures: Vec<FailureDoc<'a>>,
    file: String,
    max_score_diff: f64,
    reproduced: usize,
    total: usize,
}

/// A recorded run the replay did not reproduce.
#[derive(Serialize, schemars::JsonSchema)]
struct FailureDoc<'a> {
    at: &'a str,
    name: &'a str,
    problem: &'a str,
}

/// One model and prompt, both searches.
struct Case {
    label: String,
    /// A recorded prompt's name (its ids are long).
    prompt_name: Option<String>,
    kwargs: Map<String, Value>,
    prompt: Vec<i64>,
    transformers: BeamOutput,
    /// The compared search's beams, or why it could not run.
    compared: Result<Beams, String>,
    first_difference: Option<usize>,
    recorded: Option<Check>,
}

fn case(
    compared: &dyn BeamSearch,
    lm: &dyn LanguageModel,
    label: String,
    prompt: &[i64],
    kwargs: &Map<String, Value>,
    config: &BeamConfig,
    recorded: Option<&Recorded>,
) -> anyhow::Result<Case> {
    let transformers =
        transformers_beam_search(lm, prompt, config).with_context(|| label.clone())?;
    let request = BeamRequest {
        num_beams: config.num_beams,
        max_new_tokens: config.max_new_tokens,
        eos_token_ids: &config.eos_token_ids,
    };
    let compared = compared
        .search(lm, prompt, &request)
        .map_err(|e| e.to_string());
    let best = &transformers.sequences[0][..prompt.len() + transformers.lengths[0]];
    let first_difference = compared
        .as_ref()
        .ok()
        .and_then(|t| first_difference(best, &t.beams[0].1, prompt.len()));
    let recorded = recorded.map(|r| compare_output(&transformers, &r.sequences, &r.scores));
    Ok(Case {
        label,
        prompt_name: None,
        kwargs: kwargs.clone(),
        prompt: prompt.to_vec(),
        transformers,
        compared,
        first_difference,
        recorded,
    })
}

impl Case {
    fn transformers_beams(&self) -> Vec<(Vec<i64>, f32)> {
        let n = self.prompt.len();
        let t = &self.transformers;
        t.sequences
            .iter()
            .zip(&t.lengths)
            .zip(&t.scores)
            .map(|((s, &len), &score)| (s[n..n + len].to_vec(), score))
            .collect()
    }

    fn compared_beams(&self) -> Vec<(Vec<i64>, f64)> {
        let n = self.prompt.len();
        let r = self.transformers.sequences.len();
        self.compared.as_ref().map_or(Vec::new(), |t| {
            t.beams
                .iter()
                .take(r)
                .map(|(score, s)| (s[n..].to_vec(), *score))
                .collect()
        })
    }

    fn to_doc(&self, compared: &dyn BeamSearch) -> CaseDoc<'_> {
        let beams = |list: Vec<(Vec<i64>, f64)>| {
            list.into_iter()
                .map(|(generated, score)| BeamDoc { generated, score })
                .collect()
        };
        CaseDoc {
            first_difference: self.first_difference,
            kwargs: &self.kwargs,
            model: &self.label,
            prompt: &self.prompt,
            prompt_name: self.prompt_name.as_deref(),
            recorded: self.recorded.as_ref().map(|c| RecordedDoc {
                max_score_diff: f64::from(c.max_score_diff),
                reproduced: c.reproduced,
            }),
            same_best: self.compared.is_ok() && self.first_difference.is_none(),
            transformers: SearchDoc::Beams {
                beams: beams(
                    self.transformers_beams()
                        .into_iter()
                        .map(|(g, s)| (g, f64::from(s)))
                        .collect(),
                ),
                steps: self.transformers.steps,
            },
            compared: match &self.compared {
                Ok(t) => SearchDoc::Beams {
                    beams: beams(self.compared_beams()),
                    steps: t.steps,
                },
                Err(e) => SearchDoc::Error { error: e },
            },
            compared_key: compared.name(),
        }
    }

    fn write_text(&self, compared: &dyn BeamSearch, out: &mut dyn Write) -> anyhow::Result<()> {
        writeln!(out)?;
        match &self.prompt_name {
            Some(name) => writeln!(
                out,
                "{}, prompt {name} ({} tokens)",
                self.label,
                self.prompt.len()
            )?,
            None => writeln!(out, "{}, prompt {:?}", self.label, self.prompt)?,
        }
        if self.label.starts_with("SmolLM2") {
            writeln!(out, "  {}", kwargs_text(&self.kwargs))?;
        }
        match &self.recorded {
            None => {}
            Some(c) if c.reproduced => writeln!(
                out,
                "  this configuration was recorded by transformers 5.23: reproduced (max |score \
                 difference| {:.1e})",
                c.max_score_diff
            )?,
            Some(_) => writeln!(
                out,
                "  this configuration was recorded by transformers 5.23: NOT reproduced"
            )?,
        }
        writeln!(
            out,
            "  transformers 5.23, {} steps (score: sum / len^length_penalty)",
            self.transformers.steps
        )?;
        for (g, s) in self.transformers_beams() {
            writeln!(out, "    {s:>10.4}  {g:?}")?;
        }
        let name = compared.name();
        match &self.compared {
            Ok(t) => {
                writeln!(
                    out,
                    "  {name}, {} steps (score: {})",
                    t.steps,
                    compared.score()
                )?;
                for (g, s) in self.compared_beams() {
                    writeln!(out, "    {s:>10.4}  {g:?}")?;
                }
                match self.first_difference {
                    None => writeln!(out, "  same best sequence")?,
                    Some(i) => writeln!(out, "  best sequences part at generated token {i}")?,
                }
            }
            Err(e) => writeln!(out, "  {name}: cannot run: {e}")?,
        }
        Ok(())
    }
}

/// `--recorded`: every recording replayed; `Ok(true)` if any is not
/// reproduced.
fn replay_all(
    files: &[(&Path, &Vec<Recorded>)],
    format: Format,
    out: &mut dyn Write,
) -> anyhow::Result<bool> {
    let mut failed = false;
    let mut summaries = Vec::new();
    for (path, runs) in files {
        let checks: Vec<(&Recorded, Check)> = runs.iter().map(|r| (r, check(r))).collect();
        let reproduced = checks.iter().filter(|(_, c)| c.reproduced).count();
        failed |= reproduced < checks.len();
        let max_diff = checks
            .iter()
            .map(|(_, c)| c.max_score_diff)
            .fold(0.0, f32::max);
        let failures: Vec<(&Recorded, String)> = checks
            .iter()
            .filter_map(|(r, c)| c.problem.clone().map(|p| (*r, p)))
            .collect();
        summaries.push((path, checks.len(), reproduced, max_diff, failures));
    }
    match format {
        Format::Json => {
            let files = summaries
                .iter()
                .map(|(path, total, reproduced, max_diff, failures)| FileDoc {
                    failures: failures
                        .iter()
                        .map(|(r, p)| FailureDoc {
                            at: &r.origin,
                            name: &r.name,
                            problem: p,
                        })
                        .collect(),
                    file: path.display().to_string(),
                    max_score_diff: f64::from(*max_diff),
                    reproduced: *reproduced,
                    total: *total,
                })
                .collect();
            let doc = RecordedRunsDoc {
                files,
                schema: crate::report::SCHEMA,
                score_tolerance: f64::from(SCORE_TOLERANCE),
            };
            serde_json::to_writer_pretty(&mut *out, &doc)?;
            writeln!(out)?;
        }
        Format::Text => {
            writeln!(
                out,
                "transformers 5.23 beam search against every recorded run (same sequences, \
                 scores within {SCORE_TOLERANCE:e})"
            )?;
            for (path, total, reproduced, max_diff, failures) in &summaries {
                let name = path.file_name().map_or(path.display().to_string(), |n| {
                    n.to_string_lossy().into_owned()
                });
                writeln!(
                    out,
                    "  {name}: {reproduced} of {total} reproduced (max |score difference| \
                     {max_diff:.1e})"
                )?;
                for (r, p) in failures {
                    writeln!(out, "    {} {}: {p}", r.origin, r.name)?;
                }
            }
        }
    }
    Ok(failed)
}

/// A port's model, prefix by prefix as the search asks (a port keeps what
/// it can between calls, e.g. each prefix one token past its parent's KV
/// cache), its logits turned into the float32 `log_softmax`
/// beam search adds. The same search as the recordings, on the port's logits.
struct PortLm {
    model: std::cell::RefCell<Box<dyn PrefixModel>>,
}

impl LanguageModel for PortLm {
    fn vocab_size(&self) -> usize {
        self.model.borrow().vocab_size()
    }

    fn log_probs(&self, ids: &[i64]) -> Result<Vec<f32>, BeamError> {
        if let Some(&t) = ids.iter().find(|&&t| t < 0) {
            return Err(BeamError::NegativeId(t));
        }
        let logits = self
            .model
            .borrow_mut()
            .logits(ids)
            .map_err(|e| BeamError::Model(e.to_string()))?;
        log_softmax(&logits, ids.len())
    }
}

/// `--port NAME`'s document.
#[derive(Serialize, schemars::JsonSchema)]
struct PortDoc<'a> {
    beams: Vec<PortRow<'a>>,
    port: &'a str,
    schema: u32,
}

/// One `--port` row (fields in the JSON's alphabetical key order; scores
/// widened to f64 as `serde_json::Value` holds them).
#[derive(Serialize, schemars::JsonSchema)]
struct PortRow<'a> {
    /// Per beam: the first generated position that differs (`None`: same).
    first_difference: Vec<Option<usize>>,
    kwargs: &'a Map<String, Value>,
    max_score_diff: f64,
    port_scores: Vec<f64>,
    prompt: &'a str,
    same_sequences: bool,
    transformers_scores: Vec<f64>,
}

/// `--port NAME`: each SmolLM2 recording's search rerun on the port's
/// logits, beside the beams transformers returned.
fn port_beams(
    args: &BeamArgs,
    port: &dyn parity_core::trace::Port,
    recordings: &[Recorded],
    progress: &mut Progress,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let port_name = port.name();
    // The recording's header names the GGUF it was made from.
    let recordings: Vec<&Recorded> = recordings
        .iter()
        .filter(|r| matches!(r.model, Model::Table(_)))
        .collect();
    let sha = recordings
        .first()
        .and_then(|r| r.gguf_sha256.as_deref())
        .context("the SmolLM2 beam recording names no `gguf_sha256` in its header")?;
    let model = port
        .prefix_model(args.model.as_deref(), sha, &mut |m| progress.say(m))
        .with_context(|| {
            format!("--port {port_name} has recorded logits only; a search needs a model run here")
        })?
        .with_context(|| format!("--port {port_name}: loading the model"))?;
    let lm = PortLm {
        model: std::cell::RefCell::new(model),
    };
    let mut rows = Vec::new();
    let mut prompt: Option<&[i64]> = None;
    for rec in recordings {
        // Searches from the same prompt share its prefixes; another
        // prompt's are dropped (a state per prefix holds its KV cache).
        if prompt != Some(&rec.prompt[..]) {
            lm.model.borrow_mut().clear();
            prompt = Some(&rec.prompt);
        }
        progress.say(&format!("{} {} ...", rec.name, kwargs_text(&rec.kwargs)));
        let got = transformers_beam_search(&lm, &rec.prompt, &rec.config)
            .with_context(|| format!("{}: beam search on {port_name}'s logits", rec.origin))?;
        let parts: Vec<Option<usize>> = got
            .sequences
            .iter()
            .zip(&rec.sequences)
            .map(|(a, b)| first_difference(a, b, rec.prompt.len()))
            .collect();
        let same = parts.iter().all(Option::is_none) && got.sequences.len() == rec.sequences.len();
        let max_score_diff = got
            .scores
            .iter()
            .zip(&rec.scores)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f32, f32::max);
        let widen = |s: &[f32]| s.iter().map(|&x| f64::from(x)).collect();
        rows.push(PortRow {
            first_difference: parts,
            kwargs: &rec.kwargs,
            max_score_diff: f64::from(max_score_diff),
            port_scores: widen(&got.scores),
            prompt: &rec.name,
            same_sequences: same,
            transformers_scores: widen(&rec.scores),
        });
    }
    progress.done();
    match args.format {
        Format::Json => {
            serde_json::to_writer_pretty(
                &mut *out,
                &PortDoc {
                    beams: rows,
                    port: port_name,
                    schema: crate::report::SCHEMA,
                },
            )?;
            writeln!(out)?;
        }
        Format::Text => {
            writeln!(
                out,
                "SmolLM2 beam search on {port_name}'s logits against transformers' recorded beams"
            )?;
            for r in &rows {
                let parts: Vec<String> = r
                    .first_difference
                    .iter()
                    .map(|p| p.map_or("same".into(), |t| t.to_string()))
                    .collect();
                writeln!(
                    out,
                    "  {}: {}",
                    r.prompt,
                    kwargs_text(r.kwargs).replace("num_return_sequences", "return")
                )?;
                writeln!(
                    out,
                    "    beams (first generated position that differs): {}; max |Δ score| {:.2e}",
                    parts.join(", "),
                    r.max_score_diff
                )?;
            }
        }
    }
    Ok(())
}

/// The JSON Schema of `compare beam`'s `--format json` document
/// ([`crate::json_schema`]), the compared search's beams under its name
/// (`compared` is `CaseDoc`'s last field: the renamed property stays last).
pub(crate) fn searches_schema(engines: &Engines) -> schemars::Schema {
    let mut schema = schemars::schema_for!(SearchesDoc<'static>);
    let key = engines.beam.name();
    let case = schema
        .get_mut("$defs")
        .and_then(|defs| defs.get_mut("CaseDoc"))
        .and_then(Value::as_object_mut);
    if let Some(case) = case {
        if let Some(Value::Object(props)) = case.get_mut("properties")
            && let Some(p) = props.remove("compared")
        {
            props.insert(key.into(), p);
        }
        if let Some(Value::Array(required)) = case.get_mut("required") {
            for r in required.iter_mut().filter(|r| *r == "compared") {
                *r = key.into();
            }
        }
    }
    schema
}

/// The JSON Schema of `compare beam --recorded`'s `--format json` document
/// ([`crate::json_schema`]).
pub(crate) fn recorded_schema() -> schemars::Schema {
    schemars::schema_for!(RecordedRunsDoc<'static>)
}

/// The JSON Schema of `compare beam --port`'s `--format json` document
/// ([`crate::json_schema`]).
pub(crate) fn port_schema() -> schemars::Schema {
    schemars::schema_for!(PortDoc<'static>)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first two lines (header and one run) of a bundled recording.
    fn head(path: &Path) -> (String, Value) {
        let text = std::fs::read_to_string(path).expect("bundled recording");
        let mut lines = text.lines();
        let header = lines.next().expect("header").to_string();
        let run = serde_json::from_str(lines.next().expect("a run")).expect("JSON");
        (header, run)
    }

    fn error(text: &str) -> String {
        format!("{:#}", parse(text, "f.jsonl").expect_err("refused"))
    }

    #[test]
    fn bundled_recordings_parse_whole() {
        let (toy, table) = recording_paths().expect("bundled fixtures");
        let toy = load(&toy).expect("toy recording");
        let table = load(&table).expect("SmolLM2 recording");
        assert!(toy.len() > 100, "{}", toy.len());
        assert!(!table.is_empty());
        assert!(toy.iter().all(|r| matches!(r.model, Model::Toy(..))));
        assert!(
            table
                .iter()
                .all(|r| r.gguf_sha256.as_deref().is_some_and(|s| s.len() == 64))
        );
        assert_eq!(
            toy[0].origin,
            format!("{}:2", recording_paths().unwrap().0.display())
        );
    }

    #[test]
    fn unknown_missing_and_mistyped_fields_name_line_and_path() {
        let (toy, _) = recording_paths().expect("bundled fixtures");
        let (header, run) = head(&toy);
        let with = |edit: &dyn Fn(&mut Value)| {
            let mut r = run.clone();
            edit(&mut r);
            format!("{header}\n{r}\n")
        };
        let e = error(&with(&|r| r["extra"] = json!(1)));
        assert!(e.starts_with("f.jsonl:2: unknown field `extra`"), "{e}");
        let e = error(&with(&|r| {
            r.as_object_mut().unwrap().remove("sequences");
        }));
        assert!(e.starts_with("f.jsonl:2: missing field `sequences`"), "{e}");
        let e = error(&with(&|r| r["model"]["vocab"] = json!(-1)));
        assert!(
            e.starts_with("f.jsonl:2: `model.vocab`: invalid value: integer `-1`"),
            "{e}"
        );
        let e = error(&with(&|r| r["model"]["vocab"] = json!(4096)));
        assert!(e.contains("`model.vocab` = 4096 is more than 1024"), "{e}");
        let e = error(&with(&|r| r["sequences"][0][1] = json!("x")));
        assert!(
            e.starts_with("f.jsonl:2: `sequences[0][1]`: invalid type: string"),
            "{e}"
        );
        let e = error(&format!("{header}\nnot json\n"));
        assert!(e.starts_with("f.jsonl:2: expected ident"), "{e}");
    }

    #[test]
    fn headers_are_checked() {
        assert_eq!(error(""), "f.jsonl: empty, expected a header line");
        let e = error(r#"{"format": "sampling-parity-beam/2"}"#);
        assert!(e.contains("f.jsonl:1: header"), "{e}");
        assert!(
            e.contains("unknown variant `sampling-parity-beam/2`"),
            "{e}"
        );
        let e = error(
            r#"{"format": "sampling-parity-beam-table/1", "torch_version": "t", "transformers_version": "v", "generator": "g"}"#,
        );
        assert_eq!(e, "f.jsonl:1: header: missing `gguf_sha256`");
        let e = error(
            r#"{"format": "sampling-parity-beam/1", "torch_version": "t", "transformers_version": "v", "generator": "g", "x": 1}"#,
        );
        assert!(e.contains("unknown field `x`"), "{e}");
    }
}
