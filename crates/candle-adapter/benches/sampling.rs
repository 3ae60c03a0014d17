//! Per-token sampling time: `hf_sampling::HfSampler` (transformers' exact
//! distribution) beside candle's real `LogitsProcessor` on the same logits, in
//! the same run, plus one plain argmax pass as the floor.
//!
//! Logits: `bench_support::heavy_tailed_logits(V, 0)` (normal bulk + Zipf head,
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
//! `target/criterion/V<vocab>/<setting>_{ours,ours_baseline,candle}/new/estimates.json`;
//! docs/performance.md holds the table, machine and date.

use std::hint::black_box;
use std::time::Duration;

use bench_support::{argmax_floor, bench_cases, bench_context, heavy_tailed_logits};
use candle_adapter::bench::CandleBench;
use criterion::{Criterion, criterion_group, criterion_main};
use hf_sampling::{Dispatch, HfSampler};
use rand::SeedableRng;
use rand::rngs::StdRng;

const VOCABS: [usize; 4] = [32_000, 49_152, 151_936, 262_144];

fn bench(c: &mut Criterion) {
    for v in VOCABS {
        let logits = heavy_tailed_logits(v, 0);
        let ctx = bench_context(v);
        let ctx_u32: Vec<u32> = ctx.iter().map(|&i| i as u32).collect();
        let mut group = c.benchmark_group(format!("V{v}"));
        group
            .warm_up_time(Duration::from_millis(300))
            .measurement_time(Duration::from_millis(1500))
            .sample_size(20);
        group.bench_function("argmax", |b| b.iter(|| argmax_floor(black_box(&logits))));
        for case in bench_cases() {
            let context: &[i64] = if case.penalty { &ctx } else { &[] };
            // Ours at the CPU's level (`ours`) and at the baseline build's
            // (`ours_baseline`), side by side.
            for (name, dispatch) in [
                ("ours", Dispatch::Native),
                ("ours_baseline", Dispatch::Baseline),
            ] {
                let mut sampler = HfSampler::new(&case.ours)
                    .expect("valid parameters")
                    .with_dispatch(dispatch);
                let mut rng = StdRng::seed_from_u64(1);
                group.bench_function(format!("{}/{name}", case.id), |b| {
                    b.iter(|| {
                        sampler
                            .sample(black_box(&logits), context, &mut rng)
                            .expect("valid logits")
                    })
                });
            }
            // candle's real LogitsProcessor (after the real apply_repeat_penalty
            // for the penalty case), on a tensor built once.

            let mut candle =
                CandleBench::literal(1, &case.kwargs, &logits, &ctx_u32).expect("candle processor");
            group.bench_function(format!("{}/candle", case.id), |b| {
                b.iter(|| candle.sample().expect("sample"))
            });
        }
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
