//! What `seed` does on Ollama's routes, engine by engine.
//!
//! The Go engine (Ollama v0.6.2–v0.25):
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
//!
//! The llama-server path (v0.30.0 to v0.33.0-rc2): `options.seed` defaults
//! to -1 (api/types.go:1106 at v0.30.0, :1111 at v0.33.0-rc2), its OpenAI layer copies `seed` into the options
//! (openai/openai.go:595, 752 at v0.30.0; :666, 815 at v0.33.0-rc2), and
//! the runner sends it to llama-server's `/completion` as `"seed"`
//! (llm/llama_server.go:1912 at v0.30.0, :2168 at v0.33.0-rc2), where -1
//! is 0xFFFFFFFF as a uint32: llama.cpp's own rules.
//!
//! The MLX runner (safetensors models, v0.32.10–v0.33.0-rc2): `UseSeed` is
//! `options.seed >= 0` (x/mlxrunner/server.go:140); each slot then derives a key from the seed
//! and its own draw counter (x/mlxrunner/sample/sample.go:788-795
//! `nextRandomKey`); otherwise the key is nil and MLX's global generator
//! draws (x/mlxrunner/mlx/random.go:18-22).

use parity_core::{RouteSeed, SeedRule};

use crate::mlx::request;

const fn go(endpoint: parity_core::Endpoint) -> RouteSeed {
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

/// The Go engine's three routes (`go::request`).
pub(crate) const GO: &[RouteSeed] = &[
    go(crate::go::request::CHAT),
    go(crate::go::request::COMPLETIONS),
    go(crate::go::request::NATIVE),
];

const OLLAMA_VERSIONS: &str = "Ollama v0.30.0–v0.33.0-rc2 on llama.cpp";
const OLLAMA_SOURCE: &str = "llm/llama_server.go:2168 (v0.33.0-rc2) forwards options.seed \
                             (default -1, api/types.go:1111) to llama-server; \
                             src/llama-sampler.cpp:340-350";
const OLLAMA_NOTE: &str = "-1 reaches llama-server as 0xFFFFFFFF, LLAMA_DEFAULT_SEED";

const fn ollama(endpoint: crate::llama_server::Endpoint) -> RouteSeed {
    let endpoint = endpoint.route();
    RouteSeed {
        endpoint,
        setup: "",
        given: SeedRule::PerRequest,
        absent: SeedRule::Random,
        versions: OLLAMA_VERSIONS,
        source: OLLAMA_SOURCE,
        note: OLLAMA_NOTE,
    }
}

/// The llama-server path's three routes (names as in `llama_server::Endpoint::name`).
pub(crate) const LLAMA_SERVER: &[RouteSeed] = &[
    ollama(crate::llama_server::Endpoint::Chat),
    ollama(crate::llama_server::Endpoint::OpenAiChat),
    ollama(crate::llama_server::Endpoint::OpenAiCompletions),
];

const fn mlx(endpoint: parity_core::Endpoint) -> RouteSeed {
    RouteSeed {
        endpoint,
        setup: "",
        given: SeedRule::PerRequest,
        absent: SeedRule::ProcessGlobal,
        versions: "Ollama v0.32.10–v0.33.0-rc2 MLX runner",
        source: "x/mlxrunner/server.go:140 (UseSeed = seed >= 0), \
                 x/mlxrunner/sample/sample.go:788-795 (a key per slot from seed and counter)",
        note: "slots with identical options drawn in one batched pass share slot 0's key \
               (sample.go:664-668, 697-704, a TODO at v0.33.0-rc2)",
    }
}

/// The MLX runner's three routes (`mlx::request`).
pub(crate) const MLX: &[RouteSeed] = &[
    mlx(request::CHAT),
    mlx(request::COMPLETIONS),
    mlx(request::NATIVE),
];
