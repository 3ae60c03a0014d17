//! Integration tests for llamacpp-sampling: every case recorded from the real
//! llama.cpp sampler chain replayed exactly, request parsing and errors, and
//! Ollama's request mapping; llama.cpp b11434 replayed too, and its backend
//! sampling on the CPU compared with the chain.

mod backend;
mod defaults;
mod errors;
mod explain;
mod ollama;
mod python;
mod recorded;
