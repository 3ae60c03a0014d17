//! The default report's work: `compare report` with default options (every
//! bundled SmolLM2 fixture on the seed article's six settings, the top-k tie
//! case, real candle draws for every candle row) as one call of
//! `comparison::report::run`, and the same with `--draws 0`, which leaves
//! out the real draws and nothing else.
//!
//! Rows whose real candle processor sees the same inputs share one real
//! stream per process (`CandleRun::verify_shared`); each iteration forgets
//! the streams first, so every iteration draws them all as one
//! `compare report` does.
//!
//! `cargo bench --release -p compare --bench report` (criterion's minimum of
//! 10 samples: about two minutes on two idle cores); docs/performance.md
//! holds the figures and the hyperfine timing of the binary.

use std::hint::black_box;
use std::time::Duration;

use comparison::Progress;
use comparison::cli::ReportArgs;
use criterion::{Criterion, criterion_group, criterion_main};

fn bench(c: &mut Criterion) {
    let engines = compare::registry::engines(None, &compare::registry::Options::default())
        .expect("the registry builds");
    let mut group = c.benchmark_group("report");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(100))
        .measurement_time(Duration::from_secs(10));
    for (name, draws) in [
        ("default", ReportArgs::default().draws),
        ("draws0", parity_core::DrawCount::Exactly(0)),
    ] {
        let args = ReportArgs {
            draws,
            ..ReportArgs::default()
        };
        group.bench_function(name, |b| {
            b.iter(|| {
                candle_adapter::forget_shared_streams();
                let outcome = comparison::report::run(&args, &engines, &mut Progress::hidden())
                    .expect("the default report runs");
                black_box(outcome.report.summary.rows)
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
