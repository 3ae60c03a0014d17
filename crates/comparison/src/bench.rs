//! `compare bench`: a quick per-token timing of `hf_sampling::HfSampler`
//! (transformers' exact distribution) beside a real engine's sampler (the
//! registry's bench engine ([`crate::Engines::bench`]), set up as a literal port of
//! the same kwargs) on the same synthetic heavy-tailed logits, on the user's
//! machine.
//!
//! Each (vocabulary, setting) pair is timed call by call, `reps` times per
//! side after a short warm-up; the medians are reported. The criterion
//! benchmark (docs/performance.md) is the careful version.
//!
//! JSON: one document `{"schema": 2, "dispatch", "engine", "rows": [{"vocab",
//! "setting", "ours_us", "engine_us", "ratio"}]}` with `ratio = engine_us /
//! ours_us` and `dispatch` the SIMD level our sampler ran at (`"x86-64-v3"`
//! or `"baseline"`, `--dispatch`). The `argmax` row times one plain
//! first-argmax pass (ours, the baseline build's) against the engine's
//! greedy setup: the floor every setting is measured against.

use std::hint::black_box;
use std::time::Instant;

use anyhow::Context as _;
use bench_support::{argmax_floor, bench_cases, bench_context, heavy_tailed_logits};
use hf_sampling::HfSampler;
use rand::SeedableRng;
use rand::rngs::StdRng;
use serde::Serialize;
use serde_json::Map;

use super::report::SCHEMA;
use crate::BenchEngine;

use crate::cli::{BenchArgs, Format};

/// Vocabulary sizes timed when none is given.
pub(crate) const DEFAULT_VOCABS: [usize; 4] = [32_000, 49_152, 151_936, 262_144];

/// One row of the report.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub(crate) struct BenchRow {
    /// Vocabulary size.
    pub vocab: usize,
    /// Setting id (`t07`, `k40`, `p09`, `k40p09`, `minp005`, `rep13_ctx1k`, `argmax`).
    pub setting: String,
    /// Median microseconds per token, ours.
    pub ours_us: f64,
    /// Median microseconds per token, the engine.
    pub engine_us: f64,
    /// `engine_us / ours_us`.
    pub ratio: f64,
}

#[derive(Serialize, schemars::JsonSchema)]
struct Report<'a> {
    schema: u32,
    dispatch: &'static str,
    engine: &'static str,
    rows: &'a [BenchRow],
}

fn median_us(mut f: impl FnMut() -> anyhow::Result<()>, reps: usize) -> anyhow::Result<f64> {
    for _ in 0..3 {
        f()?;
    }
    let mut times = Vec::with_capacity(reps);
    for _ in 0..reps {
        let t = Instant::now();
        f()?;
        times.push(t.elapsed().as_secs_f64() * 1e6);
    }
    times.sort_by(f64::total_cmp);
    Ok(times[times.len() / 2])
}

/// Time every setting at every vocabulary size.
pub(crate) fn measure(args: &BenchArgs, engine: &BenchEngine) -> anyhow::Result<Vec<BenchRow>> {
    let (bench_step, name) = (engine.step, engine.name);
    let vocabs: &[usize] = if args.vocab.is_empty() {
        &DEFAULT_VOCABS
    } else {
        &args.vocab
    };
    let reps = args.reps.max(1);
    let dispatch = args.dispatch;
    let mut rows = Vec::new();
    for &v in vocabs {
        anyhow::ensure!(v >= 2, "--vocab {v}: needs at least 2 tokens");
        let logits = heavy_tailed_logits(v, 0);
        let ctx = bench_context(v);
        let ctx_u32: Vec<u32> = ctx.iter().map(|&i| i as u32).collect();
        let row = |setting: &str, ours_us: f64, engine_us: f64| BenchRow {
            vocab: v,
            setting: setting.to_owned(),
            ours_us,
            engine_us,
            ratio: engine_us / ours_us,
        };

        let mut engine = bench_step(&Map::new(), &logits, &ctx_u32)?;
        let ours_us = median_us(
            || {
                black_box(argmax_floor(black_box(&logits)));
                Ok(())
            },
            reps,
        )?;
        let engine_us = median_us(|| engine().map(|_| ()), reps)?;
        rows.push(row("argmax", ours_us, engine_us));

        for case in bench_cases() {
            let (id, penalty) = (case.id, case.penalty);
            let mut sampler = HfSampler::new(&case.ours)?.with_dispatch(dispatch);
            let mut rng = StdRng::seed_from_u64(1);
            let context: &[i64] = if penalty { &ctx } else { &[] };
            let ours_us = median_us(
                || {
                    black_box(sampler.sample(black_box(&logits), context, &mut rng)?);
                    Ok(())
                },
                reps,
            )
            .with_context(|| format!("our sampler, setting {id}, V = {v}"))?;
            let mut step = bench_step(&case.kwargs, &logits, &ctx_u32)?;
            let engine_us = median_us(|| step().map(|_| ()), reps)
                .with_context(|| format!("{name}, setting {id}, V = {v}"))?;
            rows.push(row(id, ours_us, engine_us));
        }
    }
    Ok(rows)
}

/// Run `compare bench`: measure, then write the table or the JSON document
/// (the level our sampler ran at is named on stderr as well).
pub fn run(
    args: &BenchArgs,
    engine: &BenchEngine,
    out: &mut dyn std::io::Write,
    err: &mut dyn std::io::Write,
) -> anyhow::Result<()> {
    let level = args.dispatch.level();
    writeln!(err, "compare bench: our sampler runs at {level}")?;
    let rows = measure(args, engine)?;
    write_rows(&rows, level, engine.name, args.format, out)
}

fn write_rows(
    rows: &[BenchRow],
    dispatch: &'static str,
    engine: &'static str,
    format: Format,
    out: &mut dyn std::io::Write,
) -> anyhow::Result<()> {
    match format {
        Format::Json => {
            let report = Report {
                schema: SCHEMA,
                dispatch,
                engine,
                rows,
            };
            serde_json::to_writer(&mut *out, &report)?;
            writeln!(out)?;
        }
        Format::Text => {
            writeln!(
                out,
                "{:>8}  {:<12} {:>11} {:>11} {:>8}",
                "vocab",
                "setting",
                "ours µs",
                format!("{engine} µs"),
                "ratio"
            )?;
            for r in rows {
                writeln!(
                    out,
                    "{:>8}  {:<12} {:>11.1} {:>11.1} {:>7.1}×",
                    r.vocab, r.setting, r.ours_us, r.engine_us, r.ratio
                )?;
            }
        }
    }
    Ok(())
}

/// The JSON Schema of this command's `--format json` document
/// ([`crate::json_schema`]).
pub(crate) fn json_schema() -> schemars::Schema {
    schemars::schema_for!(Report<'static>)
}
