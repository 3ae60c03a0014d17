//! transformers generation parameters → candle.
//!
//! [`translate`] takes transformers' resolved parameters
//! (`hf_sampling::GenerationParams`, i.e. kwargs > `generation_config.json` >
//! transformers' defaults) and gives
//! - `candle`: the closest plain candle configuration (a `Sampling`, plus the
//!   repeat-penalty context), what someone porting a `generate` call would write;
//! - `exact`: a configuration that reproduces transformers' distribution (up
//!   to f32 rounding at a top-p boundary), using the `sample_f` closure
//!   ([`crate::closure::HfTopK`]) where plain candle cannot; `None` when candle
//!   has no way to do it (min-p, typical, epsilon, eta);
//! - a warning for every case where candle cannot, or behaves differently.

use serde::Serialize;
use serde::ser::SerializeStruct;

use crate::error::AdapterError;
use crate::params::{CandleParams, CandleSampling, RepeatPenalty, Window};

/// A difference between transformers and candle worth telling the user about.
#[derive(Debug, Clone, PartialEq)]
pub enum TranslateWarning {
    /// `do_sample=False` → `ArgMax`, never a temperature of 0.
    GreedyIsArgMax,
    /// Temperature below 1e-7: `LogitsProcessor::new` would silently switch to ArgMax.
    TinyTemperature {
        /// The temperature.
        temperature: f64,
    },
    /// transformers keeps every token tied with the k-th value; candle's
    /// `TopK` keeps exactly k.
    TopKTies {
        /// k.
        k: usize,
    },
    /// top-k off in transformers (`top_k=0`/`None`); candle has no "off"
    /// value for `TopK` and `k = 0` is an error there.
    TopKOff,
    /// `TopKThenTopP` compares p with the raw (not renormalised) top-k mass.
    TopPNotRenormalised {
        /// k.
        k: usize,
        /// p.
        p: f64,
    },
    /// `top_p=0` keeps one token in transformers, but disables top-p in candle.
    TopPZero,
    /// Top-p cut rounding: transformers sums ascending in `1 − p` space,
    /// candle descending against `p as f32`; at an exact f32 boundary they can
    /// differ by one token.
    TopPBoundary {
        /// p.
        p: f64,
    },
    /// A transformers processor with no candle counterpart.
    Unsupported {
        /// The transformers parameter.
        name: &'static str,
        /// Its value.
        value: f64,
    },
    /// Repetition penalty: transformers penalises every input id; candle's
    /// examples pass only the last 64/128 tokens.
    RepeatPenaltyWindow {
        /// The penalty.
        penalty: f64,
    },
    /// A transformers processor beyond the sampling kwargs (bad words,
    /// n-gram bans, min length, ...): candle's `LogitsProcessor` has none of
    /// them; whether and how a port reproduces it.
    Processor {
        /// The generate kwarg.
        name: &'static str,
        /// How candle can reproduce it, or why it need not.
        how: &'static str,
    },
}

impl TranslateWarning {
    /// A stable machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            TranslateWarning::GreedyIsArgMax => "greedy_is_argmax",
            TranslateWarning::TinyTemperature { .. } => "tiny_temperature",
            TranslateWarning::TopKTies { .. } => "top_k_ties",
            TranslateWarning::TopKOff => "top_k_off",
            TranslateWarning::TopPNotRenormalised { .. } => "top_p_not_renormalised",
            TranslateWarning::TopPZero => "top_p_zero",
            TranslateWarning::TopPBoundary { .. } => "top_p_boundary",
            TranslateWarning::Unsupported { .. } => "unsupported",
            TranslateWarning::RepeatPenaltyWindow { .. } => "repeat_penalty_window",
            TranslateWarning::Processor { .. } => "processor",
        }
    }
}

impl std::fmt::Display for TranslateWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TranslateWarning::GreedyIsArgMax => write!(
                f,
                "do_sample=False maps to Sampling::ArgMax, never to temperature 0: \
                 LogitsProcessor::from_sampling with temperature 0 divides by zero and \
                 WeightedIndex then fails (\"A weight is negative, too large or not a valid \
                 number\"); only LogitsProcessor::new turns a temperature < 1e-7 into ArgMax"
            ),
            TranslateWarning::TinyTemperature { temperature } => write!(
                f,
                "temperature {temperature:?} < 1e-7: LogitsProcessor::new would silently use \
                 ArgMax; build with LogitsProcessor::from_sampling to sample"
            ),
            TranslateWarning::TopKTies { k } => write!(
                f,
                "top_k={k}: transformers keeps every token tied with the {k}-th value, \
                 candle's TopK keeps exactly {k} (select_nth_unstable_by picks which tied \
                 tokens survive); the exact recipe uses Sampling::All with a sample_f \
                 closure that keeps the ties"
            ),
            TranslateWarning::TopKOff => write!(
                f,
                "top-k is off (top_k=0 or None in transformers); candle has no 'off' value: \
                 TopK {{ k: 0 }} is an error (empty candidate list), so All/TopP is used"
            ),
            TranslateWarning::TopPNotRenormalised { k, p } => write!(
                f,
                "top_k={k} with top_p={p}: transformers measures p inside the renormalised \
                 top-k mass, candle's TopKThenTopP on the raw mass (when the top-{k} mass \
                 is <= {p}, p does nothing), so candle keeps more tokens; the exact recipe \
                 renormalises top-k in a sample_f closure and uses Sampling::TopP"
            ),
            TranslateWarning::TopPZero => write!(
                f,
                "top_p=0 keeps one token in transformers (min_tokens_to_keep=1) but disables \
                 top-p in candle (p <= 0 or p >= 1 means no filter); mapped to ArgMax \
                 (tied maxima may resolve differently)"
            ),
            TranslateWarning::TopPBoundary { p } => write!(
                f,
                "top_p={p}: same rule (keep the crossing token) but different f32 rounding \
                 (transformers: ascending cumsum <= 1-p; candle: descending cumsum >= p as \
                 f32); on an exact boundary the kept sets can differ by one token, and when \
                 the cut falls inside a group of tied probabilities (distinct logits can \
                 round to equal probabilities) transformers keeps the tied \
                 tokens torch's sort places last (by logit, then higher ids), candle the ones its stable \
                 descending sort places first (lower ids)"
            ),
            TranslateWarning::Unsupported { name, value } => write!(
                f,
                "{name}={value:?} has no candle counterpart; candle's distribution ignores it"
            ),
            TranslateWarning::RepeatPenaltyWindow { penalty } => write!(
                f,
                "repetition_penalty={penalty:?}: transformers penalises every input id \
                 (prompt included, each once); candle's examples pass only the last 64/128 \
                 tokens (quantized: generated tokens only) to apply_repeat_penalty; pass the \
                 whole input_ids to match"
            ),
            TranslateWarning::Processor { name, how } => write!(
                f,
                "{name}: candle's LogitsProcessor has no such processor; {how}"
            ),
        }
    }
}

impl Serialize for TranslateWarning {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("TranslateWarning", 2)?;
        st.serialize_field("code", self.code())?;
        st.serialize_field("message", &self.to_string())?;
        st.end()
    }
}

/// transformers' parameters as candle sees them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Translation {
    /// The closest plain candle configuration (no closure).
    pub candle: CandleParams,
    /// A configuration reproducing transformers' distribution (with the
    /// `hf_top_k` closure where needed); `None` when candle cannot.
    pub exact: Option<CandleParams>,
    /// Whether `candle` alone already equals `exact` (no closure needed).
    pub plain_is_exact: bool,
    /// Every difference worth knowing.
    pub warnings: Vec<TranslateWarning>,
}

/// The candle configuration a porter writes by reading generate kwargs
/// literally: `do_sample=False` → ArgMax; otherwise the temperature given
/// (1.0 if none), top_k and top_p as given (TopK, TopP or TopKThenTopP; none →
/// All), and the repetition penalty over the whole context. transformers'
/// hidden defaults (top_k=50) are exactly what this misses.
pub fn literal(kwargs: &serde_json::Map<String, serde_json::Value>) -> CandleParams {
    use serde_json::Value;
    let num = |k: &str| kwargs.get(k).and_then(Value::as_f64);
    let temperature = num("temperature").unwrap_or(1.0);
    let top_k = kwargs
        .get("top_k")
        .and_then(Value::as_u64)
        .filter(|&k| k > 0)
        .map(|k| k as usize);
    let top_p = num("top_p").filter(|&p| p < 1.0);
    let sampling = if kwargs.get("do_sample").and_then(Value::as_bool) != Some(true) {
        CandleSampling::ArgMax {}
    } else {
        match (top_k, top_p) {
            (Some(k), Some(p)) => CandleSampling::TopKThenTopP { k, p, temperature },
            (Some(k), None) => CandleSampling::TopK { k, temperature },
            (None, Some(p)) => CandleSampling::TopP { p, temperature },
            (None, None) => CandleSampling::All { temperature },
        }
    };
    let repeat_penalty = num("repetition_penalty")
        .filter(|&p| p != 1.0)
        .map(|penalty| RepeatPenalty {
            penalty,
            window: Window::Whole,
        });
    CandleParams {
        sampling,
        repeat_penalty,
        hf_top_k: None,
    }
}

/// Resolve transformers generate kwargs (and an optional model
/// `generation_config.json`) with `hf_sampling::resolve`, then [`translate`].
pub fn translate_kwargs(
    kwargs: &serde_json::Map<String, serde_json::Value>,
    config: Option<&hf_sampling::GenerationConfig>,
) -> Result<Translation, AdapterError> {
    let params = hf_sampling::resolve(kwargs, config).map_err(|e| AdapterError::Transformers {
        message: e.to_string(),
    })?;
    translate(&params)
}

/// transformers' resolved parameters → candle. Errors where transformers
/// itself raises (e.g. temperature 0 while sampling).
pub fn translate(params: &hf_sampling::GenerationParams) -> Result<Translation, AdapterError> {
    params
        .processor_names()
        .map_err(|e| AdapterError::Transformers {
            message: e.to_string(),
        })?;
    let mut warnings = processor_warnings(params);
    let repeat_penalty = (params.repetition_penalty != 1.0).then(|| {
        warnings.push(TranslateWarning::RepeatPenaltyWindow {
            penalty: params.repetition_penalty,
        });
        RepeatPenalty {
            penalty: params.repetition_penalty,
            window: Window::Whole,
        }
    });
    let with = |sampling: CandleSampling, hf_top_k: Option<usize>| CandleParams {
        sampling,
        repeat_penalty,
        hf_top_k,
    };
    if !params.do_sample {
        warnings.push(TranslateWarning::GreedyIsArgMax);
        let p = with(CandleSampling::ArgMax {}, None);
        return Ok(Translation {
            candle: p.clone(),
            exact: Some(p),
            plain_is_exact: true,
            warnings,
        });
    }
    let t = params.temperature;
    if t < 1e-7 {
        warnings.push(TranslateWarning::TinyTemperature { temperature: t });
    }
    let top_k = params.top_k.filter(|&k| k != 0);
    if top_k.is_none() {
        warnings.push(TranslateWarning::TopKOff);
    }
    let top_p = (params.top_p < 1.0).then_some(params.top_p);
    let (candle, exact) = match (top_k, top_p) {
        (_, Some(p)) if p <= 0.0 => {
            warnings.push(TranslateWarning::TopPZero);
            let a = with(CandleSampling::ArgMax {}, None);
            (a.clone(), a)
        }
        (None, None) => {
            let a = with(CandleSampling::All { temperature: t }, None);
            (a.clone(), a)
        }
        (Some(k), None) => {
            warnings.push(TranslateWarning::TopKTies { k });
            (
                with(CandleSampling::TopK { k, temperature: t }, None),
                with(CandleSampling::All { temperature: t }, Some(k)),
            )
        }
        (None, Some(p)) => {
            warnings.push(TranslateWarning::TopPBoundary { p });
            let a = with(CandleSampling::TopP { p, temperature: t }, None);
            (a.clone(), a)
        }
        (Some(k), Some(p)) => {
            warnings.push(TranslateWarning::TopKTies { k });
            warnings.push(TranslateWarning::TopPNotRenormalised { k, p });
            warnings.push(TranslateWarning::TopPBoundary { p });
            (
                with(
                    CandleSampling::TopKThenTopP {
                        k,
                        p,
                        temperature: t,
                    },
                    None,
                ),
                with(CandleSampling::TopP { p, temperature: t }, Some(k)),
            )
        }
    };
    // The warpers candle lacks, when transformers runs them (hf_sampling::Acting).
    let acting = params.acting();
    let mut supported = true;
    for name in ["min_p", "typical_p", "epsilon_cutoff", "eta_cutoff"] {
        if let Some(value) = acting.get(name).and_then(|a| a.value.as_f64()) {
            warnings.push(TranslateWarning::Unsupported { name, value });
            supported = false;
        }
    }
    let plain_is_exact = supported && candle == exact;
    Ok(Translation {
        candle,
        exact: supported.then_some(exact),
        plain_is_exact,
        warnings,
    })
}

/// A warning per transformers processor beyond the sampling kwargs that is
/// active: candle has none of them.
fn processor_warnings(params: &hf_sampling::GenerationParams) -> Vec<TranslateWarning> {
    // The processors beyond the sampling kwargs: none exists in candle. All
    // but top_h act on the logits before transformers' temperature, so a
    // port reproduces them by editing the logits tensor before
    // `LogitsProcessor::sample` (candle divides by its temperature after
    // that, as transformers does); the exact recipe then needs that step.
    // Which of them run: transformers' rule, read once (hf_sampling::Acting).
    let acting = params.acting();
    let mut warnings = Vec::new();
    const MASK: &str = "reproducible exactly: set those logits to -inf in the tensor before \
                        LogitsProcessor::sample (candle's softmax gives them probability 0, \
                        its temperature keeps -inf)";
    const FORCE: &str = "reproducible exactly: at that step every other logit is -inf, so emit \
                         the forced token instead of sampling";
    let mut extra: Vec<(&'static str, &'static str)> = Vec::new();
    if acting.acts("sequence_bias") {
        extra.push((
            "sequence_bias",
            "reproducible: add the biases to the logits (multi-token ones where their prefix ends \
             the context) before LogitsProcessor::sample, which applies the temperature after \
             them as transformers does",
        ));
    }
    if acting.acts("no_repeat_ngram_size") {
        extra.push(("no_repeat_ngram_size", MASK));
    }
    if acting.acts("bad_words_ids") {
        extra.push(("bad_words_ids", MASK));
    }
    let min_length = acting.iter().any(|a| {
        matches!(
            a.name,
            "MinLengthLogitsProcessor" | "MinNewTokensLengthLogitsProcessor"
        )
    });
    if min_length {
        extra.push((
            "min_length/min_new_tokens",
            "reproducible exactly: mask the eos ids (-inf) before LogitsProcessor::sample until \
             the length is reached; candle knows no eos, so the port must count the tokens",
        ));
    }
    if acting.acts("forced_bos_token_id") {
        extra.push(("forced_bos_token_id", FORCE));
    }
    if acting.acts("forced_eos_token_id") {
        extra.push(("forced_eos_token_id", FORCE));
    }
    if acting.acts("suppress_tokens") {
        extra.push(("suppress_tokens", MASK));
    }
    if acting.acts("begin_suppress_tokens") {
        extra.push(("begin_suppress_tokens", MASK));
    }
    if acting.acts("exponential_decay_length_penalty") {
        extra.push((
            "exponential_decay_length_penalty",
            "reproducible: add |logit| * (factor^k - 1) to the eos logits before \
             LogitsProcessor::sample once k tokens past the start",
        ));
    }
    if acting.acts("remove_invalid_values") {
        extra.push((
            "remove_invalid_values",
            "reproducible: replace NaN logits by 0 and +-inf by +-f32::MAX before \
             LogitsProcessor::sample",
        ));
    }
    if acting.acts("top_h") {
        extra.push((
            "top_h",
            "reproducible up to f32 rounding with a sample_f closure: it sees the probabilities \
             after candle's temperature, as transformers' top-h does, and can zero those outside \
             the entropy cut over the 100 most likely tokens",
        ));
    }
    for &(name, how) in &extra {
        warnings.push(TranslateWarning::Processor { name, how });
    }
    if acting.acts("renormalize_logits") {
        warnings.push(TranslateWarning::Processor {
            name: "renormalize_logits",
            how: "nothing to do: a log-softmax changes the scores transformers reports, not the \
                  distribution it samples from (softmax is shift-invariant)",
        });
    }
    warnings
}
