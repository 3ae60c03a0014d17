//! Per-token sampling time: `hf_sampling::HfSampler` (transformers' exact
//! distribution) beside candle's real `LogitsProcessor` on the same logits, in
//! the same run, plus one plain argmax pass as the floor.
//!
//! Logits: `hf_sampling::heavy_tailed_logits(V, 0)` (normal bulk + Zipf head,
//! shaped like SmolLM2's). Settings and their candle counterparts:
//!
//! | id            | ours (transformers)          | candle `Sampling`                  |
//! |---------------|------------------------------|------------------------------------|
//! | `t07`         | temperature 0.7              | `All { 0.7 }`                      |
//! | `k40`         | top-k 40                     | `TopK { 40, 1.0 }`                 |
//! | `p09`         | top-p 0.9                    | `TopP { 0.9, 1.0 }`                |
//! | `k40p09`      | top-k 40, top-p 0.9          | `TopKThenTopP { 40, 0.9, 1.0 }`    |
//! | `minp005`     | min-p 0.05                   | `All { 1.0 }` (candle has no min-p)|
//! | `rep13_ctx1k` | penalty 1.3, 1,000-id context| `apply_repeat_penalty` + `All {1.0}`|
//!
//! `cargo bench -p candle-adapter --bench sampling` (short measurement times).
//! Criterion's medians land in
//! `target/criterion/V<vocab>/<setting>_{ours,candle}/new/estimates.json`;
//! docs/performance.md holds the table, machine and date.

use std::hint::black_box;
use std::time::Duration;

use candle_core::{Device, Tensor};
use candle_transformers::generation::{LogitsProcessor, Sampling};
use criterion::{Criterion, criterion_group, criterion_main};
use hf_sampling::{GenerationParams, HfSampler, heavy_tailed_logits};
use rand::SeedableRng;
use rand::rngs::StdRng;

const VOCABS: [usize; 4] = [32_000, 49_152, 151_936, 262_144];

fn ours(f: impl FnOnce(&mut GenerationParams)) -> GenerationParams {
    let mut p = GenerationParams {
        do_sample: true,
        top_k: None,
        ..GenerationParams::default()
    };
    f(&mut p);
    p
}

/// The benchmark settings: (id, our parameters, candle's sampling, penalty context?).
pub fn settings() -> Vec<(&'static str, GenerationParams, Sampling, bool)> {
    vec![
        (
            "t07",
            ours(|p| p.temperature = 0.7),
            Sampling::All { temperature: 0.7 },
            false,
        ),
        (
            "k40",
            ours(|p| p.top_k = Some(40)),
            Sampling::TopK {
                k: 40,
                temperature: 1.0,
            },
            false,
        ),
        (
            "p09",
            ours(|p| p.top_p = 0.9),
            Sampling::TopP {
                p: 0.9,
                temperature: 1.0,
            },
            false,
        ),
        (
            "k40p09",
            ours(|p| {
                p.top_k = Some(40);
                p.top_p = 0.9;
            }),
            Sampling::TopKThenTopP {
                k: 40,
                p: 0.9,
                temperature: 1.0,
            },
            false,
        ),
        (
            "minp005",
            ours(|p| p.min_p = Some(0.05)),
            Sampling::All { temperature: 1.0 },
            false,
        ),
        (
            "rep13_ctx1k",
            ours(|p| p.repetition_penalty = 1.3),
            Sampling::All { temperature: 1.0 },
            true,
        ),
    ]
}

/// One argmax over the logits, vectorised: an 8-lane max, then the first
/// index holding it (the floor any sampler pays to read the logits).
fn argmax_first(y: &[f32]) -> usize {
    let mut m = [f32::NEG_INFINITY; 8];
    let chunks = y.chunks_exact(8);
    let rest = chunks.remainder();
    for c in chunks {
        for l in 0..8 {
            m[l] = if c[l] > m[l] { c[l] } else { m[l] };
        }
    }
    let best = m
        .iter()
        .chain(rest)
        .fold(f32::NEG_INFINITY, |a, &b| a.max(b));
    y.iter().position(|&x| x == best).unwrap_or(0)
}

fn bench(c: &mut Criterion) {
    for v in VOCABS {
        let logits = heavy_tailed_logits(v, 0);
        let tensor = Tensor::new(logits.as_slice(), &Device::Cpu).expect("tensor");
        let ctx: Vec<i64> = (0..1000).map(|i| (i * 7919 % v) as i64).collect();
        let ctx_u32: Vec<u32> = ctx.iter().map(|&i| i as u32).collect();
        let mut group = c.benchmark_group(format!("V{v}"));
        group
            .warm_up_time(Duration::from_millis(300))
            .measurement_time(Duration::from_millis(1500))
            .sample_size(20);
        group.bench_function("argmax", |b| b.iter(|| argmax_first(black_box(&logits))));
        for (id, params, sampling, penalty) in settings() {
            let mut sampler = HfSampler::new(&params).expect("valid parameters");
            let mut rng = StdRng::seed_from_u64(1);
            let context: &[i64] = if penalty { &ctx } else { &[] };
            group.bench_function(format!("{id}/ours"), |b| {
                b.iter(|| {
                    sampler
                        .sample(black_box(&logits), context, &mut rng)
                        .expect("valid logits")
                })
            });
            let mut lp = LogitsProcessor::from_sampling(1, sampling);
            group.bench_function(format!("{id}/candle"), |b| {
                b.iter(|| {
                    if penalty {
                        let t = candle_transformers::utils::apply_repeat_penalty(
                            black_box(&tensor),
                            1.3,
                            &ctx_u32,
                        )
                        .expect("penalty");
                        lp.sample(&t).expect("sample")
                    } else {
                        lp.sample(black_box(&tensor)).expect("sample")
                    }
                })
            });
        }
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
