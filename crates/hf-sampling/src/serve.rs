//! What `transformers serve` (5.23.0) samples with for an OpenAI-style
//! request body, or how it refuses it.
//!
//! Every rule is read from the transformers 5.23.0 wheel
//! (`transformers/cli/serving/`) and checked against the real server's
//! answers to 53 bodies × 2 endpoints × 2 models, recorded by
//! `scripts/reference/serve/record.py` into `fixtures/serve/requests.jsonl`
//! (`tests/it/request_serve.rs` replays every one; see
//! `docs/engines/transformers-serve.md`).
//!
//! 1. **Validation** (`utils.py` `BaseHandler._validate_request`): a body
//!    key outside the endpoint's params class is refused with HTTP 422
//!    `Unexpected fields in the request: {'top_k'}`. The classes are
//!    openai 3.57.0's `CompletionCreateParamsStreaming` plus
//!    `generation_config`, `seed`, `chat_template_kwargs`
//!    (`chat_completion.py` `TransformersCompletionCreateParamsStreaming`)
//!    and `CompletionCreateParamsBase` plus `generation_config`, `seed`,
//!    `stream` (`completion.py` `TransformersTextCompletionCreateParams`):
//!    [`ServeEndpoint::accepted`]. So `top_k`, `min_p`,
//!    `repetition_penalty`, `do_sample`, `typical_p` are refused, not
//!    dropped. Python prints the set in hash order; this crate sorts it.
//! 2. **Warned and ignored** (`_validate_request`, `UNUSED_CHAT_COMPLETION_FIELDS`,
//!    `UNUSED_LEGACY_COMPLETION_FIELDS`): accepted fields such as
//!    `presence_penalty`, `n`, `logprobs` are logged
//!    (`Ignoring unsupported fields in the request: {...}`) and not read:
//!    [`ServeEndpoint::unused`]. A few more accepted fields are dropped
//!    without a word (`/v1/completions` drops `logit_bias`).
//! 3. **The generation config** (`utils.py` `BaseHandler._build_generation_config`):
//!    - a `generation_config` body field (a JSON *string*; an object is a
//!      500, `json.loads` refuses it) becomes `GenerationConfig(**fields)`;
//!      otherwise the model's generation config is deep-copied and its
//!      `max_new_tokens` raised to 1024 when unset or below;
//!    - `temperature` → `float()`, and `do_sample = False` when it is 0;
//!      `top_p` → `float()`; `seed` → `torch.manual_seed(seed)`, the
//!      process-global generator (`set_torch_seed`);
//!    - then per endpoint (`chat_completion.py` / `completion.py`
//!      `_build_generation_config`): `max_completion_tokens` (chat) or
//!      `max_tokens` → `max_new_tokens`; `frequency_penalty` →
//!      `repetition_penalty = 1.0 + frequency_penalty`; chat only:
//!      `logit_bias` → `sequence_bias = {(int(k),): v}`; `stop` →
//!      `stop_strings`.
//!
//!    Nothing in a request turns sampling on except `generation_config`
//!    (or the model's own generation config saying `do_sample: true`).
//! 4. **generate()** (`generation/utils.py` `_prepare_generation_config`)
//!    fills every field the config leaves unset from the *model's*
//!    generation config and then transformers' defaults. So a body's
//!    `generation_config` does not replace the model's: it is laid over it
//!    field by field (recorded: the "sampling" model's `top_k` 20 survives
//!    `generation_config: {"do_sample": true}`); `null` in it means unset.
//!    Values the processors refuse are HTTP 500 (e.g. `frequency_penalty`
//!    -1 gives `repetition_penalty` 0; an integer `logit_bias` value is not
//!    the float `SequenceBiasLogitsProcessor` requires).
//!
//! The result is transformers' own [`GenerationParams`], resolved by
//! [`crate::resolve`] over the model's generation config exactly as
//! `generate()` resolves it.
//!
//! Not modelled: the Python `float()`/`int()` of exotic strings (`"1_000"`),
//! `json.loads` error texts (only the exception type matches), a
//! `logit_bias` whose keys are not in ascending text order (Python prints
//! them in body order in its 500 message), `--compile` and continuous
//! batching (`use_cache` only), and `/v1/responses`.

use std::fmt;

use parity_core::{Error, Route};
use serde_json::{Map, Number, Value};

use crate::error::HfError;
use crate::params::{GenerationConfig, GenerationParams, is_generate_kwarg, resolve};
use parity_core::py::{self, PyNum};

/// transformers' OpenAI server.
pub const SERVER: parity_core::Server = parity_core::Server::new("transformers serve");

/// One of `transformers serve`'s generation endpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServeEndpoint {
    /// `/v1/chat/completions` (`cli/serving/chat_completion.py`).
    ChatCompletions,
    /// `/v1/completions` (`cli/serving/completion.py`).
    Completions,
}

parity_core::body! {
    /// `/v1/chat/completions`' body: the keys of
    /// `TransformersCompletionCreateParamsStreaming.__mutable_keys__`
    /// (transformers 5.23.0 over openai 3.57.0, as recorded), each once;
    /// any other key is a 422.
    pub struct ChatBody {
        /// Read (`handle_request`, `_build_generation_config`,
        /// `get_processor_inputs_from_messages`).
        read: ChatRead {
            model,
            messages,
            tools,
            chat_template_kwargs,
            stream,
            generation_config,
            temperature,
            top_p,
            seed,
            max_completion_tokens,
            max_tokens,
            frequency_penalty,
            logit_bias,
            stop,
        },
        /// `UNUSED_CHAT_COMPLETION_FIELDS` (`chat_completion.py`, 5.23.0):
        /// warned about and ignored.
        unused: ChatUnused {
            audio,
            function_call,
            functions,
            logprobs,
            metadata,
            modalities,
            n,
            parallel_tool_calls,
            prediction,
            presence_penalty,
            reasoning_effort,
            response_format,
            service_tier,
            store,
            stream_options,
            tool_choice,
            top_logprobs,
            user,
            web_search_options,
        },
        /// Accepted and dropped without a word.
        dropped: ChatDropped {
            moderation,
            prompt_cache_key,
            prompt_cache_options,
            prompt_cache_retention,
            safety_identifier,
            verbosity,
        },
    }
}

parity_core::body! {
    /// `/v1/completions`' body: the keys of
    /// `TransformersTextCompletionCreateParams.__mutable_keys__` (5.23.0
    /// over openai 3.57.0, as recorded), each once; any other key is a 422.
    pub struct CompletionsBody {
        /// Read (`handle_request`, `_build_generation_config`).
        read: CompletionsRead {
            model,
            prompt,
            suffix,
            stream,
            generation_config,
            temperature,
            top_p,
            seed,
            max_tokens,
            frequency_penalty,
            stop,
        },
        /// `UNUSED_LEGACY_COMPLETION_FIELDS` (`completion.py`, 5.23.0):
        /// warned about and ignored.
        unused: CompletionsUnused {
            best_of,
            echo,
            logprobs,
            n,
            presence_penalty,
            stream_options,
            user,
        },
        /// Accepted and dropped without a word (no `logit_bias` here).
        dropped: CompletionsDropped {
            logit_bias,
        },
    }
}

impl ServeEndpoint {
    /// Both, in the order [`crate::request_routes`] lists them.
    pub const ALL: [Self; 2] = [Self::ChatCompletions, Self::Completions];

    /// The OpenAI route it is.
    pub const fn protocol(self) -> parity_core::Protocol {
        match self {
            Self::ChatCompletions => parity_core::Protocol::OpenaiChat,
            Self::Completions => parity_core::Protocol::OpenaiCompletions,
        }
    }

    /// The URL path.
    pub fn path(self) -> &'static str {
        self.protocol().path()
    }

    /// The route compare names.
    pub const fn route(self) -> parity_core::Endpoint {
        parity_core::Endpoint::http(SERVER, self.protocol())
    }

    /// Every body key the endpoint accepts, sorted; any other is a 422.
    pub fn accepted(self) -> Vec<&'static str> {
        let groups = match self {
            Self::ChatCompletions => ChatBody::FIELDS,
            Self::Completions => CompletionsBody::FIELDS,
        };
        let mut all: Vec<&'static str> = groups.concat();
        all.sort_unstable();
        all
    }

    /// Accepted keys it warns about and ignores, sorted.
    pub fn unused(self) -> &'static [&'static str] {
        match self {
            Self::ChatCompletions => ChatUnused::FIELDS,
            Self::Completions => CompletionsUnused::FIELDS,
        }
    }

    fn read(self) -> &'static [&'static str] {
        match self {
            Self::ChatCompletions => ChatRead::FIELDS,
            Self::Completions => CompletionsRead::FIELDS,
        }
    }
}

/// Why the server does not run the request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The server answers with this HTTP status (400, 422, 500) and text:
    /// the 422's `detail`, or for a 500 the exception (`ValueError: ...`).
    Http {
        /// The status code.
        status: u16,
        /// The text.
        message: String,
    },
    /// The server would run it, with a setting hf-sampling does not model
    /// (e.g. `num_beams` in `generation_config`).
    NotModelled(String),
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Http { status, message } => write!(f, "HTTP {status}: {message}"),
            Self::NotModelled(m) => write!(f, "{m}"),
        }
    }
}

fn http(status: u16, message: impl Into<String>) -> Refusal {
    Refusal::Http {
        status,
        message: message.into(),
    }
}

/// `transformers serve`'s reading of one request body on one endpoint.
#[derive(Debug, Clone)]
pub struct ServeReading {
    /// The endpoint.
    pub endpoint: ServeEndpoint,
    /// What `generate()` samples with, or the refusal.
    pub params: Result<GenerationParams, Refusal>,
    /// The generation config fields the server sets over the model's
    /// generation config (what `generate()` then merges), as generate
    /// kwargs; empty when refused before.
    pub kwargs: Map<String, Value>,
    /// Fields named in the "Ignoring unsupported fields in the request"
    /// warning, sorted (empty when refused by validation).
    pub warned: Vec<String>,
    /// Accepted fields the endpoint does not read (the warned ones
    /// included), in body order.
    pub ignored: Vec<String>,
    /// The `seed` passed to `torch.manual_seed` (the global generator).
    pub seed: Option<Value>,
    /// What the server decided on its own, in words.
    pub notes: Vec<String>,
}

impl ServeReading {
    /// As a compare route.
    pub fn into_route(self) -> Route<GenerationParams> {
        Route {
            endpoint: self.endpoint.route(),
            params: self.params.map_err(Error::new),
            ignored: self.ignored,
            notes: self.notes,
            sources: Vec::new(),
        }
    }
}

/// Python's `float(x)`, or the 500 it raises.
fn py_float(v: &Value) -> Result<f64, Refusal> {
    match v {
        Value::Bool(_) | Value::Number(_) => Ok(PyNum::numeric(v).map_or(f64::NAN, PyNum::float)),
        Value::String(s) => s.trim().parse::<f64>().map_err(|_| {
            http(
                500,
                format!(
                    "ValueError: could not convert string to float: {}",
                    py::str_repr(s)
                ),
            )
        }),
        other => Err(http(
            500,
            format!(
                "TypeError: float() argument must be a string or a real number, not {}",
                py::str_repr(py::type_name(other))
            ),
        )),
    }
}

/// Python's `int(x)`, or the 500 it raises.
fn py_int(v: &Value) -> Result<i64, Refusal> {
    let bad = |s: &str| {
        http(
            500,
            format!(
                "ValueError: invalid literal for int() with base 10: {}",
                py::str_repr(s)
            ),
        )
    };
    match v {
        Value::Bool(_) | Value::Number(_) => Ok(match PyNum::numeric(v) {
            Some(PyNum::Int(i)) => i64::try_from(i).unwrap_or(i64::MAX),
            // int(5.7) truncates toward zero.
            Some(PyNum::Float(f)) => f.trunc() as i64,
            None => 0,
        }),
        Value::String(s) => s.trim().parse::<i64>().map_err(|_| bad(s)),
        other => Err(http(
            500,
            format!(
                "TypeError: int() argument must be a string, a bytes-like object or a real \
                 number, not {}",
                py::str_repr(py::type_name(other))
            ),
        )),
    }
}

fn float_value(x: f64) -> Value {
    Number::from_f64(x).map_or(Value::Null, Value::Number)
}

/// The body's value for `key` when it is not null (`body.get(key) is not None`).
fn given<'a>(body: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    body.get(key).filter(|v| !v.is_null())
}

/// `{(int(k),): v for k, v in logit_bias.items()}`, validated as
/// `SequenceBiasLogitsProcessor` validates its dict form; as the list form
/// [`crate::resolve`] reads.
fn sequence_bias(v: &Value) -> Result<Value, Refusal> {
    let Value::Object(bias) = v else {
        return Err(http(
            500,
            format!(
                "AttributeError: {} object has no attribute 'items'",
                py::str_repr(py::type_name(v))
            ),
        ));
    };
    let mut pairs: Vec<(i64, &Value)> = Vec::new();
    for (k, b) in bias {
        let id = py_int(&Value::String(k.clone()))?;
        match pairs.iter_mut().find(|(i, _)| *i == id) {
            Some(slot) => slot.1 = b,
            None => pairs.push((id, b)),
        }
    }
    let repr = format!(
        "{{{}}}",
        pairs
            .iter()
            .map(|(id, b)| format!("({id},): {}", py::repr(b)))
            .collect::<Vec<_>>()
            .join(", ")
    );
    if pairs.is_empty() {
        return Err(http(
            500,
            "ValueError: `sequence_bias` has to be a non-empty dictionary, or non-empty list \
             of lists but is {}.",
        ));
    }
    if pairs.iter().any(|(id, _)| *id < 0) {
        return Err(http(
            500,
            format!(
                "ValueError: Each key in `sequence_bias` has to be a non-empty tuple of positive \
                 integers, but is {repr}."
            ),
        ));
    }
    if pairs
        .iter()
        .any(|(_, b)| !PyNum::of_value(b).is_some_and(PyNum::is_float))
    {
        return Err(http(
            500,
            format!(
                "ValueError: `sequence_bias` has to be a dict with floats as values, but is {repr}."
            ),
        ));
    }
    Ok(Value::Array(
        pairs
            .into_iter()
            .map(|(id, b)| Value::Array(vec![Value::Array(vec![Value::from(id)]), b.clone()]))
            .collect(),
    ))
}

/// What `transformers serve` 5.23.0 does with `body` on `endpoint`, for a
/// model whose generation config is `model` (`None`: one that sets nothing).
pub fn serve_request(
    endpoint: ServeEndpoint,
    body: &Map<String, Value>,
    model: Option<&GenerationConfig>,
) -> ServeReading {
    let mut reading = ServeReading {
        endpoint,
        params: Err(http(500, "")),
        kwargs: Map::new(),
        warned: Vec::new(),
        ignored: Vec::new(),
        seed: None,
        notes: Vec::new(),
    };
    // _validate_request: unexpected keys first, then the warning.
    let accepted = endpoint.accepted();
    let mut unexpected: Vec<&str> = body
        .keys()
        .map(String::as_str)
        .filter(|k| !accepted.contains(k))
        .collect();
    if !unexpected.is_empty() {
        unexpected.sort_unstable();
        let set = unexpected
            .iter()
            .map(|k| py::str_repr(k))
            .collect::<Vec<_>>()
            .join(", ");
        reading.params = Err(http(
            422,
            format!("Unexpected fields in the request: {{{set}}}"),
        ));
        return reading;
    }
    let unused = endpoint.unused();
    reading.warned = body
        .keys()
        .filter(|k| unused.contains(&k.as_str()))
        .cloned()
        .collect();
    reading.warned.sort_unstable();
    reading.ignored = body
        .keys()
        .filter(|k| !endpoint.read().contains(&k.as_str()))
        .cloned()
        .collect();
    if !reading.warned.is_empty() {
        let set = reading
            .warned
            .iter()
            .map(|k| py::str_repr(k))
            .collect::<Vec<_>>()
            .join(", ");
        reading.notes.push(format!(
            "warns \"Ignoring unsupported fields in the request: {{{set}}}\""
        ));
    }
    if endpoint == ServeEndpoint::Completions && given(body, "logit_bias").is_some() {
        reading
            .notes
            .push("logit_bias accepted and dropped without a warning".into());
    }
    if endpoint == ServeEndpoint::Completions && body.get("prompt").is_some_and(|p| !p.is_string())
    {
        reading.params = Err(http(400, "prompt must be a string."));
        return reading;
    }
    reading.params = build(endpoint, body, model, &mut reading);
    reading
}

/// `_build_generation_config` (base, then the endpoint's), then
/// `generate()`'s merge and processor checks.
fn build(
    endpoint: ServeEndpoint,
    body: &Map<String, Value>,
    model: Option<&GenerationConfig>,
    reading: &mut ServeReading,
) -> Result<GenerationParams, Refusal> {
    let kwargs = &mut reading.kwargs;
    if let Some(gc) = given(body, "generation_config") {
        let Value::String(text) = gc else {
            return Err(http(
                500,
                format!(
                    "TypeError: the JSON object must be str, bytes or bytearray, not {}",
                    py::type_name(gc)
                ),
            ));
        };
        let parsed: Value =
            serde_json::from_str(text).map_err(|e| http(500, format!("JSONDecodeError: {e}")))?;
        let Value::Object(fields) = parsed else {
            return Err(http(
                500,
                format!(
                    "TypeError: transformers.generation.configuration_utils.GenerationConfig() \
                     argument after ** must be a mapping, not {}",
                    py::type_name(&parsed)
                ),
            ));
        };
        let mut custom = Vec::new();
        for (k, v) in fields {
            if v.is_null() {
                continue; // None: unset, so generate() takes the model's value
            }
            if is_generate_kwarg(&k) {
                kwargs.insert(k, v);
            } else {
                custom.push(k);
            }
        }
        reading.notes.push(
            "generation_config (request) laid over the model's generation config field by \
             field (generate() fills what it leaves unset); no 1024 floor on max_new_tokens"
                .into(),
        );
        if !custom.is_empty() {
            reading.notes.push(format!(
                "generation_config keeps unknown fields as custom attributes, unread: {}",
                custom.join(", ")
            ));
        }
    } else {
        let own = model
            .and_then(|m| m.get("max_new_tokens"))
            .and_then(Value::as_f64);
        if own.is_none_or(|m| m < 1024.0) {
            kwargs.insert("max_new_tokens".into(), Value::from(1024));
            reading
                .notes
                .push("max_new_tokens 1024 (serve raises the model's when unset or below)".into());
        }
    }
    let sampling_from_config = kwargs
        .get("do_sample")
        .or_else(|| model.and_then(|m| m.get("do_sample")))
        .is_some_and(|v| v == &Value::Bool(true));
    if let Some(v) = given(body, "temperature") {
        let t = py_float(v)?;
        kwargs.insert("temperature".into(), float_value(t));
        if t == 0.0 {
            kwargs.insert("do_sample".into(), Value::Bool(false));
        }
    }
    if let Some(v) = given(body, "top_p") {
        kwargs.insert("top_p".into(), float_value(py_float(v)?));
    }
    if let Some(seed) = given(body, "seed") {
        reading.seed = Some(seed.clone());
        reading.notes.push(format!(
            "seed {seed}: torch.manual_seed({seed}) on the process-global generator, which \
             every request shares"
        ));
    }
    let max_tokens = match endpoint {
        ServeEndpoint::ChatCompletions => {
            given(body, "max_completion_tokens").or_else(|| given(body, "max_tokens"))
        }
        ServeEndpoint::Completions => given(body, "max_tokens"),
    };
    if let Some(v) = max_tokens {
        kwargs.insert("max_new_tokens".into(), Value::from(py_int(v)?));
    }
    if let Some(v) = given(body, "frequency_penalty") {
        kwargs.insert("repetition_penalty".into(), float_value(1.0 + py_float(v)?));
        reading
            .notes
            .push("frequency_penalty read as repetition_penalty = 1 + frequency_penalty".into());
    }
    if endpoint == ServeEndpoint::ChatCompletions
        && let Some(v) = given(body, "logit_bias")
    {
        kwargs.insert("sequence_bias".into(), sequence_bias(v)?);
        reading
            .notes
            .push("logit_bias read as sequence_bias {(id,): bias}".into());
    }
    let do_sample = kwargs
        .get("do_sample")
        .map_or(sampling_from_config, |v| v == &Value::Bool(true));
    if !do_sample && body.get("temperature").and_then(Value::as_f64) != Some(0.0) {
        reading.notes.push(
            "greedy: do_sample comes from the generation config (false when it says nothing); \
             only a generation_config field turns sampling on"
                .into(),
        );
    }
    let params = resolve(kwargs, model).map_err(refusal)?;
    params.processors().map_err(refusal)?;
    Ok(params)
}

/// A resolve error as the server's answer: transformers raises (HTTP 500),
/// except for what hf-sampling does not model.
fn refusal(e: HfError) -> Refusal {
    match e {
        HfError::Unsupported { .. } => Refusal::NotModelled(e.to_string()),
        other => http(500, format!("ValueError: {other}")),
    }
}

#[cfg(test)]
mod tests {
    /// Each field of the request body is declared in one group only.
    #[test]
    fn the_request_body_declares_each_field_once() {
        assert_eq!(parity_core::body::repeated(ChatBody::FIELDS), None);
        assert_eq!(parity_core::body::repeated(CompletionsBody::FIELDS), None);
    }

    use super::*;
    use serde_json::json;

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().cloned().expect("object")
    }

    #[test]
    fn python_conversions() {
        assert_eq!(py_float(&json!("0.7")), Ok(0.7));
        assert_eq!(py_float(&json!(true)), Ok(1.0));
        assert_eq!(
            py_float(&json!([1])).unwrap_err().to_string(),
            "HTTP 500: TypeError: float() argument must be a string or a real number, not 'list'"
        );
        assert_eq!(py_int(&json!(5.7)), Ok(5));
        assert_eq!(py_int(&json!(" 42 ")), Ok(42));
        assert_eq!(
            py::repr(&json!({"a": [1, 2.0, null, true, "x"]})),
            "{'a': [1, 2.0, None, True, 'x']}"
        );
    }

    #[test]
    fn refuses_top_k_and_sorts_the_set() {
        let r = serve_request(
            ServeEndpoint::ChatCompletions,
            &map(json!({"top_k": 4, "min_p": 0.1, "temperature": 0.5})),
            None,
        );
        assert_eq!(
            r.params.unwrap_err().to_string(),
            "HTTP 422: Unexpected fields in the request: {'min_p', 'top_k'}"
        );
    }

    #[test]
    fn logit_bias_needs_float_values() {
        assert_eq!(
            sequence_bias(&json!({"42": 5.0, "7": -100}))
                .unwrap_err()
                .to_string(),
            "HTTP 500: ValueError: `sequence_bias` has to be a dict with floats as values, but \
             is {(42,): 5.0, (7,): -100}."
        );
        assert_eq!(
            sequence_bias(&json!({"42": 5.0})).expect("float"),
            json!([[[42], 5.0]])
        );
    }
}
