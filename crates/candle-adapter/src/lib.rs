//! candle-adapter: candle's sampling, run for real and mirrored as a distribution.
//!
//! # Why this crate exists
//!
//! candle's `LogitsProcessor` returns a token, never the distribution it drew
//! from, and the functions that truncate it (`sample_topk`, `sample_topp`,
//! `sample_topk_topp`) are private. To compare candle with transformers or the
//! written spec *as distributions*, this crate
//!
//! 1. runs the **real thing**: `candle_transformers::generation::LogitsProcessor`
//!    with every `Sampling` variant on a CPU tensor, optionally after the real
//!    `candle_transformers::utils::apply_repeat_penalty` ([`real_draws`],
//!    [`CandleRun::real_draws`]);
//! 2. builds the **mirror** ([`CandleRun::mirrored`], [`Mirrored`]): the exact candidates,
//!    in candle's order, and f32 weights candle hands to `WeightedIndex`,
//!    computed with candle's own `softmax_last_dim` and a line-for-line copy of
//!    the private truncation;
//! 3. **proves** they agree ([`CandleRun::verify`]): replaying
//!    `StdRng::seed_from_u64(seed)` + `WeightedIndex` over the mirror must pick
//!    the real processor's token on every draw, and the real draws' frequencies
//!    are tested (chi-square, [`stats`]) against the mirror and, optionally,
//!    another semantics.
//!
//! It also holds candle's view of transformers: the repeat-penalty windows
//! ([`penalty_windows`]), a `sample_f` closure that gives transformers'
//! top-k (ties kept, renormalised) ([`closure::HfTopK`]), and [`translate`]
//! from transformers generation parameters to candle.
//!
//! [`model`] runs a real GGUF model (candle-transformers' `quantized_llama`)
//! and returns its raw logits, for `compare trace`.
//!
//! This is the only crate in the workspace that depends on candle; its public
//! API takes and returns plain Rust types (`&[f32]`, `Vec`, its own enums).
//!
//! # What it mirrors
//!
//! candle **0.11.1** (CPU), with rand 0.9 (the version candle uses):
//! - `candle-transformers-0.11.1/src/generation/mod.rs`: `Sampling`,
//!   `LogitsProcessor::{from_sampling, sample_f, sample_topp, sample_topk,
//!   sample_topk_topp, sample_multinomial}`;
//! - `candle-transformers-0.11.1/src/utils.rs`: `apply_repeat_penalty`;
//! - `candle-nn-0.11.1/src/ops.rs`: `softmax_last_dim` (called, not copied);
//! - `candle-nn-0.11.1/src/sampling.rs`: `gumbel_softmax` (modelled in
//!   [`gumbel`]; its RNG is candle's device RNG and cannot be replayed);
//! - `rand-0.9/src/distr/weighted/weighted_index.rs`: `WeightedIndex` (called).
//!
//! It deliberately does not re-implement candle's softmax or temperature
//! scaling (`logits / T` is candle's `affine(1/T, 0)`, a multiplication by the
//! f32 reciprocal): both are called on the same tensor, so the weights are
//! candle's bit for bit.
#![deny(missing_docs)]

#[cfg(feature = "bench")]
pub mod bench;
pub mod closure;
pub mod dropin;
mod error;
pub mod gumbel;
mod mirror;
pub mod model;
mod params;
mod penalty;
pub mod port;
mod run;
mod seed;
mod semantics;
pub mod stats;
mod translate;

pub use closure::HfTopK;
pub use error::AdapterError;
pub use gumbel::GumbelDistribution;
pub use mirror::{Draw, Mirrored};
pub use params::{CandleParams, CandleSampling, RepeatPenalty, Window};
pub use penalty::{PenaltyWindow, apply_repeat_penalty, penalty_windows};
pub use run::{
    CandleRun, Disagreement, Replay, Verification, VerifyOptions, forget_shared_streams, real_draws,
};
pub use semantics::{Candle, EXAMPLE_WINDOWS, fix_for_literal};
pub use translate::{TranslateWarning, Translation, literal, translate, translate_kwargs};
