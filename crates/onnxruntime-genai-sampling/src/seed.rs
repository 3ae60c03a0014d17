//! What `random_seed` does in ONNX Runtime GenAI.
//!
//! Each `Generator` owns one `std::mt19937`, made when the generator is
//! (src/generators.cpp `CreateRandomGenerator`, a0c04eb13): a
//! `random_seed` ≥ 0 seeds it with that value; -1, the default
//! (src/config.h `struct Search`), fills a `std::seed_seq` from
//! `std::random_device`. Every sampled token of that generator draws from
//! it, in order; the argmax draws nothing.

use parity_core::{RouteSeed, SeedRule};

/// The one "route": the search options.
pub(crate) const SEED: &[RouteSeed] = &[RouteSeed {
    endpoint: super::ROUTE,
    setup: "",
    given: SeedRule::PerRequest,
    absent: SeedRule::Random,
    versions: "onnxruntime-genai 0.18.0 (source read at a0c04eb13, 0.16.0-dev)",
    source: "src/generators.cpp CreateRandomGenerator; src/config.h Search::random_seed{-1}",
    note: "the seed is `random_seed`, per generator; an OpenAI-style `seed` is not a search option and is refused",
}];
