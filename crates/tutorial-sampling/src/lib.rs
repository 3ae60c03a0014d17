//! The algorithms of a decoding tutorial, exactly: its top-k/top-p sampler as
//! a semantics, and speculative decoding's first emitted token computed in
//! closed form for the tutorial's variant and for the real engines.
//!
//! The tutorial is chapter 6 ("推理与解码策略", inference and decoding
//! strategies) of Steven's *TorchCode* series, updated 2026-04-03: a
//! `sample_top_k_top_p` function, a beam search and a speculative-decoding
//! acceptance loop, each a few lines of torch. People learn sampling from
//! texts like it and then wonder why their numbers differ from transformers';
//! this crate states the tutorial's rules exactly and says where they part.
//!
//! - [`Tutorial`] ([`sampler`]): the sampler as a [`parity_core::Semantics`]
//!   named `tutorial`.
//! - [`speculative`]: the distribution of the first token a speculative
//!   decoding step emits, for the textbook rejection sampler, the tutorial's
//!   loop, transformers 5.23's `_speculative_sampling` and vLLM 0.32's
//!   rejection sampler, with the distance to the target, the acceptance rate
//!   and the expected accepted length.
//! - [`beam`]: the tutorial's beam search on any [`beam::LanguageModel`],
//!   beside transformers 5.23's (replayed step by step in
//!   `hf_sampling::beam`, with the hashed toy model the reference script
//!   runs); [`beam::TutorialSearch`] is it as `compare beam` runs it.
//! - [`speculative::Verifiers`]: the speculative table as `compare
//!   speculative` prints it.
//!
//! It deliberately does not draw tokens for generation: the sampler gives the
//! distribution, and the speculative module computes distributions instead of
//! simulating them (its tests simulate, to check the computation).
#![deny(missing_docs)]

pub mod beam;
pub mod sampler;
pub mod speculative;

pub use sampler::{Params, Tutorial};
