//! What `seed` does on mistral.rs' OpenAI server (v0.9.0–v0.9.2).
//!
//! The chat request struct has no `seed` field (and no
//! `deny_unknown_fields`), so the field is dropped unread. The engine owns
//! one `Isaac64Rng`, seeded with the constant `SEED` = 0 when it starts
//! (mistralrs-core/src/engine/mod.rs:110, :469 at v0.9.2), and every
//! request of the process draws from it in the order the engine runs them.
//! A freshly started server has already drawn once: its startup dummy run
//! (mistralrs-core/src/lib.rs:1604-1676). The server's `--seed` seeds the
//! device (`device.set_seed`, mistralrs-server-core/src/mistralrs_for_server_builder.rs:1207-1208),
//! not that generator. The params `draws` and `earlier_draws` replay it
//! (`crate::draw`), checked against the recorded sampler.

use parity_core::{RouteSeed, SeedRule};

/// The one route.
pub(crate) const SEED: &[RouteSeed] = &[RouteSeed {
    endpoint: crate::ROUTE,
    setup: "",
    given: SeedRule::Ignored,
    absent: SeedRule::FixedAtStart { value: "0" },
    versions: "mistral.rs v0.9.0–v0.9.2",
    source: "mistralrs-core/src/engine/mod.rs:110, :469 at v0.9.2 \
             (one Isaac64Rng::seed_from_u64(0) per engine)",
    note: "one draw per sampled token, shared by all requests in arrival order; a freshly \
           started server's startup dummy run takes the first, so its first request draws \
           as earlier_draws = 1 (params draws/earlier_draws replay this)",
}];
