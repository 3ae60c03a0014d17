//! Integration tests of Ollama's three semantics: every case recorded from
//! the Go engine's real sampler and from the MLX runner's sampler ops
//! replayed; the llama-server path's option layering and its request,
//! replayed through the recorded llama.cpp chain; the error, request and
//! explain paths.

mod errors;
mod explain;
mod llama_server;
mod mlx;
mod mlx_request;
mod recorded;
