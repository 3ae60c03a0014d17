//! Prints the speculative-decoding rows for a small hand-made pair and for the
//! SmolLM2 pairs used in the tests (target: transformers' recorded `t07`
//! distribution on `write_k60`; drafts: the recorded `k40p09` distribution,
//! and the logits perturbed by ±1.5 at temperature 0.7).
//!
//! `cargo run --release -p tutorial-sampling --example speculative_table`

use parity_core::Fixture;
use parity_core::fixture::bundled_dir;
use parity_core::metrics::softmax_f64;
use tutorial_sampling::speculative::{perturbed, speculative};

fn print(name: &str, p: &[f64], q: &[f64], k: usize) -> Result<(), Box<dyn std::error::Error>> {
    let s = speculative(p, q, k)?;
    println!(
        "{name} (V = {}, K = {k}): acceptance rate sum min(p, q) = {:.4}",
        p.len(),
        s.acceptance_rate
    );
    println!(
        "  {:<18} {:<13} {:>9} {:>9} {:>8} {:>9} {:>8}",
        "algorithm", "candidate", "TV", "undefined", "alpha", "accepted", "emitted"
    );
    for row in &s.rows {
        let f = &row.first;
        println!(
            "  {:<18} {:<13} {:>9.2e} {:>9.2e} {:>8.4} {:>9.3} {:>8.3}",
            f.algorithm.name(),
            row.proposal.describe(),
            f.tv,
            f.undefined,
            f.acceptance,
            row.expected_accepted,
            row.expected_emitted
        );
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let p = [0.30, 0.25, 0.20, 0.15, 0.0, 0.10];
    let q = [0.10, 0.35, 0.20, 0.05, 0.30, 0.0];
    print("hand-made pair", &p, &q, 4)?;
    let fx = Fixture::load(&bundled_dir()?.join("smollm2/write_k60.safetensors"))?;
    let scores = |name: &str| fx.setting(name).map(|s| softmax_f64(&s.scores));
    let (Some(target), Some(k40p09)) = (scores("t07"), scores("k40p09")) else {
        return Err("write_k60 lacks t07 or k40p09".into());
    };
    print("write_k60: t07 target, k40p09 draft", &target, &k40p09, 4)?;
    let weak: Vec<f32> = perturbed(&fx.logits, 1.5, 7)
        .into_iter()
        .map(|x| x / 0.7)
        .collect();
    print(
        "write_k60: t07 target, perturbed draft",
        &target,
        &softmax_f64(&weak),
        4,
    )?;
    Ok(())
}
