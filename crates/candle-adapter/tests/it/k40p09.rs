//! top-k then top-p: candle measures p on the raw top-k mass, transformers on
//! the renormalised one. The closure brings candle to transformers.

use candle_adapter::VerifyOptions;

use crate::common::{ALPHA, fixture, hf_probs, kept, run, verify_mirror};

#[test]
fn candle_keeps_more_and_the_closure_fixes_it() {
    let mut strictly_more = 0;
    for name in ["write_k60", "write_k7", "hello_k0"] {
        let fx = fixture("smollm2", name);
        let hf = fx.setting("k40p09").expect("k40p09");
        let hf_p = hf_probs(&hf.scores, false);
        let hf_kept = kept(&hf_p);

        let plain = run(
            &fx,
            r#"{"sampling":"TopKThenTopP","temperature":0.7,"k":40,"p":0.9}"#,
        );
        let m = plain.mirrored();
        let top40_mass: f64 = {
            let mut p = parity_core::metrics::softmax_f64(
                &fx.logits.iter().map(|l| l / 0.7).collect::<Vec<f32>>(),
            );
            p.sort_by(|a, b| b.total_cmp(a));
            p[..40].iter().sum()
        };
        eprintln!(
            "{name}: kept candle={} transformers={} (top-40 raw mass {top40_mass:.4})",
            m.kept.len(),
            hf_kept.len()
        );
        assert!(m.kept.len() >= hf_kept.len());
        let v = verify_mirror(
            &format!("{name} TopKThenTopP"),
            &plain,
            &VerifyOptions {
                seed: 1,
                draws: 1000,
                streams: 2,
                other_kept: Some(&hf_kept),
                ..VerifyOptions::default()
            },
        );
        let outside = v.outside_other_kept.expect("other");
        eprintln!("{name}: share of real candle draws outside transformers' set: {outside:.4}");
        if m.kept.len() > hf_kept.len() {
            strictly_more += 1;
            assert!(outside > 0.0, "{name}");
        }

        let fixed = run(
            &fx,
            r#"{"sampling":"TopP","temperature":0.7,"p":0.9,"hf_top_k":40}"#,
        );
        let fm = fixed.mirrored();
        let ours: Vec<usize> = fm.kept.iter().map(|&t| t as usize).collect();
        assert_eq!(ours, hf_kept, "{name}");
        let max_diff = fm
            .probs
            .iter()
            .zip(&hf_p)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        eprintln!("{name}: closure max|p_candle - p_hf| = {max_diff:e}");
        assert!(max_diff < 1e-5, "{name}: {max_diff}");
        let v = verify_mirror(
            &format!("{name} TopP+closure"),
            &fixed,
            &VerifyOptions {
                seed: 1,
                draws: 1000,
                streams: 2,
                other_kept: Some(&hf_kept),
                reference: Some(&hf_p),
                real_per_stream: None,
            },
        );
        assert_eq!(v.outside_other_kept, Some(0.0));
        let r = v.vs_reference.expect("reference");
        assert!(r.gof.p_value.is_none_or(|p| p >= ALPHA), "{r:?}");
    }
    assert!(
        strictly_more > 0,
        "candle never kept more than transformers"
    );
}
