//! llama.cpp's next-token sampling as sampling-parity semantics.
//!
//! [`LlamaCpp`] (`llama.cpp`) is the sampler chain llama-server builds for a
//! `/completion` request (`common_sampler_init`, common/sampling.cpp), with
//! the request fields, defaults, clamps and errors of that server
//! (tools/server/server-schema.cpp), all at llama.cpp commit 0c1e57098 — the
//! tree llama-cpp-python 0.3.36 vendors. Ollama's llama-server path
//! (`ollama`, in ollama-sampling) runs its requests through [`LlamaCpp`].
//!
//! Each answers with the exact distribution the chain's final `dist` sampler
//! draws from: the candidates the samplers leave, with the probabilities
//! `dist` computes (`expf(logit - max)` summed in double, then normalised to
//! float). XTC with a probability strictly between 0 and 1 makes the answer
//! the exact mixture of its two branches, weighted by the share of its RNG's
//! outputs that trigger it. With `"seed"` and `"draws": N` in the params the
//! answer also carries the first N tokens a fresh chain seeded with that seed
//! returns when applied N times to the same logits (with a seed and no
//! `draws`, the one token llama-server itself would sample).
//!
//! Hand-written replicas (no C code is linked): `std::mt19937` and
//! libstdc++ 12's `generate_canonical` ([`mt`]), libstdc++ 12's `std::sort`
//! and `std::partial_sort` ([`replicas::libstdcxx`]), and every CPU sampler of
//! src/llama-sampler.cpp including llama.cpp's bucket sort ([`chain`]). Where
//! C++ leaves a conversion undefined (a float out of `int` range), the x86-64
//! result is reproduced. `expf`/`logf`/`powf` come from the platform libm
//! through Rust's float methods, as llama.cpp's do.
//!
//! Verified against the real chain: `scripts/reference/llamacpp/record.py`
//! drives llama.cpp's own samplers through llama-cpp-python's low-level API on
//! every fixture's logits and records kept candidates, probabilities and 100
//! seeded draws per case into `fixtures/llamacpp/cases.jsonl`; the tests in
//! `tests/it/` replay every case. The same requests recorded from llama.cpp
//! b11434 (`record.py --build b11434`, `fixtures/llamacpp-b11434/`) are
//! byte-identical, so no rule here has a version range narrower than
//! b11312 (the pin) to b11434. See docs/engines/llamacpp.md ("Versions").
//!
//! Not reproduced (refused with an error that says so): DRY, `ignore_eos`,
//! text keys in `logit_bias`, grammars and `infill` (they need the model's
//! vocabulary or tokenizer), mirostat and `adaptive_p` (they replace `dist`),
//! and suppress-token lists a GGUF may carry.
//!
//! `backend_sampling: true` is llama.cpp's backend sampling as ggml's CPU
//! backend runs it (`src/backend.rs`: the offloaded prefix of the chain computed
//! with ggml-cpu's kernels, hand-written, then the CPU remainder), which
//! samples otherwise than the CPU chain; checked against b11434's
//! `fixtures/llamacpp-b11434/backend-cpu.jsonl` bit for bit. A top-k above
//! the vocabulary aborts the real server there and is an error here.

#![deny(missing_docs)]

mod backend;
mod chain;
pub mod defaults;
mod engine;
mod mt;
mod params;
pub mod port;
mod python;
mod seed;
mod served;
pub mod translate;

use serde_json::{Map, Value, json};

use parity_core::{
    Against, Context, Described, Distribution, Error, Explanation, Fix, Info, Logits, Route,
    Semantics,
};

pub use defaults::ServerDefaults;
pub use params::ServerParams;
pub use port::LlamaCppPort;
pub use python::PythonParams;
pub use served::{LLAMA_SERVER, LlamaServer};

/// llama.cpp's sampler chain as llama-server runs it.
#[derive(Debug, Clone, Copy, Default)]
pub struct LlamaCpp;

static LLAMA_INFO: Info = Info {
    name: "llama.cpp",
    engine: "llama.cpp 0c1e57098 (llama-cpp-python 0.3.36), llama-server /completion",
    summary: "llama-server's sampler chain: penalties, top_k 40, top_p 0.95, min_p 0.05, temperature last, then dist; exact-k ties by libstdc++ sort order",
    verified_against: "the real llama.cpp sampler chain via llama-cpp-python 0.3.36 on every SmolLM2 and edge fixture (fixtures/llamacpp/cases.jsonl): kept sets, probabilities and 100 seeded draws per case; the same cases recorded from llama.cpp b11434 (fixtures/llamacpp-b11434) replay identically, and with backend_sampling true its chains run on ggml's CPU backend (backend-cpu.jsonl) bit for bit",
    params: params::Completion::PARAMS,
};

impl Semantics for LlamaCpp {
    type Params = ServerParams;

    fn info(&self) -> &'static Info {
        &LLAMA_INFO
    }

    fn parse_params(&self, params: &Map<String, Value>) -> Result<ServerParams, Error> {
        params::parse(params)
    }

    fn distribution(
        &self,
        logits: &Logits,
        context: &Context<'_>,
        params: &ServerParams,
    ) -> Result<Distribution, Error> {
        engine::distribution(params, logits, context)
    }

    fn from_generate(&self, kwargs: &Map<String, Value>) -> Option<Result<ServerParams, Error>> {
        let request = request_for_generate(kwargs)?;
        Some(params::parse(&request))
    }

    fn translate(
        &self,
        kwargs: &Map<String, Value>,
        options: &parity_core::TranslateOptions,
    ) -> Option<Result<parity_core::Translation, Error>> {
        Some(Ok(translate::translation(kwargs, options)))
    }

    fn seed(&self) -> &'static [parity_core::RouteSeed] {
        seed::LLAMA_SERVER
    }

    /// llama-server's `/v1/chat/completions` reads the same field names as
    /// `/completion` (tools/server/server-common.cpp
    /// `oaicompat_chat_params_parse` passes them through), ignores the ones
    /// it does not know, fills in its built-in defaults (this server was
    /// given no model file and no flags: [`LlamaServer`] has them) and
    /// reads no generation config of its own.
    fn from_request(
        &self,
        request: &Map<String, Value>,
        _generation_config: Option<&Map<String, Value>>,
    ) -> Vec<Route<ServerParams>> {
        served::routes(&ServerDefaults::default(), request)
    }

    fn describe(&self, params: &ServerParams) -> Option<Described> {
        Some(Described::Fields(params.describe()))
    }

    fn explain(&self, row: &Against<'_>, params: &ServerParams) -> Explanation {
        explain(row, params)
    }
}

/// The llama-server request a user porting `generate(**kwargs)` writes by
/// reading the kwargs literally: `temperature`, `top_k`, `top_p`, `min_p`,
/// `typical_p` under the same names, `repetition_penalty` as
/// `repeat_penalty`, and greedy decoding (`do_sample` false or absent) as
/// `temperature` 0. Everything else llama-server fills with its defaults.
/// `None` when the kwargs use something llama.cpp has no field for
/// (`epsilon_cutoff`, `eta_cutoff`, `no_repeat_ngram_size`, …) with an
/// active value.
pub fn request_for_generate(kwargs: &Map<String, Value>) -> Option<Map<String, Value>> {
    if !translate::unmatched(kwargs).is_empty() {
        return None;
    }
    let mut out = Map::new();
    let sample = kwargs
        .get("do_sample")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    for (key, val) in kwargs {
        match key.as_str() {
            "do_sample" => {}
            "temperature" | "top_k" | "top_p" | "min_p" | "typical_p" if sample => {
                out.insert(key.clone(), val.clone());
            }
            "temperature" | "top_k" | "top_p" | "min_p" | "typical_p" => {}
            "repetition_penalty" => {
                out.insert("repeat_penalty".into(), val.clone());
            }
            _ => {}
        }
    }
    if !sample {
        out.insert("temperature".into(), json!(0.0));
    }
    Some(out)
}

fn kw_f64(kwargs: &Map<String, Value>, key: &str) -> Option<f64> {
    kwargs.get(key).and_then(Value::as_f64)
}

/// Why llama.cpp's chain differs from transformers on a row, in words, and
/// the request that removes the differences the chain can remove.
fn explain(row: &Against<'_>, p: &ServerParams) -> Explanation {
    let kw = row.kwargs;
    let sample = kw
        .get("do_sample")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let mut reasons = Vec::new();
    let filters_active = p.top_p < 1.0 || p.min_p > 0.0 || p.typ_p < 1.0;
    let temp_pos = p
        .samplers
        .iter()
        .position(|s| *s == params::SamplerType::Temperature);
    let temp_last = temp_pos.is_some_and(|t| {
        p.samplers[t + 1..].iter().all(|s| {
            !matches!(
                s,
                params::SamplerType::TopP
                    | params::SamplerType::MinP
                    | params::SamplerType::TypicalP
            )
        })
    });
    reasons.extend(chain_reasons(
        row,
        &ChainSetting {
            sample,
            temp: p.temp,
            top_k: p.top_k,
            top_p: p.top_p,
            min_p: p.min_p,
            temp_last_acts: sample && p.temp > 0.0 && filters_active && temp_last,
            ties_checked: true,
            left_out: "fields the request leaves out get the engine's defaults",
        },
    ));
    let rep = kw_f64(kw, "repetition_penalty").unwrap_or(1.0);
    let n = row.context.input_ids().len();
    if rep != 1.0 && p.penalty_last_n >= 0 && (p.penalty_last_n as usize) < n {
        let (missed, in_prompt) = row
            .context
            .missed_by_window(p.penalty_last_n as usize, row.logits.len());
        reasons.push(format!(
            "the repeat penalty covers only the last {} ids (prompt included); transformers penalises all {n}: {missed} ids escape it ({in_prompt} of them from the prompt)",
            p.penalty_last_n
        ));
    }
    let fix = translate::matching_request(kw, n).ok().map(|params| Fix {
        text: translate::RECIPE.into(),
        params,
    });
    Explanation { reasons, fix }
}

/// llama-cpp-python 0.3.36's `Llama.create_completion` and its server
/// ([`python`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct LlamaCppPython;

static PYTHON_INFO: Info = Info {
    name: "llama-cpp-python",
    engine: "llama-cpp-python 0.3.36 (llama.cpp 0c1e57098), Llama.create_completion and llama_cpp.server",
    summary: "llama.cpp's samplers in llama-cpp-python's own chain: logit_bias, penalties over the last 64 generated tokens only, then greedy (T = 0), dist (T < 0) or top_k 40, typical, top_p 0.95, min_p 0.05, temperature, dist; the server adds repeat_penalty 1.1",
    verified_against: "the real chain llama-cpp-python 0.3.36's _init_sampler builds, applied to every SmolLM2 and edge fixture (fixtures/llama-cpp-python): kept sets, probabilities and seeded draws",
    params: PythonParams::PARAMS,
};

impl Semantics for LlamaCppPython {
    type Params = PythonParams;

    fn info(&self) -> &'static Info {
        &PYTHON_INFO
    }

    fn parse_params(&self, params: &Map<String, Value>) -> Result<PythonParams, Error> {
        python::parse(params)
    }

    fn distribution(
        &self,
        logits: &Logits,
        context: &Context<'_>,
        params: &PythonParams,
    ) -> Result<Distribution, Error> {
        python::distribution(params, logits, context)
    }

    /// The `create_completion` call a user porting `generate(**kwargs)`
    /// writes: the same names (`repetition_penalty` as `repeat_penalty`),
    /// greedy as `temperature` 0; the rest keeps the Python API's defaults.
    fn from_generate(&self, kwargs: &Map<String, Value>) -> Option<Result<PythonParams, Error>> {
        let request = request_for_generate(kwargs)?;
        Some(python::parse(&request))
    }

    fn translate(
        &self,
        kwargs: &Map<String, Value>,
        _options: &parity_core::TranslateOptions,
    ) -> Option<Result<parity_core::Translation, Error>> {
        Some(Ok(python::translation(kwargs)))
    }

    fn seed(&self) -> &'static [parity_core::RouteSeed] {
        seed::LLAMA_CPP_PYTHON
    }

    fn from_request(
        &self,
        request: &Map<String, Value>,
        _generation_config: Option<&Map<String, Value>>,
    ) -> Vec<Route<PythonParams>> {
        python::routes(request)
    }

    fn describe(&self, params: &PythonParams) -> Option<Described> {
        Some(Described::Fields(params.describe()))
    }

    fn explain(&self, row: &Against<'_>, params: &PythonParams) -> Explanation {
        python::explain(row, params)
    }
}

/// What a llama.cpp chain was set up with, for [`chain_reasons`].
pub(crate) struct ChainSetting {
    /// transformers samples (`do_sample`).
    pub(crate) sample: bool,
    pub(crate) temp: f32,
    pub(crate) top_k: i32,
    pub(crate) top_p: f32,
    pub(crate) min_p: f32,
    /// Temperature comes after top-p/min-p/typical and they act.
    pub(crate) temp_last_acts: bool,
    /// Whether top-k runs (to look for a tie at its cut).
    pub(crate) ties_checked: bool,
    /// How the engine's defaults reach absent fields, in words.
    pub(crate) left_out: &'static str,
}

/// The reasons every chain of llama.cpp's samplers differs from
/// transformers for: temperature last, defaults for absent fields, exactly
/// k kept on a tie.
pub(crate) fn chain_reasons(row: &Against<'_>, c: &ChainSetting) -> Vec<String> {
    let kw = row.kwargs;
    let mut reasons = Vec::new();
    if c.temp_last_acts && c.temp != 1.0 {
        reasons.push(format!(
            "temperature {} is applied last: top-p/min-p/typical see the untempered distribution (transformers applies temperature first)",
            c.temp
        ));
    }
    if c.sample {
        let mut added = Vec::new();
        if !kw.contains_key("top_k") && c.top_k > 0 {
            added.push(format!("top_k {} (transformers: 50)", c.top_k));
        }
        if !kw.contains_key("top_p") && c.top_p < 1.0 {
            added.push(format!("top_p {}", c.top_p));
        }
        if !kw.contains_key("min_p") && c.min_p > 0.0 {
            added.push(format!("min_p {}", c.min_p));
        }
        if !kw.contains_key("temperature") && c.temp != 1.0 {
            added.push(format!("temperature {} (transformers: 1)", c.temp));
        }
        if !added.is_empty() {
            reasons.push(format!("{}: {}", c.left_out, added.join(", ")));
        }
    }
    if c.ties_checked && c.top_k > 0 {
        let k = c.top_k as usize;
        let mut sorted: Vec<f32> = row.logits.to_vec();
        sorted.sort_by(|a, b| b.total_cmp(a));
        if k < sorted.len() && sorted[k - 1] == sorted[k] {
            reasons.push(format!(
                "top_k keeps exactly {k}: the logits tie at the k-th value and llama.cpp cuts the tie by its sort order (transformers keeps every tied token)"
            ));
        }
    }
    reasons
}
