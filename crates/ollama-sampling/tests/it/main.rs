//! Integration tests of the `ollama-go` semantics: every case recorded from
//! Ollama's real Go sampler replayed, and the error, request and explain
//! paths.

mod errors;
mod explain;
mod recorded;
