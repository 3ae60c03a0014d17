//! What `seed` does on SGLang's OpenAI server (0.5.23).
//!
//! The OpenAI `seed` becomes `sampling_seed`
//! (sglang/srt/entrypoints/openai/serving_completions.py:173,
//! protocol.py:1233 for chat). The batch builds a per-request seed tensor
//! only with `--enable-deterministic-inference`, where a request without
//! one gets 42 (sglang/srt/sampling/sampling_batch_info.py:157-170);
//! otherwise `sampling_seed` is None and the sampler draws from torch's
//! global generator (sglang/srt/layers/sampler.py:791-800).

use parity_core::{RouteSeed, SeedRule};

use crate::Endpoint;

const fn route(endpoint: Endpoint, deterministic: bool) -> RouteSeed {
    let endpoint = endpoint.route();
    if deterministic {
        RouteSeed {
            endpoint,
            setup: "--enable-deterministic-inference",
            given: SeedRule::PerRequest,
            absent: SeedRule::Fixed { value: "42" },
            versions: "SGLang 0.5.23",
            source: "sglang/srt/sampling/sampling_batch_info.py:157-170",
            note: "",
        }
    } else {
        RouteSeed {
            endpoint,
            setup: "",
            given: SeedRule::Ignored,
            absent: SeedRule::ProcessGlobal,
            versions: "SGLang 0.5.23",
            source: "sglang/srt/sampling/sampling_batch_info.py:157-170 \
                     (no seed tensor without --enable-deterministic-inference)",
            note: "the field is accepted and mapped to sampling_seed, which nothing reads",
        }
    }
}

/// Both routes, each in both setups.
pub(crate) const SEED: &[RouteSeed] = &[
    route(Endpoint::Chat, false),
    route(Endpoint::Chat, true),
    route(Endpoint::Completions, false),
    route(Endpoint::Completions, true),
];
