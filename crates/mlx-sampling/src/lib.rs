//! mlx-lm's next-token sampling, as a [`parity_core::Semantics`] named
//! `mlx-lm`: the default engine on Apple silicon.
//!
//! # Reference
//!
//! mlx-lm **0.32.2** on MLX **0.32.4** (its Linux CPU wheel, `mlx-cpu`),
//! read in `mlx_lm/sample_utils.py` (`make_sampler`,
//! `make_logits_processors`, `apply_top_p`, `apply_min_p`, `apply_xtc`,
//! `apply_top_k`, `categorical_sampling`), `mlx_lm/generate.py`
//! (`generate_step`) and `mlx_lm/server.py` (`APIHandler.do_POST`,
//! `validate_model_parameters`, `_make_sampler`, `_make_logits_processors`),
//! and in MLX's C++ at v0.32.2 for the kernels ([`replicas::mlx`] module docs).
//! `scripts/reference/mlx/record.py` runs the real package on the fixture
//! logits and records `fixtures/mlx/cases.jsonl`; the tests replay every
//! case. `docs/engines/mlx-lm.md` has the details.
//!
//! # What it computes
//!
//! Params are `mlx_lm.server`'s request fields with its defaults
//! ([`MlxParams`]): temperature 0 (greedy), top_p 1, top_k 0, min_p 0,
//! penalties 0 (off) over the last 20 ids, XTC probability 0 and threshold
//! 0.1, plus `xtc_special_tokens` (the server takes the tokenizer's
//! newline and EOS ids; absent = none), `seed` and `draws`. The step
//! ([`sampler`](crate::sampler) module docs): processors over the whole
//! context, `logprobs = logits - logsumexp`, then greedy, or top-p → min-p
//! → XTC → top-k on the **untempered** logprobs and `categorical(logprobs /
//! T)`: temperature last. The distribution is the float32 `w / Σw` of the
//! weights MLX's inverse-CDF `categorical` draws from; with 0 <
//! xtc_probability < 1 it is the mixture of the XTC-applied and -skipped
//! distributions. With `seed` and `draws: N` it also carries the N tokens
//! N successive sampler calls draw after `mx.random.seed(seed)`, replayed
//! exactly ([`replicas::mlx`]).
//!
//! # Versions
//!
//! Top-k last in the chain since mlx-lm #388 (2025-08-20); its error text
//! since #1377 (2026-06-09); the inverse-CDF draw since MLX #4177 (0.32.2):
//! earlier MLX drew by Gumbel-max, the same distribution but other seeded
//! tokens.
//!
//! # What it does not model
//!
//! `min_tokens_to_keep` (the server never sets it), batched decoding
//! (same chain, no per-request seed), speculative decoding, the prompt
//! cache hiding a cached prefix from the penalties (see the docs page),
//! and logits other than float32.
#![deny(missing_docs)]

mod params;
mod sampler;
mod seed;
pub mod translate;

use parity_core::{
    Against, Context, Described, Distribution, Error, Explanation, Fix, Info, Logits, Precision,
    Route, Semantics,
};
use serde_json::{Map, Value};

pub use params::{MAX_DRAWS, MlxParams, from_request};
pub use sampler::argmax;

/// mlx-lm 0.32.2's `generate_step` sampling on MLX 0.32.4 (CPU).
#[derive(Debug, Clone, Copy, Default)]
pub struct MlxLm;

static INFO: Info = Info {
    name: "mlx-lm",
    engine: "mlx-lm 0.32.2 on MLX 0.32.4 (generate_step, make_sampler, mlx_lm.server; CPU)",
    summary: "logit bias and penalties over the last n ids (prompt included), log-softmax, then greedy at T=0 or top-p, min-p, XTC, top-k (exactly k) on the untempered logprobs and categorical(logprobs / T): temperature last",
    verified_against: "the real mlx-lm 0.32.2 / MLX 0.32.4 Linux CPU wheel driven through mlx_lm.server's request handling on the SmolLM2, edge and synthetic logits (fixtures/mlx/cases.jsonl): kept sets exact, probabilities within 1e-6, 40 seeded draws per case replayed token for token, server refusals with their text",
    params: MlxParams::PARAMS,
};

impl Semantics for MlxLm {
    type Params = MlxParams;

    fn info(&self) -> &'static Info {
        &INFO
    }

    fn parse_params(&self, params: &Map<String, Value>) -> Result<MlxParams, Error> {
        params::parse(params)
    }

    fn distribution(
        &self,
        logits: &Logits,
        context: &Context<'_>,
        params: &MlxParams,
    ) -> Result<Distribution, Error> {
        let x = logits.to_f32()?;
        let pass = sampler::run(&x, context, params)?;
        let vocab = x.len();
        let dist = if let Some(g) = pass.greedy {
            let d = Distribution::one_hot(vocab, g, Precision::F32);
            match params.draws {
                Some(n) => d.with_tokens(vec![g as i64; n]),
                None => d,
            }
        } else {
            let main =
                sampler::normalise(&sampler::tempered_weights(&pass.main, params.temperature));
            let d = match &pass.xtc_applied {
                None => Distribution::from_f32(&main),
                Some(a) => {
                    let q = params.xtc_probability;
                    let applied =
                        sampler::normalise(&sampler::tempered_weights(a, params.temperature));
                    let mix = main
                        .iter()
                        .zip(&applied)
                        .map(|(&s, &a)| (1.0 - q) * f64::from(s) + q * f64::from(a))
                        .collect();
                    Distribution::new(mix, Precision::F64)
                }
            };
            let inv = (1.0 / params.temperature) as f32;
            let d = d.with_scores(pass.main.iter().map(|&v| v * inv).collect());
            match (params.seed, params.draws) {
                (Some(seed), Some(n)) => d.with_tokens(sampler::draws(
                    &pass.main,
                    pass.xtc_applied.as_deref(),
                    params,
                    seed,
                    n,
                )),
                _ => d,
            }
        };
        Ok(match pass.penalised {
            Some(p) => dist.with_penalised(p),
            None => dist,
        })
    }

    fn from_generate(&self, kwargs: &Map<String, Value>) -> Option<Result<MlxParams, Error>> {
        params::from_generate(kwargs)
    }

    fn seed(&self) -> &'static [parity_core::RouteSeed] {
        seed::MLX_LM
    }

    fn from_request(
        &self,
        request: &Map<String, Value>,
        _generation_config: Option<&Map<String, Value>>,
    ) -> Vec<Route<MlxParams>> {
        let params = params::from_request(request);
        let mut route = Route::new(params::SERVER_ROUTE, params)
            .ignoring_all_but(request, params::ServerRequest::declares);
        if !request.contains_key("temperature") {
            route = route.note("temperature 0.0: greedy (mlx_lm.server --temp default)");
        }
        route = route.note("generation_config.json is not read for sampling");
        let mut notes = Vec::new();
        if let Ok(p) = &route.params {
            if p.repetition_penalty != 0.0
                || p.presence_penalty != 0.0
                || p.frequency_penalty != 0.0
            {
                notes.push(
                    "penalties see the last n ids of prompt + output (context sizes default 20; 0 = all); with a seed and a prompt-cache hit, only the uncached part of the prompt",
                );
            }
            if p.xtc_probability > 0.0 {
                notes.push(
                    "XTC exempts the tokenizer's newline and EOS ids, unknown here: xtc_special_tokens left empty",
                );
            }
            if p.top_k > 0 {
                notes.push("top_k must be below the vocabulary size, or the step raises");
            }
        }
        for n in notes {
            route = route.note(n);
        }
        vec![route]
    }

    fn describe(&self, params: &MlxParams) -> Option<Described> {
        Some(Described::Fields(params.to_json()))
    }

    fn explain(&self, row: &Against<'_>, params: &MlxParams) -> Explanation {
        explain(row, params)
    }

    fn fix(
        &self,
        kwargs: &Map<String, Value>,
        _variant: Option<&parity_core::Variant>,
    ) -> Option<Fix> {
        fix(kwargs)
    }

    fn translate(
        &self,
        kwargs: &Map<String, Value>,
        _options: &parity_core::TranslateOptions,
    ) -> Option<Result<parity_core::Translation, Error>> {
        let mut blocked = translate::unmatched(kwargs, "mlx-lm");
        let fixed = fix(kwargs);
        if fixed.is_none() {
            blocked.push("a temperature other than 1 with top_p or min_p, or top_k with top_p: mlx-lm filters the untempered distribution and applies top-k after top-p, in a fixed order".into());
        }
        let fix = match fixed {
            Some(f) if blocked.is_empty() => Ok(f),
            _ => Err(blocked),
        };
        Some(Ok(translate::translation(
            "mlx-lm",
            "mlx_lm.server request",
            "mlx-lm tempers only at the draw, which changes nothing when there is no top-p/min-p (top-k keeps the same set at any T) or T = 1; the repetition window widened to the whole context (size 0); exact except a top-k tie (mlx-lm keeps exactly k) and float32 sums",
            fix,
            translate::mlx_python,
        )))
    }
}

/// The transformers settings these kwargs run with, as transformers
/// resolves them ([`hf_sampling::resolve_sampling`]: an unset or `null` value is its
/// default): (sampling, T, top_k (0 = off), top_p, min_p (0 = off),
/// repetition penalty); `None` when transformers refuses the kwargs.
fn transformers_setting(kwargs: &Map<String, Value>) -> Option<(bool, f64, i64, f64, f64, f64)> {
    let p = hf_sampling::resolve_sampling(kwargs).ok()?;
    Some((
        p.do_sample,
        p.temperature,
        p.top_k.map_or(0, |k| i64::try_from(k).unwrap_or(i64::MAX)),
        p.top_p,
        p.min_p.unwrap_or(0.0),
        p.repetition_penalty,
    ))
}

/// The mlx-lm setup that reproduces transformers' distribution for these
/// kwargs, when one exists: greedy; or temperature with at most one of
/// top-k and top-p, top-p and min-p only at T = 1 (mlx-lm filters before
/// tempering); the repetition penalty over the whole context (size 0).
fn fix(kwargs: &Map<String, Value>) -> Option<Fix> {
    let (sampling, t, k, top_p, min_p, r) = transformers_setting(kwargs)?;
    let mut m = Map::new();
    if r != 1.0 {
        m.insert("repetition_penalty".into(), Value::from(r));
        m.insert("repetition_context_size".into(), Value::from(0));
    }
    let rep = if m.is_empty() {
        String::new()
    } else {
        ", repetition_context_size=0 (the whole context, as transformers)".to_string()
    };
    if !sampling {
        return Some(Fix {
            text: format!("temperature=0 (greedy){rep}"),
            params: m,
        });
    }
    let filters = top_p < 1.0 || min_p > 0.0;
    if (k > 0 && top_p < 1.0) || (t != 1.0 && filters) {
        return None;
    }
    m.insert("temperature".into(), Value::from(t));
    let mut text = format!("temperature={t}");
    if k > 0 {
        m.insert("top_k".into(), Value::from(k));
        text.push_str(&format!(
            ", top_k={k} (ties at the k-th aside: mlx-lm keeps exactly k)"
        ));
    }
    if top_p < 1.0 {
        m.insert("top_p".into(), Value::from(top_p));
        text.push_str(&format!(", top_p={top_p}"));
    }
    if min_p > 0.0 {
        m.insert("min_p".into(), Value::from(min_p));
        text.push_str(&format!(", min_p={min_p}"));
    }
    text.push_str(&rep);
    Some(Fix { text, params: m })
}

fn explain(row: &Against<'_>, p: &MlxParams) -> Explanation {
    let kwargs = row.kwargs;
    let (sampling, k_hf, top_p_hf) = transformers_setting(kwargs)
        .map_or((false, 0, 1.0), |(sampling, _, k, top_p, ..)| {
            (sampling, k, top_p)
        });
    let mut reasons = Vec::new();
    if !sampling && !p.is_greedy() {
        reasons.push(
            "no do_sample: transformers decodes greedily; mlx-lm samples whenever temp > 0"
                .to_string(),
        );
    }
    if sampling && p.is_greedy() {
        reasons.push("temp 0: mlx-lm's make_sampler returns the greedy sampler".to_string());
    }
    if !p.is_greedy() {
        let filters = p.has_top_p() || p.min_p != 0.0 || p.top_k > 0 || p.xtc_probability > 0.0;
        if p.temperature != 1.0 && filters {
            reasons.push(format!(
                "temperature last: mlx-lm's top-p, min-p, XTC and top-k see the untempered distribution and only categorical(logprobs / T) uses T = {}; transformers tempers first",
                p.temperature
            ));
        }
        if p.top_k > 0 && p.has_top_p() {
            reasons.push("top-k after top-p: mlx-lm measures top-p on the full distribution, then keeps k; transformers keeps k, then measures top-p among them".to_string());
        }
        if sampling && !kwargs.contains_key("top_k") && p.top_k == 0 {
            reasons.push("default top-k: transformers adds top_k=50 when the kwargs don't set it; mlx-lm's top_k is off".to_string());
        }
        if p.top_k > 0 && row.transformers.kept().len() > row.this.kept().len() && k_hf == p.top_k {
            reasons.push("top-k ties: mlx-lm keeps exactly k (argpartition, lower ids win); transformers keeps every token tied with the k-th".to_string());
        }
        if top_p_hf == 0.0 {
            reasons.push(
                "top_p=0: off in mlx-lm (only 0 < top_p < 1 filters); transformers keeps one token"
                    .to_string(),
            );
        }
    }
    if p.repetition_penalty != 0.0 && p.repetition_penalty != 1.0 {
        let (missed, _) = row.context.missed_by_window(
            if p.repetition_context_size == 0 {
                usize::MAX
            } else {
                p.repetition_context_size
            },
            row.logits.len(),
        );
        if missed > 0 {
            reasons.push(format!(
                "repetition window: mlx-lm penalises the last {} ids only ({missed} earlier ids of the context are not penalised); transformers penalises the whole context",
                p.repetition_context_size
            ));
        }
    }
    if !p.is_greedy()
        && row.comparison.max_abs_diff > 1e-6
        && row.transformers.kept() == row.this.kept()
        && row.logits.len() > 1000
    {
        reasons.push(format!(
            "float32 running sums: MLX's CPU kernels add the {} weights one at a time in float32 (logsumexp, and the sum categorical scales its uniform by), so its normaliser is off by up to ~1e-4 relative on a large vocabulary; torch's softmax sums pairwise",
            row.logits.len()
        ));
    }
    Explanation {
        reasons,
        fix: fix(kwargs),
    }
}
