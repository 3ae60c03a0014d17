use candle_adapter::{AdapterError, CandleParams, CandleSampling, Window};

#[test]
fn wire_form_round_trips() {
    let json = r#"{"sampling":"TopKThenTopP","temperature":0.7,"k":40,"p":0.9,
                   "repeat_penalty":1.1,"repeat_last_n":64}"#;
    let p: CandleParams = serde_json::from_str(json).expect("valid");
    assert_eq!(
        p.sampling,
        CandleSampling::TopKThenTopP {
            k: 40,
            p: 0.9,
            temperature: 0.7
        }
    );
    let rp = p.repeat_penalty.expect("penalty");
    assert_eq!((rp.penalty, rp.window), (1.1, Window::LastN(64)));
    let back: CandleParams =
        serde_json::from_value(serde_json::to_value(&p).expect("ser")).expect("de");
    assert_eq!(back, p);

    let whole: CandleParams =
        serde_json::from_str(r#"{"sampling":"ArgMax","repeat_penalty":1.3}"#).expect("valid");
    assert_eq!(whole.repeat_penalty.map(|r| r.window), Some(Window::Whole));
}

fn err(json: &str) -> String {
    let e = json.parse::<CandleParams>().expect_err(json);
    assert!(
        matches!(e, AdapterError::Params { .. } | AdapterError::Wire(_)),
        "{e:?}"
    );
    e.to_string()
}

#[test]
fn validation_names_the_field_and_quotes_the_value() {
    let cases = [
        (
            r#"{"sampling":"Top_K","k":3,"temperature":1}"#,
            "`sampling`",
            "\"Top_K\"",
        ),
        (
            r#"{"sampling":"TopK","temperature":0.7}"#,
            "missing field `k`",
            "\"TopK\"",
        ),
        (
            r#"{"sampling":"TopK","temperature":0.7,"k":-1}"#,
            "`k`",
            "-1",
        ),
        (
            r#"{"sampling":"TopK","temperature":0.7,"k":2.5}"#,
            "`k`",
            "2.5",
        ),
        (
            r#"{"sampling":"TopP","temperature":"hot","p":0.9}"#,
            "`temperature`",
            "\"hot\"",
        ),
        // A key the variant does not take: serde names it and the variant.
        (
            r#"{"sampling":"ArgMax","temperature":0.7}"#,
            "unknown field `temperature`",
            "\"ArgMax\"",
        ),
        (
            r#"{"sampling":"All","temperature":0.7,"p":0.5}"#,
            "unknown field `p`",
            "\"All\"",
        ),
        (
            r#"{"sampling":"All","temperature":1,"top_k":5}"#,
            "unknown field `top_k`",
            "5",
        ),
        (
            r#"{"sampling":"All","temperature":null}"#,
            "`temperature`",
            "null",
        ),
        (r#"{"temperature":1}"#, "missing field `sampling`", ""),
        (
            r#"{"sampling":"All","temperature":1,"repeat_last_n":64}"#,
            "`repeat_last_n`",
            "64",
        ),
        (
            r#"{"sampling":"All","temperature":1,"repeat_penalty":1e300}"#,
            "`repeat_penalty`",
            "1e+300",
        ),
        (r#"{"sampling":"ArgMax","hf_top_k":3}"#, "`hf_top_k`", "3"),
        (r#"[1,2]"#, "`params`", "[1,2]"),
    ];
    for (json, field, value) in cases {
        let msg = err(json);
        assert!(msg.contains(field), "{json}: {msg}");
        assert!(msg.contains(value), "{json}: {msg}");
    }
}

#[test]
fn candle_failures_are_not_pre_empted() {
    // Accepted by validation: candle itself fails at draw time (tested in errors.rs).
    for json in [
        r#"{"sampling":"All","temperature":0}"#,
        r#"{"sampling":"TopK","temperature":1,"k":0}"#,
    ] {
        json.parse::<CandleParams>().expect(json);
    }
}

/// `compare semantics`' list is the wire form's declaration, in its order.
#[test]
fn the_listed_params_are_the_wire_forms_keys() {
    use parity_core::Semantics;
    let names: Vec<_> = candle_adapter::Candle::LITERAL
        .info()
        .params
        .iter()
        .map(|p| p.name)
        .collect();
    assert_eq!(
        names,
        [
            "sampling",
            "temperature",
            "k",
            "p",
            "repeat_penalty",
            "repeat_last_n",
            "hf_top_k"
        ]
    );
}
