//! `fixtures/own/`: a fixture recorded by `scripts/reference/record_fixture.py`
//! (not by `hf_reference.py`) from the same SmolLM2 GGUF and the same `write`
//! prompt as the bundled `write_k60`, with Llama-3.1's sampling settings. It
//! checks that the loader reads what the script writes, and that the two
//! scripts agree on the context.

use parity_core::fixture::{Fixture, FixtureKind, bundled_dir};

fn own() -> Fixture {
    let path = bundled_dir()
        .expect("bundled fixtures")
        .join("own/smollm2_write_k60.safetensors");
    Fixture::load(&path).unwrap_or_else(|e| panic!("{e}"))
}

fn bundled_write_k60() -> Fixture {
    let path = bundled_dir()
        .expect("bundled fixtures")
        .join("smollm2/write_k60.safetensors");
    Fixture::load(&path).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn record_fixture_output_loads_as_a_model_fixture() {
    let f = own();
    assert_eq!(f.kind, FixtureKind::Model);
    let names: Vec<&str> = f.settings.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["llama31", "llama31_k0"]);
    let m = f.model.as_ref().expect("model metadata");
    // sha256 of SmolLM2-135M-Instruct.Q4_1.gguf, as in scripts/fetch-model.sh.
    assert_eq!(
        m.gguf_sha256,
        "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
    );
    assert_eq!((m.prompt_id.as_str(), m.prompt_len, m.k), ("write", 39, 60));
    assert_eq!(
        m.vocab,
        f.path.parent().expect("a folder").join("vocab.json")
    );
}

#[test]
fn a_setting_transformers_rejects_is_recorded_with_its_message() {
    let f = own();
    assert_eq!(f.rejected.len(), 1);
    let r = &f.rejected[0];
    assert_eq!(r.name, "temp0");
    assert_eq!(r.kwargs.get("temperature"), Some(&0.0.into()));
    assert!(
        r.error
            .starts_with("ValueError: `temperature` (=0.0) has to be a strictly positive float"),
        "{}",
        r.error
    );
    assert!(f.setting("temp0").is_none());
}

#[test]
fn both_scripts_build_the_same_context_from_the_same_prompt() {
    let own = own();
    let bundled = bundled_write_k60();
    assert_eq!(own.input_ids, bundled.input_ids);
    assert_eq!(
        own.model.as_ref().map(|m| &m.answer),
        bundled.model.as_ref().map(|m| &m.answer)
    );
    // The logits come from the same forward pass, possibly on another CPU:
    // docs/fixtures.md allows 1e-3 of low-bit noise between machines.
    let max_diff = own
        .logits
        .iter()
        .zip(&bundled.logits)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0f32, f32::max);
    assert!(max_diff <= 1e-3, "logits differ by {max_diff}");
    let vocab =
        |f: &Fixture| std::fs::read(&f.model.as_ref().expect("model").vocab).expect("vocab");
    assert!(vocab(&own) == vocab(&bundled), "vocab.json differs");
}

#[test]
fn the_default_top_k_of_50_is_in_the_recorded_scores() {
    // Llama-3.1's generation config sets temperature and top_p only, so
    // transformers adds its default top_k = 50 before top_p, and top_p then
    // measures 0.9 of the renormalised top-50 mass: `llama31` keeps 14
    // tokens where `llama31_k0` (top_k = 0 spelled out) keeps 29.
    let f = own();
    let kept = |name: &str| {
        let s = f.setting(name).unwrap_or_else(|| panic!("{name}"));
        s.scores.iter().filter(|x| x.is_finite()).count()
    };
    assert_eq!((kept("llama31"), kept("llama31_k0")), (14, 29));
}
