//! Which registry routes each API's server answers ([`Api::serves`]), on the
//! routes the engine crates declare: llama-server's own route, Ollama's
//! native routes, every OpenAI route on an OpenAI-compatible API, and never
//! a library call.

use parity_core::{AnySemantics, Endpoint};
use serde_json::Map;
use server_probe::Api;

fn routes(s: &dyn AnySemantics) -> Vec<Endpoint> {
    s.prepare_request(&Map::new(), None)
        .iter()
        .map(|r| r.endpoint)
        .collect()
}

fn served(api: Api, endpoints: &[Endpoint]) -> Vec<String> {
    endpoints
        .iter()
        .filter(|e| api.serves(**e))
        .map(|e| e.label())
        .collect()
}

pub fn each_api_serves_its_servers_routes() {
    let mut all = Vec::new();
    all.extend(routes(&llamacpp_sampling::LlamaCpp));
    all.extend(routes(&ollama_sampling::Ollama::default()));
    all.extend(routes(&hf_sampling::HfRust::new(None)));
    assert_eq!(
        served(Api::LlamaServer, &all),
        ["llama-server /v1/chat/completions"]
    );
    assert_eq!(served(Api::Ollama, &all), ["Ollama /api/chat (options)"]);
    let openai = [
        "llama-server /v1/chat/completions",
        "Ollama /v1/chat/completions",
        "Ollama /v1/completions",
        "transformers serve /v1/chat/completions",
        "transformers serve /v1/completions",
    ];
    for api in Api::ALL {
        if api.openai_family() {
            assert_eq!(served(api, &all), openai, "{}", api.name());
        }
    }
    // transformers' generate(**request) is a call, no server's route.
    assert!(all.iter().any(|e| e.server().is_none()));
}
