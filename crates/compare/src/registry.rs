//! Every semantics `compare` knows, in one list.
//!
//! Adding an engine: implement [`parity_core::Semantics`] in its own crate
//! or module, then add one line to [`all`] (docs/architecture.md). `dist`,
//! `diff`, `report --pairs` and `semantics` find it from here.

use std::path::Path;

use anyhow::Context;
use hf_sampling::GenerationConfig;
use parity_core::AnySemantics;

/// The semantics, in the order `compare semantics` lists them. A model's
/// `generation_config.json` goes to the engines that read one.
pub fn all(generation_config: Option<&GenerationConfig>) -> Vec<Box<dyn AnySemantics>> {
    let config = || generation_config.cloned();
    vec![
        Box::new(hf_sampling::Hf::new(config())),
        Box::new(hf_sampling::HfRust::new(config())),
        Box::new(candle_adapter::Candle::LITERAL),
        Box::new(candle_adapter::Candle::EXACT),
        Box::new(spec_sampler::Spec),
        Box::new(llamacpp_sampling::LlamaCpp),
        Box::new(llamacpp_sampling::Ollama),
        Box::new(vllm_sampling::Vllm),
        Box::new(mistralrs_sampling::MistralRs),
        Box::new(tutorial_sampling::Tutorial),
    ]
}

/// The names in [`all`], comma-separated, for error messages.
pub fn names() -> String {
    all(None)
        .iter()
        .map(|s| s.info().name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Looks a semantics up by name.
pub fn find<'r>(
    registry: &'r [Box<dyn AnySemantics>],
    name: &str,
) -> anyhow::Result<&'r dyn AnySemantics> {
    registry
        .iter()
        .find(|s| s.info().name == name)
        .map(|s| &**s)
        .with_context(|| {
            let known: Vec<_> = registry.iter().map(|s| s.info().name).collect();
            format!("unknown semantics {name:?} (known: {})", known.join(", "))
        })
}

/// Reads `--generation-config FILE`.
pub fn generation_config(path: Option<&Path>) -> anyhow::Result<Option<GenerationConfig>> {
    path.map(|p| GenerationConfig::from_path(p).with_context(|| format!("reading {}", p.display())))
        .transpose()
}
