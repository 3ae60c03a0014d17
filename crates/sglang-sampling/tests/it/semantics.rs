//! The rules on hand-computed cases, and the report-facing parts of the
//! semantics (routes, explain, fix).

use parity_core::metrics::Comparison;
use parity_core::{Against, Context, Distribution, Logits, Precision, Semantics};
use serde_json::{Map, Value, json};
use sglang_sampling::Sglang;

fn obj(v: Value) -> Map<String, Value> {
    v.as_object().cloned().expect("object")
}

fn run(logits: &[f32], ids: &[i64], prompt_len: usize, params: Value) -> Distribution {
    let ctx = Context::new(ids, Some(prompt_len)).expect("context");
    let p = Sglang.parse_params(&obj(params)).expect("valid params");
    Sglang
        .distribution(&Logits::from_f32(logits), &ctx, &p)
        .expect("distribution")
}

/// ln 5, ln 3, ln 2: probabilities 0.5, 0.3, 0.2.
fn five_three_two() -> Vec<f32> {
    [5.0f64, 3.0, 2.0].iter().map(|x| x.ln() as f32).collect()
}

#[test]
fn top_p_is_measured_on_the_full_vocabulary_mass() {
    // top_k 2, top_p 0.55. SGLang: the mass before token 1 is 0.5 <= 0.55, so
    // both of the top 2 stay: 0.5/0.8 = 0.625, 0.3/0.8 = 0.375.
    // transformers renormalises first (0.625, 0.375) and keeps token 0 only.
    let d = run(
        &five_three_two(),
        &[0],
        1,
        json!({"top_k": 2, "top_p": 0.55}),
    );
    assert_eq!(d.kept(), &[0, 1]);
    assert!((d.probs()[0] - 0.625).abs() < 1e-6, "{:?}", d.probs());
    assert!((d.probs()[1] - 0.375).abs() < 1e-6, "{:?}", d.probs());
    // min-p does not change that in the torch path (min-p against the max,
    // 0.5 · 0.1 = 0.05, drops nothing here).
    let d = run(
        &five_three_two(),
        &[0],
        1,
        json!({"top_k": 2, "top_p": 0.55, "min_p": 0.1}),
    );
    assert_eq!(d.kept(), &[0, 1]);
}

#[test]
fn penalties_count_generated_ids_only_and_repetition_comes_last() {
    // Prompt [0], generated [2, 2]; repetition 2, frequency 0.5.
    // Token 0 is only in the prompt: untouched (2.0).
    // Token 2: 0 - (0.5 + 0.5) = -1 added: -1 - 1 = -2; then < 0: -2 · 2 = -4.
    let d = run(
        &[2.0, 1.0, -1.0],
        &[0, 2, 2],
        1,
        json!({"temperature": 0, "repetition_penalty": 2.0, "frequency_penalty": 0.5}),
    );
    assert_eq!(d.penalised(), Some(&[2.0f32, 1.0, -4.0][..]));
    assert_eq!(d.kept(), &[0]);
}

#[test]
fn logit_bias_is_added_after_the_penalties() {
    // Generated [1]; repetition 2 halves token 1's 1.0 to 0.5, then +3 = 3.5.
    // A bias before the penalty would have given (1 + 3) / 2 = 2.
    let d = run(
        &[2.0, 1.0, 0.0],
        &[0, 1],
        1,
        json!({"temperature": 0, "repetition_penalty": 2.0, "logit_bias": {"1": 3.0}}),
    );
    assert_eq!(d.penalised(), Some(&[2.0f32, 3.5, 0.0][..]));
    assert_eq!(d.kept(), &[1]);
}

#[test]
fn seeded_draws_need_the_server_flag() {
    let logits = five_three_two();
    let d = run(&logits, &[0, 1], 1, json!({"sampling_seed": 42}));
    assert_eq!(d.tokens(), None, "sampling_seed alone is ignored");
    let d = run(
        &logits,
        &[0, 1],
        1,
        json!({"sampling_seed": 42, "enable_deterministic_inference": true, "draws": 200}),
    );
    let t = d.tokens().expect("draws");
    assert_eq!(t.len(), 200);
    // 200 draws from (0.5, 0.3, 0.2): each id appears, none outside.
    for id in 0..3 {
        assert!(t.contains(&id), "{id} never drawn");
    }
    let ctx = Context::new(&[0, 1], Some(1)).expect("context");
    let p = Sglang
        .parse_params(&obj(
            json!({"min_p": 0.1, "enable_deterministic_inference": true}),
        ))
        .expect("valid");
    let e = Sglang
        .distribution(&Logits::from_f32(&logits), &ctx, &p)
        .unwrap_err();
    assert!(
        e.to_string()
            .starts_with("AssertionError: With sampling seed"),
        "{e}"
    );
}

#[test]
fn routes_merge_the_generation_config_into_chat_only() {
    let req = obj(json!({"temperature": 0.5, "foo": 1, "max_tokens": 3}));
    let gc = obj(json!({"top_k": 20, "top_p": 0.8, "do_sample": false}));
    let routes = Sglang.from_request(&req, Some(&gc));
    assert_eq!(routes.len(), 2);
    let chat = routes[0].params.as_ref().expect("chat");
    assert_eq!((chat.temperature, chat.top_k, chat.top_p), (0.5, 20, 0.8));
    assert!(
        routes[0].notes.iter().any(|n| n.contains("top_k, top_p")),
        "{:?}",
        routes[0].notes
    );
    assert_eq!(routes[0].ignored, vec!["foo".to_string()]);
    let completions = routes[1].params.as_ref().expect("completions");
    assert_eq!(
        (completions.top_k, completions.top_p),
        (sglang_sampling::TOP_K_ALL, 1.0)
    );
    let bad = obj(json!({"regex": "a+"}));
    let e = Sglang.from_request(&bad, None)[0]
        .params
        .as_ref()
        .unwrap_err()
        .to_string();
    assert!(e.contains("`regex` (= \"a+\")"), "{e}");
}

#[test]
fn explain_names_the_full_mass_top_p_and_fix_declines_it() {
    let kwargs = obj(json!({"do_sample": true, "top_k": 2, "top_p": 0.55}));
    let logits = five_three_two();
    let ids = [0i64];
    let ctx = Context::new(&ids, Some(1)).expect("context");
    let p = Sglang
        .from_generate(&kwargs)
        .expect("expressible")
        .expect("valid");
    let this = Sglang
        .distribution(&Logits::from_f32(&logits), &ctx, &p)
        .expect("distribution");
    let hf = Distribution::new(vec![1.0, 0.0, 0.0], Precision::F32);
    let cmp = Comparison::new(hf.probs(), this.probs()).expect("same length");
    let row = Against {
        kwargs: &kwargs,
        generation_config: None,
        logits: &logits,
        context: ctx,
        transformers: &hf,
        this: &this,
        comparison: &cmp,
        variant: None,
    };
    let e = Sglang.explain(&row, &p);
    assert!(
        e.reasons.iter().any(|r| r.starts_with("top-p after top-k")),
        "{:?}",
        e.reasons
    );
    assert!(e.fix.is_none());
    let f = Sglang
        .fix(&obj(json!({"do_sample": true, "temperature": 0.7})), None)
        .expect("a fix");
    assert_eq!(f.params, obj(json!({"temperature": 0.7, "top_k": 50})));
}
