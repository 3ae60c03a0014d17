//! Cost of real candle draws on V = 49,152 (SmolLM2 `write_k60`), per variant:
//! `cargo run --release -p candle-adapter --example draw_timing`.
use std::time::Instant;

use candle_adapter::{CandleParams, CandleRun, VerifyOptions};
use parity_core::Fixture;
use parity_core::fixture::bundled_dir;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let fx = Fixture::load(&bundled_dir()?.join("smollm2/write_k60.safetensors"))?;
    let variants = [
        r#"{"sampling":"ArgMax"}"#,
        r#"{"sampling":"All","temperature":0.7}"#,
        r#"{"sampling":"TopK","temperature":0.7,"k":40}"#,
        r#"{"sampling":"TopP","temperature":0.7,"p":0.9}"#,
        r#"{"sampling":"TopKThenTopP","temperature":0.7,"k":40,"p":0.9}"#,
        r#"{"sampling":"TopP","temperature":0.7,"p":0.9,"hf_top_k":40}"#,
        r#"{"sampling":"GumbelSoftmax","temperature":0.7}"#,
    ];
    let draws = 1000;
    for json in variants {
        let params: CandleParams = json.parse()?;
        let t0 = Instant::now();
        let run = CandleRun::new(&fx.logits, &fx.input_ids, &params)?;
        let build = t0.elapsed().as_secs_f64();
        let mut line = format!("{json:<70} build {:>7.1} ms", build * 1e3);
        for (streams, limit) in [(1, None), (2, None), (2, Some(100))] {
            let v = run.verify(&VerifyOptions {
                draws,
                streams,
                real_per_stream: limit,
                ..VerifyOptions::default()
            })?;
            line += &format!(
                " | streams={streams} real={:>4}: {:>7.1} us/draw",
                v.real_draws,
                v.secs_per_real_draw * 1e6
            );
        }
        println!("{line}");
    }
    Ok(())
}
