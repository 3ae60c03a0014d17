//! Integration tests for the `compare` binary: each module runs the built
//! binary (`CARGO_BIN_EXE_compare`) and checks exit status, stdout and stderr.

mod check;
mod cli;
mod differential;
mod registry;
mod report;
mod robustness;
mod trace;
