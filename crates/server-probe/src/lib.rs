//! `compare probe`: measure a running server's next-token sampling over HTTP
//! and name the registry semantics that explain it.
//!
//! "Why does my deployment answer differently from transformers?" The
//! probe asks the server three things, all for one prompt and one next
//! token:
//!
//! 1. the model's raw distribution before any sampling (the top K
//!    log-probabilities; llama-server gives the whole vocabulary), from
//!    which the logits are rebuilt up to a constant (`log p`; tokens not
//!    returned get `-inf`, and the mass they had is reported as
//!    `tail_mass`);
//! 2. what the server samples from for the user's request: llama-server's
//!    `post_sampling_probs`, or else N single-token completions with
//!    distinct seeds;
//! 3. nothing else: every candidate semantics then runs on the rebuilt
//!    logits with the params its own request route derives from the request
//!    ([`parity_core::AnySemantics::prepare_request`]), and is scored
//!    against (2): total variation against the post-sampling
//!    probabilities, or a G-test p-value against the samples.
//!
//! The candidates are the registry's semantics whose routes fit the API
//! (llama-server: `llama.cpp`; Ollama: the native routes of `ollama`,
//! `ollama-go`, `ollama-mlx`; OpenAI-compatible: every `/v1/` route), plus
//! transformers'
//! `generate(**request)` (`hf-rust`'s first route) and, on llama-server,
//! `llama.cpp` with temperature moved first in its chain — the two
//! explanations people usually assume. The distance from what the server
//! samples from to transformers is reported on its own
//! (`tv_to_transformers`).
//!
//! What this crate deliberately does not do: it knows no engine (the
//! registry comes from the caller), parses no tokenizer (servers that do
//! not give token ids are compared over the token texts they return), and
//! sends nothing anywhere but the one base URL it is given. Every exchange
//! can be recorded ([`Recording`]) and replayed offline with the same
//! verdicts ([`replay`]).

#![deny(missing_docs)]

mod api;
mod cells;
mod http;
pub mod repeat;
mod report;
mod stats;

use std::collections::HashMap;
use std::time::Duration;

use parity_core::{AnySemantics, Comparison, Context, Error, Logits, Prepared, Role};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

pub use api::{Api, Key, Prompt, dialect, help};
pub use http::{Exchange, Live, Replay, Transport};
pub use report::write_text;

/// A candidate explains the server when no token's probability differs by
/// more than this (post-sampling mode; the task's bar).
pub const EXPLAIN_MAX_ABS_DIFF: f64 = 1e-5;
/// A candidate is ruled out when its total variation from the server's
/// post-sampling probabilities is at least this (or ten times the tail
/// mass the raw distribution missed, if larger).
pub const RULE_OUT_TV: f64 = 1e-3;
/// Samples mode: a candidate fits the draws when their p-value under it
/// (docs/probe.md, `stats`) is above this ...
pub const EXPLAIN_P: f64 = 0.01;
/// ... and is ruled out when it is below this (the Monte-Carlo shape test
/// reaches 1e-4, the combined p-value 2e-4).
pub const RULE_OUT_P: f64 = 1e-3;
/// Two candidates whose distributions differ by at least this total
/// variation are different: a candidate explains the server only when every
/// candidate different from it is ruled out.
pub const DIFFERENT_TV: f64 = 0.05;
/// A candidate whose cells move by more than this TV between the tails a
/// truncated list allows (`cells`) is not fixed by the list.
pub const TAIL_TOLERANCE: f64 = 1e-3;
/// Equal-token tails tried between the two extremes of a truncated list
/// (`cells`): at least this many ...
pub const DEFAULT_TAIL_SHAPES: usize = 8;
/// ... about √n for n draws (so that the tail cell's mass moves between two
/// neighbouring shapes by less than its standard error), at most this many.
pub const MAX_TAIL_SHAPES: usize = 64;
/// The most samples one request may ask for.
pub const MAX_SAMPLES: usize = 100_000;
/// Without `--samples`, samples mode draws what separates the hardest pair
/// of different candidates, at least this many ...
pub const MIN_AUTO_SAMPLES: usize = 200;
/// ... and at most this many.
pub const MAX_AUTO_SAMPLES: usize = 1_000;

/// Everything a probe needs besides the registry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Options {
    /// The server's base URL (`http://host:port`).
    pub server: String,
    /// Its API.
    pub api: Api,
    /// The model name requests carry (OpenAI, Ollama).
    pub model: Option<String>,
    /// The prompt as text (tokenized by the server) ...
    pub prompt: Option<String>,
    /// ... or as token ids.
    pub prompt_ids: Option<Vec<i64>>,
    /// The requests to probe (sampling fields in the API's own names).
    pub requests: Vec<Map<String, Value>>,
    /// Draw this many samples per request instead of asking for
    /// post-sampling probabilities (`None` on a server without them: as
    /// many as separate the candidates, see [`MIN_AUTO_SAMPLES`]).
    pub samples: Option<usize>,
    /// The draws an automatic run made per request (written into a
    /// recording so that its replay asks the same; absent otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_samples: Option<Vec<usize>>,
    /// Seed of the first request; sample i uses `seed + i`.
    pub seed: u64,
    /// How many raw top log-probabilities to ask for (default: the whole
    /// vocabulary on llama-server, 20 elsewhere, the usual cap).
    pub top: Option<usize>,
    /// Seconds to wait for each answer.
    pub timeout_secs: u64,
    /// `--raw-from FILE`: for a server that returns no logprobs
    /// (transformers serve), the raw list is the one this other `--record`
    /// file holds, made on the same model and prompt (its prompt ids and
    /// vocabulary size come with it). A path relative to the current
    /// directory; in a recording, relative to the recording.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_from: Option<String>,
    /// `--vocab FILE`: the model's token strings (a JSON array, index = id,
    /// as fixtures/smollm2/vocab.json), to turn a drawn token's text into
    /// its id, and the vocabulary's size where the server does not say it
    /// (a truncated list's spread tail needs it). Relative like `raw_from`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vocab: Option<String>,
    /// `--repeat N`: the same request N times per condition ([`repeat`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat: Option<usize>,
}

impl Options {
    fn prompt(&self) -> Result<Prompt, Error> {
        match (&self.prompt, &self.prompt_ids) {
            (Some(t), None) => Ok(Prompt::Text(t.clone())),
            (None, Some(ids)) if ids.is_empty() => Err(Error::new("--prompt-ids is empty")),
            (None, Some(ids)) => Ok(Prompt::Ids(ids.clone())),
            (Some(_), Some(_)) => Err(Error::new("give --prompt or --prompt-ids, not both")),
            (None, None) => Err(Error::new("give --prompt TEXT or --prompt-ids JSON")),
        }
    }
}

/// Everything the server returned, with the options that asked for it:
/// `--record` writes it, `--replay` re-runs the comparison from it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Recording {
    /// Format version (1).
    pub schema: u32,
    /// The options of the recorded run.
    pub options: Options,
    /// Every request body and answer, in order.
    pub exchanges: Vec<Exchange>,
}

/// How a candidate fares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub enum Verdict {
    /// It reproduces what the server samples from.
    #[serde(rename = "explains")]
    Explains,
    /// It cannot be what the server runs.
    #[serde(rename = "ruled out")]
    RuledOut,
    /// It fits the evidence, but some candidate that differs from it (TV ≥
    /// [`DIFFERENT_TV`]), or may differ from it beyond what a truncated
    /// list shows, fits too or is not ruled out: the notes say which and
    /// how many draws (or how much more of the vocabulary) would tell them
    /// apart.
    #[serde(rename = "not rejected")]
    NotRejected,
    /// Neither (or it could not run).
    #[serde(rename = "undecided")]
    Undecided,
}

/// One candidate on one request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Candidate {
    /// The registry name.
    pub semantics: String,
    /// The route (endpoint) whose reading of the request it runs.
    pub endpoint: String,
    /// A variation the probe added (`temperature first`), if any.
    pub variant: Option<String>,
    /// The effective params (the semantics' own description).
    pub params: Option<Value>,
    /// Tokens it keeps.
    pub kept: Option<usize>,
    /// Post-sampling mode: total variation to the server.
    pub tv: Option<f64>,
    /// Post-sampling mode: largest |Δp| to the server.
    pub max_abs_diff: Option<f64>,
    /// Samples mode: p-value of the draws under it, `min(1, 2 min(p_support,
    /// p_shape))`.
    pub p_value: Option<f64>,
    /// Samples mode: the exact probability that every draw lands on tokens
    /// at least as likely (under it) as the least likely one drawn.
    pub p_support: Option<f64>,
    /// Samples mode: Monte-Carlo p-value of the likelihood-ratio statistic G.
    pub p_shape: Option<f64>,
    /// The verdict.
    pub verdict: Verdict,
    /// Why it could not run (refused request, bad logits).
    pub error: Option<String>,
}

impl Candidate {
    /// `semantics` or `semantics[variant]`.
    pub fn label(&self) -> String {
        match &self.variant {
            Some(v) => format!("{}[{v}]", self.semantics),
            None => self.semantics.clone(),
        }
    }
}

/// One request probed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Probe {
    /// The request as given.
    pub request: Map<String, Value>,
    /// `post-sampling` or `samples`.
    pub mode: String,
    /// Samples drawn (samples mode).
    pub samples: Option<usize>,
    /// Raw probability mass the top-K list did not cover.
    pub tail_mass: f64,
    /// Whether the list is truncated: the tokens it does not name are one
    /// cell of every test (docs/probe.md).
    pub tail_cell: bool,
    /// Tokens the server keeps after its sampler chain (post-sampling
    /// mode) or distinct tokens drawn (samples mode).
    pub server_kept: usize,
    /// Labels of the candidates whose verdict is `explains`: each fits, and
    /// every other candidate is ruled out or cannot differ from it by TV ≥
    /// [`DIFFERENT_TV`].
    pub explained_by: Vec<String>,
    /// Labels of the candidates that fit but do not explain (`not
    /// rejected`): the evidence cannot tell them from some candidate that
    /// is not ruled out (the notes say which).
    pub consistent_with: Vec<String>,
    /// Labels of the candidates that neither fit nor are ruled out
    /// (`undecided`, and they ran).
    pub not_ruled_out: Vec<String>,
    /// The two different candidates (TV ≥ [`DIFFERENT_TV`]) that need the
    /// most draws to tell apart, if any.
    pub closest: Option<Vec<String>>,
    /// The draws that would tell every such pair apart (samples mode's
    /// power), if some number does.
    pub draws_needed: Option<u64>,
    /// Pairs of candidates that may differ by TV ≥ [`DIFFERENT_TV`] only on
    /// tokens a truncated list does not name (their mass there may lie on
    /// different tokens): no number of draws tells them apart on this list.
    pub hidden_pairs: usize,
    /// What the verdicts could not settle: candidates that cannot be told
    /// apart with these draws or on this list.
    pub notes: Vec<String>,
    /// Total variation from what the server samples from (or the samples'
    /// frequencies) to transformers' `generate(**request)`.
    pub tv_to_transformers: Option<f64>,
    /// Why transformers could not be compared, if so.
    pub transformers_error: Option<String>,
    /// Every candidate, in registry order.
    pub candidates: Vec<Candidate>,
}

/// The whole answer (`--format json`, docs/report-schema.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Report {
    /// Format version (1).
    pub schema: u32,
    /// The server's base URL.
    pub server: String,
    /// Its API.
    pub api: Api,
    /// The model name sent, if any.
    pub model: Option<String>,
    /// Vocabulary size, when the server tells it.
    pub n_vocab: Option<usize>,
    /// The prompt's token ids, when known (the context penalties see).
    pub prompt_ids: Option<Vec<i64>>,
    /// Entries of the raw top-K list the server returned.
    pub raw_entries: usize,
    /// Tokens outside that list whose raw log-probability the draws
    /// returned (`dialect::DrawLogprob`): they join the listed tokens, and the tail
    /// cell holds only what none names.
    pub revealed: usize,
    /// The constant C with logits = log p + C, measured with a
    /// penalties-only request when a request sets `repeat_penalty` (which
    /// treats positive and negative logits differently); `null`: the
    /// logits are log p.
    pub logit_offset: Option<f64>,
    /// Whether this report was replayed from a recording.
    pub replayed: bool,
    /// One entry per request.
    pub probes: Vec<Probe>,
}

impl Report {
    /// What stops `semantics` from explaining this report, one line per
    /// request: it must explain every request (its verdict `explains`, which
    /// needs every candidate differing from it by TV ≥ [`DIFFERENT_TV`]
    /// ruled out). Empty: it does.
    pub fn expect(&self, semantics: &str) -> Vec<String> {
        let mut failures = Vec::new();
        for (i, p) in self.probes.iter().enumerate() {
            let request = Value::Object(p.request.clone());
            let mine: Vec<&Candidate> = p
                .candidates
                .iter()
                .filter(|c| c.semantics == semantics && c.variant.is_none())
                .collect();
            if mine.iter().any(|c| c.verdict == Verdict::Explains) {
                continue;
            }
            let why = match mine.first() {
                None => "it is not a candidate for this server's API".to_string(),
                Some(c) => match c.verdict {
                    Verdict::RuledOut => "it is ruled out".to_string(),
                    Verdict::NotRejected => format!(
                        "it fits, but the evidence cannot tell it from a candidate that may differ ({})",
                        p.notes.join("; ")
                    ),
                    Verdict::Undecided => match &c.error {
                        Some(e) => format!("it could not run: {e}"),
                        None => "the evidence neither fits nor rules it out".to_string(),
                    },
                    Verdict::Explains => continue,
                },
            };
            let others: Vec<String> = p.explained_by.clone();
            failures.push(format!(
                "request [{i}] {request}: {semantics} does not explain it: {why}{}",
                if others.is_empty() {
                    String::new()
                } else {
                    format!(" (explained by {})", others.join(", "))
                }
            ));
        }
        failures
    }
}

/// Probes a live server. The recording is returned whether the probe
/// succeeds or not (everything exchanged up to a failure), so that
/// `--record` can keep it.
pub fn probe(
    options: &Options,
    registry: &[Box<dyn AnySemantics>],
) -> (Result<Report, Error>, Recording) {
    let mut recording = Recording {
        schema: 1,
        options: options.clone(),
        exchanges: Vec::new(),
    };
    let mut live = match Live::new(&options.server, Duration::from_secs(options.timeout_secs)) {
        Ok(l) => l,
        Err(e) => return (Err(e), recording),
    };
    let result = run(options, registry, &mut live, false);
    recording.exchanges = std::mem::take(&mut live.exchanges);
    let report = result.map(|(report, auto)| {
        recording.options.auto_samples = auto;
        report
    });
    (report, recording)
}

/// Re-runs a recorded probe offline.
pub fn replay(recording: &Recording, registry: &[Box<dyn AnySemantics>]) -> Result<Report, Error> {
    if recording.schema != 1 {
        return Err(Error::new(format_args!(
            "recording schema {} is not supported (expected 1)",
            recording.schema
        )));
    }
    let mut transport = Replay::new(recording.exchanges.clone());
    run(&recording.options, registry, &mut transport, true).map(|(report, _)| report)
}

/// What the server said for one request.
enum Observed {
    Post(Vec<(Key, f64)>),
    Samples(Vec<Key>),
}

/// Runs the probe through any transport.
pub(crate) fn run(
    options: &Options,
    registry: &[Box<dyn AnySemantics>],
    transport: &mut dyn Transport,
    replayed: bool,
) -> Result<(Report, Option<Vec<usize>>), Error> {
    let prompt = options.prompt()?;
    if options.requests.is_empty() {
        return Err(Error::new("give at least one --request JSON"));
    }
    if let Some(n) = options.samples
        && !(1..=MAX_SAMPLES).contains(&n)
    {
        return Err(Error::new(format_args!(
            "--samples {n}: expected 1 to {MAX_SAMPLES}"
        )));
    }
    if options.top == Some(0) {
        return Err(Error::new("--top must be at least 1"));
    }
    let borrowed = options.raw_from.as_deref().map(borrow_raw).transpose()?;
    let texts = options.vocab.as_deref().map(TextIds::load).transpose()?;
    let mut session = api::Session::new(transport, options.api, options.model.clone());
    let mut info = session.hello()?;
    // The dialect the server's listing named, if it did (`owned_by`).
    let api = session.api();
    let prompt_ids = match &borrowed {
        Some(b) if options.prompt_ids.is_none() => b.prompt_ids.clone(),
        _ => session.prompt_ids(&prompt)?,
    };
    if let Some(b) = &borrowed {
        info.n_vocab = info.n_vocab.or(b.n_vocab);
    }
    // A vocabulary file tells the size where the server does not
    // (its answers left `n_vocab` unset): a truncated list's spread tail needs it.
    if let Some(t) = &texts {
        match info.n_vocab {
            None => info.n_vocab = Some(t.len),
            Some(n) if n != t.len => {
                return Err(Error::new(format_args!(
                    "--vocab {}: {} tokens, but the server's vocabulary has {n}",
                    t.path, t.len
                )));
            }
            Some(_) => {}
        }
    }
    if let (Some(ids), Some(n)) = (&prompt_ids, info.n_vocab)
        && let Some((i, id)) = ids
            .iter()
            .enumerate()
            .find(|&(_, &id)| usize::try_from(id).map_or(true, |id| id >= n))
    {
        return Err(Error::new(format_args!(
            "prompt id [{i}] = {id} is outside the server's vocabulary of {n} tokens"
        )));
    }
    // llama-server gets the ids, so that the context is exactly what its
    // penalties see.
    let sent = match &prompt_ids {
        Some(ids) if api.takes_prompt_ids() => Prompt::Ids(ids.clone()),
        _ => prompt.clone(),
    };
    let k = top_k(options.top, info.n_vocab, api);
    let raw = match &borrowed {
        Some(b) => b.raw.clone(),
        None => session.raw(&sent, k, options.seed)?,
    };
    // ... or its refusal of the raw request did (mlx_lm.server's bool logprobs).
    let api = session.api();
    if raw.is_empty() {
        return Err(Error::new("the server returned an empty raw top-K list"));
    }
    // A dialect that asked for the whole vocabulary (vLLM `logprobs: -1`)
    // and got every id from 0 up once has told the vocabulary's size.
    if info.n_vocab.is_none() && k == usize::MAX && covers_every_id(&raw) {
        info.n_vocab = Some(raw.len());
    }
    // One index space for everything: token ids on llama-server, else the
    // keys in the order first seen.
    let mut space = Space::new(info.n_vocab);
    for (key, _) in &raw {
        space.index(key)?;
    }
    let context_ids: Vec<i64> = match &prompt_ids {
        Some(ids) => ids
            .iter()
            .map(|&id| space.index(&Key::Id(id)).map(|i| i as i64))
            .collect::<Result<_, _>>()?,
        None => Vec::new(),
    };
    // A repeat penalty divides positive logits and multiplies negative ones,
    // so it needs the logits themselves, not log p: measure the constant.
    let needs_offset = options.requests.iter().any(|r| {
        r.get("repeat_penalty")
            .and_then(Value::as_f64)
            .is_some_and(|x| x != 1.0)
    });
    // Measured against the post-sampling view of the same context.
    let logit_offset = match (&prompt_ids, info.n_vocab) {
        (Some(ids), Some(n)) if needs_offset && api.has_post_sampling() => {
            let post = session.calibration(&sent, ids.len(), n, options.seed)?;
            Some(offset(&raw, &post, ids)?)
        }
        _ => None,
    };
    let offset_value = logit_offset.unwrap_or(0.0);
    let whole = info.n_vocab.is_some_and(|n| raw.len() >= n);
    let (logits, listed_raw, tail_mass) = if whole {
        let (logits, tail_mass) = rebuild(&raw, &mut space, offset_value)?;
        (Some(logits), Vec::new(), tail_mass)
    } else {
        let (listed, tail_mass) = listed(&raw, &mut space, offset_value)?;
        (None, listed, tail_mass)
    };
    // The cells before any draw (what the power that picks `--samples`
    // runs on), and after: a truncated list then also names the tokens
    // whose raw log-probability the draws returned.
    let cells_with = |revealed: &[(usize, f32)], tail_mass: f64, shapes: usize| match &logits {
        Some(l) => Ok(cells::Cells::whole(l.clone(), context_ids.clone())),
        None => {
            let mut all = listed_raw.clone();
            all.extend_from_slice(revealed);
            cells::Cells::truncated(
                &all,
                listed_raw.len(),
                tail_mass,
                offset_value,
                info.n_vocab,
                &context_ids,
                shapes,
            )
        }
    };

    let defaults = info
        .props
        .pointer("/default_generation_settings/params")
        .and_then(Value::as_object)
        .filter(|_| api.tells_default_params());
    let mut pending = Vec::new();
    let mut drawn = Vec::new();
    let mut revealed = Revealed::new(&listed_raw, tail_mass, offset_value);
    let mut before: Option<cells::Cells> = None;
    for (r, request) in options.requests.iter().enumerate() {
        let (routes, transformers) = candidates(api, request, registry, defaults);
        let observed = match options.samples {
            None if api.has_post_sampling() => {
                let n = info.n_vocab.unwrap_or(k);
                Observed::Post(session.post_sampling(request, &sent, n, options.seed)?)
            }
            given => {
                let n = match (given, options.auto_samples.as_ref().and_then(|a| a.get(r))) {
                    (Some(n), _) => n,
                    (None, Some(&n)) => n,
                    (None, None) => {
                        if before.is_none() {
                            before = Some(cells_with(&[], tail_mass, DEFAULT_TAIL_SHAPES)?);
                        }
                        let cells = before.as_ref().expect("just built");
                        let evals = evaluate(&routes, cells)?;
                        let power = power(&evals, cells.has_tail().then_some(cells.n_known))?;
                        auto_samples(power.as_ref())
                    }
                };
                drawn.push(n);
                let mut keys = Vec::with_capacity(n);
                for i in 0..n as u64 {
                    let d = session.sample(request, &sent, options.seed + i)?;
                    let key = match (&texts, d.key) {
                        (Some(t), Key::Text(text)) => Key::Id(t.id(&text)?),
                        (_, key) => key,
                    };
                    if let (Some(lp), false) = (d.logprob, whole) {
                        revealed.add(&key, lp, &mut space)?;
                    }
                    keys.push(key);
                }
                Observed::Samples(keys)
            }
        };
        pending.push((request, routes, transformers, observed));
    }
    let most_draws = drawn.iter().copied().max().unwrap_or(0);
    let (by_draws, tail_mass, revealed_note) = revealed.finish();
    let mut cells = cells_with(&by_draws, tail_mass, tail_shapes(most_draws))?;
    cells.notes.extend(revealed_note);
    let mut probes = Vec::new();
    for (r, (request, routes, transformers, observed)) in pending.into_iter().enumerate() {
        let evals = evaluate(&routes, &cells)?;
        let power = power(&evals, cells.has_tail().then_some(cells.n_known))?;
        let seed = options.seed.wrapping_mul(1_000_003).wrapping_add(r as u64);
        probes.push(analyse(
            request,
            &observed,
            &cells,
            tail_mass,
            &mut space,
            &routes,
            transformers.as_ref(),
            &evals,
            power.as_ref(),
            seed,
        )?);
    }
    let auto_samples = options.samples.is_none() && !drawn.is_empty();
    Ok((
        Report {
            schema: 1,
            server: options.server.clone(),
            api: session.api(),
            model: info.model,
            n_vocab: info.n_vocab,
            prompt_ids,
            raw_entries: raw.len(),
            revealed: by_draws.len(),
            logit_offset,
            replayed,
            probes,
        },
        auto_samples.then_some(drawn),
    ))
}

/// How many raw top log-probabilities to ask for: `--top`, else the whole
/// vocabulary where it is known or the dialect can ask for it, else the
/// dialect's cap (20 without one).
fn top_k(top: Option<usize>, n_vocab: Option<usize>, api: Api) -> usize {
    match (top, n_vocab, api.max_top()) {
        (Some(k), Some(n), _) => k.min(n),
        (Some(k), None, _) => k,
        // The whole vocabulary, or as much of it as one answer may hold.
        (None, Some(n), cap) => cap.map_or(n, |c| n.min(c)),
        (None, None, _) if api.dialect().whole.is_some() => usize::MAX,
        (None, None, cap) => cap.unwrap_or(20),
    }
}

/// The raw list of another recording ([`Options::raw_from`]).
struct Borrowed {
    raw: Vec<(Key, f64)>,
    n_vocab: Option<usize>,
    prompt_ids: Option<Vec<i64>>,
}

/// Largest `--raw-from` file read (the committed recordings are at most
/// 25 MB).
const MAX_FILE_BYTES: u64 = 256 << 20;

/// At most [`MAX_FILE_BYTES`] of the file at `path` (`what`: its option).
fn read_file(what: &str, path: &str) -> Result<Vec<u8>, Error> {
    parity_core::fixture::read_at_most(std::path::Path::new(path), MAX_FILE_BYTES)
        .map_err(|e| Error::new(format_args!("{what} {path}: {e}")))?
        .map_err(|_| Error::new(format_args!("{what} {path}: over {MAX_FILE_BYTES} bytes")))
}

/// Replays the raw request of the recording at `path`, as its own probe
/// asked it.
fn borrow_raw(path: &str) -> Result<Borrowed, Error> {
    let bytes = read_file("--raw-from", path)?;
    let rec: Recording = serde_json::from_slice(&bytes).map_err(|e| {
        Error::new(format_args!(
            "--raw-from {path}: not a probe recording: {e}"
        ))
    })?;
    if rec.options.raw_from.is_some() {
        return Err(Error::new(format_args!(
            "--raw-from {path}: that recording borrows its raw list too; give the one that holds it"
        )));
    }
    let mut transport = Replay::new(rec.exchanges.clone());
    let mut session = api::Session::new(&mut transport, rec.options.api, rec.options.model.clone());
    let wrap = |e: Error| Error::new(format_args!("--raw-from {path}: {e}"));
    let mut info = session.hello().map_err(wrap)?;
    let prompt = rec.options.prompt().map_err(wrap)?;
    let prompt_ids = session.prompt_ids(&prompt).map_err(wrap)?;
    let api = session.api();
    let sent = match &prompt_ids {
        Some(ids) if api.takes_prompt_ids() => Prompt::Ids(ids.clone()),
        _ => prompt,
    };
    let k = top_k(rec.options.top, info.n_vocab, api);
    let raw = session.raw(&sent, k, rec.options.seed).map_err(wrap)?;
    if info.n_vocab.is_none() && k == usize::MAX && covers_every_id(&raw) {
        info.n_vocab = Some(raw.len());
    }
    Ok(Borrowed {
        raw,
        n_vocab: info.n_vocab,
        prompt_ids,
    })
}

/// A drawn token's text to its id ([`Options::vocab`]): the ids whose
/// decoded text (byte-level BPE bytes as UTF-8) is that text.
struct TextIds {
    path: String,
    ids: HashMap<String, Vec<usize>>,
    /// The vocabulary's size.
    len: usize,
}

impl TextIds {
    fn load(path: &str) -> Result<Self, Error> {
        let vocab = parity_core::Vocab::load(std::path::Path::new(path))
            .map_err(|e| Error::new(format_args!("--vocab: {e}")))?;
        let mut ids: HashMap<String, Vec<usize>> = HashMap::new();
        for id in 0..vocab.len() {
            if let Some(parity_core::token::Piece::Text(t)) = vocab.piece(id) {
                ids.entry(t).or_default().push(id);
            }
        }
        Ok(Self {
            path: path.to_string(),
            ids,
            len: vocab.len(),
        })
    }

    fn id(&self, text: &str) -> Result<i64, Error> {
        match self.ids.get(text).map(Vec::as_slice) {
            Some([id]) => Ok(*id as i64),
            Some(many) => Err(Error::new(format_args!(
                "the server drew {text:?}, which is the text of {} tokens of {} (ids {many:?}): a draw's text does not name one token",
                many.len(),
                self.path
            ))),
            None => Err(Error::new(format_args!(
                "the server drew {text:?}, which is no token of {}: the vocabulary differs from the server's, or the draw was more than one token",
                self.path
            ))),
        }
    }
}

/// Whether the list names the ids 0..len, each once.
fn covers_every_id(raw: &[(Key, f64)]) -> bool {
    let mut seen = vec![false; raw.len()];
    for (key, _) in raw {
        match key {
            Key::Id(id) => match usize::try_from(*id).ok().and_then(|i| seen.get_mut(i)) {
                Some(s) if !*s => *s = true,
                _ => return false,
            },
            Key::Text(_) => return false,
        }
    }
    true
}

/// The draws to make when the user gives no `--samples`: what separates the
/// hardest pair of candidates that differ by TV ≥ [`DIFFERENT_TV`], within
/// [`MIN_AUTO_SAMPLES`] to [`MAX_AUTO_SAMPLES`].
fn auto_samples(power: Option<&Power>) -> usize {
    power
        .and_then(|p| p.needed)
        .map_or(MIN_AUTO_SAMPLES, |n| {
            usize::try_from(n).unwrap_or(MAX_AUTO_SAMPLES)
        })
        .clamp(MIN_AUTO_SAMPLES, MAX_AUTO_SAMPLES)
}

/// A server's log-probability: not NaN and at most 0 (1e-4 above it is the
/// noise of a printed float).
fn is_log_probability(lp: f64) -> bool {
    !lp.is_nan() && lp <= 1e-4
}

/// Equal-token tails to try for `n` draws ([`DEFAULT_TAIL_SHAPES`]).
fn tail_shapes(n: usize) -> usize {
    ((n as f64).sqrt().ceil() as usize).clamp(DEFAULT_TAIL_SHAPES, MAX_TAIL_SHAPES)
}

/// The tokens outside a truncated raw list whose raw log-probability the
/// draws returned ([`dialect::DrawLogprob`]), each checked against the list
/// and against its other draws: one disagreement (another stage) and none
/// is used.
struct Revealed {
    /// The raw list: space index -> log p.
    listed: HashMap<usize, f64>,
    offset: f64,
    tail_mass: f64,
    /// Space index -> log p, in the order first drawn ...
    named: Vec<(usize, f64)>,
    /// ... and where in `named` each index is.
    position: HashMap<usize, usize>,
    conflict: Option<String>,
}

impl Revealed {
    fn new(listed: &[(usize, f32)], tail_mass: f64, offset: f64) -> Self {
        Self {
            listed: listed
                .iter()
                .map(|&(i, l)| (i, f64::from(l) - offset))
                .collect(),
            offset,
            tail_mass,
            named: Vec::new(),
            position: HashMap::new(),
            conflict: None,
        }
    }

    fn add(&mut self, key: &Key, lp: f64, space: &mut Space) -> Result<(), Error> {
        if !is_log_probability(lp) {
            return Err(Error::new(format_args!(
                "a draw's log-probability {lp} (token {key:?}) is not a log-probability"
            )));
        }
        if self.conflict.is_some() {
            return Ok(());
        }
        let idx = space.index(key)?;
        let before = self
            .listed
            .get(&idx)
            .map(|&l| (l, "the raw list"))
            .or_else(|| {
                self.position
                    .get(&idx)
                    .map(|&j| (self.named[j].1, "another draw"))
            });
        match before {
            Some((l, _)) if (l - lp).abs() <= 1e-4 || (l.is_infinite() && lp == l) => {}
            Some((l, what)) => {
                self.conflict = Some(format!(
                    "a draw of token {key:?} returned log-probability {lp}, {what} {l}: the draws' log-probabilities are not the raw list's stage and are not used"
                ));
            }
            None => {
                self.position.insert(idx, self.named.len());
                self.named.push((idx, lp));
            }
        }
        Ok(())
    }

    /// The named tokens as (space index, logit), the raw mass none of the
    /// listed or named holds, and why the named are not used, if so.
    fn finish(self) -> (Vec<(usize, f32)>, f64, Option<String>) {
        if let Some(c) = self.conflict {
            return (Vec::new(), self.tail_mass, Some(c));
        }
        let mass: f64 = self.named.iter().map(|(_, lp)| lp.exp()).sum();
        let rest = self.tail_mass - mass;
        if rest < -1e-4 {
            return (
                Vec::new(),
                self.tail_mass,
                Some(format!(
                    "the draws name tokens of raw mass {mass:.4} outside the list, more than the {:.4} it misses: their log-probabilities are not used",
                    self.tail_mass
                )),
            );
        }
        let offset = self.offset;
        let named = self
            .named
            .into_iter()
            .map(|(i, lp)| (i, (lp as f32 as f64 + offset) as f32))
            .collect();
        (named, rest.max(0.0), None)
    }
}

/// Token keys to indices of the logits vector.
struct Space {
    fixed: Option<usize>,
    index: HashMap<Key, usize>,
    len: usize,
}

impl Space {
    fn new(fixed: Option<usize>) -> Self {
        Self {
            fixed,
            index: HashMap::new(),
            len: fixed.unwrap_or(0),
        }
    }

    fn index(&mut self, key: &Key) -> Result<usize, Error> {
        if let Some(n) = self.fixed {
            return match key {
                Key::Id(id) if usize::try_from(*id).is_ok_and(|i| i < n) => Ok(*id as usize),
                Key::Id(id) => Err(Error::new(format_args!(
                    "the server named token {id}, outside its vocabulary of {n} tokens: the vocabulary differs from the one the candidates run on"
                ))),
                Key::Text(t) => Err(Error::new(format_args!(
                    "the server named a token by its text {t:?} where an id was expected"
                ))),
            };
        }
        let next = self.len;
        let i = *self.index.entry(key.clone()).or_insert(next);
        if i == next {
            self.len += 1;
        }
        Ok(i)
    }
}

/// Logits up to a constant (`log p`; `-inf` for tokens not listed or with
/// p = 0) and the raw mass the list missed.
fn rebuild(raw: &[(Key, f64)], space: &mut Space, offset: f64) -> Result<(Logits, f64), Error> {
    let (listed, mass) = listed(raw, space, offset)?;
    let mut logits = vec![f32::NEG_INFINITY; space.len];
    for (idx, l) in listed {
        logits[idx] = l;
    }
    Ok((Logits::from_f32(&logits), mass))
}

/// The raw list as (space index, logit = log p + offset; `-inf` for p = 0)
/// and the raw mass it misses.
fn listed(
    raw: &[(Key, f64)],
    space: &mut Space,
    offset: f64,
) -> Result<(Vec<(usize, f32)>, f64), Error> {
    let mut out = Vec::with_capacity(raw.len());
    let mut mass = 0.0;
    for (i, (key, lp)) in raw.iter().enumerate() {
        if !is_log_probability(*lp) {
            return Err(Error::new(format_args!(
                "raw top list [{i}]: log-probability {lp} is not a log-probability"
            )));
        }
        let idx = space.index(key)?;
        // llama-server writes float's lowest value for p = 0.
        let l = if *lp <= f64::from(f32::MIN) {
            f32::NEG_INFINITY
        } else {
            *lp as f32
        };
        if l.is_finite() {
            mass += f64::from(l).exp();
        }
        out.push((idx, (f64::from(l) + offset) as f32));
    }
    Ok((out, (1.0 - mass).max(0.0)))
}

/// The constant C with raw logits = log p + C, from llama-server's answer
/// to a chain of only `penalties` (repeat penalty 2 over the whole
/// prompt): a prompt token s moves by Δ_s = l_s' − l_s relative to the
/// tokens outside the prompt, which is −l_s/2 when its logit l_s is
/// positive and l_s when it is not (llama.cpp 0c1e57098,
/// src/llama-sampler.cpp `llama_sampler_penalties_apply`). Each token thus
/// offers two values of C = l_s − log p_s; the one every prompt token
/// agrees with (within 1e-3) is the answer.
fn offset(raw: &[(Key, f64)], post: &[(Key, f64)], prompt: &[i64]) -> Result<f64, Error> {
    let to_map = |list: &[(Key, f64)], log: bool| -> HashMap<i64, f64> {
        list.iter()
            .filter_map(|(k, v)| match k {
                Key::Id(id) if log && *v > f64::from(f32::MIN) => Some((*id, *v)),
                Key::Id(id) if !log && *v > 0.0 => Some((*id, v.ln())),
                _ => None,
            })
            .collect()
    };
    let (lp, lq) = (to_map(raw, true), to_map(post, false));
    let in_prompt: std::collections::HashSet<i64> = prompt.iter().copied().collect();
    // The normalisation difference, from the likeliest token outside the prompt.
    let reference = raw
        .iter()
        .filter_map(|(k, _)| match k {
            Key::Id(id) if !in_prompt.contains(id) => Some(*id),
            _ => None,
        })
        .find(|id| lp.contains_key(id) && lq.contains_key(id))
        .ok_or_else(|| Error::new("calibration: no token outside the prompt in both answers"))?;
    let k = lq[&reference] - lp[&reference];
    let mut deltas = Vec::new();
    let mut ids: Vec<i64> = in_prompt.iter().copied().collect();
    ids.sort_unstable();
    for id in ids {
        if let (Some(p), Some(q)) = (lp.get(&id), lq.get(&id)) {
            deltas.push((*p, q - k - p));
        }
    }
    if deltas.is_empty() {
        return Err(Error::new(
            "calibration: no prompt token has a probability in both answers",
        ));
    }
    let hypotheses: Vec<f64> = deltas
        .iter()
        .flat_map(|&(p, d)| [-2.0 * d - p, d - p])
        .collect();
    let agrees = |c: f64, (p, d): (f64, f64)| {
        let l = p + c;
        let predicted = if l > 0.0 { -l / 2.0 } else { l };
        (predicted - d).abs() <= 1e-3
    };
    let best = hypotheses
        .iter()
        .copied()
        .max_by_key(|&c| deltas.iter().filter(|&&pd| agrees(c, pd)).count())
        .unwrap_or(0.0);
    let agreeing = deltas.iter().filter(|&&pd| agrees(best, pd)).count();
    if agreeing < deltas.len() {
        return Err(Error::new(format_args!(
            "calibration: only {agreeing} of {} prompt tokens agree on one logit offset; \
             the server's repeat penalty is not llama.cpp's",
            deltas.len()
        )));
    }
    // The mean of the agreeing tokens' values.
    let values: Vec<f64> = deltas
        .iter()
        .map(|&(p, d)| if p + best > 0.0 { -2.0 * d - p } else { d - p })
        .collect();
    Ok(values.iter().sum::<f64>() / values.len() as f64)
}

struct Routed<'s> {
    semantics: &'static str,
    endpoint: parity_core::Endpoint,
    variant: Option<String>,
    prepared: Result<Box<dyn Prepared + 's>, String>,
}

/// The candidates for one request: the fitting routes, transformers, and
/// on llama-server the same chain with temperature first.
fn candidates<'s>(
    api: Api,
    request: &Map<String, Value>,
    registry: &'s [Box<dyn AnySemantics>],
    defaults: Option<&Map<String, Value>>,
) -> (Vec<Routed<'s>>, Option<Routed<'s>>) {
    let mut out = Vec::new();
    let mut transformers = None;
    for s in registry {
        let name = s.info().name;
        let served = served_request(s.as_ref(), api, request, defaults);
        let request = served.as_ref().unwrap_or(request);
        for (i, route) in s.prepare_request(request, None).into_iter().enumerate() {
            let routed = Routed {
                semantics: name,
                endpoint: route.endpoint,
                variant: None,
                prepared: route.params.map_err(|e| e.to_string()),
            };
            if s.role() == Role::ReferenceComputed && i == 0 {
                let again = s.prepare_request(request, None).into_iter().next();
                transformers = again.map(|r| Routed {
                    semantics: name,
                    endpoint: r.endpoint,
                    variant: None,
                    prepared: r.params.map_err(|e| e.to_string()),
                });
                out.push(routed);
                continue;
            }
            if !api.serves(route.endpoint) {
                continue;
            }
            let temp_first = api
                .orders_samplers()
                .then(|| temperature_first(routed.prepared.as_ref().ok()?.as_ref(), request))
                .flatten();
            out.push(routed);
            if let Some(req) = temp_first
                && let Some(r) = s
                    .prepare_request(&req, None)
                    .into_iter()
                    .find(|r| r.endpoint == route.endpoint)
            {
                out.push(Routed {
                    semantics: name,
                    endpoint: r.endpoint,
                    variant: Some("temperature first".into()),
                    prepared: r.params.map_err(|e| e.to_string()),
                });
            }
        }
    }
    (out, transformers)
}

/// The request a candidate served by this API's own server sees: the
/// fields the server reports as its defaults (llama-server's `/props`
/// `default_generation_settings.params`: built in, the model file's, the
/// operator's flags) that the candidate's own params name and the request
/// leaves out, filled in — so the candidate samples with the server's real
/// defaults instead of its built-in ones. `None`: nothing to fill (another
/// API, transformers, a route the server does not serve, a refusal).
fn served_request(
    s: &dyn AnySemantics,
    api: Api,
    request: &Map<String, Value>,
    defaults: Option<&Map<String, Value>>,
) -> Option<Map<String, Value>> {
    let defaults = defaults?;
    if s.role() == Role::ReferenceComputed {
        return None;
    }
    let route = s
        .prepare_request(request, None)
        .into_iter()
        .find(|r| api.serves(r.endpoint))?;
    let described = route.params.ok()?.describe()?.into_json();
    let mut filled = request.clone();
    for key in described.as_object()?.keys() {
        if let (None, Some(v)) = (request.get(key), defaults.get(key)) {
            filled.insert(key.clone(), v.clone());
        }
    }
    (filled != *request).then_some(filled)
}

/// The request with the effective sampler chain reordered to put
/// temperature first, when it is not first already.
fn temperature_first(p: &dyn Prepared, request: &Map<String, Value>) -> Option<Map<String, Value>> {
    let described = p.describe()?.into_json();
    let chain: Vec<&str> = described
        .get("samplers")?
        .as_array()?
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let pos = chain.iter().position(|&s| s == "temperature")?;
    if pos == 0 {
        return None;
    }
    let mut order = vec!["temperature"];
    order.extend(chain.iter().filter(|&&s| s != "temperature"));
    let mut req = request.clone();
    req.insert("samplers".into(), json!(order));
    Some(req)
}

/// A candidate run on every tail configuration: its cells per
/// configuration, or why it could not run.
struct Eval {
    params: Option<Value>,
    kept: Option<usize>,
    cells: Result<Vec<Vec<f64>>, String>,
}

/// Runs every candidate on every tail configuration.
fn evaluate(routes: &[Routed<'_>], cells: &cells::Cells) -> Result<Vec<Eval>, Error> {
    let context = Context::new(&cells.context, None)?;
    let mut out = Vec::with_capacity(routes.len());
    for r in routes {
        let eval = match &r.prepared {
            Err(e) => Eval {
                params: None,
                kept: None,
                cells: Err(format!("the route refuses the request: {e}")),
            },
            Ok(p) => {
                let params = p.describe().map(parity_core::Described::into_json);
                let mut kept = None;
                let mut per = Vec::new();
                let mut error = None;
                for (_, logits) in &cells.configs {
                    match p.distribution(logits, &context) {
                        Ok(d) => {
                            kept.get_or_insert(d.kept().len());
                            per.push(cells.project(d.probs()));
                        }
                        Err(e) => {
                            error = Some(e.to_string());
                            break;
                        }
                    }
                }
                Eval {
                    params,
                    kept,
                    cells: error.map_or(Ok(per), Err),
                }
            }
        };
        out.push(eval);
    }
    Ok(out)
}

/// Total variation between two cell vectors of the same length.
fn tv(a: &[f64], b: &[f64]) -> Result<f64, Error> {
    Comparison::new(a, b)
        .map(|c| c.tv)
        .map_err(|e| Error::new(e.to_string()))
}

/// The smallest and largest TV between two candidates over the tail
/// configurations (the same configuration for both).
fn pair_tv(a: &[Vec<f64>], b: &[Vec<f64>]) -> Result<(f64, f64), Error> {
    let mut lo = f64::INFINITY;
    let mut hi: f64 = 0.0;
    for (x, y) in a.iter().zip(b) {
        let t = tv(x, y)?;
        lo = lo.min(t);
        hi = hi.max(t);
    }
    Ok((lo, hi))
}

/// What the probe can tell apart on one request.
struct Power {
    /// Draws that separate every pair of candidates differing by TV ≥
    /// [`DIFFERENT_TV`] (the hardest pair's), if any pair can be.
    needed: Option<u64>,
    /// The hardest pair, its TV and its draws.
    hardest: Option<(usize, usize, f64, Option<u64>)>,
    /// Pairs that may differ by TV ≥ [`DIFFERENT_TV`] only on tokens a
    /// truncated list does not name: no number of draws tells them apart.
    hidden: usize,
}

/// What the probe can tell apart, with the tail cell at `tail` on a
/// truncated list.
fn power(evals: &[Eval], tail: Option<usize>) -> Result<Option<Power>, Error> {
    let mut hardest: Option<(usize, usize, f64, Option<u64>)> = None;
    let mut needed: Option<u64> = None;
    let mut hidden = 0;
    for i in 0..evals.len() {
        for j in i + 1..evals.len() {
            let (Ok(a), Ok(b)) = (&evals[i].cells, &evals[j].cells) else {
                continue;
            };
            let (_, hi) = pair_tv(a, b)?;
            if hi < DIFFERENT_TV {
                if let Some(t) = tail
                    && pair_reach(a, b, t)? >= DIFFERENT_TV
                {
                    hidden += 1;
                }
                continue;
            }
            let n = stats::draws_to_separate(&a[0], &b[0], RULE_OUT_P);
            let worse = match (&hardest, n) {
                (None, _) => true,
                (Some((_, _, _, None)), _) => false,
                (Some(_), None) => true,
                (Some((_, _, _, Some(m))), Some(n)) => n > *m,
            };
            if worse {
                hardest = Some((i, j, hi, n));
            }
            if let Some(n) = n {
                needed = Some(needed.map_or(n, |m| m.max(n)));
            }
        }
    }
    Ok((hardest.is_some() || hidden > 0).then_some(Power {
        needed,
        hardest,
        hidden,
    }))
}

/// A candidate's label, with its route when another candidate has the same
/// label on another route.
fn named(out: &[Candidate], i: usize) -> String {
    let c = &out[i];
    if out
        .iter()
        .any(|o| o.label() == c.label() && o.endpoint != c.endpoint)
    {
        format!("{} ({})", c.label(), c.endpoint)
    } else {
        c.label()
    }
}

/// The labels of the candidates `pick` picks, each once; a label whose
/// other routes are not picked is named with its route (transformers serve
/// explains where generate(**request) does not).
fn labels_with(out: &[Candidate], pick: impl Fn(&Candidate) -> bool) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for (i, c) in out.iter().enumerate() {
        if !pick(c) {
            continue;
        }
        let mixed = out.iter().any(|o| o.label() == c.label() && !pick(o));
        let name = if mixed { named(out, i) } else { c.label() };
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

/// The largest total variation two candidates can have over the whole
/// vocabulary given their cells with the tail cell at `tail`: their TV on
/// the cells plus the mass both put in the tail (which may lie on
/// different unlisted tokens), the largest over the tail configurations.
fn pair_reach(a: &[Vec<f64>], b: &[Vec<f64>], tail: usize) -> Result<f64, Error> {
    let mut reach: f64 = 0.0;
    for (x, y) in a.iter().zip(b) {
        let shared = match (x.get(tail), y.get(tail)) {
            (Some(&s), Some(&t)) => s.min(t),
            _ => 0.0,
        };
        reach = reach.max(tv(x, y)? + shared);
    }
    Ok(reach.min(1.0))
}

/// The server's side over the cells: its probabilities (or the draws'
/// frequencies), the draw counts (samples mode), and the tokens it keeps
/// (or the distinct tokens drawn).
type ServerCells = (Vec<f64>, Option<Vec<u64>>, usize);

/// The server's side over the cells ([`ServerCells`]).
fn server_cells(
    o: &Observed,
    space: &mut Space,
    cells: &cells::Cells,
) -> Result<ServerCells, Error> {
    let n = cells.len();
    match o {
        Observed::Post(list) => {
            let mut probs = vec![0.0; n];
            for (i, (key, p)) in list.iter().enumerate() {
                if !(0.0..=1.0 + 1e-6).contains(p) {
                    return Err(Error::new(format_args!(
                        "post-sampling list [{i}]: {p} is not a probability"
                    )));
                }
                probs[cells.cell(space.index(key)?)] += *p;
            }
            Ok((probs, None, list.len()))
        }
        Observed::Samples(keys) => {
            let mut counts = vec![0u64; n];
            let mut distinct = std::collections::HashSet::new();
            for key in keys {
                let idx = space.index(key)?;
                distinct.insert(idx);
                counts[cells.cell(idx)] += 1;
            }
            let total = keys.len().max(1) as f64;
            let probs = counts.iter().map(|&c| c as f64 / total).collect();
            Ok((probs, Some(counts), distinct.len()))
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn analyse(
    request: &Map<String, Value>,
    observed: &Observed,
    cells: &cells::Cells,
    tail_mass: f64,
    space: &mut Space,
    routes: &[Routed<'_>],
    transformers: Option<&Routed<'_>>,
    evals: &[Eval],
    power: Option<&Power>,
    seed: u64,
) -> Result<Probe, Error> {
    let (server, counts, server_kept) = server_cells(observed, space, cells)?;
    let rule_out_tv = RULE_OUT_TV.max(10.0 * tail_mass);
    let mut out = Vec::new();
    let mut tail_dependent = Vec::new();
    for (i, (r, e)) in routes.iter().zip(evals).enumerate() {
        let mut c = Candidate {
            semantics: r.semantics.to_string(),
            endpoint: r.endpoint.to_string(),
            variant: r.variant.clone(),
            params: e.params.clone(),
            kept: e.kept,
            tv: None,
            max_abs_diff: None,
            p_value: None,
            p_support: None,
            p_shape: None,
            verdict: Verdict::Undecided,
            error: None,
        };
        match &e.cells {
            Err(err) => c.error = Some(err.clone()),
            Ok(per) => {
                let cand_seed = seed.wrapping_mul(31).wrapping_add(i as u64);
                score(
                    &mut c,
                    per,
                    cells,
                    &server,
                    counts.as_deref(),
                    rule_out_tv,
                    cand_seed,
                )?;
                let mut moves = 0.0f64;
                for other in per.iter().skip(1) {
                    moves = moves.max(tv(&per[0], other)?);
                }
                if moves > TAIL_TOLERANCE {
                    tail_dependent.push(i);
                }
            }
        }
        out.push(c);
    }
    // "explains" needs every other candidate that differs from it by TV ≥
    // DIFFERENT_TV ruled out; a fitting candidate short of that is "not
    // rejected", and the notes say which one it cannot be told from.
    let n_draws = counts.as_ref().map(|c| c.iter().sum::<u64>());
    let mut notes = Vec::new();
    notes.extend(cells.notes.iter().cloned());
    let fits: Vec<bool> = out.iter().map(|c| c.verdict == Verdict::Explains).collect();
    let mut told: std::collections::HashSet<(String, String)> = Default::default();
    for i in 0..out.len() {
        if !fits[i] {
            continue;
        }
        let Ok(a) = &evals[i].cells else { continue };
        let mut alone = true;
        // Candidates that may differ from this one only on unlisted tokens:
        // one note for all of them, with the largest figures.
        let mut hidden: Vec<String> = Vec::new();
        let (mut hidden_hi, mut hidden_reach) = (0.0f64, 0.0f64);
        for j in 0..out.len() {
            if i == j || out[j].verdict == Verdict::RuledOut {
                continue;
            }
            let Ok(b) = &evals[j].cells else { continue };
            let (lo, hi) = pair_tv(a, b)?;
            // On a truncated list the mass both put on unlisted tokens may
            // lie on different ones: the pair is the same only when even
            // that cannot make them differ by DIFFERENT_TV.
            let reach = if cells.has_tail() {
                pair_reach(a, b, cells.n_known)?
            } else {
                hi
            };
            if reach < DIFFERENT_TV {
                continue;
            }
            alone = false;
            let (x, y) = (named(&out, i), named(&out, j));
            let key = if x < y {
                (x.clone(), y.clone())
            } else {
                (y.clone(), x.clone())
            };
            if !told.insert(key) {
                continue;
            }
            if hi < DIFFERENT_TV {
                hidden.push(y);
                hidden_hi = hidden_hi.max(hi);
                hidden_reach = hidden_reach.max(reach);
            } else if lo < DIFFERENT_TV {
                notes.push(format!(
                    "the raw list ({} entries) is too short to tell {x} from {y}: they differ by TV {hi:.3} under one tail and {lo:.3} under the other; ask for more of the vocabulary",
                    cells.n_top
                ));
            } else {
                let need = stats::draws_to_separate(&a[0], &b[0], RULE_OUT_P);
                notes.push(match (n_draws, need) {
                    (Some(n), Some(m)) => format!(
                        "cannot tell apart {x} and {y} (TV {lo:.3}) with {n} draws: about {m} would"
                    ),
                    (Some(n), None) => {
                        format!("cannot tell apart {x} and {y} (TV {lo:.3}) with {n} draws")
                    }
                    (None, _) => format!("cannot tell apart {x} and {y} (TV {lo:.3})"),
                });
            }
        }
        if !hidden.is_empty() {
            notes.push(format!(
                "the raw list ({} entries) is too short to tell whether {} differs from {}: within TV {hidden_hi:.3} on its cells, but up to {hidden_reach:.3} over the vocabulary (the mass both put on unlisted tokens, where no draw tells them apart); ask for more of the vocabulary",
                cells.n_top,
                named(&out, i),
                hidden.join(", ")
            ));
        }
        if !alone {
            out[i].verdict = Verdict::NotRejected;
        }
    }
    for &i in &tail_dependent {
        notes.push(format!(
            "{}: the raw list ({} entries) is too short to fix its distribution (the tails it allows move it by TV ≥ {TAIL_TOLERANCE:e})",
            out[i].label(),
            cells.n_top
        ));
    }
    let (tv_to_transformers, transformers_error) = match transformers.map(|t| &t.prepared) {
        None => (
            None,
            Some("no hf-rust semantics in the registry".to_string()),
        ),
        Some(Err(e)) => (None, Some(format!("transformers refuses the request: {e}"))),
        Some(Ok(p)) => {
            let context = Context::new(&cells.context, None)?;
            match p.distribution(&cells.configs[0].1, &context) {
                Ok(d) => (Some(tv(&server, &cells.project(d.probs()))?), None),
                Err(e) => (None, Some(e.to_string())),
            }
        }
    };
    let explained_by = labels_with(&out, |c| c.verdict == Verdict::Explains);
    let consistent_with = labels_with(&out, |c| c.verdict == Verdict::NotRejected);
    let not_ruled_out = labels_with(&out, |c| {
        c.verdict == Verdict::Undecided && c.error.is_none()
    });
    // The power is a samples-mode figure.
    let hidden_pairs = power.map_or(0, |p| p.hidden);
    let power = power.filter(|_| counts.is_some());
    let (closest, draws_needed) = match power.and_then(|p| p.hardest.as_ref().map(|h| (p, h))) {
        Some((p, &(i, j, _, _))) => (Some(vec![named(&out, i), named(&out, j)]), p.needed),
        None => (None, None),
    };
    Ok(Probe {
        request: request.clone(),
        mode: match observed {
            Observed::Post(_) => "post-sampling",
            Observed::Samples(_) => "samples",
        }
        .to_string(),
        samples: n_draws.map(|n| n as usize),
        tail_mass,
        tail_cell: cells.has_tail(),
        server_kept,
        explained_by,
        consistent_with,
        not_ruled_out,
        closest,
        draws_needed,
        hidden_pairs,
        notes,
        tv_to_transformers,
        transformers_error,
        candidates: out,
    })
}

#[allow(clippy::too_many_arguments)]
fn score(
    c: &mut Candidate,
    per: &[Vec<f64>],
    cells: &cells::Cells,
    server: &[f64],
    counts: Option<&[u64]>,
    rule_out_tv: f64,
    seed: u64,
) -> Result<(), Error> {
    match counts {
        None => {
            // The tail configuration that fits best.
            let mut best: Option<Comparison> = None;
            for d in per {
                let cmp = Comparison::new(server, d).map_err(|e| Error::new(e.to_string()))?;
                if best.as_ref().is_none_or(|b| cmp.tv < b.tv) {
                    best = Some(cmp);
                }
            }
            let Some(cmp) = best else { return Ok(()) };
            c.tv = Some(cmp.tv);
            c.max_abs_diff = Some(cmp.max_abs_diff);
            c.verdict = if cmp.max_abs_diff <= EXPLAIN_MAX_ABS_DIFF {
                Verdict::Explains
            } else if cmp.tv >= rule_out_tv {
                Verdict::RuledOut
            } else {
                Verdict::Undecided
            };
        }
        Some(counts) => {
            // The tail configuration that fits best: ruled out only when
            // every one is.
            // The shape test on cells fixed before the draws, where some
            // were named by them.
            let coarse_per: Option<Vec<Vec<f64>>> = per.iter().map(|d| cells.coarse(d)).collect();
            let coarse_counts = cells.coarse(counts);
            let coarse = coarse_counts.as_deref().zip(coarse_per.as_deref());
            let Some(fit) = stats::best_fit(counts, per, coarse, seed, stats::SIMS) else {
                return Ok(());
            };
            c.p_value = Some(fit.p);
            c.p_support = Some(fit.p_support);
            c.p_shape = fit.p_shape;
            c.verdict = if fit.p > EXPLAIN_P {
                Verdict::Explains
            } else if fit.p < RULE_OUT_P {
                Verdict::RuledOut
            } else {
                Verdict::Undecided
            };
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The test of a truncated list with named draws keeps its size: draws
    /// from a known distribution (a Zipf-like vocabulary of 3,000 at T 0.8;
    /// the top 11 listed, the drawn tokens named) fit the true candidate at
    /// p > 0.01 in at least 95 % of 120 runs (119 here), while a candidate at
    /// another temperature (T 0.5) is ruled out (p < 1e-3) in at least 90 %
    /// of them (118).
    #[test]
    fn named_draws_and_every_tail_keep_the_tests_size_and_power() {
        use rand::{Rng, SeedableRng};
        const V: usize = 3000;
        const N: usize = 120;
        let log_p: Vec<f64> = {
            let w: Vec<f64> = (0..V).map(|i| ((i + 1) as f64).powf(-1.1)).collect();
            let z: f64 = w.iter().sum();
            w.iter().map(|x| (x / z).ln()).collect()
        };
        let tempered = |logits: &[f64], t: f64| -> Vec<f64> {
            let m = logits.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let e: Vec<f64> = logits.iter().map(|l| ((l - m) / t).exp()).collect();
            let z: f64 = e.iter().sum();
            e.iter().map(|x| x / z).collect()
        };
        let truth = tempered(&log_p, 0.8);
        let listed: Vec<(usize, f32)> = (0..11).map(|i| (i, log_p[i] as f32)).collect();
        let tail: f64 = 1.0 - (0..11).map(|i| f64::from(listed[i].1).exp()).sum::<f64>();
        let (mut fits, mut rejects) = (0, 0);
        let runs = 120;
        for run in 0..runs {
            let mut rng = rand::rngs::StdRng::seed_from_u64(run);
            let draws: Vec<usize> = (0..N)
                .map(|_| {
                    let u: f64 = rng.random();
                    let mut c = 0.0;
                    truth
                        .iter()
                        .position(|&q| {
                            c += q;
                            c > u
                        })
                        .unwrap_or(V - 1)
                })
                .collect();
            let mut space = Space::new(Some(V));
            let mut revealed = Revealed::new(&listed, tail, 0.0);
            for &d in &draws {
                revealed
                    .add(&Key::Id(d as i64), f64::from(log_p[d] as f32), &mut space)
                    .expect("a log-probability");
            }
            let (named, rest, note) = revealed.finish();
            assert!(note.is_none(), "{note:?}");
            let mut all = listed.clone();
            all.extend_from_slice(&named);
            let cells = cells::Cells::truncated(&all, 11, rest, 0.0, Some(V), &[], tail_shapes(N))
                .expect("cells");
            let mut counts = vec![0u64; cells.len()];
            for &d in &draws {
                counts[cells.cell(d)] += 1;
            }
            let fit_at = |t: f64| {
                let per: Vec<Vec<f64>> = cells
                    .configs
                    .iter()
                    .map(|(_, l)| {
                        let l: Vec<f64> = l
                            .to_f32()
                            .expect("f32")
                            .iter()
                            .map(|&x| f64::from(x))
                            .collect();
                        cells.project(&tempered(&l, t))
                    })
                    .collect();
                let coarse_per: Option<Vec<Vec<f64>>> =
                    per.iter().map(|d| cells.coarse(d)).collect();
                let coarse_counts = cells.coarse(&counts);
                let coarse = coarse_counts.as_deref().zip(coarse_per.as_deref());
                stats::best_fit(&counts, &per, coarse, run, stats::SIMS)
                    .expect("a fit")
                    .p
            };
            if fit_at(0.8) > EXPLAIN_P {
                fits += 1;
            }
            if fit_at(0.5) < RULE_OUT_P {
                rejects += 1;
            }
        }
        assert!(
            fits * 100 >= runs * 95,
            "the truth fits in {fits} of {runs}"
        );
        assert!(
            rejects * 100 >= runs * 90,
            "T 0.5 ruled out in {rejects} of {runs}"
        );
    }

    fn lse(l: &[f64]) -> f64 {
        let m = l.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        m + l.iter().map(|x| (x - m).exp()).sum::<f64>().ln()
    }

    #[test]
    fn the_offset_is_recovered_from_a_penalised_answer() {
        // logits 2, -1, 0.5, 3; the prompt is tokens 0 and 1. A repeat
        // penalty of 2 makes them 2/2 = 1 and -1*2 = -2.
        let l = [2.0, -1.0, 0.5, 3.0];
        let penalised = [1.0, -2.0, 0.5, 3.0];
        let raw: Vec<(Key, f64)> = (0..4)
            .map(|i| (Key::Id(i), l[i as usize] - lse(&l)))
            .collect();
        let post: Vec<(Key, f64)> = (0..4)
            .map(|i| (Key::Id(i), (penalised[i as usize] - lse(&penalised)).exp()))
            .collect();
        let c = offset(&raw, &post, &[0, 1, 0]).expect("offset");
        // C = log(e^2 + e^-1 + e^0.5 + e^3) = 3.4170...
        assert!((c - lse(&l)).abs() < 1e-9, "{c} vs {}", lse(&l));
    }

    #[test]
    fn rebuilt_logits_are_log_p_and_zero_is_minus_infinity() {
        let raw = vec![
            (Key::Id(2), 0.5f64.ln()),
            (Key::Id(0), 0.25f64.ln()),
            (Key::Id(1), f64::from(f32::MIN)),
        ];
        let mut space = Space::new(Some(4));
        let (logits, tail) = rebuild(&raw, &mut space, 0.0).expect("rebuild");
        let want = [
            0.25f32.ln(),
            f32::NEG_INFINITY,
            0.5f32.ln(),
            f32::NEG_INFINITY,
        ];
        assert_eq!(logits.to_f32().expect("f32"), want);
        // 1 - 0.5 - 0.25
        assert!((tail - 0.25).abs() < 1e-7);
        assert!(space.index(&Key::Id(4)).is_err());
        let mut texts = Space::new(None);
        assert_eq!(texts.index(&Key::Text("a".into())).ok(), Some(0));
        assert_eq!(texts.index(&Key::Id(7)).ok(), Some(1));
        assert_eq!(texts.index(&Key::Text("a".into())).ok(), Some(0));
    }

    #[test]
    fn two_candidates_may_differ_by_the_tail_mass_both_keep() {
        // Cells: two listed tokens and the tail. TV on the cells 0.1; both
        // keep at least 0.2 in the tail, which may lie on different tokens.
        let a = vec![vec![0.5, 0.3, 0.2]];
        let b = vec![vec![0.5, 0.2, 0.3]];
        let reach = pair_reach(&a, &b, 2).expect("reach");
        assert!((reach - 0.3).abs() < 1e-12, "{reach}");
        // No tail mass: the cells are the whole story.
        let c = vec![vec![0.6, 0.4, 0.0]];
        let d = vec![vec![0.58, 0.42, 0.0]];
        let reach = pair_reach(&c, &d, 2).expect("reach");
        assert!((reach - 0.02).abs() < 1e-12, "{reach}");
    }

    #[test]
    fn a_drawn_text_is_the_one_token_with_that_text() {
        let vocab = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fixtures/smollm2/vocab.json"
        );
        let ids = TextIds::load(vocab).expect("vocab");
        // `Ġblue` (byte-level BPE: Ġ is the space byte).
        assert_eq!(ids.id(" blue").expect("blue"), 4461);
        let e = ids.id(" blue sky").unwrap_err().to_string();
        assert!(
            e.contains(r#"the server drew " blue sky", which is no token of"#),
            "{e}"
        );
        assert!(TextIds::load("/nonexistent/vocab.json").is_err());
    }

    #[test]
    fn urls_are_plain_http_and_replays_must_match() {
        assert!(Live::new("https://x:1", Duration::from_secs(1)).is_err());
        assert!(Live::new("http://127.0.0.1:8080/", Duration::from_secs(1)).is_ok());
        let e = Live::new("http://[::1]:8080", Duration::from_secs(1))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("an IPv6 address is not supported"), "{e}");
        let mut r = Replay::new(Vec::new());
        let e = r.call("/health", None).unwrap_err().to_string();
        assert!(e.contains("no answer to GET /health"), "{e}");
    }
}
