//! Ollama's options layered (defaults, the model's parameters, the request)
//! and mapped onto llama-server's request. Each test quotes the Ollama
//! source line it checks (github.com/ollama/ollama at the tag named).

use llamacpp_sampling::LlamaCpp;
use ollama_sampling::llama_server::{Endpoint, Ollama, VERSIONS, merge};
use parity_core::{Context, Logits, Semantics};
use serde_json::{Map, Value, json};

fn obj(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        other => panic!("not an object: {other}"),
    }
}

/// A float32 option as Ollama sends it: the f32 widened exactly.
fn f32v(x: f32) -> Value {
    json!(f64::from(x))
}

/// A model whose published parameters set every kind of option.
fn model() -> Map<String, Value> {
    obj(json!({
        "temperature": 0.6, "top_p": 0.95, "top_k": 20, "min_p": 0.05,
        "repeat_penalty": 1.05, "frequency_penalty": 0.3, "presence_penalty": 0.2,
        "stop": ["<|im_end|>"], "num_ctx": 4096
    }))
}

#[test]
fn empty_options_are_ollamas_defaults_not_llama_servers() {
    let logits = Logits::from_f32(&[2.0, 1.9, 1.0, 0.5, -3.0]);
    let ctx = Context::new(&[], None).expect("empty context");
    let ollama = Ollama::default();
    let o = ollama.parse_params(&Map::new()).expect("parses");
    let d = ollama.distribution(&logits, &ctx, &o).expect("runs");
    let l = LlamaCpp
        .parse_params(&obj(
            json!({"temperature": 0.8, "top_k": 40, "top_p": 0.9, "min_p": 0.0}),
        ))
        .expect("parses");
    let same = LlamaCpp.distribution(&logits, &ctx, &l).expect("runs");
    assert_eq!(d.probs(), same.probs());
    // llama-server's own defaults (min_p 0.05) cut id 4: -3 < 2 + ln 0.05 = -0.996
    let server = LlamaCpp.parse_params(&Map::new()).expect("parses");
    let d = LlamaCpp.distribution(&logits, &ctx, &server).expect("runs");
    assert!(!d.kept().contains(&4));
}

#[test]
fn ollama_refuses_what_llama_server_refuses() {
    let e = Ollama::default()
        .parse_params(&obj(json!({"repeat_last_n": -1})))
        .expect_err("refused")
        .to_string();
    assert!(
        e.starts_with("`repeat_last_n` = -1: llama-server refuses it"),
        "{e}"
    );
    // api/types.go FromMap (v0.33.0-rc2):
    //     return fmt.Errorf("option %q must be of type float32", key)
    let e = Ollama::default()
        .parse_params(&obj(json!({"temperature": true})))
        .expect_err("refused")
        .to_string();
    assert!(e.contains("must be of type float32"), "{e}");
}

#[test]
fn the_models_parameters_sit_between_the_defaults_and_the_request() {
    // server/routes.go modelOptionsWithEmbeddingBatchDefault (v0.30.0 to v0.33.0-rc2):
    //     opts := api.DefaultOptions()
    //     if err := opts.FromMap(model.Options); err != nil {
    //     if err := opts.FromMap(requestOpts); err != nil {
    let m = model();
    for endpoint in [Endpoint::Generate, Endpoint::Chat] {
        let r = merge(
            endpoint,
            VERSIONS.newest,
            Some(&m),
            &obj(json!({"temperature": 0.7})),
        )
        .expect("merges");
        assert_eq!(r["temperature"], f32v(0.7)); // the request's
        assert_eq!(r["top_k"], json!(20)); // the model's
        assert_eq!(r["top_p"], f32v(0.95));
        assert_eq!(r["min_p"], f32v(0.05));
        assert_eq!(r["repeat_penalty"], f32v(1.05));
        assert_eq!(r["frequency_penalty"], f32v(0.3));
        assert_eq!(r["repeat_last_n"], json!(64)); // Ollama's default
    }
    // api/types.go FromMap: `if val == nil { continue }` — a null request
    // option keeps the model's value.
    let r = merge(
        Endpoint::Chat,
        VERSIONS.newest,
        Some(&m),
        &obj(json!({"top_k": null})),
    )
    .expect("merges");
    assert_eq!(r["top_k"], json!(20));
    // The semantics' params are the request's options over the same layers.
    let ollama = Ollama::with_model_params(m).expect("valid parameters");
    let p = ollama
        .parse_params(&obj(json!({"temperature": 0.7})))
        .expect("parses");
    let want = LlamaCpp
        .parse_params(&obj(json!({
            "temperature": 0.7, "top_k": 20, "top_p": 0.95, "min_p": 0.05, "typical_p": 1.0,
            "repeat_penalty": 1.05, "repeat_last_n": 64, "frequency_penalty": 0.3,
            "presence_penalty": 0.2, "seed": -1
        })))
        .expect("parses");
    assert_eq!(p, want);
}

#[test]
fn openai_chat_always_sends_temperature_and_top_p_but_the_model_keeps_the_rest() {
    // openai/openai.go FromChatRequest (v0.30.0 to v0.33.0-rc2):
    //     if r.Temperature != nil {
    //         options["temperature"] = *r.Temperature
    //     } else {
    //         options["temperature"] = 1.0
    //     }
    // and the same for top_p; frequency/presence/seed only `if ... != nil`.
    let m = model();
    let r = merge(Endpoint::OpenAiChat, VERSIONS.newest, Some(&m), &Map::new()).expect("merges");
    assert_eq!(r["temperature"], json!(1.0)); // not the model's 0.6
    assert_eq!(r["top_p"], json!(1.0)); // not the model's 0.95
    assert_eq!(r["top_k"], json!(20)); // the model's
    assert_eq!(r["min_p"], f32v(0.05));
    assert_eq!(r["repeat_penalty"], f32v(1.05));
    assert_eq!(r["frequency_penalty"], f32v(0.3)); // absent in the request
    let r = merge(
        Endpoint::OpenAiChat,
        VERSIONS.newest,
        Some(&m),
        &obj(json!({"temperature": 0.5, "frequency_penalty": 0.1, "seed": 7, "top_k": 3})),
    )
    .expect("merges");
    assert_eq!(r["temperature"], f32v(0.5));
    assert_eq!(r["frequency_penalty"], f32v(0.1));
    assert_eq!(r["seed"], json!(7));
    assert_eq!(r["top_k"], json!(20)); // ChatCompletionRequest has no top_k
}

#[test]
fn openai_completions_always_send_both_penalties() {
    // openai/openai.go FromCompleteRequest (v0.30.0 to v0.33.0-rc2):
    //     options["frequency_penalty"] = r.FrequencyPenalty
    //     options["presence_penalty"] = r.PresencePenalty
    //     if r.TopP != 0.0 {
    let m = model();
    let r = merge(
        Endpoint::OpenAiCompletions,
        VERSIONS.newest,
        Some(&m),
        &obj(json!({"top_p": 0})),
    )
    .expect("merges");
    assert_eq!(r["frequency_penalty"], json!(0.0)); // the model's 0.3 never applies
    assert_eq!(r["presence_penalty"], json!(0.0));
    assert_eq!(r["top_p"], json!(1.0)); // 0 means absent
    assert_eq!(r["temperature"], json!(1.0));
    assert_eq!(r["top_k"], json!(20));
    // `Temperature *float32`: the request's 0.7 is rounded to float32 on decoding.
    let r = merge(
        Endpoint::OpenAiCompletions,
        VERSIONS.newest,
        None,
        &obj(json!({"temperature": 0.7, "presence_penalty": 0.5})),
    )
    .expect("merges");
    assert_eq!(r["temperature"], f32v(0.7));
    assert_eq!(r["presence_penalty"], json!(0.5));
}

#[test]
fn bad_fields_are_named_with_their_value_in_every_layer() {
    // openai/openai.go ChatCompletionRequest (v0.33.0-rc2):
    //     Temperature      *float64        `json:"temperature"`
    //     Seed             *int            `json:"seed"`
    // gin's ShouldBindJSON fails with encoding/json's UnmarshalTypeError.
    let e = merge(
        Endpoint::OpenAiChat,
        VERSIONS.newest,
        None,
        &obj(json!({"temperature": "hot"})),
    )
    .expect_err("refused")
    .to_string();
    assert_eq!(
        e,
        "`temperature` = \"hot\": Ollama answers 400 (json: cannot unmarshal string into Go struct field ChatCompletionRequest.temperature of type float64)"
    );
    let e = merge(
        Endpoint::OpenAiChat,
        VERSIONS.newest,
        None,
        &obj(json!({"seed": 1.5})),
    )
    .expect_err("refused")
    .to_string();
    assert!(
        e.ends_with("(json: cannot unmarshal number 1.5 into Go struct field ChatCompletionRequest.seed of type int)"),
        "{e}"
    );
    // CompletionRequest: `Temperature *float32 `json:"temperature"``: 1e39
    // overflows a float32.
    let e = merge(
        Endpoint::OpenAiCompletions,
        VERSIONS.newest,
        None,
        &obj(json!({"temperature": 1e39})),
    )
    .expect_err("refused")
    .to_string();
    assert!(
        e.starts_with("`temperature` = 1e+39: Ollama answers 400 (json: cannot unmarshal number 1e+39 into Go struct field CompletionRequest.temperature of type float32)"),
        "{e}"
    );
    // api/types.go FromMap: `return fmt.Errorf("option %q must be of type integer", key)`
    // on the model's layer fails every request to that model.
    let e = Ollama::with_model_params(obj(json!({"top_k": "20"})))
        .expect_err("refused")
        .to_string();
    assert_eq!(
        e,
        "model parameter `top_k` = \"20\": Ollama fails every request to this model (option \"top_k\" must be of type integer)"
    );
    // `return fmt.Errorf("option %q must be of an array of strings", key)`
    let e = Ollama::with_model_params(obj(json!({"stop": [1]})))
        .expect_err("refused")
        .to_string();
    assert!(e.contains("must be of an array of strings"), "{e}");
    let e = Ollama::with_model_params(obj(json!({"topk": 20})))
        .expect_err("refused")
        .to_string();
    assert!(
        e.starts_with("unknown model parameter `topk` (= 20;"),
        "{e}"
    );
}

#[test]
fn repeat_penalty_defaults_to_1_1_up_to_0_32_9() {
    // api/types.go DefaultOptions at v0.32.9 (line 1108):
    //     RepeatPenalty:    1.1,
    // and at v0.32.10 (commit 6a261db7d, "api: stop applying repeat_penalty
    // 1.1 to models that don't set one"):
    //     RepeatPenalty:    1.0,
    for (version, want) in [
        ("0.30.0", 1.1f32),
        ("0.32.9", 1.1),
        ("0.32.10-rc0", 1.0),
        ("v0.32.10", 1.0),
        ("0.33.0-rc2", 1.0),
    ] {
        let v = VERSIONS.parse(version).expect("covered");
        assert_eq!(v.default_repeat_penalty(), want, "{version}");
        let r = merge(Endpoint::Chat, v, None, &Map::new()).expect("merges");
        assert_eq!(r["repeat_penalty"], f32v(want), "{version}");
    }
    // The `version` param: logits 2, 1.9 with id 0 in the context. At 1.1,
    // id 0's logit 2 becomes 2 / 1.1 = 1.818 < 1.9, so id 1 leads.
    let old = Ollama::default()
        .parse_params(&obj(json!({"version": "0.32.9"})))
        .expect("parses");
    let want = LlamaCpp
        .parse_params(&obj(json!({
            "temperature": 0.8, "top_k": 40, "top_p": 0.9, "min_p": 0.0, "typical_p": 1.0,
            "repeat_penalty": 1.1, "repeat_last_n": 64, "frequency_penalty": 0.0,
            "presence_penalty": 0.0, "seed": -1
        })))
        .expect("parses");
    assert_eq!(old, want);
    let logits = Logits::from_f32(&[2.0, 1.9]);
    let ctx = Context::new(&[0], None).expect("context");
    let d = Ollama::default()
        .distribution(&logits, &ctx, &old)
        .expect("runs");
    assert!(d.probs()[1] > d.probs()[0], "{:?}", d.probs());
    // A model that sets its own penalty is unaffected by the version.
    let m = Ollama::with_model_params(obj(json!({"repeat_penalty": 1.0})))
        .expect("valid")
        .at_version(VERSIONS.parse("0.32.9").expect("covered"));
    let p = m.parse_params(&Map::new()).expect("parses");
    assert_eq!(
        p,
        Ollama::default().parse_params(&Map::new()).expect("parses")
    );
    // Outside the covered range: before llama-server (9db4bdbad, first in
    // v0.30.0-rc32), and after the newest tag read.
    for bad in ["0.29.0", "0.30.0-rc31", "0.33.0", "latest"] {
        let e = Ollama::default()
            .parse_params(&obj(json!({"version": bad})))
            .expect_err("refused")
            .to_string();
        assert!(e.starts_with(&format!("`version` = \"{bad}\"")), "{e}");
    }
}

#[test]
fn routes_name_each_endpoint_and_what_the_layers_decided() {
    let ollama = Ollama::with_model_params(model()).expect("valid");
    let request = obj(json!({"temperature": 0.7, "top_k": 2, "seed": 3}));
    let routes = ollama.from_request(&request, None);
    let names: Vec<String> = routes.iter().map(|r| r.endpoint.label()).collect();
    assert_eq!(
        names,
        [
            "Ollama /v1/chat/completions",
            "Ollama /v1/completions",
            "Ollama /api/chat (options)"
        ]
    );
    // The OpenAI endpoints drop top_k; the native options take it.
    assert_eq!(routes[0].ignored, ["top_k"]);
    assert_eq!(routes[1].ignored, ["top_k"]);
    assert!(routes[2].ignored.is_empty(), "{:?}", routes[2].ignored);
    let chat = &routes[0].notes;
    assert!(
        chat.iter()
            .any(|n| n.starts_with("top_p 1: this endpoint's value")),
        "{chat:?}"
    );
    assert!(
        chat.iter().any(|n| n
            == "from the model's parameters: top_k 20, min_p 0.05, repeat_penalty 1.05, presence_penalty 0.2, frequency_penalty 0.3"),
        "{chat:?}"
    );
    assert!(
        chat.iter()
            .any(|n| n.starts_with("the model's temperature, top_p overridden")),
        "{chat:?}"
    );
    let completions = &routes[1].notes;
    assert!(
        completions
            .iter()
            .any(|n| n.contains("frequency_penalty 0: this endpoint's value")),
        "{completions:?}"
    );
    let native = routes[2].params.as_ref().expect("valid");
    let want = ollama
        .parse_params(&obj(json!({"temperature": 0.7, "top_k": 2, "seed": 3})))
        .expect("parses");
    assert_eq!(native, &want);
}

#[test]
fn show_parameters_text_reads_back_as_the_params_layer() {
    // server/routes.go GetModelInfo (v0.33.0-rc2):
    //     params = append(params, fmt.Sprintf("%-*s %#v", cs, k, nv))
    // with cs = 30, one line per element of a list such as stop.
    let text = "stop                           \"<|im_start|>\"\n\
                stop                           \"<|im_end|>\"\n\
                temperature                    0.6\n\
                top_k                          20\n\
                repeat_penalty                 1\n";
    let m = ollama_sampling::model_params_from_show(text).expect("parses");
    assert_eq!(
        Value::Object(m.clone()),
        json!({"stop": ["<|im_start|>", "<|im_end|>"], "temperature": 0.6, "top_k": 20, "repeat_penalty": 1})
    );
    assert!(Ollama::with_model_params(m).is_ok());
    let e = ollama_sampling::model_params_from_show("top_k 20\ntop_k 40")
        .expect_err("twice")
        .to_string();
    assert_eq!(
        e,
        "`ollama show --parameters` line 2: `top_k` appears twice"
    );
    // A Modelfile's own lines (the keyword in any case; a stop value bare).
    let modelfile = "PARAMETER temperature 0.7\nparameter top_k 20\nPARAMETER stop <|im_end|>\n";
    let m = ollama_sampling::model_params_from_show(modelfile).expect("parses");
    assert_eq!(
        Value::Object(m),
        json!({"temperature": 0.7, "top_k": 20, "stop": ["<|im_end|>"]})
    );
    let e = ollama_sampling::model_params_from_show("PARAMETER top_k twenty")
        .expect_err("not a number")
        .to_string();
    assert!(
        e.contains("the value of `top_k`, twenty, is not a number"),
        "{e}"
    );
}

/// `{}` as Ollama's options is the request Ollama sends for empty options,
/// which fixtures/llamacpp/cases.jsonl recorded through the real llama.cpp
/// chain (case `ollama_defaults`): the same kept tokens and probabilities
/// (within 1e-6) and every seeded draw.
#[test]
fn empty_options_are_the_recorded_ollama_request() {
    let root = parity_core::fixture::bundled_dir().expect("bundled fixtures");
    let text = std::fs::read_to_string(root.join("llamacpp/cases.jsonl")).expect("committed");
    let mut lines = text.lines();
    let header: Value = serde_json::from_str(lines.next().expect("header")).expect("header parses");
    let mut n = 0;
    for line in lines {
        let c: Value = serde_json::from_str(line).expect("case parses");
        if c["name"] != "ollama_defaults" || !c["error"].is_null() {
            continue;
        }
        let name = c["fixture"].as_str().expect("fixture");
        let f = parity_core::Fixture::load(&root.join(format!("{name}.safetensors")))
            .expect("fixture loads");
        let ctx = Context::new(&f.input_ids, None).expect("context");
        let seed = if c["seed"].is_null() {
            &header["seed"]
        } else {
            &c["seed"]
        };
        let tokens: Vec<i64> = serde_json::from_value(c["tokens"].clone()).expect("tokens");
        let opts = obj(json!({"seed": seed, "draws": tokens.len()}));
        let params = Ollama::default()
            .parse_params(&opts)
            .expect("options parse");
        let d = Ollama::default()
            .distribution(&Logits::from_f32(&f.logits), &ctx, &params)
            .expect("runs");
        assert_eq!(d.tokens().expect("draws"), tokens.as_slice(), "{name}");
        let ids: Vec<usize> = serde_json::from_value(c["ids"].clone()).expect("ids");
        // null: dist's normaliser is NaN and every draw takes the last candidate.
        let p: Vec<Option<f64>> = serde_json::from_value(c["p"].clone()).expect("probabilities");
        let mut want = vec![0.0; f.logits.len()];
        if p.iter().any(Option::is_none) {
            want[*ids.last().expect("candidates")] = 1.0;
        } else {
            for (&i, q) in ids.iter().zip(&p) {
                want[i] = q.unwrap_or(f64::NAN);
            }
        }
        let diff = want
            .iter()
            .zip(d.probs())
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        assert!(diff <= 1e-6, "{name}: {diff}");
        let kept: Vec<usize> = (0..want.len()).filter(|&i| want[i] > 0.0).collect();
        assert_eq!(kept, d.kept(), "{name}");
        n += 1;
    }
    assert!(n >= 28, "{n}");
}

/// `compare semantics`' list is derived from the params type; each listed
/// default, written out, is what the parser does with the field left out
/// (at Ollama's newest version).
#[test]
fn the_listed_params_and_defaults_are_the_parsers() {
    assert_eq!(
        parity_core::params::defaults_agree(&Ollama::default()),
        Ok(())
    );
}

#[test]
fn generate_kwargs_map_to_options() {
    assert!(
        Ollama::default()
            .from_generate(&obj(json!({"do_sample": true})))
            .is_some()
    );
}
