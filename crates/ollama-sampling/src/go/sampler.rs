//! Ollama's Go `sample` package, step by step (sample/samplers.go and
//! sample/transforms.go at f63eea3d2; the same code from v0.6.2 on, see the
//! crate docs for the versions).
//!
//! `Sampler.sample` runs, on a `[]token{id, value}` built from the logits in
//! id order:
//!
//! 1. `temperature == 0`: `greedy`, the first token with the largest logit
//!    (strict `>` from id 0), and nothing else runs;
//! 2. `topK(tokens, k)`: for `k <= 0 || k >= len`, `slices.SortFunc` by
//!    descending value over every token (pdqsort, not stable); otherwise a
//!    `container/heap` min-heap of the first k tokens, each later token
//!    replacing the root when its value is strictly greater, then popped
//!    into a descending slice of exactly k;
//! 3. `temperature`: `value / max(temp, 1e-7)` in float32;
//! 4. `softmax`: `float32(math.Exp(float64(value - max)))`, summed in
//!    float32 in slice order, each divided by that sum;
//! 5. `topP`: unless `p == 1`, the prefix through the first token whose
//!    running float32 sum is `> p`;
//! 6. `minP`: the prefix before the first token whose value is
//!    `< first value * p` (float32);
//! 7. the draw: `r = rng.Float32()`, the values replaced by their float32
//!    running sum, `r *= last sum`, and `slices.BinarySearchFunc` for the
//!    first sum that is not `< r`; a NaN sum is the error
//!    "sample: logits sum to NaN, check model output".

use parity_core::Error;

use replicas::go::{Heap, Pcg, exp, sort_func};

/// One entry of the sampler's slice: a token id and its logit, later its
/// probability.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Token {
    /// The token id.
    pub id: i32,
    /// Its logit or probability, as float32.
    pub value: f32,
}

/// What `NewSampler` stores: the runner's options after its clamps
/// (temperature < 0 → 0; top_p and min_p into [0, 1]); top_k as given.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// 0 means greedy.
    pub temperature: f32,
    /// k; `<= 0` or `>= V` sorts the whole vocabulary.
    pub top_k: i64,
    /// In [0, 1]; 1 skips top-p.
    pub top_p: f32,
    /// In [0, 1].
    pub min_p: f32,
    /// The PCG seed, or `None` for `seed == -1` (the package's global,
    /// randomly seeded source).
    pub seed: Option<u64>,
}

impl Settings {
    /// `sample.NewSampler(temperature, topK, topP, minP, seed, nil)`.
    pub fn new(temperature: f32, top_k: i64, top_p: f32, min_p: f32, seed: i64) -> Self {
        // Go: `if x < 0 { x = 0 }; if x >= 1 { x = 1 }` (NaN passes both ways)
        let clamp01 = |x: f32| x.clamp(0.0, 1.0);
        Self {
            temperature: if temperature < 0.0 { 0.0 } else { temperature },
            top_k,
            top_p: clamp01(top_p),
            min_p: clamp01(min_p),
            // Go: `sequence := uint64(seed)` (two's complement for negatives).
            seed: (seed != -1).then_some(seed as u64),
        }
    }

    /// The PCG `NewSampler` seeds: `rand.NewPCG(seed, seed ^ 0x9E3779B9)`.
    pub fn rng(&self) -> Option<Pcg> {
        self.seed.map(|s| Pcg::new(s, s ^ 0x9E37_79B9))
    }
}

/// `DefaultPenaltyLookback` (v0.17.5 – v0.17.8-rc1, sample/samplers.go at
/// 86513cb69): the history window of the penalties, whatever
/// `repeat_last_n` says.
pub const PENALTY_LOOKBACK: usize = 64;

/// The logits after v0.17.5's penalties (`Sample` at 86513cb69): the
/// sampler's history is every context token the runner `Accept`ed (prompt
/// and generated), trimmed to the last [`PENALTY_LOOKBACK`]; `tokenCounts`
/// counts those in `[0, V)`; each logit with a positive count goes through
/// `applyPenalty`: unless `repeat == 1`, a logit `< 0` is multiplied by it
/// and any other divided; then `- count * frequency` (float32) unless
/// frequency is 0; then `- presence` unless presence is 0. `NewSampler`
/// reads a `repeat <= 0` as 1.
pub fn penalise(
    logits: &[f32],
    history: &[i64],
    repeat: f32,
    presence: f32,
    frequency: f32,
) -> Vec<f32> {
    let repeat = if repeat <= 0.0 { 1.0 } else { repeat };
    let window = &history[history.len().saturating_sub(PENALTY_LOOKBACK)..];
    let mut counts = std::collections::BTreeMap::<usize, i64>::new();
    for &t in window {
        if let Ok(i) = usize::try_from(t)
            && i < logits.len()
        {
            *counts.entry(i).or_default() += 1;
        }
    }
    let mut out = logits.to_vec();
    for (&i, &count) in &counts {
        let mut logit = out[i];
        if repeat != 1.0 {
            if logit < 0.0 {
                logit *= repeat;
            } else {
                logit /= repeat;
            }
        }
        if frequency != 0.0 {
            logit -= count as f32 * frequency;
        }
        if presence != 0.0 {
            logit -= presence;
        }
        out[i] = logit;
    }
    out
}

/// The slice the draw runs on, and how long it was after each filter.
#[derive(Debug, Clone, PartialEq)]
pub enum Steps {
    /// Temperature 0: `greedy`'s token; no transform runs.
    Greedy(usize),
    /// The transforms ran.
    Sampled {
        /// Length after `topK`.
        after_top_k: usize,
        /// Length after `topP`.
        after_top_p: usize,
        /// After `minP`, in the order the draw sees it: ids and
        /// probabilities (not renormalised).
        kept: Vec<Token>,
    },
}

/// `greedy(tokens)`: the first token with the largest value.
pub fn greedy(logits: &[f32]) -> usize {
    let mut best = 0;
    for (i, &v) in logits.iter().enumerate().skip(1) {
        if v > logits[best] {
            best = i;
        }
    }
    best
}

/// `topK(ts, k)`.
pub fn top_k(mut ts: Vec<Token>, k: i64) -> Vec<Token> {
    let n = ts.len();
    if k <= 0 || k >= n as i64 {
        // cmp(a, b) < 0 exactly when a.value > b.value
        sort_func(&mut ts, &|a: &Token, b: &Token| a.value > b.value);
        return ts;
    }
    let k = k as usize;
    let rest = ts.split_off(k);
    let mut h = Heap::init(ts, |a: &Token, b: &Token| a.value < b.value);
    for t in rest {
        if t.value > h.data[0].value {
            h.pop();
            h.push(t);
        }
    }
    let mut result = vec![Token { id: 0, value: 0.0 }; k];
    for slot in result.iter_mut().rev() {
        if let Some(t) = h.pop() {
            *slot = t;
        }
    }
    result
}

/// `temperature(ts, temp)`.
pub fn temperature(ts: &mut [Token], temp: f32) {
    let temp = temp.max(1e-7);
    for t in ts {
        t.value /= temp;
    }
}

/// `softmax(ts)`.
pub fn softmax(ts: &mut [Token]) {
    let mut max = f32::NEG_INFINITY;
    for t in ts.iter() {
        if t.value > max {
            max = t.value;
        }
    }
    let mut sum = 0.0f32;
    for t in ts.iter_mut() {
        t.value = exp(f64::from(t.value - max)) as f32;
        sum += t.value;
    }
    for t in ts.iter_mut() {
        t.value /= sum;
    }
}

/// `topP(ts, p)`.
pub fn top_p(ts: &mut Vec<Token>, p: f32) {
    if p == 1.0 {
        return;
    }
    let mut sum = 0.0f32;
    for i in 0..ts.len() {
        sum += ts[i].value;
        if sum > p {
            ts.truncate(i + 1);
            return;
        }
    }
}

/// `minP(ts, p)`.
pub fn min_p(ts: &mut Vec<Token>, p: f32) {
    let Some(first) = ts.first() else {
        return; // Go would index out of range; topK never leaves it empty
    };
    let threshold = first.value * p;
    if let Some(i) = ts.iter().position(|t| t.value < threshold) {
        ts.truncate(i);
    }
}

/// Every step of `Sampler.sample` before the draw.
pub fn steps(logits: &[f32], s: &Settings) -> Steps {
    if s.temperature == 0.0 {
        return Steps::Greedy(greedy(logits));
    }
    let tokens: Vec<Token> = logits
        .iter()
        .enumerate()
        .map(|(i, &value)| Token {
            id: i as i32,
            value,
        })
        .collect();
    let mut tokens = top_k(tokens, s.top_k);
    let after_top_k = tokens.len();
    temperature(&mut tokens, s.temperature);
    softmax(&mut tokens);
    top_p(&mut tokens, s.top_p);
    let after_top_p = tokens.len();
    min_p(&mut tokens, s.min_p);
    Steps::Sampled {
        after_top_k,
        after_top_p,
        kept: tokens,
    }
}

/// The draws a sampler seeded by `s` makes when `Sample` is called `n`
/// times on these logits (each call runs the same transforms, so only the
/// RNG moves). Greedy draws use no random number.
pub fn draws(steps: &Steps, rng: &mut Pcg, n: usize) -> Result<Vec<i64>, Error> {
    match steps {
        Steps::Greedy(t) => Ok(vec![*t as i64; n]),
        Steps::Sampled { kept, .. } => {
            let mut sums = Vec::with_capacity(kept.len());
            let mut sum = 0.0f32;
            for t in kept {
                sum += t.value;
                sums.push(sum);
            }
            if sum.is_nan() {
                return Err(nan_error());
            }
            let total = sums.last().copied().unwrap_or(0.0);
            let mut out = Vec::with_capacity(n);
            for _ in 0..n {
                let r = rng.float32() * total;
                // slices.BinarySearchFunc with cmp = -1 if value < r, else 1
                let (mut i, mut j) = (0usize, sums.len());
                while i < j {
                    let h = (i + j) >> 1;
                    if sums[h] < r {
                        i = h + 1;
                    } else {
                        j = h;
                    }
                }
                let t = kept.get(i).ok_or_else(|| {
                    Error::new(format_args!(
                        "the draw fell past the last of {} tokens (r = {r}, total {total})",
                        kept.len()
                    ))
                })?;
                out.push(i64::from(t.id));
            }
            Ok(out)
        }
    }
}

/// The package's error for a NaN running sum (the runner then panics with
/// "failed to sample token").
pub(crate) fn nan_error() -> Error {
    Error::new(
        "the probabilities sum to NaN (every logit -inf, or the tempered logits overflow): Ollama's sampler returns \"sample: logits sum to NaN, check model output\" and its runner panics (\"failed to sample token\")",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(ts: &[Token]) -> Vec<i32> {
        ts.iter().map(|t| t.id).collect()
    }

    fn tokens(v: &[f32]) -> Vec<Token> {
        v.iter()
            .enumerate()
            .map(|(i, &value)| Token {
                id: i as i32,
                value,
            })
            .collect()
    }

    #[test]
    fn top_k_keeps_exactly_k_in_heap_order() {
        // The min-heap of [3, 2, 2] pops 2 (id 2) before 2 (id 1): the
        // descending result is [0, 2, 1] (recorded: a8/temperature=0.7_top_k=3).
        let got = top_k(tokens(&[3.0, 2.0, 2.0, 1.0, 0.5, -1.0, 0.0, 1.5]), 3);
        assert_eq!(ids(&got), vec![0, 2, 1]);
    }

    #[test]
    fn top_p_is_strict_and_min_p_cuts_below_the_threshold() {
        // [0.5, 0.5]: running sums 0.5 (not > 0.5) then 1.0: both kept.
        let mut t = tokens(&[0.5, 0.5]);
        top_p(&mut t, 0.5);
        assert_eq!(t.len(), 2);
        // p = 0: the first token's sum is > 0.
        let mut t = tokens(&[0.5, 0.5]);
        top_p(&mut t, 0.0);
        assert_eq!(t.len(), 1);
        // threshold 0.5 * 0.5 = 0.25: 0.2 is cut, 0.25 kept.
        let mut t = tokens(&[0.5, 0.25, 0.2, 0.05]);
        min_p(&mut t, 0.5);
        assert_eq!(ids(&t), vec![0, 1]);
    }

    #[test]
    fn new_sampler_clamps() {
        let s = Settings::new(-1.0, 0, 1.5, -0.1, -2);
        assert_eq!((s.temperature, s.top_p, s.min_p), (0.0, 1.0, 0.0));
        assert_eq!(s.seed, Some(u64::MAX - 1));
        assert_eq!(Settings::new(0.8, 40, 0.9, 0.0, -1).seed, None);
    }
}
