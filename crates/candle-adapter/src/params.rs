//! Validated candle sampling parameters, and their JSON wire form.
//!
//! Wire form (one JSON object; unknown keys and keys the chosen variant does not
//! use are errors, so a typo can never be silently ignored):
//!
//! ```json
//! {"sampling": "TopKThenTopP", "temperature": 0.7, "k": 40, "p": 0.9,
//!  "repeat_penalty": 1.1, "repeat_last_n": 64}
//! ```
//!
//! | key | used by | meaning |
//! |---|---|---|
//! | `sampling` | all | `ArgMax`, `All`, `TopK`, `TopP`, `TopKThenTopP`, `GumbelSoftmax` (candle's `Sampling` variants) |
//! | `temperature` | all but `ArgMax` | any finite number; candle divides the logits by it (0 makes candle fail at draw time, which is reproduced, not pre-empted) |
//! | `k` | `TopK`, `TopKThenTopP` | integer ≥ 0 (0 makes candle fail at draw time: the candidate list is empty) |
//! | `p` | `TopP`, `TopKThenTopP` | any finite number (`TopP`: p ≤ 0 or p ≥ 1 disables the filter) |
//! | `repeat_penalty` | optional | `apply_repeat_penalty(logits, penalty as f32, window)` before sampling |
//! | `repeat_last_n` | optional, needs `repeat_penalty` | window = the last n input ids; absent = all input ids |
//! | `hf_top_k` | optional, `All`/`TopK`/`TopP`/`TopKThenTopP` | extension: a `sample_f` closure doing transformers' top-k (ties kept) with renormalisation, see [`crate::closure`] |

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::AdapterError;

/// candle 0.11's `candle_transformers::generation::Sampling`, as a plain enum.
#[derive(Debug, Clone, PartialEq)]
pub enum CandleSampling {
    /// `Sampling::ArgMax`: candle's CPU argmax (first index among ties).
    ArgMax,
    /// `Sampling::All`: the whole softmax of `logits / temperature`.
    All {
        /// Temperature.
        temperature: f64,
    },
    /// `Sampling::TopK`: exactly `min(k, V)` tokens chosen by `select_nth_unstable_by`.
    TopK {
        /// Number of tokens kept.
        k: usize,
        /// Temperature.
        temperature: f64,
    },
    /// `Sampling::TopP`: nucleus on the full softmax; p ≤ 0 or p ≥ 1 = no filter.
    TopP {
        /// Nucleus mass.
        p: f64,
        /// Temperature.
        temperature: f64,
    },
    /// `Sampling::TopKThenTopP`: top-k, then top-p measured on the raw
    /// (not renormalised) mass of the k tokens.
    TopKThenTopP {
        /// Number of tokens kept by the top-k stage.
        k: usize,
        /// Nucleus mass, compared with the un-renormalised top-k mass.
        p: f64,
        /// Temperature.
        temperature: f64,
    },
    /// `Sampling::GumbelSoftmax`: argmax of logits + T·Gumbel noise from candle's
    /// device RNG (ignores the seed); T ≤ 0 = argmax.
    GumbelSoftmax {
        /// Temperature (scales the noise).
        temperature: f64,
    },
}

impl CandleSampling {
    /// The variant name, as in the wire form.
    pub fn name(&self) -> &'static str {
        match self {
            CandleSampling::ArgMax => "ArgMax",
            CandleSampling::All { .. } => "All",
            CandleSampling::TopK { .. } => "TopK",
            CandleSampling::TopP { .. } => "TopP",
            CandleSampling::TopKThenTopP { .. } => "TopKThenTopP",
            CandleSampling::GumbelSoftmax { .. } => "GumbelSoftmax",
        }
    }

    /// The temperature, if the variant has one.
    pub fn temperature(&self) -> Option<f64> {
        match *self {
            CandleSampling::ArgMax => None,
            CandleSampling::All { temperature }
            | CandleSampling::TopK { temperature, .. }
            | CandleSampling::TopP { temperature, .. }
            | CandleSampling::TopKThenTopP { temperature, .. }
            | CandleSampling::GumbelSoftmax { temperature } => Some(temperature),
        }
    }

    /// Whether candle draws with `WeightedIndex` and the processor's seeded
    /// `StdRng` (everything except `ArgMax` and `GumbelSoftmax`), i.e. whether
    /// draws can be replayed.
    pub fn is_weighted(&self) -> bool {
        !matches!(
            self,
            CandleSampling::ArgMax | CandleSampling::GumbelSoftmax { .. }
        )
    }

    /// The real `candle_transformers::generation::Sampling` for this setting
    /// (public for the benchmarks, which build candle's processor directly).
    pub fn to_candle(&self) -> candle_transformers::generation::Sampling {
        use candle_transformers::generation::Sampling as S;
        match *self {
            CandleSampling::ArgMax => S::ArgMax,
            CandleSampling::All { temperature } => S::All { temperature },
            CandleSampling::TopK { k, temperature } => S::TopK { k, temperature },
            CandleSampling::TopP { p, temperature } => S::TopP { p, temperature },
            CandleSampling::TopKThenTopP { k, p, temperature } => {
                S::TopKThenTopP { k, p, temperature }
            }
            CandleSampling::GumbelSoftmax { temperature } => S::GumbelSoftmax { temperature },
        }
    }
}

impl std::fmt::Display for CandleSampling {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CandleSampling::ArgMax => write!(f, "Sampling::ArgMax"),
            CandleSampling::All { temperature } => {
                write!(f, "Sampling::All {{ temperature: {temperature:?} }}")
            }
            CandleSampling::TopK { k, temperature } => {
                write!(
                    f,
                    "Sampling::TopK {{ k: {k}, temperature: {temperature:?} }}"
                )
            }
            CandleSampling::TopP { p, temperature } => {
                write!(
                    f,
                    "Sampling::TopP {{ p: {p:?}, temperature: {temperature:?} }}"
                )
            }
            CandleSampling::TopKThenTopP { k, p, temperature } => write!(
                f,
                "Sampling::TopKThenTopP {{ k: {k}, p: {p:?}, temperature: {temperature:?} }}"
            ),
            CandleSampling::GumbelSoftmax { temperature } => {
                write!(
                    f,
                    "Sampling::GumbelSoftmax {{ temperature: {temperature:?} }}"
                )
            }
        }
    }
}

/// The setup in one line, as a report row shows it, naming the items a port
/// calls: `Sampling::All { temperature: 0.7 } + sample_f(&logits, |prs|
/// HfTopK::new(&logits, 50, 0.7).apply(prs)), repeat_penalty 1.3 on the last 64
/// ids` (the call as it compiles: [`crate::HfTopK`]'s `apply` is the closure
/// `sample_f` takes; [`CandleParams::recipe`] says it in words).
impl std::fmt::Display for CandleParams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.sampling)?;
        if let Some(k) = self.hf_top_k {
            write!(
                f,
                " + sample_f(&logits, |prs| HfTopK::new(&logits, {k}, {:?}).apply(prs))",
                self.sampling.temperature().unwrap_or(1.0)
            )?;
        }
        if let Some(rp) = &self.repeat_penalty {
            match rp.window {
                Window::Whole => write!(f, ", repeat_penalty {} on all input_ids", rp.penalty)?,
                Window::LastN(n) => {
                    write!(f, ", repeat_penalty {} on the last {n} ids", rp.penalty)?
                }
            }
        }
        Ok(())
    }
}

impl CandleParams {
    /// The setup as the calls a port makes, in words.
    pub fn recipe(&self) -> String {
        let mut s = format!("LogitsProcessor::from_sampling(seed, {})", self.sampling);
        if let Some(k) = self.hf_top_k {
            s.push_str(&format!(
                ", sampled with sample_f(&logits, |prs| candle_adapter::HfTopK::new(&logits, {k}, {:?}).apply(prs)), \
                 which keeps transformers' top {k} (ties included) and renormalises",
                self.sampling.temperature().unwrap_or(1.0)
            ));
        }
        if let Some(rp) = &self.repeat_penalty {
            s.push_str(&format!(
                "; first apply_repeat_penalty(logits, {}, {})",
                rp.penalty,
                match rp.window {
                    Window::Whole => "all input_ids".to_string(),
                    Window::LastN(n) => format!("the last {n} input_ids"),
                }
            ));
        }
        s
    }
}

/// Which input ids the repeat penalty sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Window {
    /// All of `input_ids` (transformers' behaviour).
    Whole,
    /// The last n ids (`repeat_last_n`; candle's llama example uses 128,
    /// phi and quantized 64).
    LastN(usize),
}

impl Window {
    /// The slice of `input_ids` this window covers.
    pub fn apply<'a>(&self, input_ids: &'a [i64]) -> &'a [i64] {
        match *self {
            Window::Whole => input_ids,
            Window::LastN(n) => &input_ids[input_ids.len().saturating_sub(n)..],
        }
    }
}

/// `candle_transformers::utils::apply_repeat_penalty` settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RepeatPenalty {
    /// The penalty as given; candle takes it as f32 (`penalty as f32`).
    pub penalty: f64,
    /// The ids it applies to.
    pub window: Window,
}

/// Validated candle parameters: what one `compare dist --semantics candle`
/// record carries. Deserialises from (and serialises to) the wire form
/// described in this module's docs.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(try_from = "Value", into = "Value")]
pub struct CandleParams {
    /// The `Sampling` handed to `LogitsProcessor::from_sampling`.
    pub sampling: CandleSampling,
    /// Optional repeat penalty applied to the logits first.
    pub repeat_penalty: Option<RepeatPenalty>,
    /// Optional transformers-style top-k closure passed to `sample_f`.
    pub hf_top_k: Option<usize>,
}

impl CandleParams {
    /// Params with just a sampling and nothing else.
    pub fn new(sampling: CandleSampling) -> Self {
        CandleParams {
            sampling,
            repeat_penalty: None,
            hf_top_k: None,
        }
    }

    /// Parse and validate the wire form.
    pub fn from_json(value: &Value) -> Result<Self, AdapterError> {
        let obj = value.as_object().ok_or_else(|| AdapterError::Params {
            field: "params",
            problem: "must be a JSON object".into(),
            value: value.to_string(),
        })?;
        const KEYS: [&str; 7] = [
            "sampling",
            "temperature",
            "k",
            "p",
            "repeat_penalty",
            "repeat_last_n",
            "hf_top_k",
        ];
        if let Some((key, v)) = obj.iter().find(|(k, _)| !KEYS.contains(&k.as_str())) {
            return Err(AdapterError::Params {
                field: "params",
                problem: format!("unknown key `{key}` (known: {})", KEYS.join(", ")),
                value: v.to_string(),
            });
        }
        // Not a string: "" falls through to the error below.
        let name = obj.get("sampling").and_then(Value::as_str).unwrap_or("");
        let (needs_t, needs_k, needs_p) = match name {
            "ArgMax" => (false, false, false),
            "All" | "GumbelSoftmax" => (true, false, false),
            "TopK" => (true, true, false),
            "TopP" => (true, false, true),
            "TopKThenTopP" => (true, true, true),
            _ => {
                return Err(AdapterError::Params {
                    field: "sampling",
                    problem: "must be one of \"ArgMax\", \"All\", \"TopK\", \"TopP\", \
                              \"TopKThenTopP\", \"GumbelSoftmax\""
                        .into(),
                    value: show(obj.get("sampling")),
                });
            }
        };
        let temperature = field(obj, "temperature", needs_t, name, number)?;
        let k = field(obj, "k", needs_k, name, integer)?;
        let p = field(obj, "p", needs_p, name, number)?;
        let t = temperature.unwrap_or(1.0);
        let sampling = match name {
            "ArgMax" => CandleSampling::ArgMax,
            "All" => CandleSampling::All { temperature: t },
            "GumbelSoftmax" => CandleSampling::GumbelSoftmax { temperature: t },
            "TopK" => CandleSampling::TopK {
                k: k.unwrap_or(0),
                temperature: t,
            },
            "TopP" => CandleSampling::TopP {
                p: p.unwrap_or(1.0),
                temperature: t,
            },
            _ => CandleSampling::TopKThenTopP {
                k: k.unwrap_or(0),
                p: p.unwrap_or(1.0),
                temperature: t,
            },
        };
        let penalty = optional(obj, "repeat_penalty", number)?;
        if let Some(pen) = penalty
            && !(pen as f32).is_finite()
        {
            return Err(AdapterError::Params {
                field: "repeat_penalty",
                problem: "must be finite as f32 (candle takes `penalty: f32`)".into(),
                value: show(obj.get("repeat_penalty")),
            });
        }
        let last_n = optional(obj, "repeat_last_n", integer)?;
        let repeat_penalty = match (penalty, last_n) {
            (None, None) => None,
            (None, Some(_)) => {
                return Err(AdapterError::Params {
                    field: "repeat_last_n",
                    problem: "given without `repeat_penalty`".into(),
                    value: show(obj.get("repeat_last_n")),
                });
            }
            (Some(penalty), n) => Some(RepeatPenalty {
                penalty,
                window: n.map_or(Window::Whole, Window::LastN),
            }),
        };
        let hf_top_k = optional(obj, "hf_top_k", integer)?;
        if hf_top_k.is_some() && !sampling.is_weighted() {
            return Err(AdapterError::Params {
                field: "hf_top_k",
                problem: format!("{name} never calls the sample_f closure"),
                value: show(obj.get("hf_top_k")),
            });
        }
        if hf_top_k == Some(0) {
            return Err(AdapterError::Params {
                field: "hf_top_k",
                problem: "must be at least 1 (transformers treats 0 as off: omit the key)".into(),
                value: "0".into(),
            });
        }
        Ok(CandleParams {
            sampling,
            repeat_penalty,
            hf_top_k,
        })
    }

    /// The wire form.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("sampling".into(), self.sampling.name().into());
        if let Some(temperature) = self.sampling.temperature() {
            m.insert("temperature".into(), temperature.into());
        }
        let (k, p) = match self.sampling {
            CandleSampling::TopK { k, .. } => (Some(k), None),
            CandleSampling::TopP { p, .. } => (None, Some(p)),
            CandleSampling::TopKThenTopP { k, p, .. } => (Some(k), Some(p)),
            _ => (None, None),
        };
        if let Some(k) = k {
            m.insert("k".into(), k.into());
        }
        if let Some(p) = p {
            m.insert("p".into(), p.into());
        }
        if let Some(rp) = self.repeat_penalty {
            m.insert("repeat_penalty".into(), rp.penalty.into());
            if let Window::LastN(n) = rp.window {
                m.insert("repeat_last_n".into(), n.into());
            }
        }
        if let Some(k) = self.hf_top_k {
            m.insert("hf_top_k".into(), k.into());
        }
        Value::Object(m)
    }
}

impl TryFrom<Value> for CandleParams {
    type Error = AdapterError;
    fn try_from(value: Value) -> Result<Self, Self::Error> {
        CandleParams::from_json(&value)
    }
}

impl From<CandleParams> for Value {
    fn from(p: CandleParams) -> Value {
        p.to_json()
    }
}

impl std::str::FromStr for CandleParams {
    type Err = AdapterError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let v: Value = serde_json::from_str(s).map_err(|e| AdapterError::Params {
            field: "params",
            problem: format!("not JSON: {e}"),
            value: format!("{s:?}"),
        })?;
        CandleParams::from_json(&v)
    }
}

fn show(v: Option<&Value>) -> String {
    v.map_or_else(|| "absent".to_string(), Value::to_string)
}

fn number(v: &Value) -> Result<f64, String> {
    match v.as_f64() {
        Some(x) if x.is_finite() => Ok(x),
        _ => Err("must be a finite number".into()),
    }
}

fn integer(v: &Value) -> Result<usize, String> {
    v.as_u64()
        .and_then(|x| usize::try_from(x).ok())
        .ok_or_else(|| "must be a non-negative integer".into())
}

fn optional<T>(
    obj: &Map<String, Value>,
    key: &'static str,
    parse: fn(&Value) -> Result<T, String>,
) -> Result<Option<T>, AdapterError> {
    match obj.get(key) {
        None => Ok(None),
        Some(v) => parse(v).map(Some).map_err(|problem| AdapterError::Params {
            field: key,
            problem,
            value: v.to_string(),
        }),
    }
}

fn field<T>(
    obj: &Map<String, Value>,
    key: &'static str,
    needed: bool,
    variant: &str,
    parse: fn(&Value) -> Result<T, String>,
) -> Result<Option<T>, AdapterError> {
    match (obj.get(key), needed) {
        (None, true) => Err(AdapterError::Params {
            field: key,
            problem: format!("required by {variant}"),
            value: "absent".into(),
        }),
        (Some(v), false) => Err(AdapterError::Params {
            field: key,
            problem: format!("not used by {variant}"),
            value: v.to_string(),
        }),
        _ => optional(obj, key, parse),
    }
}
