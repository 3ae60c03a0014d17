//! transformers as [`parity_core::Semantics`]: `hf-rust` (this crate's
//! processor chain) and `hf` (transformers' own recorded scores where a
//! fixture has them, else the same chain), plus the words that describe
//! transformers' side of every known difference, for the other engines'
//! explanations.

use parity_core::{
    Context, Described, Distribution, Error, Fragile, Info, Logits, ParamInfo, Precision, Route,
    Semantics,
};
use serde_json::{Map, Value};

use crate::params::{GenerationConfig, GenerationParams, resolve};

/// The generate kwargs both transformers semantics read (their defaults are
/// transformers' `_get_default_generation_params`), from
/// [`GenerationParams`]' declaration.
const PARAMS: &[ParamInfo] = crate::params::SAMPLING_PARAMS;

static HF_RUST: Info = Info {
    name: "hf-rust",
    engine: "transformers 5.23.0 / torch 2.15.0 (CPU), re-implemented; 4.57.6 or 5.0.0 with transformers=\"4.57.6\" or \"5.0.0\"",
    summary: "generate()'s logits processors and softmax in f32, replaying torch's sort and SLEEF softmax",
    verified_against: "scores bit-identical to real generate() output_scores on 29 fixtures x 441 \
                       settings and 320 committed random cross-check runs; same accept/reject; \
                       fixtures/genconfig: 258 (model file, settings, route) cases recorded from \
                       each of 4.57.6, 5.0.0 and 5.23.0, processors, values and scores bit for bit",
    params: PARAMS,
};

static HF: Info = Info {
    name: "hf",
    engine: "transformers 5.23.0 / torch 2.15.0 (CPU)",
    summary: "transformers itself: the scores recorded from generate() (params `scores`), \
              softmax or one-hot of the argmax; without a recording, computed as hf-rust",
    verified_against: "is the reference: fixtures recorded by scripts/reference/hf_reference.py",
    params: PARAMS,
};

/// Generate kwargs resolved as transformers resolves them.
fn resolved(
    kwargs: &Map<String, Value>,
    config: Option<&GenerationConfig>,
) -> Result<GenerationParams, Error> {
    resolve(kwargs, config).map_err(Error::new)
}

/// `hf-rust`: this crate's re-implementation of `generate()`'s processors.
#[derive(Debug, Clone, Default)]
pub struct HfRust {
    config: Option<GenerationConfig>,
}

impl HfRust {
    /// With a model's `generation_config.json` between the kwargs and
    /// transformers' defaults.
    pub fn new(config: Option<GenerationConfig>) -> Self {
        Self { config }
    }
}

/// transformers' fragile decisions on these logits (none when they cannot
/// be read as f32 or the params fail: the distribution says why).
fn fragile_at(logits: &Logits, context: &Context<'_>, params: &GenerationParams) -> Vec<Fragile> {
    let Ok(logits) = logits.to_f32() else {
        return Vec::new();
    };
    crate::fragile::fragile(&logits, context.input_ids(), context.prompt_len(), params)
        .unwrap_or_default()
}

fn computed(
    logits: &Logits,
    context: &Context<'_>,
    params: &GenerationParams,
) -> Result<Distribution, Error> {
    let logits = logits.to_f32()?;
    let out = crate::process_at(&logits, context.input_ids(), context.prompt_len(), params)
        .map_err(Error::new)?;
    Ok(with_penalised(out, logits, context, params))
}

/// The distribution of `out`, with the penalised logits when a repetition
/// penalty applies (`logits` are the step's; penalised here).
fn with_penalised(
    out: crate::HfOutput,
    mut logits: Vec<f32>,
    context: &Context<'_>,
    params: &GenerationParams,
) -> Distribution {
    let dist = Distribution::from_f32(&out.probs).with_scores(out.scores);
    if params.repetition_penalty == 1.0 {
        return dist;
    }
    // The penalised logits, as the recorded side gives them ([`Hf`]), so a
    // row computed here compares penalties too (a repeat window's max
    // |Δ logit|).
    crate::ops::repetition_penalty(&mut logits, context.input_ids(), params.repetition_penalty);
    dist.with_penalised(logits)
}

impl Semantics for HfRust {
    type Params = GenerationParams;

    fn info(&self) -> &'static Info {
        &HF_RUST
    }

    fn role(&self) -> parity_core::Role {
        parity_core::Role::ReferenceComputed
    }

    fn parse_params(&self, params: &Map<String, Value>) -> Result<GenerationParams, Error> {
        resolved(params, self.config.as_ref())
    }

    fn distribution(
        &self,
        logits: &Logits,
        context: &Context<'_>,
        params: &GenerationParams,
    ) -> Result<Distribution, Error> {
        computed(logits, context, params)
    }

    fn from_generate(
        &self,
        kwargs: &Map<String, Value>,
    ) -> Option<Result<GenerationParams, Error>> {
        Some(self.parse_params(kwargs))
    }

    fn reads_generation_config(&self) -> bool {
        true
    }

    fn seed(&self) -> &'static [parity_core::RouteSeed] {
        crate::seed::SEED
    }

    /// `generate(**request)` (the reference) and `transformers serve`; see
    /// `request.rs`. Both merge the generation config this semantics was
    /// built with.
    fn from_request(
        &self,
        request: &Map<String, Value>,
        _generation_config: Option<&Map<String, Value>>,
    ) -> Vec<Route<GenerationParams>> {
        crate::request::routes(request, self.config.as_ref())
    }

    fn describe(&self, params: &GenerationParams) -> Option<Described> {
        Some(Described::Fields(params.sampling_values()))
    }

    fn fragile(
        &self,
        logits: &Logits,
        context: &Context<'_>,
        params: &GenerationParams,
    ) -> Vec<Fragile> {
        fragile_at(logits, context, params)
    }

    /// One run of the processor chain for both (one top-p sort, not three).
    fn distribution_and_fragile(
        &self,
        logits: &Logits,
        context: &Context<'_>,
        params: &GenerationParams,
    ) -> Result<(Distribution, Vec<Fragile>), Error> {
        let logits = logits.to_f32()?;
        let (out, fragile) =
            crate::process_with_fragile(&logits, context.input_ids(), context.prompt_len(), params)
                .map_err(Error::new)?;
        Ok((with_penalised(out, logits, context, params), fragile))
    }
}

/// `hf`: transformers as recorded. Its params are generate kwargs plus,
/// optionally, `scores`: the processed scores transformers' `generate`
/// returned (`output_scores`) for these logits.
#[derive(Debug, Clone, Default)]
pub struct Hf {
    config: Option<GenerationConfig>,
}

impl Hf {
    /// With a model's `generation_config.json` between the kwargs and
    /// transformers' defaults.
    pub fn new(config: Option<GenerationConfig>) -> Self {
        Self { config }
    }
}

/// What [`Hf`] runs: the resolved kwargs and, when recorded, the scores.
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    /// The resolved generate kwargs.
    pub params: GenerationParams,
    /// transformers' recorded processed scores; `None`: compute them.
    pub scores: Option<Vec<f32>>,
}

impl Semantics for Hf {
    type Params = Recorded;

    fn info(&self) -> &'static Info {
        &HF
    }

    fn role(&self) -> parity_core::Role {
        parity_core::Role::Reference
    }

    fn parse_params(&self, params: &Map<String, Value>) -> Result<Recorded, Error> {
        let mut kwargs = params.clone();
        let scores = match kwargs.remove("scores") {
            None => None,
            Some(v) => Some(scores_from_json(&v)?),
        };
        Ok(Recorded {
            params: resolved(&kwargs, self.config.as_ref())?,
            scores,
        })
    }

    fn distribution(
        &self,
        logits: &Logits,
        context: &Context<'_>,
        recorded: &Recorded,
    ) -> Result<Distribution, Error> {
        let Some(scores) = &recorded.scores else {
            return computed(logits, context, &recorded.params);
        };
        if scores.len() != logits.len() {
            return Err(Error::new(format_args!(
                "`scores` has {} entries for {} logits",
                scores.len(),
                logits.len()
            )));
        }
        let p = &recorded.params;
        let dist = if p.do_sample {
            Distribution::new(parity_core::metrics::softmax_f64(scores), Precision::F64)
        } else {
            Distribution::one_hot(
                scores.len(),
                parity_core::metrics::argmax_first(scores),
                Precision::F64,
            )
        };
        if p.repetition_penalty == 1.0 {
            return Ok(dist);
        }
        // Greedy scores are exactly transformers' penalised logits. Sampling
        // scores also went through temperature and truncation, so the
        // penalty is recomputed with this crate's, which is bit-identical to
        // transformers' on every greedy fixture (tests/it/fixtures.rs).
        let penalised = if p.do_sample {
            let mut l = logits.to_f32()?;
            crate::ops::repetition_penalty(&mut l, context.input_ids(), p.repetition_penalty);
            l
        } else {
            scores.clone()
        };
        Ok(dist.with_penalised(penalised))
    }

    fn from_generate(&self, kwargs: &Map<String, Value>) -> Option<Result<Recorded, Error>> {
        Some(self.parse_params(kwargs))
    }

    fn reads_generation_config(&self) -> bool {
        true
    }

    /// The recorded scores are transformers' own; where its rules decided
    /// within rounding is found by running the chain again (hf-rust's,
    /// bit-identical on every fixture).
    fn fragile(&self, logits: &Logits, context: &Context<'_>, recorded: &Recorded) -> Vec<Fragile> {
        fragile_at(logits, context, &recorded.params)
    }
}

impl Hf {
    /// transformers' recorded scores for `kwargs` (a fixture's setting).
    pub fn recorded(
        &self,
        kwargs: &Map<String, Value>,
        scores: Vec<f32>,
    ) -> Result<Recorded, Error> {
        Ok(Recorded {
            params: resolved(kwargs, self.config.as_ref())?,
            scores: Some(scores),
        })
    }
}

fn scores_from_json(v: &Value) -> Result<Vec<f32>, Error> {
    let Value::Array(items) = v else {
        return Err(Error::new(format_args!(
            "`scores` must be an array, got {v}"
        )));
    };
    items
        .iter()
        .enumerate()
        .map(|(i, x)| match x {
            Value::String(s) if s == "-inf" => Ok(f32::NEG_INFINITY),
            _ => parity_core::py::PyNum::of_value(x)
                .map(|y| y.float() as f32)
                .filter(|y| y.is_finite())
                .ok_or_else(|| {
                    Error::new(format_args!(
                        "`scores[{i}]` must be a float32 number or \"-inf\", got {x}"
                    ))
                }),
        })
        .collect()
}

/// transformers' side of each difference other engines are known to have,
/// in words, so that every engine's explanation describes transformers alike.
pub mod rules {
    /// transformers adds `top_k=50` when neither the kwargs nor the model's
    /// generation config set `top_k`.
    pub const DEFAULT_TOP_K: &str =
        "default top-k 50: transformers adds top_k=50 when the kwargs don't set top_k";

    /// transformers merges the model's generation_config.json under the
    /// kwargs (`merged`: the values it took from there, e.g. `top_k 20`).
    pub fn generation_config(merged: &str, other: &str) -> String {
        format!(
            "generation config: transformers merges the model's generation_config.json under \
             the kwargs ({merged}); {other}"
        )
    }

    /// transformers' top-k keeps every token tied with the k-th.
    pub fn top_k_tie(kept: usize, k: usize, other: &str) -> String {
        format!(
            "top-k tie: transformers keeps every token tied with the k-th ({kept} for k = {k}); \
             {other} keeps exactly {k}"
        )
    }

    /// A top-p cut through tied logits.
    pub fn top_p_tie(other: &str) -> String {
        format!(
            "top-p cut through tied logits: transformers keeps the tied tokens torch's sort \
             leaves last, {other} the lower ids"
        )
    }

    /// A top-p cut within float rounding of p.
    pub fn top_p_boundary(other: &str) -> String {
        format!(
            "top-p boundary: the cumulative mass lands on p within float rounding; transformers \
             drops tokens whose ascending f32 cumulative mass is ≤ 1 − p, {other} keeps tokens \
             until its own descending sum reaches p"
        )
    }
}

/// Where a resolved generate parameter's value came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// The generate kwargs.
    Kwargs,
    /// The model's `generation_config.json`.
    GenerationConfig,
    /// transformers' own default (`_get_default_generation_params`).
    Default,
}

/// Each sampling parameter's resolved value (as JSON) and where it came
/// from, in the order of [`GenerationParams::as_kwargs`]: kwargs win over the model's
/// generation config, which wins over transformers' defaults.
pub fn provenance(
    kwargs: &Map<String, Value>,
    config: Option<&GenerationConfig>,
    params: &GenerationParams,
) -> Vec<(&'static str, Value, Source)> {
    let values = params.sampling_map();
    crate::params::SAMPLING_KEYS
        .iter()
        .map(|&key| {
            let value = values.get(key).cloned().unwrap_or(Value::Null);
            let source = if kwargs.contains_key(key) {
                Source::Kwargs
            } else if config.and_then(|c| c.get(key)).is_some() {
                Source::GenerationConfig
            } else {
                Source::Default
            };
            (key, value, source)
        })
        .collect()
}
