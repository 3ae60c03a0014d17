//! SGLang's next-token sampling for one request, as a
//! [`parity_core::Semantics`] named `sglang`.
//!
//! # Reference
//!
//! SGLang **0.5.23** (the `sglang` wheel), torch 2.14.1, its `pytorch`
//! sampling backend on CPU: the backend SGLang picks on CPU, under
//! `--enable-deterministic-inference`, and on GPUs without FlashInfer (on
//! CUDA with FlashInfer the default is `flashinfer`, which this crate does
//! not model). Every rule below cites its file; `docs/engines/sglang.md`
//! has the details and how it was verified: `scripts/reference/sglang/
//! record.py` drives SGLang's own `SamplingParams`, `SamplingBatchInfo`,
//! penalizers and `Sampler` on the bundled fixture logits and records
//! `fixtures/sglang/`.
//!
//! # What it computes
//!
//! [`Sglang`] takes `SamplingParams` fields with SGLang's names and defaults
//! ([`SglangParams`]; refusals are SGLang's own messages) and runs:
//!
//! 1. penalties over the **generated** ids only (`input_ids[prompt_len..]`;
//!    the prompt is never penalised, repetition included): the additive
//!    buffer `0 − frequency·count − presence` (count as repeated f32
//!    additions) is added to the logits, then repetition
//!    `where(l < 0, l·r, l / r)` (`sampling_batch_info.py`,
//!    `penaltylib/*.py`);
//! 2. `logit_bias`, added in f32 after the penalties (the grammar mask,
//!    not modelled, sits between them);
//! 3. greedy when `top_k <= 1` — which is what `temperature < 1e-6`
//!    becomes in `SamplingParams.__post_init__` (`top_k = 1`,
//!    `temperature = 1`): `argmax`, first index among ties, top-p and min-p
//!    never run;
//! 4. `logits / T` (f32), `torch.softmax`;
//! 5. with no top-k, top-p or min-p, the draw is over that softmax
//!    (`sampling_from_probs_torch`);
//! 6. otherwise `top_k_top_p_min_p_sampling_from_probs_torch`: the
//!    probabilities in descending order — `torch.topk(probs, top_k)` when
//!    `top_k < V` and the request has no seed, else a full sort — then
//!    **top-k by position** (exactly k survive; ties at the cut are decided
//!    by torch's `topk`/`sort` order, `replicas::libstdcxx`), **top-p on the
//!    full-vocabulary mass** (a position is dropped when the f32 cumulative
//!    sum of the probabilities before it exceeds `top_p`, measured before
//!    top-k and never renormalised), then min-p against the largest
//!    probability; the kept weights are drawn by `torch.multinomial`.
//!    [`Distribution`] is each weight over their sum (f64);
//! 7. with `enable_deterministic_inference` (a server flag) the request's
//!    `sampling_seed` (42 if none) drives `multinomial_with_seed`
//!    ([`seeded`]), replayed here for `draws` positions;
//!    without it SGLang ignores `sampling_seed` and draws with torch's global
//!    generator, which no request controls.
//!
//! Written by hand because exactness needs it: the libstdc++ algorithms
//! that decide torch's sort/topk order among ties (`replicas::libstdcxx`, shared
//! with llama.cpp's and MLX's replicas) and
//! the murmur3/Gumbel draw ([`seeded`]). The softmax, cumulative sum and
//! argmax are `hf-sampling`'s torch replicas.
//!
//! # What it does not model
//!
//! The FlashInfer backend (`top_k_top_p_sampling_from_probs(...,
//! filter_apply_order="joint")`; with min-p, `top_k_renorm_prob` →
//! `top_p_renorm_prob` → `min_p_sampling_from_probs`, where top-p *is*
//! measured after top-k renormalisation), the Ascend backend, grammars,
//! custom logit processors, `min_new_tokens`, watermarks, speculative
//! decoding, and batch effects (in a batch, `torch.topk` runs with the
//! batch's largest `top_k`, and a seeded row sends the batch to the full
//! sort). torch's softmax sums over the CPU's SIMD lanes; the replica uses 16
//! (AVX512, the recording machine).
#![deny(missing_docs)]

mod params;
mod sampler;
mod seed;
pub mod seeded;
mod torch;

use parity_core::{
    Against, Context, Described, Distribution, Error, Explanation, Fix, Info, Logits, Precision,
    Route, Semantics,
};
use serde_json::{Map, Value};

pub use params::{Endpoint, GENERATION_CONFIG_FIELDS, SglangParams, TOP_K_ALL, request_params};
pub use sampler::{Path, Step};

/// Runs SGLang's processing on `logits` for one request and returns every
/// stage ([`Step`]): penalised logits, path, greedy token, the weights the
/// draw receives, its columns in sorted order and their log-weights.
pub fn step(logits: &[f32], context: &Context<'_>, params: &SglangParams) -> Result<Step, Error> {
    sampler::run(logits, context, params)
}

/// SGLang 0.5.23's torch sampler for one request.
#[derive(Debug, Clone, Copy, Default)]
pub struct Sglang;

static INFO: Info = Info {
    name: "sglang",
    engine: "SGLang 0.5.23 (pytorch sampling backend, torch 2.14.1)",
    summary: "penalties over generated ids only, logit bias, greedy at T<1e-6 (top_k=1), temperature, softmax, then top-k by sorted position and top-p on the full-vocabulary mass (not renormalised after top-k), min-p on the max; seeded murmur3/Gumbel draws under --enable-deterministic-inference",
    verified_against: "the real SGLang 0.5.23 SamplingParams, SamplingBatchInfo, penalizers and Sampler (torch 2.14.1, CPU, pytorch backend) driven on the bundled fixture logits by scripts/reference/sglang/record.py: penalised logits bit for bit, kept sets and weights exact; seeded draws against the murmur3 kernel run by Triton's CPU interpreter and a hand-written Python formula (not the GPU kernel)",
    params: params::Raw::PARAMS,
};

impl Semantics for Sglang {
    type Params = SglangParams;

    fn info(&self) -> &'static Info {
        &INFO
    }

    fn parse_params(&self, params: &Map<String, Value>) -> Result<SglangParams, Error> {
        params::parse(params)
    }

    fn distribution(
        &self,
        logits: &Logits,
        context: &Context<'_>,
        params: &SglangParams,
    ) -> Result<Distribution, Error> {
        let x = logits.to_f32()?;
        if x.is_empty() {
            return Err(Error::new("`logits` is empty"));
        }
        let pass = sampler::run(&x, context, params)?;
        let vocab = x.len();
        let dist = if let Some(g) = pass.greedy {
            Distribution::one_hot(vocab, g, Precision::F64)
        } else if let Some(t) = pass.nan_token {
            Distribution::one_hot(vocab, t, Precision::F64)
        } else {
            Distribution::new(sampler::normalise(&pass.weights), Precision::F64)
        };
        let dist = match (params.effective_seed(), pass.greedy) {
            (Some(seed), None) => {
                let start = i64::try_from(context.input_ids().len())
                    .map_err(|_| Error::new("`input_ids` is too long"))?
                    - 1;
                let tokens = (0..params.draws as i64)
                    .map(|j| {
                        let c = seeded::gumbel_argmax(&pass.logprobs, seed, start + j);
                        pass.columns[c] as i64
                    })
                    .collect();
                dist.with_tokens(tokens)
            }
            _ => dist,
        };
        Ok(match pass.penalised {
            Some(p) => dist.with_penalised(p),
            None => dist,
        })
    }

    fn from_generate(&self, kwargs: &Map<String, Value>) -> Option<Result<SglangParams, Error>> {
        params::from_generate(kwargs)
    }

    fn reads_generation_config(&self) -> bool {
        true
    }

    fn seed(&self) -> &'static [parity_core::RouteSeed] {
        seed::SEED
    }

    fn from_request(
        &self,
        request: &Map<String, Value>,
        generation_config: Option<&Map<String, Value>>,
    ) -> Vec<Route<SglangParams>> {
        let consumed = params::consumed;
        let mut chat = Route::new(
            Endpoint::Chat.route(),
            request_params(Endpoint::Chat, request, generation_config),
        )
        .ignoring_all_but(request, consumed);
        let merged: Vec<&str> = GENERATION_CONFIG_FIELDS
            .iter()
            .copied()
            .filter(|f| {
                request.get(*f).is_none_or(Value::is_null)
                    && generation_config.is_some_and(|g| g.get(*f).is_some_and(|v| !v.is_null()))
            })
            .collect();
        if !merged.is_empty() {
            chat = chat.note(format!(
                "from generation_config.json (--sampling-defaults model, the default): {}",
                merged.join(", ")
            ));
        }
        let mut completions = Route::new(
            Endpoint::Completions.route(),
            request_params(Endpoint::Completions, request, None),
        )
        .ignoring_all_but(request, consumed)
        .note("reads no generation_config.json");
        for r in [&mut chat, &mut completions] {
            if request.get("seed").is_some_and(|v| !v.is_null()) {
                r.notes.push(
                    "seed becomes sampling_seed, read only under --enable-deterministic-inference"
                        .into(),
                );
            }
        }
        if !request.contains_key("top_k") && !merged.contains(&"top_k") {
            chat = chat.note("top_k off (SGLang's default; transformers' is 50)");
        }
        vec![chat, completions]
    }

    fn describe(&self, params: &SglangParams) -> Option<Described> {
        Some(Described::Fields(params.to_json()))
    }

    fn explain(&self, row: &Against<'_>, params: &SglangParams) -> Explanation {
        explain(row, params)
    }

    fn fix(
        &self,
        kwargs: &Map<String, Value>,
        _variant: Option<&parity_core::Variant>,
    ) -> Option<Fix> {
        fix(kwargs)
    }
}

/// The top-k transformers resolves these kwargs to when sampling
/// ([`hf_sampling::resolve_sampling`]: its default unless set; `None` = off, or
/// kwargs transformers refuses).
fn hf_top_k(kwargs: &Map<String, Value>) -> Option<i64> {
    let k = hf_sampling::resolve_sampling(kwargs).ok()?.top_k?;
    Some(i64::try_from(k).unwrap_or(i64::MAX))
}

/// Whether the `k`-th largest logit is tied with the `(k+1)`-th.
fn tie_at_cut(logits: &[f32], k: usize) -> bool {
    if k == 0 || k >= logits.len() {
        return false;
    }
    let mut v: Vec<f32> = logits.iter().copied().filter(|x| !x.is_nan()).collect();
    v.sort_unstable_by(|a, b| b.total_cmp(a));
    k < v.len() && v[k - 1] == v[k]
}

/// Why SGLang differs from transformers for these generate kwargs.
fn explain(row: &Against<'_>, p: &SglangParams) -> Explanation {
    let kwargs = row.kwargs;
    let mut reasons = Vec::new();
    let sampling = kwargs.get("do_sample") == Some(&Value::Bool(true));
    if !sampling && !p.is_greedy() {
        reasons.push(
            "no do_sample: transformers decodes greedily unless do_sample=True; SGLang has no such switch and samples at temperature 1 by default".to_string(),
        );
    }
    let hf_k = if sampling { hf_top_k(kwargs) } else { None };
    if sampling && !kwargs.contains_key("top_k") && p.top_k == TOP_K_ALL {
        reasons.push(
            "default top-k: transformers adds top_k=50 when the kwargs don't set top_k; SGLang's top_k is off (-1) by default".to_string(),
        );
    }
    if p.top_k < TOP_K_ALL && p.top_p < 1.0 && !p.is_greedy() {
        reasons.push(
            "top-p after top-k: SGLang measures top-p on the full-vocabulary mass (the cumulative sum is taken before top-k and never renormalised), so it keeps at least as many of the top-k tokens as transformers, which renormalises over the top-k survivors".to_string(),
        );
    }
    let logits = row.logits;
    let k = p.top_k as usize;
    if p.top_k < TOP_K_ALL && !p.is_greedy() && tie_at_cut(logits, k) {
        reasons.push(format!(
            "top-k ties: SGLang keeps exactly {k} tokens by sorted position (torch.topk's order decides among tokens tied at the cut); transformers keeps every token tied with the {k}-th"
        ));
    }
    if p.is_greedy() && sampling && hf_k == Some(1) && tie_at_cut(logits, 1) {
        reasons.push(
            "top_k=1 is greedy in SGLang (argmax, first index); transformers' top_k=1 keeps every token tied at the top".to_string(),
        );
    }
    if p.repetition_penalty != 1.0 {
        let prompt: std::collections::HashSet<i64> = row.context.prompt().iter().copied().collect();
        let generated: std::collections::HashSet<i64> =
            row.context.generated().iter().copied().collect();
        if prompt.iter().any(|t| !generated.contains(t)) {
            reasons.push(
                "repetition scope: SGLang penalises generated ids only; transformers penalises every id in input_ids, prompt included".to_string(),
            );
        }
    }
    let t = kwargs.get("temperature").and_then(Value::as_f64);
    if sampling && t.is_some_and(|t| t > 0.0 && t < 1e-6) {
        reasons.push(
            "temperature below 1e-6: SGLang decodes greedily; transformers samples at that temperature".to_string(),
        );
    }
    let fix = if reasons.is_empty() {
        None
    } else {
        fix(kwargs)
    };
    Explanation { reasons, fix }
}

/// The SGLang `sampling_params` that reproduce transformers' distribution
/// for these kwargs, when the rules allow it: top_k 50 when transformers
/// adds it, 0/None as -1, and only when top-k and top-p are not both set
/// (SGLang's top-p is not renormalised after top-k) and no repetition
/// penalty is set (SGLang cannot penalise prompt ids).
fn fix(kwargs: &Map<String, Value>) -> Option<Fix> {
    let sampling = kwargs.get("do_sample") == Some(&Value::Bool(true));
    let mut m = Map::new();
    if !sampling {
        if kwargs
            .get("repetition_penalty")
            .and_then(Value::as_f64)
            .is_some_and(|r| r != 1.0)
        {
            return None;
        }
        m.insert("temperature".into(), Value::from(0.0));
        return Some(Fix {
            text: "send temperature=0 (greedy)".into(),
            params: m,
        });
    }
    let g = hf_sampling::portable_kwargs(kwargs)?;
    if g.get("repetition_penalty")
        .and_then(Value::as_f64)
        .is_some_and(|r| r != 1.0)
    {
        return None;
    }
    let k = hf_top_k(kwargs);
    let p = g.get("top_p").and_then(Value::as_f64).unwrap_or(1.0);
    if k.is_some() && p < 1.0 {
        return None;
    }
    for key in ["temperature", "top_p", "min_p"] {
        if let Some(v) = g.get(key) {
            m.insert(key.into(), v.clone());
        }
    }
    m.insert("top_k".into(), Value::from(k.unwrap_or(-1)));
    let text = match k {
        Some(k) => format!(
            "send top_k={k} (exactly {k} by position: equal to transformers unless tokens tie at the cut)"
        ),
        None => "send top_k=-1 (SGLang's off; 0 is refused)".to_string(),
    };
    Some(Fix { text, params: m })
}

/// [`Sglang`] serving a model whose `generation_config.json` the user gave:
/// `launch_server --sampling-defaults model` (the default) reads it, so the
/// literal port's request (`compare report`, `diff`) and params (`dist`) are
/// read as `/v1/chat/completions` reads them, over its values
/// ([`request_params`] with [`Endpoint::Chat`], the route
/// [`Semantics::from_request`] runs). Everything else is [`Sglang`]'s.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SglangServed {
    model_config: Map<String, Value>,
}

impl SglangServed {
    /// SGLang serving a model whose generation config is `model_config`.
    pub fn new(model_config: Map<String, Value>) -> Self {
        Self { model_config }
    }
}

impl Semantics for SglangServed {
    type Params = SglangParams;

    fn info(&self) -> &'static Info {
        Sglang.info()
    }

    fn parse_params(&self, params: &Map<String, Value>) -> Result<SglangParams, Error> {
        request_params(Endpoint::Chat, params, Some(&self.model_config))
    }

    fn distribution(
        &self,
        logits: &Logits,
        context: &Context<'_>,
        params: &SglangParams,
    ) -> Result<Distribution, Error> {
        Sglang.distribution(logits, context, params)
    }

    fn from_generate(&self, kwargs: &Map<String, Value>) -> Option<Result<SglangParams, Error>> {
        let request = params::literal_request(kwargs)?;
        Some(self.parse_params(&request))
    }

    fn reads_generation_config(&self) -> bool {
        true
    }

    fn from_request(
        &self,
        request: &Map<String, Value>,
        generation_config: Option<&Map<String, Value>>,
    ) -> Vec<Route<SglangParams>> {
        Sglang.from_request(request, generation_config.or(Some(&self.model_config)))
    }

    fn describe(&self, params: &SglangParams) -> Option<Described> {
        Sglang.describe(params)
    }

    fn explain(&self, row: &Against<'_>, params: &SglangParams) -> Explanation {
        Sglang.explain(row, params)
    }

    fn fix(
        &self,
        kwargs: &Map<String, Value>,
        variant: Option<&parity_core::Variant>,
    ) -> Option<Fix> {
        Sglang.fix(kwargs, variant)
    }
}
