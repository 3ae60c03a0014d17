//! Shared ground for every semantics in sampling-parity: the [`Semantics`]
//! trait and the one [`Distribution`] type every engine answers with, the
//! record fields they share ([`record`]), the JSON-lines driver both binaries
//! use ([`jsonl`]), the fixture files that carry real logits and recorded
//! engine outputs, the vocabulary used to print tokens, and the metrics that
//! compare two distributions.
//!
//! This crate deliberately knows nothing about any engine: it neither samples
//! nor depends on candle or on the semantic crates. Each semantics turns logits
//! into a full distribution on its own; this crate only says what shape the
//! answer has, how far two answers are apart and where the data they start
//! from lives.

#![deny(missing_docs)]

// `body!` names serde through this crate, so the crates using it need no
// serde dependency of their own; inside this crate the path works too.
extern crate self as parity_core;
#[doc(hidden)]
pub use serde as __serde;

pub mod arrays;
pub mod beam;
pub mod body;
pub mod endpoint;
pub mod fixture;
pub mod fragile;
pub mod gguf;
pub mod jsonl;
pub mod metrics;
pub mod params;
pub mod py;
pub mod record;
pub mod recording;
pub mod seed;
pub mod semantics;
pub mod speculative;
pub mod text;
pub mod token;
pub mod trace;
pub mod vocab;

pub use endpoint::{Endpoint, Protocol, Server};
pub use fixture::{
    Fixture, FixtureError, FixtureKind, MetadataProblem, ModelMeta, Rejected, Setting,
};
pub use fragile::{Fragile, FragileKind};
pub use metrics::{Comparison, TokenMass};
pub use record::{Logits, Record};
pub use seed::{RouteSeed, SeedRule};
pub use semantics::{
    AUTO_DRAWS, Against, AnySemantics, Context, Described, Distribution, DrawCheck, DrawCount,
    DrawOptions, Error, Explanation, FieldSource, Fix, Info, ParamInfo, Precision, Prepared,
    REQUEST_FIELDS_NOT_SAMPLING, Role, Route, Semantics, TranslateOptions, Translation,
    TranslationLine, Variant, not_sampling,
};
pub use vocab::Vocab;
