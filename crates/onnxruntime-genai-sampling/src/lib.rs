//! ONNX Runtime GenAI's next-token sampling (CPU), as a
//! [`parity_core::Semantics`] named `onnxruntime-genai`.
//!
//! # Reference
//!
//! The PyPI wheel `onnxruntime-genai==0.18.0` (CPU) is what the recorded
//! cases come from (`scripts/reference/onnxruntime-genai/`, fixtures in
//! `fixtures/onnxruntime-genai/`); the source was read at
//! microsoft/onnxruntime-genai a0c04eb13 (2026-08-22, 0.16.0-dev), the
//! newest commit the project can fetch: src/config.h (`struct Search`
//! defaults), src/config.cpp (`Search_Element`, `SafeDoubleToInt`),
//! src/generators.cpp (`InitializeSamplingMethod`, `CreateRandomGenerator`),
//! src/standard_decoding_strategy.cpp, src/search.cpp and
//! src/sampling_distribution.h (see [`sampler`]).
//!
//! # What it computes
//!
//! 1. The repetition penalty (transformers' rule, each id of the whole
//!    sequence once) and the no-repeat n-gram ban.
//! 2. Greedy — the first index of the maximum — when `do_sample` is false
//!    (the default), `top_k` is 1 or `temperature` is 0.
//! 3. Otherwise, with top-k when `top_k` > 1: exactly k by
//!    `std::partial_sort`, softmax at T over them, then (for 0 < top_p < 1)
//!    the shortest prefix whose float32 running sum reaches top_p, then
//!    renormalised. With `top_k` 0: the nucleus over the whole vocabulary
//!    found by `FindNucleus`, which stops at a tail bound instead of the
//!    full partition function (above 64 tokens it may keep a few more than
//!    the exact nucleus) — and with the default `top_p` 0 that nucleus is
//!    one token (microsoft/onnxruntime-genai #1237).
//! 4. The draw: `std::discrete_distribution<int>` over the kept
//!    probabilities on the generator's `std::mt19937(random_seed)`; the
//!    distribution reported is the share of `[0, 1)` it maps to each token.
//!
//! # Hand-written replicas
//!
//! The float32 steps in the engine's order, libstdc++'s `partial_sort`
//! ([`replicas::libstdcxx`]) and `discrete_distribution`
//! ([`replicas::libstdcxx`]) on `std::mt19937`
//! ([`replicas::mt19937`]): which of several tied tokens survives and
//! which token a seed draws depend on them.
#![deny(missing_docs)]

mod params;
mod sampler;
mod seed;

use parity_core::{
    Against, Context, Described, Distribution, Error, Explanation, Fix, Info, Logits, Precision,
    Route, Semantics,
};
use serde_json::{Map, Value, json};

pub use params::SearchParams;

/// The one way a user sets the search options (a library call: no server).
pub(crate) const ROUTE: parity_core::Endpoint = parity_core::Endpoint::Call(
    "search options (genai_config.json \"search\" / set_search_options)",
);

/// ONNX Runtime GenAI's CPU sampling step.
#[derive(Debug, Clone, Copy, Default)]
pub struct OrtGenAi;

static INFO: Info = Info {
    name: "onnxruntime-genai",
    engine: "ONNX Runtime GenAI 0.18.0 (CPU; source read at a0c04eb13)",
    summary: "greedy unless do_sample; top_k 50 by std::partial_sort (exactly k), softmax at T, top-p inside the top-k; top_k 0 = a bounded nucleus (top_p 0 by default: one token); std::discrete_distribution on std::mt19937",
    verified_against: "the real onnxruntime-genai 0.18.0 wheel through Generator.set_logits on every SmolLM2 and edge fixture (fixtures/onnxruntime-genai): seeded draws token for token, refused options",
    params: SearchParams::PARAMS,
};

/// The step's outcome for a record. The sequence holds int32 ids; ids
/// outside the vocabulary are skipped by the penalties, as the engine does.
fn step(logits: &Logits, context: &Context<'_>, p: &SearchParams) -> Result<sampler::Step, Error> {
    let x = logits.to_f32()?;
    parity_core::ensure!(!x.is_empty(), "`logits` is empty");
    let ids = context
        .input_ids()
        .iter()
        .enumerate()
        .map(|(i, &t)| {
            i32::try_from(t).map_err(|_| {
                Error::new(format_args!(
                    "`input_ids[{i}]` = {t} is not an int32: ONNX Runtime GenAI's sequence holds int32 token ids"
                ))
            })
        })
        .collect::<Result<Vec<i32>, Error>>()?;
    sampler::run(&x, &ids, p)
}

/// The kept ids in the engine's order and their float32 probabilities.
pub type Categorical = (Vec<i32>, Vec<f32>);

/// What ONNX Runtime GenAI hands `std::discrete_distribution` on this step:
/// the kept ids in the engine's order and their float32 probabilities, or
/// `None` when it takes the argmax. Bit for bit what the recorded wheel
/// and its unmodified sampling code give (`tests/it/recorded.rs`).
pub fn categorical_input(
    logits: &Logits,
    context: &Context<'_>,
    params: &SearchParams,
) -> Result<Option<Categorical>, Error> {
    Ok(match step(logits, context, params)?.outcome {
        sampler::Outcome::Greedy(_) => None,
        sampler::Outcome::Sampled { indices, probs } => Some((indices, probs)),
    })
}

impl Semantics for OrtGenAi {
    type Params = SearchParams;

    fn info(&self) -> &'static Info {
        &INFO
    }

    fn parse_params(&self, params: &Map<String, Value>) -> Result<SearchParams, Error> {
        params::parse(params)
    }

    fn distribution(
        &self,
        logits: &Logits,
        context: &Context<'_>,
        params: &SearchParams,
    ) -> Result<Distribution, Error> {
        let s = step(logits, context, params)?;
        let n = logits.len();
        let mut dist = Distribution::new(s.outcome.probabilities(n)?, Precision::F32);
        if let Some(k) = params.draws {
            dist = dist.with_tokens(s.outcome.draws(params.random_seed as u32, k));
        }
        if let Some(p) = s.penalised {
            dist = dist.with_penalised(p);
        }
        Ok(dist)
    }

    fn from_generate(&self, kwargs: &Map<String, Value>) -> Option<Result<SearchParams, Error>> {
        search_for_generate(kwargs).map(|m| params::parse(&m))
    }

    fn translate(
        &self,
        kwargs: &Map<String, Value>,
        _options: &parity_core::TranslateOptions,
    ) -> Option<Result<parity_core::Translation, Error>> {
        Some(Ok(translation(kwargs)))
    }

    fn seed(&self) -> &'static [parity_core::RouteSeed] {
        seed::SEED
    }

    /// ONNX Runtime GenAI has no HTTP server of its own: what a user sets
    /// is the search options, in the model's `genai_config.json` or with
    /// `set_search_options`. The fields of the body that are search
    /// options are read as such; the rest are not search options.
    fn from_request(
        &self,
        request: &Map<String, Value>,
        _generation_config: Option<&Map<String, Value>>,
    ) -> Vec<Route<SearchParams>> {
        let own = |k: &str| SearchParams::FIELDS.contains(&k) && k != "draws";
        let body = parity_core::params::only(request, own);
        let mut route = Route::new(ROUTE, params::parse(&body)).ignoring_all_but(request, own);
        if !request.contains_key("do_sample") {
            route = route.note("do_sample false (the default): the argmax, whatever temperature, top_k and top_p say");
        }
        if request.contains_key("seed") {
            route = route.note("the seed is `random_seed`; `seed` is not a search option (set_search_options refuses it)");
        }
        vec![route]
    }

    /// The options that differ from `struct Search`'s defaults, floats as
    /// their shortest float32 text.
    fn describe(&self, params: &SearchParams) -> Option<Described> {
        Some(Described::Fields(parity_core::params::non_default_f32(
            params,
            &["top_p", "temperature", "repetition_penalty"],
        )))
    }

    fn explain(&self, row: &Against<'_>, params: &SearchParams) -> Explanation {
        explain(row, params)
    }
}

/// Generate kwargs that have no search option, with a value that acts.
const NOT_EXPRESSIBLE: &[(&str, f64)] = &[
    ("min_p", 0.0),
    ("typical_p", 1.0),
    ("epsilon_cutoff", 0.0),
    ("eta_cutoff", 0.0),
];

/// The search options a user porting `generate(**kwargs)` writes by
/// reading the kwargs literally (same names; `None` when a kwarg has no
/// search option and acts).
fn search_for_generate(kwargs: &Map<String, Value>) -> Option<Map<String, Value>> {
    for (key, off) in NOT_EXPRESSIBLE {
        if let Some(v) = kwargs.get(*key).and_then(Value::as_f64)
            && v != *off
        {
            return None;
        }
    }
    let mut out = Map::new();
    for key in [
        "do_sample",
        "top_k",
        "top_p",
        "temperature",
        "repetition_penalty",
        "no_repeat_ngram_size",
    ] {
        if let Some(v) = kwargs.get(key).filter(|v| !v.is_null()) {
            out.insert(key.into(), v.clone());
        }
    }
    Some(out)
}

/// The recipe, in words.
const RECIPE: &str = "do_sample, top_k, top_p, temperature and repetition_penalty sent with transformers' values (ONNX Runtime GenAI's own defaults: do_sample false, top_p 0); both penalise the whole sequence and measure top-p inside the renormalised top-k; exact except where top_k cuts a tie (exactly k here) and float32 rounding at a top-p boundary";

/// The search options that reproduce transformers for these resolved
/// kwargs, or why none do: what ONNX Runtime GenAI has no option for, and
/// `top_k` 0 while sampling (its nucleus path stops at a tail bound, and
/// the full-vocabulary top-k needs the vocabulary size).
fn matching_search(kwargs: &Map<String, Value>) -> Result<Map<String, Value>, Vec<String>> {
    let mut blocked: Vec<String> = NOT_EXPRESSIBLE
        .iter()
        .filter_map(|(key, off)| {
            let v = kw_f64(kwargs, key)?;
            (v != *off).then(|| format!("{key} = {v}: ONNX Runtime GenAI has no such option"))
        })
        .collect();
    let chains: Vec<&str> = hf_sampling::NOT_IN_SAMPLER_CHAINS
        .iter()
        .copied()
        .filter(|k| *k != "no_repeat_ngram_size" && !NOT_EXPRESSIBLE.iter().any(|(n, _)| n == k))
        .collect();
    blocked.extend(
        hf_sampling::Acting::of(kwargs).blocked(&chains, "ONNX Runtime GenAI has no such option"),
    );
    // What transformers runs with (an unset or `null` kwarg is its default).
    let hf = match hf_sampling::resolve_sampling(kwargs) {
        Ok(hf) => hf,
        Err(e) => {
            blocked.push(format!("transformers refuses these kwargs: {e}"));
            return Err(blocked);
        }
    };
    if hf.do_sample && hf.top_k.is_none() {
        let given = kwargs.get("top_k").map_or("0".into(), parity_core::py::str);
        blocked.push(format!("top_k = {given}: ONNX Runtime GenAI's nucleus path stops at a tail bound (and keeps one token at top_p 0); send top_k = the model's vocabulary size for the full softmax"));
    }
    if !blocked.is_empty() {
        return Err(blocked);
    }
    let mut m = Map::new();
    if let (true, Some(top_k)) = (hf.do_sample, hf.top_k) {
        m.insert("do_sample".into(), json!(true));
        m.insert("top_k".into(), json!(top_k));
        m.insert("top_p".into(), json!(hf.top_p));
        m.insert("temperature".into(), json!(hf.temperature));
    }
    m.insert("repetition_penalty".into(), json!(hf.repetition_penalty));
    if let Some(n) = kwargs
        .get("no_repeat_ngram_size")
        .and_then(Value::as_i64)
        .filter(|&n| n > 0)
    {
        m.insert("no_repeat_ngram_size".into(), json!(n));
    }
    Ok(m)
}

/// `compare translate --to onnxruntime-genai`: the search options (as
/// `set_search_options` and as `genai_config.json`'s `"search"`), proven
/// on the bundled fixtures by `compare`, or what cannot be matched.
fn translation(kwargs: &Map<String, Value>) -> parity_core::Translation {
    use parity_core::TranslationLine::Wrapped;
    match matching_search(kwargs) {
        Ok(search) => {
            let args: Vec<String> = search
                .iter()
                .map(|(k, v)| match v {
                    Value::Bool(b) => format!("{k}={}", if *b { "True" } else { "False" }),
                    v => format!("{k}={v}"),
                })
                .collect();
            let mut json = Map::new();
            json.insert("search".into(), Value::Object(search.clone()));
            json.insert("unmatched".into(), json!([]));
            json.insert("recipe".into(), json!(RECIPE));
            parity_core::Translation {
                lines: vec![
                    Wrapped {
                        label: "onnxruntime-genai: ".into(),
                        text: format!("params.set_search_options({})", args.join(", ")),
                    },
                    Wrapped {
                        label: "genai_config.json \"search\": ".into(),
                        text: Value::Object(search.clone()).to_string().replace(',', ", "),
                    },
                    Wrapped {
                        label: "why: ".into(),
                        text: RECIPE.into(),
                    },
                ],
                json,
                params: Some(search),
            }
        }
        Err(unmatched) => {
            let mut json = Map::new();
            json.insert("search".into(), Value::Null);
            json.insert("unmatched".into(), json!(unmatched));
            json.insert("recipe".into(), json!(RECIPE));
            parity_core::Translation::cannot(
                "ONNX Runtime GenAI cannot reproduce these kwargs:".into(),
                &unmatched,
                json,
            )
        }
    }
}

fn kw_f64(kwargs: &Map<String, Value>, key: &str) -> Option<f64> {
    kwargs.get(key).and_then(Value::as_f64)
}

fn explain(row: &Against<'_>, p: &SearchParams) -> Explanation {
    let kw = row.kwargs;
    let sample = kw
        .get("do_sample")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let n = row.logits.len();
    let mut reasons = Vec::new();
    let mut fix = None;
    if sample && p.do_sample && p.temperature != 0.0 && p.top_k == 0 && p.top_p <= 0.0 {
        reasons.push(
            "top_k 0 with top_p 0 (its default): ONNX Runtime GenAI samples the nucleus of mass 0, one token, where transformers samples the whole vocabulary (microsoft/onnxruntime-genai #1237)"
                .to_string(),
        );
    }
    if sample && p.do_sample && p.top_k == 0 && p.top_p >= 1.0 {
        reasons.push(format!(
            "top_k 0 with top_p {}: the nucleus search compares float32 sums, so it can stop before the tail (transformers keeps every token)",
            p.top_p
        ));
    }
    if sample && p.do_sample && p.top_k > 1 && (p.top_k as usize) < n {
        let k = p.top_k as usize;
        let mut sorted: Vec<f32> = row.logits.to_vec();
        sorted.sort_by(|a, b| b.total_cmp(a));
        if sorted[k - 1] == sorted[k] {
            reasons.push(format!(
                "top_k keeps exactly {k}: the logits tie at the k-th value and std::partial_sort decides which survive (transformers keeps every tied token)"
            ));
        }
    }
    if sample && p.do_sample && p.top_k == 0 && p.top_p > 0.0 && p.top_p < 1.0 && n > 64 {
        reasons.push(
            "top_k 0: the nucleus is found with a tail bound, not the full softmax, and may keep a few more tokens than transformers' top-p"
                .to_string(),
        );
    }
    // The fix for the top_k 0 trap: every token in a top-k of the whole
    // vocabulary, softmax over all of them.
    let hf = hf_sampling::resolve_sampling(kw).ok();
    if let Some(hf) = hf.filter(|hf| hf.do_sample && hf.top_k.is_none()) {
        let mut params = search_for_generate(kw).unwrap_or_default();
        params.insert("top_k".into(), json!(n));
        if hf.top_p >= 1.0 {
            params.remove("top_p");
        }
        fix = Some(Fix {
            text: "set top_k to the vocabulary size: the top-k path sorts every token and computes the full softmax".into(),
            params,
        });
    }
    Explanation { reasons, fix }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().cloned().expect("object")
    }

    #[test]
    fn sampling_kwargs_translate_to_explicit_search_options() {
        let s = matching_search(&map(
            json!({"do_sample": true, "temperature": 0.7, "top_p": 0.9}),
        ))
        .expect("matchable");
        assert_eq!(
            Value::Object(s),
            json!({"do_sample": true, "top_k": 50, "top_p": 0.9, "temperature": 0.7,
                   "repetition_penalty": 1.0})
        );
        // greedy: the defaults already are
        let s = matching_search(&map(json!({"do_sample": false}))).expect("greedy");
        assert_eq!(Value::Object(s), json!({"repetition_penalty": 1.0}));
    }

    #[test]
    fn top_k_zero_and_options_it_lacks_block() {
        let e = matching_search(&map(
            json!({"do_sample": true, "top_k": 0, "min_p": 0.1, "eta_cutoff": 0.001}),
        ))
        .unwrap_err();
        assert_eq!(e.len(), 3, "{e:?}");
        assert!(e[0].starts_with("min_p = 0.1"), "{e:?}");
        assert!(e[1].starts_with("eta_cutoff = 0.001"), "{e:?}");
        assert!(e[2].starts_with("top_k = 0"), "{e:?}");
    }

    #[test]
    fn listed_defaults_are_the_parsers() {
        parity_core::params::defaults_agree(&OrtGenAi).unwrap();
    }
}
