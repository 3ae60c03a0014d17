//! `from_generate`, `from_request`, `explain` and its fix, against
//! transformers' recorded scores (fixtures/smollm2, transformers 5.23).

use mlx_sampling::MlxLm;
use parity_core::metrics::softmax_f64;
use parity_core::{Against, Comparison, Context, Distribution, Fixture, Logits, Semantics};
use serde_json::{Map, Value, json};

fn obj(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap_or_default()
}

fn transformers(setting: &parity_core::Setting) -> Vec<f64> {
    if setting.kwargs.get("do_sample") == Some(&Value::Bool(true)) {
        return softmax_f64(&setting.scores);
    }
    let best = parity_core::metrics::argmax_first(&setting.scores);
    let mut p = vec![0.0; setting.scores.len()];
    p[best] = 1.0;
    p
}

#[test]
fn generate_kwargs_map_literally() {
    let p = MlxLm
        .from_generate(&obj(
            json!({"do_sample": true, "temperature": 0.7, "top_k": 40, "repetition_penalty": 1.3}),
        ))
        .expect("expressible")
        .expect("valid");
    assert_eq!(
        Value::Object(p.to_json()),
        json!({"temperature": 0.7, "top_k": 40, "repetition_penalty": 1.3})
    );
    // Greedy: the port writes temp=0; the sampling fields stay but do not run.
    let g = MlxLm
        .from_generate(&obj(json!({"repetition_penalty": 1.3, "do_sample": false})))
        .expect("expressible")
        .expect("valid");
    assert!(g.is_greedy());
    assert!(
        MlxLm
            .from_generate(&obj(json!({"do_sample": true, "eta_cutoff": 2e-3})))
            .is_none()
    );
}

#[test]
fn the_server_route_fills_its_defaults_and_lists_what_it_drops() {
    let routes = MlxLm.from_request(
        &obj(json!({"top_p": 0.9, "typical_p": 0.5, "max_tokens": 8, "repeat_penalty": 1.1})),
        None,
    );
    assert_eq!(routes.len(), 1);
    let r = &routes[0];
    let p = r.params.as_ref().expect("accepted");
    assert!(p.is_greedy(), "no temperature: the server's --temp 0.0");
    assert_eq!(r.ignored, ["repeat_penalty", "typical_p"]);
    assert!(
        r.notes.iter().any(|n| n.contains("greedy")),
        "{:?}",
        r.notes
    );
    let refused = MlxLm.from_request(&obj(json!({"xtc_probability": 1})), None);
    assert_eq!(
        refused[0].params.as_ref().unwrap_err().to_string(),
        "xtc_probability must be of type float (got 1)"
    );
}

#[test]
fn explain_names_the_differences_and_its_fix_reproduces_transformers() {
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
    let (mut rows, mut fixed) = (0, 0);
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
            let params = MlxLm
                .from_generate(&s.kwargs)
                .expect("expressible")
                .expect("parses");
            let this = MlxLm.distribution(&logits, &ctx, &params).expect("runs");
            let hf_probs = transformers(s);
            let hf = Distribution::new(hf_probs.clone(), parity_core::Precision::F32);
            let cmp = Comparison::new(&hf_probs, this.probs()).expect("same length");
            let row = Against {
                kwargs: &s.kwargs,
                generation_config: None,
                logits: &f.logits,
                context: ctx,
                transformers: &hf,
                this: &this,
                comparison: &cmp,
                variant: None,
            };
            let e = MlxLm.explain(&row, &params);
            rows += 1;
            if cmp.max_abs_diff > 1e-5 {
                assert!(
                    !e.reasons.is_empty(),
                    "{label}: differs by {} with no reason",
                    cmp.max_abs_diff
                );
            }
            assert_eq!(e.fix, MlxLm.fix(&s.kwargs, None), "{label}");
            let Some(fix) = e.fix else {
                // Temperature before top-p/min-p, or top-k before top-p: no mlx-lm setting does that.
                assert!(
                    ["p09", "k40p09", "minp05", "k40p09rep"].contains(&s.name.as_str()),
                    "{label}: no fix"
                );
                continue;
            };
            let fp = MlxLm.parse_params(&fix.params).expect("fix parses");
            let fd = MlxLm.distribution(&logits, &ctx, &fp).expect("fix runs");
            assert_eq!(fd.kept(), hf.kept(), "{label}: fix keeps a different set");
            let d = Comparison::new(&hf_probs, fd.probs())
                .expect("same length")
                .max_abs_diff;
            worst = worst.max(d);
            // MLX's sequential float32 sums over 49k weights: up to ~1e-4 relative.
            assert!(d < 1e-4, "{label}: fix still differs by {d}");
            fixed += 1;
        }
    }
    eprintln!("mlx-lm: {rows} rows explained, {fixed} fixed, worst |dp| after the fix {worst:e}");
    assert_eq!((rows, fixed), (60, 36));
}

#[test]
fn temperature_last_is_explained() {
    // write_k60, transformers p09 (temperature 0.7, top_k 0, top_p 0.9) keeps
    // 77 tokens; mlx-lm measures top-p on the untempered distribution.
    let f = Fixture::load(
        &parity_core::fixture::bundled_dir()
            .expect("bundled fixtures")
            .join("smollm2/write_k60.safetensors"),
    )
    .expect("loads");
    let s = f.setting("p09").expect("p09");
    let logits = Logits::from_f32(&f.logits);
    let ctx = Context::new(&f.input_ids, None).expect("context");
    let params = MlxLm
        .from_generate(&s.kwargs)
        .expect("expressible")
        .expect("parses");
    let this = MlxLm.distribution(&logits, &ctx, &params).expect("runs");
    let hf_probs = transformers(s);
    let hf = Distribution::new(hf_probs.clone(), parity_core::Precision::F32);
    assert_eq!(hf.kept().len(), 77);
    assert_ne!(this.kept().len(), 77);
    let cmp = Comparison::new(&hf_probs, this.probs()).expect("same length");
    let row = Against {
        kwargs: &s.kwargs,
        generation_config: None,
        logits: &f.logits,
        context: ctx,
        transformers: &hf,
        this: &this,
        comparison: &cmp,
        variant: None,
    };
    let text = MlxLm.explain(&row, &params).reasons.join(" | ");
    assert!(text.contains("temperature last"), "{text}");
}

#[test]
fn translate_gives_a_request_or_says_why_not() {
    let opts = parity_core::TranslateOptions { context_len: 512 };
    let kw = obj(
        json!({"do_sample": true, "temperature": 0.7, "top_k": 50, "top_p": 1.0,
                        "typical_p": 1.0, "repetition_penalty": 1.3}),
    );
    let t = MlxLm.translate(&kw, &opts).expect("offered").expect("runs");
    let p = t.params.expect("a setup");
    assert_eq!(
        Value::Object(p.clone()),
        json!({"temperature": 0.7, "top_k": 50, "repetition_penalty": 1.3, "repetition_context_size": 0})
    );
    assert!(MlxLm.parse_params(&p).is_ok());
    assert_eq!(
        t.json["mlx_lm_python"],
        "make_sampler(temp=0.7, top_k=50); make_logits_processors(repetition_penalty=1.3, repetition_context_size=0)"
    );
    let blocked = obj(json!({"do_sample": true, "temperature": 0.7, "top_k": 0, "top_p": 0.9}));
    let t = MlxLm
        .translate(&blocked, &opts)
        .expect("offered")
        .expect("runs");
    assert!(t.params.is_none());
    assert!(
        t.json["unmatched"][0]
            .as_str()
            .expect("reason")
            .contains("untempered")
    );
}

/// Which transformers processors act is transformers' rule (hf_sampling::Acting):
/// `TypicalLogitsWarper` only `if generation_config.do_sample:` and `typical_p < 1.0`
/// (transformers 5.23.0 `generation/utils.py` lines 1597 and 1629),
/// `NoRepeatNGramLogitsProcessor` only for `no_repeat_ngram_size > 0` (line 1482).
/// These kwargs used to be refused (`typical_p != 1`, any n-gram size but 0).
#[test]
fn what_blocks_a_port_is_what_acts_in_transformers() {
    let opts = parity_core::TranslateOptions { context_len: 512 };
    let over_one = obj(
        json!({"do_sample": true, "temperature": 0.7, "top_k": 50, "top_p": 1.0,
                              "typical_p": 1.5, "no_repeat_ngram_size": -1}),
    );
    let t = MlxLm
        .translate(&over_one, &opts)
        .expect("offered")
        .expect("runs");
    assert_eq!(t.json["unmatched"], json!([]), "{:?}", t.json);
    assert!(t.params.is_some());
    // Greedy: no warper runs, whatever typical_p says.
    let greedy = obj(json!({"do_sample": false, "typical_p": 0.5}));
    assert!(MlxLm.from_generate(&greedy).is_some());
    // Below 1 while sampling it acts, and blocks.
    let acting = obj(json!({"do_sample": true, "typical_p": 0.5}));
    let t = MlxLm
        .translate(&acting, &opts)
        .expect("offered")
        .expect("runs");
    assert_eq!(
        t.json["unmatched"],
        json!(["typical_p = 0.5: mlx-lm has no such sampler"])
    );
}
