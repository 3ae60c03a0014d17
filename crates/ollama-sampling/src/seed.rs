//! What `seed` does on the Go engine's routes (Ollama v0.6.2–v0.25).
//!
//! The runner builds a sampler per sequence with the request's
//! `options.seed` (runner/ollamarunner/runner.go:902 at v0.24.0). With a
//! seed other than -1 the sampler owns a PCG generator seeded with it
//! (sample/samplers.go:130-138 at v0.6.2 and v0.24.0): per request. -1 is
//! the default (api/types.go:618 at v0.6.2) and leaves the generator nil,
//! so the draw takes `rand.Float32()` from math/rand/v2's global source
//! (sample/samplers.go:108 at v0.6.2, :102-105 at v0.24.0), which Go seeds
//! randomly at start and every request of the process draws from. The
//! OpenAI layer copies `seed` into the options (openai/openai.go:494, 563
//! at v0.6.2).

use parity_core::{RouteSeed, SeedRule};

const fn route(endpoint: parity_core::Endpoint) -> RouteSeed {
    RouteSeed {
        endpoint,
        setup: "",
        given: SeedRule::PerRequest,
        absent: SeedRule::ProcessGlobal,
        versions: "Ollama v0.6.2–v0.25 Go engine",
        source: "sample/samplers.go:130-138 (PCG per sampler when seed != -1), \
                 :102-105 at v0.24.0 (math/rand/v2's global source otherwise)",
        note: "the global source is seeded randomly at process start, so seedless draws \
               do not repeat",
    }
}

/// The three routes of `request.rs`.
pub(crate) const SEED: &[RouteSeed] = &[
    route(crate::request::CHAT),
    route(crate::request::COMPLETIONS),
    route(crate::request::NATIVE),
];
