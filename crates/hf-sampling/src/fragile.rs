//! Where transformers' truncation rules decide within float rounding
//! ([`parity_core::fragile`]).
//!
//! The processor chain is run as [`crate::process_at`] runs it; before each
//! truncation warper, its input scores are checked against that warper's own
//! rule (transformers 5.23.0 `generation/logits_process.py`, mirrored in
//! `processors.rs`):
//!
//! - `TopKLogitsWarper`: removes `scores < topk(scores, k)[-1]`. Fragile when
//!   the k-th and (k+1)-th largest scores are within
//!   [`FRAGILE_ULPS`](parity_core::fragile::FRAGILE_ULPS) (0: a tie, where
//!   transformers keeps every tied token and an engine that keeps exactly k
//!   drops some).
//! - `TopPLogitsWarper`: removes tokens whose ascending f32 cumulative mass
//!   is `<= (float)(1 - top_p)`. Fragile when a cumulative mass (of a token
//!   other than the largest) is within the ulps of that threshold, and when
//!   the last token removed has the same score as the first one kept (the
//!   sort's order among ties chose).
//! - `MinPLogitsWarper`: removes `probs < (float)min_p * max(probs)`;
//!   `EpsilonLogitsWarper`: `probs < (float)epsilon`; `EtaLogitsWarper`:
//!   `probs < eta`. Fragile when a token's probability is within the ulps of
//!   the threshold (the protected top token aside).
//!
//! A flagged token whose logit the repetition penalty changed is marked
//! `penalised`: the penalty moved it onto the threshold.

use std::collections::{BTreeMap, HashSet};

use parity_core::fragile::{Fragile, FragileKind, near};

use crate::error::HfError;
use crate::params::GenerationParams;
use crate::processors::{Processor, TopPSort, eta_threshold, kth_largest};
use replicas::torch;

/// The fragile decisions transformers' chain makes on `logits` for a step
/// whose context is `input_ids` (the first `prompt_len` of them prompt);
/// empty when not sampling. Errors as [`crate::process_at`] does for
/// parameters its processors reject.
pub fn fragile(
    logits: &[f32],
    input_ids: &[i64],
    prompt_len: usize,
    params: &GenerationParams,
) -> Result<Vec<Fragile>, HfError> {
    if !params.do_sample || logits.iter().any(|x| x.is_nan()) {
        return Ok(Vec::new());
    }
    let processors = params.processors_at(prompt_len.min(input_ids.len()))?;
    let mut scores = logits.to_vec();
    chain(&mut scores, input_ids, &processors)
}

/// Runs `processors` over `scores` as [`crate::process_at`] does, checking
/// each truncation warper's input against its rule first; returns the
/// fragile decisions. `scores` end as the chain leaves them (transformers'
/// processed scores), so [`crate::process_with_fragile`] needs one run.
pub(crate) fn chain(
    scores: &mut [f32],
    input_ids: &[i64],
    processors: &[Processor],
) -> Result<Vec<Fragile>, HfError> {
    let mut penalised = HashSet::new();
    let mut found = Vec::new();
    for p in processors {
        match p {
            Processor::TopK { top_k } => found.extend(check_top_k(scores, *top_k)),
            Processor::TopP { top_p } => {
                // The warper's own sort, checked and then cut (one sort, not two).
                let sorted = TopPSort::new(scores, *top_p);
                found.extend(check_top_p(&sorted, scores, *top_p));
                sorted.apply(scores);
                continue;
            }
            Processor::MinP { min_p } => {
                let probs = torch::softmax(scores);
                let top = torch::max(&probs);
                let keep = probs.iter().position(|&q| q == top);
                let scaled = (*min_p as f32) * top;
                let detail = format!("min_p {min_p} × top probability {top:e} = {scaled:e}");
                found.extend(threshold(
                    FragileKind::MinP,
                    &probs,
                    scaled,
                    |i| Some(i) != keep,
                    &detail,
                ));
            }
            Processor::Epsilon { epsilon } => {
                let probs = torch::softmax(scores);
                let top = torch::max(scores);
                let eps = *epsilon as f32;
                let detail = format!("epsilon_cutoff {eps:e}");
                found.extend(threshold(
                    FragileKind::Epsilon,
                    &probs,
                    eps,
                    |i| scores[i] < top,
                    &detail,
                ));
            }
            Processor::Eta { epsilon } => {
                let probs = torch::softmax(scores);
                let top = torch::max(scores);
                let eta = eta_threshold(scores, *epsilon);
                let detail = format!("eta threshold {eta:e} (eta_cutoff {epsilon})");
                found.extend(threshold(
                    FragileKind::Eta,
                    &probs,
                    eta,
                    |i| scores[i] < top,
                    &detail,
                ));
            }
            _ => {}
        }
        let before = matches!(p, Processor::RepetitionPenalty { .. }).then(|| scores.to_vec());
        p.apply(scores, input_ids)?;
        if let Some(before) = before {
            penalised
                .extend((0..scores.len()).filter(|&i| scores[i].to_bits() != before[i].to_bits()));
        }
    }
    for f in &mut found {
        f.penalised = f.tokens.iter().any(|t| penalised.contains(t));
        if f.penalised {
            f.detail
                .push_str("; the repetition penalty moved a logit here");
        }
    }
    Ok(found)
}

fn flag(kind: FragileKind, tokens: Vec<usize>, margin_ulps: u64, detail: String) -> Fragile {
    Fragile {
        kind,
        tokens,
        margin_ulps,
        penalised: false,
        detail,
    }
}

/// `TopKLogitsWarper`: the k-th and (k+1)-th largest scores within the ulps.
fn check_top_k(scores: &[f32], top_k: usize) -> Option<Fragile> {
    let k = top_k.max(1).min(scores.len());
    if k == 0 || k == scores.len() {
        return None;
    }
    let (kth, Some(next)) = kth_largest(scores, k) else {
        return None;
    };
    if next == f32::NEG_INFINITY {
        return None;
    }
    let margin = near(kth, next)?;
    let tokens: Vec<usize> = (0..scores.len())
        .filter(|&i| scores[i] >= next && scores[i] <= kth)
        .collect();
    let above = scores.iter().filter(|&&s| s > kth).count();
    let detail = if margin == 0 {
        format!(
            "{} tokens tie at the k-th score {kth} (k = {k}): transformers keeps all {}, \
             an engine keeping exactly k drops {}",
            tokens.len(),
            above + tokens.len(),
            above + tokens.len() - k
        )
    } else {
        format!("the k-th and (k+1)-th scores (k = {k}) are {margin} ulps apart: {kth} and {next}")
    };
    Some(flag(FragileKind::TopKTie, tokens, margin, detail))
}

/// `TopPLogitsWarper`: a cumulative mass within the ulps of `1 - p`, and a
/// tie across the cut.
fn check_top_p(sort: &TopPSort, scores: &[f32], top_p: f64) -> Vec<Fragile> {
    let (sorted, cum) = (&sort.sorted, &sort.cum);
    let threshold = sort.threshold;
    let last = sorted.len().saturating_sub(1);
    let mut by_margin: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
    for pos in 0..last {
        if let Some(margin) = sort.reports(pos) {
            by_margin
                .entry(margin)
                .or_default()
                .push(sort.token(pos, scores));
        }
    }
    let mut found: Vec<Fragile> = by_margin
        .into_iter()
        .map(|(margin, tokens)| {
            let detail = format!(
                "top_p {top_p}: an ascending f32 cumulative mass is {margin} ulps from \
                 float32(1 - p) = {threshold:e}",
            );
            flag(FragileKind::TopPCut, tokens, margin, detail)
        })
        .collect();
    // The last removed position, and whether the first kept one ties with it.
    let removed = (0..last).rev().find(|&pos| cum[pos] <= threshold);
    if let Some(pos) = removed {
        let score = sorted[pos];
        if score.is_finite() && sorted[pos + 1] == score {
            let tokens: Vec<usize> = (0..scores.len()).filter(|&i| scores[i] == score).collect();
            let detail = format!(
                "top_p {top_p}: {} tokens share the score {score} at the cut; the sort's order \
                 among them chose which are removed",
                tokens.len()
            );
            found.push(flag(FragileKind::TopPTie, tokens, 0, detail));
        }
    }
    found
}

/// A probability within the ulps of a threshold, for tokens the rule may
/// remove (`eligible`): one entry per distinct margin.
fn threshold(
    kind: FragileKind,
    probs: &[f32],
    limit: f32,
    eligible: impl Fn(usize) -> bool,
    what: &str,
) -> Vec<Fragile> {
    let mut by_margin: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
    for (i, &p) in probs.iter().enumerate() {
        if p > 0.0
            && eligible(i)
            && let Some(margin) = near(p, limit)
        {
            by_margin.entry(margin).or_default().push(i);
        }
    }
    by_margin
        .into_iter()
        .map(|(margin, tokens)| {
            let detail = format!(
                "{} token probabilities are {margin} ulps from {what}",
                tokens.len()
            );
            flag(kind, tokens, margin, detail)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(logits: &[f32], kwargs: serde_json::Value) -> Vec<Fragile> {
        let kwargs = kwargs.as_object().expect("object").clone();
        let params = crate::resolve(&kwargs, None).expect("kwargs");
        fragile(logits, &[], 0, &params).expect("fragile")
    }

    #[test]
    fn a_top_k_tie_is_flagged_with_every_tied_token() {
        // [3, 2, 2, 1], k = 2: ids 1 and 2 tie at the k-th score 2.
        let f = run(
            &[3.0, 2.0, 2.0, 1.0],
            json!({"do_sample": true, "top_k": 2}),
        );
        assert_eq!(f.len(), 1);
        assert_eq!(
            (f[0].kind, &f[0].tokens, f[0].margin_ulps),
            (FragileKind::TopKTie, &vec![1, 2], 0)
        );
        assert!(f[0].detail.contains("keeps all 3"), "{}", f[0].detail);
        // k = 3 cuts between 2 and 1: 2^22 ulps apart, not fragile.
        assert!(
            run(
                &[3.0, 2.0, 2.0, 1.0],
                json!({"do_sample": true, "top_k": 3})
            )
            .is_empty()
        );
    }

    #[test]
    fn a_near_tie_counts_its_ulps() {
        // 2 and the next float below it: 1 ulp (2^-22).
        let below = f32::from_bits(2.0f32.to_bits() - 1);
        let f = run(
            &[3.0, 2.0, below, 1.0],
            json!({"do_sample": true, "top_k": 2}),
        );
        assert_eq!(f.len(), 1);
        assert_eq!((&f[0].tokens, f[0].margin_ulps), (&vec![1, 2], 1));
    }

    #[test]
    fn min_p_on_its_threshold() {
        // logits ln 4, ln 2, ln 1, ln 1: probs 1/2, 1/4, 1/8, 1/8 (exact in
        // f32 up to the softmax's rounding); min_p 0.25 × 1/2 = 1/8: ids 2
        // and 3 sit on the threshold.
        let l = [4f32.ln(), 2f32.ln(), 0.0, 0.0];
        let f = run(&l, json!({"do_sample": true, "top_k": 0, "min_p": 0.25}));
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!((f[0].kind, &f[0].tokens), (FragileKind::MinP, &vec![2, 3]));
        assert!(f[0].margin_ulps <= 2, "{f:?}");
    }

    #[test]
    fn a_penalty_that_makes_a_tie_is_marked() {
        // 4 / 2 = 2 ties with id 1 at k = 2 once the penalty divides id 2.
        let params = crate::resolve(
            json!({"do_sample": true, "top_k": 2, "repetition_penalty": 2.0})
                .as_object()
                .expect("object"),
            None,
        )
        .expect("kwargs");
        let f = fragile(&[3.0, 2.0, 4.0, 1.0], &[2], 1, &params).expect("fragile");
        assert_eq!(f.len(), 1);
        assert_eq!((&f[0].tokens, f[0].penalised), (&vec![1, 2], true));
    }

    /// The radix order with the replay only where ties decide gives what
    /// torch's own order gives: the same cut and the same fragile report,
    /// on tie-heavy scores long enough for the introsort to reorder ties.
    fn same_as_torch_order(
        scores: &[f32],
        top_p: f64,
    ) -> Result<(), proptest::test_runner::TestCaseError> {
        let fast = TopPSort::new(scores, top_p);
        let torch = TopPSort::torch_order(scores, top_p);
        proptest::prop_assert_eq!(
            check_top_p(&fast, scores, top_p),
            check_top_p(&torch, scores, top_p)
        );
        let (mut a, mut b) = (scores.to_vec(), scores.to_vec());
        fast.apply(&mut a);
        torch.apply(&mut b);
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        proptest::prop_assert_eq!(bits(&a), bits(&b));
        Ok(())
    }

    proptest::proptest! {
        #[test]
        fn top_p_sort_is_torch_order_where_it_matters(
            ints in proptest::collection::vec(-6i8..6, 1..400),
            neg_inf in proptest::collection::vec(proptest::bool::weighted(0.2), 400),
            scale in 0.05f32..2.0,
            top_p in 0.01f64..0.999,
        ) {
            let scores: Vec<f32> = ints
                .iter()
                .zip(&neg_inf)
                .map(|(&x, &gone)| if gone { f32::NEG_INFINITY } else { x as f32 * scale })
                .collect();
            if scores.iter().any(|s| s.is_finite()) {
                same_as_torch_order(&scores, top_p)?;
            }
        }

        #[test]
        fn top_p_sort_is_torch_order_on_continuous_scores(
            scores in proptest::collection::vec(-8.0f32..8.0, 1..400),
            top_p in 0.01f64..0.999,
        ) {
            same_as_torch_order(&scores, top_p)?;
        }
    }

    #[test]
    fn greedy_and_clear_cuts_are_not_fragile() {
        assert!(run(&[3.0, 2.0, 2.0, 1.0], json!({"do_sample": false})).is_empty());
        assert!(
            run(
                &[3.0, 2.0, 1.0, 0.0],
                json!({"do_sample": true, "top_p": 0.9})
            )
            .is_empty()
        );
    }
}
