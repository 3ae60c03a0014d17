//! ONNX Runtime GenAI's CPU sampling step, transcribed.
//!
//! Sources (microsoft/onnxruntime-genai a0c04eb13, 0.16.0-dev; the recorded
//! 0.18.0 cases are the check that they still hold):
//!
//! * src/standard_decoding_strategy.cpp `RunStandardDecodingStep`: min
//!   length, repetition penalty, no-repeat n-gram, then one of `SelectTop`,
//!   `SampleTopKTopP`, `SampleTopK`, `SampleTopP` (src/search.cpp).
//! * src/sampling_distribution.h: `ApplyRepetitionPenaltyToLogits`,
//!   `ApplyNoRepeatNgramToLogits`, `FindNucleus`,
//!   `ComputeSampledCategorical`, `SampleCategoricalToken`.
//! * src/search.h `ArgMax`: the first index of the maximum.
//!
//! Everything is float32 in the engine's order of operations: `expf` of
//! `(score - max) * (1 / T)`, sums accumulated left to right, the top-k
//! renormalised by division and the kept set by the reciprocal of its sum.
//! The index orders come from libstdc++'s `std::partial_sort`
//! ([`replicas::libstdcxx::partial_sort`], on `iota` indices with
//! `scores[i] > scores[j]`), the draw from libstdc++'s
//! `std::discrete_distribution<int>` on `std::mt19937`
//! ([`replicas::libstdcxx`]).

use parity_core::Error;
use replicas::libstdcxx::DiscreteDistribution;
use replicas::libstdcxx::partial_sort;
use replicas::mt19937::Mt19937;

use crate::params::{Mode, SearchParams};

/// What one step does on these scores.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Step {
    /// How it sampled.
    pub(crate) mode: Mode,
    /// The scores after the penalties, when a penalty was active.
    pub(crate) penalised: Option<Vec<f32>>,
    /// The argmax, or the kept ids and their float32 probabilities in the
    /// order the engine hands them to `std::discrete_distribution`.
    pub(crate) outcome: Outcome,
}

/// The token choice.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Outcome {
    /// `SelectTop`.
    Greedy(usize),
    /// `SampledCategorical`: kept ids and probabilities.
    Sampled {
        /// `out.indices`.
        indices: Vec<i32>,
        /// `out.probs`.
        probs: Vec<f32>,
    },
}

/// Runs one step on `logits` with the sequence `ids` (prompt and generated
/// tokens: what the penalties see).
pub(crate) fn run(logits: &[f32], ids: &[i32], p: &SearchParams) -> Result<Step, Error> {
    let n_vocab = logits.len();
    let mode = p.mode(n_vocab)?;
    let mut scores = logits.to_vec();
    let active = p.repetition_penalty != 1.0 || p.no_repeat_ngram_size > 0;
    if active {
        repetition_penalty(&mut scores, ids, p.repetition_penalty);
        no_repeat_ngram(&mut scores, ids, p.no_repeat_ngram_size);
    }
    let outcome = match mode {
        Mode::Greedy => Outcome::Greedy(arg_max(&scores)),
        Mode::TopKTopP => categorical(&scores, p.top_k, p.top_p, p.temperature),
        Mode::TopK => categorical(&scores, p.top_k, 0.0, p.temperature),
        Mode::TopP => categorical(&scores, 0, p.top_p, p.temperature),
    };
    Ok(Step {
        mode,
        penalised: active.then_some(scores),
        outcome,
    })
}

/// `ApplyRepetitionPenaltyToLogits`: each id of the sequence once.
fn repetition_penalty(scores: &mut [f32], ids: &[i32], penalty: f32) {
    if penalty == 1.0 {
        return;
    }
    let n = scores.len();
    let mut visited = vec![false; n];
    for &id in ids {
        if id >= 0 && (id as usize) < n && !visited[id as usize] {
            visited[id as usize] = true;
            let s = scores[id as usize];
            scores[id as usize] = if s < 0.0 { s * penalty } else { s / penalty };
        }
    }
}

/// `ApplyNoRepeatNgramToLogits`: every token that would complete an n-gram
/// already in the sequence gets the lowest float.
fn no_repeat_ngram(scores: &mut [f32], ids: &[i32], n: i32) {
    if n <= 0 || ids.len() < n as usize {
        return;
    }
    let n = n as usize;
    let target = &ids[ids.len() - (n - 1)..];
    for start in 0..=ids.len() - n {
        if &ids[start..start + n - 1] == target {
            let banned = ids[start + n - 1];
            if banned >= 0 && (banned as usize) < scores.len() {
                scores[banned as usize] = f32::MIN;
            }
        }
    }
}

/// `ArgMax`: the first index whose value no later value exceeds.
fn arg_max(values: &[f32]) -> usize {
    let mut best = 0;
    for i in 1..values.len() {
        if values[i] > values[best] {
            best = i;
        }
    }
    best
}

/// `scores[i] > scores[j]`, the engine's comparator on indices.
fn greater(scores: &[f32]) -> impl Fn(&i32, &i32) -> bool + '_ {
    move |&i, &j| scores[i as usize] > scores[j as usize]
}

/// `ComputeSampledCategorical`.
fn categorical(scores: &[f32], top_k: i32, top_p: f32, temperature: f32) -> Outcome {
    let n = scores.len();
    let inv_temp = 1.0f32 / temperature;
    let mut scratch: Vec<i32> = (0..n as i32).collect();
    let apply_topp = top_p > 0.0 && top_p < 1.0;
    let exp_at = |i: i32, max: f32| ((scores[i as usize] - max) * inv_temp).exp();
    if top_k > 1 {
        let m = (top_k as usize).min(n);
        partial_sort(&mut scratch, 0, m, n, &greater(scores));
        let max = scores[scratch[0] as usize];
        let mut probs: Vec<f32> = Vec::with_capacity(m);
        let mut sum = 0.0f32;
        for &i in &scratch[..m] {
            let e = exp_at(i, max);
            probs.push(e);
            sum += e;
        }
        if sum > 0.0 {
            for v in &mut probs {
                *v /= sum;
            }
        }
        let mut keep = m;
        if apply_topp {
            let mut cum = 0.0f32;
            for (j, &v) in probs.iter().enumerate() {
                cum += v;
                if cum >= top_p {
                    keep = j + 1;
                    break;
                }
            }
        }
        let mut keep_sum = 0.0f32;
        for &v in &probs[..keep] {
            keep_sum += v;
        }
        let inv = if keep_sum > 0.0 { 1.0 / keep_sum } else { 0.0 };
        return Outcome::Sampled {
            indices: scratch[..keep].to_vec(),
            probs: probs[..keep].iter().map(|&v| v * inv).collect(),
        };
    }
    // std::max_element: the value of the first maximum.
    let max = scores[arg_max_element(scores)];
    let cutoff = find_nucleus(scores, &mut scratch, top_p, max, inv_temp);
    let mut probs: Vec<f32> = Vec::with_capacity(cutoff);
    let mut sum = 0.0f32;
    for &i in &scratch[..cutoff] {
        let e = exp_at(i, max);
        probs.push(e);
        sum += e;
    }
    let inv = if sum > 0.0 { 1.0 / sum } else { 0.0 };
    Outcome::Sampled {
        indices: scratch[..cutoff].to_vec(),
        probs: probs.iter().map(|&v| v * inv).collect(),
    }
}

/// `std::max_element`: `if (*largest < *it) largest = it`.
fn arg_max_element(values: &[f32]) -> usize {
    let mut largest = 0;
    for i in 1..values.len() {
        if values[largest] < values[i] {
            largest = i;
        }
    }
    largest
}

/// `FindNucleus`: the adaptive partial sort with its tail bound, and the
/// exact cut for vocabularies of at most 64.
fn find_nucleus(scores: &[f32], indices: &mut [i32], p: f32, max: f32, inv_temp: f32) -> usize {
    const INITIAL: usize = 16;
    const GROWTH: usize = 4;
    let n = scores.len();
    let exp_at = |i: i32| ((scores[i as usize] - max) * inv_temp).exp();
    let mut sorted = 0;
    let mut k = INITIAL.min(n);
    let mut prefix = 0.0f32;
    let mut cutoff = 0;
    while k <= n {
        partial_sort(indices, sorted, k, n, &greater(scores));
        cutoff = k;
        for (i, &id) in indices.iter().enumerate().take(k).skip(sorted) {
            let e = exp_at(id);
            prefix += e;
            let tail = (n - i - 1) as i32 as f32 * e;
            if prefix >= p * (prefix + tail) {
                cutoff = i + 1;
                break;
            }
        }
        sorted = k;
        if cutoff < k || k == n {
            break;
        }
        k = (k * GROWTH).min(n);
    }
    if n <= INITIAL * GROWTH {
        if sorted < n {
            partial_sort(indices, sorted, n, n, &greater(scores));
        }
        let mut global = 0.0f32;
        for &i in indices.iter() {
            global += exp_at(i);
        }
        let mut cum = 0.0f32;
        for (j, &i) in indices.iter().enumerate() {
            cum += exp_at(i);
            if cum >= p * global {
                return j + 1;
            }
        }
    }
    cutoff
}

impl Outcome {
    /// The `std::discrete_distribution` the engine draws with.
    fn discrete(&self) -> Option<DiscreteDistribution> {
        match self {
            Outcome::Greedy(_) => None,
            Outcome::Sampled { probs, .. } => Some(DiscreteDistribution::new(
                probs.iter().map(|&v| f64::from(v)),
            )),
        }
    }

    /// Each token's probability of being drawn: the share of `[0, 1)` that
    /// `discrete_distribution` maps to it (the differences of its
    /// cumulative weights, a last entry below its predecessor getting none).
    /// All-NaN weights always give the first kept id, as C++'s
    /// `lower_bound` does.
    pub(crate) fn probabilities(&self, n_vocab: usize) -> Result<Vec<f64>, Error> {
        let mut out = vec![0.0; n_vocab];
        match self {
            Outcome::Greedy(t) => out[*t] = 1.0,
            Outcome::Sampled { indices, probs } => {
                let d = self.discrete().expect("sampled");
                if d.all_nan() {
                    out[indices[0] as usize] = 1.0;
                    return Ok(out);
                }
                let shares = d.probabilities(probs.len()).ok_or_else(|| {
                    Error::new(
                        "ONNX Runtime GenAI's kept weights are not a distribution here (NaN or infinite scores): not reproduced",
                    )
                })?;
                for (&id, &s) in indices.iter().zip(&shares) {
                    out[id as usize] += s;
                }
            }
        }
        Ok(out)
    }

    /// The first `n` tokens a generator seeded with `seed` draws on this
    /// step (the argmax takes no draw).
    pub(crate) fn draws(&self, seed: u32, n: u64) -> Vec<i64> {
        match self {
            Outcome::Greedy(t) => vec![*t as i64; n as usize],
            Outcome::Sampled { indices, .. } => {
                let d = self.discrete().expect("sampled");
                let mut rng = Mt19937::new(seed);
                (0..n)
                    .map(|_| i64::from(indices[d.sample(&mut rng)]))
                    .collect()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argmax_takes_the_first_maximum() {
        assert_eq!(arg_max(&[1.0, 3.0, 3.0, 2.0]), 1);
        assert_eq!(arg_max_element(&[1.0, 3.0, 3.0, 2.0]), 1);
    }

    #[test]
    fn repetition_penalty_hits_each_id_once_by_sign() {
        let mut s = vec![2.0, -2.0, 1.0];
        repetition_penalty(&mut s, &[0, 1, 0, 0, 7, -1], 2.0);
        assert_eq!(s, vec![1.0, -4.0, 1.0]);
    }

    #[test]
    fn no_repeat_ngram_bans_the_completing_token() {
        let mut s = vec![0.0; 5];
        // bigrams: (1,2), (2,3), (3,1); the last token 1 was followed by 2
        no_repeat_ngram(&mut s, &[1, 2, 3, 1], 2);
        assert_eq!(s, vec![0.0, 0.0, f32::MIN, 0.0, 0.0]);
    }

    #[test]
    fn top_p_zero_keeps_one_token() {
        let scores = [1.0, 3.0, 2.0, 0.5];
        let Outcome::Sampled { indices, .. } = categorical(&scores, 0, 0.0, 1.0) else {
            panic!("sampled")
        };
        assert_eq!(indices, vec![1]);
    }
}
