//! Ollama's MLX runner sampler, as a [`parity_core::Semantics`] named
//! `ollama-mlx`.
//!
//! # Reference
//!
//! `x/mlxrunner/sample/sample.go` of ollama/ollama at **fb3076099**
//! (v0.33.0-rc2; the sampler as reworked in #16122, May 2026), with the MLX
//! it pins (`MLX_VERSION` 27fec909a, 2026-08-20, which has the inverse-CDF
//! categorical of ml-explore/mlx #4177). The runner serves **safetensors**
//! models (`ollama create` from safetensors, MLX-format weights); GGUF
//! models go to llama-server (the `ollama` semantics, [`crate::llama_server`]).
//! Options come from `api.Options` (`x/mlxrunner/server.go` copies
//! temperature, top_p, min_p, top_k, repeat_last_n, repeat_penalty,
//! presence/frequency_penalty and seed; typical_p is not read).
//!
//! Options are layered as server/routes.go layers them for every runner
//! ([`crate::layers`]): `DefaultOptions()`, the model's Modelfile
//! `PARAMETER`s (none for `OllamaMlx::default()`, given to
//! [`OllamaMlx::with_model_params`]), then the request's; `from_request`
//! answers for `/v1/chat/completions`, `/v1/completions` and
//! `/api/generate`/`/api/chat` ([`request`], v0.32.10 to
//! v0.33.0-rc2). An option infinite as a float32 is refused: the server's
//! `json.Marshal` of the options for the runner fails on it.
//!
//! Recorded by `scripts/reference/mlx/record_ollama.py`, which runs the same
//! MLX ops through MLX 0.32.4 on CPU (`fixtures/mlx/ollama_mlx.jsonl`).
//!
//! # The rules (single sequence)
//!
//! 1. `Options.normalize`: repeat_penalty <= 0 → 1; repeat_last_n < 0 →
//!    num_ctx (here: the whole context, which num_ctx always covers);
//!    repeat_last_n = 0 or no active penalty → no history; seed < 0 →
//!    unseeded.
//! 2. `penalty` over the last repeat_last_n ids (`Sampler.Add` seeds the ring
//!    with the prompt): gather, `× where(l < 0, p, f32(1/p))` and `- presence`
//!    once per distinct id (a scatter), then `- frequency` per occurrence
//!    (`ScatterAddAxis`).
//! 3. temperature <= 0: argmax (first index).
//! 4. 0 < top_k < V (sparse): `argpartition(-scores, k - 1)[:k]` — exactly
//!    k, lower ids win ties, **in the order libstdc++'s `nth_element` leaves
//!    them** ([`replicas::libstdcxx`]) — then `softmax(scores[ids] / T)`; otherwise
//!    (dense) `softmax(scores / T)` over the vocabulary. Temperature before
//!    the filters.
//! 5. top-p (0 < p < 1): stable argsort of `-probs`, keep while
//!    `inclusive_cumsum - p_i < top_p` (the mass before a token).
//! 6. min-p (0 < m <= 1): drop `p < max_p * m`.
//! 7. `probs / max(sum, 1e-20)`; the draw is `categorical(log(probs))` with
//!    key `mx.random.key(SplitMix64(seed, n))` for the slot's n-th draw.

pub mod request;

use parity_core::jsonl::f32_value;
use parity_core::{
    Against, Context, Described, Distribution, Error, Explanation, Fix, Info, Logits, Precision,
    Route, Semantics, Variant,
};
use serde_json::{Map, Value};

use mlx_sampling::argmax;

use crate::layers::{Fields, Layer, Layered};
use crate::version::Version;
use replicas::mlx as random;

/// Ollama's MLX-runner sampler (fb3076099), serving a model with no
/// Modelfile parameters ([`OllamaMlx::default`]) or
/// with the ones given to [`OllamaMlx::with_model_params`].
#[derive(Debug, Clone, Default)]
pub struct OllamaMlx {
    model: Option<Map<String, Value>>,
}

impl OllamaMlx {
    /// Ollama serving a safetensors model whose Modelfile `PARAMETER`s (its
    /// params layer, e.g. `{"temperature": 0.6, "top_k": 20, "stop": [...]}`)
    /// are `params`: they fill every option a request leaves out
    /// (server/routes.go `modelOptionsWithEmbeddingBatchDefault`:
    /// `DefaultOptions()`, `FromMap(model.Options)`, `FromMap(requestOpts)`;
    /// the MLX runner is scheduled through the same `scheduleRunner`).
    /// Checked now as `FromMap` checks them; the error names the parameter
    /// and quotes its value.
    pub fn with_model_params(params: Map<String, Value>) -> Result<Self, Error> {
        parse_over(Some(&params), &Map::new())?;
        Ok(Self {
            model: Some(params),
        })
    }

    /// The model's parameters, when given.
    pub fn model_params(&self) -> Option<&Map<String, Value>> {
        self.model.as_ref()
    }
}

parity_core::params! {
    /// `sample.Options` from Ollama option names, with `api.DefaultOptions`:
    /// each field once, with what `compare semantics` says of it.
    #[derive(Debug, Clone, PartialEq)]
    pub struct OllamaMlxParams {
        /// `temperature` (0.8); <= 0 is greedy.
        pub temperature: f32 = 0.8 => "<= 0 = greedy; divides before top-p/min-p",
        /// `top_k` (40); 0 < k < V takes the sparse path.
        pub top_k: i64 = 40 => "exactly k (lower ids win ties); 0 or >= vocab = off",
        /// `top_p` (0.9); filters when 0 < p < 1.
        pub top_p: f32 = 0.9 => "keep while the mass before a token < p",
        /// `min_p` (0); filters when 0 < m <= 1.
        pub min_p: f32 = 0.0 => "drop p < max_p * min_p",
        /// `repeat_last_n` (64); 0 disables penalties, -1 = the whole context.
        pub repeat_last_n: i64 = 64 => "penalty window incl. the prompt; 0 = off, -1 = all",
        /// `repeat_penalty` (1.0; 1.1 before Ollama v0.32.10).
        pub repeat_penalty: f32 = 1.0 => "l<0: l*p, else l*(1/p); <= 0 read as 1",
        /// `presence_penalty` (0).
        pub presence_penalty: f32 = 0.0 => "subtracted once per id in the window",
        /// `frequency_penalty` (0).
        pub frequency_penalty: f32 = 0.0 => "subtracted per occurrence in the window",
        /// `seed` (-1 = unseeded).
        pub seed: i64 = -1 => ">= 0: keys SplitMix64(seed, n) per draw",
        /// Successive seeded draws to replay.
        pub draws: Option<usize> => "(not an Ollama option) replay this many seeded draws",
    }
}

/// The release whose `DefaultOptions()` the runner's options start from
/// (fb3076099, v0.33.0-rc2; the same from v0.32.10).
const RELEASE: Version = Version::new(0, 33, 0, Some(2));

// The options x/mlxrunner/server.go copies into `sample.Options` (not typical_p).
crate::layers::holds!(OllamaMlxParams: temperature, top_k, top_p, min_p, repeat_last_n, repeat_penalty, presence_penalty, frequency_penalty, seed);

fn parse_draws(v: &Value) -> Result<Option<usize>, Error> {
    if v.is_null() {
        return Ok(None);
    }
    let n = v.as_u64().ok_or_else(|| {
        Error::new(format_args!(
            "`draws` = {v}: must be a non-negative integer"
        ))
    })?;
    if n > mlx_sampling::MAX_DRAWS as u64 {
        return Err(Error::new(format_args!(
            "`draws` = {n}: at most {} draws are replayed",
            mlx_sampling::MAX_DRAWS
        )));
    }
    Ok(Some(n as usize))
}

/// `DefaultOptions()`, then `FromMap(model)` (the model's Modelfile
/// `PARAMETER`s), then `FromMap(options)` (this project's params, strict).
pub(crate) fn parse_over(
    model: Option<&Map<String, Value>>,
    options: &Map<String, Value>,
) -> Result<OllamaMlxParams, Error> {
    let mut o = Layered::<OllamaMlxParams>::defaults(RELEASE, Fields::Current);
    if let Some(model) = model {
        o.layer(model, Layer::Model)?;
    }
    let mut own = options.clone();
    let draws = own.remove("draws");
    o.layer(&own, Layer::Request)?;
    // x/mlxrunner/client.go `Completion`: json.Marshal of the options
    o.finite("the MLX runner", "")?;
    let mut p = o.params;
    if let Some(d) = draws {
        p.draws = parse_draws(&d)?;
    }
    if p.draws.is_some() && p.seed < 0 && p.temperature > 0.0 {
        return Err(Error::new(
            "`draws` needs a `seed` >= 0: an unseeded runner draws from MLX's global key",
        ));
    }
    Ok(p)
}

fn parse(params: &Map<String, Value>) -> Result<OllamaMlxParams, Error> {
    parse_over(None, params)
}

/// SplitMix64 of (seed, counter): `mixSeed` in sample.go.
pub fn mix_seed(seed: u64, counter: u64) -> u64 {
    let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15u64.wrapping_mul(counter + 1));
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// MLX's softmax kernel on one row (precise or not, float32 accumulates in
/// float32): `exp(x - max) * (1 / sum)`.
fn softmax(x: &[f32]) -> Vec<f32> {
    let m = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let e: Vec<f32> = x.iter().map(|&v| random::exp(v - m)).collect();
    let r = 1.0 / random::sum(&e);
    e.iter().map(|&v| v * r).collect()
}

/// What one step computes: the ids in the runner's order (dense: 0..V) and
/// their final probabilities, or the greedy token.
struct Step {
    ids: Vec<usize>,
    probs: Vec<f32>,
    greedy: Option<usize>,
    penalised: Option<Vec<f32>>,
}

fn step(logits: &[f32], context: &Context<'_>, o: &OllamaMlxParams) -> Result<Step, Error> {
    let vocab = logits.len();
    let rp = if o.repeat_penalty <= 0.0 {
        1.0
    } else {
        o.repeat_penalty
    };
    let ids = context.input_ids();
    let n = usize::try_from(o.repeat_last_n).unwrap_or(ids.len());
    let uses = n != 0 && (rp != 1.0 || o.presence_penalty != 0.0 || o.frequency_penalty != 0.0);
    let mut scores = logits.to_vec();
    let mut penalised = None;
    let hist = if uses {
        &ids[ids.len() - n.min(ids.len())..]
    } else {
        &[][..]
    };
    if !hist.is_empty() {
        let idx: Vec<usize> = hist
            .iter()
            .map(|&t| {
                usize::try_from(t).ok().filter(|&i| i < vocab).ok_or_else(|| {
                    Error::new(format_args!(
                        "context id {t} is outside the vocabulary of {vocab} (MLX's gather/scatter do not check bounds)"
                    ))
                })
            })
            .collect::<Result<_, _>>()?;
        if rp != 1.0 || o.presence_penalty != 0.0 {
            let inv = 1.0 / rp;
            // Gather then scatter: each distinct id once, from its original value.
            let original = scores.clone();
            for &i in &idx {
                let mut a = original[i];
                if rp != 1.0 {
                    a *= if a < 0.0 { rp } else { inv };
                }
                if o.presence_penalty != 0.0 {
                    a += -o.presence_penalty;
                }
                scores[i] = a;
            }
        }
        if o.frequency_penalty != 0.0 {
            for &i in &idx {
                scores[i] += -o.frequency_penalty;
            }
        }
        penalised = Some(scores.clone());
    }
    if o.temperature <= 0.0 {
        return Ok(Step {
            ids: Vec::new(),
            probs: Vec::new(),
            greedy: Some(argmax(&scores)),
            penalised,
        });
    }
    let t = o.temperature;
    let (order, mut probs) = match usize::try_from(o.top_k) {
        Ok(k) if 0 < k && k < vocab => {
            let neg: Vec<f32> = scores.iter().map(|&v| -v).collect();
            let mut idx: Vec<usize> = (0..vocab).collect();
            // MLX's argpartition comparator: value, then index.
            let n = idx.len();
            replicas::libstdcxx::nth_element(&mut idx, 0, k - 1, n, &|&a: &usize, &b: &usize| {
                neg[a] < neg[b] || (neg[a] == neg[b] && a < b)
            });
            idx.truncate(k);
            let x: Vec<f32> = idx.iter().map(|&i| scores[i] / t).collect();
            (idx, softmax(&x))
        }
        _ => {
            let x: Vec<f32> = scores.iter().map(|&v| v / t).collect();
            ((0..vocab).collect(), softmax(&x))
        }
    };
    if 0.0 < o.top_p && o.top_p < 1.0 {
        let mut ord: Vec<usize> = (0..probs.len()).collect();
        // Stable argsort of -probs.
        ord.sort_by(|&a, &b| (-probs[a]).total_cmp(&-probs[b]));
        let mut cum = 0.0f32;
        let mut keep = vec![false; probs.len()];
        for &j in &ord {
            cum += probs[j];
            keep[j] = cum - probs[j] < o.top_p;
        }
        for (p, k) in probs.iter_mut().zip(keep) {
            if !k {
                *p = 0.0;
            }
        }
    }
    if 0.0 < o.min_p && o.min_p <= 1.0 {
        let thr = probs.iter().copied().fold(f32::NEG_INFINITY, f32::max) * o.min_p;
        for p in probs.iter_mut() {
            if *p < thr {
                *p = 0.0;
            }
        }
    }
    if probs.iter().any(|p| p.is_nan()) {
        return Err(Error::new(format_args!(
            "temperature {t}: scores / temperature overflow float32 and the softmax is NaN (the runner draws an arbitrary token)"
        )));
    }
    let s = random::sum(&probs).max(1e-20);
    for p in probs.iter_mut() {
        *p /= s;
    }
    Ok(Step {
        ids: order,
        probs,
        greedy: None,
        penalised,
    })
}

static INFO: Info = Info {
    name: "ollama-mlx",
    engine: "Ollama v0.33.0-rc2 (fb3076099) MLX runner, x/mlxrunner/sample/sample.go; safetensors models",
    summary: "penalties over the last repeat_last_n ids (prompt included; repeat as multiply by the reciprocal), greedy at T<=0, top-k (exactly k, argpartition) -> softmax(scores / T) -> top-p (mass before < p) -> min-p -> renormalise; categorical with SplitMix64(seed, n) keys",
    verified_against: "sample.go's MLX ops run through MLX 0.32.4 on CPU by scripts/reference/mlx/record_ollama.py on the SmolLM2, edge and synthetic logits (fixtures/mlx/ollama_mlx.jsonl): kept sets, top-k order, probabilities and 40 seeded draws per case",
    params: OllamaMlxParams::PARAMS,
};

impl Semantics for OllamaMlx {
    type Params = OllamaMlxParams;

    fn info(&self) -> &'static Info {
        &INFO
    }

    fn parse_params(&self, params: &Map<String, Value>) -> Result<OllamaMlxParams, Error> {
        parse_over(self.model.as_ref(), params)
    }

    fn seed(&self) -> &'static [parity_core::RouteSeed] {
        crate::seed::MLX
    }

    fn from_request(
        &self,
        request: &Map<String, Value>,
        _generation_config: Option<&Map<String, Value>>,
    ) -> Vec<Route<OllamaMlxParams>> {
        request::routes(request, self.model.as_ref())
    }

    fn distribution(
        &self,
        logits: &Logits,
        context: &Context<'_>,
        params: &OllamaMlxParams,
    ) -> Result<Distribution, Error> {
        let x = logits.to_f32()?;
        if x.iter().all(|&v| v == f32::NEG_INFINITY) {
            return Err(Error::new("every logit is -inf"));
        }
        let s = step(&x, context, params)?;
        let vocab = x.len();
        let dist = if let Some(g) = s.greedy {
            let d = Distribution::one_hot(vocab, g, Precision::F32);
            match params.draws {
                Some(n) => d.with_tokens(vec![g as i64; n]),
                None => d,
            }
        } else {
            let mut probs = vec![0.0f64; vocab];
            for (&i, &p) in s.ids.iter().zip(&s.probs) {
                probs[i] = f64::from(p);
            }
            let d = Distribution::new(probs, Precision::F32);
            match (params.draws, u64::try_from(params.seed)) {
                (Some(n), Ok(seed)) => d.with_tokens(draws(&s.ids, &s.probs, seed, n)),
                _ => d,
            }
        };
        Ok(match s.penalised {
            Some(p) => dist.with_penalised(p),
            None => dist,
        })
    }

    fn from_generate(&self, kwargs: &Map<String, Value>) -> Option<Result<OllamaMlxParams, Error>> {
        if mlx_sampling::translate::missing_warper(kwargs) {
            return None;
        }
        // The literal port: same-named options; do_sample=False as temperature 0.
        let mut m = Map::new();
        for k in ["temperature", "top_p", "min_p"] {
            if let Some(v) = kwargs.get(k).filter(|v| !v.is_null()) {
                m.insert(k.into(), v.clone());
            }
        }
        if let Some(v) = kwargs.get("top_k") {
            m.insert(
                "top_k".into(),
                if v.is_null() {
                    Value::from(0)
                } else {
                    v.clone()
                },
            );
        }
        if let Some(v) = kwargs.get("repetition_penalty").filter(|v| !v.is_null()) {
            m.insert("repeat_penalty".into(), v.clone());
        }
        if kwargs.get("do_sample") != Some(&Value::Bool(true)) {
            m.insert("temperature".into(), Value::from(0.0));
        }
        Some(parse(&m))
    }

    fn explain(&self, row: &Against<'_>, p: &OllamaMlxParams) -> Explanation {
        let kwargs = row.kwargs;
        let sampling = kwargs.get("do_sample") == Some(&Value::Bool(true));
        let mut reasons = Vec::new();
        if sampling && p.temperature > 0.0 {
            if !kwargs.contains_key("top_k") && p.top_k == 40 {
                reasons.push("default top-k: Ollama's top_k is 40, transformers' 50".to_string());
            }
            if !kwargs.contains_key("top_p") && p.top_p < 1.0 {
                reasons.push(format!(
                    "default top-p: Ollama's top_p is {}, transformers' 1.0",
                    p.top_p
                ));
            }
            if p.top_k > 0 && row.transformers.kept().len() > row.this.kept().len() {
                reasons.push("top-k ties: the MLX runner keeps exactly k (argpartition, lower ids win); transformers keeps every token tied with the k-th".to_string());
            }
        }
        let rp = if p.repeat_penalty <= 0.0 {
            1.0
        } else {
            p.repeat_penalty
        };
        if rp != 1.0 && p.repeat_last_n != 0 {
            let n = usize::try_from(p.repeat_last_n).unwrap_or(usize::MAX);
            let (missed, _) = row.context.missed_by_window(n, row.logits.len());
            if missed > 0 {
                reasons.push(format!(
                    "repetition window: the runner penalises the last {} ids ({missed} earlier ids of the context are not); transformers the whole context",
                    p.repeat_last_n
                ));
            }
        }
        Explanation {
            reasons,
            fix: fix(kwargs),
        }
    }

    fn fix(&self, kwargs: &Map<String, Value>, _variant: Option<&Variant>) -> Option<Fix> {
        fix(kwargs)
    }

    fn translate(
        &self,
        kwargs: &Map<String, Value>,
        _options: &parity_core::TranslateOptions,
    ) -> Option<Result<parity_core::Translation, Error>> {
        let blocked = mlx_sampling::translate::unmatched(kwargs, "Ollama's MLX runner");
        let fix = match fix(kwargs) {
            Some(f) if blocked.is_empty() => Ok(f),
            _ => Err(blocked),
        };
        Some(Ok(mlx_sampling::translate::translation(
            "Ollama's MLX runner",
            "Ollama options",
            "the runner applies top-k, temperature, top-p and min-p in transformers' order: send transformers' values (its defaults differ: top_k 40, top_p 0.9) and repeat_last_n -1 for the whole context; exact except a top-k tie (exactly k) and float32 sums",
            fix,
            |_| None,
        )))
    }

    fn describe(&self, p: &OllamaMlxParams) -> Option<Described> {
        let fields = [
            ("temperature", f32_value(p.temperature)),
            ("top_k", Value::from(p.top_k)),
            ("top_p", f32_value(p.top_p)),
            ("min_p", f32_value(p.min_p)),
            ("repeat_last_n", Value::from(p.repeat_last_n)),
            ("repeat_penalty", f32_value(p.repeat_penalty)),
            ("presence_penalty", f32_value(p.presence_penalty)),
            ("frequency_penalty", f32_value(p.frequency_penalty)),
            ("seed", Value::from(p.seed)),
        ];
        Some(Described::Fields(
            fields
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
        ))
    }
}

/// The Ollama options that reproduce transformers' `generate(**kwargs)`:
/// the runner already applies top-k, temperature, top-p, min-p in
/// transformers' order, so spelling out transformers' values (top_k 50,
/// top_p 1.0 unless set) and a whole-context repetition window is enough
/// (ties at the k-th aside).
fn fix(kwargs: &Map<String, Value>) -> Option<Fix> {
    if mlx_sampling::translate::missing_warper(kwargs) {
        return None;
    }
    // What transformers runs with (an unset or `null` value its default).
    let hf = hf_sampling::resolve_sampling(kwargs).ok()?;
    let mut m = Map::new();
    let mut text = Vec::new();
    let r = hf.repetition_penalty;
    if r != 1.0 {
        m.insert("repeat_penalty".into(), Value::from(r));
        m.insert("repeat_last_n".into(), Value::from(-1));
        text.push(format!(
            "repeat_penalty={r}, repeat_last_n=-1 (the whole context)"
        ));
    }
    if !hf.do_sample {
        m.insert("temperature".into(), Value::from(0.0));
        text.insert(0, "temperature=0 (greedy)".to_string());
        return Some(Fix {
            text: text.join(", "),
            params: m,
        });
    }
    let (t, top_p) = (hf.temperature, hf.top_p);
    let k = hf.top_k.unwrap_or(0);
    let min_p = hf.min_p.unwrap_or(0.0);
    m.insert("temperature".into(), Value::from(t));
    m.insert("top_k".into(), Value::from(k));
    m.insert("top_p".into(), Value::from(top_p));
    m.insert("min_p".into(), Value::from(min_p));
    text.insert(
        0,
        format!("temperature={t}, top_k={k} (exactly k at a tie), top_p={top_p}, min_p={min_p}"),
    );
    Some(Fix {
        text: text.join(", "),
        params: m,
    })
}

/// The tokens of `n` successive seeded draws: `categorical(log(probs))` over
/// the runner's ids with key `mx.random.key(mix_seed(seed, j))`.
fn draws(ids: &[usize], probs: &[f32], seed: u64, n: usize) -> Vec<i64> {
    let logp: Vec<f32> = probs
        .iter()
        .map(|&p| {
            if p <= 0.0 {
                f32::NEG_INFINITY
            } else {
                p.max(1e-20).ln()
            }
        })
        .collect();
    let w = random::categorical_weights(&logp);
    (0..n as u64)
        .map(|j| {
            let key = random::key(mix_seed(seed, j));
            let u = random::uniform_from_bits(random::bits(key, 1)[0]);
            ids[random::categorical_from_weights(&w, u)] as i64
        })
        .collect()
}

/// The ids the sparse path keeps, in the order MLX's argpartition leaves
/// them (for tests against the recorded order); `None` on the dense path.
pub fn top_k_order(
    logits: &Logits,
    context: &Context<'_>,
    params: &OllamaMlxParams,
) -> Result<Option<Vec<usize>>, Error> {
    let x = logits.to_f32()?;
    let s = step(&x, context, params)?;
    let sparse = usize::try_from(params.top_k).is_ok_and(|k| k > 0 && k < x.len());
    Ok((s.greedy.is_none() && sparse).then_some(s.ids))
}
