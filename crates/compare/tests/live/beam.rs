//! `compare beam --port candle` and candle's prefix cache: these need the
//! SmolLM2 GGUF (main.rs).

use serde_json::Value;

use crate::helpers::{compare, text};

/// `beam --port candle` reruns the 8 SmolLM2 searches on candle's logits, each
/// prefix one token past its parent's KV cache. On hello_k0 the best beam is
/// transformers' in every setting and the scores stay within 0.1; on
/// write_k0 some beam parts in every setting (candle's logits there are 0.5
/// to 1.3 from transformers', docs/trace.md).
pub(crate) fn candle_reruns_the_smollm2_searches() {
    let out = compare(&["beam", "--port", "candle", "--format", "json"], "");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(doc["port"], "candle");
    let rows = doc["beams"].as_array().expect("rows");
    assert_eq!(rows.len(), 8);
    for row in rows {
        let parts = row["first_difference"].as_array().expect("per beam");
        match row["prompt"].as_str() {
            Some("hello_k0") => {
                assert!(parts[0].is_null(), "best beam parts: {row}");
                assert!(row["max_score_diff"].as_f64().expect("diff") < 0.1, "{row}");
            }
            Some("write_k0") => assert_eq!(row["same_sequences"], false, "{row}"),
            other => panic!("unexpected recording {other:?}"),
        }
    }
}

/// A prefix's logits through the KV cache of its parent are the ones
/// teacher forcing gives (the prompt in one batch, then one token at a
/// time): bit for bit, whatever order the prefixes are asked in; and each
/// prefix is run once.
pub(crate) fn prefix_cache_logits_are_teacher_forcing_logits() {
    use candle_adapter::model::{Expected, PrefixCache, QuantizedLlama};
    let path = candle_adapter::port::default_model_path();
    let load = || QuantizedLlama::load(&path, &Expected::default()).expect("the model loads");
    let ids: Vec<i64> = vec![1, 9690, 198, 2683, 359, 253, 5356, 5646, 11, 1789];
    let prompt_len = 6;
    let steps = ids.len() - prompt_len + 1;
    let forced = load()
        .teacher_forced(&ids, prompt_len, steps, |_| {})
        .expect("teacher forcing");
    let as_u32: Vec<u32> = ids.iter().map(|&t| t as u32).collect();
    let mut cache = PrefixCache::new(load());
    // The prompt, then the longest prefix (walked one token at a time from
    // the prompt's cache), then each shorter one again from its parent's.
    let order = [0, steps - 1].into_iter().chain(1..steps - 1);
    for t in order {
        let got = cache.logits(&as_u32[..prompt_len + t]).expect("logits");
        let same = got
            .iter()
            .zip(&forced[t])
            .all(|(a, b)| a.to_bits() == b.to_bits());
        assert!(same && got.len() == forced[t].len(), "step {t} differs");
    }
    // What makes `beam --port candle` fast (7 s, was 3 min): every prefix is
    // run once, one position past its parent. The prompt in one batch, then
    // each of the steps - 1 longer prefixes one position each; the shorter
    // ones asked again (and the prompt, which every beam starts from) cost
    // nothing.
    assert_eq!(cache.tokens_run(), prompt_len + steps - 1);
    cache
        .logits(&as_u32[..prompt_len])
        .expect("the prompt again");
    cache
        .logits(&as_u32[..prompt_len + 1])
        .expect("a prefix again");
    assert_eq!(cache.tokens_run(), prompt_len + steps - 1);
}
