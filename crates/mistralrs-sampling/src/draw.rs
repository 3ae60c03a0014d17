//! The engine's draws, replayed with the real generator and the real
//! `WeightedIndex`.
//!
//! mistral.rs keeps one `Arc<Mutex<Isaac64Rng>>` per engine, made with
//! `Isaac64Rng::seed_from_u64(SEED)` and `const SEED: u64 = 0`
//! (`mistralrs-core/src/engine/mod.rs:110, :469` at v0.9.2; the same at
//! v0.9.1), and hands it to every `Sampler::sample` call of every request,
//! in the order the engine runs them. `sample_multinomial` draws with
//! `WeightedIndex::new(weights).sample(rng)` (rand 0.9): for f32 weights
//! that is one `Uniform<f32>` sample, one `next_u32` of the generator
//! (rand 0.9's `UniformFloat::sample`). An argmax takes none. So "the
//! engine's generator after N earlier draws" is `seed_from_u64(0)` with N
//! `next_u32` calls made, whatever the earlier requests were.
//!
//! A freshly started `mistralrs-server` has made one: `MistralRs::new`
//! sends a dummy completion request ("hello", `max_len: Some(1)`,
//! `SamplingParams::deterministic()`, i.e. top_k 1 and no temperature,
//! which `add_request.rs` turns into T = 1.0, so it samples one token
//! through `WeightedIndex`) before serving (`mistralrs-core/src/lib.rs:1604-1676`
//! at v0.9.2; it is skipped on a single-threaded tokio runtime, for a
//! distributed daemon, a UQFF write, or a non-text model, and draws nothing
//! if the model's generation config makes it greedy). The server's `--seed`
//! seeds candle's device (`device.set_seed`), not this generator.
//!
//! rand_isaac 0.4 and rand 0.9 are the crates mistral.rs uses (its
//! Cargo.lock: rand 0.9.4, rand_isaac 0.4.0); the draws replay the
//! recorded ones token for token (`tests/it/replay.rs`).

use parity_core::Error;
use rand::RngCore;
use rand::SeedableRng;
use rand::distr::Distribution;
use rand::distr::weighted::WeightedIndex;
use rand_isaac::Isaac64Rng;

/// `SEED` of `engine/mod.rs`.
const ENGINE_SEED: u64 = 0;

/// The engine's generator after `earlier` multinomial draws.
fn engine_rng(earlier: u64) -> Isaac64Rng {
    let mut rng = Isaac64Rng::seed_from_u64(ENGINE_SEED);
    for _ in 0..earlier {
        rng.next_u32();
    }
    rng
}

/// `n` successive draws from `weights` (the vector `WeightedIndex::new`
/// receives), starting after `earlier` draws of the engine's generator.
pub(crate) fn draws(weights: &[f32], earlier: u64, n: u64) -> Result<Vec<i64>, Error> {
    let w = WeightedIndex::new(weights)
        .map_err(|e| Error::new(format_args!("Failed to construct multinomial sampler: {e}")))?;
    let mut rng = engine_rng(earlier);
    (0..n)
        .map(|_| {
            i64::try_from(w.sample(&mut rng))
                .map_err(|_| Error::new("a drawn token id does not fit in i64"))
        })
        .collect()
}
