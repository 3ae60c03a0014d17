//! Ollama (`ollama`): the options Ollama layers for a request — its
//! defaults, the model's own parameters, the request — turned into the
//! llama-server request it sends, run through llama.cpp's chain.
//!
//! # Versions and models covered
//!
//! Ollama v0.30.0 to v0.33.0-rc2 (`version`, default `"0.33.0-rc2"`, the tag
//! of commit fb30760996871fa9460115c753afd2c60d4ab0f7; v0.32.15 is the newest
//! release and has the same rules), for **GGUF models**: since commit
//! 9db4bdbad ("runner: Remove CGO engines, use llama-server exclusively for
//! GGML models", first in v0.30.0-rc32 and v0.30.0) every GGUF model runs on
//! a llama-server Ollama launches. Earlier versions ran GGUF models on
//! Ollama's own runners and are refused here; safetensors models run on the
//! MLX engine (its own Go sampler) and are not covered. Every rule below was
//! read at v0.30.0, v0.32.9, v0.32.10 and v0.33.0-rc2 and is the same at
//! every release tag in between (`DefaultOptions`, `FromMap`, the `Options`
//! struct, `modelOptionsWithEmbeddingBatchDefault`, `FromChatRequest` /
//! `FromCompleteRequest` and `llamaServerCompletionRequest` compared tag by
//! tag), except the one below.
//!
//! # The rules
//!
//! * api/types.go `DefaultOptions`: temperature 0.8, top_k 40, top_p 0.9,
//!   typical_p 1.0, repeat_last_n 64, presence_penalty 0, frequency_penalty
//!   0, seed -1; `min_p` is not set there, so 0. `repeat_penalty` is **1.1
//!   up to v0.32.9** and **1.0 from v0.32.10** (v0.32.10-rc0 on): commit
//!   6a261db7d "api: stop applying repeat_penalty 1.1 to models that don't
//!   set one".
//! * server/routes.go `modelOptionsWithEmbeddingBatchDefault`: the options a
//!   request runs with are `DefaultOptions()`, then `opts.FromMap(model.Options)`
//!   — the model's published parameters (the `application/vnd.ollama.image.params`
//!   layer: its Modelfile `PARAMETER`s, what `ollama show --parameters`
//!   prints), read by server/images.go with `json.Decoder` — then
//!   `opts.FromMap(requestOpts)`. /api/generate and /api/chat pass the
//!   request's `options` object as `requestOpts`.
//! * api/types.go `Options.FromMap`: JSON numbers arrive as float64; an int
//!   option takes `int64(value)` (truncation), a float32 option
//!   `float32(value)`; a value of the wrong JSON type is an error
//!   (`option "top_k" must be of type integer`, likewise for a bad model
//!   parameter, which fails every request to that model); `null` keeps the
//!   layer below; an unknown option is logged and ignored (refused here, as
//!   everywhere in this project). Options that do not shape sampling
//!   (`num_ctx`, `stop`, `num_predict`, ...) are type-checked and ignored.
//! * openai/openai.go `FromChatRequest` (/v1/chat/completions, via
//!   middleware/openai.go, which re-encodes the result as JSON): the
//!   `options` it builds always hold `temperature` and `top_p` (the
//!   request's, or 1.0 when absent or null), and `seed`,
//!   `frequency_penalty`, `presence_penalty` when the request sets them. So
//!   the model's temperature and top_p never apply there, but its top_k,
//!   min_p, typical_p, repeat settings (and penalties and seed the request
//!   leaves out) do. Every other request field is dropped by Go's decoder.
//! * openai/openai.go `FromCompleteRequest` (/v1/completions):
//!   `temperature` (a `*float32`; 1.0 when absent), `top_p` (a `float32`;
//!   1.0 when absent, null **or 0**), and `frequency_penalty` and
//!   `presence_penalty` always (plain `float32`s: 0 when absent), so the
//!   model's penalties never apply there.
//! * llm/llama_server.go `llamaServerCompletionRequest`: Ollama sends
//!   `temperature`, `top_k`, `top_p`, `min_p`, `repeat_penalty`,
//!   `repeat_last_n`, `frequency_penalty`, `presence_penalty` and `seed`
//!   always, and `typical_p` only when it is not 0 (`omitempty`), to its
//!   llama-server's `/completion` (which parses them as llamacpp-sampling's
//!   [`LlamaCpp`] does). Go's JSON encoder cannot write an infinite float32, so such a
//!   request fails in Ollama. A chat model without an Ollama renderer (an
//!   /api/chat or /v1/chat/completions request) may instead go to
//!   llama-server's `/v1/chat/completions` (`llamaServerChatRequest`), which
//!   sends `typical_p` even when it is 0; the `/completion` body is the one
//!   reproduced, and a route note says when the two differ.
//!
//! Ollama pins llama.cpp b9452 (v0.30.0) to b10488 (v0.32.15, v0.33.0-rc2)
//! in `LLAMA_CPP_VERSION` for that llama-server; the chain replayed is the
//! one of llama.cpp 0c1e57098 (see the crate docs), and the trees' sampler
//! code was not compared here.

use serde_json::{Map, Value};

use parity_core::{
    Against, Context, Described, Distribution, Error, Explanation, Info, Logits, Route, Semantics,
};

use llamacpp_sampling::{LlamaCpp, ServerParams};

use crate::api;
use crate::layers::{Fields, Layer, Layered, Source};
use crate::openai;
use crate::version::Span;
pub use crate::version::Version;

/// The releases covered: v0.30.0-rc32, the first tag with commit 9db4bdbad
/// (every GGUF model on llama-server), to v0.33.0-rc2 (the tag of commit
/// fb3076099), the newest verified and the default.
pub const VERSIONS: Span = Span {
    oldest: Version::new(0, 30, 0, Some(32)),
    newest: Version::new(0, 33, 0, Some(2)),
    examples: ["0.32.9", "0.33.0-rc2"],
    before: "Ollama before v0.30.0 (v0.30.0-rc32) ran GGUF models on its own runners, not llama-server (commit 9db4bdbad); not covered",
    after: "newer than the newest version verified, 0.33.0-rc2",
};

/// An Ollama endpoint that maps a request onto options in its own way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    /// `/api/generate`: the request's `options` object over the model's
    /// parameters.
    Generate,
    /// `/api/chat`: the same layering as [`Endpoint::Generate`].
    Chat,
    /// `/v1/chat/completions` (`FromChatRequest`).
    OpenAiChat,
    /// `/v1/completions` (`FromCompleteRequest`).
    OpenAiCompletions,
}

impl Endpoint {
    /// The route compare names.
    pub const fn route(self) -> parity_core::Endpoint {
        use parity_core::{Endpoint, Protocol};
        Endpoint::http(
            crate::SERVER,
            match self {
                Self::Generate => Protocol::Native("/api/generate (options)"),
                Self::Chat => Protocol::Native("/api/chat (options)"),
                Self::OpenAiChat => Protocol::OpenaiChat,
                Self::OpenAiCompletions => Protocol::OpenaiCompletions,
            },
        )
    }

    fn is_openai(self) -> bool {
        matches!(self, Self::OpenAiChat | Self::OpenAiCompletions)
    }
}

/// The options that reach llama-server's sampler: the sampling ones of
/// [`api::OPTIONS`] (every field of Ollama's `Options`, the same from
/// v0.30.0 to v0.33.0-rc2).
fn sampling() -> impl Iterator<Item = &'static str> {
    api::OPTIONS.iter().filter(|o| o.sampling).map(|o| o.name)
}

parity_core::params! {
    /// The `ollama` semantics' params: Ollama's ten sampling options (the
    /// request's `options`, over `DefaultOptions()` at `version` and the
    /// model's parameters; [`Options`] layers them) and this project's
    /// `version` and `draws` ([`Ollama::request`] reads them): each once,
    /// with its default at the newest version and what `compare semantics`
    /// says of it.
    #[derive(Debug, Clone, PartialEq)]
    struct OllamaParams {
        /// `Temperature` (float32).
        temperature: f32 = 0.8 => "sent as llama-server temperature",
        /// `TopK` (int).
        top_k: i64 = 40 => "sent as top_k",
        /// `TopP` (float32).
        top_p: f32 = 0.9 => "sent as top_p",
        /// `MinP` (float32; not set in `DefaultOptions`).
        min_p: f32 = 0.0 => "sent as min_p (so llama-server's 0.05 is off)",
        /// `TypicalP` (float32; `omitempty` in the request to llama-server).
        typical_p: f32 = 1.0 => "sent unless 0 (then llama-server's 1.0)",
        /// `RepeatLastN` (int).
        repeat_last_n: i64 = 64 => "sent as repeat_last_n; -1 is refused by llama-server",
        /// `RepeatPenalty` (float32): [`Version::default_repeat_penalty`].
        repeat_penalty: f32 = 1.0 => "sent as repeat_penalty; default 1.1 up to v0.32.9",
        /// `PresencePenalty` (float32).
        presence_penalty: f32 = 0.0 => "sent as presence_penalty",
        /// `FrequencyPenalty` (float32).
        frequency_penalty: f32 = 0.0 => "sent as frequency_penalty",
        /// `Seed` (int).
        seed: i64 = -1 => "sent as seed; -1 is random",
        /// Whose defaults apply (read by [`Ollama::request`] from the params).
        #[allow(dead_code)]
        version: Version ["\"0.33.0-rc2\""] = VERSIONS.newest
            => "(not an Ollama option) Ollama 0.30.0 to 0.33.0-rc2: the defaults of that version",
        /// Seeded draws to replay (handed by [`Ollama::request`] to
        /// llama-server's parser as they are).
        #[allow(dead_code)]
        draws: Option<usize>
            => "(not an Ollama option) replay this many seeded draws; needs seed",
    }
}

crate::layers::holds!(OllamaParams: temperature, top_k, top_p, min_p, typical_p, repeat_last_n, repeat_penalty, presence_penalty, frequency_penalty, seed);

/// The ten sampling options as Ollama holds them, layer by layer.
type Options = Layered<OllamaParams>;

/// The llama-server `/completion` body's sampling fields, as
/// `llamaServerCompletionRequest` writes them: `typical_p` `omitempty`.
fn to_request(o: &mut Options) -> Result<Map<String, Value>, Error> {
    o.finite("llama-server", "")?;
    let p = &o.params;
    let mut out = Map::new();
    for (name, v) in [
        ("temperature", p.temperature),
        ("top_p", p.top_p),
        ("min_p", p.min_p),
        ("typical_p", p.typical_p),
        ("repeat_penalty", p.repeat_penalty),
        ("presence_penalty", p.presence_penalty),
        ("frequency_penalty", p.frequency_penalty),
    ] {
        if name == "typical_p" && v == 0.0 {
            continue; // omitempty
        }
        out.insert(name.to_string(), Value::from(f64::from(v)));
    }
    for (name, v) in [
        ("top_k", p.top_k),
        ("repeat_last_n", p.repeat_last_n),
        ("seed", p.seed),
    ] {
        out.insert(name.to_string(), Value::from(v));
    }
    Ok(out)
}

/// The `options` map an OpenAI endpoint builds from a request body
/// (`FromChatRequest` / `FromCompleteRequest`, the same at v0.30.0 to
/// v0.33.0-rc2 as in the Go engine's and the MLX runner's Ollama:
/// [`crate::openai`]).
fn openai_options(
    endpoint: Endpoint,
    request: &Map<String, Value>,
) -> Result<Map<String, Value>, Error> {
    match endpoint {
        Endpoint::OpenAiCompletions => openai::completion_options(request),
        _ => openai::chat_options(request),
    }
}

/// The options Ollama runs with at `endpoint`, layer by layer.
fn layered(
    endpoint: Endpoint,
    version: Version,
    model: Option<&Map<String, Value>>,
    request: &Map<String, Value>,
) -> Result<Options, Error> {
    let mut o = Options::defaults(version, Fields::Current);
    if let Some(m) = model {
        o.layer(m, Layer::Model)?;
    }
    if endpoint.is_openai() {
        let options = openai_options(endpoint, request)?;
        o.layer(&options, Layer::Request)?;
        // What the endpoint filled in itself is not the request's.
        for field in ["temperature", "top_p"] {
            let unset = request.get(field).is_none_or(Value::is_null);
            // /v1/completions: `if r.TopP != 0.0` on the float32.
            let zero_top_p = endpoint == Endpoint::OpenAiCompletions
                && field == "top_p"
                && request
                    .get(field)
                    .and_then(Value::as_f64)
                    .is_some_and(|p| p as f32 == 0.0);
            if unset || zero_top_p {
                o.mark(field, Source::Endpoint);
            }
        }
        if endpoint == Endpoint::OpenAiCompletions {
            for field in ["frequency_penalty", "presence_penalty"] {
                if request.get(field).is_none_or(Value::is_null) {
                    o.mark(field, Source::Endpoint);
                }
            }
        }
    } else {
        o.layer(request, Layer::Request)?;
    }
    Ok(o)
}

/// The sampling fields of the llama-server `/completion` request Ollama
/// sends at `endpoint`, given its defaults at `version`, the model's
/// published parameters `model` (the JSON object of its params layer; `None`
/// when it has none) and `request`: the `options` object for
/// [`Endpoint::Generate`] and [`Endpoint::Chat`], the request body for the
/// OpenAI endpoints. Errors name the field and quote the value: a wrong
/// type in any layer (Ollama's 400, or its error for every request to a
/// model with a bad parameter), an unknown option (which Ollama would log
/// and ignore), a float32 overflow Ollama cannot encode.
pub fn merge(
    endpoint: Endpoint,
    version: Version,
    model: Option<&Map<String, Value>>,
    request: &Map<String, Value>,
) -> Result<Map<String, Value>, Error> {
    to_request(&mut layered(endpoint, version, model, request)?)
}

/// Ollama's next-token sampling for a GGUF model: its options layered over
/// its defaults (at a [`Version`]) and the model's own parameters, sent to
/// llama-server, run through llama.cpp's chain.
#[derive(Debug, Clone)]
pub struct Ollama {
    model: Option<Map<String, Value>>,
    version: Version,
}

impl Default for Ollama {
    /// A model with no parameters, at the newest version.
    fn default() -> Self {
        Self {
            model: None,
            version: VERSIONS.newest,
        }
    }
}

impl Ollama {
    /// Ollama serving a model whose published parameters (the JSON object
    /// of its params layer, e.g. `{"temperature": 0.6, "top_k": 20,
    /// "stop": ["<|im_end|>"]}`) are `params`. They are checked now as
    /// `Options.FromMap` would check them; the error names the parameter
    /// and quotes its value.
    pub fn with_model_params(params: Map<String, Value>) -> Result<Self, Error> {
        Options::defaults(VERSIONS.newest, Fields::Current).layer(&params, Layer::Model)?;
        Ok(Self {
            model: Some(params),
            version: VERSIONS.newest,
        })
    }

    /// The same, at another Ollama version (what `from_request` and params
    /// without `version` use).
    pub fn at_version(mut self, version: Version) -> Self {
        self.version = version;
        self
    }

    /// The model's parameters, when given.
    pub fn model_params(&self) -> Option<&Map<String, Value>> {
        self.model.as_ref()
    }

    /// The version used when params do not name one.
    pub fn version(&self) -> Version {
        self.version
    }

    /// The llama-server request for these options (`version` and `draws`
    /// read and set aside first).
    fn request(&self, params: &Map<String, Value>) -> Result<Map<String, Value>, Error> {
        let mut version = self.version;
        let mut options = Map::new();
        let mut draws = None;
        for (key, val) in params {
            match key.as_str() {
                "draws" => draws = Some(val.clone()),
                "version" if val.is_null() => {}
                "version" => version = VERSIONS.read(val)?,
                _ => {
                    options.insert(key.clone(), val.clone());
                }
            }
        }
        let mut out = merge(Endpoint::Chat, version, self.model.as_ref(), &options)?;
        if let Some(d) = draws {
            out.insert("draws".to_string(), d);
        }
        Ok(out)
    }

    /// One route: `endpoint`'s reading of an OpenAI-style `request`.
    fn route(&self, endpoint: Endpoint, request: &Map<String, Value>) -> Route<ServerParams> {
        let consumed = |k: &str| {
            if endpoint.is_openai() {
                crate::openai::reads(k)
            } else {
                api::is_sampling(k)
            }
        };
        // The OpenAI endpoints read the whole body; the native ones take the
        // request's sampling fields as their `options`.
        let input: Map<String, Value> = if endpoint.is_openai() {
            request.clone()
        } else {
            parity_core::params::only(request, consumed)
        };
        let constrained = match endpoint {
            Endpoint::Generate | Endpoint::Chat => crate::format::native(request),
            Endpoint::OpenAiChat => crate::format::openai_chat(request),
            Endpoint::OpenAiCompletions => Ok(()),
        };
        let layers =
            constrained.and_then(|()| layered(endpoint, self.version, self.model.as_ref(), &input));
        let params = layers
            .clone()
            .and_then(|mut o| to_request(&mut o))
            .and_then(|r| LlamaCpp.parse_params(&r));
        // a native `format` is read too, by crate::format
        let read = |k: &str| consumed(k) || (!endpoint.is_openai() && k == "format");
        let mut route = Route::new(endpoint.route(), params).ignoring_all_but(request, read);
        if let Ok(o) = &layers {
            route.notes = self.notes(endpoint, o);
        }
        route
    }

    /// What the layers decided, for the reader of a route.
    fn notes(&self, endpoint: Endpoint, o: &Options) -> Vec<String> {
        let mut notes = Vec::new();
        let by = |source: Source| -> Vec<String> {
            sampling()
                .filter(|n| o.source(n) == source)
                .map(|n| format!("{n} {}", o.show(n).unwrap_or_default()))
                .collect()
        };
        for f in by(Source::Endpoint) {
            notes.push(format!(
                "{f}: this endpoint's value when the request leaves it out"
            ));
        }
        if let Some(m) = &self.model {
            let overwritten: Vec<&str> = sampling()
                .filter(|n| m.get(*n).is_some_and(|v| !v.is_null()) && o.source(n) != Source::Model)
                .collect();
            let from_model = by(Source::Model);
            if !from_model.is_empty() {
                notes.push(format!(
                    "from the model's parameters: {}",
                    from_model.join(", ")
                ));
            }
            if !overwritten.is_empty() {
                notes.push(format!(
                    "the model's {} overridden by {}",
                    overwritten.join(", "),
                    if endpoint.is_openai() {
                        "the request or this endpoint"
                    } else {
                        "the request's options"
                    }
                ));
            }
        }
        let defaults = by(Source::Default)
            .into_iter()
            .filter(|f| !f.starts_with("presence_penalty") && !f.starts_with("frequency_penalty"))
            .collect::<Vec<_>>();
        if !defaults.is_empty() {
            notes.push(format!(
                "Ollama {} defaults: {}",
                self.version,
                defaults.join(", ")
            ));
        }
        if o.source("repeat_penalty") == Source::Default
            && self.version < Version::REPEAT_PENALTY_1_0
        {
            notes.push(
                "repeat_penalty 1.1 is Ollama's default up to v0.32.9 (1.0 from v0.32.10)".into(),
            );
        }
        if o.params.typical_p == 0.0
            && endpoint != Endpoint::Generate
            && endpoint != Endpoint::OpenAiCompletions
        {
            notes.push("typical_p 0 is omitted (off) on llama-server's /completion, but sent (keeping one token) when the model's chat goes through llama-server's own chat template".into());
        }
        if endpoint == Endpoint::Chat {
            notes.push("/api/generate layers its options the same way".into());
        }
        notes
    }
}

static OLLAMA_INFO: Info = Info {
    name: "ollama",
    engine: "Ollama v0.30.0 to v0.33.0-rc2 (fb307609; version param), GGUF models on llama-server (safetensors/MLX not covered); options over the model's parameters, sent to llama-server; chain of llama.cpp 0c1e57098",
    summary: "Ollama's defaults (temperature 0.8, top_k 40, top_p 0.9, min_p 0, repeat_last_n 64; repeat_penalty 1.1 up to v0.32.9, 1.0 from v0.32.10), then the model's parameters, then the request's options, sent to llama-server and run through its chain",
    verified_against: "the request Ollama sends for empty options, recorded through the real llama.cpp chain (case ollama_defaults in fixtures/llamacpp/cases.jsonl); the layering and per-version defaults read from the Ollama source at v0.30.0, v0.32.9, v0.32.10 and v0.33.0-rc2",
    params: OllamaParams::PARAMS,
};

impl Semantics for Ollama {
    type Params = ServerParams;

    fn info(&self) -> &'static Info {
        &OLLAMA_INFO
    }

    /// `params` are the request's `options` (plus `version` and `draws`),
    /// layered over the defaults and the model's parameters.
    fn parse_params(&self, params: &Map<String, Value>) -> Result<ServerParams, Error> {
        LlamaCpp.parse_params(&self.request(params)?)
    }

    fn distribution(
        &self,
        logits: &Logits,
        context: &Context<'_>,
        params: &ServerParams,
    ) -> Result<Distribution, Error> {
        LlamaCpp.distribution(logits, context, params)
    }

    fn from_generate(&self, kwargs: &Map<String, Value>) -> Option<Result<ServerParams, Error>> {
        // Ollama's option names are llama-server's for everything generate
        // kwargs can say.
        let options = llamacpp_sampling::request_for_generate(kwargs)?;
        Some(self.parse_params(&options))
    }

    fn seed(&self) -> &'static [parity_core::RouteSeed] {
        crate::seed::LLAMA_SERVER
    }

    /// Ollama's OpenAI endpoints (openai/openai.go `FromChatRequest`,
    /// `FromCompleteRequest`) and its own `/api/chat` (and `/api/generate`,
    /// the same), whose `options` are this semantics' params — each over
    /// the model's parameters when given ([`Ollama::with_model_params`]).
    /// Ollama never reads a generation config.
    fn from_request(
        &self,
        request: &Map<String, Value>,
        _generation_config: Option<&Map<String, Value>>,
    ) -> Vec<Route<ServerParams>> {
        [
            Endpoint::OpenAiChat,
            Endpoint::OpenAiCompletions,
            Endpoint::Chat,
        ]
        .into_iter()
        .map(|e| self.route(e, request))
        .collect()
    }

    fn describe(&self, params: &ServerParams) -> Option<Described> {
        LlamaCpp.describe(params)
    }

    /// llama.cpp's reasons (the chain is llama-server's), with Ollama's own
    /// fix: its options cannot order the chain, so llama.cpp's recipe
    /// (`samplers`) is not one ([`matching_options`]).
    fn explain(&self, row: &Against<'_>, params: &ServerParams) -> Explanation {
        let mut explanation = LlamaCpp.explain(row, params);
        explanation.fix = matching_options(row.kwargs, row.context.input_ids().len())
            .ok()
            .map(|params| parity_core::Fix {
                text: RECIPE.into(),
                params,
            });
        explanation
    }
}

/// Ollama's fix, in words.
const RECIPE: &str = "send temperature, top_k (0 when transformers' top-k is off), top_p, min_p, typical_p and repeat_penalty with transformers' values, and repeat_last_n at least the context length (Ollama's defaults: temperature 0.8, top_k 40, top_p 0.9, repeat_last_n 64); exact except where top_k cuts a tie or top_p/min_p sit on a float rounding boundary";

/// The Ollama options that reproduce transformers' `generate(**kwargs)` on
/// the llama-server path, for a context of `context_len` ids, or what stands
/// in the way: a sampler llama.cpp lacks ([`llamacpp_sampling::translate::unmatched`]),
/// or a temperature other than 1 with top-p, min-p or typical-p. Ollama
/// sends no `samplers` (llm/llama_server.go `llamaServerCompletionRequest`),
/// so llama-server runs its default order, temperature last
/// (common/common.h `common_params_sampling::samplers`), where transformers
/// tempers first; top-k keeps the same tokens at any temperature.
fn matching_options(
    kwargs: &Map<String, Value>,
    context_len: usize,
) -> Result<Map<String, Value>, Vec<String>> {
    use llamacpp_sampling::translate;
    let mut blocked = translate::unmatched(kwargs);
    let hf = translate::resolved(kwargs)?;
    blocked.extend(translate::temperature_last(
        &hf,
        "Ollama cannot order llama-server's chain, which applies the temperature after them (transformers before)",
    ));
    if !blocked.is_empty() {
        return Err(blocked);
    }
    let mut m = translate::filters(&hf);
    m.insert("repeat_penalty".into(), Value::from(hf.repetition_penalty));
    m.insert("repeat_last_n".into(), Value::from(context_len.max(1)));
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    #[test]
    fn the_fix_is_ollama_options_not_a_llama_server_chain() {
        let kw = obj(json!({"do_sample": true, "temperature": 0.7, "top_k": null}));
        let m = matching_options(&kw, 38).expect("matchable");
        assert!(!m.contains_key("samplers"));
        assert_eq!(
            Value::Object(m.clone()),
            json!({"temperature": 0.7, "top_k": 0, "top_p": 1.0, "min_p": 0.0,
                   "typical_p": 1.0, "repeat_penalty": 1.0, "repeat_last_n": 38})
        );
        // Every key is an option Ollama reads.
        assert!(Ollama::default().parse_params(&m).is_ok());
        let kw = obj(json!({"do_sample": true, "temperature": 0.7, "top_p": 0.9}));
        let e = matching_options(&kw, 38).expect_err("temperature last");
        assert!(e[0].starts_with("temperature 0.7 with top_p"), "{e:?}");
    }

    /// A native `format` is read, not ignored: none when `""`, a grammar
    /// (refused) when `"json"` (crate::format); the options are unchanged.
    #[test]
    fn a_native_format_is_read_and_json_is_refused() {
        let o = Ollama::default();
        let native = |r: &Route<ServerParams>| r.endpoint == Endpoint::Chat.route();
        let none = o.from_request(&obj(json!({"temperature": 0.7, "format": ""})), None);
        let r = none
            .iter()
            .find(|r| native(r))
            .expect("the /api/chat route");
        assert!(r.params.is_ok(), "{:?}", r.params);
        assert!(
            !r.ignored.contains(&"format".to_string()),
            "{:?}",
            r.ignored
        );
        let json = o.from_request(&obj(json!({"temperature": 0.7, "format": "json"})), None);
        let r = json
            .iter()
            .find(|r| native(r))
            .expect("the /api/chat route");
        let e = r.params.as_ref().expect_err("a grammar").to_string();
        assert!(e.starts_with("`format` = \"json\""), "{e}");
    }

    #[test]
    fn empty_options_send_ollamas_defaults() {
        let r = merge(Endpoint::Chat, VERSIONS.newest, None, &Map::new()).expect("defaults");
        let v = Value::Object(r);
        assert_eq!(v["top_k"], json!(40));
        assert_eq!(v["min_p"], json!(0.0));
        assert_eq!(v["seed"], json!(-1));
        // 0.9 and 0.8 as float32, widened exactly
        assert_eq!(v["top_p"], json!(f64::from(0.9f32)));
        assert_eq!(v["temperature"], json!(f64::from(0.8f32)));
        assert_eq!(v["typical_p"], json!(1.0));
        assert_eq!(v["repeat_penalty"], json!(1.0));
    }

    #[test]
    fn ints_truncate_typical_zero_is_omitted_and_types_are_checked() {
        let o = obj(json!({"top_k": 7.9, "typical_p": 0}));
        let r = merge(Endpoint::Chat, VERSIONS.newest, None, &o).expect("ok");
        assert_eq!(r["top_k"], json!(7));
        assert!(!r.contains_key("typical_p"));
        let o = obj(json!({"top_k": "7"}));
        let e = merge(Endpoint::Chat, VERSIONS.newest, None, &o)
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "`top_k` = \"7\": Ollama refuses it (option \"top_k\" must be of type integer)"
        );
        // num_ctx is an Ollama option that does not shape sampling: checked, ignored.
        let o = obj(json!({"num_ctx": 4096, "stop": ["\n"]}));
        assert!(merge(Endpoint::Chat, VERSIONS.newest, None, &o).is_ok());
        let o = obj(json!({"num_ctx": "big"}));
        assert!(merge(Endpoint::Chat, VERSIONS.newest, None, &o).is_err());
        let o = obj(json!({"num_ctxx": 4096}));
        assert!(merge(Endpoint::Chat, VERSIONS.newest, None, &o).is_err());
    }

    #[test]
    fn versions_parse_within_the_covered_range() {
        assert_eq!(VERSIONS.parse("0.33.0-rc2").expect("ok"), VERSIONS.newest);
        assert_eq!(VERSIONS.parse("v0.30.0").expect("ok").to_string(), "0.30.0");
        assert!(VERSIONS.parse("0.30.0-rc31").is_err());
        assert!(VERSIONS.parse("0.29.9").is_err());
        assert!(VERSIONS.parse("0.33.0").is_err());
        assert!(VERSIONS.parse("0.32").is_err());
        assert!(VERSIONS.parse("0.32.10-rc0").expect("ok") >= Version::REPEAT_PENALTY_1_0);
        assert!(VERSIONS.parse("0.32.9").expect("ok") < Version::REPEAT_PENALTY_1_0);
    }
}
