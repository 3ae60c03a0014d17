//! Integration tests for hf-sampling: parity with recorded transformers outputs,
//! parameter resolution, drawing.

mod crosscheck;
mod draw;
mod fast;
mod fixtures;
mod genconfig;
mod processors;
mod request_serve;
mod resolve;
mod torch_seeded;
