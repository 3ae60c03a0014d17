//! `from_generate`, `explain` and its fix, against transformers' recorded
//! scores (fixtures/smollm2, transformers 5.23).

use llamacpp_sampling::{LlamaCpp, request_for_generate};
use parity_core::metrics::softmax_f64;
use parity_core::{Against, Comparison, Context, Distribution, Fixture, Logits, Semantics};
use serde_json::{Map, Value, json};

fn obj(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap_or_default()
}

#[test]
fn generate_kwargs_map_literally() {
    let r = request_for_generate(&obj(
        json!({"do_sample": true, "temperature": 0.7, "top_k": 40}),
    ))
    .expect("expressible");
    assert_eq!(Value::Object(r), json!({"temperature": 0.7, "top_k": 40}));
    // greedy: sampling fields are ignored by transformers, temperature 0 here
    let r = request_for_generate(&obj(json!({"repetition_penalty": 1.3, "top_k": 5})))
        .expect("expressible");
    assert_eq!(
        Value::Object(r),
        json!({"repeat_penalty": 1.3, "temperature": 0.0})
    );
    assert!(
        request_for_generate(&obj(json!({"do_sample": true, "epsilon_cutoff": 3e-4}))).is_none()
    );
}

fn transformers(setting: &parity_core::Setting) -> Vec<f64> {
    let sample = setting
        .kwargs
        .get("do_sample")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if sample {
        return softmax_f64(&setting.scores);
    }
    let mut best = 0;
    for (i, &s) in setting.scores.iter().enumerate() {
        if s > setting.scores[best] {
            best = i;
        }
    }
    let mut p = vec![0.0; setting.scores.len()];
    p[best] = 1.0;
    p
}

fn against<'a>(
    kwargs: &'a Map<String, Value>,
    logits: &'a [f32],
    context: Context<'a>,
    hf: &'a Distribution,
    this: &'a Distribution,
    comparison: &'a Comparison,
) -> Against<'a> {
    Against {
        kwargs,
        generation_config: None,
        logits,
        context,
        transformers: hf,
        this,
        comparison,
        variant: None,
    }
}

#[test]
fn explain_names_the_differences_and_its_fix_reproduces_transformers() {
    // On every SmolLM2 context, for the article's settings: the literal port
    // differs (reasons given), the fix is a request whose distribution has
    // transformers' kept set and probabilities within float rounding.
    let settings = [
        "t07_default",
        "t07",
        "k40",
        "p09",
        "k40p09",
        "rep13",
        "default",
        "t15",
        "minp05",
        "k40p09rep",
    ];
    let mut fixed = 0;
    let mut worst = 0.0f64;
    for path in parity_core::fixture::bundled_fixtures().expect("fixtures") {
        let f = Fixture::load(&path).expect("loads");
        if f.model.is_none() {
            continue;
        }
        let logits = Logits::from_f32(&f.logits);
        let ctx = Context::new(&f.input_ids, None).expect("context");
        for s in f
            .settings
            .iter()
            .filter(|s| settings.contains(&s.name.as_str()))
        {
            let label = format!("{} {}", f.name, s.name);
            let params = LlamaCpp
                .from_generate(&s.kwargs)
                .expect("expressible")
                .expect("parses");
            let this = LlamaCpp.distribution(&logits, &ctx, &params).expect("runs");
            let hf_probs = transformers(s);
            let hf = Distribution::new(hf_probs.clone(), parity_core::Precision::F32);
            let cmp = Comparison::new(&hf_probs, this.probs()).expect("same length");
            let row = against(&s.kwargs, &f.logits, ctx, &hf, &this, &cmp);
            let e = LlamaCpp.explain(&row, &params);
            if cmp.max_abs_diff > 1e-6 {
                assert!(
                    !e.reasons.is_empty(),
                    "{label}: differs by {} with no reason",
                    cmp.max_abs_diff
                );
            }
            let fix = e.fix.expect("a fix");
            let fp = LlamaCpp.parse_params(&fix.params).expect("fix parses");
            let fd = LlamaCpp.distribution(&logits, &ctx, &fp).expect("fix runs");
            assert_eq!(fd.kept(), hf.kept(), "{label}: fix keeps a different set");
            let d = Comparison::new(&hf_probs, fd.probs())
                .expect("same length")
                .max_abs_diff;
            worst = worst.max(d);
            assert!(d < 1e-5, "{label}: fix still differs by {d}");
            fixed += 1;
        }
    }
    eprintln!("{fixed} rows fixed, worst |dp| after the fix {worst:e}");
    assert_eq!(fixed, 60);
}

#[test]
fn temperature_last_and_default_filters_are_explained() {
    // write_k60, transformers p09 (temperature 0.7, top_k 0, top_p 0.9) keeps
    // 77 tokens; the literal llama-server request keeps more, because top_p
    // sees the untempered distribution and the defaults add top_k 40 and
    // min_p 0.05.
    let f = Fixture::load(
        &parity_core::fixture::bundled_dir()
            .expect("bundled fixtures")
            .join("smollm2/write_k60.safetensors"),
    )
    .expect("loads");
    let s = f.setting("p09").expect("p09");
    let logits = Logits::from_f32(&f.logits);
    let ctx = Context::new(&f.input_ids, None).expect("context");
    let params = LlamaCpp
        .from_generate(&s.kwargs)
        .expect("expressible")
        .expect("parses");
    let this = LlamaCpp.distribution(&logits, &ctx, &params).expect("runs");
    let hf_probs = transformers(s);
    let hf = Distribution::new(hf_probs.clone(), parity_core::Precision::F32);
    assert_eq!(hf.kept().len(), 77);
    let cmp = Comparison::new(&hf_probs, this.probs()).expect("same length");
    let row = against(&s.kwargs, &f.logits, ctx, &hf, &this, &cmp);
    let e = LlamaCpp.explain(&row, &params);
    let text = e.reasons.join(" | ");
    assert!(text.contains("temperature 0.7 is applied last"), "{text}");
    assert!(text.contains("min_p 0.05"), "{text}");
}
