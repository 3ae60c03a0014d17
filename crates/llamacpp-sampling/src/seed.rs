//! What `seed` does on llama-server's routes and llama_cpp.server's
//! (Ollama's, which forward it to the llama-server they run, are in
//! ollama-sampling).
//!
//! llama.cpp 0c1e57098 (the one inside llama-cpp-python 0.3.36):
//! - every task gets a sampler chain of its own, built from the request's
//!   params (tools/server/server-context.cpp:1764
//!   `slot.smpl.reset(common_sampler_init(model_tgt, task.params.sampling))`),
//!   and `dist`, `xtc` and mirostat are seeded with `params.seed`
//!   (common/sampling.cpp:369, 399, 403, 406): a per-request generator;
//! - the request's `seed` defaults to the server's `--seed`
//!   (tools/server/server-schema.cpp:176), which defaults to
//!   `LLAMA_DEFAULT_SEED` = 0xFFFFFFFF (include/llama.h:37,
//!   common/common.h:227); `llama_sampler_init_dist` replaces that value
//!   with `std::random_device` (or the clock) per chain
//!   (src/llama-sampler.cpp:340-350 `get_rng_seed`): a fresh random seed
//!   per request, unless the server was started with `-s N`.
//!
use parity_core::{RouteSeed, SeedRule};

const LLAMA_VERSIONS: &str = "llama.cpp 0c1e57098";
const LLAMA_SOURCE: &str = "tools/server/server-context.cpp:1764 (a chain per task), \
                            common/sampling.cpp:399, src/llama-sampler.cpp:340-350";

/// llama-server's route.
pub(crate) const LLAMA_SERVER: &[RouteSeed] = &[RouteSeed {
    endpoint: crate::served::ROUTE,
    setup: "",
    given: SeedRule::PerRequest,
    absent: SeedRule::Random,
    versions: LLAMA_VERSIONS,
    source: LLAMA_SOURCE,
    note: "the same route reads /completion's fields; a server started with `-s N` \
           gives seedless requests the fixed seed N (tools/server/server-schema.cpp:176)",
}];

const PYTHON_VERSIONS: &str = "llama-cpp-python 0.3.36";
const PYTHON_SOURCE: &str = "llama_cpp/llama.py:1387-1390 (seed given: set_seed(seed); none: \
                             set_seed(random.Random(self._seed).randint(0, 2**32))), :316 \
                             (Llama(seed=...): seed or LLAMA_DEFAULT_SEED), :762/:789 (add_dist(self._seed))";
const PYTHON_NOTE: &str = "a fresh server process derives the same seed sequence (random.Random of its \
                           start seed, then of each derived seed), so its first unseeded answers repeat \
                           across restarts (abetlen/llama-cpp-python #1809); seed -1 reaches dist as \
                           4294967295, a random seed; params llama_seed replays the derivation";

const fn python(route: crate::python::ServerRoute) -> RouteSeed {
    RouteSeed {
        endpoint: route.endpoint(),
        setup: "",
        given: SeedRule::PerRequest,
        absent: SeedRule::FixedAtStart {
            value: "random.Random(4294967295).randint(0, 2**32)",
        },
        versions: PYTHON_VERSIONS,
        source: PYTHON_SOURCE,
        note: PYTHON_NOTE,
    }
}

/// llama_cpp.server's two routes (names as in `python::routes`).
pub(crate) const LLAMA_CPP_PYTHON: &[RouteSeed] = &[
    python(crate::python::ServerRoute::Completions),
    python(crate::python::ServerRoute::Chat),
];
