//! Ollama, one product with three samplers behind it: which one a request
//! meets depends on the Ollama version and the model's format.
//!
//! | Ollama | model | engine | semantics | module |
//! |---|---|---|---|---|
//! | v0.6.2 – v0.25.0-rc0 | GGUF of an architecture the Go engine runs (or `OLLAMA_NEW_ENGINE`) | its own Go runner, package `sample/` | `ollama-go` | [`go`] |
//! | v0.6.2 – v0.25.0-rc0 | any other GGUF | llama.cpp's chain inside Ollama (not modelled) | — | — |
//! | v0.30.0 – v0.33.0-rc2 | every GGUF | a llama-server it launches | `ollama` | [`llama_server`] |
//! | v0.32.10 – v0.33.0-rc2 | safetensors | the MLX runner, `x/mlxrunner/sample` | `ollama-mlx` | [`mlx`] |
//!
//! (Commit 9db4bdbad removed the Go runner after v0.25.0-rc0; there are no
//! v0.26–v0.29 tags. Each module's docs say what was read at which commit.)
//!
//! What every engine shares is written once here:
//!
//! * [`api`]: the fields of `api.Options` and the JSON type `FromMap`
//!   checks, and `FromMap`'s reading of one value;
//! * [`layers`]: `DefaultOptions()`, the model's parameters and the
//!   request's options layered, with the errors in Ollama's words;
//! * [`version`]: an Ollama release, each engine's span of them, and the
//!   default that moved between releases;
//! * [`openai`]: the OpenAI-compatible layer (`FromChatRequest`,
//!   `FromCompleteRequest`), which turns a `/v1/...` body into options;
//! * `seed`: what `seed` does on each engine's routes;
//! * [`model_params_from_show`]: a model's own parameters, as
//!   `ollama show --parameters` prints them;
//! * [`semantics`]: the three engines, for a model with or without them.
//!
//! docs/engines/ollama.md is the user's page: which engine a user gets, and
//! where each one's rules are documented.

#![deny(missing_docs)]

pub mod api;
mod format;
pub mod go;
pub mod layers;
pub mod llama_server;
pub mod mlx;
mod model_params;
pub mod openai;
mod seed;
pub mod version;

pub use go::{OllamaGo, OllamaOptions};
pub use llama_server::Ollama;
pub use mlx::{OllamaMlx, OllamaMlxParams};
pub use model_params::model_params_from_show;

use parity_core::{AnySemantics, Error};
use serde_json::{Map, Value};

/// Ollama, the server product all three of its engines (the llama-server
/// path, the Go sampler, the MLX runner) answer as; each engine's routes
/// name their build with [`parity_core::Server::at`].
pub const SERVER: parity_core::Server = parity_core::Server::new("Ollama");

/// Ollama's three semantics, in the order `compare semantics` lists them
/// (`ollama`, `ollama-go`, `ollama-mlx`), serving a model with no published
/// parameters.
pub fn semantics() -> Vec<Box<dyn AnySemantics>> {
    vec![
        Box::new(Ollama::default()),
        Box::new(OllamaGo::default()),
        Box::new(OllamaMlx::default()),
    ]
}

/// The same three, serving a model whose published parameters are `model`
/// (what [`model_params_from_show`] reads): each layers them under its
/// requests as Ollama does. The error is the first one's refusal of a
/// parameter, naming it and quoting its value.
pub fn serving(model: &Map<String, Value>) -> Result<Vec<Box<dyn AnySemantics>>, Error> {
    Ok(vec![
        Box::new(Ollama::with_model_params(model.clone())?),
        Box::new(OllamaGo::with_model_params(model.clone())?),
        Box::new(OllamaMlx::with_model_params(model.clone())?),
    ])
}
