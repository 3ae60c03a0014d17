//! What `seed` does on mlx-lm's server (0.32.2) (Ollama's MLX runner's
//! routes are in ollama-sampling).
//!
//! mlx_lm/server.py 0.32.2: a request with a seed calls
//! `mx.random.seed(args.seed)` (server.py:1063-1064), MLX's one global
//! generator, and is never batched (`_is_batchable` needs `args.seed is
//! None`, server.py:768-773); a request without one is batched and draws
//! from the same global state, wherever the requests before left it.

use parity_core::{RouteSeed, SeedRule};

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
