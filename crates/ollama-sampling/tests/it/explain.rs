//! from_generate, describe, explain and fix against transformers, and the
//! request routes.

use ollama_sampling::OllamaGo;
use parity_core::{Against, Comparison, Context, Distribution, Logits, Precision, Semantics};
use serde_json::{Map, Value, json};

fn map(v: Value) -> Map<String, Value> {
    v.as_object().cloned().expect("object")
}

#[test]
fn generate_kwargs_map_literally_and_greedy_is_temperature_zero() {
    let p = OllamaGo::default()
        .from_generate(&map(
            json!({"do_sample": true, "temperature": 0.7, "top_k": 20,
            "repetition_penalty": 1.3}),
        ))
        .expect("expressible")
        .expect("valid");
    assert_eq!(
        (p.temperature, p.top_k, p.top_p, p.repeat_penalty),
        (0.7, 20, 0.9, 1.3)
    );
    let g = OllamaGo::default()
        .from_generate(&map(json!({"do_sample": false, "top_k": 5})))
        .expect("expressible")
        .expect("valid");
    assert_eq!((g.temperature, g.top_k), (0.0, 40));
    assert!(
        OllamaGo::default()
            .from_generate(&map(json!({"do_sample": true, "eta_cutoff": 0.001})))
            .is_none()
    );
}

#[test]
fn describe_lists_what_the_sampler_ignores() {
    let p = OllamaGo::default()
        .parse_params(&map(json!({"repeat_penalty": 1.3})))
        .expect("valid");
    let d = OllamaGo::default()
        .describe(&p)
        .expect("described")
        .into_json();
    assert_eq!(d["temperature"], json!(0.8));
    assert_eq!(d["top_p"], json!(0.9));
    assert_eq!(d["ignored"]["repeat_penalty"], json!(1.3));
}

fn against<'a>(
    kwargs: &'a Map<String, Value>,
    logits: &'a [f32],
    hf: &'a Distribution,
    this: &'a Distribution,
    cmp: &'a Comparison,
) -> Against<'a> {
    Against {
        kwargs,
        generation_config: None,
        logits,
        context: Context::new(&[], None).expect("context"),
        transformers: hf,
        this,
        comparison: cmp,
        variant: None,
    }
}

#[test]
fn explain_names_defaults_ties_and_ignored_penalties() {
    // logits tie at the 2nd/3rd place: top_k 2 cuts the tie
    let logits = [3.0f32, 2.0, 2.0, 1.0];
    let kw = map(json!({"do_sample": true, "top_k": 2, "repetition_penalty": 1.2}));
    let p = OllamaGo::default()
        .from_generate(&kw)
        .expect("some")
        .expect("valid");
    let ctx = Context::new(&[], None).expect("context");
    let this = OllamaGo::default()
        .distribution(&Logits::from_f32(&logits), &ctx, &p)
        .expect("dist");
    let hf = Distribution::new(vec![0.5, 0.25, 0.25, 0.0], Precision::F64);
    let cmp = Comparison::new(hf.probs(), this.probs()).expect("same width");
    let e = OllamaGo::default().explain(&against(&kw, &logits, &hf, &this, &cmp), &p);
    let all = e.reasons.join(" | ");
    assert!(
        all.contains("ignored by Ollama's Go sampler: repeat_penalty 1.2"),
        "{all}"
    );
    assert!(all.contains("top_p 0.9"), "{all}");
    assert!(all.contains("temperature 0.8"), "{all}");
    assert!(all.contains("top_k keeps exactly 2"), "{all}");
    // a repetition penalty cannot be matched: no fix
    assert!(e.fix.is_none());
    let fix = OllamaGo::default()
        .fix(&map(json!({"do_sample": true, "temperature": 0.7})), None)
        .expect("matchable");
    assert_eq!(
        Value::Object(fix.params),
        json!({"temperature": 0.7, "top_k": 50, "top_p": 1.0, "min_p": 0.0})
    );
}

#[test]
fn top_p_on_the_boundary_is_explained() {
    // two equal logits: softmax 0.5, 0.5; p = 0.5 lands exactly on the first sum
    let logits = [0.0f32, 0.0];
    let kw = map(json!({"do_sample": true, "top_p": 0.5, "temperature": 1.0, "top_k": 0}));
    let p = OllamaGo::default()
        .from_generate(&kw)
        .expect("some")
        .expect("valid");
    let ctx = Context::new(&[], None).expect("context");
    let this = OllamaGo::default()
        .distribution(&Logits::from_f32(&logits), &ctx, &p)
        .expect("dist");
    assert_eq!(this.kept(), &[0, 1]); // recorded: half2/top_p=0.5 keeps both too
    let hf = Distribution::new(vec![1.0, 0.0], Precision::F64);
    let cmp = Comparison::new(hf.probs(), this.probs()).expect("same width");
    let e = OllamaGo::default().explain(&against(&kw, &logits, &hf, &this, &cmp), &p);
    assert!(
        e.reasons.iter().any(|r| r.contains("lands exactly on p")),
        "{:?}",
        e.reasons
    );
}

#[test]
fn routes_cover_the_three_endpoints() {
    let routes =
        OllamaGo::default().from_request(&map(json!({"temperature": 0.5, "min_p": 0.1})), None);
    assert_eq!(routes.len(), 3);
    let chat = routes[0].params.as_ref().expect("chat");
    assert_eq!((chat.temperature, chat.top_p, chat.min_p), (0.5, 1.0, 0.0));
    assert_eq!(routes[0].ignored, vec!["min_p"]);
    let native = routes[2].params.as_ref().expect("native");
    assert_eq!(
        (native.temperature, native.top_p, native.min_p),
        (0.5, 0.9, 0.1)
    );
}

#[test]
fn v0175_penalties_act_and_are_described() {
    let p = OllamaGo::default()
        .parse_params(&map(json!({"version": "v0.17.6", "repeat_penalty": 1.3})))
        .expect("valid");
    let d = OllamaGo::default()
        .describe(&p)
        .expect("described")
        .into_json();
    assert_eq!(d["version"], json!("0.17.6"));
    assert_eq!(d["repeat_penalty"], json!(1.3));
    assert!(d["ignored"].get("repeat_penalty").is_none());
    // logits [3, 2, 2, 1], context [0, 0]: 3 / 1.3 = 2.3076923
    let ids = [0i64, 0];
    let ctx = Context::new(&ids, None).expect("context");
    let dist = OllamaGo::default()
        .distribution(&Logits::from_f32(&[3.0, 2.0, 2.0, 1.0]), &ctx, &p)
        .expect("dist");
    assert_eq!(dist.penalised().expect("penalised")[0], 3.0f32 / 1.3f32);
    // a repetition penalty is matchable in this era while the context fits 64 ids
    let kw = map(json!({"do_sample": true, "repetition_penalty": 1.3}));
    let logits = [3.0f32, 2.0, 2.0, 1.0];
    let hf = Distribution::new(vec![0.25; 4], Precision::F64);
    let cmp = Comparison::new(hf.probs(), dist.probs()).expect("same width");
    let row = Against {
        kwargs: &kw,
        generation_config: None,
        logits: &logits,
        context: ctx,
        transformers: &hf,
        this: &dist,
        comparison: &cmp,
        variant: None,
    };
    let e = OllamaGo::default().explain(&row, &p);
    let fix = e.fix.expect("matchable with 2 context ids");
    assert_eq!(fix.params["repeat_penalty"], json!(1.3));
    assert_eq!(fix.params["version"], json!("0.17.6"));
}

/// What stands in the way is what acts in transformers (hf_sampling::Acting).
/// transformers 5.23.0 `generation/utils.py`: `NoRepeatNGramLogitsProcessor`
/// only for `no_repeat_ngram_size > 0` (line 1482); contrastive search only
/// when `do_sample is not True` (`generation/configuration_utils.py` line 552),
/// so `penalty_alpha` while sampling changes nothing. Both used to block.
#[test]
fn only_what_transformers_runs_blocks_a_port() {
    let sampling = map(json!({"do_sample": true, "temperature": 0.7,
                              "no_repeat_ngram_size": -1, "penalty_alpha": 0.6}));
    assert!(OllamaGo::default().from_generate(&sampling).is_some());
    assert!(ollama_sampling::go::matching_options(&sampling).is_ok());
    // Greedy with top_k 50 (the default) and penalty_alpha > 0 is contrastive search.
    let contrastive = map(json!({"penalty_alpha": 0.6}));
    assert_eq!(
        ollama_sampling::go::matching_options(&contrastive).unwrap_err(),
        ["penalty_alpha = 0.6: Ollama has no such option"]
    );
    // Typical sampling acts below 1 only (line 1629).
    assert!(
        ollama_sampling::go::matching_options(&map(json!({"do_sample": true, "typical_p": 1.5})))
            .is_ok()
    );
    assert_eq!(
        ollama_sampling::go::matching_options(&map(json!({"do_sample": true, "typical_p": 0.5})))
            .unwrap_err(),
        ["typical_p = 0.5: the Go sampler has no typical sampling"]
    );
}

/// The options spell out what transformers resolves: `top_k: null` is its
/// top-k off (the Go sampler's 0), not its default 50, which an unset
/// top_k is.
#[test]
fn a_null_top_k_is_off_not_the_default() {
    let top_k = |kw: Value| {
        ollama_sampling::go::matching_options(&map(kw)).expect("matchable")["top_k"].clone()
    };
    assert_eq!(top_k(json!({"do_sample": true, "top_k": null})), json!(0));
    assert_eq!(top_k(json!({"do_sample": true})), json!(50));
}
