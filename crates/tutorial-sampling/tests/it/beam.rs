//! The tutorial's beam search against transformers' on every configuration
//! `scripts/reference/beam_reference.py` recorded from the real `generate`
//! (the replay of those recordings is hf-sampling's test).

use comparison::beam::{Model, Recorded};
use tutorial_sampling::beam::{first_difference, tutorial_beam_search};

/// The toy-model runs, read by the project's own reader of the recording
/// format (`comparison::beam::load`, which refuses unknown fields).
fn recorded() -> Vec<(Recorded, usize)> {
    let path = parity_core::fixture::bundled_dir()
        .expect("bundled fixtures")
        .join("beam/transformers_beams.jsonl");
    comparison::beam::load(&path)
        .expect("the recording reads")
        .into_iter()
        .map(|r| match &r.model {
            Model::Toy(lm, ..) => {
                let eos = lm.eos;
                (r, eos)
            }
            Model::Table(_) => panic!("{}: not a toy run", r.origin),
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
    for (r, eos) in recorded()
        .iter()
        .filter(|(r, _)| r.config.num_return_sequences == 1)
    {
        let Model::Toy(lm, ..) = &r.model else {
            unreachable!("recorded() keeps toy runs")
        };
        let t = tutorial_beam_search(
            lm,
            &r.prompt,
            r.config.max_new_tokens,
            r.config.num_beams,
            *eos as i64,
        )
        .expect("valid");
        let best = &t.beams[0].1;
        // Padding only follows an eos: cut after the first generated eos.
        let eos = *eos as i64;
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
