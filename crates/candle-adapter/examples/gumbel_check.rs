//! Large-sample check of the clipped-Gumbel model against real candle draws
//! (cheap on small vocabularies): `cargo run --release -p candle-adapter --example gumbel_check`.
use candle_adapter::{CandleParams, CandleRun, CandleSampling, VerifyOptions};
use parity_core::Fixture;
use parity_core::fixture::bundled_dir;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    for (name, t) in [
        ("neg_inf_block", 0.7),
        ("ties_3221", 0.7),
        ("all_equal_v8", 0.7),
        ("rep_penalty_signs", 1.0),
        ("v2", 0.3),
    ] {
        let fx = Fixture::load(
            &bundled_dir()?
                .join("edge")
                .join(format!("{name}.safetensors")),
        )?;
        let run = CandleRun::new(
            &fx.logits,
            &fx.input_ids,
            &CandleParams::new(CandleSampling::GumbelSoftmax { temperature: t }),
        )?;
        let softmax = match &run.mirrored().draw {
            candle_adapter::Draw::Gumbel(g) => g.softmax.clone(),
            _ => run.mirrored().probs.clone(),
        };
        let v = run.verify(&VerifyOptions {
            draws: 200_000,
            streams: 2,
            reference: Some(&softmax),
            ..VerifyOptions::default()
        })?;
        let r = v
            .vs_reference
            .as_ref()
            .map(|r| (r.max_abs_diff, r.gof.p_value));
        println!("  vs plain softmax: (max|f-p|, p) = {r:?}");
        println!(
            "{name} T={t}: logits {:?}\n  clipped {:?}\n  max|f-p|={:.5} chi2={:.2} dof={} p={:?}",
            fx.logits,
            run.mirrored().probs,
            v.vs_mirror.max_abs_diff,
            v.vs_mirror.gof.statistic,
            v.vs_mirror.gof.dof,
            v.vs_mirror.gof.p_value
        );
    }
    Ok(())
}
