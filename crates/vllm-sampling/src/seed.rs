//! What `seed` does on vLLM's OpenAI server (0.32.0, 0.33.0).
//!
//! V1 sampler (vllm/v1/sample/ops/topk_topp_sampler.py at 0.33.0): a
//! seeded request owns a `torch.Generator` (vllm/v1/worker/gpu_input_batch.py:427-428),
//! and `random_sample` draws its row of exponential noise from it after
//! filling every row from torch's global generator (:616-627; the same at
//! 0.32.0, :565-577); `forward_cpu` likewise takes a seeded row's seed from
//! its generator (:373-377 at 0.33.0). A seedless request's row comes from
//! the global generator the whole batch shares. Model Runner V2, the
//! default on CUDA (`vllm/config/vllm.py:730-767`; `runner: "v2-gpu"`),
//! gives a seedless request a random seed of its own
//! (vllm/v1/worker/gpu/sample/states.py:54-58) and keys the noise by
//! (seed, position, token) with Murmur3 (sample/gumbel.py:79-131).
//!
//! vllm-project/vllm #51226 (0.26.0, CPU): `forward_cpu` dropped every
//! request's generator when one batch-mate had no seed; PR #51866 changed
//! the test to `not generators`; the code read at 0.32.0 and 0.33.0 keeps
//! them.

use parity_core::{RouteSeed, SeedRule};

const VERSIONS: &str = "vLLM 0.32.0, 0.33.0";

/// The one route.
pub(crate) const SEED: &[RouteSeed] = &[
    RouteSeed {
        endpoint: crate::ROUTE,
        setup: "",
        given: SeedRule::PerRequest,
        absent: SeedRule::ProcessGlobal,
        versions: VERSIONS,
        source: "vllm/v1/sample/ops/topk_topp_sampler.py:616-627 (random_sample), \
                 :373-377 (forward_cpu) at 0.33.0",
        note: "on CPU before PR #51866 (0.26.0, vllm #51226) a seeded request batched with \
               a seedless one lost its generator; logits still depend on the batch unless \
               VLLM_BATCH_INVARIANT=1",
    },
    RouteSeed {
        endpoint: crate::ROUTE,
        setup: "Model Runner V2 (the CUDA default; runner \"v2-gpu\")",
        given: SeedRule::PerRequest,
        absent: SeedRule::Random,
        versions: VERSIONS,
        source: "vllm/v1/worker/gpu/sample/states.py:54-58, sample/gumbel.py:79-131 at 0.33.0",
        note: "the noise is murmur3(seed, position, token), the same in any batch (the logits may still depend on it); FlashInfer's sampler draws instead when no request of the batch is seeded or greedy",
    },
];
