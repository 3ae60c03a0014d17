//! Integration tests: the tutorial's sampler against transformers' recorded
//! scores, its beam search beside transformers' recorded ones, and the
//! speculative computations against seeded simulations.

mod beam;
mod fixtures;
mod speculative;

/// `compare semantics`' list is derived from the tutorial's `Params`; each
/// listed default, written out, is what the parser does with the field left
/// out.
#[test]
fn the_listed_params_and_defaults_are_the_parsers() {
    use parity_core::Semantics;
    let t = tutorial_sampling::Tutorial;
    assert_eq!(parity_core::params::defaults_agree(&t), Ok(()));
    let names: Vec<_> = t.info().params.iter().map(|p| p.name).collect();
    assert_eq!(names, tutorial_sampling::Params::FIELDS);
}
