//! What the binary's registry hands the library: every semantics, every
//! trace port, the engine a benchmark times, the beam search and the
//! speculative-decoding verifiers compared with transformers', and the
//! defaults of the commands that pick one engine. The library names no engine; `compare`'s
//! `registry.rs` is the one place that does.

use anyhow::Context as _;
use parity_core::AnySemantics;
use parity_core::beam::BeamSearch;
use parity_core::speculative::SpeculativeTable;
use parity_core::trace::Port;
use serde_json::{Map, Value};

/// One real sampling step of the benchmarked engine, set up as a literal port
/// of generate `kwargs` over fixed `logits` (its penalty, when the kwargs set
/// one, over `context`): each call of the returned closure draws one token.
pub type BenchStep = fn(
    kwargs: &Map<String, Value>,
    logits: &[f32],
    context: &[u32],
) -> anyhow::Result<Box<dyn FnMut() -> anyhow::Result<u32>>>;

/// The real engine `compare bench` times our sampler against.
#[derive(Clone, Copy)]
pub struct BenchEngine {
    /// Its semantics' name.
    pub name: &'static str,
    /// One of its sampling steps.
    pub step: BenchStep,
}

/// The engine a command picks when the user names none.
#[derive(Debug, Clone, Copy)]
pub struct Defaults {
    /// `translate --to`.
    pub translation: &'static str,
    /// `trace --port`.
    pub port: &'static str,
    /// `diff --pairs`, as `LEFT:RIGHT`.
    pub diff_pair: &'static str,
}

/// Every engine the commands can reach.
pub struct Engines {
    /// Every semantics, in the registry's order (reports and lists keep it).
    pub semantics: Vec<Box<dyn AnySemantics>>,
    /// The trace ports: a model run here, or logits an engine recorded.
    pub ports: Vec<Box<dyn Port>>,
    /// The engine `compare bench` times.
    pub bench: BenchEngine,
    /// The beam search `compare beam` runs beside transformers'.
    pub beam: Box<dyn BeamSearch>,
    /// The verifiers `compare speculative` tables.
    pub speculative: Box<dyn SpeculativeTable>,
    /// The defaults.
    pub defaults: Defaults,
}

impl Engines {
    /// Looks a semantics up by name; an unknown name is an error listing the
    /// known ones.
    pub fn find(&self, name: &str) -> anyhow::Result<&dyn AnySemantics> {
        find(&self.semantics, name)
    }

    /// The semantics' names, comma-separated, for messages.
    pub fn names(&self) -> String {
        names(&self.semantics)
    }

    /// The semantics that offer a translation (`compare translate --to`).
    pub fn translators(&self) -> Vec<&'static str> {
        let options = parity_core::TranslateOptions { context_len: 1 };
        self.semantics
            .iter()
            .filter(|s| s.translate(&Map::new(), &options).is_some())
            .map(|s| s.info().name)
            .collect()
    }

    /// Looks a port up by name; an unknown name is an error listing them.
    pub fn port(&self, name: &str) -> anyhow::Result<&dyn Port> {
        self.ports
            .iter()
            .find(|p| p.name() == name)
            .map(|p| &**p)
            .with_context(|| {
                let known: Vec<_> = self.ports.iter().map(|p| p.name()).collect();
                format!("unknown port {name:?} (known: {})", known.join(", "))
            })
    }
}

/// Looks a semantics up by name in `semantics`.
pub(crate) fn find<'r>(
    semantics: &'r [Box<dyn AnySemantics>],
    name: &str,
) -> anyhow::Result<&'r dyn AnySemantics> {
    semantics
        .iter()
        .find(|s| s.info().name == name)
        .map(|s| &**s)
        .with_context(|| format!("unknown semantics {name:?} (known: {})", names(semantics)))
}

/// The names in `semantics`, comma-separated.
pub(crate) fn names(semantics: &[Box<dyn AnySemantics>]) -> String {
    semantics
        .iter()
        .map(|s| s.info().name)
        .collect::<Vec<_>>()
        .join(", ")
}
