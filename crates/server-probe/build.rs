//! Tells the integration tests whether this machine has the real llama-server
//! (scripts/build-llama-server.sh) and the SmolLM2 GGUF (scripts/fetch-model.sh):
//! without them a live test is listed as ignored, with the reason, instead of
//! passing. With `CI` set the flag is on whatever the machine has, so a
//! missing component fails its test there (.ci/run builds and fetches both).
//! Cargo reruns this when the `.cache` folders or `CI` change (or `touch
//! crates/server-probe/build.rs`).

use std::path::Path;

const SERVER: &str = "../../.cache/llama-server/0.3.36/llama-server";
const MODEL: &str = "../../.cache/models/SmolLM2-135M-Instruct.Q4_1.gguf";
const REPEAT_RECORDING: &str = "../../fixtures/server-probe/llama-server-repeat.json";

fn main() {
    println!("cargo::rustc-check-cfg=cfg(has_llama_server)");
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=CI");
    for file in [SERVER, MODEL] {
        // Only an existing folder is watched: a missing path makes Cargo rerun
        // this script on every build.
        if let Some(dir) = Path::new(file).parent().filter(|d| d.is_dir()) {
            println!("cargo::rerun-if-changed={}", dir.display());
        }
    }
    // The committed `--repeat` recording (made by the live test): its replay
    // test is ignored, with the reason, until it is there.
    println!("cargo::rustc-check-cfg=cfg(has_repeat_recording)");
    println!("cargo::rerun-if-changed=../../fixtures/server-probe");
    if Path::new(REPEAT_RECORDING).is_file() {
        println!("cargo::rustc-cfg=has_repeat_recording");
    }
    let ci = std::env::var_os("CI").is_some();
    if ci || (Path::new(SERVER).is_file() && Path::new(MODEL).is_file()) {
        println!("cargo::rustc-cfg=has_llama_server");
    }
}
