//! Repeat-penalty windows through the real apply_repeat_penalty.

use candle_adapter::{apply_repeat_penalty, penalty_windows};

use crate::common::fixture;

#[test]
fn whole_window_is_transformers_rep13_bit_for_bit() {
    for name in ["write_k60", "hello_k17", "write_k0"] {
        let fx = fixture("smollm2", name);
        let hf = fx.setting("rep13").expect("rep13");
        let ours = apply_repeat_penalty(&fx.logits, 1.3, &fx.input_ids).expect("penalty");
        let same = ours
            .iter()
            .zip(&hf.scores)
            .all(|(a, b)| a.to_bits() == b.to_bits());
        assert!(
            same,
            "{name}: candle's whole-context penalty differs from transformers"
        );
        let w = penalty_windows(&fx.logits, &fx.input_ids, 1.3, &[None, Some(128), Some(64)])
            .expect("windows");
        for win in &w {
            eprintln!(
                "{name}: window {:?} len={} penalised={} changed={} missed_vs_whole={}",
                win.last_n,
                win.window_len,
                win.penalised.len(),
                win.changed.len(),
                win.missed_vs_whole.len()
            );
        }
        assert!(w[0].missed_vs_whole.is_empty());
        assert!(w[2].penalised.len() <= w[1].penalised.len());
        assert!(w[1].penalised.len() <= w[0].penalised.len());
        if fx.input_ids.len() > 64 {
            assert!(!w[2].missed_vs_whole.is_empty(), "{name}");
        }
    }
}

#[test]
fn out_of_vocab_ids_are_skipped_like_transformers() {
    let fx = fixture("edge", "rep_penalty_id_oob");
    let w = penalty_windows(&fx.logits, &fx.input_ids, 2.0, &[None]).expect("windows");
    eprintln!("oob: {:?}", w[0]);
    assert!(!w[0].out_of_vocab.is_empty());
    if let Some(rep2) = fx.setting("rep2") {
        let ours = apply_repeat_penalty(&fx.logits, 2.0, &fx.input_ids).expect("penalty");
        assert_eq!(ours, rep2.scores);
    }
}
