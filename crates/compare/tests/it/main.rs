//! Integration tests for the `compare` binary: each module runs the built
//! binary (`CARGO_BIN_EXE_compare`) and checks exit status, stdout and stderr.

mod beam;
mod check;
mod cli;
mod differential;
mod fragile;
mod helpers;
mod own_sampler;
mod probe;
// `compare probe --format json` read back (shared with tests/live).
#[path = "../common/probe.rs"]
mod probe_doc;
mod real_servers;
mod registry;
mod report;
mod request;
mod robustness;
mod schema;
mod server_defaults;
mod snapshots;
mod speculative;
mod tokens;
mod trace;
mod trust;
