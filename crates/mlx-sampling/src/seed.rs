//! What `seed` does on mlx-lm's server (0.32.2) and on Ollama's MLX runner
//! (v0.32.10–v0.33.0-rc2).
//!
//! mlx_lm/server.py 0.32.2: a request with a seed calls
//! `mx.random.seed(args.seed)` (server.py:1063-1064), MLX's one global
//! generator, and is never batched (`_is_batchable` needs `args.seed is
//! None`, server.py:768-773); a request without one is batched and draws
//! from the same global state, wherever the requests before left it.
//!
//! Ollama's MLX runner: `UseSeed` is `options.seed >= 0`
//! (x/mlxrunner/server.go:140); each slot then derives a key from the seed
//! and its own draw counter (x/mlxrunner/sample/sample.go:788-795
//! `nextRandomKey`); otherwise the key is nil and MLX's global generator
//! draws (x/mlxrunner/mlx/random.go:18-22).

use parity_core::{RouteSeed, SeedRule};

use crate::ollama_mlx_request::{CHAT, COMPLETIONS, NATIVE};

/// mlx-lm's route.
pub(crate) const MLX_LM: &[RouteSeed] = &[RouteSeed {
    endpoint: crate::params::SERVER_ROUTE,
    setup: "",
    given: SeedRule::ProcessGlobal,
    absent: SeedRule::ProcessGlobal,
    versions: "mlx-lm 0.32.2",
    source: "mlx_lm/server.py:1063-1064 (mx.random.seed), :768-773 (seeded requests \
             are not batched)",
    note: "a seeded request reseeds the global generator that concurrent seedless \
           requests draw from",
}];

const fn ollama_mlx(endpoint: parity_core::Endpoint) -> RouteSeed {
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

/// Ollama's MLX runner's three routes.
pub(crate) const OLLAMA_MLX: &[RouteSeed] = &[
    ollama_mlx(CHAT),
    ollama_mlx(COMPLETIONS),
    ollama_mlx(NATIVE),
];
