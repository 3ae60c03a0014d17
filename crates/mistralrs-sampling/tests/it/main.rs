//! mistral.rs's request fields, refusals, generation-config merge,
//! generate-kwargs port and route notes, each read from the source named
//! beside it. The sampler's numbers are the real sampler's: `replay.rs`
//! replays every case recorded from `mistralrs-core/src/sampler.rs`.

mod replay;

use mistralrs_sampling::{MistralRs, Version, request_params};
use parity_core::{Context, Logits, Semantics};
use serde_json::json;

#[test]
fn refusals_are_mistral_rs_own() {
    let ctx_ids = [0i64];
    let ctx = Context::new(&ctx_ids, Some(1)).expect("context");
    let empty = Context::new(&[], None).expect("context");
    let l = Logits::from_f32(&[f32::NEG_INFINITY, f32::NEG_INFINITY]);
    let greedy = MistralRs
        .parse_params(json!({"temperature": 0}).as_object().expect("obj"))
        .expect("greedy");
    assert_eq!(
        MistralRs
            .distribution(&l, &ctx, &greedy)
            .unwrap_err()
            .to_string(),
        "argmax received no finite logits"
    );
    // Unset temperature is T = 1: softmax of all -inf is (-inf - -inf).exp()
    // = NaN, which WeightedIndex refuses.
    let p = MistralRs
        .parse_params(&serde_json::Map::new())
        .expect("defaults");
    let e = MistralRs
        .distribution(&l, &ctx, &p)
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("Invalid sampling probability at index 0: NaN"),
        "{e}"
    );
    let ok = Logits::from_f32(&[0.0, 1.0]);
    assert!(
        MistralRs
            .distribution(&ok, &empty, &p)
            .unwrap_err()
            .to_string()
            .starts_with("Penalty context is empty")
    );
    let e = MistralRs
        .parse_params(json!({"top_k": -1}).as_object().expect("obj"))
        .unwrap_err();
    // serde's own words, as mistral.rs's deserialiser gives them.
    assert_eq!(
        e.to_string(),
        "`top_k` = -1: invalid value: integer `-1`, expected usize"
    );
    // This crate's bound on replayed draws (each earlier draw is one step
    // of the generator).
    let e = MistralRs
        .parse_params(
            json!({"draws": 20, "earlier_draws": 9_999_990u64})
                .as_object()
                .expect("obj"),
        )
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "`earlier_draws` + `draws` = 10000010: at most 10000000 draws are replayed"
    );
}

#[test]
fn generation_config_fills_unset_fields_in_0_9_2_only() {
    let req = json!({"temperature": 0.7, "max_tokens": 8});
    let gc = json!({"do_sample": true, "temperature": 0.6, "top_k": 20, "top_p": 0.95, "suppress_tokens": [7]});
    let p = request_params(req.as_object().expect("obj"), gc.as_object()).expect("valid");
    assert_eq!(
        (p.temperature, p.top_k, p.top_p),
        (Some(0.7), Some(20), Some(0.95))
    );
    assert_eq!(p.logit_bias, vec![(7, -1.0e9)]);
    let mut old = req.clone();
    old["version"] = json!("0.9.1");
    let p = request_params(old.as_object().expect("obj"), gc.as_object()).expect("valid");
    assert_eq!((p.version, p.top_k, p.top_p), (Version::V0_9_1, None, None));
    // do_sample: false in the model's config: unset top_k becomes 1 (greedy in effect).
    let gc = json!({"do_sample": false, "temperature": 0.6});
    let p = request_params(req.as_object().expect("obj"), gc.as_object()).expect("valid");
    assert_eq!((p.temperature, p.top_k), (Some(0.7), Some(1)));
}

#[test]
fn literal_port_of_generate_kwargs() {
    let k = json!({"do_sample": true, "temperature": 0.7, "top_k": 40, "top_p": 0.9});
    let p = MistralRs
        .from_generate(k.as_object().expect("obj"))
        .expect("expressible")
        .expect("valid");
    assert_eq!(
        (p.temperature, p.top_k, p.top_p),
        (Some(0.7), Some(40), Some(0.9))
    );
    // do_sample=False must send temperature 0: sampler.rs `Sampler::new`
    //     let temperature = if temperature.is_none_or(|v| v < 1e-7) {
    // makes 0 argmax, while an absent one is 1.0 (add_request.rs
    // `temperature.unwrap_or(1.0)`).
    let k = json!({"do_sample": false, "temperature": 0.7, "top_k": 40});
    let p = MistralRs
        .from_generate(k.as_object().expect("obj"))
        .expect("expressible")
        .expect("valid");
    assert_eq!((p.temperature, p.top_k), (Some(0.0), Some(40)));
    let d = MistralRs
        .distribution(
            &Logits::from_f32(&[1.0, 4.0, 4.0, 0.0]),
            &Context::new(&[0], Some(1)).expect("context"),
            &p,
        )
        .expect("runs");
    assert_eq!(d.kept(), &[1]);
    // do_sample=True without a temperature: unset, i.e. T = 1 as in transformers.
    let k = json!({"do_sample": true, "top_p": 0.9});
    let p = MistralRs
        .from_generate(k.as_object().expect("obj"))
        .expect("expressible")
        .expect("valid");
    assert_eq!((p.temperature, p.top_p), (None, Some(0.9)));
    let k = json!({"do_sample": true, "typical_p": 0.9});
    assert!(
        MistralRs
            .from_generate(k.as_object().expect("obj"))
            .is_none()
    );
}

/// Which transformers warpers act is hf_sampling::Acting's rule: transformers
/// 5.23.0 `generation/utils.py` adds `TypicalLogitsWarper` only
/// `if generation_config.do_sample:` (line 1597) and `typical_p < 1.0`
/// (line 1629). typical_p 1.5, or any typical_p when greedy, changes nothing
/// there, so the kwargs port (they used to be refused for `typical_p != 1`).
#[test]
fn typical_p_that_transformers_ignores_does_not_block_the_port() {
    for k in [
        json!({"do_sample": true, "temperature": 0.7, "typical_p": 1.5}),
        json!({"do_sample": false, "typical_p": 0.9}),
    ] {
        assert!(
            MistralRs
                .from_generate(k.as_object().expect("obj"))
                .is_some(),
            "{k}"
        );
    }
}

#[test]
fn request_notes_the_default_temperature_and_the_dropped_seed() {
    // mistralrs-server-core/src/openai.rs (v0.9.0 to 9e922623):
    //     #[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
    //     pub struct ChatCompletionRequest {
    // has no `seed` field and no `#[serde(deny_unknown_fields)]`: serde drops
    // the seed without an error.
    let req = json!({"top_p": 0.9, "seed": 7});
    let routes = MistralRs.from_request(req.as_object().expect("obj"), None);
    assert_eq!(routes.len(), 1);
    let r = &routes[0];
    let p = r.params.as_ref().expect("valid");
    assert_eq!((p.temperature, p.top_p), (None, Some(0.9)));
    assert!(
        r.notes.iter().any(|n| n.starts_with("temperature 1.0")),
        "{:?}",
        r.notes
    );
    assert!(
        r.notes
            .iter()
            .any(|n| n.starts_with("seed 7 silently ignored")),
        "{:?}",
        r.notes
    );
    // A temperature from the model's generation config (0.9.2 merge) is no default.
    let gc = json!({"temperature": 0.6});
    let routes = MistralRs.from_request(req.as_object().expect("obj"), gc.as_object());
    assert!(
        !routes[0]
            .notes
            .iter()
            .any(|n| n.starts_with("temperature 1.0")),
        "{:?}",
        routes[0].notes
    );
}

/// `compare semantics`' list is derived from `MistralRsParams`; each listed
/// default, written out, is what the parser does with the field left out.
#[test]
fn the_listed_params_and_defaults_are_the_parsers() {
    assert_eq!(parity_core::params::defaults_agree(&MistralRs), Ok(()));
    let names: Vec<_> = MistralRs.info().params.iter().map(|p| p.name).collect();
    assert_eq!(names, mistralrs_sampling::MistralRsParams::FIELDS);
}

/// Only what `ChatCompletionRequest` (v0.9.2) does not declare is dropped:
/// `ignore_eos` is read (chat_completion.rs line 1066), this crate's
/// `version` is not the server's.
#[test]
fn the_route_drops_only_what_the_request_struct_lacks() {
    let req = json!({"ignore_eos": true, "dry_base": 2, "frobnicate": 1, "version": "0.9.1"});
    let routes = MistralRs.from_request(req.as_object().expect("obj"), None);
    assert_eq!(routes[0].ignored, ["frobnicate", "version"]);
    let req = json!({"response_format": {"type": "json_object"}});
    let routes = MistralRs.from_request(req.as_object().expect("obj"), None);
    let e = routes[0].params.as_ref().expect_err("refused").to_string();
    assert!(e.starts_with("`response_format` = "), "{e}");
}
