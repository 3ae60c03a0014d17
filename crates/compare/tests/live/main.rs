//! The `compare` tests that need a real component: the SmolLM2 GGUF
//! (scripts/fetch-model.sh), llama-server (scripts/build-llama-server.sh) or
//! a Chromium. Whether each is here is decided when the tests run, not when
//! they are built (issue #39: a model fetched after the first build must be
//! found), so this binary uses libtest-mimic's harness, whose tests can be
//! ignored at run time. A test whose component is missing is listed as
//! ignored with what it needs; with `CI` set it runs and fails with the
//! reason (../../../server-probe/tests/it/needs.rs).

// libtest-mimic's harness: these are tests, but not cfg(test), so clippy's
// allow-unwrap-in-tests (clippy.toml) does not reach them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

// The helpers and the JSON documents are shared with tests/it, which uses
// the rest of them.
#[allow(dead_code, unused_imports, unused_macros)]
#[path = "../it/helpers.rs"]
mod helpers;
#[path = "../../../server-probe/tests/it/needs.rs"]
mod needs;
#[path = "../common/probe.rs"]
mod probe_doc;
#[allow(dead_code, unused_imports)]
#[path = "../it/server_defaults.rs"]
mod server_defaults;
#[path = "../common/traces.rs"]
mod traces;

mod beam;
mod html;
mod probe;
mod trace;

use needs::{Needed, plain, trial};

/// Where scripts/fetch-model.sh puts the model (candle_adapter's default).
const MODEL: &str = ".cache/models/SmolLM2-135M-Instruct.Q4_1.gguf";

/// Where scripts/build-llama-server.sh puts llama-server.
const SERVER: &str = ".cache/llama-server/0.3.36/llama-server";

fn main() -> std::process::ExitCode {
    let args = libtest_mimic::Arguments::from_args();
    let model = || Needed::file(MODEL, "scripts/fetch-model.sh");
    let with_model = |name: &str, test: fn()| trial(name, "needs the model", &[model()], test);
    let browser = Needed::Program(
        &["chromium", "chromium-browser", "google-chrome"],
        "apt-get install chromium",
    );
    let server = [
        Needed::file(SERVER, "scripts/build-llama-server.sh"),
        model(),
    ];
    let trials = vec![
        plain(
            "needs::missing_components_are_named_with_how_to_get_them",
            needs::missing_components_are_named_with_how_to_get_them,
        ),
        with_model(
            "trace::candle_port_logits_distance_recomputes_from_exported_logits",
            trace::candle_port_logits_distance_recomputes_from_exported_logits,
        ),
        with_model(
            "trace::a_trace_from_another_model_is_detected_by_candle",
            trace::a_trace_from_another_model_is_detected_by_candle,
        ),
        with_model(
            "trace::a_prompt_longer_than_the_context_window_is_refused",
            trace::a_prompt_longer_than_the_context_window_is_refused,
        ),
        with_model(
            "server_defaults::the_real_smollm2_gguf_is_read_without_its_tensors",
            server_defaults::the_real_smollm2_gguf_is_read_without_its_tensors,
        ),
        with_model(
            "beam::candle_reruns_the_smollm2_searches",
            beam::candle_reruns_the_smollm2_searches,
        ),
        with_model(
            "beam::prefix_cache_logits_are_teacher_forcing_logits",
            beam::prefix_cache_logits_are_teacher_forcing_logits,
        ),
        trial(
            "html::html_report_renders_in_chromium",
            "needs a Chromium",
            &[browser],
            html::html_report_renders_in_chromium,
        ),
        trial(
            "probe::a_live_llama_server_is_explained_by_llama_cpp",
            "needs llama-server",
            &server,
            probe::a_live_llama_server_is_explained_by_llama_cpp,
        ),
        trial(
            "probe::a_live_llama_server_with_sampling_flags_is_explained_by_llama_cpp",
            "needs llama-server",
            &server,
            probe::a_live_llama_server_with_sampling_flags_is_explained_by_llama_cpp,
        ),
        trial(
            "probe::a_json_response_format_constrains_the_real_llama_servers_chat",
            "needs llama-server",
            &server,
            probe::a_json_response_format_constrains_the_real_llama_servers_chat,
        ),
    ];
    libtest_mimic::run(&args, trials).exit_code()
}
