//! Every engine `compare` knows, in one list: the one place in this crate
//! that names one.
//!
//! Adding an engine: implement [`parity_core::Semantics`] in its own crate
//! or module, then add one line to [`all`] (docs/architecture.md). Every
//! command reaches it from here through [`comparison::Engines`]; what it
//! offers (a reference role, a translation, requests) it says itself.

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::{Arg, ArgMatches};
use comparison::{BenchEngine, Defaults, Engines};
use hf_sampling::GenerationConfig;
use parity_core::AnySemantics;

/// The semantics, in the order `compare semantics` lists them. A model's
/// `generation_config.json` goes to the engines that read one.
pub fn all(
    generation_config: Option<&GenerationConfig>,
    layers: Layers,
) -> Vec<Box<dyn AnySemantics>> {
    let config = || generation_config.cloned();
    let config_map = || generation_config.map(|c| c.values().clone());
    let llama_server: Box<dyn AnySemantics> = match layers.llama_server {
        Some(defaults) => Box::new(llamacpp_sampling::LlamaServer::new(defaults)),
        None => Box::new(llamacpp_sampling::LlamaCpp),
    };
    let mut registry: Vec<Box<dyn AnySemantics>> = vec![
        Box::new(hf_sampling::Hf::new(config())),
        Box::new(hf_sampling::HfRust::new(config())),
        Box::new(candle_adapter::Candle::LITERAL),
        Box::new(candle_adapter::Candle::EXACT),
        Box::new(spec_sampler::Spec),
        llama_server,
        Box::new(llamacpp_sampling::LlamaCppPython),
    ];
    registry.extend(layers.ollama.unwrap_or_else(ollama_sampling::semantics));
    registry.extend::<[Box<dyn AnySemantics>; 6]>([
        Box::new(vllm_sampling::Vllm::AUTO.with_model_config(config_map())),
        match config_map() {
            Some(map) => Box::new(sglang_sampling::SglangServed::new(map)),
            None => Box::new(sglang_sampling::Sglang),
        },
        Box::new(mistralrs_sampling::MistralRs),
        Box::new(mlx_sampling::MlxLm),
        Box::new(onnxruntime_genai_sampling::OrtGenAi),
        Box::new(tutorial_sampling::Tutorial),
    ]);
    registry
}

/// What the command line says about the servers, layered under their
/// requests: a GGUF's `general.sampling.*` keys and llama-server's sampling
/// flags under llama-server's; a model's published Ollama parameters
/// (`ollama show --parameters`, as a JSON object) under the Ollama engines',
/// as Ollama layers them. Checked when read: [`all`] cannot fail.
#[derive(Default)]
pub struct Layers {
    /// llama-server's defaults from the GGUF and the operator's flags.
    llama_server: Option<llamacpp_sampling::ServerDefaults>,
    /// The Ollama engines, serving the model's parameters.
    ollama: Option<Vec<Box<dyn AnySemantics>>>,
}

impl Layers {
    /// The layers `options` name.
    fn of(options: &Options) -> anyhow::Result<Self> {
        let gguf = options.model_file.as_ref().and_then(ModelFile::gguf);
        let llama_server = if gguf.is_some() || options.server_args.is_some() {
            Some(llamacpp_sampling::ServerDefaults::new(
                gguf,
                options.server_args.as_deref(),
            )?)
        } else {
            None
        };
        let ollama = match &options.ollama_model_params {
            Some(params) => {
                Some(ollama_sampling::serving(params).context("--ollama-model-params")?)
            }
            None => None,
        };
        Ok(Self {
            llama_server,
            ollama,
        })
    }
}

/// Reads `--ollama-model-params JSON|FILE`: a JSON object, or a file holding
/// one or the text `ollama show --parameters` prints.
fn ollama_model_params(
    arg: Option<&str>,
) -> anyhow::Result<Option<serde_json::Map<String, serde_json::Value>>> {
    let Some(arg) = arg else { return Ok(None) };
    if arg.trim_start().starts_with('{') {
        return comparison::json_object_arg("--ollama-model-params", arg).map(Some);
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
        return comparison::json_object_arg(
            &format!("--ollama-model-params {}", path.display()),
            &text,
        )
        .map(Some);
    }
    ollama_sampling::model_params_from_show(&text)
        .with_context(|| format!("--ollama-model-params: {}", path.display()))
        .map(Some)
}

/// The engines every command reaches: [`all`] (with the model's Ollama
/// parameters layered in, when given), the trace ports, the benchmarked
/// engine, the beam search and speculative verifiers compared with
/// transformers', and the defaults.
pub fn engines(
    generation_config: Option<&GenerationConfig>,
    options: &Options,
) -> anyhow::Result<Engines> {
    Ok(Engines {
        semantics: all(generation_config, Layers::of(options)?),
        ..base_engines()
    })
}

/// A generation_config.json a command runs with, and the file it came from.
#[derive(Debug, Clone)]
pub struct ConfigFile {
    /// The file: `--generation-config FILE` or `--model-file FILE`.
    pub path: PathBuf,
    /// Its contents.
    pub config: GenerationConfig,
}

/// The generation config a command runs with: `--generation-config FILE`,
/// or `--model-file` when that is a generation_config.json (both is an
/// error: one model has one config).
pub fn command_generation_config(
    path: Option<&Path>,
    options: &Options,
) -> anyhow::Result<Option<ConfigFile>> {
    let from_model = options
        .model_file
        .as_ref()
        .and_then(ModelFile::generation_config);
    let given = match path {
        Some(p) => generation_config(Some(p))?.map(|config| ConfigFile {
            path: p.to_path_buf(),
            config,
        }),
        None => None,
    };
    match (given, from_model) {
        (Some(_), Some(_)) => anyhow::bail!(
            "--generation-config and --model-file both give a generation_config.json: give one"
        ),
        (Some(c), None) => Ok(Some(c)),
        (None, c) => Ok(c.cloned()),
    }
}

/// `--model-file FILE`, read: a GGUF's metadata (no tensors) or a
/// generation_config.json.
#[derive(Debug)]
pub enum ModelFile {
    /// A GGUF's header and key/value metadata.
    Gguf(parity_core::gguf::GgufMetadata),
    /// A Hugging Face generation_config.json, with its path.
    GenerationConfig(ConfigFile),
}

impl ModelFile {
    /// Reads `path`: a GGUF when it starts with GGUF's magic, else a
    /// generation_config.json.
    pub fn read(path: &Path) -> anyhow::Result<Self> {
        use std::io::Read;
        let mut magic = [0u8; 4];
        let n = std::fs::File::open(path)
            .and_then(|mut f| f.read(&mut magic))
            .with_context(|| format!("--model-file: reading {}", path.display()))?;
        if parity_core::gguf::GgufMetadata::is_gguf(&magic[..n]) {
            let meta = parity_core::gguf::GgufMetadata::from_path(path)
                .with_context(|| format!("--model-file: reading {}", path.display()))?
                .with_context(|| format!("--model-file {}", path.display()))?;
            return Ok(Self::Gguf(meta));
        }
        GenerationConfig::from_path(path)
            .with_context(|| {
                format!(
                    "--model-file {}: neither a GGUF (no `GGUF` magic) nor a generation_config.json",
                    path.display()
                )
            })
            .map(|config| {
                Self::GenerationConfig(ConfigFile {
                    path: path.to_path_buf(),
                    config,
                })
            })
    }

    fn gguf(&self) -> Option<&parity_core::gguf::GgufMetadata> {
        match self {
            Self::Gguf(m) => Some(m),
            Self::GenerationConfig(_) => None,
        }
    }

    fn generation_config(&self) -> Option<&ConfigFile> {
        match self {
            Self::GenerationConfig(c) => Some(c),
            Self::Gguf(_) => None,
        }
    }
}

/// [`engines`] with no generation config and no options.
fn base_engines() -> Engines {
    Engines {
        semantics: all(None, Layers::default()),
        ports: ports(),
        bench: BenchEngine {
            name: "candle",
            step: bench_step,
        },
        beam: Box::new(tutorial_sampling::beam::TutorialSearch),
        speculative: Box::new(tutorial_sampling::speculative::Verifiers),
        defaults: DEFAULTS,
    }
}

/// The engine a command picks when the user names none.
const DEFAULTS: Defaults = Defaults {
    translation: "candle",
    port: "candle",
    diff_pair: "hf:candle",
};

/// The ports `compare trace --port` and `compare beam --port` take: a model
/// run here, or logits an engine recorded beside the trace.
fn ports() -> Vec<Box<dyn parity_core::trace::Port>> {
    vec![
        Box::new(candle_adapter::port::CandlePort::default()),
        Box::new(llamacpp_sampling::LlamaCppPort),
    ]
}

/// One real sampling step of candle, set up as a literal port of generate
/// `kwargs` over fixed `logits` (the penalty, when the kwargs set one, over
/// `context`): each call draws one token.
fn bench_step(
    kwargs: &serde_json::Map<String, serde_json::Value>,
    logits: &[f32],
    context: &[u32],
) -> anyhow::Result<Box<dyn FnMut() -> anyhow::Result<u32>>> {
    let mut lp = candle_adapter::bench::CandleBench::literal(1, kwargs, logits, context)
        .context("building candle's LogitsProcessor")?;
    Ok(Box::new(move || Ok(lp.sample()?)))
}

/// What the command line says about the engines themselves, beyond each
/// command's options: the flags [`with_registry`] adds.
#[derive(Debug, Default)]
pub struct Options {
    /// `--ollama-model-params`, read.
    pub ollama_model_params: Option<serde_json::Map<String, serde_json::Value>>,
    /// `--model-file`, read.
    pub model_file: Option<ModelFile>,
    /// `--server-args`, as given.
    pub server_args: Option<String>,
}

impl Options {
    /// Reads the registry's flags from the matches of `subcommand`.
    pub fn from_matches(matches: &ArgMatches) -> anyhow::Result<Self> {
        let Some((_, sub)) = matches.subcommand() else {
            return Ok(Self::default());
        };
        let get = |name: &str| {
            sub.try_get_one::<String>(name)
                .ok()
                .flatten()
                .map(String::as_str)
        };
        let model_file = get(MODEL_FILE)
            .map(|p| ModelFile::read(Path::new(p)))
            .transpose()?;
        Ok(Self {
            ollama_model_params: ollama_model_params(get(OLLAMA_MODEL_PARAMS))?,
            model_file,
            server_args: get(SERVER_ARGS).map(str::to_string),
        })
    }
}

const OLLAMA_MODEL_PARAMS: &str = "ollama-model-params";
const MODEL_FILE: &str = "model-file";
const SERVER_ARGS: &str = "server-args";

/// `--model-file` and `--server-args`, for the commands that take them.
fn layer_args(command: clap::Command) -> clap::Command {
    command
        .arg(
            Arg::new(MODEL_FILE)
                .long(MODEL_FILE)
                .value_name("FILE")
                .help(
                    "The model file: a GGUF (only its metadata is read; llama-server takes its \
                     general.sampling.* keys as defaults under the request and the operator's \
                     flags) or a generation_config.json (as --generation-config).",
                ),
        )
        .arg(
            Arg::new(SERVER_ARGS)
                .long(SERVER_ARGS)
                .value_name("FLAGS")
                .allow_hyphen_values(true)
                .help(
                    "llama-server's sampling flags, as its operator starts it, e.g. \
                     '--top-k 25 --temp 0.9': defaults under the request, over the GGUF's keys \
                     (flags that are not modelled are refused with the reason).",
                ),
        )
}

/// A parser that takes a name from `known` (comma-separated); anything else
/// is a usage error listing them.
fn semantics_name(known: String) -> impl Fn(&str) -> Result<String, String> + Clone {
    move |name: &str| {
        if known.split(", ").any(|n| n == name) {
            Ok(name.to_string())
        } else {
            Err(format!("unknown semantics (known: {known})"))
        }
    }
}

/// `compare`'s clap command with what comes from the registry: the lists of
/// names in the help (the semantics `--pairs`, `--semantics`,
/// `--port-semantics` and `--target`/`--draft` take, the ports, the engines
/// `translate --to` takes, and the defaults), the parsers that check a
/// semantics' name, and `--ollama-model-params` on `request` and
/// `translate`.
pub fn with_registry(command: clap::Command) -> clap::Command {
    let engines = base_engines();
    let names = engines.names();
    let translators = engines.translators().join(", ");
    let port_names: Vec<_> = engines.ports.iter().map(|p| p.name()).collect();
    let port_names = port_names.join(", ");
    let add = |arg: Arg, text: String| {
        let help = arg.get_help().map(ToString::to_string).unwrap_or_default();
        arg.help(format!("{help} {text}"))
    };
    let semantics_list = format!("[semantics: {names}]");
    let ollama = |help: &'static str| {
        Arg::new(OLLAMA_MODEL_PARAMS)
            .long(OLLAMA_MODEL_PARAMS)
            .value_name("JSON|FILE")
            .help(help)
    };
    let Defaults {
        translation,
        port,
        diff_pair,
    } = DEFAULTS;
    command
        .long_about(None)
        .about(format!(
            "Check that LLM engines turn the same logits into the same next-token distribution: \
             {names}, side by side.\n\nWithout a subcommand, runs the default report on the \
             bundled fixtures."
        ))
        .mut_subcommand("report", |c| {
            layer_args(c.mut_arg("pairs", |a| add(a, semantics_list.clone())))
        })
        .mut_subcommand("diff", |c| {
            layer_args(c.mut_arg("pairs", |a| {
                add(a, format!("[default: {diff_pair}] {semantics_list}"))
            }))
        })
        .mut_subcommand("dist", |c| {
            layer_args(c.mut_arg("semantics", |a| {
                add(
                    a.value_parser(semantics_name(names.clone())),
                    semantics_list.clone(),
                )
            }))
        })
        .mut_subcommand("check", |c| {
            c.mut_arg("semantics", |a| {
                add(
                    a.value_parser(semantics_name(names.clone())),
                    semantics_list.clone(),
                )
            })
        })
        .mut_subcommand("trace", |c| {
            c.mut_arg("port", |a| {
                add(a, format!("[default: {port}] [ports: {port_names}]"))
            })
            .mut_arg("port_semantics", |a| {
                add(
                    a.value_parser(semantics_name(names.clone())),
                    semantics_list.clone(),
                )
            })
        })
        .mut_subcommand("beam", |c| {
            c.mut_arg("port", |a| add(a, format!("[ports: {port_names}]")))
        })
        .mut_subcommand("translate", |c| {
            layer_args(c).mut_arg("to", |a| {
                add(
                    a,
                    format!("[default: {translation}] [engines: {translators}]"),
                )
            })
            .arg(ollama(
                "The model's own Ollama parameters (see `compare request --help`), for `--to` an \
                 Ollama engine.",
            ))
        })
        .mut_subcommand("request", |c| {
            layer_args(c).arg(ollama(
                "The model's own Ollama parameters (its Modelfile PARAMETERs): a JSON object, or a \
                 file holding one or what `ollama show --parameters` prints. Ollama layers them \
                 between its defaults and the request.",
            ))
        })
}

/// Reads `--generation-config FILE`.
pub fn generation_config(path: Option<&Path>) -> anyhow::Result<Option<GenerationConfig>> {
    // The error names the file already.
    path.map(|p| GenerationConfig::from_path(p).context("--generation-config"))
        .transpose()
}
