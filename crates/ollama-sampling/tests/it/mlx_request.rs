//! `ollama-mlx`'s `from_request`: what Ollama (v0.32.10–v0.33.0-rc2,
//! fb3076099) hands the MLX runner's sampler for a request, per endpoint.
//! Every expectation is worked out by hand from the upstream line quoted
//! beside it (openai/openai.go, server/routes.go, api/types.go,
//! x/mlxrunner/server.go at fb3076099).

use ollama_sampling::mlx::request::{CHAT, COMPLETIONS, NATIVE};
use ollama_sampling::{OllamaMlx, OllamaMlxParams};
use parity_core::{Context, Endpoint, Logits, Route, Semantics};
use serde_json::{Map, Value, json};

fn map(v: Value) -> Map<String, Value> {
    v.as_object().cloned().expect("an object")
}

fn routes(request: Value) -> Vec<Route<OllamaMlxParams>> {
    OllamaMlx::default().from_request(&map(request), None)
}

fn params(r: &[Route<OllamaMlxParams>], endpoint: Endpoint) -> &OllamaMlxParams {
    let route = r.iter().find(|r| r.endpoint == endpoint).expect("route");
    route.params.as_ref().expect("accepted")
}

fn ignored(r: &[Route<OllamaMlxParams>], endpoint: Endpoint) -> Vec<String> {
    let route = r.iter().find(|r| r.endpoint == endpoint).expect("route");
    let mut v = route.ignored.clone();
    v.sort();
    v
}

fn error(r: &[Route<OllamaMlxParams>], endpoint: Endpoint) -> String {
    let route = r.iter().find(|r| r.endpoint == endpoint).expect("route");
    route.params.as_ref().expect_err("refused").to_string()
}

/// (temperature, top_k, top_p, min_p, repeat_last_n, repeat_penalty,
/// presence_penalty, frequency_penalty, seed)
type Tuple = (f32, i64, f32, f32, i64, f32, f32, f32, i64);

fn tuple(p: &OllamaMlxParams) -> Tuple {
    (
        p.temperature,
        p.top_k,
        p.top_p,
        p.min_p,
        p.repeat_last_n,
        p.repeat_penalty,
        p.presence_penalty,
        p.frequency_penalty,
        p.seed,
    )
}

#[test]
fn three_routes_labelled_with_versions_and_format() {
    let r = routes(json!({}));
    let names: Vec<Endpoint> = r.iter().map(|r| r.endpoint).collect();
    assert_eq!(names, vec![CHAT, COMPLETIONS, NATIVE]);
    assert_eq!(
        CHAT.label(),
        "Ollama MLX runner (safetensors, v0.32.10–v0.33.0-rc2) /v1/chat/completions"
    );
    assert_eq!(
        NATIVE.label(),
        "Ollama MLX runner (safetensors, v0.32.10–v0.33.0-rc2) /api/generate, /api/chat"
    );
    for r in &r {
        let label = r.endpoint.label();
        assert!(label.contains("(safetensors, v0.32.10–v0.33.0-rc2)"));
        // compare request's text prints `  {endpoint} [ollama-mlx]` within 100 columns.
        assert!(label.chars().count() + 2 + " [ollama-mlx]".len() <= 100);
        assert!(r.ignored.is_empty(), "{}: {:?}", r.endpoint, r.ignored);
    }
}

#[test]
fn an_empty_request_per_route() {
    let r = routes(json!({"model": "m", "messages": [], "stream": false}));
    // api/types.go DefaultOptions: `Temperature: 0.8, TopK: 40, TopP: 0.9,
    // RepeatLastN: 64, RepeatPenalty: 1.0, PresencePenalty: 0.0,
    // FrequencyPenalty: 0.0, Seed: -1` (min_p unset: 0).
    // openai.go FromChatRequest: `options["temperature"] = 1.0` and
    // `options["top_p"] = 1.0` when the pointers are nil.
    assert_eq!(
        tuple(params(&r, CHAT)),
        (1.0, 40, 1.0, 0.0, 64, 1.0, 0.0, 0.0, -1)
    );
    // FromCompleteRequest: temperature 1.0 when nil; `options["frequency_penalty"]
    // = r.FrequencyPenalty` (0); `if r.TopP != 0.0 {..} else { options["top_p"] = 1.0 }`.
    assert_eq!(
        tuple(params(&r, COMPLETIONS)),
        (1.0, 40, 1.0, 0.0, 64, 1.0, 0.0, 0.0, -1)
    );
    // No options: DefaultOptions() as they are.
    assert_eq!(
        tuple(params(&r, NATIVE)),
        (0.8, 40, 0.9, 0.0, 64, 1.0, 0.0, 0.0, -1)
    );
    let chat = &r[0];
    assert!(
        chat.notes
            .iter()
            .any(|n| n.starts_with("temperature 1.0: this endpoint's default")),
        "{:?}",
        chat.notes
    );
}

#[test]
fn chat_reads_five_fields_and_the_runner_keeps_the_penalties() {
    let r = routes(json!({
        "temperature": 0.7, "top_p": 0.8, "seed": 42,
        "frequency_penalty": 0.5, "presence_penalty": 0.25,
        "top_k": 5, "min_p": 0.1, "typical_p": 0.9, "repetition_penalty": 1.3,
    }));
    // ChatCompletionRequest: `Temperature *float64`, `TopP *float64`,
    // `Seed *int`, `FrequencyPenalty *float64`, `PresencePenalty *float64`;
    // x/mlxrunner/server.go: `PresencePenalty: request.Options.PresencePenalty,
    // FrequencyPenalty: request.Options.FrequencyPenalty, Seed: request.Options.Seed`.
    // 0.7 and 0.8 as float32 (`field.SetFloat(val)` on a float32 field).
    assert_eq!(
        tuple(params(&r, CHAT)),
        (0.7, 40, 0.8, 0.0, 64, 1.0, 0.25, 0.5, 42)
    );
    assert_eq!(
        ignored(&r, CHAT),
        vec!["min_p", "repetition_penalty", "top_k", "typical_p"]
    );
    assert_eq!(ignored(&r, COMPLETIONS), ignored(&r, CHAT));
    // The native route (no `options`): fields that are option names are
    // options; typical_p is accepted and dropped by x/mlxrunner/server.go.
    assert_eq!(
        tuple(params(&r, NATIVE)),
        (0.7, 5, 0.8, 0.1, 64, 1.0, 0.25, 0.5, 42)
    );
    assert_eq!(ignored(&r, NATIVE), vec!["repetition_penalty", "typical_p"]);
    let native = &r[2];
    assert!(native.notes.iter().any(|n| n.starts_with("typical_p:")));
    assert!(
        native
            .notes
            .iter()
            .any(|n| n.starts_with("penalties over the last 64 ids"))
    );
}

#[test]
fn completions_top_p_zero_is_one_and_penalties_always_sent() {
    let r = routes(json!({"top_p": 0, "temperature": 0.5}));
    // ChatCompletionRequest.TopP is a pointer: 0 is sent as 0 (the sampler's
    // `0 < p < 1` then leaves top-p off).
    assert_eq!(params(&r, CHAT).top_p, 0.0);
    // openai.go: `if r.TopP != 0.0 { options["top_p"] = r.TopP } else { options["top_p"] = 1.0 }`
    assert_eq!(params(&r, COMPLETIONS).top_p, 1.0);
    assert!(
        r[1].notes
            .iter()
            .any(|n| n.starts_with("top_p 1.0: this endpoint sends 1.0"))
    );
    // The native route without `options` reads top_p as the option: 0 (off).
    assert_eq!(params(&r, NATIVE).top_p, 0.0);
}

#[test]
fn native_reads_the_options_object_only() {
    let r = routes(json!({
        "model": "m",
        "top_p": 0.5,
        "keep_alive": "5m",
        "options": {"top_k": 3, "repeat_last_n": -1, "repeat_penalty": 1.2,
                    "num_ctx": 8, "stop": ["x"], "typical_p": 0.5, "foo": 1, "seed": 7.9},
    }));
    // routes.go: `opts.FromMap(requestOpts)` with req.Options; `top_p` at the
    // top level is no /api/chat field. FromMap: `field.SetInt(int64(t))`: 7.9 → 7.
    assert_eq!(
        tuple(params(&r, NATIVE)),
        (0.8, 3, 0.9, 0.0, -1, 1.2, 0.0, 0.0, 7)
    );
    assert_eq!(
        ignored(&r, NATIVE),
        vec!["keep_alive", "options.foo", "options.typical_p", "top_p"]
    );
    assert!(
        r[2].notes
            .iter()
            .any(|n| n.starts_with("penalties over the last -1 ids"))
    );
    // The OpenAI routes decode no `options` field.
    assert_eq!(ignored(&r, CHAT), vec!["keep_alive", "options"]);
    assert_eq!(params(&r, CHAT).top_p, 0.5);
}

#[test]
fn model_parameters_sit_between_defaults_and_the_request() {
    // qwen3-style Modelfile parameters.
    let model = map(json!({
        "temperature": 0.6, "top_k": 20, "top_p": 0.95, "presence_penalty": 1.5,
        "stop": ["<|im_end|>"], "num_ctx": 4096,
    }));
    // A name no Ollama option has is refused (Ollama would log and skip it).
    let mut typo = model.clone();
    typo.insert("unknown_thing".into(), json!(1));
    assert!(
        OllamaMlx::with_model_params(typo)
            .unwrap_err()
            .to_string()
            .starts_with("unknown model parameter `unknown_thing` (= 1;")
    );
    let s = OllamaMlx::with_model_params(model.clone()).expect("valid");
    assert_eq!(s.model_params(), Some(&model));
    let r = s.from_request(&map(json!({"temperature": 0.7})), None);
    // routes.go: `opts := api.DefaultOptions()`, `opts.FromMap(model.Options)`,
    // `opts.FromMap(requestOpts)`. Chat always sends temperature and top_p.
    assert_eq!(
        tuple(params(&r, CHAT)),
        (0.7, 20, 1.0, 0.0, 64, 1.0, 1.5, 0.0, -1)
    );
    // Completions always sends `options["presence_penalty"] = r.PresencePenalty` (0).
    assert_eq!(
        tuple(params(&r, COMPLETIONS)),
        (0.7, 20, 1.0, 0.0, 64, 1.0, 0.0, 0.0, -1)
    );
    assert!(
        r[1].notes
            .iter()
            .any(|n| n.contains("always sent (0 when absent), over the model's parameters"))
    );
    assert_eq!(
        tuple(params(&r, NATIVE)),
        (0.7, 20, 0.95, 0.0, 64, 1.0, 1.5, 0.0, -1)
    );
    // parse_params layers the same way.
    let p = s
        .parse_params(&map(json!({"top_k": 7})))
        .expect("valid params");
    assert_eq!(tuple(&p), (0.6, 7, 0.95, 0.0, 64, 1.0, 1.5, 0.0, -1));
}

#[test]
fn refusals_quote_the_bad_value() {
    // `Seed *int`: Go's decoder takes no fraction into an int.
    let r = routes(json!({"seed": 1.5}));
    assert_eq!(
        error(&r, CHAT),
        "`seed` = 1.5: Ollama answers 400 (json: cannot unmarshal number 1.5 into Go struct field ChatCompletionRequest.seed of type int)"
    );
    // CompletionRequest's `Temperature *float32` overflows; the chat one is a
    // float64, and fails only when the server marshals +Inf for the runner.
    let r = routes(json!({"temperature": 1e39}));
    assert_eq!(
        error(&r, COMPLETIONS),
        "`temperature` = 1e+39: Ollama answers 400 (json: cannot unmarshal number 1e+39 into Go struct field CompletionRequest.temperature of type float32)"
    );
    assert_eq!(
        error(&r, CHAT),
        "`temperature` = 1e+39 is infinite as a float32: Ollama cannot send it to the MLX runner (json: unsupported value: +Inf)"
    );
    // openai.go FromCompleteRequest: `return api.GenerateRequest{}, fmt.Errorf("invalid
    // type for 'stop' field: %T", s)`; FromChatRequest skips the item.
    let r = routes(json!({"stop": ["a", 1]}));
    assert_eq!(
        error(&r, COMPLETIONS),
        "`stop` = [\"a\",1]: Ollama answers 400 (invalid type for 'stop' field: float64)"
    );
    assert!(r[0].params.is_ok());
    let r = routes(json!({"options": {"top_k": "5"}}));
    assert_eq!(
        error(&r, NATIVE),
        "`top_k` = \"5\": Ollama refuses it (option \"top_k\" must be of type integer)"
    );
    let r = routes(json!({"options": {"stop": [1]}}));
    assert_eq!(
        error(&r, NATIVE),
        "`stop` = [1]: Ollama refuses it (option \"stop\" must be of an array of strings)"
    );
    let r = routes(json!({"options": {"typical_p": "high"}}));
    assert_eq!(
        error(&r, NATIVE),
        "`typical_p` = \"high\": Ollama refuses it (option \"typical_p\" must be of type float32)"
    );
    let r = routes(json!({"options": 3}));
    assert!(error(&r, NATIVE).starts_with("`options` = 3: Ollama answers 400"));
    let e = OllamaMlx::with_model_params(map(json!({"top_k": "20"}))).expect_err("refused");
    assert_eq!(
        e.to_string(),
        "model parameter `top_k` = \"20\": Ollama fails every request to this model (option \"top_k\" must be of type integer)"
    );
    let e = OllamaMlx::with_model_params(map(json!({"use_mmap": 1}))).expect_err("refused");
    assert_eq!(
        e.to_string(),
        "model parameter `use_mmap` = 1: Ollama fails every request to this model (option \"use_mmap\" must be of type boolean)"
    );
}

#[test]
fn response_format_is_noted_as_not_forwarded() {
    let r = routes(json!({"response_format": {"type": "json_object"}}));
    for route in &r {
        assert!(
            route
                .notes
                .iter()
                .any(|n| n.starts_with("response_format / format")),
            "{}",
            route.endpoint
        );
    }
}

/// A small xorshift so the fuzz is the same on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[(self.next() % xs.len() as u64) as usize]
    }
}

#[test]
fn fuzz_every_ignored_field_was_sent() {
    let keys = [
        "temperature",
        "top_p",
        "top_k",
        "min_p",
        "typical_p",
        "seed",
        "repeat_penalty",
        "repeat_last_n",
        "presence_penalty",
        "frequency_penalty",
        "repetition_penalty",
        "num_ctx",
        "stop",
        "model",
        "messages",
        "draws",
        "logit_bias",
        "format",
        "response_format",
        "use_mmap",
        "draft_num_predict",
        "foo",
    ];
    let values = [
        json!(null),
        json!(0),
        json!(1),
        json!(-1),
        json!(0.5),
        json!(1.5),
        json!(1e39),
        json!("x"),
        json!(true),
        json!(["a"]),
        json!([1]),
        json!({}),
    ];
    let model = OllamaMlx::with_model_params(map(json!({"top_k": 20, "presence_penalty": 1.5})))
        .expect("valid");
    let logits = Logits::from_f32(&[3.0, 2.0, 2.0, 1.0, -1.0]);
    let ids = [0i64, 1, 1, 4, 3, 1];
    let context = Context::new(&ids, Some(2)).expect("context");
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut accepted, mut refused) = (0, 0);
    for i in 0..4000u32 {
        let mut request = Map::new();
        for _ in 0..rng.next() % 6 {
            request.insert((*rng.pick(&keys)).into(), rng.pick(&values).clone());
        }
        if rng.next().is_multiple_of(3) {
            let mut options = Map::new();
            for _ in 0..rng.next() % 5 {
                options.insert((*rng.pick(&keys)).into(), rng.pick(&values).clone());
            }
            let o = if rng.next().is_multiple_of(10) {
                rng.pick(&values).clone()
            } else {
                Value::Object(options)
            };
            request.insert("options".into(), o);
        }
        let semantics = if i.is_multiple_of(2) {
            &OllamaMlx::default()
        } else {
            &model
        };
        let r = semantics.from_request(&request, None);
        assert_eq!(r.len(), 3);
        let nested = request.get("options").and_then(Value::as_object);
        for route in &r {
            for f in &route.ignored {
                let sent = match f.strip_prefix("options.") {
                    Some(name) => nested.is_some_and(|o| o.contains_key(name)),
                    None => request.contains_key(f),
                };
                assert!(
                    sent,
                    "{}: ignored {f:?} was not sent in {}",
                    route.endpoint,
                    Value::Object(request.clone())
                );
            }
            match &route.params {
                Ok(p) => {
                    accepted += 1;
                    // As fuzz/src/lib.rs `compare_request` goes on: the
                    // params run, and give a distribution or an error.
                    if let Ok(d) = semantics.distribution(&logits, &context, p) {
                        let sum: f64 = d.probs().iter().sum();
                        assert!(
                            d.probs().iter().all(|p| (0.0..=1.0).contains(p))
                                && (sum - 1.0).abs() < 1e-6,
                            "{}: sum {sum} for {p:?}",
                            route.endpoint
                        );
                    }
                }
                Err(e) => {
                    refused += 1;
                    assert!(!e.to_string().is_empty());
                }
            }
        }
    }
    assert!(accepted > 1000 && refused > 1000, "{accepted} {refused}");
}
