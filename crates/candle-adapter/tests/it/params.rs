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

/// Each listed default is what the parser does: a key "required by" a
/// variant is refused when absent from it and refused when given to any
/// other; a key listed `null` may be left out of every variant.
#[test]
fn the_listed_defaults_are_the_parsers() {
    use parity_core::Semantics;
    use serde_json::{Map, Value, json};
    let full = |variant: &str| -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("sampling".into(), json!(variant));
        for (k, v) in [
            ("temperature", json!(0.7)),
            ("k", json!(2)),
            ("p", json!(0.9)),
        ] {
            m.insert(k.into(), v);
        }
        m
    };
    let variants = [
        "ArgMax",
        "All",
        "TopK",
        "TopP",
        "TopKThenTopP",
        "GumbelSoftmax",
    ];
    let parse = |m: &Map<String, Value>| CandleParams::from_json(&Value::Object(m.clone()));
    for p in candle_adapter::Candle::LITERAL.info().params {
        let needed: Vec<&str> = match p.default {
            "required" => variants.to_vec(),
            "required by all but ArgMax" => variants[1..].to_vec(),
            d => match d.strip_prefix("required by ") {
                Some(list) => list.split(", ").collect(),
                None => {
                    assert!(d.starts_with("null"), "`{}`: {d}", p.name);
                    Vec::new()
                }
            },
        };
        for v in variants {
            // The variant with exactly the keys it takes, this one aside.
            let mut m = full(v);
            m.retain(|k, _| k == "sampling" || k == p.name || needed_by(k, v));
            m.remove(p.name);
            let absent = parse(&m);
            assert_eq!(
                absent.is_err(),
                needed.contains(&v),
                "`{}` absent from {v}: {absent:?}",
                p.name
            );
            if needed.is_empty() || needed.contains(&v) || p.name == "sampling" {
                continue;
            }
            m.insert(p.name.into(), full(v)[p.name].clone());
            let e = parse(&m).expect_err(p.name).to_string();
            assert!(
                e.contains(&format!("unknown field `{}`", p.name)),
                "{v}: {e}"
            );
        }
    }
}

/// Which of temperature, k, p a variant takes (candle's `Sampling`).
fn needed_by(key: &str, variant: &str) -> bool {
    match key {
        "temperature" => variant != "ArgMax",
        "k" => variant.starts_with("TopK"),
        "p" => variant == "TopP" || variant == "TopKThenTopP",
        _ => false,
    }
}
