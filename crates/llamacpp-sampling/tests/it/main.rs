//! Integration tests for llamacpp-sampling: every case recorded from the real
//! llama.cpp sampler chain replayed exactly, request parsing and errors, and
//! Ollama's request mapping.

mod defaults;
mod errors;
mod explain;
mod ollama;
mod python;
mod recorded;
