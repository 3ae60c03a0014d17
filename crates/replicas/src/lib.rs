//! The runtimes the engines run on, replayed step for step: one module per
//! runtime, each a **hand-written replica** of that runtime's own code at a
//! named version (its module doc says whose code, which version, which
//! files). They are hand-written, not bindings or crates from crates.io,
//! because exactness needs them: which of several tied tokens survives a
//! sort, which token a seed draws and the last bit of a probability are
//! decided by these routines as the runtime implements them, comparison for
//! comparison and rounding for rounding. No runtime code is linked.
//!
//! - [`torch`]: torch 2.15.0's CPU `sort`, `softmax` (SLEEF's `expf_u10`,
//!   `Vectorized<float>` lanes), `cumsum`, `argmax`, and its CPU generator
//!   with `torch.multinomial(probs, 1)`;
//! - [`libstdcxx`]: libstdc++'s (GCC 12) `std::sort`, `std::nth_element`,
//!   `std::partial_sort`, `std::generate_canonical` and
//!   `std::discrete_distribution`;
//! - [`mt19937`]: the 32-bit Mersenne Twister every C++ and Python engine
//!   seeds (`std::mt19937`, torch's `at::mt19937`, CPython's `random`);
//! - [`cpython`]: CPython 3.11's `random.Random(n).randint`;
//! - [`go`]: Go's `math/rand/v2` PCG, `slices.SortFunc`, `container/heap`
//!   and `math.Exp`;
//! - [`mlx`]: MLX's threefry key sequence, `uniform`, `categorical` and the
//!   CPU `exp`/`sum` its sampler runs;
//! - [`murmur3`]: the Murmur3 32-bit hash the seeded Triton samplers (vLLM,
//!   SGLang) key their noise by.
//!
//! The crate depends on no crate of this workspace: each engine crate
//! imports the runtimes it replays from here, and no engine crate reaches
//! another engine's crate for a runtime.

#![deny(missing_docs)]

pub mod cpython;
pub mod go;
pub mod libstdcxx;
pub mod mlx;
pub mod mt19937;
pub mod murmur3;
pub mod torch;
