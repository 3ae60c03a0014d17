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
        Box::new(llamacpp_sampling::Ollama::default()),
        Box::new(ollama_sampling::OllamaGo::default()),
        Box::new(mlx_sampling::OllamaMlx::default()),
        Box::new(vllm_sampling::Vllm::AUTO),
        Box::new(sglang_sampling::Sglang),
        Box::new(mistralrs_sampling::MistralRs),
        Box::new(mlx_sampling::MlxLm),
        Box::new(tutorial_sampling::Tutorial),
    ]
}

/// [`all`], with a model's published Ollama parameters (`ollama show
/// --parameters`, as a JSON object) layered under the requests of the
/// Ollama engines that read them, as Ollama layers them.
pub fn with_ollama_model_params(
    generation_config: Option<&GenerationConfig>,
    ollama_model_params: Option<&serde_json::Map<String, serde_json::Value>>,
) -> anyhow::Result<Vec<Box<dyn AnySemantics>>> {
    let mut registry = all(generation_config);
    let Some(params) = ollama_model_params else {
        return Ok(registry);
    };
    for s in &mut registry {
        let layered: Option<Box<dyn AnySemantics>> = match s.info().name {
            "ollama" => Some(Box::new(
                llamacpp_sampling::Ollama::with_model_params(params.clone())
                    .context("--ollama-model-params")?,
            )),
            "ollama-go" => Some(Box::new(
                ollama_sampling::OllamaGo::with_model_params(params.clone())
                    .context("--ollama-model-params")?,
            )),
            "ollama-mlx" => Some(Box::new(
                mlx_sampling::OllamaMlx::with_model_params(params.clone())
                    .context("--ollama-model-params")?,
            )),
            _ => None,
        };
        if let Some(layered) = layered {
            *s = layered;
        }
    }
    Ok(registry)
}

/// Reads `--ollama-model-params JSON|FILE`: a JSON object, or a file holding
/// one or the text `ollama show --parameters` prints.
pub fn ollama_model_params(
    arg: Option<&str>,
) -> anyhow::Result<Option<serde_json::Map<String, serde_json::Value>>> {
    let Some(arg) = arg else { return Ok(None) };
    if arg.trim_start().starts_with('{') {
        return crate::commands::json_object_arg("--ollama-model-params", arg).map(Some);
    }
    let path = Path::new(arg);
    let bytes = parity_core::fixture::read_at_most(path, 1 << 20)
        .with_context(|| format!("--ollama-model-params: reading {}", path.display()))?
        .map_err(|_| {
            anyhow::anyhow!(
                "--ollama-model-params: {} is over 1 MiB; a model's parameters are a few lines",
                path.display()
            )
        })?;
    let text = String::from_utf8(bytes)
        .with_context(|| format!("--ollama-model-params: {} is not UTF-8", path.display()))?;
    if text.trim_start().starts_with('{') {
        return crate::commands::json_object_arg(
            &format!("--ollama-model-params {}", path.display()),
            &text,
        )
        .map(Some);
    }
    llamacpp_sampling::ollama::model_params_from_show(&text)
        .with_context(|| format!("--ollama-model-params: {}", path.display()))
        .map(Some)
}

/// The engine `compare translate` writes for when `--to` is not given.
pub const DEFAULT_TRANSLATION: &str = "candle";

/// The port `compare trace` compares with transformers when `--port` is not
/// given.
pub const DEFAULT_PORT: &str = "candle";

/// The ports `compare trace --port` takes: a model run here, or logits an
/// engine recorded beside the trace.
pub fn ports() -> Vec<Box<dyn parity_core::trace::Port>> {
    vec![
        Box::new(candle_adapter::port::CandlePort::default()),
        Box::new(llamacpp_sampling::LlamaCppPort),
    ]
}

/// The real engine `compare bench` times our sampler against.
pub const BENCH_ENGINE: &str = "candle";

/// One real sampling step of [`BENCH_ENGINE`], set up as a literal port of
/// generate `kwargs` over fixed `logits` (the penalty, when the kwargs set
/// one, over `context`): each call draws one token.
pub fn bench_step<'a>(
    kwargs: &serde_json::Map<String, serde_json::Value>,
    logits: &[f32],
    context: &[u32],
) -> anyhow::Result<Box<dyn FnMut() -> anyhow::Result<u32> + 'a>> {
    let mut lp = candle_adapter::bench::CandleBench::literal(1, kwargs, logits, context)
        .context("building candle's LogitsProcessor")?;
    Ok(Box::new(move || Ok(lp.sample()?)))
}

/// The pair `compare diff` compares when `--pairs` is not given.
pub const DEFAULT_DIFF_PAIR: &str = "hf:candle";

/// The semantics that offer a translation (`compare translate --to`).
pub fn translators(registry: &[Box<dyn AnySemantics>]) -> Vec<&'static str> {
    let options = parity_core::TranslateOptions { context_len: 1 };
    registry
        .iter()
        .filter(|s| s.translate(&serde_json::Map::new(), &options).is_some())
        .map(|s| s.info().name)
        .collect()
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

/// `compare`'s clap command with the lists that come from the registry
/// written into its help: the semantics `--pairs`, `--semantics`,
/// `--port-semantics` and `--target`/`--draft` take, the engines
/// `translate --to` takes, and the defaults.
pub fn with_names_in_help(command: clap::Command) -> clap::Command {
    let registry = all(None);
    let names = registry
        .iter()
        .map(|s| s.info().name)
        .collect::<Vec<_>>()
        .join(", ");
    let translators = translators(&registry).join(", ");
    let add = |arg: clap::Arg, text: String| {
        let help = arg.get_help().map(ToString::to_string).unwrap_or_default();
        arg.help(format!("{help} {text}"))
    };
    let semantics_list = format!("[semantics: {names}]");
    command
        .long_about(None)
        .about(format!(
            "Check that LLM engines turn the same logits into the same next-token distribution: \
             {names}, side by side.\n\nWithout a subcommand, runs the default report on the \
             bundled fixtures."
        ))
        .mut_subcommand("report", |c| {
            c.mut_arg("pairs", |a| add(a, semantics_list.clone()))
        })
        .mut_subcommand("diff", |c| {
            c.mut_arg("pairs", |a| {
                add(
                    a,
                    format!("[default: {DEFAULT_DIFF_PAIR}] {semantics_list}"),
                )
            })
        })
        .mut_subcommand("dist", |c| {
            c.mut_arg("semantics", |a| add(a, semantics_list.clone()))
        })
        .mut_subcommand("trace", |c| {
            let ports: Vec<_> = ports().iter().map(|p| p.name()).collect();
            c.mut_arg("port", |a| {
                add(
                    a,
                    format!("[default: {DEFAULT_PORT}] [ports: {}]", ports.join(", ")),
                )
            })
            .mut_arg("port_semantics", |a| add(a, semantics_list.clone()))
        })
        .mut_subcommand("translate", |c| {
            c.mut_arg("to", |a| {
                add(
                    a,
                    format!("[default: {DEFAULT_TRANSLATION}] [engines: {translators}]"),
                )
            })
        })
}

/// Reads `--generation-config FILE`.
pub fn generation_config(path: Option<&Path>) -> anyhow::Result<Option<GenerationConfig>> {
    path.map(|p| GenerationConfig::from_path(p).with_context(|| format!("reading {}", p.display())))
        .transpose()
}
