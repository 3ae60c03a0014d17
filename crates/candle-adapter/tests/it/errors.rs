use candle_adapter::{AdapterError, CandleRun, real_draws};

use crate::common::params;

const LOGITS: [f32; 4] = [3.0, 2.0, 2.0, 1.0];

#[test]
fn temperature_zero_is_candles_error_not_a_panic() {
    for json in [
        r#"{"sampling":"All","temperature":0}"#,
        r#"{"sampling":"TopP","temperature":0,"p":0.9}"#,
        r#"{"sampling":"TopK","temperature":0,"k":2}"#,
        r#"{"sampling":"TopKThenTopP","temperature":0,"k":2,"p":0.9}"#,
    ] {
        let p = params(json);
        let real = real_draws(&LOGITS, &[], &p, 1, 1).expect_err(json);
        let mirror = CandleRun::new(&LOGITS, &[], &p).err().expect(json);
        for e in [&real, &mirror] {
            assert!(matches!(e, AdapterError::Candle { .. }), "{json}: {e:?}");
            assert!(
                e.to_string()
                    .contains("A weight is negative, too large or not a valid number"),
                "{json}: {e}"
            );
        }
    }
    // GumbelSoftmax with T = 0 is candle's argmax, not an error.
    let p = params(r#"{"sampling":"GumbelSoftmax","temperature":0}"#);
    assert_eq!(
        real_draws(&LOGITS, &[], &p, 1, 3).expect("argmax"),
        vec![0, 0, 0]
    );
}

#[test]
fn top_k_zero_is_candles_error() {
    for json in [
        r#"{"sampling":"TopK","temperature":1,"k":0}"#,
        r#"{"sampling":"TopKThenTopP","temperature":1,"k":0,"p":0.5}"#,
    ] {
        let p = params(json);
        let real = real_draws(&LOGITS, &[], &p, 1, 1).expect_err(json);
        let mirror = CandleRun::new(&LOGITS, &[], &p).err().expect(json);
        eprintln!("{json}: real: {real}; mirror: {mirror}");
        assert_eq!(real.to_string(), mirror.to_string());
    }
}

#[test]
fn bad_inputs_are_named() {
    let p = params(r#"{"sampling":"All","temperature":1,"repeat_penalty":1.3}"#);
    let e = CandleRun::new(&[1.0, f32::NAN], &[], &p)
        .err()
        .expect("nan");
    assert_eq!(e, AdapterError::NanLogit { index: 1 });
    let e = CandleRun::new(&LOGITS, &[0, -1], &p).err().expect("neg id");
    assert_eq!(
        e,
        AdapterError::TokenId {
            index: 1,
            value: -1
        }
    );
    let e = CandleRun::new(&[], &[], &p).err().expect("empty");
    assert_eq!(e, AdapterError::EmptyLogits);
}
