//! What `seed` does in candle (candle-transformers 0.11.1): each
//! `LogitsProcessor` owns a `StdRng::seed_from_u64(seed)`, and the seed is
//! a required argument of `LogitsProcessor::new` and `from_sampling`
//! (src/generation/mod.rs:26-43). A port that builds one processor per
//! request has a per-request generator; one shared processor would be one
//! stream for everything.

use parity_core::{RouteSeed, SeedRule};

/// The literal port's route.
pub(crate) const SEED: &[RouteSeed] = &[RouteSeed {
    endpoint: crate::semantics::ROUTE,
    setup: "",
    given: SeedRule::PerRequest,
    absent: SeedRule::Required,
    versions: "candle-transformers 0.11.1",
    source: "candle-transformers src/generation/mod.rs:26-43 (StdRng::seed_from_u64 per \
             LogitsProcessor)",
    note: "per request when the port builds a processor per request; one processor shared \
           by requests is one stream for all",
}];
