//! How Ollama's HTTP routes turn a request into the Go sampler's options
//! (f63eea3d2; the same mapping from v0.5.13 on).
//!
//! * `/api/generate` and `/api/chat` (server/routes.go `GenerateHandler`,
//!   `ChatHandler` → `scheduleRunner` → `modelOptions`): `DefaultOptions()`,
//!   then the model's Modelfile `PARAMETER`s (`FromMap(model.Options)`),
//!   then the request's `options` object (`FromMap(req.Options)`).
//! * `/v1/chat/completions` (middleware/openai.go `ChatMiddleware` →
//!   openai/openai.go `FromChatRequest`): the body is decoded into
//!   `ChatCompletionRequest`, whose only sampling fields are `temperature`,
//!   `top_p`, `seed`, `frequency_penalty`, `presence_penalty` (pointers: a
//!   JSON null is absent); every other field is dropped unread. `options`
//!   gets `temperature` and `top_p` as sent or **1.0** when absent, the
//!   others only when sent; the result is re-encoded as an `/api/chat` body.
//! * `/v1/completions` (`FromCompleteRequest`): `temperature` is a
//!   `*float32` (1.0 when absent), `top_p` a plain `float32` (**0 or absent
//!   becomes 1.0**), the two penalties plain `float32`s always sent.
//!
//! Ollama reads no `generation_config.json`; a model's published defaults
//! are its Modelfile `PARAMETER`s, which this project has no file for: they
//! are taken to be none.

use serde_json::{Map, Value};

use parity_core::{Endpoint, Protocol, Route, Server};

use super::options::OllamaOptions;
use crate::layers::{Fields, Format, Native};
use crate::openai::{chat_options, completion_options};

/// Ollama with the Go engine, at the versions this crate reads.
const GO_ENGINE: Server = crate::SERVER.at("v0.6.2–v0.25 Go engine");
/// The routes.
pub(crate) const CHAT: Endpoint = Endpoint::http(GO_ENGINE, Protocol::OpenaiChat);
pub(crate) const COMPLETIONS: Endpoint = Endpoint::http(GO_ENGINE, Protocol::OpenaiCompletions);
pub(crate) const NATIVE: Endpoint = Endpoint::http(
    GO_ENGINE,
    Protocol::Native("/api/generate, /api/chat (options)"),
);

const IGNORED_BY_SAMPLER: &[&str] = &[
    "typical_p",
    "repeat_last_n",
    "repeat_penalty",
    "presence_penalty",
    "frequency_penalty",
];

/// The request's fields (top-level, or under `options`) that reach the Go
/// sampler's runner unread are listed as ignored; options the endpoint sends
/// on its own (`/v1/completions`' penalties) only get the note.
fn sampler_ignores(
    route: &mut Route<OllamaOptions>,
    request: &Map<String, Value>,
    sent: &Map<String, Value>,
) {
    let nested = request.get("options").and_then(Value::as_object);
    for name in IGNORED_BY_SAMPLER {
        let field = if request.contains_key(*name) {
            (*name).to_string()
        } else if nested.is_some_and(|o| o.contains_key(*name)) {
            format!("options.{name}")
        } else {
            continue;
        };
        if !route.ignored.contains(&field) {
            route.ignored.push(field);
        }
    }
    if IGNORED_BY_SAMPLER.iter().any(|n| sent.contains_key(*n)) {
        route.notes.push(
            "penalties and typical_p are passed to the runner but the Go sampler never reads them (runner/ollamarunner/runner.go gives NewSampler only temperature, top_k, top_p, min_p, seed)".into(),
        );
    }
}

/// Every route, for [`super::OllamaGo`]'s `from_request`: the model's
/// parameters (when given) under each route's options.
pub(crate) fn routes(
    request: &Map<String, Value>,
    model: Option<&Map<String, Value>>,
) -> Vec<Route<OllamaOptions>> {
    let parse = |o: Map<String, Value>| OllamaOptions::parse_over(model, &o);
    let mut out = Vec::new();

    let chat = chat_options(request);
    let chat = crate::format::openai_chat(request).and(chat);
    let mut route = Route::new(CHAT, chat.clone().and_then(parse))
        .ignoring_all_but(request, crate::openai::reads);
    for (field, default) in [("temperature", "1.0"), ("top_p", "1.0")] {
        if request.get(field).is_none_or(Value::is_null) {
            route = route.note(format!(
                "{field} {default}: this endpoint's default when absent (not Ollama's own 0.8 / 0.9)"
            ));
        }
    }
    route = route.note(if model.is_some() {
        "top_k, min_p: the model's parameters, else Ollama's defaults 40 and 0 (the endpoint has no such fields)"
    } else {
        "top_k 40, min_p 0: Ollama's defaults (the endpoint has no such fields; the model's parameters would override them)"
    });
    if let Ok(o) = &chat {
        sampler_ignores(&mut route, request, o);
    }
    out.push(route);

    let completion = completion_options(request);
    let mut route = Route::new(COMPLETIONS, completion.clone().and_then(parse))
        .ignoring_all_but(request, crate::openai::reads);
    if crate::openai::completion_top_p_defaulted(request) {
        route = route.note("top_p 1.0: this endpoint sends 1.0 when top_p is absent or 0");
    }
    if request.get("temperature").is_none_or(Value::is_null) {
        route = route.note("temperature 1.0: this endpoint's default when absent");
    }
    if let Ok(o) = &completion {
        sampler_ignores(&mut route, request, o);
    }
    out.push(route);

    let native = Native::read::<OllamaOptions>(
        request,
        Fields::GoEngine,
        Format::Grammar,
        "json: cannot unmarshal into map[string]interface {}",
    );
    let mut route = Route::new(NATIVE, native.options.clone().and_then(parse));
    route.ignored = native.ignored;
    if !request.contains_key("options") {
        route = route.note("the request's fields that are Ollama option names, sent as `options`");
    }
    route = route.note(if model.is_some() {
        "absent options: the model's parameters, else Ollama's defaults (temperature 0.8, top_k 40, top_p 0.9, min_p 0)"
    } else {
        "absent options: Ollama's defaults (temperature 0.8, top_k 40, top_p 0.9, min_p 0); no model parameters given"
    });
    if let Ok(o) = &native.options {
        sampler_ignores(&mut route, request, o);
    }
    out.push(route);
    for r in &mut out {
        r.notes
            .push("generation_config.json is never read".to_string());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().cloned().expect("object")
    }

    /// The Go engine samples under a native `format` (llm/server.go
    /// `Completion`, f63eea3d2): read, not ignored; "json" refused.
    #[test]
    fn a_native_format_is_read_and_a_grammar_is_refused() {
        let r = routes(&map(json!({"temperature": 0.5, "format": ""})), None);
        assert!(r[2].params.is_ok(), "{:?}", r[2].params);
        assert!(
            !r[2].ignored.iter().any(|k| k == "format"),
            "{:?}",
            r[2].ignored
        );
        let r = routes(
            &map(json!({"options": {"temperature": 0.5}, "format": "json"})),
            None,
        );
        let e = r[2].params.as_ref().expect_err("a grammar").to_string();
        assert!(e.starts_with("`format` = \"json\""), "{e}");
    }

    #[test]
    fn chat_fills_one_where_ollama_would_fill_its_own() {
        let r = routes(&map(json!({"top_k": 5, "frequency_penalty": 0.5})), None);
        let chat = r[0].params.as_ref().expect("valid");
        assert_eq!((chat.temperature, chat.top_p, chat.top_k), (1.0, 1.0, 40));
        assert_eq!(r[0].ignored, vec!["top_k", "frequency_penalty"]);
        let native = r[2].params.as_ref().expect("valid");
        assert_eq!(
            (native.temperature, native.top_p, native.top_k),
            (0.8, 0.9, 5)
        );
    }

    #[test]
    fn completions_top_p_zero_is_one_and_types_are_decoded() {
        let r = routes(&map(json!({"top_p": 0, "temperature": 0.5})), None);
        assert_eq!(r[0].params.as_ref().expect("chat").top_p, 0.0);
        assert_eq!(r[1].params.as_ref().expect("completions").top_p, 1.0);
        let r = routes(&map(json!({"seed": 1.5})), None);
        assert_eq!(
            r[0].params.as_ref().unwrap_err().to_string(),
            "`seed` = 1.5: Ollama answers 400 (json: cannot unmarshal number 1.5 into Go struct field ChatCompletionRequest.seed of type int)"
        );
        let r = routes(&map(json!({"temperature": 1e39})), None);
        assert!(
            r[0].params.is_err(),
            "float32 overflow reaches the runner as +Inf"
        );
        assert!(
            r[1].params
                .as_ref()
                .unwrap_err()
                .to_string()
                .contains("of type float32")
        );
    }

    #[test]
    fn native_reads_the_options_object() {
        let r = routes(
            &map(json!({"options": {"top_k": 3, "num_ctx": 8, "foo": 1}, "top_p": 0.5})),
            None,
        );
        let n = r[2].params.as_ref().expect("valid");
        assert_eq!((n.top_k, n.top_p), (3, 0.9));
        assert_eq!(r[2].ignored, vec!["top_p", "options.foo"]);
    }

    #[test]
    fn model_parameters_fill_what_the_route_leaves_out() {
        // qwen3's published parameters, say
        let model =
            map(json!({"temperature": 0.6, "top_k": 20, "top_p": 0.95, "stop": ["<|im_end|>"]}));
        let r = routes(&map(json!({"temperature": 0.7})), Some(&model));
        let chat = r[0].params.as_ref().expect("chat");
        // the endpoint always sets temperature and top_p; top_k is the model's
        assert_eq!((chat.temperature, chat.top_p, chat.top_k), (0.7, 1.0, 20));
        let native = r[2].params.as_ref().expect("native");
        assert_eq!(
            (native.temperature, native.top_p, native.top_k),
            (0.7, 0.95, 20)
        );
        let bad = map(json!({"top_k": "20"}));
        let r = routes(&map(json!({})), Some(&bad));
        assert!(
            r[2].params
                .as_ref()
                .unwrap_err()
                .to_string()
                .starts_with("model parameter `top_k`")
        );
    }
}
