//! How Ollama's HTTP routes turn a request into the MLX runner's
//! `sample.Options`, for a **safetensors** model (`Model.IsMLX`:
//! `Config.ModelFormat == "safetensors"`, server/images.go).
//!
//! Read from ollama/ollama at **fb3076099** (tag v0.33.0-rc2). The mapping
//! and this crate's sampler hold together from **v0.32.10** on: none of
//! openai/openai.go's sampling lines, middleware/openai.go, api/types.go,
//! server/routes.go's option layering, `x/mlxrunner/client.go`,
//! `x/mlxrunner/server.go` or `x/mlxrunner/sample/` changed between
//! v0.32.10 and v0.33.0-rc2 (`git diff v0.32.10..fb3076099`), and v0.32.10
//! is where 6a261db7d lowered `DefaultOptions`' repeat_penalty from 1.1 to
//! 1.0. Earlier releases differ: the MLX runner serves LLMs from
//! v0.15.5-rc0 (d8cc798c2, GLM-4.7-Flash on the "experimental engine";
//! `x/mlxrunner` as its own runner from v0.16.0-rc0, 44bdd9a2e), its sampler
//! reads the penalties from v0.21.1 (ff23dd343) and was reworked in v0.24.0
//! (#16122, 4860130f8); from v0.21.1 to v0.32.9 an option-less request was
//! penalised with repeat_penalty 1.1. Those releases are not modelled.
//!
//! * Layers (server/routes.go `scheduleRunner` →
//!   `modelOptionsWithEmbeddingBatchDefault`): `api.DefaultOptions()`, then
//!   `opts.FromMap(model.Options)` (the Modelfile `PARAMETER`s), then
//!   `opts.FromMap(requestOpts)`; the same for `/api/generate` and
//!   `/api/chat`, and so for the OpenAI routes, which the middleware turns
//!   into `/api/chat` and `/api/generate` bodies.
//! * `/v1/chat/completions` (middleware/openai.go `ChatMiddleware` →
//!   openai/openai.go `FromChatRequest`): `ChatCompletionRequest`'s only
//!   sampling fields are `temperature`, `top_p`, `frequency_penalty`,
//!   `presence_penalty` (`*float64`) and `seed` (`*int`); `temperature` and
//!   `top_p` are sent as given or **1.0** when absent, the others only when
//!   given.
//! * `/v1/completions` (`FromCompleteRequest`): `temperature` is a
//!   `*float32` (1.0 when absent), `top_p` a plain `float32` (0 or absent →
//!   **1.0**), `frequency_penalty` and `presence_penalty` plain `float32`s
//!   **always sent** (0 when absent, so they override the model's own); a
//!   `stop` list with a non-string item is refused (the chat route skips
//!   such items).
//! * The server hands the merged `api.Options` to the MLX client
//!   (`x/mlxrunner/client.go` `Completion`), which JSON-encodes them (an
//!   infinite float32 fails there: "json: unsupported value: +Inf") with
//!   only `Prompt`, `Media`, `Logprobs` and `TopLogprobs`: the request's
//!   `format` (`response_format`) is **not forwarded**. The runner
//!   (`x/mlxrunner/server.go`) builds `sample.Options` from temperature,
//!   top_p, min_p, top_k, repeat_last_n, repeat_penalty, presence_penalty,
//!   frequency_penalty and seed (`UseSeed: Seed >= 0`); **typical_p is
//!   dropped** there.
//!
//! generation_config.json is read by the MLX models only for the
//! tokenizer's EOS ids (`x/models/*`, `x/tokenizer`), never for sampling.

use serde_json::{Map, Value};

use parity_core::{Endpoint, Error, Protocol, Route, Server};

use crate::openai::{self, chat_options};

use super::{OllamaMlxParams, parse_over};
use crate::layers::{Fields, Format, Native};

/// Ollama with the MLX runner, at the versions this module reads.
const MLX_RUNNER: Server = crate::SERVER.at("MLX runner (safetensors, v0.32.10–v0.33.0-rc2)");
/// `/v1/chat/completions`.
pub const CHAT: Endpoint = Endpoint::http(MLX_RUNNER, Protocol::OpenaiChat);
/// `/v1/completions`.
pub const COMPLETIONS: Endpoint = Endpoint::http(MLX_RUNNER, Protocol::OpenaiCompletions);
/// `/api/generate` and `/api/chat`, whose `options` are Ollama options.
pub const NATIVE: Endpoint =
    Endpoint::http(MLX_RUNNER, Protocol::Native("/api/generate, /api/chat"));

/// `FromCompleteRequest`'s options, after the check fb3076099's openai.go
/// adds: a `stop` list item that is not a string is
/// `fmt.Errorf("invalid type for 'stop' field: %T", s)` (a 400).
fn completion_options(request: &Map<String, Value>) -> Result<Map<String, Value>, Error> {
    if let Some(Value::Array(items)) = request.get("stop")
        && let Some(bad) = items.iter().find(|v| !v.is_string())
    {
        let go_type = match bad {
            Value::Null => "<nil>",
            Value::Bool(_) => "bool",
            Value::Number(_) => "float64",
            Value::Array(_) => "[]interface {}",
            Value::Object(_) => "map[string]interface {}",
            Value::String(_) => "string",
        };
        return Err(Error::new(format_args!(
            "`stop` = {}: Ollama answers 400 (invalid type for 'stop' field: {go_type})",
            Value::Array(items.clone())
        )));
    }
    openai::completion_options(request)
}

/// Notes shared by every route, from the params it ends with.
fn common_notes(route: &mut Route<OllamaMlxParams>, request: &Map<String, Value>) {
    if let Ok(p) = &route.params {
        let rp = if p.repeat_penalty <= 0.0 {
            1.0
        } else {
            p.repeat_penalty
        };
        if p.repeat_last_n != 0
            && (rp != 1.0 || p.presence_penalty != 0.0 || p.frequency_penalty != 0.0)
        {
            route.notes.push(format!(
                "penalties over the last {} ids of prompt + output (repeat_last_n; -1 = num_ctx)",
                p.repeat_last_n
            ));
        }
    }
    if ["response_format", "format"]
        .iter()
        .any(|k| request.get(*k).is_some_and(|v| !v.is_null()))
    {
        route.notes.push(
            "response_format / format: the MLX client does not forward it (x/mlxrunner/client.go sends Prompt, Media, Options, Logprobs, TopLogprobs): no constrained decoding".into(),
        );
    }
    route
        .notes
        .push("generation_config.json is read only for EOS ids, never for sampling".into());
}

/// The routes, for [`super::OllamaMlx`]'s `from_request`: each with the
/// model's parameters (when given) under the request's options.
pub(crate) fn routes(
    request: &Map<String, Value>,
    model: Option<&Map<String, Value>>,
) -> Vec<Route<OllamaMlxParams>> {
    let parse = |o: Map<String, Value>| parse_over(model, &o);
    let absent = |k: &str| request.get(k).is_none_or(Value::is_null);
    let others = if model.is_some() {
        "top_k, min_p, repeat_last_n, repeat_penalty: the model's parameters, else Ollama's defaults 40, 0, 64, 1.0 (the endpoint has no such fields)"
    } else {
        "top_k 40, min_p 0, repeat_last_n 64, repeat_penalty 1.0: Ollama's defaults (the endpoint has no such fields; the model's parameters would override them)"
    };
    let mut out = Vec::new();

    let mut chat = Route::new(CHAT, chat_options(request).and_then(parse))
        .ignoring_all_but(request, crate::openai::reads);
    for f in ["temperature", "top_p"] {
        if absent(f) {
            chat = chat.note(format!(
                "{f} 1.0: this endpoint's default when absent (not Ollama's own {})",
                if f == "temperature" { "0.8" } else { "0.9" }
            ));
        }
    }
    out.push(chat.note(others));

    let mut completions = Route::new(COMPLETIONS, completion_options(request).and_then(parse))
        .ignoring_all_but(request, crate::openai::reads);
    if absent("temperature") {
        completions = completions.note("temperature 1.0: this endpoint's default when absent");
    }
    if openai::completion_top_p_defaulted(request) {
        completions =
            completions.note("top_p 1.0: this endpoint sends 1.0 when top_p is absent or 0");
    }
    if absent("frequency_penalty") || absent("presence_penalty") {
        completions = completions.note(if model.is_some() {
            "frequency_penalty, presence_penalty: always sent (0 when absent), over the model's parameters"
        } else {
            "frequency_penalty, presence_penalty: always sent (0 when absent), which would override the model's parameters"
        });
    }
    out.push(completions.note(others));

    let native = Native::read::<OllamaMlxParams>(
        request,
        Fields::Current,
        Format::Dropped,
        "json: cannot unmarshal into Go struct field options of type map[string]interface {}",
    );
    let mut route = Route::new(NATIVE, native.options.and_then(parse));
    route.ignored = native.ignored;
    if !request.contains_key("options") {
        route = route.note("the request's fields that are Ollama option names, sent as `options`");
    }
    if route
        .ignored
        .iter()
        .any(|k| k == "typical_p" || k == "options.typical_p")
    {
        route = route.note(
            "typical_p: accepted by Ollama and dropped by the MLX runner (x/mlxrunner/server.go does not copy it into sample.Options)",
        );
    }
    route = route.note(if model.is_some() {
        "absent options: the model's parameters, else Ollama's defaults (temperature 0.8, top_k 40, top_p 0.9, min_p 0, repeat_last_n 64, repeat_penalty 1.0)"
    } else {
        "absent options: Ollama's defaults (temperature 0.8, top_k 40, top_p 0.9, min_p 0, repeat_last_n 64, repeat_penalty 1.0); no model parameters given"
    });
    out.push(route);

    for r in &mut out {
        common_notes(r, request);
    }
    out
}
