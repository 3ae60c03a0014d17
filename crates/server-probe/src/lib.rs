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
mod http;
pub mod repeat;
mod report;
mod stats;

use std::collections::HashMap;
use std::time::Duration;

use parity_core::{AnySemantics, Comparison, Context, Distribution, Error, Logits, Prepared, Role};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

pub use api::{Api, Key, Prompt, help};
pub use http::{Exchange, Live, Replay, Transport};
pub use report::write_text;

/// A candidate explains the server when no token's probability differs by
/// more than this (post-sampling mode; the task's bar).
pub const EXPLAIN_MAX_ABS_DIFF: f64 = 1e-5;
/// A candidate is ruled out when its total variation from the server's
/// post-sampling probabilities is at least this (or ten times the tail
/// mass the raw distribution missed, if larger).
pub const RULE_OUT_TV: f64 = 1e-3;
/// Samples mode: a candidate explains the samples when the G-test p-value
/// is above this ...
pub const EXPLAIN_P: f64 = 0.01;
/// ... and is ruled out when it is below this.
pub const RULE_OUT_P: f64 = 1e-6;
/// The most samples one request may ask for.
pub const MAX_SAMPLES: usize = 100_000;

/// Everything a probe needs besides the registry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    /// post-sampling probabilities.
    pub samples: Option<usize>,
    /// Seed of the first request; sample i uses `seed + i`.
    pub seed: u64,
    /// How many raw top log-probabilities to ask for (default: the whole
    /// vocabulary on llama-server, 20 elsewhere, the usual cap).
    pub top: Option<usize>,
    /// Seconds to wait for each answer.
    pub timeout_secs: u64,
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Verdict {
    /// It reproduces what the server samples from.
    #[serde(rename = "explains")]
    Explains,
    /// It cannot be what the server runs.
    #[serde(rename = "ruled out")]
    RuledOut,
    /// Neither (or it could not run).
    #[serde(rename = "undecided")]
    Undecided,
}

/// One candidate on one request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    /// Samples mode: G-test p-value of the samples under it.
    pub p_value: Option<f64>,
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    /// Tokens the server keeps after its sampler chain (post-sampling
    /// mode) or distinct tokens drawn (samples mode).
    pub server_kept: usize,
    /// Labels of the candidates whose verdict is `explains`.
    pub explained_by: Vec<String>,
    /// Total variation from what the server samples from (or the samples'
    /// frequencies) to transformers' `generate(**request)`.
    pub tv_to_transformers: Option<f64>,
    /// Why transformers could not be compared, if so.
    pub transformers_error: Option<String>,
    /// Every candidate, in registry order.
    pub candidates: Vec<Candidate>,
}

/// The whole answer (`--format json`, docs/report-schema.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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

/// Probes a live server; with `record`, also returns the recording.
pub fn probe(
    options: &Options,
    registry: &[Box<dyn AnySemantics>],
) -> Result<(Report, Recording), Error> {
    let mut live = Live::new(&options.server, Duration::from_secs(options.timeout_secs))?;
    let report = run(options, registry, &mut live, false)?;
    let recording = Recording {
        schema: 1,
        options: options.clone(),
        exchanges: std::mem::take(&mut live.exchanges),
    };
    Ok((report, recording))
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
    run(&recording.options, registry, &mut transport, true)
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
) -> Result<Report, Error> {
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
    if options.samples.is_none() && options.api != Api::LlamaServer {
        return Err(Error::new(format_args!(
            "--api {} has no post-sampling probabilities: give --samples N",
            options.api.name()
        )));
    }
    if options.top == Some(0) {
        return Err(Error::new("--top must be at least 1"));
    }
    let mut session = api::Session::new(transport, options.api, options.model.clone());
    let info = session.hello()?;
    let prompt_ids = session.prompt_ids(&prompt)?;
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
    let sent = match (&prompt_ids, options.api) {
        (Some(ids), Api::LlamaServer) => Prompt::Ids(ids.clone()),
        _ => prompt.clone(),
    };
    let k = match (options.top, info.n_vocab, options.api.max_top()) {
        (Some(k), Some(n), _) => k.min(n),
        (Some(k), None, _) => k,
        (None, Some(n), _) => n,
        (None, None, cap) => cap.unwrap_or(20),
    };
    let raw = session.raw(&sent, k, options.seed)?;
    if raw.is_empty() {
        return Err(Error::new("the server returned an empty raw top-K list"));
    }
    let mut observed = Vec::new();
    for request in &options.requests {
        observed.push(match options.samples {
            None => {
                let n = info.n_vocab.unwrap_or(k);
                Observed::Post(session.post_sampling(request, &sent, n, options.seed)?)
            }
            Some(n) => {
                let mut keys = Vec::with_capacity(n);
                for i in 0..n as u64 {
                    keys.push(session.sample(request, &sent, options.seed + i)?);
                }
                Observed::Samples(keys)
            }
        });
    }

    // One index space for everything: token ids on llama-server, else the
    // keys in the order first seen.
    let mut space = Space::new(info.n_vocab);
    for (key, _) in &raw {
        space.index(key)?;
    }
    for o in &observed {
        match o {
            Observed::Post(list) => list
                .iter()
                .try_for_each(|(k, _)| space.index(k).map(drop))?,
            Observed::Samples(keys) => keys.iter().try_for_each(|k| space.index(k).map(drop))?,
        }
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
    let logit_offset = match (options.api, &prompt_ids, info.n_vocab) {
        (Api::LlamaServer, Some(ids), Some(n)) if needs_offset => {
            let post = session.calibration(&sent, ids.len(), n, options.seed)?;
            Some(offset(&raw, &post, ids)?)
        }
        _ => None,
    };
    let (logits, tail_mass) = rebuild(&raw, &mut space, logit_offset.unwrap_or(0.0))?;
    let context = Context::new(&context_ids, None)?;

    let mut probes = Vec::new();
    for (request, o) in options.requests.iter().zip(&observed) {
        probes.push(analyse(
            request, o, &logits, tail_mass, &context, &mut space, options, registry,
        )?);
    }
    Ok(Report {
        schema: 1,
        server: options.server.clone(),
        api: options.api,
        model: info.model,
        n_vocab: info.n_vocab,
        prompt_ids,
        raw_entries: raw.len(),
        logit_offset,
        replayed,
        probes,
    })
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
    let mut logits = vec![f32::NEG_INFINITY; space.len];
    let mut mass = 0.0;
    for (i, (key, lp)) in raw.iter().enumerate() {
        if lp.is_nan() || *lp > 1e-4 {
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
        logits[idx] = (f64::from(l) + offset) as f32;
    }
    Ok((Logits::from_f32(&logits), (1.0 - mass).max(0.0)))
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

/// The distribution the server samples from, over the index space.
fn server_distribution(
    o: &Observed,
    space: &mut Space,
    n: usize,
) -> Result<(Vec<f64>, usize), Error> {
    let mut probs = vec![0.0; n];
    match o {
        Observed::Post(list) => {
            for (i, (key, p)) in list.iter().enumerate() {
                if !(0.0..=1.0 + 1e-6).contains(p) {
                    return Err(Error::new(format_args!(
                        "post-sampling list [{i}]: {p} is not a probability"
                    )));
                }
                probs[space.index(key)?] = *p;
            }
            Ok((probs, list.len()))
        }
        Observed::Samples(keys) => {
            for key in keys {
                probs[space.index(key)?] += 1.0;
            }
            let distinct = probs.iter().filter(|&&c| c > 0.0).count();
            let total = keys.len() as f64;
            probs.iter_mut().for_each(|c| *c /= total);
            Ok((probs, distinct))
        }
    }
}

struct Routed<'s> {
    semantics: &'static str,
    endpoint: &'static str,
    variant: Option<String>,
    prepared: Result<Box<dyn Prepared + 's>, String>,
}

/// The candidates for one request: the fitting routes, transformers, and
/// on llama-server the same chain with temperature first.
fn candidates<'s>(
    api: Api,
    request: &Map<String, Value>,
    registry: &'s [Box<dyn AnySemantics>],
) -> (Vec<Routed<'s>>, Option<Routed<'s>>) {
    let mut out = Vec::new();
    let mut transformers = None;
    for s in registry {
        let name = s.info().name;
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
            let temp_first = (api == Api::LlamaServer)
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

#[allow(clippy::too_many_arguments)]
fn analyse(
    request: &Map<String, Value>,
    observed: &Observed,
    logits: &Logits,
    tail_mass: f64,
    context: &Context<'_>,
    space: &mut Space,
    options: &Options,
    registry: &[Box<dyn AnySemantics>],
) -> Result<Probe, Error> {
    let n = logits.len();
    let (server, server_kept) = server_distribution(observed, space, n)?;
    let counts: Option<Vec<u64>> = match observed {
        Observed::Samples(keys) => {
            let mut c = vec![0u64; n];
            for k in keys {
                c[space.index(k)?] += 1;
            }
            Some(c)
        }
        Observed::Post(_) => None,
    };
    let (routes, transformers) = candidates(options.api, request, registry);
    let rule_out_tv = RULE_OUT_TV.max(10.0 * tail_mass);
    let mut out = Vec::new();
    for r in &routes {
        let mut c = Candidate {
            semantics: r.semantics.to_string(),
            endpoint: r.endpoint.to_string(),
            variant: r.variant.clone(),
            params: None,
            kept: None,
            tv: None,
            max_abs_diff: None,
            p_value: None,
            verdict: Verdict::Undecided,
            error: None,
        };
        let dist = match &r.prepared {
            Err(e) => Err(format!("the route refuses the request: {e}")),
            Ok(p) => {
                c.params = p.describe().map(parity_core::Described::into_json);
                p.distribution(logits, context).map_err(|e| e.to_string())
            }
        };
        match dist {
            Err(e) => c.error = Some(e),
            Ok(d) => score(&mut c, &d, &server, counts.as_deref(), rule_out_tv)?,
        }
        out.push(c);
    }
    let (tv_to_transformers, transformers_error) = match transformers.map(|t| t.prepared) {
        None => (
            None,
            Some("no hf-rust semantics in the registry".to_string()),
        ),
        Some(Err(e)) => (None, Some(format!("transformers refuses the request: {e}"))),
        Some(Ok(p)) => match p.distribution(logits, context) {
            Ok(d) => (Some(tv(&server, d.probs())?), None),
            Err(e) => (None, Some(e.to_string())),
        },
    };
    let mut explained_by: Vec<String> = Vec::new();
    for c in out.iter().filter(|c| c.verdict == Verdict::Explains) {
        if !explained_by.contains(&c.label()) {
            explained_by.push(c.label());
        }
    }
    Ok(Probe {
        request: request.clone(),
        mode: match observed {
            Observed::Post(_) => "post-sampling",
            Observed::Samples(_) => "samples",
        }
        .to_string(),
        samples: counts.as_ref().map(|c| c.iter().sum::<u64>() as usize),
        tail_mass,
        server_kept,
        explained_by,
        tv_to_transformers,
        transformers_error,
        candidates: out,
    })
}

fn tv(a: &[f64], b: &[f64]) -> Result<f64, Error> {
    Comparison::new(a, b)
        .map(|c| c.tv)
        .map_err(|e| Error::new(e.to_string()))
}

fn score(
    c: &mut Candidate,
    d: &Distribution,
    server: &[f64],
    counts: Option<&[u64]>,
    rule_out_tv: f64,
) -> Result<(), Error> {
    c.kept = Some(d.kept().len());
    match counts {
        None => {
            let cmp = Comparison::new(server, d.probs()).map_err(|e| Error::new(e.to_string()))?;
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
            let p = stats::g_test(counts, d.probs());
            c.p_value = Some(p);
            c.verdict = if p > EXPLAIN_P {
                Verdict::Explains
            } else if p < RULE_OUT_P {
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
    fn urls_are_plain_http_and_replays_must_match() {
        assert!(Live::new("https://x:1", Duration::from_secs(1)).is_err());
        assert!(Live::new("http://127.0.0.1:8080/", Duration::from_secs(1)).is_ok());
        let mut r = Replay::new(Vec::new());
        let e = r.call("/health", None).unwrap_err().to_string();
        assert!(e.contains("no answer to GET /health"), "{e}");
    }
}
