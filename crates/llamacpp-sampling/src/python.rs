//! llama-cpp-python 0.3.36's own sampling: llama.cpp's samplers, chained and
//! fed by its Python layer, as the semantics `llama-cpp-python`.
//!
//! Rules, from the sdist's llama_cpp/llama.py at 0.3.36 (the same sdist
//! whose vendored llama.cpp 0c1e57098 the `llama.cpp` semantics runs):
//!
//! * `_init_sampler` builds one chain per `generate` call: the logits
//!   processors (`logit_bias` is one, added by `_create_completion`) as a
//!   custom sampler, then `penalties` with the window
//!   `last_n_tokens_size` (the `Llama(...)` argument, 64), then: `greedy`
//!   when `temp == 0`; `dist` alone when `temp < 0`; otherwise `top_k`,
//!   `typical`, `top_p`, `min_p` (each with `min_keep` 1), `temp`, `dist`.
//!   No DRY, XTC, top-n-σ or dynamic temperature.
//! * `sample` calls `llama_sampler_sample`, which accepts only the token it
//!   sampled: the prompt is never accepted, so the penalties see the
//!   **generated tokens only** (the last `last_n_tokens_size` of them) —
//!   llama-server accepts the prompt too. Here that is
//!   `input_ids[prompt_len..]`: a record without `prompt_len` has no
//!   generated tokens, so no penalty acts.
//! * `logit_bias` (`{int(k): float(v)}`) sets `scores[id] = bias + scores[id]`
//!   in float32 (NumPy 2's rule for a Python float with a float32); a
//!   negative id counts from the end, as Python indexing does, and an id
//!   outside the vocabulary raises inside the ctypes callback, which
//!   ctypes reports and ignores, so then no bias applies at all.
//! * The seed (`_create_completion`): `seed` given → `set_seed(seed)`; no
//!   seed → `set_seed(random.Random(self._seed).randint(0, 2**32))`, where
//!   `self._seed` is `Llama(seed=...)`'s value (`seed or
//!   LLAMA_DEFAULT_SEED`: 0 and the default both mean 4294967295) or the
//!   seed the previous completion set. `dist` gets it through ctypes as a
//!   `uint32_t` (modulo 2^32); 4294967295 (e.g. `seed=-1`) makes llama.cpp
//!   pick a random seed.
//!
//! The server (llama_cpp/server/types.py, app.py) has other defaults:
//! `repeat_penalty` 1.1, `max_tokens` 16 on `/v1/completions`; see
//! [`routes`].

use parity_core::py::PyNum;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value, json};

use parity_core::params::{Null, from_map, python_int};
use parity_core::{Context, Distribution, Error, Logits, Precision, Route};
use replicas::cpython::PyRandom;

use crate::chain::{Candidates, PenaltyCounts, Sampler, XtcBranch};
use crate::engine::outcome;

/// `LLAMA_DEFAULT_SEED`.
const DEFAULT_SEED: u64 = 0xFFFF_FFFF;

/// The most draws one request may ask to replay.
const MAX_DRAWS: u64 = 10_000_000;

parity_core::params! {
    /// `Llama.create_completion`'s sampling arguments (its defaults), plus
    /// the two `Llama(...)` arguments that decide the window and the seed.
    #[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
    #[serde(default, deny_unknown_fields)]
    pub struct PythonParams {
        /// `temperature`: 0 is greedy, below 0 samples the untruncated
        /// softmax, above 0 is applied after top-k/typical/top-p/min-p.
        pub temperature: f32 = 0.8 => "0 = greedy; < 0 = dist alone (no truncation); applied last",
        /// `top_k` (≤ 0 off).
        pub top_k: i32 = 40 => "<= 0 off; exactly k by llama.cpp's sort",
        /// `top_p`.
        pub top_p: f32 = 0.95 => "min_keep 1",
        /// `min_p`.
        pub min_p: f32 = 0.05 => "min_keep 1",
        /// `typical_p`.
        pub typical_p: f32 = 1.0 => "min_keep 1",
        /// `repeat_penalty`: 1.0 in the Python API (the server's default is
        /// 1.1).
        pub repeat_penalty: f32 = 1.0
            => "over the generated tokens only (the server defaults to 1.1)",
        /// `frequency_penalty`.
        pub frequency_penalty: f32 = 0.0 => "over the generated tokens only",
        /// `presence_penalty`.
        pub presence_penalty: f32 = 0.0 => "over the generated tokens only",
        /// `mirostat_mode`: only 0 (mirostat replaces the chain).
        pub mirostat_mode: i32 = 0 => "only 0 (mirostat is not reproduced)",
        /// `logit_bias`: `{token id: bias}`.
        #[serde(deserialize_with = "bias_in")]
        pub logit_bias: Vec<(i64, f64)> => "{\"id\": bias}; any id out of range drops every bias",
        /// `seed`: given, it seeds `dist` (modulo 2^32; -1 is random); unset,
        /// one is derived from the `Llama` object's seed.
        pub seed: Option<i64>
            => "null = random.Random(llama_seed).randint(0, 2**32); -1 = random",
        /// The `Llama` object's seed when the call starts (`Llama(seed=...)`,
        /// where 0 and unset are 4294967295; after a completion without a
        /// seed, the seed it derived). Only read when `seed` is unset.
        pub llama_seed: i64 ["4294967295"] = 4_294_967_295
            => "Llama(seed=...) (0 = 4294967295; random.Random takes its abs), or the seed the last unseeded call derived",
        /// `Llama(last_n_tokens_size=...)`: the penalty window.
        pub last_n_tokens_size: i32 = 64 => "the penalty window over generated tokens",
        /// How many successive draws to replay on these logits (this
        /// crate's; each takes one `dist` number from the chain's
        /// `std::mt19937`).
        pub draws: Option<u64> => "draws replayed from the chain's std::mt19937 (this crate's)",
    }
}

fn bias_in<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<(i64, f64)>, D::Error> {
    let map = Map::<String, Value>::deserialize(d)?;
    let mut out: Vec<(i64, f64)> = Vec::new();
    for (k, v) in map {
        // `int(k)` (Python) then `float(v)`; later keys win, as in a dict.
        let id = python_int(&k).ok_or_else(|| {
            serde::de::Error::custom(format_args!(
                "key {k:?} is not an integer: llama-cpp-python's int(k) raises ValueError"
            ))
        })?;
        let bias = PyNum::of_value(&v).map(PyNum::float).ok_or_else(|| {
            serde::de::Error::custom(format_args!(
                "bias {v} for {k:?} is not a number: float(v) raises"
            ))
        })?;
        out.retain(|&(i, _)| i != id);
        out.push((id, bias));
    }
    Ok(out)
}

impl PythonParams {
    /// The seed `dist` gets (as `uint32_t`), `None` when llama.cpp draws a
    /// random one.
    pub fn chain_seed(&self) -> Option<u32> {
        let s = match self.seed {
            Some(s) => s.rem_euclid(1 << 32) as u64,
            None => {
                // random.seed(n) seeds with abs(n) (Modules/_randommodule.c).
                let start = if self.llama_seed == 0 {
                    DEFAULT_SEED
                } else {
                    self.llama_seed.unsigned_abs()
                };
                (PyRandom::new(u128::from(start)).randint(0, 1 << 32) % (1 << 32)) as u64
            }
        };
        (s != DEFAULT_SEED).then_some(s as u32)
    }
}

/// Reads the arguments.
pub(crate) fn parse(params: &Map<String, Value>) -> Result<PythonParams, Error> {
    let p: PythonParams = from_map(
        params,
        "llama-cpp-python",
        PythonParams::FIELDS,
        Null::Unset,
    )?;
    parity_core::ensure!(
        p.mirostat_mode == 0,
        "`mirostat_mode` = {}: mirostat replaces the sampler chain and is not reproduced",
        p.mirostat_mode
    );
    if let Some(n) = p.draws {
        parity_core::ensure!(
            n <= MAX_DRAWS,
            "`draws` = {n}: at most {MAX_DRAWS} draws are replayed"
        );
    }
    Ok(p)
}

/// The chain `_init_sampler` builds, in two parts: the logit-bias processor
/// and the penalties, which every branch runs first, then the filters and
/// temperature before `dist` (`None`: `greedy`, the argmax).
struct Chain {
    pre: Vec<Sampler>,
    tail: Option<Vec<Sampler>>,
}

fn chain(p: &PythonParams, n_vocab: usize, generated: &[i32]) -> Chain {
    // llama_sampler_init_penalties checks nothing (src/llama-sampler.cpp);
    // only common_sampler_init, which llama-server uses, refuses a penalty <= 0.
    let n = n_vocab as i64;
    let mut pre = Vec::new();
    // The logit_bias processor: all or nothing (an IndexError drops it).
    if !p.logit_bias.is_empty() && p.logit_bias.iter().all(|&(id, _)| -n <= id && id < n) {
        let biases = p
            .logit_bias
            .iter()
            .map(|&(id, b)| ((if id < 0 { id + n } else { id }) as i32, b as f32))
            .collect();
        pre.push(Sampler::LogitBias(biases));
    }
    let last_n = p.last_n_tokens_size.max(0) as usize;
    let neutral =
        p.repeat_penalty == 1.0 && p.frequency_penalty == 0.0 && p.presence_penalty == 0.0;
    if last_n != 0 && !neutral {
        pre.push(Sampler::Penalties {
            counts: PenaltyCounts::new(generated, last_n),
            repeat: p.repeat_penalty,
            freq: p.frequency_penalty,
            present: p.presence_penalty,
        });
    }
    if p.temperature == 0.0 {
        return Chain { pre, tail: None };
    }
    let mut out = Vec::new();
    if p.temperature > 0.0 {
        if p.top_k > 0 {
            out.push(Sampler::TopK(p.top_k));
        }
        if p.typical_p < 1.0 {
            out.push(Sampler::Typical {
                p: p.typical_p,
                min_keep: 1,
            });
        }
        if p.top_p < 1.0 {
            out.push(Sampler::TopP {
                p: p.top_p,
                min_keep: 1,
            });
        }
        if p.min_p > 0.0 {
            out.push(Sampler::MinP {
                p: p.min_p,
                min_keep: 1,
            });
        }
        if p.temperature != 1.0 {
            out.push(Sampler::TempExt {
                temp: p.temperature,
                delta: 0.0,
                exponent: 1.0,
            });
        }
    }
    Chain {
        pre,
        tail: Some(out),
    }
}

/// The distribution, with the draws and the penalised logits.
pub(crate) fn distribution(
    p: &PythonParams,
    logits: &Logits,
    context: &Context<'_>,
) -> Result<Distribution, Error> {
    let x = logits.to_f32()?;
    parity_core::ensure!(!x.is_empty(), "`logits` is empty");
    let n_vocab = x.len();
    for (i, &t) in context.prompt().iter().enumerate() {
        parity_core::ensure!(
            t >= 0 && (t as u64) < n_vocab as u64,
            "`input_ids[{i}]` = {t} is not a token id of this {n_vocab}-token vocabulary: llama.cpp's decode refuses the prompt"
        );
    }
    // Accepted ids the vocabulary does not hold count in the window but
    // match no candidate, as in llama.cpp's penalties.
    let offset = context.prompt_len();
    let generated: Vec<i32> = context
        .generated()
        .iter()
        .enumerate()
        .map(|(i, &t)| {
            i32::try_from(t).map_err(|_| {
                Error::new(format_args!(
                    "`input_ids[{}]` = {t} is not a llama_token (int32)",
                    offset + i
                ))
            })
        })
        .collect::<Result<_, _>>()?;
    let Chain { pre, tail } = chain(p, n_vocab, &generated);
    // The logits after the bias and the penalties: what greedy scans, and
    // what `penalised` reports.
    let mut cur = Candidates::from_logits(&x);
    for s in &pre {
        s.apply(&mut cur, XtcBranch::Skipped);
    }
    let (mut dist, tokens) = match tail {
        None => {
            // greedy: the first maximum of the penalised array (id order)
            let mut best = 0;
            for i in 1..cur.data.len() {
                if cur.data[i].logit > cur.data[best].logit {
                    best = i;
                }
            }
            let token = cur.data[best].id as usize;
            (
                Distribution::one_hot(n_vocab, token, Precision::F32),
                p.draws.map(|k| vec![token as i64; k as usize]),
            )
        }
        Some(tail) => {
            let all: Vec<Sampler> = pre.iter().cloned().chain(tail).collect();
            let out = outcome(&all, &x);
            let tokens = match p.draws {
                None => None,
                Some(k) => {
                    let seed = p.chain_seed().ok_or_else(|| {
                        Error::new("`draws` needs a seed: this one is 4294967295 (LLAMA_DEFAULT_SEED), for which llama.cpp picks a random seed")
                    })?;
                    Some(out.draws(seed, k as usize))
                }
            };
            (out.distribution(n_vocab), tokens)
        }
    };
    if let Some(t) = tokens {
        dist = dist.with_tokens(t);
    }
    if pre.iter().any(|s| matches!(s, Sampler::Penalties { .. })) {
        dist = dist.with_penalised(cur.data.iter().map(|t| t.logit).collect());
    }
    Ok(dist)
}

/// Which of llama_cpp.server's two request models.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ServerRoute {
    /// `CreateCompletionRequest`.
    Completions,
    /// `CreateChatCompletionRequest`.
    Chat,
}

impl ServerRoute {
    pub(crate) const fn endpoint(self) -> parity_core::Endpoint {
        parity_core::Endpoint::http(
            parity_core::Server::new("llama_cpp.server"),
            match self {
                ServerRoute::Completions => parity_core::Protocol::OpenaiCompletions,
                ServerRoute::Chat => parity_core::Protocol::OpenaiChat,
            },
        )
    }
}

/// A number as pydantic v2 reads it in lax mode: a JSON number or a string
/// holding one (`"0.7"`); anything else is `float_parsing`.
fn lax_float(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => Some(PyNum::of(n).float()),
        Value::String(s) => s.trim().parse::<f64>().ok().filter(|x| x.is_finite()),
        _ => None,
    }
}

/// An integer as pydantic v2 reads it in lax mode: an integer, a float
/// with no fractional part (`40.0`), or a string of digits (`"7"`).
fn lax_int(v: &Value) -> Result<i64, &'static str> {
    match v {
        Value::Number(n) => match (PyNum::of(n).int64(), PyNum::of(n).float()) {
            (Some(i), _) => Ok(i),
            (None, x) if x.fract() == 0.0 && x.abs() < 9.2e18 => Ok(x as i64),
            (None, _) => Err(
                "int_from_float: Input should be a valid integer, got a number with a fractional part",
            ),
        },
        Value::String(s) => python_int(s).ok_or(
            "int_parsing: Input should be a valid integer, unable to parse string as an integer",
        ),
        _ => Err("int_type: Input should be a valid integer"),
    }
}

/// One bounded field of the request models (server/types.py at 0.3.36):
/// its name, whether it is an integer, its bounds, and its default.
struct Field {
    name: &'static str,
    int: bool,
    ge: Option<f64>,
    le: Option<f64>,
}

const fn field(name: &'static str, int: bool, ge: Option<f64>, le: Option<f64>) -> Field {
    Field { name, int, ge, le }
}

/// The sampling fields both request models declare, with their pydantic
/// bounds (server/types.py:25-101), and `max_tokens`/`min_tokens`, which
/// are checked though they do not sample.
const FIELDS: &[Field] = &[
    field("temperature", false, None, None),
    field("top_p", false, Some(0.0), Some(1.0)),
    field("min_p", false, Some(0.0), Some(1.0)),
    field("top_k", true, Some(0.0), None),
    field("repeat_penalty", false, Some(0.0), None),
    field("presence_penalty", false, Some(-2.0), Some(2.0)),
    field("frequency_penalty", false, Some(-2.0), Some(2.0)),
    field("mirostat_mode", true, Some(0.0), Some(2.0)),
    field("mirostat_tau", false, Some(0.0), Some(10.0)),
    field("mirostat_eta", false, Some(0.001), Some(1.0)),
    field("seed", true, None, None),
    field("min_tokens", true, Some(0.0), None),
];

parity_core::body! {
    /// llama_cpp.server 0.3.36's two request models, `CreateCompletionRequest`
    /// and `CreateChatCompletionRequest` (server/types.py:109-251), every
    /// field once, under what the server does with it; pydantic ignores
    /// every field they do not declare ([`ServerBody::other`]).
    pub struct ServerBody {
        /// Both models: validated ([`FIELDS`]' bounds) and passed to
        /// `create_completion`'s sampling arguments, or (`logit_bias_type`,
        /// `min_tokens`) read by `prepare_request_resources` (app.py:158-188).
        sampling: Sampling {
            temperature, top_p, min_p, top_k, repeat_penalty,
            presence_penalty, frequency_penalty,
            mirostat_mode, mirostat_tau, mirostat_eta,
            logit_bias, logit_bias_type, seed, min_tokens,
        },
        /// Both models: a grammar for the chain ([`grammar`]).
        constraining: Constraining { grammar },
        /// The chat model only: what its handler turns into a grammar
        /// ([`grammar`]).
        chat_constraining: ChatConstraining {
            response_format, tool_choice, tools, function_call, functions,
        },
        /// Both models: read for something else (the model, how much to
        /// generate, stop words, streaming, logprobs).
        read: Read { model, max_tokens, stop, stream, logprobs },
        /// The completions model only: the prompt and what to echo.
        completion_read: CompletionRead { prompt, suffix, echo },
        /// The chat model only: the messages and how many logprobs.
        chat_read: ChatRead { messages, top_logprobs },
        /// Declared "ignored or currently unsupported" and left out of the
        /// call (`exclude`, app.py:317-323, 487-492); `best_of` on
        /// completions only.
        dropped: Dropped { n, best_of, user },
    }
}

impl ServerRoute {
    /// Whether this route's request model reads field `k` for anything.
    fn reads(self, k: &str) -> bool {
        let own: &[&[&str]] = match self {
            ServerRoute::Completions => &[CompletionRead::FIELDS],
            ServerRoute::Chat => &[ChatConstraining::FIELDS, ChatRead::FIELDS],
        };
        [Sampling::FIELDS, Constraining::FIELDS, Read::FIELDS]
            .iter()
            .chain(own)
            .any(|f| f.contains(&k))
    }
}

/// What llama_cpp.server 0.3.36 does with the fields that constrain
/// sampling with a grammar. `grammar` (both models, `Optional[str]`,
/// server/types.py:153, 251) becomes `LlamaGrammar.from_string(...)`
/// (server/app.py:177-178), which `_init_sampler` adds to the chain after
/// the penalties (llama.py:758-759); an empty one is a no-op, since llama.cpp
/// 0c1e57098 builds no grammar from "" (src/llama-sampler.cpp:2779-2818).
/// On chat, the handler every GGUF chat template gets
/// (`chat_formatter_to_chat_completion_handler`) replaces it with a JSON
/// grammar for `response_format: {"type": "json_object"}`
/// (llama_chat_format.py:672-675, 1017-1029), and with one built from the
/// tool's parameters for a named `tool_choice` (or a legacy
/// `function_call: {"name": ...}`) when tools (or functions) are given
/// (686-722). Those are refused as not reproduced, naming the field;
/// values the request models cannot read are the server's refusal.
fn grammar(route: ServerRoute, body: &Map<String, Value>) -> Result<(), Error> {
    fn text(v: Option<&Value>) -> Option<&str> {
        v.and_then(Value::as_str)
    }
    let refuse = |field: &str, v: &Value, why: &str| {
        Err(Error::new(format_args!(
            "`{field}` = {v}: llama_cpp.server refuses the request ({why})"
        )))
    };
    let constrained = |field: &str, v: &Value, how: &str| {
        Err(parity_core::params::grammar_constrained(
            field,
            v,
            &format!("llama_cpp.server samples under {how}"),
        ))
    };
    match body.get("grammar") {
        None | Some(Value::Null) => {}
        Some(Value::String(g)) if g.is_empty() => {}
        Some(v @ Value::String(_)) => {
            return constrained("grammar", v, "this grammar (server/app.py:177-178)");
        }
        Some(v) => return refuse("grammar", v, "string_type: Input should be a valid string"),
    }
    if route == ServerRoute::Completions {
        return Ok(());
    }
    match body.get("response_format") {
        None | Some(Value::Null) => {}
        Some(v @ Value::Object(m)) => match text(m.get("type")) {
            Some("text") => {}
            Some("json_object") => {
                return constrained(
                    "response_format",
                    v,
                    "a JSON grammar (llama_chat_format.py:672-675)",
                );
            }
            _ => {
                return refuse(
                    "response_format.type",
                    m.get("type").unwrap_or(&Value::Null),
                    "literal_error: Input should be 'text' or 'json_object'",
                );
            }
        },
        Some(v) => {
            return refuse(
                "response_format",
                v,
                "dict_type: Input should be a valid dictionary",
            );
        }
    }
    // a named choice: {"type": "function", "function": {"name": ...}}
    let named = |v: &Value| {
        v.as_object()
            .filter(|m| text(m.get("type")) == Some("function"))
            .and_then(|m| text(m.get("function")?.get("name")))
            .map(str::to_owned)
    };
    let mut choice = None;
    match body.get("tool_choice") {
        None | Some(Value::Null) => {}
        Some(Value::String(t)) if ["none", "auto", "required"].contains(&t.as_str()) => {}
        Some(v) => match named(v) {
            Some(name) => choice = Some(("tool_choice", v, name)),
            None => {
                return refuse(
                    "tool_choice",
                    v,
                    "no member of ChatCompletionToolChoiceOption takes it",
                );
            }
        },
    }
    // the legacy function_call overrides tool_choice (llama_chat_format.py:687-697)
    match body.get("function_call") {
        None | Some(Value::Null) => {}
        Some(Value::String(t)) if t == "none" || t == "auto" => choice = None,
        Some(v) => match text(v.get("name")) {
            Some(name) if v.is_object() => choice = Some(("function_call", v, name.to_owned())),
            _ => {
                return refuse(
                    "function_call",
                    v,
                    "no member of ChatCompletionRequestFunctionCall takes it",
                );
            }
        },
    }
    // functions, when given, replace tools (llama_chat_format.py:677-685)
    let tools = match body.get("functions").filter(|v| !v.is_null()) {
        Some(Value::Array(f)) => Some(f.iter().collect::<Vec<_>>()),
        Some(v) => return refuse("functions", v, "list_type: Input should be a valid list"),
        None => match body.get("tools").filter(|v| !v.is_null()) {
            Some(Value::Array(t)) => Some(t.iter().filter_map(|t| t.get("function")).collect()),
            Some(v) => return refuse("tools", v, "list_type: Input should be a valid list"),
            None => None,
        },
    };
    if let (Some((field, v, name)), Some(tools)) = (choice, tools) {
        if !tools
            .iter()
            .any(|t| text(t.get("name")) == Some(name.as_str()))
        {
            return Err(Error::new(format_args!(
                "`{field}` = {v}: llama_cpp.server's chat handler raises \"Tool choice '{name}' not found in tools.\" (llama_chat_format.py:705-708, a 500)"
            )));
        }
        return constrained(
            field,
            v,
            "a grammar built from the tool's parameters (llama_chat_format.py:700-722)",
        );
    }
    Ok(())
}

/// The server's answer to a body: the `create_completion` arguments, or
/// the validation error pydantic raises (the first field it names).
fn server_params(route: ServerRoute, body: &Map<String, Value>) -> Result<PythonParams, Error> {
    let refuse = |field: &str, v: &Value, why: &str| {
        Err(Error::new(format_args!(
            "`{field}` = {v}: llama_cpp.server refuses the request ({why})"
        )))
    };
    let mut args = Map::new();
    args.insert("repeat_penalty".into(), Value::from(1.1));
    for f in FIELDS {
        let Some(v) = body.get(f.name) else { continue };
        if v.is_null() {
            match f.name {
                "seed" => continue,
                "presence_penalty" | "frequency_penalty" => {
                    return Err(Error::new(format_args!(
                        "`{}` = null: llama_cpp.server passes None on to llama_sampler_init_penalties, which ctypes refuses (a 500)",
                        f.name
                    )));
                }
                _ => return refuse(f.name, v, "a number is required"),
            }
        }
        let x = if f.int {
            match lax_int(v) {
                Ok(i) => i as f64,
                Err(why) => return refuse(f.name, v, why),
            }
        } else {
            match lax_float(v) {
                Some(x) => x,
                None => return refuse(f.name, v, "float_parsing: Input should be a valid number"),
            }
        };
        if let Some(ge) = f.ge
            && x < ge
        {
            return refuse(
                f.name,
                v,
                &format!("greater_than_equal: Input should be greater than or equal to {ge}"),
            );
        }
        if let Some(le) = f.le
            && x > le
        {
            return refuse(
                f.name,
                v,
                &format!("less_than_equal: Input should be less than or equal to {le}"),
            );
        }
        match f.name {
            "mirostat_tau" | "mirostat_eta" => {}
            "min_tokens" if x > 0.0 => {
                return Err(Error::new(format_args!(
                    "`min_tokens` = {v}: its MinTokensLogitsProcessor needs the model's EOS id; not reproduced"
                )));
            }
            "min_tokens" => {}
            _ if f.int => {
                args.insert(f.name.into(), Value::from(x as i64));
            }
            _ => {
                args.insert(f.name.into(), Value::from(x));
            }
        }
    }
    // max_tokens: ge 0 on /v1/completions, unbounded on chat (types.py:118-120, 213-216)
    if let Some(v) = body.get("max_tokens").filter(|v| !v.is_null()) {
        match lax_int(v) {
            Ok(i) if i < 0 && route == ServerRoute::Completions => {
                return refuse(
                    "max_tokens",
                    v,
                    "greater_than_equal: Input should be greater than or equal to 0",
                );
            }
            Ok(_) => {}
            Err(why) => return refuse("max_tokens", v, why),
        }
    }
    // logprobs: an int >= 0 on /v1/completions, a bool on chat (types.py:131-135, 217-220)
    if let Some(v) = body.get("logprobs").filter(|v| !v.is_null()) {
        match route {
            ServerRoute::Completions => match lax_int(v) {
                Ok(i) if i < 0 => {
                    return refuse(
                        "logprobs",
                        v,
                        "greater_than_equal: Input should be greater than or equal to 0",
                    );
                }
                Ok(_) => {}
                Err(why) => return refuse("logprobs", v, why),
            },
            ServerRoute::Chat => {
                let ok = match v {
                    Value::Bool(_) => true,
                    Value::Number(n) => [0.0, 1.0].contains(&PyNum::of(n).float()),
                    Value::String(t) => matches!(
                        t.to_ascii_lowercase().as_str(),
                        "0" | "1"
                            | "true"
                            | "false"
                            | "t"
                            | "f"
                            | "yes"
                            | "no"
                            | "y"
                            | "n"
                            | "on"
                            | "off"
                    ),
                    _ => false,
                };
                if !ok {
                    return refuse(
                        "logprobs",
                        v,
                        "bool_parsing: Input should be a valid boolean, unable to interpret input",
                    );
                }
            }
        }
    }
    // chat messages: one of the message models by role (llama_types.py)
    if route == ServerRoute::Chat
        && let Some(Value::Array(messages)) = body.get("messages")
    {
        for (i, m) in messages.iter().enumerate() {
            let role = m.get("role").and_then(Value::as_str);
            let known = match role {
                Some("system" | "user" | "assistant") => true,
                Some("tool") => m.get("tool_call_id").is_some(),
                Some("function") => m.get("name").is_some(),
                _ => false,
            };
            if !known {
                return Err(Error::new(format_args!(
                    "`messages[{i}].role` = {}: llama_cpp.server refuses the request (literal_error: no message model takes it)",
                    m.get("role").unwrap_or(&Value::Null)
                )));
            }
        }
    }
    match body.get("logit_bias_type") {
        None | Some(Value::Null) => {}
        Some(Value::String(t)) if t == "input_ids" => {}
        Some(v @ Value::String(t)) if t == "tokens" => {
            return Err(Error::new(format_args!(
                "`logit_bias_type` = {v}: the keys are tokenized with the model's tokenizer; not reproduced"
            )));
        }
        Some(v) => {
            return refuse(
                "logit_bias_type",
                v,
                "literal_error: Input should be 'input_ids' or 'tokens'",
            );
        }
    }
    match body.get("logit_bias") {
        None | Some(Value::Null) => {}
        Some(Value::Object(m)) => {
            let mut out = Map::new();
            for (k, b) in m {
                match lax_float(b) {
                    Some(b) => {
                        out.insert(k.clone(), Value::from(b));
                    }
                    None => {
                        return refuse(
                            "logit_bias",
                            b,
                            "float_parsing: Input should be a valid number",
                        );
                    }
                }
            }
            args.insert("logit_bias".into(), Value::Object(out));
        }
        Some(v) => {
            return refuse(
                "logit_bias",
                v,
                "dict_type: Input should be a valid dictionary",
            );
        }
    }
    grammar(route, body)?;
    parse(&args)
}

/// llama_cpp.server's two routes (server/app.py:303-357, 408-526): each
/// body's sampling fields validated by its request model (pydantic, lax:
/// numeric strings and integral floats pass, bounds are refused), the
/// server's defaults filled in (`repeat_penalty` 1.1), everything the
/// models do not declare (`typical_p`, `tfs_z`, …) ignored, and the result
/// passed to `create_completion` as keyword arguments. The chat handler
/// formats the prompt and calls `create_completion` with the same ones.
pub(crate) fn routes(request: &Map<String, Value>) -> Vec<Route<PythonParams>> {
    [ServerRoute::Completions, ServerRoute::Chat]
        .into_iter()
        .map(|route| {
            let own = |k: &str| route.reads(k);
            let mut r = Route::new(route.endpoint(), server_params(route, request))
                .ignoring_all_but(request, own);
            if !request.contains_key("repeat_penalty") {
                r = r.note("repeat_penalty 1.1: the server's default (the Python API's is 1.0)");
            }
            r = r.note("the penalties see only the last 64 generated tokens: the prompt is never accepted into the chain (llama-server's window includes it)");
            if request.get("seed").is_none_or(Value::is_null) {
                r = r.note("no seed: random.Random(the server Llama's seed).randint(0, 2**32), the same sequence of seeds in every fresh server process");
            }
            r
        })
        .collect()
}

/// Why llama-cpp-python differs from transformers on a row, in words.
pub(crate) fn explain(
    row: &parity_core::Against<'_>,
    p: &PythonParams,
) -> parity_core::Explanation {
    let kw = row.kwargs;
    let sample = kw
        .get("do_sample")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let filters = p.top_p < 1.0 || p.min_p > 0.0 || p.typical_p < 1.0;
    let mut reasons = crate::chain_reasons(
        row,
        &crate::ChainSetting {
            sample: sample && p.temperature > 0.0,
            temp: p.temperature,
            top_k: p.top_k,
            top_p: p.top_p,
            min_p: p.min_p,
            temp_last_acts: sample && p.temperature > 0.0 && filters,
            ties_checked: sample && p.temperature > 0.0,
            left_out: "arguments the call leaves out get create_completion's defaults",
        },
    );
    let penalised =
        p.repeat_penalty != 1.0 || p.frequency_penalty != 0.0 || p.presence_penalty != 0.0;
    let n = row.context.input_ids().len();
    let generated = row.context.generated().len();
    let window = (p.last_n_tokens_size.max(0) as usize).min(generated);
    if penalised && window < n {
        reasons.push(format!(
            "the penalties see only the last {} generated tokens ({window} here): llama-cpp-python never accepts the prompt into its chain, transformers penalises all {n} ids",
            p.last_n_tokens_size
        ));
    }
    parity_core::Explanation { reasons, fix: None }
}

impl PythonParams {
    /// The fields that differ from `create_completion`'s defaults, floats
    /// as their shortest float32 text.
    pub fn describe(&self) -> Map<String, Value> {
        parity_core::params::non_default_f32(
            self,
            &[
                "temperature",
                "top_p",
                "min_p",
                "typical_p",
                "repeat_penalty",
                "frequency_penalty",
                "presence_penalty",
            ],
        )
    }
}

/// The recipe, in words.
const PY_RECIPE: &str = "every filter sent with transformers' values (create_completion's own defaults are top_k 40, top_p 0.95, min_p 0.05, temperature 0.8); exact except where top_k cuts a tie or a top-p/min-p decision sits on a float rounding boundary";

/// The `create_completion` arguments that reproduce transformers for these
/// resolved kwargs, or why none do: llama-cpp-python's chain is fixed
/// (temperature after top-p/min-p/typical) and its penalties never see the
/// prompt, so a temperature other than 1 with any of those filters, and any
/// repetition penalty, cannot be matched.
fn matching_call(kwargs: &Map<String, Value>) -> Result<Map<String, Value>, Vec<String>> {
    let mut blocked = crate::translate::unmatched(kwargs);
    let hf = crate::translate::resolved(kwargs)?;
    let r = hf.repetition_penalty;
    if r != 1.0 {
        blocked.push(format!(
            "repetition_penalty = {r}: llama-cpp-python penalises only the tokens it generated (never the prompt), transformers the whole sequence"
        ));
    }
    blocked.extend(crate::translate::temperature_last(
        &hf,
        "llama-cpp-python's chain applies the temperature after them, transformers before",
    ));
    if !blocked.is_empty() {
        return Err(blocked);
    }
    let mut m = crate::translate::filters(&hf);
    m.insert("repeat_penalty".into(), json!(1.0));
    Ok(m)
}

/// `compare translate --to llama-cpp-python`: the `create_completion` call
/// (and the llama_cpp.server body) that reproduces transformers, proven on
/// the bundled fixtures by `compare`, or what cannot be matched.
pub(crate) fn translation(kwargs: &Map<String, Value>) -> parity_core::Translation {
    use parity_core::TranslationLine::{Plain, Wrapped};
    match matching_call(kwargs) {
        Ok(call) => {
            let args: Vec<String> = call.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let mut json = Map::new();
            json.insert("create_completion".into(), Value::Object(call.clone()));
            json.insert("unmatched".into(), json!([]));
            json.insert("recipe".into(), json!(PY_RECIPE));
            let mut lines = vec![Wrapped {
                label: "llama-cpp-python: ".into(),
                text: format!("llm.create_completion(prompt, {})", args.join(", ")),
            }];
            if call
                .get("typical_p")
                .and_then(Value::as_f64)
                .is_some_and(|t| t < 1.0)
            {
                lines.push(Plain(
                    "  (llama_cpp.server has no typical_p field: only the Python API can send it)"
                        .into(),
                ));
            }
            lines.push(Wrapped {
                label: "why: ".into(),
                text: PY_RECIPE.into(),
            });
            parity_core::Translation {
                lines,
                json,
                params: Some(call),
            }
        }
        Err(unmatched) => {
            let mut json = Map::new();
            json.insert("create_completion".into(), Value::Null);
            json.insert("unmatched".into(), json!(unmatched));
            json.insert("recipe".into(), json!(PY_RECIPE));
            parity_core::Translation::cannot(
                "llama-cpp-python cannot reproduce these kwargs:".into(),
                &unmatched,
                json,
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().cloned().expect("object")
    }

    /// The bounds table checks sampling fields of the body only, and each
    /// route reads what its request model declares and passes on.
    #[test]
    fn the_body_declares_what_each_route_reads() {
        for f in FIELDS {
            assert!(Sampling::FIELDS.contains(&f.name), "{}", f.name);
        }
        let (c, chat) = (ServerRoute::Completions, ServerRoute::Chat);
        assert!(c.reads("grammar") && chat.reads("grammar"));
        assert!(chat.reads("response_format") && !c.reads("response_format"));
        assert!(c.reads("echo") && !chat.reads("echo"));
        // excluded from the call (app.py:317-323), or not declared at all
        for k in ["best_of", "n", "typical_p", "tfs_z"] {
            assert!(!c.reads(k) && !chat.reads(k), "{k}");
        }
    }

    #[test]
    fn a_temperature_alone_translates_with_every_filter_explicit() {
        let call = matching_call(&map(
            json!({"do_sample": true, "temperature": 0.7, "top_k": 0}),
        ))
        .expect("matchable");
        assert_eq!(
            Value::Object(call),
            json!({"temperature": 0.7, "top_k": 0, "top_p": 1.0, "min_p": 0.0,
                   "typical_p": 1.0, "repeat_penalty": 1.0})
        );
    }

    #[test]
    fn the_fixed_order_and_the_generated_only_penalty_block() {
        let e = matching_call(&map(
            json!({"do_sample": true, "temperature": 0.7, "top_p": 0.9, "repetition_penalty": 1.2}),
        ))
        .unwrap_err();
        assert_eq!(e.len(), 2, "{e:?}");
        assert!(e[0].starts_with("repetition_penalty = 1.2"), "{e:?}");
        assert!(e[1].contains("applies the temperature after"), "{e:?}");
        // T = 1 with top_p is fine: the order does not matter then
        assert!(matching_call(&map(json!({"do_sample": true, "top_p": 0.9}))).is_ok());
    }
}
