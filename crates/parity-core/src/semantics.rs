//! The one interface every sampling semantics implements.
//!
//! A *semantics* is a pure function from (logits, context, parameters) to the
//! full next-token [`Distribution`] an engine draws from. Each engine's rules
//! live in its own crate, behind [`Semantics`]; `compare` holds a list of them
//! (`crates/compare/src/registry.rs`) and never needs to know which engine it
//! is talking to. `docs/architecture.md` walks through adding one.
//!
//! Parameters arrive as a JSON object in the engine's own vocabulary (generate
//! kwargs for transformers, a `Sampling` variant for candle, llama-server
//! request fields for llama.cpp, ...). The record fields every semantics
//! shares — `logits`, `input_ids`, `prompt_len` — are parsed once, by
//! [`crate::record`], and reach the semantics as [`Logits`] and [`Context`].

use serde_json::{Map, Value};

use crate::fragile::Fragile;
use crate::metrics::Comparison;
use crate::record::Logits;

/// Why a semantics could not answer: its parameters were refused, the input
/// does not suit it, or the engine itself would raise. The message names the
/// field or index and quotes the bad value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Error(pub String);

impl Error {
    /// An error with this message.
    pub fn new(message: impl std::fmt::Display) -> Self {
        Self(message.to_string())
    }
}

/// Where a record's tokens came from: the prompt and the tokens generated so
/// far. Engines differ in which part a penalty sees (llama.cpp: the last n of
/// both; vLLM: repetition over both, frequency/presence over the generated
/// part only), so every semantics gets both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Context<'a> {
    input_ids: &'a [i64],
    prompt_len: usize,
}

impl<'a> Context<'a> {
    /// `input_ids` with the first `prompt_len` of them the prompt; `None`
    /// means all of them are prompt (nothing generated yet).
    pub fn new(input_ids: &'a [i64], prompt_len: Option<usize>) -> Result<Self, Error> {
        let prompt_len = prompt_len.unwrap_or(input_ids.len());
        if prompt_len > input_ids.len() {
            return Err(Error::new(format_args!(
                "`prompt_len` = {prompt_len} is more than the {} entries of `input_ids`",
                input_ids.len()
            )));
        }
        Ok(Self {
            input_ids,
            prompt_len,
        })
    }

    /// Every id, prompt first.
    pub fn input_ids(&self) -> &'a [i64] {
        self.input_ids
    }

    /// How many of [`Self::input_ids`] are prompt.
    pub fn prompt_len(&self) -> usize {
        self.prompt_len
    }

    /// The prompt ids.
    pub fn prompt(&self) -> &'a [i64] {
        &self.input_ids[..self.prompt_len]
    }

    /// The ids generated so far.
    pub fn generated(&self) -> &'a [i64] {
        &self.input_ids[self.prompt_len..]
    }

    /// Distinct ids in `0..vocab` that occur in the context but not in its
    /// last `window` ids (what a last-n penalty window misses), and how many
    /// of those occur in the prompt.
    pub fn missed_by_window(&self, window: usize, vocab: usize) -> (usize, usize) {
        use std::collections::HashSet;
        let ids = self.input_ids;
        let recent: HashSet<i64> = ids[ids.len().saturating_sub(window)..]
            .iter()
            .copied()
            .collect();
        let missed: HashSet<i64> = ids
            .iter()
            .copied()
            .filter(|&t| usize::try_from(t).is_ok_and(|t| t < vocab) && !recent.contains(&t))
            .collect();
        let prompt: HashSet<i64> = self.prompt().iter().copied().collect();
        let in_prompt = missed.iter().filter(|t| prompt.contains(t)).count();
        (missed.len(), in_prompt)
    }
}

/// The precision an engine computes its probabilities in. Probabilities are
/// held as f64 either way (an f32 widens exactly); this says how to print
/// them so that a printed value reads back to the engine's own number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precision {
    /// float32 (torch, candle, llama.cpp).
    F32,
    /// float64 (the written spec).
    F64,
}

/// A full next-token distribution: what one semantics draws from.
#[derive(Debug, Clone, PartialEq)]
pub struct Distribution {
    probs: Vec<f64>,
    kept: Vec<usize>,
    precision: Precision,
    scores: Option<Vec<f32>>,
    penalised: Option<Vec<f32>>,
    tokens: Option<Vec<i64>>,
}

impl Distribution {
    /// From each token's probability (length V). Kept tokens are those with
    /// a strictly positive probability.
    pub fn new(probs: Vec<f64>, precision: Precision) -> Self {
        let kept = (0..probs.len()).filter(|&i| probs[i] > 0.0).collect();
        Self {
            probs,
            kept,
            precision,
            scores: None,
            penalised: None,
            tokens: None,
        }
    }

    /// From f32 probabilities, widened exactly.
    pub fn from_f32(probs: &[f32]) -> Self {
        Self::new(
            probs.iter().map(|&p| f64::from(p)).collect(),
            Precision::F32,
        )
    }

    /// The one-hot distribution of a deterministic pick.
    pub fn one_hot(vocab: usize, token: usize, precision: Precision) -> Self {
        let mut probs = vec![0.0; vocab];
        probs[token] = 1.0;
        Self::new(probs, precision)
    }

    /// With the engine's processed scores (what it hands to its final softmax,
    /// e.g. transformers' `output_scores`).
    pub fn with_scores(mut self, scores: Vec<f32>) -> Self {
        self.scores = Some(scores);
        self
    }

    /// With the logits after this semantics' penalties (before temperature
    /// and truncation), for comparing penalty scopes.
    pub fn with_penalised(mut self, logits: Vec<f32>) -> Self {
        self.penalised = Some(logits);
        self
    }

    /// With tokens drawn by a replay of the engine's own RNG.
    pub fn with_tokens(mut self, tokens: Vec<i64>) -> Self {
        self.tokens = Some(tokens);
        self
    }

    /// Probability of each token id.
    pub fn probs(&self) -> &[f64] {
        &self.probs
    }

    /// Token ids with positive probability, ascending.
    pub fn kept(&self) -> &[usize] {
        &self.kept
    }

    /// The precision the engine computed in.
    pub fn precision(&self) -> Precision {
        self.precision
    }

    /// Processed scores, when the engine exposes them.
    pub fn scores(&self) -> Option<&[f32]> {
        self.scores.as_deref()
    }

    /// Penalised logits, when the semantics penalises.
    pub fn penalised(&self) -> Option<&[f32]> {
        self.penalised.as_deref()
    }

    /// Replayed draws, when asked for.
    pub fn tokens(&self) -> Option<&[i64]> {
        self.tokens.as_deref()
    }

    /// The probabilities, by value.
    pub fn into_probs(self) -> Vec<f64> {
        self.probs
    }
}

/// One parameter a semantics reads, for `compare semantics`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct ParamInfo {
    /// The field name in `params`.
    pub name: &'static str,
    /// The value the engine uses when the field is absent, as JSON text
    /// (`"required"` when it has none).
    pub default: &'static str,
    /// What it does, in a few words.
    pub meaning: &'static str,
}

/// What a semantics is, for people and for `compare semantics`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct Info {
    /// The name used in `--semantics`, `--pairs` and reports.
    pub name: &'static str,
    /// The engine and version it reproduces.
    pub engine: &'static str,
    /// One line: what it computes.
    pub summary: &'static str,
    /// What it was verified against, and how.
    pub verified_against: &'static str,
    /// Its parameters, with their defaults.
    pub params: &'static [ParamInfo],
}

/// A variant of a setting worth its own report row, labelled by the engine
/// that offers it (for example a penalty that sees only the last 64 ids, as
/// some of an engine's examples set it up).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Variant {
    /// How reports name it beside the semantics, e.g. `last 64` in
    /// `name[last 64]`.
    pub label: String,
    /// The last-n window its penalty sees, when it narrows the context: the
    /// report counts the ids the window misses.
    pub penalty_window: Option<usize>,
}

/// Where a semantics stands in `compare report` when no `--pairs` is given,
/// and which side a row explains the other against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// The reference as recorded from the real library (transformers'
    /// scores): every default row compares it with another semantics.
    Reference,
    /// The reference recomputed: stands in for [`Role::Reference`] wherever
    /// nothing was recorded (`--kwargs`, `diff`, `translate`'s proof), and is
    /// compared with it in the default report.
    ReferenceComputed,
    /// Compared with the reference in the default report.
    Default,
    /// Compared only when `--pairs` names it.
    OnRequest,
}

impl Role {
    /// Whether rows explain the other side against this one.
    pub fn is_reference(self) -> bool {
        matches!(self, Role::Reference | Role::ReferenceComputed)
    }
}

/// What `compare translate` asks of an engine besides the kwargs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TranslateOptions {
    /// The user's context length (an engine whose penalty sees a last-n
    /// window must cover all of it).
    pub context_len: usize,
}

/// One line of a translation for people.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TranslationLine {
    /// `label` then `text`, word-wrapped with a hanging indent (long JSON,
    /// flags, prose).
    Wrapped {
        /// What the text is, e.g. `"llama-server request: "`.
        label: String,
        /// The text.
        text: String,
    },
    /// Printed as it is (code, one-line recipes).
    Plain(String),
}

/// The setup of one engine that reproduces transformers' `generate(**kwargs)`,
/// as [`Semantics::translate`] gives it.
#[derive(Debug, Clone, PartialEq)]
pub struct Translation {
    /// The setup for people, line by line.
    pub lines: Vec<TranslationLine>,
    /// The same in JSON, the engine's own fields (`docs/report-schema.md`).
    pub json: Map<String, Value>,
    /// The setup as this semantics' params, when it is one: `compare
    /// translate` then runs it on the bundled fixtures beside transformers
    /// and prints how often it matches (the proof).
    pub params: Option<Map<String, Value>>,
}

impl Translation {
    /// The translation of kwargs an engine cannot reproduce: `heading`, then
    /// each reason on its own indented line; `json` says the same for
    /// machines; no params to prove.
    pub fn cannot(heading: String, unmatched: &[String], json: Map<String, Value>) -> Self {
        let mut lines = vec![TranslationLine::Plain(heading)];
        lines.extend(
            unmatched
                .iter()
                .map(|u| TranslationLine::Plain(format!("  {u}"))),
        );
        Self {
            lines,
            json,
            params: None,
        }
    }
}

/// Why a semantics differs from transformers on one row, and how to fix it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Explanation {
    /// One clause per rule the two are known to disagree on.
    pub reasons: Vec<String>,
    /// The setup that reproduces transformers, when there is one.
    pub fix: Option<Fix>,
}

/// A setup of this semantics that reproduces transformers, in words and as
/// the params that `dist`/`diff` accept.
#[derive(Debug, Clone, PartialEq)]
pub struct Fix {
    /// What to write, in words.
    pub text: String,
    /// The same setup as this semantics' params.
    pub params: Map<String, Value>,
}

/// What a row knows when asking a semantics to explain itself against
/// transformers.
#[derive(Debug, Clone, Copy)]
pub struct Against<'a> {
    /// The generate kwargs of the setting.
    pub kwargs: &'a Map<String, Value>,
    /// The model's generation_config.json transformers merged under the
    /// kwargs (`report --kwargs ... --generation-config`), if any.
    pub generation_config: Option<&'a Map<String, Value>>,
    /// The logits both sides started from.
    pub logits: &'a [f32],
    /// The context.
    pub context: Context<'a>,
    /// transformers' distribution.
    pub transformers: &'a Distribution,
    /// This semantics' distribution.
    pub this: &'a Distribution,
    /// transformers (left) against this semantics (right).
    pub comparison: &'a Comparison,
    /// The variant this row runs, if any.
    pub variant: Option<&'a Variant>,
}

/// Real draws from the engine itself, each replayed by the mirror.
#[derive(Debug, Clone, PartialEq)]
pub struct DrawCheck {
    /// The engine that drew, in a word (`"candle"`): reports say "N real
    /// candle draws".
    pub engine: &'static str,
    /// Real draws made.
    pub n: usize,
    /// Draws the replay reproduced exactly (`None`: not replayable).
    pub replay_agree: Option<usize>,
    /// max over tokens |frequency − p|.
    pub max_freq_dev: f64,
    /// Chi-square goodness-of-fit p-value against the distribution (`None`
    /// when there is nothing to test, e.g. an argmax).
    pub p_value: Option<f64>,
    /// Share of draws outside this semantics' own kept set (must be 0).
    pub outside_own: f64,
    /// Share of draws outside the other side's kept set.
    pub outside_other: f64,
    /// How often each token id was drawn (length V).
    pub counts: Vec<u64>,
}

/// A semantics' parameters as reports show them ([`Semantics::describe`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Described {
    /// The engine's own fields and their values (a request or options
    /// object), which `compare request` and the server probe read back.
    Fields(Map<String, Value>),
    /// The setup in words, for an engine set up by calls rather than fields
    /// (candle's `Sampling`, the tutorial's function call).
    Words(String),
}

impl Described {
    /// As JSON: the fields as an object, the words as a string.
    pub fn into_json(self) -> Value {
        match self {
            Described::Fields(fields) => Value::Object(fields),
            Described::Words(words) => Value::String(words),
        }
    }
}

/// The fields as compact JSON text, the words as they are.
impl std::fmt::Display for Described {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Described::Fields(fields) => {
                f.write_str(&serde_json::to_string(fields).map_err(|_| std::fmt::Error)?)
            }
            Described::Words(words) => f.write_str(words),
        }
    }
}

/// Fields of an OpenAI-style request that a [`Route`] does not list as
/// ignored: what to generate from, how much, how to stream, the RNG seed
/// (each route's seed line says what it does), and `response_format`,
/// `tools`, `tool_choice`, which most servers read without sampling under
/// them. Where a server does constrain sampling with one, its semantics
/// refuses it, naming the field ([`crate::params::grammar_constrained`]);
/// each engine's page in docs/engines/ says which of these fields it reads.
pub const REQUEST_FIELDS_NOT_SAMPLING: &[&str] = &[
    "model",
    "messages",
    "prompt",
    "max_tokens",
    "max_completion_tokens",
    "n",
    "stop",
    "stream",
    "stream_options",
    "user",
    "seed",
    "logprobs",
    "top_logprobs",
    "response_format",
    "tools",
    "tool_choice",
    "echo",
    "suffix",
];

/// Whether request field `field` is one of [`REQUEST_FIELDS_NOT_SAMPLING`].
pub fn not_sampling(field: &str) -> bool {
    REQUEST_FIELDS_NOT_SAMPLING.contains(&field)
}

/// One endpoint's reading of a request: see [`Semantics::from_request`].
#[derive(Debug)]
pub struct Route<P> {
    /// The endpoint, with the version whose source says how it maps the
    /// request; its label is e.g. `"llama-server /v1/chat/completions"`.
    pub endpoint: crate::Endpoint,
    /// The params the sampler runs with, or the server's refusal.
    pub params: Result<P, Error>,
    /// Request fields this endpoint drops without an error.
    pub ignored: Vec<String>,
    /// What the endpoint decided on its own, in words (a default it fills
    /// in, a field it renames, a merge), for the reader of the table.
    pub notes: Vec<String>,
    /// Where each effective field's value came from, for the engines that
    /// say (`compare request` prints them); empty when the engine does not.
    pub sources: Vec<(String, FieldSource)>,
}

/// Where an effective sampling field's value came from on a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FieldSource {
    /// The request set it.
    Request,
    /// The operator's command-line flag set the server's default.
    OperatorFlag,
    /// The model file (a GGUF's `general.sampling.*`, a
    /// `generation_config.json`, a model's own parameters) set it.
    ModelFile,
    /// The engine's built-in default.
    EngineDefault,
    /// The server sets it whatever the request says.
    Forced,
}

impl FieldSource {
    /// The words `compare request` prints.
    pub fn words(self) -> &'static str {
        match self {
            FieldSource::Request => "request",
            FieldSource::OperatorFlag => "operator flag",
            FieldSource::ModelFile => "model file",
            FieldSource::EngineDefault => "engine default",
            FieldSource::Forced => "forced",
        }
    }
}

impl<P> Route<P> {
    /// A route whose params are `params`, ignoring nothing, with no notes.
    pub fn new(endpoint: crate::Endpoint, params: Result<P, Error>) -> Self {
        Self {
            endpoint,
            params,
            ignored: Vec::new(),
            notes: Vec::new(),
            sources: Vec::new(),
        }
    }

    /// The same route with `ignored` set to the request's fields that
    /// `consumed` does not take, leaving out [`REQUEST_FIELDS_NOT_SAMPLING`].
    pub fn ignoring_all_but(
        mut self,
        request: &Map<String, Value>,
        consumed: impl Fn(&str) -> bool,
    ) -> Self {
        self.ignored = request
            .keys()
            .filter(|k| !consumed(k) && !not_sampling(k))
            .cloned()
            .collect();
        self
    }

    /// The same route with one more note.
    pub fn note(mut self, note: impl Into<String>) -> Self {
        self.notes.push(note.into());
        self
    }

    /// The same route with its params mapped (errors kept).
    pub fn map<Q>(self, f: impl FnOnce(P) -> Q) -> Route<Q> {
        Route {
            endpoint: self.endpoint,
            params: self.params.map(f),
            ignored: self.ignored,
            notes: self.notes,
            sources: self.sources,
        }
    }

    /// The same route with `sources` as its fields' sources.
    pub fn with_sources(mut self, sources: Vec<(String, FieldSource)>) -> Self {
        self.sources = sources;
        self
    }
}

/// Real draws a weighted row gets by default ([`DrawCount::Auto`]).
///
/// What real draws prove: each one is replayed (the engine's own RNG stream
/// through the mirror's weights) and must pick the same token. A mirror whose
/// cumulative weights put a share δ of the unit interval in another token
/// than the engine's escapes N independent draws with probability
/// (1 − δ)^N; at N = 250 that is at most 10⁻³ for every δ ≥ 2.8 %
/// (`ln 1000 / 250` = 2.76 %), and δ bounds the total variation between the mirror
/// and the engine from above. Differences smaller than that rest on the
/// mirror's reading of the engine's code, at any N a run can afford (10⁻⁵
/// would take 690,000 draws), so more draws buy a stronger smoke check, not
/// a proof: `--draws N` is there for that. A goodness-of-fit test of draws
/// that all replayed exactly tests the RNG, not the engine, so it sets no
/// floor of its own.
pub const AUTO_DRAWS: usize = 250;

/// How many real draws a row gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DrawCount {
    /// What the row needs: one draw where no RNG is involved (the token is
    /// a function of the logits, so one replayed draw stands for all), and
    /// [`AUTO_DRAWS`] where the engine draws from a distribution.
    Auto,
    /// Exactly this many on every row (0: none).
    Exactly(usize),
}

impl DrawCount {
    /// The draws for a row whose engine draws with an RNG (`random`) or
    /// picks its token from the logits alone.
    pub fn for_row(self, random: bool) -> usize {
        match self {
            DrawCount::Auto if random => AUTO_DRAWS,
            DrawCount::Auto => 1,
            DrawCount::Exactly(n) => n,
        }
    }

    /// Whether no draw is made at all.
    pub fn is_none(self) -> bool {
        self == DrawCount::Exactly(0)
    }
}

impl std::fmt::Display for DrawCount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DrawCount::Auto => f.write_str("auto"),
            DrawCount::Exactly(n) => write!(f, "{n}"),
        }
    }
}

/// How many real draws to make, and from which seed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DrawOptions<'a> {
    /// First seed.
    pub seed: u64,
    /// Draws per row.
    pub draws: DrawCount,
    /// The other side's kept set.
    pub other_kept: &'a [usize],
    /// Whether the draws may be split over threads, stream s seeded with
    /// `seed + s` (faster; `false`: one stream from `seed`).
    pub parallel: bool,
}

/// A sampling semantics. Implement this, add one line to compare's registry,
/// and every command can use it.
pub trait Semantics: Send + Sync {
    /// The parsed, validated parameters.
    type Params;

    /// Name, engine, what it was verified against, parameters.
    fn info(&self) -> &'static Info;

    /// Parses `params` (the engine's own field names and defaults). Unknown
    /// fields and out-of-range values are errors naming the field.
    fn parse_params(&self, params: &Map<String, Value>) -> Result<Self::Params, Error>;

    /// The distribution the engine draws from for these logits and context.
    fn distribution(
        &self,
        logits: &Logits,
        context: &Context<'_>,
        params: &Self::Params,
    ) -> Result<Distribution, Error>;

    /// The parameters a user porting `generate(**kwargs)` to this engine
    /// would write by reading the kwargs literally; `None` when the engine
    /// cannot express them at all (the row is skipped).
    // Named for what it converts from (generate kwargs); `self` is the engine.
    #[allow(clippy::wrong_self_convention)]
    fn from_generate(&self, kwargs: &Map<String, Value>) -> Option<Result<Self::Params, Error>>;

    /// Whether the engine reads the model's `generation_config.json` (the
    /// registry hands it the file when the user names one).
    fn reads_generation_config(&self) -> bool {
        false
    }

    /// Where it stands in the default report ([`Role::OnRequest`] unless
    /// said otherwise).
    fn role(&self) -> Role {
        Role::OnRequest
    }

    /// The registry name of this engine's semantics set up to reproduce
    /// transformers (`compare diff --setup exact` swaps it in), if another.
    fn exact_setup(&self) -> Option<&'static str> {
        None
    }

    /// The exact setup of this engine that reproduces transformers'
    /// `generate(**kwargs)`, for `compare translate --to NAME`. `kwargs` are
    /// resolved (every value transformers runs with is present). `None`
    /// when the engine offers no translation (the default); an `Ok` whose
    /// lines say why when these kwargs cannot be reproduced.
    fn translate(
        &self,
        kwargs: &Map<String, Value>,
        options: &TranslateOptions,
    ) -> Option<Result<Translation, Error>> {
        let _ = (kwargs, options);
        None
    }

    /// What this engine's servers sample with when they receive `request`,
    /// an OpenAI-style request body (`{"temperature": 0.7, "top_p": 0.9}`):
    /// one [`Route`] per endpoint that maps it differently, each with the
    /// server's defaults filled in and, for servers that merge it, the
    /// model's `generation_config.json` (`generation_config`, as JSON).
    /// Empty when the engine has no server (the default).
    // Named for what it converts from (a request); `self` is the engine.
    #[allow(clippy::wrong_self_convention)]
    fn from_request(
        &self,
        request: &Map<String, Value>,
        generation_config: Option<&Map<String, Value>>,
    ) -> Vec<Route<Self::Params>> {
        let _ = (request, generation_config);
        Vec::new()
    }

    /// What `seed` does on each of [`Semantics::from_request`]'s routes
    /// (one entry per route and server setup; empty when the engine has no
    /// server, the default). Each engine states it in its own `seed`
    /// module, with the source line.
    fn seed(&self) -> &'static [crate::RouteSeed] {
        &[]
    }

    /// Settings worth a row of their own besides `params` itself.
    fn variants(&self, _params: &Self::Params) -> Vec<(Variant, Self::Params)> {
        Vec::new()
    }

    /// The params for reports: the engine's fields, or the setup in words.
    fn describe(&self, params: &Self::Params) -> Option<Described> {
        let _ = params;
        None
    }

    /// Why this semantics differs from transformers on a row.
    fn explain(&self, _row: &Against<'_>, _params: &Self::Params) -> Explanation {
        Explanation::default()
    }

    /// The setup of this semantics that reproduces transformers for these
    /// generate kwargs (and variant), when there is one: what a report
    /// prints even when this side fails.
    fn fix(&self, _kwargs: &Map<String, Value>, _variant: Option<&Variant>) -> Option<Fix> {
        None
    }

    /// Real draws from the engine, replayed; `None` when the engine cannot
    /// be run here.
    fn check_draws(
        &self,
        _logits: &Logits,
        _context: &Context<'_>,
        _params: &Self::Params,
        _options: &DrawOptions<'_>,
    ) -> Option<Result<DrawCheck, Error>> {
        None
    }

    /// The decisions of this semantics' rules on these logits that float
    /// rounding could flip ([`crate::fragile`]): empty when there are none,
    /// when the semantics does not look, or when it fails on these logits
    /// (its distribution reports the error).
    fn fragile(
        &self,
        _logits: &Logits,
        _context: &Context<'_>,
        _params: &Self::Params,
    ) -> Vec<Fragile> {
        Vec::new()
    }

    /// [`Self::distribution`] and [`Self::fragile`] together, for a caller
    /// that needs both on every row (`compare check`). The default calls
    /// both; a semantics whose fragile check re-runs its pipeline overrides
    /// it to run that pipeline once. The answer is the same either way.
    fn distribution_and_fragile(
        &self,
        logits: &Logits,
        context: &Context<'_>,
        params: &Self::Params,
    ) -> Result<(Distribution, Vec<Fragile>), Error> {
        let distribution = self.distribution(logits, context, params)?;
        Ok((distribution, self.fragile(logits, context, params)))
    }
}

/// A semantics with its parameters already parsed: what a report row runs.
pub trait Prepared: Send + Sync {
    /// The semantics' name.
    fn name(&self) -> &'static str;
    /// Runs it.
    fn distribution(&self, logits: &Logits, context: &Context<'_>) -> Result<Distribution, Error>;
    /// See [`Semantics::describe`].
    fn describe(&self) -> Option<Described>;
    /// See [`Semantics::explain`].
    fn explain(&self, row: &Against<'_>) -> Explanation;
    /// See [`Semantics::fix`].
    fn fix(&self, kwargs: &Map<String, Value>, variant: Option<&Variant>) -> Option<Fix>;
    /// See [`Semantics::check_draws`].
    fn check_draws(
        &self,
        logits: &Logits,
        context: &Context<'_>,
        options: &DrawOptions<'_>,
    ) -> Option<Result<DrawCheck, Error>>;
    /// See [`Semantics::variants`].
    fn variants(&self) -> Vec<(Variant, Box<dyn Prepared + '_>)>;
    /// See [`Semantics::fragile`].
    fn fragile(&self, logits: &Logits, context: &Context<'_>) -> Vec<Fragile>;
    /// See [`Semantics::distribution_and_fragile`].
    fn distribution_and_fragile(
        &self,
        logits: &Logits,
        context: &Context<'_>,
    ) -> Result<(Distribution, Vec<Fragile>), Error>;
}

struct WithParams<'s, S: Semantics> {
    semantics: &'s S,
    params: S::Params,
}

impl<S: Semantics> Prepared for WithParams<'_, S>
where
    S::Params: Send + Sync,
{
    fn name(&self) -> &'static str {
        self.semantics.info().name
    }
    fn distribution(&self, logits: &Logits, context: &Context<'_>) -> Result<Distribution, Error> {
        self.semantics.distribution(logits, context, &self.params)
    }
    fn describe(&self) -> Option<Described> {
        self.semantics.describe(&self.params)
    }
    fn explain(&self, row: &Against<'_>) -> Explanation {
        self.semantics.explain(row, &self.params)
    }
    fn fix(&self, kwargs: &Map<String, Value>, variant: Option<&Variant>) -> Option<Fix> {
        self.semantics.fix(kwargs, variant)
    }
    fn check_draws(
        &self,
        logits: &Logits,
        context: &Context<'_>,
        options: &DrawOptions<'_>,
    ) -> Option<Result<DrawCheck, Error>> {
        self.semantics
            .check_draws(logits, context, &self.params, options)
    }
    fn fragile(&self, logits: &Logits, context: &Context<'_>) -> Vec<Fragile> {
        self.semantics.fragile(logits, context, &self.params)
    }
    fn distribution_and_fragile(
        &self,
        logits: &Logits,
        context: &Context<'_>,
    ) -> Result<(Distribution, Vec<Fragile>), Error> {
        self.semantics
            .distribution_and_fragile(logits, context, &self.params)
    }
    fn variants(&self) -> Vec<(Variant, Box<dyn Prepared + '_>)> {
        self.semantics
            .variants(&self.params)
            .into_iter()
            .map(|(v, params)| {
                let p: Box<dyn Prepared + '_> = Box::new(WithParams {
                    semantics: self.semantics,
                    params,
                });
                (v, p)
            })
            .collect()
    }
}

/// A semantics with its parameters already parsed, for callers that hold a
/// concrete semantics and typed params (a recorded fixture's side).
pub fn prepared<S: Semantics>(semantics: &S, params: S::Params) -> Box<dyn Prepared + '_>
where
    S::Params: Send + Sync,
{
    Box::new(WithParams { semantics, params })
}

/// The object-safe face of a [`Semantics`]: what compare's registry holds.
/// Implemented for every `Semantics`; nobody implements it by hand.
pub trait AnySemantics: Send + Sync {
    /// See [`Semantics::info`].
    fn info(&self) -> &'static Info;
    /// See [`Semantics::reads_generation_config`].
    fn reads_generation_config(&self) -> bool;
    /// See [`Semantics::role`].
    fn role(&self) -> Role;
    /// See [`Semantics::exact_setup`].
    fn exact_setup(&self) -> Option<&'static str>;
    /// See [`Semantics::translate`].
    fn translate(
        &self,
        kwargs: &Map<String, Value>,
        options: &TranslateOptions,
    ) -> Option<Result<Translation, Error>>;
    /// Parses `params` and runs the semantics.
    fn run(
        &self,
        logits: &Logits,
        context: &Context<'_>,
        params: &Map<String, Value>,
    ) -> Result<Distribution, Error>;
    /// Parses `params` once for many runs.
    fn prepare(&self, params: &Map<String, Value>) -> Result<Box<dyn Prepared + '_>, Error>;
    /// See [`Semantics::from_generate`].
    fn prepare_generate(
        &self,
        kwargs: &Map<String, Value>,
    ) -> Option<Result<Box<dyn Prepared + '_>, Error>>;
    /// See [`Semantics::seed`].
    fn seed(&self) -> &'static [crate::RouteSeed];
    /// See [`Semantics::from_request`].
    fn prepare_request(
        &self,
        request: &Map<String, Value>,
        generation_config: Option<&Map<String, Value>>,
    ) -> Vec<Route<Box<dyn Prepared + '_>>>;
}

impl<S: Semantics> AnySemantics for S
where
    S::Params: Send + Sync,
{
    fn info(&self) -> &'static Info {
        Semantics::info(self)
    }
    fn reads_generation_config(&self) -> bool {
        Semantics::reads_generation_config(self)
    }
    fn role(&self) -> Role {
        Semantics::role(self)
    }
    fn exact_setup(&self) -> Option<&'static str> {
        Semantics::exact_setup(self)
    }
    fn seed(&self) -> &'static [crate::RouteSeed] {
        Semantics::seed(self)
    }
    fn translate(
        &self,
        kwargs: &Map<String, Value>,
        options: &TranslateOptions,
    ) -> Option<Result<Translation, Error>> {
        Semantics::translate(self, kwargs, options)
    }
    fn run(
        &self,
        logits: &Logits,
        context: &Context<'_>,
        params: &Map<String, Value>,
    ) -> Result<Distribution, Error> {
        let params = self.parse_params(params)?;
        self.distribution(logits, context, &params)
    }
    fn prepare(&self, params: &Map<String, Value>) -> Result<Box<dyn Prepared + '_>, Error> {
        let params = self.parse_params(params)?;
        Ok(Box::new(WithParams {
            semantics: self,
            params,
        }))
    }
    fn prepare_generate(
        &self,
        kwargs: &Map<String, Value>,
    ) -> Option<Result<Box<dyn Prepared + '_>, Error>> {
        let params = self.from_generate(kwargs)?;
        Some(params.map(|params| {
            let p: Box<dyn Prepared + '_> = Box::new(WithParams {
                semantics: self,
                params,
            });
            p
        }))
    }
    fn prepare_request(
        &self,
        request: &Map<String, Value>,
        generation_config: Option<&Map<String, Value>>,
    ) -> Vec<Route<Box<dyn Prepared + '_>>> {
        self.from_request(request, generation_config)
            .into_iter()
            .map(|route| {
                route.map(|params| {
                    let p: Box<dyn Prepared + '_> = Box::new(WithParams {
                        semantics: self,
                        params,
                    });
                    p
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_splits_prompt_and_generated() {
        let ids = [5, 6, 7, 8];
        let c = Context::new(&ids, Some(3)).expect("3 <= 4");
        assert_eq!((c.prompt(), c.generated()), (&ids[..3], &ids[3..]));
        let all = Context::new(&ids, None).expect("default");
        assert_eq!(all.prompt_len(), 4);
        assert_eq!(
            Context::new(&ids, Some(5)).unwrap_err().to_string(),
            "`prompt_len` = 5 is more than the 4 entries of `input_ids`"
        );
    }

    #[test]
    fn window_misses_only_older_in_vocabulary_ids() {
        // ids 1 2 3 | 2 9 ; window 2 sees {2, 9}; 9 is out of a 5-token vocabulary.
        // Missed: 1 and 3, both in the prompt (first three ids).
        let ids = [1, 2, 3, 2, 9];
        let c = Context::new(&ids, Some(3)).expect("valid");
        assert_eq!(c.missed_by_window(2, 5), (2, 2));
        assert_eq!(c.missed_by_window(5, 5), (0, 0));
    }

    #[test]
    fn described_fields_print_as_compact_json_and_words_as_they_are() {
        let fields: Map<String, Value> = [("top_k", Value::from(40)), ("top_p", Value::from(0.9))]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        let text = Value::Object(fields.clone()).to_string();
        assert_eq!(Described::Fields(fields).to_string(), text);
        assert_eq!(
            Described::Words("Sampling::ArgMax".into()).into_json(),
            Value::String("Sampling::ArgMax".into())
        );
    }

    #[test]
    fn kept_is_the_positive_probabilities() {
        let d = Distribution::new(vec![0.0, 0.25, 0.75], Precision::F64);
        assert_eq!(d.kept(), &[1, 2]);
        let h = Distribution::one_hot(3, 2, Precision::F32);
        assert_eq!(h.probs(), &[0.0, 0.0, 1.0]);
    }
}
