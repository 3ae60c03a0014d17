//! transformers' beam search, replayed, against every configuration recorded
//! by `scripts/reference/beam_reference.py` from the real `generate`.

use std::path::Path;

use hf_sampling::beam::{BeamConfig, EarlyStopping, TableLm, ToyLm, transformers_beam_search};
use serde_json::Value;

struct Recorded {
    name: String,
    lm: ToyLm,
    prompt: Vec<i64>,
    config: BeamConfig,
    first_logits: Vec<f32>,
    sequences: Vec<Vec<i64>>,
    scores: Vec<f32>,
}

fn int(v: &Value) -> i64 {
    v.as_i64().expect("integer")
}

fn recorded() -> Vec<Recorded> {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/beam/transformers_beams.jsonl");
    let text = std::fs::read_to_string(&path).expect("fixture readable");
    let mut lines = text.lines();
    let header: Value = serde_json::from_str(lines.next().expect("header")).expect("json");
    assert_eq!(header["format"], "sampling-parity-beam/1");
    assert_eq!(header["transformers_version"], "5.23.0");
    lines
        .map(|line| {
            let r: Value = serde_json::from_str(line).expect("json line");
            let m = &r["model"];
            let k = &r["kwargs"];
            let eos = int(&m["eos"]);
            let pad = int(&m["pad"]);
            Recorded {
                name: r["name"].as_str().expect("name").to_string(),
                lm: ToyLm {
                    seed: m["seed"].as_u64().expect("seed"),
                    vocab: m["vocab"].as_u64().expect("vocab") as usize,
                    eos: eos as usize,
                    eos_slope: m["eos_slope"].as_f64().expect("slope"),
                },
                prompt: r["prompt"]
                    .as_array()
                    .expect("prompt")
                    .iter()
                    .map(int)
                    .collect(),
                config: BeamConfig {
                    num_beams: k["num_beams"].as_u64().expect("num_beams") as usize,
                    length_penalty: k["length_penalty"].as_f64().expect("lp"),
                    early_stopping: match &k["early_stopping"] {
                        Value::Bool(false) => EarlyStopping::Heuristic,
                        Value::Bool(true) => EarlyStopping::Full,
                        Value::String(s) if s == "never" => EarlyStopping::Never,
                        other => panic!("early_stopping {other}"),
                    },
                    num_return_sequences: k["num_return_sequences"].as_u64().expect("nrs") as usize,
                    max_new_tokens: k["max_new_tokens"].as_u64().expect("mnt") as usize,
                    eos_token_ids: match m.get("eos_ids") {
                        Some(ids) => ids.as_array().expect("eos_ids").iter().map(int).collect(),
                        None => vec![eos],
                    },
                    pad_token_id: Some(pad),
                },
                first_logits: r["first_logits"]
                    .as_array()
                    .expect("logits")
                    .iter()
                    .map(|x| x.as_f64().expect("number") as f32)
                    .collect(),
                sequences: r["sequences"]
                    .as_array()
                    .expect("sequences")
                    .iter()
                    .map(|s| s.as_array().expect("row").iter().map(int).collect())
                    .collect(),
                scores: r["sequences_scores"]
                    .as_array()
                    .expect("scores")
                    .iter()
                    .map(|x| x.as_f64().expect("score") as f32)
                    .collect(),
            }
        })
        .collect()
}

#[test]
fn the_toy_model_gives_the_recorded_logits_bit_for_bit() {
    for r in recorded() {
        let ours = r.lm.logits(&r.prompt).expect("valid ids");
        assert_eq!(
            ours.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            r.first_logits
                .iter()
                .map(|x| x.to_bits())
                .collect::<Vec<_>>(),
            "{}",
            r.name
        );
    }
}

#[test]
fn every_recorded_configuration_is_reproduced() {
    let all = recorded();
    assert!(all.len() >= 50, "{} configurations", all.len());
    let mut max_diff = 0f32;
    for r in &all {
        let out = transformers_beam_search(&r.lm, &r.prompt, &r.config)
            .unwrap_or_else(|e| panic!("{}: {e}", r.name));
        assert_eq!(out.sequences, r.sequences, "{}", r.name);
        for (a, b) in out.scores.iter().zip(&r.scores) {
            max_diff = max_diff.max((a - b).abs());
            assert!(
                (a - b).abs() <= 1e-5,
                "{}: {:?} vs {:?}",
                r.name,
                out.scores,
                r.scores
            );
        }
    }
    println!(
        "{} configurations, max |score difference| {max_diff:e}",
        all.len()
    );
}

/// SmolLM2-135M-Instruct through transformers: `generate(num_beams=…)` and
/// the log-probabilities of every prefix it ran the model on
/// (`scripts/reference/beam_smollm2_reference.py`). The replay on those
/// recorded numbers must find the same beams and scores.
#[test]
fn smollm2_beams_are_reproduced_from_the_recorded_log_probabilities() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/beam/smollm2_beams.jsonl");
    let text = std::fs::read_to_string(&path).expect("fixture readable");
    let mut lines = text.lines();
    let header: Value = serde_json::from_str(lines.next().expect("header")).expect("json");
    assert_eq!(header["format"], "sampling-parity-beam-table/1");
    let mut cases = 0;
    let mut max_diff = 0f32;
    for line in lines {
        let r: Value = serde_json::from_str(line).expect("json line");
        let prompt: Vec<i64> = r["prompt_ids"]
            .as_array()
            .expect("ids")
            .iter()
            .map(int)
            .collect();
        let rows = r["table"].as_array().expect("table").iter().map(|row| {
            let generated = row["generated"]
                .as_array()
                .expect("generated")
                .iter()
                .map(int)
                .collect();
            let top = row["top"]
                .as_array()
                .expect("top")
                .iter()
                .map(|e| (int(&e[0]) as usize, e[1].as_f64().expect("log-prob") as f32))
                .collect();
            (generated, top)
        });
        let vocab = r["vocab_size"].as_u64().expect("vocab") as usize;
        let lm = TableLm::new(prompt.clone(), vocab, rows).expect("valid table");
        let kwargs = r["kwargs"].as_object().expect("kwargs");
        let eos = r["eos_token_ids"]
            .as_array()
            .expect("eos")
            .iter()
            .map(int)
            .collect();
        let pad = r["pad_token_id"].as_i64();
        let config = BeamConfig::from_kwargs(kwargs, eos, pad).expect("valid kwargs");
        let out = transformers_beam_search(&lm, &prompt, &config)
            .unwrap_or_else(|e| panic!("{} {kwargs:?}: {e}", r["prompt"]));
        let expected: Vec<Vec<i64>> = r["sequences"]
            .as_array()
            .expect("sequences")
            .iter()
            .map(|s| s.as_array().expect("row").iter().map(int).collect())
            .collect();
        assert_eq!(out.sequences, expected, "{} {kwargs:?}", r["prompt"]);
        for (a, b) in out
            .scores
            .iter()
            .zip(r["sequences_scores"].as_array().expect("scores"))
        {
            let b = b.as_f64().expect("score") as f32;
            max_diff = max_diff.max((a - b).abs());
            assert!(
                (a - b).abs() <= 1e-5,
                "{} {kwargs:?}: {a} vs {b}",
                r["prompt"]
            );
        }
        cases += 1;
    }
    println!("SmolLM2: {cases} settings, max |score difference| {max_diff:e}");
    assert_eq!(cases, 8);
}
