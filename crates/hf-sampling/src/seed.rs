//! What `seed` does in transformers 5.23.0: `generate(**request)` and
//! `transformers serve`.
//!
//! `generate()` has no seed: a `seed` kwarg is refused by
//! `_validate_model_kwargs` (generation/utils.py:1915, called at :2804),
//! and sampling draws with `torch.multinomial` from torch's global
//! generator (:3276). `transformers serve` calls `torch.manual_seed(seed)`
//! when the body has one (cli/serving/utils.py:1187-1188, `set_torch_seed`
//! at :637-641), reseeding the process-global generator that every
//! concurrent request draws from; `--default-seed` does the same once at
//! start (cli/serve.py:135-136).

use parity_core::{RouteSeed, SeedRule};

const SERVE_SOURCE: &str = "transformers/cli/serving/utils.py:1187-1188, :637-641 \
                            (torch.manual_seed)";

/// `generate(**request)` and the two serve routes.
pub(crate) const SEED: &[RouteSeed] = &[
    RouteSeed {
        endpoint: crate::request::GENERATE,
        setup: "",
        given: SeedRule::Refused,
        absent: SeedRule::ProcessGlobal,
        versions: "transformers 5.23.0",
        source: "transformers/generation/utils.py:1915 (_validate_model_kwargs), \
                 :3276 (torch.multinomial)",
        note: "call torch.manual_seed before generate() to fix the draw",
    },
    RouteSeed {
        endpoint: crate::serve::ServeEndpoint::ChatCompletions.route(),
        setup: "",
        given: SeedRule::ProcessGlobal,
        absent: SeedRule::ProcessGlobal,
        versions: "transformers 5.23.0",
        source: SERVE_SOURCE,
        note: "concurrent requests share the generator the seed reset",
    },
    RouteSeed {
        endpoint: crate::serve::ServeEndpoint::Completions.route(),
        setup: "",
        given: SeedRule::ProcessGlobal,
        absent: SeedRule::ProcessGlobal,
        versions: "transformers 5.23.0",
        source: SERVE_SOURCE,
        note: "concurrent requests share the generator the seed reset",
    },
];
