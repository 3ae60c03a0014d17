//! Shared ground for every semantics in sampling-parity: the fixture files that
//! carry real logits and transformers' recorded scores, the vocabulary used to
//! print tokens, and the metrics that compare two distributions.
//!
//! This crate deliberately knows nothing about any engine: it neither samples
//! nor depends on candle or on the semantic crates. Each semantics turns logits
//! into a full distribution on its own; this crate only says how far two such
//! distributions are apart and where the data they start from lives.

#![deny(missing_docs)]

pub mod fixture;
pub mod metrics;
pub mod vocab;

pub use fixture::{Fixture, FixtureError, FixtureKind, ModelMeta, Rejected, Setting};
pub use metrics::{Comparison, TokenMass};
pub use vocab::Vocab;
