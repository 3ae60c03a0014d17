//! Each semantics' distribution on one fixture and setting.

use candle_adapter::{CandleParams, CandleRun, CandleSampling, RepeatPenalty, Window};
use hf_sampling::GenerationParams;
use parity_core::fixture::{Fixture, Setting};
use parity_core::metrics::softmax_f64;
use serde_json::{Map, Value};

use super::Side;

/// One side's distribution on one (fixture, setting).
pub(super) struct Dist {
    pub(super) probs: Vec<f64>,
    /// The logits after this side's repetition penalty, when it has one.
    pub(super) penalised: Option<Vec<f32>>,
    pub(super) candle: Option<CandleSide>,
}

pub(super) struct CandleSide {
    pub(super) setup: String,
    pub(super) run: CandleRun,
}
/// A side's distribution; `None` when the setting does not map onto it.
pub(super) fn side_dist(
    side: Side,
    fx: &Fixture,
    setting: &Setting,
    params: &GenerationParams,
    window: Option<usize>,
) -> Option<Result<Dist, String>> {
    let plain = |probs| {
        Ok(Dist {
            probs,
            penalised: None,
            candle: None,
        })
    };
    match side {
        Side::Hf => {
            let probs = if params.do_sample {
                softmax_f64(&setting.scores)
            } else {
                one_hot(fx.vocab_size(), argmax_first(&setting.scores))
            };
            let penalised = (params.repetition_penalty != 1.0).then(|| {
                // Greedy scores are exactly transformers' penalised logits.
                // Sampling scores also went through temperature and
                // truncation, so the penalty is recomputed with hf-sampling's,
                // which is bit-identical to transformers' on every greedy
                // fixture (crates/hf-sampling/tests/it/fixtures.rs).
                if params.do_sample {
                    let mut l = fx.logits.clone();
                    hf_sampling::ops::repetition_penalty(
                        &mut l,
                        &fx.input_ids,
                        params.repetition_penalty,
                    );
                    l
                } else {
                    setting.scores.clone()
                }
            });
            Some(Ok(Dist {
                probs,
                penalised,
                candle: None,
            }))
        }
        Side::HfRust => Some(
            hf_sampling::process(&fx.logits, &fx.input_ids, params)
                .map_err(|e| e.to_string())
                .and_then(|o| plain(o.probs.iter().map(|&p| f64::from(p)).collect())),
        ),
        Side::Spec => spec_dist(fx, params).map(|r| r.and_then(plain)),
        Side::Candle => {
            let mut cp = naive_candle(&setting.kwargs);
            if let (Some(n), Some(rp)) = (window, cp.repeat_penalty.as_mut()) {
                rp.window = Window::LastN(n);
            }
            Some(candle_dist(fx, cp))
        }
        Side::CandleClosure => {
            let t = match candle_adapter::translate(params) {
                Ok(t) => t,
                Err(e) => return Some(Err(e.to_string())),
            };
            Some(candle_dist(fx, t.exact.unwrap_or(t.candle)))
        }
    }
}

fn candle_dist(fx: &Fixture, cp: CandleParams) -> Result<Dist, String> {
    let setup = candle_setup(&cp);
    let run = CandleRun::new(&fx.logits, &fx.input_ids, &cp).map_err(|e| e.to_string())?;
    let probs = run.mirrored().probs.clone();
    let penalised = cp
        .repeat_penalty
        .is_some()
        .then(|| run.mirrored().penalised_logits.clone());
    Ok(Dist {
        probs,
        penalised,
        candle: Some(CandleSide { setup, run }),
    })
}

/// How a candle configuration reads in a report.
pub(super) fn candle_setup(cp: &CandleParams) -> String {
    let mut s = cp.sampling.to_string();
    if let Some(k) = cp.hf_top_k {
        s.push_str(&format!(" + sample_f(transformers top-k {k})"));
    }
    if let Some(rp) = &cp.repeat_penalty {
        match rp.window {
            Window::Whole => {
                s.push_str(&format!(", repeat_penalty {} on all input_ids", rp.penalty))
            }
            Window::LastN(n) => s.push_str(&format!(
                ", repeat_penalty {} on the last {n} ids",
                rp.penalty
            )),
        }
    }
    s
}

/// The candle configuration a porter writes by reading the kwargs literally:
/// `do_sample=False` → ArgMax; otherwise the temperature given (1.0 if none),
/// top_k and top_p as given (TopK, TopP or TopKThenTopP; none → All), and the
/// repetition penalty over the whole context. transformers' hidden defaults
/// (top_k=50) are exactly what this misses.
pub fn naive_candle(kwargs: &Map<String, Value>) -> CandleParams {
    let num = |k: &str| kwargs.get(k).and_then(Value::as_f64);
    let temperature = num("temperature").unwrap_or(1.0);
    let top_k = kwargs
        .get("top_k")
        .and_then(Value::as_u64)
        .filter(|&k| k > 0)
        .map(|k| k as usize);
    let top_p = num("top_p").filter(|&p| p < 1.0);
    let sampling = if kwargs.get("do_sample").and_then(Value::as_bool) != Some(true) {
        CandleSampling::ArgMax
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

/// The spec's parameters for a transformers setting, when it has them: the
/// spec knows temperature (0 = greedy), top-k, top-p and the penalty only.
fn spec_dist(fx: &Fixture, p: &GenerationParams) -> Option<Result<Vec<f64>, String>> {
    let only_spec_processors = p.min_p.is_none()
        && p.typical_p >= 1.0
        && !(0.0 < p.epsilon_cutoff && p.epsilon_cutoff < 1.0)
        && !(0.0 < p.eta_cutoff && p.eta_cutoff < 1.0);
    if !only_spec_processors || (p.do_sample && p.top_p <= 0.0) {
        return None;
    }
    let params = serde_json::json!({
        "temperature": if p.do_sample { p.temperature } else { 0.0 },
        "top_k": p.top_k.filter(|_| p.do_sample).unwrap_or(0),
        "top_p": if p.do_sample { p.top_p.min(1.0) } else { 1.0 },
        "repetition_penalty": p.repetition_penalty,
        "u": 0.5,
    });
    let result = spec_sampler::Params::from_json(&params)
        .and_then(|params| {
            spec_sampler::Input::from_parts(
                fx.logits.iter().map(|&l| f64::from(l)).collect(),
                fx.input_ids.clone(),
                params,
            )
        })
        .map(|input| spec_sampler::distribution(&input).into_probs())
        .map_err(|e| e.to_string());
    Some(result)
}

fn one_hot(v: usize, i: usize) -> Vec<f64> {
    let mut p = vec![0.0; v];
    p[i] = 1.0;
    p
}

/// `torch.argmax`: the first index of the maximum.
fn argmax_first(xs: &[f32]) -> usize {
    let mut best = 0;
    for (i, &x) in xs.iter().enumerate() {
        if x > xs[best] {
            best = i;
        }
    }
    best
}
