//! Parameter resolution: precedence, null vs absent, validation like transformers.

use hf_sampling::{GenerationConfig, GenerationParams, HfError, resolve};
use serde_json::{Map, Value, json};

fn kw(v: Value) -> Map<String, Value> {
    v.as_object().expect("object").clone()
}

#[test]
fn defaults_sample_with_top_k_50() {
    let p = resolve(&kw(json!({"do_sample": true, "temperature": 0.7})), None).expect("valid");
    assert_eq!(p.top_k, Some(50));
    assert_eq!(
        p.processor_names().expect("valid"),
        ["TemperatureLogitsWarper", "TopKLogitsWarper"]
    );
    let g = resolve(&Map::new(), None).expect("valid");
    assert_eq!(g, GenerationParams::default());
    assert!(g.processor_names().expect("valid").is_empty());
}

#[test]
fn null_is_a_value_in_kwargs_but_unset_in_config() {
    let off = resolve(&kw(json!({"do_sample": true, "top_k": null})), None).expect("valid");
    assert_eq!(off.top_k, None);
    let cfg = GenerationConfig::from_json_str(r#"{"top_k": null, "temperature": 0.6, "foo": [1]}"#)
        .expect("valid config");
    let p = resolve(&kw(json!({"do_sample": true})), Some(&cfg)).expect("valid");
    assert_eq!(
        p.top_k,
        Some(50),
        "null in generation_config.json means unset"
    );
    assert_eq!(p.temperature, 0.6);
    let p = resolve(
        &kw(json!({"do_sample": true, "temperature": 0.9})),
        Some(&cfg),
    )
    .expect("valid");
    assert_eq!(p.temperature, 0.9, "kwargs beat the config");
}

#[test]
fn config_rejects_wrong_types() {
    let err = GenerationConfig::from_json_str(r#"{"top_k": "50"}"#).expect_err("string top_k");
    assert!(
        err.to_string().contains("top_k") && err.to_string().contains("\"50\""),
        "{err}"
    );
    assert!(GenerationConfig::from_json_str(r#"{"do_sample": 1}"#).is_err());
    assert!(GenerationConfig::from_json_str("[1]").is_err());
}

#[test]
fn sampling_values_are_not_checked_when_greedy() {
    for v in [
        json!({"temperature": 0.0}),
        json!({"top_k": -1}),
        json!({"top_p": -3}),
        json!({"min_p": 7}),
    ] {
        let mut m = kw(v);
        m.insert("do_sample".into(), json!(false));
        resolve(&m, None).unwrap_or_else(|e| panic!("{m:?}: {e}"));
    }
}

#[test]
fn python_types_matter() {
    // isinstance(temperature, float): 2 (int) is rejected, 1 (int) is a no-op.
    let e = resolve(&kw(json!({"do_sample": true, "temperature": 2})), None).expect_err("int");
    assert!(e.to_string().contains("(=2)"), "{e}");
    assert!(resolve(&kw(json!({"do_sample": true, "temperature": 1})), None).is_ok());
    // isinstance(top_k, int): 2.0 is rejected, 0.0 is "off" (0.0 != 0 is False).
    assert!(matches!(
        resolve(&kw(json!({"do_sample": true, "top_k": 2.0})), None),
        Err(HfError::TopK { .. })
    ));
    assert_eq!(
        resolve(&kw(json!({"do_sample": true, "top_k": 0.0})), None)
            .expect("off")
            .top_k,
        None
    );
    // top_p goes through float(): -1 prints as -1.0.
    let e = resolve(&kw(json!({"do_sample": true, "top_p": -1})), None).expect_err("negative");
    assert!(e.to_string().ends_with("but is -1.0"), "{e}");
    // repetition_penalty must be a float even in greedy mode.
    assert!(matches!(
        resolve(&kw(json!({"repetition_penalty": 2})), None),
        Err(HfError::RepetitionPenalty { .. })
    ));
}

#[test]
fn unknown_and_unsupported_kwargs() {
    let e = resolve(&kw(json!({"do_sample": true, "topk": 5})), None).expect_err("typo");
    assert!(e.to_string().contains("`topk` (=5)"), "{e}");
    assert!(
        resolve(&kw(json!({"foo": null})), None).is_ok(),
        "None model kwargs are dropped"
    );
    assert!(
        resolve(
            &kw(json!({"max_new_tokens": 1, "output_scores": true})),
            None
        )
        .is_ok()
    );
    assert!(matches!(
        resolve(&kw(json!({"num_beams": 4})), None),
        Err(HfError::Unsupported { .. })
    ));
    assert!(resolve(&kw(json!({"num_beams": 1})), None).is_ok());
}

/// A decoder-only model's prompt is `encoder_input_ids` in transformers 5.23.0
/// (`generation/utils.py` line 2989 passes `inputs_tensor`), so
/// `EncoderRepetitionPenaltyLogitsProcessor` (line 1449, `!= 1.0`) and
/// `EncoderNoRepeatNGramLogitsProcessor` (line 1491, `> 0`) act on the prompt:
/// with a toy decoder-only model, prompt [7, 4], `encoder_repetition_penalty=2.0`
/// turned the scores of 7 and 4 from 3.203 and -1.782 into 6.407 and -0.891.
/// This crate does not model them, so it refuses them instead of ignoring them
/// (it used to ignore them).
#[test]
fn encoder_processors_act_on_the_prompt_and_are_refused() {
    for v in [
        json!({"encoder_repetition_penalty": 2.0}),
        json!({"encoder_no_repeat_ngram_size": 1}),
    ] {
        assert!(
            matches!(
                resolve(&kw(v.clone()), None),
                Err(HfError::Unsupported { .. })
            ),
            "{v}"
        );
    }
    for v in [
        json!({"encoder_repetition_penalty": 1.0}),
        json!({"encoder_repetition_penalty": null}),
        json!({"encoder_no_repeat_ngram_size": 0}),
        json!({"encoder_no_repeat_ngram_size": -1}),
    ] {
        assert!(resolve(&kw(v.clone()), None).is_ok(), "{v}");
    }
}

#[test]
fn processor_order_is_transformers_order() {
    let p = resolve(
        &kw(json!({"do_sample": true, "temperature": 0.7, "top_k": 40, "top_p": 0.9, "min_p": 0.05,
                   "typical_p": 0.9, "epsilon_cutoff": 3e-4, "eta_cutoff": 2e-3, "repetition_penalty": 1.3})),
        None,
    )
    .expect("valid");
    assert_eq!(
        p.processor_names().expect("valid"),
        [
            "RepetitionPenaltyLogitsProcessor",
            "TemperatureLogitsWarper",
            "TopKLogitsWarper",
            "TopPLogitsWarper",
            "MinPLogitsWarper",
            "TypicalLogitsWarper",
            "EpsilonLogitsWarper",
            "EtaLogitsWarper"
        ]
    );
}

/// `compare semantics`' list is derived from `GenerationParams`' declaration
/// (every field but `constraints`); each listed default, written out, is
/// what the parser does with the field left out, greedy and sampling.
#[test]
fn the_listed_params_and_defaults_are_the_parsers() {
    use hf_sampling::{Hf, HfRust};
    use parity_core::Semantics;
    assert_eq!(
        parity_core::params::defaults_agree(&HfRust::default()),
        Ok(())
    );
    assert_eq!(parity_core::params::defaults_agree(&Hf::default()), Ok(()));
    let listed = HfRust::default().info().params;
    let names: Vec<_> = listed.iter().map(|p| p.name).collect();
    assert_eq!(
        names,
        GenerationParams::FIELDS[..GenerationParams::FIELDS.len() - 1]
    );
    assert_eq!(GenerationParams::FIELDS.last(), Some(&"constraints"));
    for base in [json!({}), json!({"do_sample": true})] {
        let unset = resolve(&kw(base.clone()), None).expect("valid");
        // The sampling base's own key stays as the base sets it.
        for p in listed.iter().filter(|p| base.get(p.name).is_none()) {
            let mut one = kw(base.clone());
            let value: Value = serde_json::from_str(p.default).expect("JSON");
            one.insert(p.name.into(), value);
            let got = resolve(&one, None).expect("the default is valid");
            assert_eq!(got, unset, "`{}` = {} with {base}", p.name, p.default);
        }
    }
}
