use parity_core::Vocab;
use parity_core::fixture::{Fixture, FixtureKind, bundled_fixtures};

/// The thirteen settings every model fixture records (docs/fixtures.md).
const MODEL_SETTINGS: [&str; 13] = [
    "t07_default",
    "t07",
    "k40",
    "p09",
    "k40p09",
    "rep13",
    "default",
    "t15",
    "minp05",
    "typ09",
    "eps",
    "eta",
    "k40p09rep",
];

fn load_all() -> Vec<Fixture> {
    let paths = bundled_fixtures().expect("fixtures folder is listable");
    paths
        .iter()
        .map(|p| Fixture::load(p).unwrap_or_else(|e| panic!("{e}")))
        .collect()
}

#[test]
fn every_bundled_fixture_loads_and_is_consistent() {
    let all = load_all();
    let models: Vec<_> = all
        .iter()
        .filter(|f| f.kind == FixtureKind::Model)
        .collect();
    let edges = all.len() - models.len();
    assert_eq!(models.len(), 6, "two prompts × three answer prefixes");
    assert!(
        edges >= 8,
        "expected at least 8 edge fixtures (docs/fixtures.md), found {edges}"
    );
    for f in &all {
        assert!(!f.settings.is_empty(), "{}: no settings", f.name);
        for s in &f.settings {
            // Every setting keeps at least one token (min_tokens_to_keep = 1),
            // unless the logits themselves are all -inf.
            let all_masked = f.logits.iter().all(|&x| x == f32::NEG_INFINITY);
            assert!(
                all_masked || s.scores.iter().any(|x| x.is_finite()),
                "{} / {}: every score is -inf",
                f.name,
                s.name
            );
            // Processing only removes tokens: a token -inf in the logits stays -inf.
            for (i, (&l, &sc)) in f.logits.iter().zip(&s.scores).enumerate() {
                if l == f32::NEG_INFINITY {
                    assert_eq!(sc, f32::NEG_INFINITY, "{} / {} entry {i}", f.name, s.name);
                }
            }
        }
    }
}

#[test]
fn model_fixtures_carry_their_provenance() {
    for f in load_all().iter().filter(|f| f.kind == FixtureKind::Model) {
        let m = f
            .model
            .as_ref()
            .expect("model fixtures have model metadata");
        assert_eq!(f.vocab_size(), 49_152, "{}: SmolLM2's vocabulary", f.name);
        assert_eq!(m.model, "SmolLM2-135M-Instruct.Q4_1.gguf");
        assert_eq!(
            m.gguf_sha256.len(),
            64,
            "{}: sha256 is 64 hex digits",
            f.name
        );
        assert!(
            f.transformers_version.starts_with("5.23"),
            "{}",
            f.transformers_version
        );
        assert!(f.torch_version.starts_with("2.15"), "{}", f.torch_version);
        assert_eq!(f.name, format!("{}_k{}", m.prompt_id, m.k));
        assert!(
            f.input_ids.iter().all(|&t| (0..49_152).contains(&t)),
            "{}: ids in range",
            f.name
        );
        for name in MODEL_SETTINGS {
            assert!(
                f.setting(name).is_some(),
                "{}: setting {name} missing",
                f.name
            );
        }
        let vocab = Vocab::load(&m.vocab).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            vocab.len(),
            f.vocab_size(),
            "{}: vocab and logits agree on V",
            f.name
        );
        // A greedy step with no penalty returns the raw logits unchanged.
        if let Some(s) = f
            .settings
            .iter()
            .find(|s| s.kwargs.len() == 1 && s.kwargs.get("do_sample") == Some(&false.into()))
        {
            assert_eq!(s.scores, f.logits, "{}: {}", f.name, s.name);
        }
    }
}

#[test]
fn the_hello_prompt_is_the_articles_prompt() {
    let all = load_all();
    let hello = all
        .iter()
        .find(|f| f.name == "hello_k7")
        .expect("hello_k7 fixture");
    let m = hello.model.as_ref().expect("model metadata");
    assert_eq!(m.prompt, "How do you say hello in Chinese?");
    assert_eq!(m.k, 7);
    // k = 7 ends inside a multi-byte character, decoded as U+FFFD.
    assert!(
        m.full_answer
            .starts_with(m.answer.trim_end_matches('\u{FFFD}')),
        "answer is a prefix of the full answer"
    );
}
