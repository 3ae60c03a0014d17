//! Cross-check against real transformers runs on random logits and random
//! (valid and invalid) kwargs: `crates/hf-sampling/scripts/crosscheck.jsonl`,
//! recorded by `crosscheck.py` beside it from transformers' own `generate`
//! (command in the script's docstring). Set `HF_SAMPLING_CROSSCHECK=file.jsonl`
//! to check a larger file instead. Each line: `{"logits", "input_ids",
//! "kwargs", "scores"}` or `{..., "error"}` (numbers or "-inf"/"inf").

use hf_sampling::{HfSampler, process, resolve};
use serde_json::Value;

use crate::f32s;

#[test]
fn crosscheck_jsonl() {
    let path = std::env::var("HF_SAMPLING_CROSSCHECK")
        .unwrap_or_else(|_| format!("{}/scripts/crosscheck.jsonl", env!("CARGO_MANIFEST_DIR")));
    let text = std::fs::read_to_string(&path).expect("read cross-check file");
    let (mut ok, mut failures) = (0usize, Vec::new());
    for (n, line) in text.lines().enumerate() {
        let rec: Value = serde_json::from_str(line).expect("json line");
        let logits = f32s(&rec["logits"]);
        let ids: Vec<i64> = rec["input_ids"]
            .as_array()
            .expect("ids")
            .iter()
            .filter_map(Value::as_i64)
            .collect();
        let kwargs = rec["kwargs"].as_object().expect("kwargs");
        let ours = resolve(kwargs, None).and_then(|p| process(&logits, &ids, &p));
        match (&ours, rec.get("scores")) {
            (Err(e), Some(_)) => failures.push(format!(
                "line {}: {kwargs:?}: we reject ({e}), transformers accepts",
                n + 1
            )),
            (Ok(_), None) => failures.push(format!(
                "line {}: {kwargs:?}: we accept, transformers: {}",
                n + 1,
                rec["error"]
            )),
            (Err(_), None) => ok += 1,
            (Ok(out), Some(s)) => {
                let want = f32s(s);
                let bad: Vec<usize> = (0..want.len())
                    .filter(|&i| out.scores[i].to_bits() != want[i].to_bits())
                    .collect();
                // The fast sampler keeps exactly the tokens transformers keeps.
                let params = resolve(kwargs, None).expect("resolved above");
                let fast = HfSampler::new(&params)
                    .and_then(|mut f| f.distribution(&logits, &ids).map(|d| d.kept.to_vec()));
                let reference: Vec<u32> = out.kept.iter().map(|&i| i as u32).collect();
                if fast.as_ref().ok() != Some(&reference) {
                    failures.push(format!(
                        "line {}: {kwargs:?}: HfSampler keeps {fast:?}, transformers {reference:?}",
                        n + 1
                    ));
                } else if bad.is_empty() {
                    ok += 1;
                } else {
                    failures.push(format!(
                        "line {}: {kwargs:?}: {} scores differ, first at {}: ours {} vs {}",
                        n + 1,
                        bad.len(),
                        bad[0],
                        out.scores[bad[0]],
                        want[bad[0]]
                    ));
                }
            }
        }
    }
    eprintln!("cross-check: {ok} identical, {} different", failures.len());
    assert!(ok > 0, "{path}: no cases");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
