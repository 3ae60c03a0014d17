//! `compare ties`: how each semantics breaks a top-k tie, on logits the user
//! gives (default [3, 2, 2, 1], k = 2). Every semantics of the registry runs
//! `generate(do_sample=True, top_k=k, temperature=1.0)` as its own module
//! maps those kwargs ([`parity_core::Semantics::from_generate`]); where an
//! engine can be run here ([`parity_core::Semantics::check_draws`]), its real
//! draws are counted and replayed. The engines' rules live in their modules,
//! not here: a threshold keeps every token tied with the k-th, a selection
//! keeps exactly k and its own order decides which tied token goes.

use std::io::Write;

use anyhow::bail;
use serde::Serialize;
use serde_json::{Map, Value};

use parity_core::record::Logits;
use parity_core::semantics::Context as Ids;
use parity_core::{AnySemantics, Distribution, DrawCheck, DrawCount, DrawOptions, Vocab};

use super::report::{SCHEMA, text_fields};
use crate::Engines;
use crate::cli::{Format, TiesArgs};

/// One semantics on the tie.
struct Answer {
    name: &'static str,
    outcome: Result<(Distribution, Option<DrawCheck>), String>,
}

/// `compare ties --format json` (docs/report-schema.md); fields in
/// alphabetical order, as the schema lists them.
#[derive(Serialize, schemars::JsonSchema)]
struct Document<'a> {
    k: usize,
    kwargs: &'a Map<String, Value>,
    logits: &'a [f32],
    schema: u32,
    semantics: Vec<Entry<'a>>,
    tokens: Option<Vec<Token<'a>>>,
}

/// One semantics' answer, or why it has none.
#[derive(Serialize, schemars::JsonSchema)]
#[serde(untagged)]
enum Entry<'a> {
    Answer {
        draws: Option<Draws<'a>>,
        kept: &'a [usize],
        name: &'a str,
        probs: &'a [f64],
    },
    Error {
        error: &'a str,
        name: &'a str,
    },
}

/// The real draws of an engine run here.
#[derive(Serialize, schemars::JsonSchema)]
struct Draws<'a> {
    counts: &'a [u64],
    n: usize,
    p_value: Option<f64>,
    replay_agree: Option<usize>,
    seed: u64,
}

/// A vocabulary entry.
#[derive(Serialize, schemars::JsonSchema)]
struct Token<'a> {
    bytes: Option<Vec<u8>>,
    id: usize,
    text: Option<String>,
    token: Option<&'a str>,
}

/// A resolved `compare ties`: the kwargs every semantics runs and the
/// vocabulary, checked against the logits.
struct Plan {
    kwargs: Map<String, Value>,
    vocab: Option<Vocab>,
}

impl Plan {
    fn resolve(args: &TiesArgs) -> anyhow::Result<Self> {
        if args.logits.is_empty() {
            bail!("--logits must not be empty");
        }
        if args.k == 0 {
            bail!("--k must be at least 1 (top_k=0 turns top-k off in transformers)");
        }
        let mut kwargs = Map::new();
        kwargs.insert("do_sample".into(), Value::Bool(true));
        kwargs.insert("top_k".into(), args.k.into());
        // Explicit, though transformers' default: a literal port passes it,
        // and engines whose temperature is otherwise unset may go greedy.
        kwargs.insert("temperature".into(), 1.0.into());
        let vocab = args.vocab.load()?;
        args.vocab
            .check(vocab.as_ref(), args.logits.len())
            .map_err(anyhow::Error::msg)?;
        Ok(Self { kwargs, vocab })
    }
}

/// Prints each semantics' kept set and probabilities, with real draw counts
/// where the engine can be run.
pub fn run(args: &TiesArgs, engines: &Engines, out: &mut dyn Write) -> anyhow::Result<()> {
    let Plan { kwargs, vocab } = Plan::resolve(args)?;
    let logits = &args.logits;
    let answers = every_semantics(logits, &kwargs, args, &engines.semantics);
    // Kept ids as people read them: `[0, 1]`, or with a vocabulary
    // `["<|endoftext|>" (0), "<|im_start|>" (1)]`.
    let kept = |ids: &[usize]| match &vocab {
        None => format!("{ids:?}"),
        Some(v) => {
            let labels: Vec<String> = ids.iter().map(|&i| v.label(i)).collect();
            format!("[{}]", labels.join(", "))
        }
    };
    match args.format {
        Format::Json => {
            let tokens = vocab.as_ref().map(|v| {
                (0..logits.len())
                    .map(|id| {
                        let (text, bytes) = text_fields(v.piece(id));
                        Token {
                            bytes,
                            id,
                            text,
                            token: v.token(id),
                        }
                    })
                    .collect::<Vec<_>>()
            });
            let semantics: Vec<Entry<'_>> = answers
                .iter()
                .map(|a| match &a.outcome {
                    Ok((d, draws)) => Entry::Answer {
                        draws: draws.as_ref().map(|c| Draws {
                            counts: &c.counts,
                            n: c.n,
                            p_value: c.p_value,
                            replay_agree: c.replay_agree,
                            seed: args.seed,
                        }),
                        kept: d.kept(),
                        name: a.name,
                        probs: d.probs(),
                    },
                    Err(e) => Entry::Error {
                        error: e,
                        name: a.name,
                    },
                })
                .collect();
            let doc = Document {
                k: args.k,
                kwargs: &kwargs,
                logits,
                schema: SCHEMA,
                semantics,
                tokens,
            };
            serde_json::to_writer_pretty(&mut *out, &doc)?;
            writeln!(out)?;
        }
        Format::Text => {
            crate::report::text::wrapped(
                out,
                crate::report::text::wrap_width(),
                "",
                2,
                &format!(
                    "top-k with k = {} on logits {:?}: every semantics on \
                     generate(do_sample=True, top_k={}, temperature=1.0), after a one-token \
                     prompt",
                    args.k, logits, args.k
                ),
            )?;
            let width = answers.iter().map(|a| a.name.len()).max().unwrap_or(0);
            for a in &answers {
                match &a.outcome {
                    Ok((d, draws)) => {
                        writeln!(
                            out,
                            "  {:<width$} keeps {}  probs {:?}",
                            a.name,
                            kept(d.kept()),
                            round(d.probs())
                        )?;
                        if let Some(c) = draws {
                            writeln!(
                                out,
                                "  {:<width$} {} real draws (seed {}): counts {:?}, {} replayed exactly",
                                "",
                                c.n,
                                args.seed,
                                c.counts,
                                c.replay_agree.map_or("none".to_string(), |n| n.to_string())
                            )?;
                        }
                    }
                    Err(e) => writeln!(out, "  {:<width$} fails: {e}", a.name)?,
                }
            }
        }
    }
    Ok(())
}

/// Every registry semantics that maps `kwargs`, with its distribution on
/// `logits` and its engine's real draws (one stream from `--seed`), or its
/// error, in registry order. The context is a one-token prompt (id 0): some
/// engines refuse an empty one, and with no penalty set none reads it.
fn every_semantics(
    logits: &[f32],
    kwargs: &Map<String, Value>,
    args: &TiesArgs,
    registry: &[Box<dyn AnySemantics>],
) -> Vec<Answer> {
    let logits = Logits::from_f32(logits);
    let Ok(context) = Ids::new(&[0], None) else {
        return Vec::new();
    };
    registry
        .iter()
        .filter_map(|s| {
            let prepared = s.prepare_generate(kwargs)?;
            let outcome = prepared
                .and_then(|p| {
                    let d = p.distribution(&logits, &context)?;
                    let options = DrawOptions {
                        seed: args.seed,
                        draws: DrawCount::Exactly(args.draws),
                        other_kept: d.kept(),
                        parallel: false,
                    };
                    let draws = match args.draws {
                        0 => None,
                        _ => p.check_draws(&logits, &context, &options).transpose()?,
                    };
                    Ok((d, draws))
                })
                .map_err(|e| e.to_string());
            Some(Answer {
                name: s.info().name,
                outcome,
            })
        })
        .collect()
}

fn round(p: &[f64]) -> Vec<f64> {
    p.iter().map(|x| (x * 1e6).round() / 1e6).collect()
}

/// The JSON Schema of this command's `--format json` document
/// ([`crate::json_schema`]).
pub(crate) fn json_schema() -> schemars::Schema {
    schemars::schema_for!(Document<'static>)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        ties: TiesArgs,
    }

    fn resolve(argv: &[&str]) -> anyhow::Result<Plan> {
        let argv = std::iter::once("ties").chain(argv.iter().copied());
        Plan::resolve(&Cli::try_parse_from(argv).expect("valid arguments").ties)
    }

    #[test]
    fn the_plan_is_transformers_top_k_at_temperature_1() {
        let plan = resolve(&["--logits", "2,1,1,0", "--k", "2"]).expect("plan");
        assert_eq!(
            serde_json::Value::Object(plan.kwargs),
            serde_json::json!({"do_sample": true, "top_k": 2, "temperature": 1.0})
        );
        assert!(plan.vocab.is_none());
    }

    #[test]
    fn k_0_and_a_vocabulary_of_another_size_are_refused_before_any_semantics_runs() {
        let e = resolve(&["--logits", "1,1,0", "--k", "0"])
            .err()
            .expect("refused");
        assert_eq!(
            e.to_string(),
            "--k must be at least 1 (top_k=0 turns top-k off in transformers)"
        );
        let dir = parity_core::fixture::bundled_dir().expect("bundled fixtures");
        let vocab = dir.join("smollm2/vocab.json").display().to_string();
        let e = resolve(&["--logits", "2,1,1,0", "--vocab", &vocab])
            .err()
            .expect("refused");
        assert!(
            e.to_string().ends_with(
                "49152 tokens, but there are 4 logits (the vocabulary of another model?)"
            ),
            "{e}"
        );
    }
}
