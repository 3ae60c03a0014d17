//! The article's settings on every bundled SmolLM2 context: transformers'
//! recorded distribution beside the literal llama-server request and Ollama's
//! options, as kept-token counts and total variation.
//!
//! cargo run -p ollama-sampling --example article

use llamacpp_sampling::LlamaCpp;
use ollama_sampling::Ollama;
use parity_core::metrics::softmax_f64;
use parity_core::{Comparison, Context, Fixture, Logits, Semantics};
use serde_json::Value;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("| context | setting | transformers kept | llama.cpp kept | TV | ollama kept | TV |");
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    for path in parity_core::fixture::bundled_fixtures()? {
        let f = Fixture::load(&path)?;
        if f.model.is_none() {
            continue;
        }
        let logits = Logits::from_f32(&f.logits);
        let ctx = Context::new(&f.input_ids, None)?;
        for name in ["t07_default", "k40", "p09", "k40p09"] {
            let Some(s) = f.setting(name) else { continue };
            let sample = s
                .kwargs
                .get("do_sample")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            if !sample {
                continue;
            }
            let hf = softmax_f64(&s.scores);
            let kept_hf = hf.iter().filter(|&&p| p > 0.0).count();
            let mut cells = Vec::new();
            for which in 0..2 {
                let d = if which == 0 {
                    let p = LlamaCpp
                        .from_generate(&s.kwargs)
                        .ok_or("not expressible")??;
                    LlamaCpp.distribution(&logits, &ctx, &p)?
                } else {
                    let p = Ollama::default()
                        .from_generate(&s.kwargs)
                        .ok_or("not expressible")??;
                    Ollama::default().distribution(&logits, &ctx, &p)?
                };
                let c = Comparison::new(&hf, d.probs())?;
                cells.push(format!("{} | {:.3}", d.kept().len(), c.tv));
            }
            println!(
                "| {} | {name} | {kept_hf} | {} | {} |",
                f.name, cells[0], cells[1]
            );
        }
    }
    Ok(())
}
