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

use parity_core::params::{Null, from_map, to_map};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use crate::error::AdapterError;

parity_core::params! {
    /// The wire form's keys, each once, with its type and what `compare
    /// semantics` says of it. The first four are [`CandleSampling`]'s
    /// ([`SAMPLING_FIELDS`]: which of them a variant takes is its serde form);
    /// the rest are the setup around `LogitsProcessor`. `null` is refused.
    #[derive(Debug, Deserialize)]
    #[serde(default, deny_unknown_fields)]
    pub(crate) struct Wire {
        /// The variant's name.
        #[serde(deserialize_with = "present")]
        pub sampling: Option<String> ["required"]
            => "ArgMax, All, TopK, TopP, TopKThenTopP or GumbelSoftmax (candle's Sampling)",
        /// The temperature.
        #[serde(deserialize_with = "present")]
        pub temperature: Option<f64> ["required by all but ArgMax"]
            => "logits * (1/T) in f32 (all variants but ArgMax)",
        /// The top-k size.
        #[serde(deserialize_with = "present")]
        pub k: Option<usize> ["required by TopK, TopKThenTopP"]
            => "exactly k tokens (select_nth_unstable_by decides ties)",
        /// The nucleus mass.
        #[serde(deserialize_with = "present")]
        pub p: Option<f64> ["required by TopP, TopKThenTopP"]
            => "nucleus; TopKThenTopP measures it on the raw top-k mass",
        /// [`RepeatPenalty::penalty`].
        #[serde(deserialize_with = "present")]
        pub repeat_penalty: Option<f64> => "apply_repeat_penalty before sampling",
        /// [`Window::LastN`]; absent: [`Window::Whole`].
        #[serde(deserialize_with = "present")]
        pub repeat_last_n: Option<usize> ["null (all input_ids)"]
            => "penalise only the last n input ids",
        /// [`CandleParams::hf_top_k`].
        #[serde(deserialize_with = "present")]
        pub hf_top_k: Option<usize>
            => "a sample_f closure doing transformers' top-k (ties kept, renormalised)",
    }
}

/// The keys of [`CandleSampling`]'s variants: the first four of [`Wire`].
pub(crate) const SAMPLING_FIELDS: &[&str] = Wire::FIELDS.split_at(4).0;

/// candle 0.11's `candle_transformers::generation::Sampling`, as its wire
/// form: an internally tagged serde enum (`"sampling"` names the variant,
/// which takes exactly its own fields), so a missing field, one the variant
/// does not use and an unknown variant are serde's errors.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(tag = "sampling", deny_unknown_fields)]
pub enum CandleSampling {
    /// `Sampling::ArgMax`: candle's CPU argmax (first index among ties). A
    /// struct variant with no fields, so that serde refuses any field with it.
    ArgMax {},
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
            CandleSampling::ArgMax {} => "ArgMax",
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
            CandleSampling::ArgMax {} => None,
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
            CandleSampling::ArgMax {} | CandleSampling::GumbelSoftmax { .. }
        )
    }

    /// The real `candle_transformers::generation::Sampling` for this setting
    /// (public for the benchmarks, which build candle's processor directly).
    pub fn to_candle(&self) -> candle_transformers::generation::Sampling {
        use candle_transformers::generation::Sampling as S;
        match *self {
            CandleSampling::ArgMax {} => S::ArgMax,
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
            CandleSampling::ArgMax {} => write!(f, "Sampling::ArgMax"),
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

    /// Parse and validate the wire form: each key's type (the crate's `Wire`
    /// declaration, read by `parity_core::params::from_map`: an unknown key, `null` or a value of another type is
    /// refused naming the key and quoting the value), then the variant's
    /// keys ([`CandleSampling`]'s serde form), then the checks across keys.
    pub fn from_json(value: &Value) -> Result<Self, AdapterError> {
        let obj = value.as_object().ok_or_else(|| AdapterError::Params {
            field: "params",
            problem: "must be a JSON object".into(),
            value: value.to_string(),
        })?;
        let wire: Wire = from_map(obj, "candle", Wire::FIELDS, Null::Value)
            .map_err(|e| AdapterError::Wire(e.to_string()))?;
        let variant: Map<String, Value> = obj
            .iter()
            .filter(|(k, _)| SAMPLING_FIELDS.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let sampling = CandleSampling::deserialize(Value::Object(variant)).map_err(|e| {
            AdapterError::Wire(match obj.get("sampling") {
                Some(name) => format!("`sampling` = {name}: {e}"),
                None => e.to_string(),
            })
        })?;
        let name = sampling.name();
        if let Some(pen) = wire.repeat_penalty
            && !(pen as f32).is_finite()
        {
            return Err(AdapterError::Params {
                field: "repeat_penalty",
                problem: "must be finite as f32 (candle takes `penalty: f32`)".into(),
                value: show(obj.get("repeat_penalty")),
            });
        }
        let repeat_penalty = match (wire.repeat_penalty, wire.repeat_last_n) {
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
        let hf_top_k = wire.hf_top_k;
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
        let mut m = to_map(&self.sampling);
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

/// A key given with a value (`null` refused: leave the key out instead).
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`SAMPLING_FIELDS`] are exactly the keys [`CandleSampling`]'s
    /// variants serialize (the tag and their fields); every listed key is
    /// read: a setup that sets all of them round-trips.
    #[test]
    fn the_first_four_wire_keys_are_the_sampling_enums() {
        let all = CandleSampling::TopKThenTopP {
            k: 3,
            p: 0.9,
            temperature: 0.7,
        };
        let keys: Vec<String> = to_map(&all).keys().cloned().collect();
        let mut fields: Vec<&str> = SAMPLING_FIELDS.to_vec();
        fields.sort_unstable();
        assert_eq!(keys, fields);
        let p = CandleParams {
            sampling: all,
            repeat_penalty: Some(RepeatPenalty {
                penalty: 1.1,
                window: Window::LastN(4),
            }),
            hf_top_k: Some(2),
        };
        let json = p.to_json();
        let mut listed: Vec<&str> = Wire::FIELDS.to_vec();
        listed.sort_unstable();
        let written: Vec<&str> = json
            .as_object()
            .map_or(Vec::new(), |m| m.keys().map(String::as_str).collect());
        assert_eq!(written, listed);
        assert_eq!(CandleParams::from_json(&json), Ok(p));
    }
}
