//! The Go sampler's decisions that float rounding could flip
//! ([`parity_core::fragile`]), found with its own arithmetic: the top-k cut
//! on the raw logits, the top-p running sum against p (strict `>`), ties
//! across the top-p cut (pdqsort's or the heap's order decides), and
//! probabilities against min-p's threshold.

use parity_core::fragile::{FRAGILE_ULPS, near, ulps};
use parity_core::{Fragile, FragileKind};

use super::sampler::{self, Settings, Token};

fn fragile(kind: FragileKind, tokens: Vec<usize>, margin: u64, detail: String) -> Fragile {
    Fragile {
        kind,
        tokens,
        margin_ulps: margin,
        penalised: false,
        detail,
    }
}

/// Every fragile decision on these logits; empty when greedy.
pub(crate) fn find(logits: &[f32], s: &Settings) -> Vec<Fragile> {
    if s.temperature == 0.0 || logits.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    let n = logits.len();
    if s.top_k > 0 && (s.top_k as usize) < n {
        let k = s.top_k as usize;
        let mut sorted = logits.to_vec();
        sorted.sort_by(|a, b| b.total_cmp(a));
        let (kth, next) = (sorted[k - 1], sorted[k]);
        if let Some(m) = near(kth, next) {
            let tokens: Vec<usize> = (0..n)
                .filter(|&i| near(logits[i], kth).is_some() || near(logits[i], next).is_some())
                .collect();
            out.push(fragile(
                FragileKind::TopKTie,
                tokens,
                m,
                format!(
                    "top_k {k}: the k-th logit {kth} and the next {next} are {m} ulps apart; Ollama keeps exactly k, the heap's order among them decides"
                ),
            ));
        }
    }
    let tokens: Vec<Token> = logits
        .iter()
        .enumerate()
        .map(|(i, &value)| Token {
            id: i as i32,
            value,
        })
        .collect();
    let mut ts = sampler::top_k(tokens, s.top_k);
    sampler::temperature(&mut ts, s.temperature);
    sampler::softmax(&mut ts);
    if s.top_p != 1.0 {
        let mut sum = 0.0f32;
        let mut before = None;
        for (i, t) in ts.iter().enumerate() {
            sum += t.value;
            let flips = near(sum, s.top_p).filter(|_| i + 1 < ts.len());
            if let Some(m) = flips {
                out.push(fragile(
                    FragileKind::TopPCut,
                    vec![ts[i + 1].id as usize],
                    m,
                    format!(
                        "top_p {}: the float32 running sum through token {} is {sum}, {m} ulps from p; whether token {} is kept depends on it (kept when the sum is not > p)",
                        s.top_p,
                        t.id,
                        ts[i + 1].id
                    ),
                ));
            }
            if sum > s.top_p {
                before = Some(i);
                break;
            }
        }
        if let Some(i) = before.filter(|&i| i + 1 < ts.len()) {
            let (last, first_out) = (ts[i].value, ts[i + 1].value);
            if last == first_out {
                let tokens: Vec<usize> = ts
                    .iter()
                    .filter(|t| t.value == last)
                    .map(|t| t.id as usize)
                    .collect();
                out.push(fragile(
                    FragileKind::TopPTie,
                    tokens,
                    0,
                    format!(
                        "top_p {}: the last kept token {} and the first dropped {} have the same probability {last}; the sort's order among ties decides",
                        s.top_p, ts[i].id, ts[i + 1].id
                    ),
                ));
            }
        }
    }
    sampler::top_p(&mut ts, s.top_p);
    if s.min_p > 0.0
        && let Some(first) = ts.first()
    {
        let threshold = first.value * s.min_p;
        let close: Vec<(usize, u64)> = ts
            .iter()
            .filter_map(|t| {
                ulps(t.value, threshold)
                    .filter(|&d| d <= FRAGILE_ULPS)
                    .map(|d| (t.id as usize, d))
            })
            .collect();
        if let Some(m) = close.iter().map(|c| c.1).min() {
            out.push(fragile(
                    FragileKind::MinP,
                    close.iter().map(|c| c.0).collect(),
                    m,
                    format!(
                        "min_p {}: probabilities within {m} ulps of the threshold {threshold} (the top probability times min_p)",
                        s.min_p
                    ),
                ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boundaries_are_found() {
        // two equal logits, p = 0.5: the first sum is exactly p
        let s = Settings::new(1.0, 0, 0.5, 0.0, -1);
        let f = find(&[0.0, 0.0], &s);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!((f[0].kind, f[0].margin_ulps), (FragileKind::TopPCut, 0));
        // [3, 2, 2, 1], k = 2: ids 1 and 2 tie across the cut
        let s = Settings::new(1.0, 2, 1.0, 0.0, -1);
        let f = find(&[3.0, 2.0, 2.0, 1.0], &s);
        assert_eq!(f[0].kind, FragileKind::TopKTie);
        assert_eq!(f[0].tokens, vec![1, 2]);
        // min_p 0.5 on probabilities 2/3, 1/3 (logits ln 2, 0): 1/3 vs 2/3 * 0.5
        let s = Settings::new(1.0, 0, 1.0, 0.5, -1);
        let f = find(&[std::f32::consts::LN_2, 0.0], &s);
        assert!(f.iter().any(|x| x.kind == FragileKind::MinP), "{f:?}");
        // greedy: nothing to flip
        assert!(find(&[0.0, 0.0], &Settings::new(0.0, 1, 0.5, 0.0, -1)).is_empty());
    }
}
