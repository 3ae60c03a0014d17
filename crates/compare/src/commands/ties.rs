//! `compare ties`: how each semantics breaks a top-k tie, on logits the user
//! gives (default [3, 2, 2, 1], k = 2): transformers keeps every token tied
//! with the k-th, candle exactly k (whichever `select_nth_unstable_by` leaves),
//! the spec exactly k with the smaller index first; then every semantics of
//! the registry on `generate(do_sample=True, top_k=k, temperature=1.0)`, each as its own
//! module maps those kwargs (the engines' rules live there, not here).

use std::io::Write;

use anyhow::Context;
use candle_adapter::{CandleParams, CandleRun, CandleSampling};
use serde_json::{Map, Value, json};

use parity_core::Vocab;
use parity_core::record::Logits;
use parity_core::semantics::{Context as Ids, Distribution};

use super::report::text_fields;
use crate::cli::{Format, TiesArgs};

/// Prints the three kept sets, candle's real draw counts and the probabilities.
pub fn run(args: &TiesArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    let logits = &args.logits;
    if logits.is_empty() {
        anyhow::bail!("--logits must not be empty");
    }
    if args.k == 0 {
        anyhow::bail!("--k must be at least 1 (candle refuses k = 0)");
    }
    let mut kwargs = Map::new();
    kwargs.insert("do_sample".into(), Value::Bool(true));
    kwargs.insert("top_k".into(), args.k.into());
    // Explicit, though transformers' default: a literal port passes it, and
    // engines whose temperature is otherwise unset (mistral.rs) go greedy.
    kwargs.insert("temperature".into(), 1.0.into());
    let params = hf_sampling::resolve(&kwargs, None)?;
    let hf = hf_sampling::process(logits, &[], &params)?;

    let cp = CandleParams::new(CandleSampling::TopK {
        k: args.k,
        temperature: 1.0,
    });
    let run = CandleRun::new(logits, &[], &cp).context("candle")?;
    // One pass of real draws, each checked against the replay; the counts
    // come from the same tokens.
    let (replay, real) = run.replay(args.seed, args.draws)?;
    let counts = candle_adapter::stats::counts(logits.len(), &real);
    let outside_hf = (0..counts.len())
        .filter(|i| !hf.kept.contains(i))
        .map(|i| counts[i])
        .sum::<u64>() as f64
        / args.draws.max(1) as f64;
    let candle = run.mirrored();

    let spec_params = spec_sampler::Params {
        temperature: spec_sampler::Temperature::new(1.0)?,
        top_k: spec_sampler::TopK::new(i64::try_from(args.k).unwrap_or(i64::MAX)),
        top_p: spec_sampler::TopP::new(1.0)?,
        repetition_penalty: spec_sampler::RepetitionPenalty::new(1.0)?,
        u: spec_sampler::U::new(0.5)?,
    };
    let spec_input = spec_sampler::Input::from_parts(
        logits.iter().map(|&l| f64::from(l)).collect(),
        Vec::new(),
        spec_params,
    )?;
    let spec = spec_sampler::distribution(&spec_input);
    let everyone = every_semantics(logits, &kwargs);
    let vocab = args.vocab.as_deref().map(Vocab::load).transpose()?;
    // Kept ids as people read them: `[0, 1]`, or with a vocabulary
    // `["<|endoftext|>" (0), "<|im_start|>" (1)]`.
    let kept = |ids: &[usize]| match &vocab {
        None => format!("{ids:?}"),
        Some(v) => {
            let labels: Vec<String> = ids.iter().map(|&i| v.label(i)).collect();
            format!("[{}]", labels.join(", "))
        }
    };
    let tokens = vocab.as_ref().map(|v| {
        (0..logits.len())
            .map(|id| {
                let (text, bytes) = text_fields(v.piece(id));
                json!({"id": id, "token": v.token(id), "text": text, "bytes": bytes})
            })
            .collect::<Vec<_>>()
    });

    match args.format {
        Format::Json => {
            let doc = json!({
                "schema": 1,
                "logits": logits,
                "k": args.k,
                "hf": { "kept": hf.kept, "probs": hf.probs },
                "candle": {
                    "kept": candle.kept,
                    "probs": candle.probs,
                    "draws": args.draws,
                    "counts": counts,
                    "replay_agree": replay.as_ref().map(|r| r.agreed),
                    "outside_hf": outside_hf,
                },
                "spec": { "kept": spec.kept(), "probs": spec.probs() },
                "semantics": everyone.iter().map(|(name, d)| match d {
                    Ok(d) => json!({"name": name, "kept": d.kept(), "probs": d.probs()}),
                    Err(e) => json!({"name": name, "error": e}),
                }).collect::<Vec<_>>(),
                "tokens": tokens,
            });
            serde_json::to_writer_pretty(&mut *out, &doc)?;
            writeln!(out)?;
        }
        Format::Text => {
            writeln!(out, "top-k with k = {} on logits {:?}", args.k, logits)?;
            writeln!(
                out,
                "  transformers keeps {}  probs {:?}",
                kept(&hf.kept),
                hf.probs
            )?;
            writeln!(
                out,
                "  candle       keeps {}  probs {:?}",
                kept(&candle.kept.iter().map(|&i| i as usize).collect::<Vec<_>>()),
                round(&candle.probs)
            )?;
            writeln!(
                out,
                "               {} real draws (seed {}): counts {:?}, {} replayed exactly",
                args.draws,
                args.seed,
                counts,
                replay.as_ref().map_or(0, |r| r.agreed)
            )?;
            writeln!(
                out,
                "  spec         keeps {}  probs {:?}",
                kept(spec.kept()),
                round(spec.probs())
            )?;
            writeln!(
                out,
                "every semantics on generate(do_sample=True, top_k={}, temperature=1.0), after a one-token prompt:",
                args.k
            )?;
            for (name, d) in &everyone {
                match d {
                    Ok(d) => writeln!(out, "  {name:<18} keeps {}", kept(d.kept()))?,
                    Err(e) => writeln!(out, "  {name:<18} fails: {e}")?,
                }
            }
        }
    }
    Ok(())
}

/// Every registry semantics that maps `kwargs`, with its distribution on
/// `logits` or its error, in registry order. The context is a one-token
/// prompt (id 0): mistral.rs refuses an empty one, and with no penalty set
/// no semantics reads it.
fn every_semantics(
    logits: &[f32],
    kwargs: &Map<String, Value>,
) -> Vec<(&'static str, Result<Distribution, String>)> {
    let logits = Logits::from_f32(logits);
    let Ok(context) = Ids::new(&[0], None) else {
        return Vec::new();
    };
    crate::registry::all(None)
        .iter()
        .filter_map(|s| {
            let prepared = s.prepare_generate(kwargs)?;
            let d = prepared
                .and_then(|p| p.distribution(&logits, &context))
                .map_err(|e| e.to_string());
            Some((s.info().name, d))
        })
        .collect()
}

fn round(p: &[f64]) -> Vec<f64> {
    p.iter().map(|x| (x * 1e6).round() / 1e6).collect()
}
