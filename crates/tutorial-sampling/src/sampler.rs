//! The tutorial's `sample_top_k_top_p` as a semantics (`tutorial`).
//!
//! # The rules (TorchCode ch. 6, section 6.1)
//!
//! On one step's logits, in this order:
//!
//! 1. **Temperature**: every logit is divided by `temperature`. Done as torch
//!    divides a float32 tensor by a Python float: an f32 division by
//!    `(float)temperature`, so a value that overflows becomes `inf`.
//! 2. **Top-k**, only when `top_k > 0`: the threshold is the k-th largest
//!    scaled logit (`topk(k)` values, last one), and logits *strictly below*
//!    it become `-inf`. Every token tied with the k-th is kept, so more than
//!    k can survive (the same rule as transformers' `TopKLogitsWarper`).
//!    `top_k ≤ 0` filters nothing; `top_k > V` is an error (torch's `topk`
//!    raises "selected index k out of range").
//! 3. **Top-p**, only when `top_p < 1`: the surviving logits are sorted in
//!    descending order and turned into probabilities by a softmax over all of
//!    them (top-k's `-inf` give 0, so p is measured inside the renormalised
//!    top-k mass). A token is removed when the mass *before* it in that order
//!    (cumulative sum minus its own probability) is strictly greater than
//!    `top_p`. The first token is never removed for `top_p ≥ 0`; `top_p < 0`
//!    removes every token, which is an error (see below).
//! 4. **Softmax** of what is left: the distribution `torch.multinomial` draws
//!    from.
//!
//! Defaults are the tutorial's signature: `temperature = 1.0`, `top_k = 0`,
//! `top_p = 1.0` (nothing filtered).
//!
//! # Where it parts from transformers 5.23
//!
//! - **Top-p boundary.** transformers' `TopPLogitsWarper`
//!   (`transformers/generation/logits_process.py`) sorts ascending and removes
//!   tokens whose f32 cumulative mass is `≤ 1 − top_p`: in descending terms,
//!   it removes a token once the mass before it *reaches* p. The tutorial
//!   removes it only once that mass *exceeds* p. When the mass before a token
//!   equals p (within float rounding) transformers drops it and the tutorial
//!   keeps it (`fixtures/edge/top_p_boundary_*`).
//! - **Ties at the top-p cut.** Which of several tied tokens straddling the
//!   cut survive depends on the sort. The tutorial's code sorts with
//!   `torch.sort(descending=True)`; this crate orders tied logits by id
//!   (lower first), which is what torch's CPU sort gives for V ≤ 16 (checked
//!   with torch 2.15.0: `torch.ones(8).sort(descending=True)` returns ids
//!   0..7 in order) but not above 16, where torch's unstable sort scrambles
//!   ties. transformers keeps the tied tokens its ascending sort leaves last.
//! - **Defaults.** `generate(do_sample=True)` adds `top_k=50` when the kwargs
//!   do not set it; the tutorial's default `top_k = 0` filters nothing.
//! - The top-k tie rule is the same as transformers' (strictly below the
//!   k-th is removed).
//!
//! # Precision
//!
//! Step 1 is f32, as in torch. The masses of steps 3 and 4 are computed in
//! f64 from the f32 scaled logits, so the result is the tutorial's rule
//! evaluated exactly (to f64 rounding), not torch's f32 `softmax`/`cumsum`;
//! at a top-p boundary that sits within an f32 ulp of p, the tutorial's own
//! torch code could land on either side.
//!
//! # Errors (where the tutorial's torch code raises)
//!
//! - `temperature` whose f32 value is 0: the division gives `inf`/NaN and
//!   `torch.multinomial` raises on the NaN probabilities. A negative
//!   temperature is accepted: the code divides by it literally, which
//!   reverses the order of the logits.
//! - A scaled logit that is `+inf` or NaN (overflow, or `-inf` divided by a
//!   negative temperature): softmax gives NaN.
//! - `top_k` larger than the vocabulary.
//! - Nothing left to draw (every logit `-inf`, or `top_p < 0`).

use parity_core::params::{Null, from_map};
use parity_core::{
    Against, Comparison, Context, Described, Distribution, Error, Explanation, Fix, Info, Logits,
    Precision, Semantics,
};
use serde::Deserialize;
use serde_json::{Map, Value};

/// The tutorial's sampler: `temperature`, then top-k with ties kept, then
/// top-p on the mass before each token, then softmax.
#[derive(Debug, Clone, Copy, Default)]
pub struct Tutorial;

parity_core::params! {
    /// Validated parameters of [`Tutorial`] (`sample_top_k_top_p`'s
    /// keyword arguments; `null` is refused, as the function has no use
    /// for `None`).
    #[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
    #[serde(default, deny_unknown_fields)]
    pub struct Params {
        /// The temperature the logits are divided by (in f32).
        temperature: f64 = 1.0 => "divides the logits (f32); 0 is an error, negative reverses them",
        /// Top-k (`<= 0`: off); torch's `topk` takes no float.
        #[serde(deserialize_with = "top_k")]
        top_k: i64 = 0 => "keep logits not below the k-th largest (ties kept); <= 0 is off",
        /// Top-p (`>= 1`: off).
        top_p: f64 = 1.0 => "remove a token when the mass before it exceeds p; >= 1 is off",
    }
}

/// `top_k` as torch's `topk` takes it: an integer.
fn top_k<'de, D: serde::Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    parity_core::py::PyNum::of(&serde_json::Number::deserialize(d)?)
        .int64()
        .ok_or_else(|| serde::de::Error::custom("must be an integer (torch's topk takes no float)"))
}

impl Params {
    /// Checks the values: `temperature` must be finite and not 0 in f32,
    /// `top_p` finite. Any integer `top_k` is accepted here (`> V` fails at
    /// the draw, as in torch).
    pub fn new(temperature: f64, top_k: i64, top_p: f64) -> Result<Self, Error> {
        if !temperature.is_finite() {
            return Err(Error::new(format_args!(
                "`temperature` = {temperature} is not a finite number"
            )));
        }
        if temperature as f32 == 0.0 {
            return Err(Error::new(format_args!(
                "`temperature` = {temperature} is 0 in float32: the tutorial divides the logits by it, \
                 gets inf/NaN, and torch.multinomial raises"
            )));
        }
        if !top_p.is_finite() {
            return Err(Error::new(format_args!(
                "`top_p` = {top_p} is not a finite number"
            )));
        }
        Ok(Self {
            temperature,
            top_k,
            top_p,
        })
    }

    /// The temperature.
    pub fn temperature(&self) -> f64 {
        self.temperature
    }

    /// Top-k (`≤ 0`: off).
    pub fn top_k(&self) -> i64 {
        self.top_k
    }

    /// Top-p (`≥ 1`: off).
    pub fn top_p(&self) -> f64 {
        self.top_p
    }
}

static INFO: Info = Info {
    name: "tutorial",
    engine: "TorchCode ch. 6 sample_top_k_top_p (torch tutorial), rules in f64",
    summary: "temperature, top-k keeping ties, top-p removing a token once the mass before it exceeds p, softmax",
    verified_against: "hand-computed values; where it parts from transformers 5.23's recorded scores on fixtures/edge (top-p boundary, ties)",
    params: Params::PARAMS,
};

impl Semantics for Tutorial {
    type Params = Params;

    fn info(&self) -> &'static Info {
        &INFO
    }

    fn parse_params(&self, params: &Map<String, Value>) -> Result<Params, Error> {
        let p: Params = from_map(params, "tutorial", Params::FIELDS, Null::Value)?;
        Params::new(p.temperature, p.top_k, p.top_p)
    }

    fn distribution(
        &self,
        logits: &Logits,
        _context: &Context<'_>,
        params: &Params,
    ) -> Result<Distribution, Error> {
        let logits = logits.to_f32()?;
        let (probs, scores) = tutorial_distribution(&logits, params)?;
        Ok(Distribution::new(probs, Precision::F64).with_scores(scores))
    }

    fn from_generate(&self, kwargs: &Map<String, Value>) -> Option<Result<Params, Error>> {
        if kwargs.get("do_sample") != Some(&Value::Bool(true)) {
            return None;
        }
        // `None` in generate means "not set" for these three: the
        // tutorial's own default is what a port would write. Penalties,
        // min-p, typical, epsilon, eta, ...: the tutorial has no such
        // parameter.
        let mut own = Map::new();
        for (key, value) in kwargs {
            if !Params::FIELDS.contains(&key.as_str()) {
                if key == "do_sample" {
                    continue;
                }
                return None;
            }
            if !value.is_null() {
                own.insert(key.clone(), value.clone());
            }
        }
        Some(self.parse_params(&own))
    }

    fn describe(&self, params: &Params) -> Option<Described> {
        Some(Described::Words(format!(
            "sample_top_k_top_p(logits, top_k={}, top_p={}, temperature={})",
            params.top_k, params.top_p, params.temperature
        )))
    }

    fn explain(&self, row: &Against<'_>, params: &Params) -> Explanation {
        let c = row.comparison;
        let same_kept = c.only_left.is_empty() && c.only_right.is_empty();
        if same_kept && c.max_abs_diff <= 1e-5 {
            return Explanation::default();
        }
        let mut reasons = Vec::new();
        let mut candidate = *params;
        let default_top_k = row.kwargs.get("do_sample") == Some(&Value::Bool(true))
            && !row.kwargs.contains_key("top_k")
            && params.top_k <= 0
            && top_50_removes_some(row.logits);
        if default_top_k {
            reasons.push(
                "default top-k 50: transformers adds top_k=50 when the kwargs don't set top_k; \
                 the tutorial's default top_k=0 filters nothing"
                    .to_string(),
            );
            candidate.top_k = 50;
        }
        if params.top_p < 1.0 && !same_kept {
            let ties = cut_through_ties(row.logits, c);
            if ties {
                reasons.push(
                    "top-p cut through tied logits: the tutorial keeps the lower ids of a tie, \
                     transformers the tied tokens torch's ascending sort leaves last"
                        .to_string(),
                );
            }
            if !ties || c.kept_left != c.kept_right {
                reasons.push(format!(
                    "top-p boundary: transformers removes a token once the mass before it reaches \
                     p = {} (ascending f32 cumulative mass <= 1 - p), the tutorial only once it \
                     exceeds p; {} token(s) only the tutorial keeps, {} only transformers keeps",
                    params.top_p,
                    c.only_right.len(),
                    c.only_left.len()
                ));
            }
        }
        if reasons.is_empty() {
            reasons.push(format!(
                "float rounding: same kept set, max |dp| {:.2e} (the tutorial's masses are f64, \
                 transformers' f32)",
                c.max_abs_diff
            ));
        }
        let fix = (candidate != *params)
            .then(|| proven_fix(row, &candidate))
            .flatten();
        Explanation { reasons, fix }
    }
}

/// The tutorial's distribution and its processed scores (the scaled logits
/// with `-inf` where top-k or top-p removed a token).
pub fn tutorial_distribution(
    logits: &[f32],
    params: &Params,
) -> Result<(Vec<f64>, Vec<f32>), Error> {
    let t = params.temperature as f32;
    let mut scores: Vec<f32> = logits.iter().map(|&x| x / t).collect();
    if let Some((i, &x)) = scores
        .iter()
        .enumerate()
        .find(|&(_, x)| x.is_nan() || *x == f32::INFINITY)
    {
        return Err(Error::new(format_args!(
            "`logits[{i}]` = {} divided by `temperature` = {} is {x}: softmax gives NaN and \
             torch.multinomial raises",
            logits[i], params.temperature
        )));
    }
    let v = scores.len();
    if params.top_k > 0 {
        let k = usize::try_from(params.top_k).unwrap_or(usize::MAX);
        if k > v {
            return Err(Error::new(format_args!(
                "`top_k` = {} is more than the {v} logits: torch's topk raises \"selected index k \
                 out of range\"",
                params.top_k
            )));
        }
        let mut sorted = scores.clone();
        sorted.sort_by(|a, b| b.total_cmp(a));
        let threshold = sorted[k - 1];
        for s in &mut scores {
            if *s < threshold {
                *s = f32::NEG_INFINITY;
            }
        }
    }
    if params.top_p < 1.0 {
        let mut order: Vec<usize> = (0..v).collect();
        // Descending; ties by lower id first (a stable sort of the ids).
        order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]));
        let sorted: Vec<f32> = order.iter().map(|&i| scores[i]).collect();
        let probs = softmax(&sorted).ok_or_else(nothing_left)?;
        let mut before = 0.0f64;
        for (&i, p) in order.iter().zip(probs) {
            if before > params.top_p {
                scores[i] = f32::NEG_INFINITY;
            }
            before += p;
        }
    }
    let probs = softmax(&scores).ok_or_else(nothing_left)?;
    Ok((probs, scores))
}

fn nothing_left() -> Error {
    Error::new(
        "every logit is -inf after filtering: softmax gives NaN and torch.multinomial raises",
    )
}

/// Softmax in f64 of f32 values, maximum subtracted; `None` when all are
/// `-inf`.
fn softmax(values: &[f32]) -> Option<Vec<f64>> {
    let max = values.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    if max == f32::NEG_INFINITY {
        return None;
    }
    let max = f64::from(max);
    let exps: Vec<f64> = values.iter().map(|&x| (f64::from(x) - max).exp()).collect();
    let sum: f64 = exps.iter().sum();
    Some(exps.into_iter().map(|e| e / sum).collect())
}

/// Whether transformers' default top-k of 50 removes any token here (it is
/// clamped to V, and keeps ties with the 50th).
fn top_50_removes_some(logits: &[f32]) -> bool {
    if logits.len() <= 50 {
        return false;
    }
    let mut sorted = logits.to_vec();
    sorted.sort_by(|a, b| b.total_cmp(a));
    let threshold = sorted[49];
    logits.iter().any(|&x| x < threshold)
}

/// Whether a token kept by one side only has a logit equal to one kept by the
/// other: the cut ran through a tie.
fn cut_through_ties(logits: &[f32], c: &Comparison) -> bool {
    let value = |id: usize| logits.get(id).copied();
    c.only_left.iter().any(|l| {
        c.only_right
            .iter()
            .any(|r| value(l.id).is_some() && value(l.id) == value(r.id))
    })
}

/// `candidate` as a [`Fix`] if it reproduces transformers' distribution on
/// this row (same kept set, max |Δp| ≤ 1e-5).
fn proven_fix(row: &Against<'_>, candidate: &Params) -> Option<Fix> {
    let (probs, _) = tutorial_distribution(row.logits, candidate).ok()?;
    let c = Comparison::new(row.transformers.probs(), &probs).ok()?;
    let exact = c.only_left.is_empty() && c.only_right.is_empty() && c.max_abs_diff <= 1e-5;
    exact.then(|| {
        let mut params = Map::new();
        params.insert("temperature".into(), candidate.temperature.into());
        params.insert("top_k".into(), candidate.top_k.into());
        params.insert("top_p".into(), candidate.top_p.into());
        Fix {
            text: format!(
                "pass top_k={} explicitly (transformers' default)",
                candidate.top_k
            ),
            params,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(logits: &[f32], t: f64, k: i64, p: f64) -> Result<Vec<f64>, Error> {
        let params = Params::new(t, k, p)?;
        tutorial_distribution(logits, &params).map(|(probs, _)| probs)
    }

    fn close(a: &[f64], b: &[f64]) {
        assert_eq!(a.len(), b.len(), "{a:?} vs {b:?}");
        for (x, y) in a.iter().zip(b) {
            assert!((x - y).abs() <= 1e-12, "{a:?} vs {b:?}");
        }
    }

    #[test]
    fn defaults_are_a_plain_softmax() {
        // e^1, e^5, e^2, e^0.5 over their sum (160.17...)
        let p = run(&[1.0, 5.0, 2.0, 0.5], 1.0, 0, 1.0).expect("valid");
        close(
            &p,
            &[
                0.016_971_312_323_921_95,
                0.926_602_256_520_840_5,
                0.046_132_809_895_220_09,
                0.010_293_621_260_017_528,
            ],
        );
    }

    #[test]
    fn top_k_keeps_ties_with_the_kth() {
        // [3,2,2,1], k=2: threshold 2, only 1 is strictly below.
        // e^3, e^2, e^2 / (e^3 + 2e^2) = 0.5761169, 0.2119416, 0.2119416
        let p = run(&[3.0, 2.0, 2.0, 1.0], 1.0, 2, 1.0).expect("valid");
        close(
            &p,
            &[
                0.576_116_884_765_829_1,
                0.211_941_557_617_085_47,
                0.211_941_557_617_085_47,
                0.0,
            ],
        );
    }

    #[test]
    fn top_p_removes_only_when_the_mass_before_exceeds_p() {
        // softmax [2,1,0] = 0.6652, 0.2447, 0.0900; mass before: 0, 0.6652, 0.9100.
        // p = 0.7: token 1 stays (0.6652 <= 0.7), token 2 goes (0.9100 > 0.7):
        // e^2/(e^2+e) = 0.7310586, e/(e^2+e) = 0.2689414.
        let l = [2.0, 1.0, 0.0];
        let p = run(&l, 1.0, 0, 0.7).expect("valid");
        close(&p, &[0.731_058_578_630_004_9, 0.268_941_421_369_995_1, 0.0]);
        // p = 0.6: 0.6652 > 0.6 → only token 0.
        let p = run(&l, 1.0, 0, 0.6).expect("valid");
        close(&p, &[1.0, 0.0, 0.0]);
        // p = 0: the first token always stays (before 0 is not > 0).
        let p = run(&l, 1.0, 0, 0.0).expect("valid");
        close(&p, &[1.0, 0.0, 0.0]);
        // Four equal logits, p = 0.5: masses before are exactly 0, 1/4, 1/2, 3/4;
        // 1/2 is not > 1/2, so three stay (transformers, removing cumulative
        // ascending mass <= 1/2, keeps two).
        let p = run(&[1.0; 4], 1.0, 0, 0.5).expect("valid");
        close(&p, &[1.0 / 3.0, 1.0 / 3.0, 1.0 / 3.0, 0.0]);
    }

    #[test]
    fn temperature_then_top_k_then_top_p_on_the_renormalised_mass() {
        // logits [2,1,0,-1] / 0.5 = [4,2,0,-2]; top_k 3 drops -2;
        // softmax of [4,2,0]: e^4/(e^4+e^2+1) = 0.8668, e^2/.. = 0.1173, 1/.. = 0.0159.
        // p = 0.85: before: 0, 0.8668 (> 0.85 → removed), ... → only token 0.
        let p = run(&[2.0, 1.0, 0.0, -1.0], 0.5, 3, 0.85).expect("valid");
        close(&p, &[1.0, 0.0, 0.0, 0.0]);
        // p = 0.9: token 1 stays (0.8668 ≤ 0.9), token 2 goes (0.9841 > 0.9).
        // e^4/(e^4+e^2) = 0.8807971, e^2/(e^4+e^2) = 0.1192029
        let p = run(&[2.0, 1.0, 0.0, -1.0], 0.5, 3, 0.9).expect("valid");
        close(
            &p,
            &[0.880_797_077_977_882_4, 0.119_202_922_022_117_56, 0.0, 0.0],
        );
    }

    #[test]
    fn ties_at_the_top_p_cut_keep_the_lower_ids() {
        // [0, 1, 1, 1]: softmax e/(3e+1) = 0.3028 each for ids 1..3. p = 0.5:
        // before = 0, 0.3028, 0.6055 → ids 1, 2 stay, id 3 (tied) goes, id 0 goes.
        let p = run(&[0.0, 1.0, 1.0, 1.0], 1.0, 0, 0.5).expect("valid");
        close(&p, &[0.0, 0.5, 0.5, 0.0]);
    }

    #[test]
    fn negative_temperature_reverses_the_logits() {
        // [1,5,2,0.5] / -1 = [-1,-5,-2,-0.5]; top_k 1 keeps only id 3.
        let p = run(&[1.0, 5.0, 2.0, 0.5], -1.0, 1, 1.0).expect("valid");
        close(&p, &[0.0, 0.0, 0.0, 1.0]);
    }

    #[test]
    fn refusals_name_the_field_and_value() {
        let e = Params::new(0.0, 0, 1.0).unwrap_err().to_string();
        assert!(e.starts_with("`temperature` = 0 is 0 in float32"), "{e}");
        let e = Params::new(1e-50, 0, 1.0).unwrap_err().to_string();
        assert!(e.starts_with("`temperature` = 0.00000"), "{e}");
        let e = run(&[1.0, 2.0], 1.0, 3, 1.0).unwrap_err().to_string();
        assert!(
            e.starts_with("`top_k` = 3 is more than the 2 logits"),
            "{e}"
        );
        let e = run(&[1.0, 2.0], 1.0, 0, -0.1).unwrap_err().to_string();
        assert!(e.starts_with("every logit is -inf after filtering"), "{e}");
        let e = run(&[3.0e38, 0.0], 0.5, 0, 1.0).unwrap_err().to_string();
        assert!(
            e.starts_with("`logits[0]` = 300000000000000000000000000000000000000 divided"),
            "{e}"
        );
        let e = run(&[f32::NEG_INFINITY, 0.0], -1.0, 0, 1.0)
            .unwrap_err()
            .to_string();
        assert!(e.contains("is inf"), "{e}");
    }

    #[test]
    fn params_parse_with_the_tutorials_names_and_defaults() {
        let parse = |s: &str| {
            let map: Map<String, Value> = serde_json::from_str(s).expect("json object");
            Tutorial.parse_params(&map)
        };
        assert_eq!(parse("{}"), Ok(Params::default()));
        assert_eq!(
            parse(r#"{"temperature": 0.7, "top_k": 50, "top_p": 0.9}"#),
            Params::new(0.7, 50, 0.9)
        );
        assert_eq!(
            parse(r#"{"top_k": 2.0}"#).unwrap_err().to_string(),
            "`top_k` = 2.0: must be an integer (torch's topk takes no float)"
        );
        assert_eq!(
            parse(r#"{"top_p": "0.9"}"#).unwrap_err().to_string(),
            "`top_p` = \"0.9\": invalid type: string \"0.9\", expected f64"
        );
        assert!(
            parse(r#"{"min_p": 0.1}"#)
                .unwrap_err()
                .to_string()
                .starts_with("unknown field `min_p`")
        );
    }

    #[test]
    fn generate_kwargs_map_literally() {
        let map = |s: &str| -> Map<String, Value> { serde_json::from_str(s).expect("object") };
        // No top_k: the port writes the tutorial's default 0, not transformers' 50.
        assert_eq!(
            Tutorial.from_generate(&map(r#"{"do_sample": true, "temperature": 0.7}"#)),
            Some(Params::new(0.7, 0, 1.0))
        );
        assert_eq!(
            Tutorial.from_generate(&map(r#"{"do_sample": true, "top_k": null, "top_p": 0.9}"#)),
            Some(Params::new(1.0, 0, 0.9))
        );
        assert_eq!(
            Tutorial.from_generate(&map(r#"{"do_sample": false}"#)),
            None
        );
        assert_eq!(
            Tutorial.from_generate(&map(r#"{"do_sample": true, "min_p": 0.05}"#)),
            None
        );
        assert!(matches!(
            Tutorial.from_generate(&map(r#"{"do_sample": true, "temperature": 0.0}"#)),
            Some(Err(_))
        ));
    }
}
