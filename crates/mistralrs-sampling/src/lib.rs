//! mistral.rs's next-token sampling for one request, as a
//! [`parity_core::Semantics`] named `mistral.rs`.
//!
//! # Reference
//!
//! EricLBuehler/mistral.rs, read at two pinned versions, selected with the
//! `version` parameter:
//!
//! - **`0.9.2`** (default): commit `9e922623f24b` (2026-08-22), whose CPU
//!   sampling code is that of tag `v0.9.2` (the later commits only touch
//!   CUDA paths). It contains commit `326f1d612d7b` (2026-08-18), which
//!   made top-p measure its mass on the distribution renormalised over the
//!   top-k survivors, made frequency/presence count only the generated
//!   tokens, and started merging the model's `generation_config.json` into
//!   requests (`SamplingParams::fill_model_defaults`).
//! - **`0.9.1`**: tag `v0.9.1` (`11f25505`, 2026-08-14): top-p compares the
//!   raw cumulative probability with p (as candle's `TopKThenTopP`), and
//!   frequency/presence count every context token, prompt included.
//!
//! Files: `mistralrs-core/src/sampler.rs` (`Sampler::new`, `sample`,
//! `apply_penalties`, `apply_freq_pres_rep_penalty`, `apply_logits_bias`,
//! `sample_argmax`, `sample_top_kp_min_p`, `partial_sort_top_k`,
//! `top_p_cutoff`, `sample_multinomial`), `mistralrs-core/src/engine/add_request.rs`
//! (defaults: `temperature` unset → 1.0, `top_k` unset → -1, `top_p` → 1,
//! `min_p` → 0), `mistralrs-server-core/src/chat_completion.rs` and
//! `openai.rs` (request fields → `SamplingParams`, no range validation; the
//! request struct has no `seed` and no `deny_unknown_fields`, so an OpenAI
//! `seed` is dropped unread; a field that constrains sampling to a grammar
//! is refused: `params::ChatCompletionRequest`).
//!
//! # What it computes (the CPU path, no speculative decoding)
//!
//! 1. DRY (refused here unless `dry_multiplier` is 0: it needs the
//!    tokenizer), then in one pass over the vocabulary — when any of the three
//!    penalties is set — `logit − count·frequency − [count > 0]·presence`,
//!    then the repetition penalty (positive logits divided, others
//!    multiplied) on every id seen in the context. Ids ≥ V are skipped.
//! 2. `logit_bias` added in f32 (ids ≥ V skipped).
//! 3. An unset temperature is 1.0: add_request.rs builds the sampler with
//!    `Some(request.sampling_params.temperature.unwrap_or(1.0))`, after the
//!    model's generation config had its chance to fill it (0.9.2), at every
//!    version read (v0.9.0, v0.9.1, v0.9.2, 9e922623; the line dates from
//!    commit `cf92dd0e6`, v0.1.0, in `engine/mod.rs`, and moved to
//!    `add_request.rs` with `ecf23b000`, v0.6.0). A temperature below 1e-7
//!    (0 included) is argmax (`Sampler::new`; first index of the maximum;
//!    NaN/+inf or no finite logit is an error, as in mistral.rs).
//! 4. Otherwise candle's `logits / T` (`affine(1/T, 0)`: multiply by the f32
//!    reciprocal), candle's CPU `softmax_last_dim`, then on the
//!    probabilities: top-k by `select_nth_unstable_by` (exactly k, ties
//!    broken by the selection), the kept probabilities sorted descending
//!    with `sort_unstable_by`; top-p (only for 0 < p < 1) zeroes every
//!    token reached once the running f32 sum is `>= cutoff`; min-p (only
//!    for 0 < min_p < 1) zeroes every kept token with
//!    `max_p · min_p >= p` — a token exactly at the threshold is dropped.
//! 5. The draw: rand 0.9's `WeightedIndex` over the zeroed probabilities
//!    with the engine's single `Isaac64Rng` (seeded with 0 when the engine
//!    starts; there is no per-request seed). The distribution is the
//!    weights over their sum; `draws` replays the tokens the engine draws
//!    after `earlier_draws` earlier ones (the `draw` module).
//!
//! # Hand-written replicas
//!
//! candle's CPU softmax and affine are replayed here, since only
//! `candle-adapter` may depend on candle: `max`, `(x − max).exp()` with
//! `f32::exp`, then the sum **in the order of candle's AVX2 kernel**, which
//! candle picks at run time on every x86-64 CPU with AVX2 (4 × 8-lane
//! accumulators, then a fixed fold; `sampler::avx2_vec_sum` cites
//! candle-core/src/cpu/avx.rs and mod.rs at 35d7ae7c and 27f20fea), then the
//! division. The order matters: summed left to right, 251 of the 866
//! recorded 0.9.2 cases differed in some bit and 6 kept another number of
//! tokens (`int_ties_v1000`, top_k 40 / top_p 0.9 / T 0.7: 37 instead of
//! mistral.rs's 36). Top-k uses the same std calls as mistral.rs
//! (`select_nth_unstable_by`, `sort_unstable_by`), so which of several tied
//! tokens survives matches a mistral.rs built with the same Rust toolchain.
//!
//! # Verification
//!
//! Against the real sampler: `mistralrs-core/src/sampler.rs` of tags
//! v0.9.2 and v0.9.1, compiled unchanged with candle at the revisions the
//! tags pin, recorded by `scripts/reference/mistralrs/record.py` into
//! `fixtures/mistralrs/` (the README there says what the out-of-tree
//! harness calls). `tests/it/replay.rs` replays all 866 cases of each
//! version: the weights `WeightedIndex` receives bit for bit (so the kept
//! sets exactly), the errors, and 14,840 seeded draws plus two
//! shared-generator sequences token for token.
#![deny(missing_docs)]

mod draw;
mod params;
mod sampler;
mod seed;

use parity_core::{
    Against, Context, Described, Distribution, Error, Explanation, Info, Logits, Precision, Route,
    Semantics,
};
use serde_json::{Map, Value};

pub use params::{MistralRsParams, Version, request_params};

/// mistral.rs' OpenAI server route.
pub const ROUTE: parity_core::Endpoint = parity_core::Endpoint::http(
    parity_core::Server::new("mistralrs-server"),
    parity_core::Protocol::OpenaiChat,
);

/// The vector mistral.rs hands `WeightedIndex::new` for these logits
/// (length V, zeros where top-k, top-p or min-p cut), or `None` when it
/// takes the argmax. What [`MistralRs`]'s distribution normalises, bit for
/// bit what the recorded sampler gives (`tests/it/replay.rs`).
pub fn weighted_index_input(
    logits: &Logits,
    context: &Context<'_>,
    params: &MistralRsParams,
) -> Result<Option<Vec<f32>>, Error> {
    let out = sampler::run(&logits.to_f32()?, context, params)?;
    Ok(out.greedy.is_none().then_some(out.weights))
}

/// mistral.rs's sampler for one request (CPU path).
#[derive(Debug, Clone, Copy, Default)]
pub struct MistralRs;

static INFO: Info = Info {
    name: "mistral.rs",
    engine: "mistral.rs 0.9.2 (tag v0.9.2 d184053f, CPU sampler as at 9e922623); 0.9.1 with version=\"0.9.1\"",
    summary: "frequency/presence then repetition penalty, logit bias, temperature, softmax, top-k by selection (exactly k), top-p (renormalised over the top-k since 0.9.2), min-p dropping p == threshold",
    verified_against: "recorded from mistralrs-core/src/sampler.rs itself (tags v0.9.2 and v0.9.1, compiled unchanged with their candle revisions): 866 cases per version replayed bit for bit, 14,840 seeded draws token for token (fixtures/mistralrs)",
    params: MistralRsParams::PARAMS,
};

impl Semantics for MistralRs {
    type Params = MistralRsParams;

    fn info(&self) -> &'static Info {
        &INFO
    }

    fn parse_params(&self, params: &Map<String, Value>) -> Result<MistralRsParams, Error> {
        params::parse(params)
    }

    fn distribution(
        &self,
        logits: &Logits,
        context: &Context<'_>,
        params: &MistralRsParams,
    ) -> Result<Distribution, Error> {
        let x = logits.to_f32()?;
        let out = sampler::run(&x, context, params)?;
        let dist = match out.greedy {
            Some(g) => Distribution::one_hot(x.len(), g, Precision::F32),
            None => {
                let total: f64 = out.weights.iter().map(|&w| f64::from(w)).sum();
                Distribution::new(
                    out.weights.iter().map(|&w| f64::from(w) / total).collect(),
                    Precision::F32,
                )
            }
        };
        let dist = match (params.draws, out.greedy) {
            (None, _) => dist,
            // An argmax takes no draw from the engine's generator.
            (Some(n), Some(g)) => dist.with_tokens(vec![g as i64; n as usize]),
            (Some(n), None) => {
                dist.with_tokens(draw::draws(&out.weights, params.earlier_draws, n)?)
            }
        };
        Ok(match out.penalised {
            Some(p) => dist.with_penalised(p),
            None => dist,
        })
    }

    fn from_generate(&self, kwargs: &Map<String, Value>) -> Option<Result<MistralRsParams, Error>> {
        params::from_generate(kwargs)
    }

    fn seed(&self) -> &'static [parity_core::RouteSeed] {
        seed::SEED
    }

    /// mistral.rs's OpenAI server: its own fields, the model's generation
    /// config filling what the request leaves unset ([`request_params`]).
    fn from_request(
        &self,
        request: &Map<String, Value>,
        generation_config: Option<&Map<String, Value>>,
    ) -> Vec<Route<MistralRsParams>> {
        let mut route = Route::new(ROUTE, request_params(request, generation_config))
            .ignoring_all_but(request, params::ChatCompletionRequest::declares);
        if generation_config.is_some() {
            route = route.note("unset fields filled from generation_config.json");
        }
        if matches!(&route.params, Ok(p) if p.temperature.is_none()) {
            route = route.note(
                "temperature 1.0: mistral.rs's default when neither the request nor the model sets one",
            );
        }
        if let Some(seed) = request.get("seed").filter(|v| !v.is_null()) {
            route = route.note(format!(
                "seed {seed} silently ignored: the request struct has no seed field, and one engine-wide RNG serves every request"
            ));
        }
        vec![route]
    }

    fn describe(&self, params: &MistralRsParams) -> Option<Described> {
        Some(Described::Fields(params.to_json()))
    }

    fn explain(&self, row: &Against<'_>, params: &MistralRsParams) -> Explanation {
        let mut reasons = Vec::new();
        let k = row.kwargs;
        let sampling = k.get("do_sample") == Some(&Value::Bool(true));
        let greedy_here = params.temperature.is_some_and(|t| t < 1e-7) || params.top_k == Some(1);
        if !sampling && !greedy_here {
            reasons.push("greedy kwargs, sampled here: transformers decodes greedily without do_sample=True; mistral.rs samples (at T = 1.0 when no temperature is set) unless the temperature is below 1e-7".to_string());
        }
        if sampling && !k.contains_key("top_k") && params.top_k.is_none() {
            reasons.push(
                "default top-k: transformers adds top_k=50; mistral.rs's top_k is off unless set"
                    .to_string(),
            );
        }
        if params.top_k.is_some_and(|k| k > 0) {
            reasons.push("top-k ties: mistral.rs keeps exactly k tokens (chosen by select_nth_unstable), transformers keeps every token tied with the k-th".to_string());
        }
        if params.version == Version::V0_9_1
            && params.top_k.is_some_and(|k| k > 0)
            && params.top_p.is_some_and(|p| p > 0.0 && p < 1.0)
        {
            reasons.push("top-k then top-p: mistral.rs 0.9.1 compares p with the raw mass of the top k; transformers (and mistral.rs 0.9.2) renormalise first".to_string());
        }
        if params.min_p.is_some_and(|m| m > 0.0 && m < 1.0) {
            reasons.push("min-p boundary: mistral.rs drops a token whose probability equals max_p * min_p; transformers keeps it".to_string());
        }
        Explanation { reasons, fix: None }
    }
}
