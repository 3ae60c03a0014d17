//! The three server dialects: what to ask and where the answer is.
//!
//! llama-server (llama.cpp 0c1e57098, tools/server/): `/completion` with
//! `n_probs` returns `completion_probabilities[0]`. With
//! `post_sampling_probs: false` its `top_logprobs` are `log(p)` of the
//! softmax of the model's raw logits (`get_token_probabilities` in
//! server-common.cpp, sorted by logit; `completion_token_output::logarithm`
//! writes the float's lowest value for p = 0); with `post_sampling_probs:
//! true` its `top_probs` are the candidates left after the whole sampler
//! chain with their final probabilities (`populate_token_probs` in
//! server-context.cpp, sorted by p, zeros dropped). `n_probs` caps both
//! lists and is read as is (no upper limit), so asking for `n_vocab` (from
//! `/v1/models` `meta.n_vocab`) returns the whole vocabulary. The prompt's
//! tokens are fed to the sampler's penalty history (`init_sampler`), so the
//! probe sends the prompt as token ids (`/tokenize` with `add_special`, as
//! `/completion` tokenizes a string) and uses them as the context.
//!
//! OpenAI-compatible (`/v1/completions`): `logprobs: K` returns the top K
//! log-probabilities keyed by token text (vLLM writes `token_id:N` with
//! `return_tokens_as_token_ids`, which the probe reads as ids), or, from
//! llama-server's OpenAI endpoint, in the chat format (`content[0]` with
//! ids); servers cap K (OpenAI 5, vLLM `--max-logprobs`, default 20). No
//! post-sampling view: the probe draws samples.
//!
//! Ollama (`/api/generate`, raw prompt): `logprobs: true, top_logprobs: K`
//! (K at most 20); sampling fields go in `options`. No post-sampling view.

pub mod dialect;

use parity_core::{Endpoint, Error};
use serde_json::{Map, Value, json};

use crate::http::Transport;

/// The server products whose own routes [`Api::serves`] picks, by the
/// names their engine crates give them ([`parity_core::Server::product`]).
const LLAMA_SERVER: &str = "llama-server";
/// See [`LLAMA_SERVER`].
const OLLAMA: &str = "Ollama";

/// Which HTTP API the server speaks.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Api {
    /// llama.cpp's `llama-server` (native `/completion`).
    LlamaServer,
    /// Any OpenAI-compatible server (`/v1/completions`, `logprobs: K`).
    Openai,
    /// vLLM's `/v1/completions` (dialect::VLLM).
    Vllm,
    /// SGLang's `/v1/completions` (dialect::SGLANG).
    Sglang,
    /// mlx_lm.server's `/v1/completions` (dialect::MLX_LM).
    MlxLm,
    /// transformers serve's `/v1/completions` (dialect::TRANSFORMERS_SERVE).
    TransformersServe,
    /// Ollama's OpenAI layer `/v1/completions` (dialect::OLLAMA_V1).
    OllamaV1,
    /// Ollama's native `/api/generate`.
    Ollama,
}

/// The help of `compare probe`'s options whose meaning depends on the API:
/// written here, where the APIs are, so the command line names no server.
pub mod help {
    /// `--api`.
    pub const API: &str = "The server's API: llama-server, openai (any OpenAI-compatible \
                           server), vllm, sglang, mlx-lm, transformers-serve, ollama-v1 \
                           (Ollama's /v1) or ollama (native); docs/probe.md says what each \
                           one's logprobs are";
    /// `--model`.
    pub const MODEL: &str = "The model name requests carry (OpenAI: default the first of \
                             /v1/models; Ollama: required)";
    /// `--prompt`.
    pub const PROMPT: &str = "The prompt as text (llama-server tokenizes it as /completion does)";
    /// `--samples`.
    pub const SAMPLES: &str = "Draw N single-token samples per request (distinct seeds) instead \
                               of asking for post-sampling probabilities (the only way on \
                               OpenAI-compatible servers and Ollama; there the default is \
                               as many as tell the candidates apart, 200 to 1000)";
    /// `--top`.
    pub const TOP: &str = "Raw top log-probabilities to ask for (default: the whole vocabulary \
                           on llama-server, 20 elsewhere)";
    /// What to give when neither a server nor a recording is named.
    pub const MISSING: &str = "give --server URL and --api llama-server|openai|vllm|sglang|mlx-lm|transformers-serve|ollama-v1|ollama (or --replay FILE)";
}

impl Api {
    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        self.dialect().name
    }

    /// Every API, in `--api`'s order.
    pub const ALL: [Api; 8] = [
        Api::LlamaServer,
        Api::Openai,
        Api::Vllm,
        Api::Sglang,
        Api::MlxLm,
        Api::TransformersServe,
        Api::OllamaV1,
        Api::Ollama,
    ];

    /// What this API's server does with logprobs (cited in `dialect`).
    pub fn dialect(self) -> &'static self::dialect::Dialect {
        use self::dialect as d;
        match self {
            Api::LlamaServer => &d::LLAMA_SERVER,
            Api::Openai => &d::OPENAI,
            Api::Vllm => &d::VLLM,
            Api::Sglang => &d::SGLANG,
            Api::MlxLm => &d::MLX_LM,
            Api::TransformersServe => &d::TRANSFORMERS_SERVE,
            Api::OllamaV1 => &d::OLLAMA_V1,
            Api::Ollama => &d::OLLAMA,
        }
    }

    /// Parses a command-line name.
    pub fn parse(name: &str) -> Result<Self, Error> {
        Self::ALL
            .into_iter()
            .find(|a| a.name() == name)
            .ok_or_else(|| {
                let names: Vec<&str> = Self::ALL.iter().map(|a| a.name()).collect();
                Error::new(format_args!(
                    "--api {name:?}: expected one of {}",
                    names.join(", ")
                ))
            })
    }

    /// Whether the server speaks OpenAI's `/v1/completions`.
    pub fn openai_family(self) -> bool {
        !matches!(self, Api::LlamaServer | Api::Ollama)
    }

    /// Whether the server gives post-sampling probabilities (else the probe
    /// draws samples).
    pub fn has_post_sampling(self) -> bool {
        self == Api::LlamaServer
    }

    /// Whether requests may carry the prompt as token ids, so the context
    /// is exactly what the server's penalties see (llama-server's
    /// `/completion` takes `prompt` as a list of ids).
    pub fn takes_prompt_ids(self) -> bool {
        self == Api::LlamaServer
    }

    /// Whether the server says its default sampling params, which fill a
    /// request's unset fields (llama-server's `/props`
    /// `default_generation_settings.params`).
    pub fn tells_default_params(self) -> bool {
        self == Api::LlamaServer
    }

    /// Whether a request may reorder the sampler chain (llama-server's
    /// `samplers` field), so a temperature-first chain is a candidate of its own.
    pub fn orders_samplers(self) -> bool {
        self == Api::LlamaServer
    }

    /// Whether `--repeat` can measure the server: it returns the whole raw
    /// distribution and has a per-request cache switch (llama-server's
    /// `n_probs` up to the vocabulary and `cache_prompt`).
    pub fn repeatable(self) -> bool {
        self.dialect().repeat.is_some()
    }

    /// Whether a semantics' route is one this API's server answers:
    /// llama-server's own routes; Ollama's native ones (its OpenAI layer is
    /// `Openai`'s); any server's OpenAI route.
    pub fn serves(self, endpoint: Endpoint) -> bool {
        let product = endpoint.server().map(|s| s.product);
        match self {
            Api::LlamaServer => product == Some(LLAMA_SERVER),
            Api::Ollama => product == Some(OLLAMA) && !endpoint.is_openai(),
            _ => endpoint.is_openai(),
        }
    }

    /// The most top log-probabilities one answer may hold, when the API caps it.
    pub fn max_top(self) -> Option<usize> {
        self.dialect().max_top
    }
}

/// How the server names a token in its answers.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Key {
    /// A token id.
    Id(i64),
    /// A token's text (servers that do not give ids).
    Text(String),
}

impl Key {
    fn from_text(text: &str) -> Self {
        match text.strip_prefix("token_id:").and_then(|n| n.parse().ok()) {
            Some(id) => Key::Id(id),
            None => Key::Text(text.to_string()),
        }
    }

    /// As JSON: the id, or the text.
    pub fn to_json(&self) -> Value {
        match self {
            Key::Id(id) => json!(id),
            Key::Text(t) => json!(t),
        }
    }
}

/// The prompt as the user gave it.
#[derive(Debug, Clone, PartialEq)]
pub enum Prompt {
    /// Text, tokenized by the server.
    Text(String),
    /// Token ids.
    Ids(Vec<i64>),
}

impl Prompt {
    fn to_json(&self) -> Value {
        match self {
            Prompt::Text(t) => json!(t),
            Prompt::Ids(ids) => json!(ids),
        }
    }
}

/// What the server said about itself.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerInfo {
    /// Vocabulary size, when the server says (llama-server).
    pub n_vocab: Option<usize>,
    /// The model name sent in requests (OpenAI, Ollama).
    pub model: Option<String>,
    /// `/props` (llama-server), `/v1/models` or `/api/version`, as answered.
    pub props: Value,
}

/// One dialect talking through one transport.
pub struct Session<'t> {
    transport: &'t mut dyn Transport,
    api: Api,
    model: Option<String>,
}

impl<'t> Session<'t> {
    /// A session; nothing is sent yet.
    pub fn new(transport: &'t mut dyn Transport, api: Api, model: Option<String>) -> Self {
        Self {
            transport,
            api,
            model,
        }
    }

    /// The API spoken (a server's answer may have changed it from the one
    /// asked for: `openai` becomes `mlx-lm` when the server wants boolean
    /// logprobs).
    pub fn api(&self) -> Api {
        self.api
    }

    /// A call whose answer must be a 2xx JSON object.
    fn ok(&mut self, path: &str, body: Option<&Value>) -> Result<Map<String, Value>, Error> {
        let (status, v) = self.transport.call(path, body)?;
        if !(200..300).contains(&status) {
            let message = match v.pointer("/error/message").or_else(|| v.get("error")) {
                Some(m) => m.as_str().map_or(m.to_string(), String::from),
                None => match v.get("detail") {
                    Some(d) => fastapi_detail(d),
                    None => short(&v),
                },
            };
            return Err(Error::new(format_args!(
                "{path}: the server refused the request (HTTP {status}): {message}"
            )));
        }
        match v {
            Value::Object(m) => Ok(m),
            other => Err(Error::new(format_args!(
                "{path}: expected a JSON object, got {}",
                short(&other)
            ))),
        }
    }

    /// Checks that the server speaks `api` and reads what it says about itself.
    pub fn hello(&mut self) -> Result<ServerInfo, Error> {
        let name = self.api.name();
        let wrong = |e: Error, what: &str| {
            Error::new(format_args!(
                "is this a {name} server (--api {name})? {what}: {e}"
            ))
        };
        match self.api {
            Api::LlamaServer => {
                let health = self
                    .ok("/health", None)
                    .map_err(|e| Error::new(format_args!("llama-server is not ready: {e}")))?;
                if health.get("status").and_then(Value::as_str) != Some("ok") {
                    return Err(Error::new(format_args!(
                        "/health: expected {{\"status\": \"ok\"}}, got {}",
                        short(&Value::Object(health))
                    )));
                }
                let props = self.ok("/props", None);
                let props = props.map_err(|e| wrong(e, "GET /props"))?;
                if !props.contains_key("default_generation_settings") {
                    return Err(Error::new(format_args!(
                        "/props has no `default_generation_settings`: not llama-server (--api {})",
                        self.api.name()
                    )));
                }
                let models = self.ok("/v1/models", None)?;
                let n_vocab = models
                    .get("data")
                    .and_then(|d| d.get(0))
                    .and_then(|m| m.pointer("/meta/n_vocab"))
                    .and_then(Value::as_u64)
                    .and_then(|n| usize::try_from(n).ok())
                    .filter(|&n| n > 0)
                    .ok_or_else(|| {
                        Error::new("/v1/models: no `data[0].meta.n_vocab` (llama-server tells it)")
                    })?;
                Ok(ServerInfo {
                    n_vocab: Some(n_vocab),
                    model: self.model.clone(),
                    props: Value::Object(props),
                })
            }
            Api::Openai
            | Api::Vllm
            | Api::Sglang
            | Api::MlxLm
            | Api::TransformersServe
            | Api::OllamaV1 => {
                let models = self.ok("/v1/models", None);
                let models = models.map_err(|e| wrong(e, "GET /v1/models"))?;
                let Some(Value::Array(data)) = models.get("data") else {
                    return Err(Error::new(
                        "/v1/models has no `data` list: not an OpenAI-compatible server (--api openai)",
                    ));
                };
                // `--api openai` against a server whose listing names it
                // (`owned_by`, api/dialect.rs) speaks that server's dialect.
                if self.api == Api::Openai
                    && let Some(owner) = data
                        .first()
                        .and_then(|m| m.get("owned_by"))
                        .and_then(Value::as_str)
                    && let Some(&api) = Api::ALL
                        .iter()
                        .find(|a| a.dialect().owned_by == Some(owner))
                {
                    self.api = api;
                }
                let model = match &self.model {
                    Some(m) => m.clone(),
                    None => data
                        .first()
                        .and_then(|m| m.get("id"))
                        .and_then(Value::as_str)
                        .map(String::from)
                        .ok_or_else(|| Error::new("/v1/models lists no model: give --model"))?,
                };
                self.model = Some(model.clone());
                Ok(ServerInfo {
                    n_vocab: None,
                    model: Some(model),
                    props: Value::Object(models),
                })
            }
            Api::Ollama => {
                let version = self.ok("/api/version", None);
                let version = version.map_err(|e| wrong(e, "GET /api/version"))?;
                if !version.contains_key("version") {
                    return Err(Error::new(
                        "/api/version has no `version`: not Ollama (--api ollama)",
                    ));
                }
                let model = self
                    .model
                    .clone()
                    .ok_or_else(|| Error::new("--api ollama needs --model NAME"))?;
                Ok(ServerInfo {
                    n_vocab: None,
                    model: Some(model),
                    props: Value::Object(version),
                })
            }
        }
    }

    /// The prompt's token ids when the server can say (llama-server
    /// tokenizes text as `/completion` does); `None` otherwise.
    pub fn prompt_ids(&mut self, prompt: &Prompt) -> Result<Option<Vec<i64>>, Error> {
        match (prompt, self.api) {
            (Prompt::Ids(ids), _) => Ok(Some(ids.clone())),
            (Prompt::Text(text), Api::LlamaServer) => {
                let body = json!({"content": text, "add_special": true});
                let answer = self.ok("/tokenize", Some(&body))?;
                let ids = answer
                    .get("tokens")
                    .and_then(Value::as_array)
                    .ok_or_else(|| Error::new("/tokenize: no `tokens` list in the answer"))?;
                ids.iter()
                    .enumerate()
                    .map(|(i, t)| {
                        t.as_i64().ok_or_else(|| {
                            Error::new(format_args!("/tokenize: `tokens[{i}]` = {t} is not an id"))
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()
                    .map(Some)
            }
            (Prompt::Text(_), _) => Ok(None),
        }
    }

    fn model_field(&self, body: &mut Map<String, Value>) {
        if let Some(m) = &self.model {
            body.insert("model".into(), json!(m));
        }
    }

    /// The exact body of a request: the user's request fields, then the
    /// probe's own fields over them.
    fn body(&self, request: &Map<String, Value>, prompt: &Prompt, own: Value) -> Value {
        let mut body = Map::new();
        match self.api {
            Api::Ollama => {
                self.model_field(&mut body);
                body.insert("prompt".into(), prompt.to_json());
                body.insert("raw".into(), json!(true));
                body.insert("stream".into(), json!(false));
                let mut options: Map<String, Value> = request.clone();
                let mut own = match own {
                    Value::Object(m) => m,
                    _ => Map::new(),
                };
                if let Some(Value::Object(o)) = own.remove("options") {
                    options.extend(o);
                }
                body.insert("options".into(), Value::Object(options));
                body.extend(own);
            }
            _ => {
                body.extend(request.clone());
                self.model_field(&mut body);
                body.insert("prompt".into(), prompt.to_json());
                if let Value::Object(own) = own {
                    body.extend(own);
                }
            }
        }
        Value::Object(body)
    }

    /// The top `k` tokens of the model's raw distribution, with their
    /// log-probabilities, most likely first.
    pub fn raw(&mut self, prompt: &Prompt, k: usize, seed: u64) -> Result<Vec<(Key, f64)>, Error> {
        let none = Map::new();
        match self.api {
            Api::LlamaServer => {
                let own = json!({"n_predict": 1, "n_probs": k, "post_sampling_probs": false, "seed": seed});
                let body = self.body(&none, prompt, own);
                let answer = self.ok("/completion", Some(&body))?;
                let first = first_prob(&answer, "/completion")?;
                entries(first, "top_logprobs", "logprob", "/completion")
            }
            Api::Ollama => {
                let own = json!({"options": {"num_predict": 1, "temperature": 0, "seed": seed},
                                 "logprobs": true, "top_logprobs": k});
                let body = self.body(&none, prompt, own);
                let answer = self.ok("/api/generate", Some(&body))?;
                let first = answer
                    .get("logprobs")
                    .and_then(|l| l.get(0))
                    .and_then(Value::as_object)
                    .ok_or_else(|| {
                        Error::new("/api/generate: no `logprobs[0]` (Ollama 0.12.11 or later returns them)")
                    })?;
                entries(first, "top_logprobs", "logprob", "/api/generate")
            }
            _ => self.raw_openai(prompt, k, seed),
        }
    }

    /// llama-server only: the candidates after the sampler chain, with the
    /// probabilities it draws from.
    pub fn post_sampling(
        &mut self,
        request: &Map<String, Value>,
        prompt: &Prompt,
        k: usize,
        seed: u64,
    ) -> Result<Vec<(Key, f64)>, Error> {
        let own = json!({"n_predict": 1, "n_probs": k, "post_sampling_probs": true, "seed": seed});
        let body = self.body(request, prompt, own);
        let answer = self.ok("/completion", Some(&body))?;
        let first = first_prob(&answer, "/completion")?;
        entries(first, "top_probs", "prob", "/completion")
    }

    /// llama-server only: the post-sampling probabilities of a chain of only
    /// a repeat penalty of 2 over the whole prompt (see `offset` in lib.rs).
    /// The window is the prompt's length: the server refuses
    /// `repeat_last_n: -1` (its schema's hard limit is ≥ 0).
    pub fn calibration(
        &mut self,
        prompt: &Prompt,
        prompt_len: usize,
        k: usize,
        seed: u64,
    ) -> Result<Vec<(Key, f64)>, Error> {
        let request = json!({"samplers": ["penalties"], "repeat_penalty": 2.0,
                             "repeat_last_n": prompt_len.max(1),
                             "frequency_penalty": 0.0, "presence_penalty": 0.0});
        let request = match request {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        self.post_sampling(&request, prompt, k, seed)
    }

    /// One token drawn by the server for `request` with `seed`.
    pub fn sample(
        &mut self,
        request: &Map<String, Value>,
        prompt: &Prompt,
        seed: u64,
    ) -> Result<Drawn, Error> {
        let key = match self.api {
            Api::LlamaServer => {
                let own = json!({"n_predict": 1, "n_probs": 1, "post_sampling_probs": true,
                                 "return_tokens": true, "seed": seed});
                let body = self.body(request, prompt, own);
                let answer = self.ok("/completion", Some(&body))?;
                let id = answer
                    .get("completion_probabilities")
                    .and_then(|c| c.get(0))
                    .and_then(|c| c.get("id"))
                    .or_else(|| answer.get("tokens").and_then(|t| t.get(0)))
                    .and_then(Value::as_i64)
                    .ok_or_else(|| {
                        Error::new("/completion: the answer names no sampled token (`completion_probabilities[0].id` or `tokens[0]`)")
                    })?;
                Key::Id(id)
            }
            Api::Ollama => {
                let own = json!({"options": {"num_predict": 1, "seed": seed},
                                 "logprobs": true, "top_logprobs": 1});
                let body = self.body(request, prompt, own);
                let answer = self.ok("/api/generate", Some(&body))?;
                answer
                    .get("logprobs")
                    .and_then(|l| l.pointer("/0/token"))
                    .or_else(|| answer.get("response"))
                    .and_then(Value::as_str)
                    .map(Key::from_text)
                    .ok_or_else(|| Error::new("/api/generate: no `response` in the answer"))?
            }
            _ => return self.sample_openai(request, prompt, seed),
        };
        Ok(Drawn { key, logprob: None })
    }
}

impl Session<'_> {
    /// `/v1/completions` with this dialect's way of asking for the top `k`
    /// (`k = usize::MAX`: the whole vocabulary, where the dialect can ask).
    fn raw_openai(
        &mut self,
        prompt: &Prompt,
        k: usize,
        seed: u64,
    ) -> Result<Vec<(Key, f64)>, Error> {
        let none = Map::new();
        let dialect = self.api.dialect();
        let mut own = json!({"max_tokens": 1, "temperature": 0, "seed": seed});
        let ask = match (k, dialect.whole) {
            (usize::MAX, Some(all)) => json!(all),
            (usize::MAX, None) => json!(dialect.max_top.unwrap_or(20)),
            (k, _) => json!(k),
        };
        dialect.ask_top(&mut own, ask);
        let body = self.body(&none, prompt, own);
        let answer = match self.ok("/v1/completions", Some(&body)) {
            Ok(a) => a,
            Err(e) => {
                let text = e.to_string();
                // vLLM: "Requested sample logprobs of N, which is greater
                // than max allowed: M" (vllm/sampling_params.py
                // `_validate_logprobs`, 0.33.0): ask for M.
                if let Some(m) = text
                    .split("max allowed: ")
                    .nth(1)
                    .and_then(|t| t.split(|c: char| !c.is_ascii_digit()).next())
                    .and_then(|t| t.parse::<usize>().ok())
                    .filter(|&m| m > 0 && k == usize::MAX)
                {
                    return self.raw_openai(prompt, m, seed);
                }
                // mlx_lm.server 0.32.2 `_validate`: "logprobs must be of
                // type bool": it is mlx_lm.server; speak its dialect.
                if text.contains("logprobs must be of type bool") && self.api != Api::MlxLm {
                    self.api = Api::MlxLm;
                    return self.raw_openai(prompt, k.min(11), seed);
                }
                return Err(e);
            }
        };
        let logprobs = answer
            .get("choices")
            .and_then(|c| c.get(0))
            .and_then(|c| c.get("logprobs"))
            .filter(|l| !l.is_null());
        let Some(logprobs) = logprobs else {
            return Err(Error::new(format_args!(
                "/v1/completions: the answer has no `choices[0].logprobs`: {}",
                dialect.no_logprobs
            )));
        };
        // llama-server and mlx_lm.server answer in the chat format (a
        // `content` list with ids; mlx-lm's in argpartition order, sorted
        // here), vLLM and OpenAI in the legacy one (a map from token text to
        // log-probability).
        if let Some(first) = logprobs.pointer("/content/0").and_then(Value::as_object) {
            let mut out = entries(first, "top_logprobs", "logprob", "/v1/completions")?;
            out.sort_by(|a, b| b.1.total_cmp(&a.1));
            return Ok(out);
        }
        let top = logprobs
            .pointer("/top_logprobs/0")
            .and_then(Value::as_object)
            .ok_or_else(|| {
                Error::new("/v1/completions: no `choices[0].logprobs.top_logprobs[0]` (does the server return logprobs?)")
            })?;
        let mut out = Vec::with_capacity(top.len());
        for (token, lp) in top {
            let lp = number(lp, &format!("top_logprobs[0][{token:?}]"))?;
            out.push((Key::from_text(token), lp));
        }
        out.sort_by(|a, b| b.1.total_cmp(&a.1));
        Ok(out)
    }

    /// One token drawn through `/v1/completions`: the generated token, read
    /// where the dialect puts it.
    fn sample_openai(
        &mut self,
        request: &Map<String, Value>,
        prompt: &Prompt,
        seed: u64,
    ) -> Result<Drawn, Error> {
        let dialect = self.api.dialect();
        let mut own = json!({"max_tokens": 1, "seed": seed});
        dialect.ask_draw(&mut own);
        let body = self.body(request, prompt, own);
        let answer = self.ok("/v1/completions", Some(&body))?;
        let choice = answer.get("choices").and_then(|c| c.get(0));
        let logprob = match (dialect.draw_logprob.as_ref(), choice) {
            (Some(d), Some(c)) if d.applies(request) => c
                .pointer(d.pointer)
                .map(|v| number(v, &format!("choices[0]{}", d.pointer)))
                .transpose()?,
            _ => None,
        };
        // With `logprobs: true` and no `top_logprobs`, mlx_lm.server's
        // `content[0]` is `{id: the generated token, logprob}`; llama-server's
        // is the generated token too.
        if let Some(id) = choice
            .and_then(|c| c.pointer("/logprobs/content/0/id"))
            .and_then(Value::as_i64)
        {
            return Ok(Drawn {
                key: Key::Id(id),
                logprob,
            });
        }
        choice
            .and_then(|c| c.pointer("/logprobs/tokens/0"))
            .or_else(|| choice.and_then(|c| c.get("text")))
            .and_then(Value::as_str)
            .map(|t| Drawn {
                key: Key::from_text(t),
                logprob,
            })
            .ok_or_else(|| Error::new("/v1/completions: no `choices[0].text`"))
    }
}

/// One draw ([`Session::sample`]): the token, and its raw log-probability
/// where the dialect returns it ([`self::dialect::DrawLogprob`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Drawn {
    pub key: Key,
    pub logprob: Option<f64>,
}

/// FastAPI's `{"detail": ...}`: a string, or a list of `{loc, msg}`
/// validation errors, as one short line.
fn fastapi_detail(d: &Value) -> String {
    match d {
        Value::String(s) => s.chars().take(300).collect(),
        Value::Array(items) => {
            let parts: Vec<String> = items
                .iter()
                .take(3)
                .map(|item| {
                    let loc = item
                        .get("loc")
                        .and_then(Value::as_array)
                        .map(|l| {
                            l.iter()
                                .map(|p| p.as_str().map_or(p.to_string(), String::from))
                                .collect::<Vec<_>>()
                                .join(".")
                        })
                        .unwrap_or_default();
                    let msg = item.get("msg").and_then(Value::as_str).unwrap_or("invalid");
                    if loc.is_empty() {
                        msg.to_string()
                    } else {
                        format!("{loc}: {msg}")
                    }
                })
                .collect();
            let more = items.len().saturating_sub(3);
            let mut text = parts.join("; ");
            if more > 0 {
                text.push_str(&format!(" (and {more} more)"));
            }
            text
        }
        other => short(other),
    }
}

fn short(v: &Value) -> String {
    v.to_string().chars().take(200).collect()
}

fn number(v: &Value, what: &str) -> Result<f64, Error> {
    v.as_f64()
        .ok_or_else(|| Error::new(format_args!("`{what}` = {} is not a number", short(v))))
}

pub(crate) fn first_prob<'a>(
    answer: &'a Map<String, Value>,
    path: &str,
) -> Result<&'a Map<String, Value>, Error> {
    answer
        .get("completion_probabilities")
        .and_then(|c| c.get(0))
        .and_then(Value::as_object)
        .ok_or_else(|| {
            Error::new(format_args!(
                "{path}: no `completion_probabilities[0]` in the answer (it generated no token?)"
            ))
        })
}

/// `(key, value)` from a list of `{"id" | "token", field}` objects.
pub(crate) fn entries(
    first: &Map<String, Value>,
    list: &str,
    field: &str,
    path: &str,
) -> Result<Vec<(Key, f64)>, Error> {
    let items = first
        .get(list)
        .and_then(Value::as_array)
        .ok_or_else(|| Error::new(format_args!("{path}: no `{list}` list in the answer")))?;
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let key = match (item.get("id").and_then(Value::as_i64), item.get("token")) {
            (Some(id), _) => Key::Id(id),
            (None, Some(Value::String(t))) => Key::from_text(t),
            _ => {
                return Err(Error::new(format_args!(
                    "{path}: `{list}[{i}]` has neither an `id` nor a `token`: {}",
                    short(item)
                )));
            }
        };
        let value = item
            .get(field)
            .ok_or_else(|| Error::new(format_args!("{path}: `{list}[{i}]` has no `{field}`")))?;
        out.push((key, number(value, &format!("{list}[{i}].{field}"))?));
    }
    Ok(out)
}
