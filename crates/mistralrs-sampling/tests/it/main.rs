//! Hand-computed vectors from `mistralrs-core/src/sampler.rs` (v0.9.1 and
//! 9e922623 / v0.9.2). The real sampler cannot be driven on given logits
//! here (see the crate docs), so every expected value below is worked out
//! from the source by hand, next to its assertion.

mod replay;

use mistralrs_sampling::{MistralRs, Version, request_params};
use parity_core::{Context, Distribution, Logits, Semantics};
use serde_json::{Value, json};

const TOL: f64 = 1e-6;

fn dist(logits: &[f64], ids: &[i64], prompt_len: usize, params: Value) -> Distribution {
    let p = MistralRs
        .parse_params(params.as_object().expect("object"))
        .expect("valid params");
    let ctx = Context::new(ids, Some(prompt_len)).expect("context");
    let logits = Logits::from_f32(&logits.iter().map(|&x| x as f32).collect::<Vec<_>>());
    MistralRs
        .distribution(&logits, &ctx, &p)
        .expect("distribution")
}

fn assert_probs(d: &Distribution, want: &[f64]) {
    for (i, (&g, &w)) in d.probs().iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= TOL,
            "p[{i}] = {g}, want {w}; all {:?}",
            d.probs()
        );
    }
}

/// ln of (5, 3, 1, 1): softmax 0.5, 0.3, 0.1, 0.1 (up to f32 rounding).
fn five_three_one_one() -> Vec<f64> {
    [5.0f64, 3.0, 1.0, 1.0].iter().map(|q| q.ln()).collect()
}

#[test]
fn top_p_after_top_k_renormalises_since_0_9_2() {
    // top_k = 3 keeps 0.5, 0.3, 0.1 (mass 0.9).
    // 0.9.2: cutoff = 0.55 · 0.9 = 0.495; 0.5 is added (0 < 0.495), then the
    // running sum 0.5 >= 0.495 zeroes the rest: only token 0.
    let d = dist(
        &five_three_one_one(),
        &[0],
        1,
        json!({"temperature": 1.0, "top_k": 3, "top_p": 0.55}),
    );
    assert_eq!(d.kept(), &[0]);
    assert_probs(&d, &[1.0, 0.0, 0.0, 0.0]);
    // 0.9.1: cutoff = 0.55; 0.5 < 0.55 so 0.3 is added too; 0.8 >= 0.55 stops:
    // tokens 0 and 1 with 0.5/0.8 = 0.625 and 0.3/0.8 = 0.375.
    let d = dist(
        &five_three_one_one(),
        &[0],
        1,
        json!({"temperature": 1.0, "top_k": 3, "top_p": 0.55, "version": "0.9.1"}),
    );
    assert_eq!(d.kept(), &[0, 1]);
    assert_probs(&d, &[0.625, 0.375, 0.0, 0.0]);
}

#[test]
fn top_p_keeps_the_crossing_token() {
    // No top-k: cutoff 0.7 (· mass 1.0); 0.5 added, 0.5 < 0.7 so 0.3 added,
    // 0.8 >= 0.7 zeroes 0.1 and 0.1: tokens 0, 1 with 0.625 / 0.375.
    let d = dist(
        &five_three_one_one(),
        &[0],
        1,
        json!({"temperature": 1.0, "top_p": 0.7}),
    );
    assert_eq!(d.kept(), &[0, 1]);
    assert_probs(&d, &[0.625, 0.375, 0.0, 0.0]);
    // top_p = 1.0 and 0.0 are both "off" (only 0 < p < 1 filters).
    for p in [0.0, 1.0, 1.5] {
        let d = dist(
            &five_three_one_one(),
            &[0],
            1,
            json!({"temperature": 1.0, "top_p": p}),
        );
        assert_eq!(d.kept(), &[0, 1, 2, 3], "top_p {p}");
    }
}

#[test]
fn min_p_drops_the_token_at_the_threshold() {
    // logits ln 2, 0, 0: softmax 1/2, 1/4, 1/4, and f32 exp(-ln 2) rounds to
    // exactly 0.5, so p1 = p2 = 0.5/s = (1/s)·0.5 = max_p · min_p exactly.
    // mistral.rs drops q when threshold >= q: only token 0 is left.
    let l = [2f64.ln(), 0.0, 0.0];
    let d = dist(&l, &[0], 1, json!({"temperature": 1.0, "min_p": 0.5}));
    assert_eq!(d.kept(), &[0]);
    // Just below the threshold keeps them: 0.49 · 0.5 = 0.245 < 0.25.
    let d = dist(&l, &[0], 1, json!({"temperature": 1.0, "min_p": 0.49}));
    assert_eq!(d.kept(), &[0, 1, 2]);
    assert_probs(&d, &[0.5, 0.25, 0.25]);
}

#[test]
fn top_k_keeps_exactly_k_even_at_a_tie() {
    // logits 3, 2, 2, 1 with k = 2: token 0 and one of the tied 1/2, with
    // e^3/(e^3+e^2) = 0.731059 and e^2/(e^3+e^2) = 0.268941.
    let d = dist(
        &[3.0, 2.0, 2.0, 1.0],
        &[0],
        1,
        json!({"temperature": 1.0, "top_k": 2}),
    );
    assert_eq!(d.kept().len(), 2);
    assert_eq!(d.kept()[0], 0);
    assert!((d.probs()[0] - 0.731_059).abs() < 1e-6, "{:?}", d.probs());
    assert!(
        (d.probs()[d.kept()[1]] - 0.268_941).abs() < 1e-6,
        "{:?}",
        d.probs()
    );
    // top_k = 0 is off.
    let d = dist(
        &[3.0, 2.0, 2.0, 1.0],
        &[0],
        1,
        json!({"temperature": 1.0, "top_k": 0}),
    );
    assert_eq!(d.kept(), &[0, 1, 2, 3]);
}

#[test]
fn temperature_unset_is_one_and_tiny_is_argmax() {
    // mistralrs-core/src/engine/add_request.rs (v0.9.0, v0.9.1, v0.9.2 and
    // 9e922623) builds the sampler with
    //     Some(request.sampling_params.temperature.unwrap_or(1.0)),
    // so no temperature samples at T = 1 (not greedily). With top_k 3 on
    // logits 1, 4, 4, 0: ids 0, 1, 2 kept, Z = e + 2e^4 = 111.914578:
    // p = e/Z = 0.024289, e^4/Z = 0.487856 (twice).
    let d = dist(&[1.0, 4.0, 4.0, 0.0], &[0], 1, json!({"top_k": 3}));
    assert_eq!(d.kept(), &[0, 1, 2]);
    let z = 1f64.exp() + 2.0 * 4f64.exp();
    assert_probs(&d, &[1f64.exp() / z, 4f64.exp() / z, 4f64.exp() / z, 0.0]);
    // mistralrs-core/src/sampler.rs `Sampler::new` (v0.9.2):
    //     let temperature = if temperature.is_none_or(|v| v < 1e-7) {
    // below 1e-7 (0 included) is argmax: the first maximum (ids 1 and 2 tie at 4).
    for t in [5e-8, 0.0] {
        let d = dist(&[1.0, 4.0, 4.0, 0.0], &[0], 1, json!({"temperature": t}));
        assert_eq!(d.kept(), &[1], "temperature {t}");
    }
    // T = 0.5: logits · f32(1/0.5) = 2, 8, 8, 0: e^-6/(2 + e^-6 + e^-8) = 0.0012357 for id 0.
    let d = dist(&[1.0, 4.0, 4.0, 0.0], &[0], 1, json!({"temperature": 0.5}));
    let z = 2.0 + (-6f64).exp() + (-8f64).exp();
    assert_probs(
        &d,
        &[(-6f64).exp() / z, 1.0 / z, 1.0 / z, (-8f64).exp() / z],
    );
}

#[test]
fn penalties_frequency_presence_then_repetition() {
    // Logits 2, 1, -1, 0.5; prompt [0, 2], generated [1, 1, 2].
    // 0.9.2: counts over generated only: id1 = 2, id2 = 1; seen = {0, 1, 2}.
    // id0: 2 - 0 - 0 = 2, seen → 2 / 2 = 1
    // id1: 1 - 2·0.25 - 0.5 = 0, not > 0 → 0 · 2 = 0
    // id2: -1 - 0.25 - 0.5 = -1.75 → · 2 = -3.5
    // id3: 0.5, unseen.
    let ids = [0, 2, 1, 1, 2];
    let params =
        json!({"frequency_penalty": 0.25, "presence_penalty": 0.5, "repetition_penalty": 2.0});
    let d = dist(&[2.0, 1.0, -1.0, 0.5], &ids, 2, params.clone());
    assert_eq!(d.penalised().expect("penalised"), &[1.0, 0.0, -3.5, 0.5]);
    // 0.9.1: counts over the whole context: id0 = 1, id1 = 2, id2 = 2, and the
    // repetition penalty applies where count > 0 (the same ids here).
    // id0: 2 - 0.25 - 0.5 = 1.25 → / 2 = 0.625
    // id1: 1 - 0.5 - 0.5 = 0 → 0
    // id2: -1 - 0.5 - 0.5 = -2 → -4
    let mut old = params;
    old["version"] = json!("0.9.1");
    let d = dist(&[2.0, 1.0, -1.0, 0.5], &ids, 2, old);
    assert_eq!(d.penalised().expect("penalised"), &[0.625, 0.0, -4.0, 0.5]);
}

#[test]
fn logit_bias_after_penalties_and_out_of_vocab_ids_ignored() {
    // Repetition 2 on id 0 (2 → 1), then bias +1.5 on id 0 → 2.5; id 9 ≥ V is skipped.
    let d = dist(
        &[2.0, 1.0, -1.0, 0.5],
        &[0],
        1,
        json!({"temperature": 0, "repetition_penalty": 2.0, "logit_bias": {"0": 1.5, "9": 3.0}}),
    );
    assert_eq!(d.penalised().expect("penalised"), &[2.5, 1.0, -1.0, 0.5]);
    assert_eq!(d.kept(), &[0]); // greedy: temperature 0
}

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
