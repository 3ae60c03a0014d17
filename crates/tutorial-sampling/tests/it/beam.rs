//! The tutorial's beam search against transformers' on every configuration
//! `scripts/reference/beam_reference.py` recorded from the real `generate`
//! (the replay of those recordings is hf-sampling's test).

use std::path::Path;

use hf_sampling::beam::{BeamConfig, ToyLm};
use serde_json::Value;
use tutorial_sampling::beam::{first_difference, tutorial_beam_search};

/// One recorded run: the toy model, the prompt, the kwargs as transformers
/// read them and the sequences it returned.
struct Recorded {
    lm: ToyLm,
    prompt: Vec<i64>,
    config: BeamConfig,
    sequences: Vec<Vec<i64>>,
}

fn ids(v: &Value) -> Vec<i64> {
    v.as_array()
        .expect("ids")
        .iter()
        .map(|x| x.as_i64().expect("integer"))
        .collect()
}

fn recorded() -> Vec<Recorded> {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/beam/transformers_beams.jsonl");
    let text = std::fs::read_to_string(&path).expect("fixture readable");
    let mut lines = text.lines();
    let header: Value = serde_json::from_str(lines.next().expect("header")).expect("json");
    assert_eq!(header["format"], "sampling-parity-beam/1");
    lines
        .map(|line| {
            let r: Value = serde_json::from_str(line).expect("json line");
            let m = &r["model"];
            let eos = m["eos"].as_i64().expect("eos");
            let eos_ids = m.get("eos_ids").map_or(vec![eos], ids);
            let kwargs = r["kwargs"].as_object().expect("kwargs");
            Recorded {
                lm: ToyLm {
                    seed: m["seed"].as_u64().expect("seed"),
                    vocab: m["vocab"].as_u64().expect("vocab") as usize,
                    eos: eos as usize,
                    eos_slope: m["eos_slope"].as_f64().expect("slope"),
                },
                prompt: ids(&r["prompt"]),
                config: BeamConfig::from_kwargs(kwargs, eos_ids, m["pad"].as_i64())
                    .expect("valid kwargs"),
                sequences: r["sequences"]
                    .as_array()
                    .expect("sequences")
                    .iter()
                    .map(ids)
                    .collect(),
            }
        })
        .collect()
}

/// The tutorial's beam search on the same model and prompts: its best
/// sequence often ends earlier (a finished beam competes at its raw sum, and
/// it stops when the best beam has ended), and never carries a length
/// penalty.
#[test]
fn the_tutorial_parts_from_transformers_on_some_configurations() {
    let mut same = 0;
    let mut parted = 0;
    for r in recorded()
        .iter()
        .filter(|r| r.config.num_return_sequences == 1)
    {
        let t = tutorial_beam_search(
            &r.lm,
            &r.prompt,
            r.config.max_new_tokens,
            r.config.num_beams,
            r.lm.eos as i64,
        )
        .expect("valid");
        let best = &t.beams[0].1;
        // Padding only follows an eos: cut after the first generated eos.
        let eos = r.lm.eos as i64;
        let generated = &r.sequences[0][r.prompt.len()..];
        let end = generated
            .iter()
            .position(|&x| x == eos)
            .map_or(generated.len(), |i| i + 1);
        let hf = &r.sequences[0][..r.prompt.len() + end];
        match first_difference(hf, best, r.prompt.len()) {
            None => same += 1,
            Some(_) => parted += 1,
        }
    }
    println!("tutorial vs transformers: {same} same best sequence, {parted} parted");
    assert!(same > 0 && parted > 0, "{same} same, {parted} parted");
}
