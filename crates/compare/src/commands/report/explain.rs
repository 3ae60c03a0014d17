//! Why two semantics differ, in words, and the fix when there is one.

use hf_sampling::GenerationParams;
use parity_core::Comparison;
use parity_core::fixture::{Fixture, Setting};
use parity_core::metrics::softmax_f64;

use super::Side;
use super::schema::Row;
use super::sides::{candle_setup, naive_candle};

/// The fix `translate` gives for the literal candle setup, in words: its
/// plain setup when that differs from the literal one (noting the exact one
/// when ties would still differ), else its exact setup with the closure.
pub(super) fn fix_for(side: Side, setting: &Setting, params: &GenerationParams) -> Option<String> {
    if side != Side::Candle {
        return None;
    }
    let t = candle_adapter::translate(params).ok()?;
    let naive = naive_candle(&setting.kwargs);
    match t.exact {
        // The literal setup is already translate's best: nothing to change.
        Some(exact) if exact == naive => None,
        Some(exact) if t.candle != naive && !t.plain_is_exact => Some(format!(
            "use {} (exact even with ties at the k-th logit: {})",
            candle_setup(&t.candle),
            candle_setup(&exact)
        )),
        Some(exact) => Some(format!("use {}", candle_setup(&exact))),
        None => None,
    }
}

/// Why two sides differ, and the fix when there is one. Each clause is a
/// rule the sides are known to disagree on, checked against this row's data;
/// the fallback says plainly what differs when no known rule applies.
pub(super) fn explain(
    fx: &Fixture,
    setting: &Setting,
    p: &GenerationParams,
    (l, r): (Side, Side),
    cmp: &Comparison,
    window: Option<usize>,
    row: &Row,
) -> (String, Option<String>) {
    let candle = [l, r].contains(&Side::Candle);
    let closure = [l, r].contains(&Side::CandleClosure);
    let spec = [l, r].contains(&Side::Spec);
    let other = if candle || closure {
        "candle"
    } else if spec {
        "the spec"
    } else {
        "the other side"
    };
    let top_k = p.top_k.filter(|&k| k != 0 && p.do_sample);
    let top_p = (p.do_sample && p.top_p < 1.0).then_some(p.top_p);
    let hf_kept = if l == Side::Hf {
        cmp.kept_left
    } else {
        cmp.kept_right
    };
    let sets_differ = !cmp.only_left.is_empty() || !cmp.only_right.is_empty();
    let mut why = Vec::new();
    if let Some(n) = window {
        let pen = row.penalty.as_ref();
        why.push(format!(
            "repeat window: candle penalises only the last {n} ids; {} ids that occur only earlier \
             ({} of them in the prompt) keep their logits (max |Δ logit| {:.3e})",
            pen.map_or(0, |x| x.missed_ids),
            pen.map_or(0, |x| x.missed_in_prompt),
            pen.map_or(0.0, |x| x.max_logit_diff),
        ));
    }
    if candle && !setting.kwargs.contains_key("top_k") && top_k == Some(50) {
        why.push(
            "default top-k 50: transformers adds top_k=50 when the kwargs don't set top_k; \
             the literal candle setup samples the whole vocabulary"
                .into(),
        );
    }
    let renormalisation = candle && top_k.is_some() && top_p.is_some();
    if let (true, Some(k), Some(pp)) = (renormalisation, top_k, top_p) {
        why.push(format!(
            "top-k then top-p: candle's TopKThenTopP compares p = {pp} with the raw mass of the \
             top {k} ({:.4}); transformers renormalises the top {k} first",
            top_k_mass(fx, p, k)
        ));
    }
    if let Some(k) = top_k
        && hf_kept > k
        && (candle || spec)
    {
        why.push(format!(
            "top-k tie: transformers keeps every token tied with the k-th ({hf_kept} for k = {k}); \
             {} keeps exactly {k}",
            if candle {
                "candle"
            } else {
                "the spec (smaller index first)"
            }
        ));
    }
    if top_p.is_some() && sets_differ && !renormalisation {
        let tied = cmp.only_left.iter().any(|a| {
            cmp.only_right
                .iter()
                .any(|b| fx.logits[a.id].to_bits() == fx.logits[b.id].to_bits())
        });
        why.push(if tied {
            format!(
                "top-p cut through tied logits: transformers keeps the tied tokens torch's sort \
                 leaves last, {other} the lower ids"
            )
        } else {
            format!(
                "top-p boundary: the cumulative mass lands on p within float rounding; transformers \
                 drops tokens whose ascending f32 cumulative mass is ≤ 1 − p, {other} keeps tokens \
                 until its own descending sum reaches p"
            )
        });
    }
    for (name, on) in [
        ("min-p", p.min_p.is_some()),
        ("typical", p.typical_p < 1.0),
        ("epsilon", 0.0 < p.epsilon_cutoff && p.epsilon_cutoff < 1.0),
        ("eta", 0.0 < p.eta_cutoff && p.eta_cutoff < 1.0),
    ] {
        if on && p.do_sample && (candle || closure) {
            why.push(format!("candle has no {name} sampling"));
        }
    }
    if why.is_empty() {
        why.push(if sets_differ {
            format!(
                "kept sets differ ({} tokens only {}, {} only {}) by no rule listed here",
                cmp.only_left.len(),
                l.name(),
                cmp.only_right.len(),
                r.name()
            )
        } else {
            format!(
                "same kept set, probabilities differ by up to {:.2e} (more than float rounding)",
                cmp.max_abs_diff
            )
        });
    }
    let fix = if window.is_some() {
        Some("pass the whole input_ids to apply_repeat_penalty".to_string())
    } else if candle {
        fix_for(Side::Candle, setting, p)
    } else {
        None
    };
    (why.join("; "), fix)
}

/// The raw (un-renormalised) probability mass of the k most likely tokens
/// after the penalty and temperature, as candle's TopKThenTopP measures it.
fn top_k_mass(fx: &Fixture, p: &GenerationParams, k: usize) -> f64 {
    let mut logits = fx.logits.clone();
    if p.repetition_penalty != 1.0 {
        hf_sampling::ops::repetition_penalty(&mut logits, &fx.input_ids, p.repetition_penalty);
    }
    let scaled: Vec<f32> = logits
        .iter()
        .map(|&x| (f64::from(x) / p.temperature) as f32)
        .collect();
    let mut probs = softmax_f64(&scaled);
    probs.sort_by(|a, b| b.total_cmp(a));
    probs.iter().take(k).sum()
}
