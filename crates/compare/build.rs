//! Tells the integration tests which real components this machine has, so a
//! test that needs one it lacks is listed as ignored (with the reason), not
//! as passed:
//!
//! * `has_model`: the SmolLM2 GGUF that scripts/fetch-model.sh fetches is in
//!   `.cache/models/` (the candle port of `compare trace`);
//! * `has_chromium`: a Chromium is on the PATH (the HTML report's test);
//! * `has_llama_server`: the llama-server of scripts/build-llama-server.sh and
//!   the model are there (`compare probe`'s live test).
//!
//! With `CI` set both are on whatever the machine has, so a missing component
//! fails its test there, as CI must (.ci/run fetches the model and installs
//! Chromium). Rust has no run-time skip; `#[cfg_attr(not(has_model), ignore =
//! "...")]` is the nearest: `cargo test` prints the test as ignored with its
//! reason. The flags are decided when this script runs: Cargo reruns it when
//! `.cache/models/`, the PATH or a folder on it changes (installing Chromium
//! changes `/usr/bin`). Where `.cache/models/` did not exist yet, run
//! `touch crates/compare/build.rs` after scripts/fetch-model.sh.

use std::env;
use std::path::Path;

/// Where scripts/fetch-model.sh puts the model (tests/it/trace.rs reads it there).
const MODEL: &str = "../../.cache/models/SmolLM2-135M-Instruct.Q4_1.gguf";

/// Where scripts/build-llama-server.sh puts llama-server (tests/it/probe.rs).
const SERVER: &str = "../../.cache/llama-server/0.3.36/llama-server";

/// The browsers tests/it/html.rs looks for.
const BROWSERS: [&str; 3] = ["chromium", "chromium-browser", "google-chrome"];

fn main() {
    println!("cargo::rustc-check-cfg=cfg(has_model)");
    println!("cargo::rustc-check-cfg=cfg(has_chromium)");
    println!("cargo::rustc-check-cfg=cfg(has_llama_server)");
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=CI");
    println!("cargo::rerun-if-env-changed=PATH");
    let model = Path::new(MODEL);
    // Only an existing folder is watched: a missing path makes Cargo rerun
    // this script (and rebuild the crate) on every build.
    if let Some(dir) = model.parent().filter(|d| d.is_dir()) {
        println!("cargo::rerun-if-changed={}", dir.display());
    }
    let ci = env::var_os("CI").is_some();
    if ci || model.is_file() {
        println!("cargo::rustc-cfg=has_model");
    }
    if on_path(&BROWSERS) || ci {
        println!("cargo::rustc-cfg=has_chromium");
    }
    let server = Path::new(SERVER);
    if let Some(dir) = server.parent().filter(|d| d.is_dir()) {
        println!("cargo::rerun-if-changed={}", dir.display());
    }
    if ci || (server.is_file() && model.is_file()) {
        println!("cargo::rustc-cfg=has_llama_server");
    }
}

/// Whether any of `names` is a file in a folder of the PATH; each folder is
/// watched, so installing or removing one reruns this script.
fn on_path(names: &[&str]) -> bool {
    let Some(path) = env::var_os("PATH") else {
        return false;
    };
    let dirs: Vec<_> = env::split_paths(&path).filter(|d| d.is_dir()).collect();
    for dir in &dirs {
        println!("cargo::rerun-if-changed={}", dir.display());
    }
    dirs.iter()
        .any(|dir| names.iter().any(|name| dir.join(name).is_file()))
}
