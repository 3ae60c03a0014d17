//! Integration tests for parity-core: the committed fixtures load and keep
//! their invariants, and damaged fixture files are refused with a message
//! naming the file and the tensor or key.

mod bundled;
mod damaged;
mod own_model;
