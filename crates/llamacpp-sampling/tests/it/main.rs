//! Integration tests for llamacpp-sampling: every case recorded from the real
//! llama.cpp sampler chain replayed exactly, request parsing and errors;
//! llama.cpp b11434 replayed too, and its backend
//! sampling on the CPU compared with the chain.

mod backend;
mod defaults;
mod errors;
mod explain;
mod python;
mod recorded;
