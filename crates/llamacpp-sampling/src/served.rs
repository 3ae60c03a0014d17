//! [`LlamaServer`]: llama.cpp's chain as a llama-server started on a model
//! file with sampling metadata, or with sampling flags, runs it — the same
//! semantics (`llama.cpp`) with [`ServerDefaults`] under every request
//! instead of the built-in defaults (see [`crate::defaults`] for the layers
//! and their order).

use serde_json::{Map, Value};

use parity_core::{
    Against, Context, Described, Distribution, Error, Explanation, FieldSource, Info, Logits,
    Route, Semantics, TranslateOptions, Translation,
};

use crate::defaults::ServerDefaults;

/// llama.cpp's server.
pub const LLAMA_SERVER: parity_core::Server = parity_core::Server::new("llama-server");
/// The route compare names (the same chain reads `/completion`'s fields).
pub(crate) const ROUTE: parity_core::Endpoint =
    parity_core::Endpoint::http(LLAMA_SERVER, parity_core::Protocol::OpenaiChat);
use crate::params::{self, ServerParams};
use crate::{LlamaCpp, request_for_generate};

/// llama.cpp's chain under a server's own defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct LlamaServer {
    defaults: ServerDefaults,
}

impl LlamaServer {
    /// The semantics of a llama-server whose defaults are `defaults`.
    pub fn new(defaults: ServerDefaults) -> Self {
        Self { defaults }
    }

    /// Its defaults.
    pub fn defaults(&self) -> &ServerDefaults {
        &self.defaults
    }
}

/// llama-server's route for `request` over `defaults`: the request's own
/// fields replace the defaults; each described field says where its value
/// came from.
pub(crate) fn routes(
    defaults: &ServerDefaults,
    request: &Map<String, Value>,
) -> Vec<Route<ServerParams>> {
    let known = |k: &str| params::Completion::FIELDS.contains(&k) && k != "draws";
    let own = parity_core::params::only(request, known);
    let parsed =
        chat_grammar(request).and_then(|()| params::parse_over(defaults.params.clone(), &own));
    let sources = parsed
        .as_ref()
        .map(|p| {
            p.describe()
                .keys()
                .map(|k| {
                    let from_request = own.get(k).is_some_and(|v| !v.is_null());
                    let source = if from_request {
                        FieldSource::Request
                    } else {
                        defaults.source(k)
                    };
                    (k.clone(), source)
                })
                .collect()
        })
        .unwrap_or_default();
    let mut route = Route::new(ROUTE, parsed)
        .ignoring_all_but(request, known)
        .with_sources(sources);
    let layered: Vec<_> = defaults.layered().collect();
    if layered.is_empty() {
        route = route.note(
            "defaults for absent fields: top_k 40, top_p 0.95, min_p 0.05, repeat_last_n 64 (built in; no general.sampling.* key and no flag given)",
        );
    }
    let (tools, choice) = tool_choice(request);
    if tools && choice == "auto" {
        route = route.note(
            "tools with tool_choice \"auto\": if the model's chat template can call tools, its grammar is lazy (common/chat-auto-parser-generator.cpp:79) and constrains nothing until the generated text reaches the template's tool-call marker",
        );
        if request
            .get("tool_choice")
            .is_some_and(|c| !c.is_null() && !c.is_string())
        {
            route = route.note(
                "a tool_choice that is not a string is read as \"auto\" (json_value, tools/server/server-common.h:43-55)",
            );
        }
    }
    for note in &defaults.notes {
        route = route.note(note.clone());
    }
    vec![route.note(
        "generation_config.json is read only through the GGUF: llama.cpp's converter writes it into general.sampling.* (gguf-py/gguf/metadata.py)",
    )]
}

/// What `/v1/chat/completions` makes of the chat fields that put a grammar
/// into the chain before `/completion`'s own fields are read
/// (`oaicompat_chat_params_parse`, tools/server/server-common.cpp:1224-1348
/// at 0c1e57098): a `response_format` of type `json_object` or
/// `json_schema` becomes the request's JSON schema (1258-1271), and tools
/// with `tool_choice: "required"` a grammar that forces a tool call when
/// the model's chat template can call tools
/// (common/chat-auto-parser-generator.cpp:68-80; SmolLM2's cannot, and a
/// real server samples it unconstrained). The template is not known here,
/// so both are refused as not reproduced, naming the field, as `grammar`
/// and `json_schema` are; the server's own refusals (another
/// `response_format` type, another `tool_choice`) in its words. Values of
/// the wrong JSON type are read as `json_value` reads them: as absent.
fn chat_grammar(request: &Map<String, Value>) -> Result<(), Error> {
    let constrained = |field: &str, v: &Value, how: &str| {
        Err(parity_core::params::grammar_constrained(
            field,
            v,
            &format!("llama-server samples under {how}"),
        ))
    };
    if let Some(v @ Value::Object(format)) = request.get("response_format") {
        match format.get("type").and_then(Value::as_str).unwrap_or("") {
            "" | "text" => {}
            "json_object" | "json_schema" => {
                return constrained(
                    "response_format",
                    v,
                    "a grammar built from its JSON schema (tools/server/server-common.cpp:1258-1275)",
                );
            }
            other => {
                return Err(Error::new(format_args!(
                    "`response_format.type` = {other:?}: llama-server refuses it (400: response_format type must be one of \"text\" or \"json_object\", but got: {other})"
                )));
            }
        }
    }
    let (tools, choice) = tool_choice(request);
    match choice {
        "auto" | "none" => {}
        "required" if tools => {
            return constrained(
                "tool_choice",
                &Value::from(choice),
                "a grammar that forces a tool call when the model's chat template can call tools (common/chat-auto-parser-generator.cpp:68-80), and the template is not known here",
            );
        }
        "required" => {}
        other => {
            return Err(Error::new(format_args!(
                "`tool_choice` = {other:?}: llama-server refuses it (400: Invalid tool_choice: {other}, common/chat.cpp:355)"
            )));
        }
    }
    Ok(())
}

/// Whether `request` has tools (a non-empty array) and its `tool_choice` as
/// `oaicompat_chat_params_parse` reads it (server-common.cpp:1232-1234):
/// `json_value`'s string, `"auto"` when absent or not a string.
fn tool_choice(request: &Map<String, Value>) -> (bool, &str) {
    let tools = request
        .get("tools")
        .and_then(Value::as_array)
        .is_some_and(|t| !t.is_empty());
    let choice = request
        .get("tool_choice")
        .and_then(Value::as_str)
        .unwrap_or("auto");
    (tools, choice)
}

impl Semantics for LlamaServer {
    type Params = ServerParams;

    fn info(&self) -> &'static Info {
        LlamaCpp.info()
    }

    /// The fields over this server's defaults.
    fn parse_params(&self, params: &Map<String, Value>) -> Result<ServerParams, Error> {
        params::parse_over(self.defaults.params.clone(), params)
    }

    fn distribution(
        &self,
        logits: &Logits,
        context: &Context<'_>,
        params: &ServerParams,
    ) -> Result<Distribution, Error> {
        LlamaCpp.distribution(logits, context, params)
    }

    /// The literal port's request ([`request_for_generate`]), with this
    /// server's defaults under the fields it leaves out.
    fn from_generate(&self, kwargs: &Map<String, Value>) -> Option<Result<ServerParams, Error>> {
        let request = request_for_generate(kwargs)?;
        Some(self.parse_params(&request))
    }

    fn translate(
        &self,
        kwargs: &Map<String, Value>,
        options: &TranslateOptions,
    ) -> Option<Result<Translation, Error>> {
        LlamaCpp.translate(kwargs, options)
    }

    fn from_request(
        &self,
        request: &Map<String, Value>,
        _generation_config: Option<&Map<String, Value>>,
    ) -> Vec<Route<ServerParams>> {
        routes(&self.defaults, request)
    }

    fn describe(&self, params: &ServerParams) -> Option<Described> {
        LlamaCpp.describe(params)
    }

    fn explain(&self, row: &Against<'_>, params: &ServerParams) -> Explanation {
        LlamaCpp.explain(row, params)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn route(body: Value) -> Route<ServerParams> {
        let body = body.as_object().cloned().expect("an object");
        routes(&ServerDefaults::default(), &body).remove(0)
    }

    fn refusal(body: Value) -> String {
        route(body).params.expect_err("refused").to_string()
    }

    /// oaicompat_chat_params_parse (tools/server/server-common.cpp:1258-1275
    /// at 0c1e57098): json_object and json_schema become a JSON schema, so a
    /// grammar; text, an empty type or a non-object are no constraint.
    #[test]
    fn a_json_response_format_is_a_grammar_and_text_is_none() {
        for t in ["json_object", "json_schema"] {
            let e = refusal(json!({"response_format": {"type": t}, "temperature": 0.7}));
            assert!(e.starts_with("`response_format` = "), "{e}");
            assert!(e.contains("not reproduced"), "{e}");
        }
        for ok in [
            json!({"response_format": {"type": "text"}}),
            json!({"response_format": {}}),
            json!({"response_format": "json"}),
            json!({"response_format": null}),
        ] {
            assert!(route(ok.clone()).params.is_ok(), "{ok}");
        }
        let e = refusal(json!({"response_format": {"type": "xml"}}));
        assert!(
            e.contains(
                "400: response_format type must be one of \"text\" or \"json_object\", but got: xml"
            ),
            "{e}"
        );
    }

    /// tools with tool_choice "required" force a tool call with a grammar
    /// (common/chat-auto-parser-generator.cpp:73-80); "auto" makes it lazy;
    /// another choice is the server's 400 (common/chat.cpp:345-356).
    #[test]
    fn a_required_tool_call_is_a_grammar_and_auto_is_lazy() {
        let tools = json!([{"type": "function", "function": {"name": "f", "parameters": {}}}]);
        let e = refusal(json!({"tools": tools, "tool_choice": "required"}));
        assert!(e.starts_with("`tool_choice` = \"required\""), "{e}");
        assert!(e.contains("not reproduced"), "{e}");
        // without tools nothing is built
        assert!(route(json!({"tool_choice": "required"})).params.is_ok());
        let auto = route(json!({"tools": tools}));
        assert!(auto.params.is_ok());
        assert!(
            auto.notes.iter().any(|n| n.contains("lazy")),
            "{:?}",
            auto.notes
        );
        let e = refusal(json!({"tools": tools, "tool_choice": "any"}));
        assert!(e.contains("400: Invalid tool_choice: any"), "{e}");
    }
}
