//! Every `Sampling` variant, real draws replayed through the mirror.

use candle_adapter::{CandleRun, VerifyOptions};

use crate::common::{fixture, params, run, verify_mirror};

const VARIANTS: [&str; 9] = [
    r#"{"sampling":"ArgMax"}"#,
    r#"{"sampling":"All","temperature":0.7}"#,
    r#"{"sampling":"TopK","temperature":0.7,"k":40}"#,
    r#"{"sampling":"TopK","temperature":1.0,"k":2}"#,
    r#"{"sampling":"TopP","temperature":0.7,"p":0.9}"#,
    r#"{"sampling":"TopP","temperature":1.3,"p":0.5}"#,
    r#"{"sampling":"TopKThenTopP","temperature":0.7,"k":40,"p":0.9}"#,
    r#"{"sampling":"TopKThenTopP","temperature":1.0,"k":100000,"p":0.6}"#,
    r#"{"sampling":"GumbelSoftmax","temperature":0.7}"#,
];

fn run_all(group: &str, name: &str, draws: usize) {
    let fx = fixture(group, name);
    for json in VARIANTS {
        let p = params(json);
        let run = match CandleRun::new(&fx.logits, &fx.input_ids, &p) {
            Ok(run) => run,
            Err(e) => {
                // candle fails here too, with the same message (e.g. overflow to NaN).
                let real = candle_adapter::real_draws(&fx.logits, &fx.input_ids, &p, 1, 1)
                    .expect_err(&format!(
                        "{name} {json}: mirror failed ({e}), candle did not"
                    ));
                assert_eq!(real, e, "{name} {json}");
                eprintln!("{group}/{name} {json}: both fail: {e}");
                continue;
            }
        };
        let opts = VerifyOptions {
            seed: 42,
            draws,
            streams: 2,
            ..VerifyOptions::default()
        };
        verify_mirror(&format!("{group}/{name}"), &run, &opts);
    }
}

#[test]
fn smollm2_write_k60() {
    run_all("smollm2", "write_k60", 800);
}

#[test]
fn smollm2_hello_k0() {
    run_all("smollm2", "hello_k0", 800);
}

#[test]
fn edge_fixtures() {
    for name in [
        "ties_3221",
        "all_equal_v8",
        "int_ties_v1000",
        "neg_inf_block",
        "single_finite",
        "huge_1e30",
        "tiny_1e30",
        "v1",
        "v2",
        "top_p_boundary_080_eq",
        "top_p_boundary_090_above",
        "near_f32_max",
        "rep_penalty_signs",
    ] {
        run_all("edge", name, 2000);
    }
}

#[test]
fn repeat_penalty_and_window_on_real_logits() {
    let fx = fixture("smollm2", "write_k60");
    for json in [
        r#"{"sampling":"TopK","temperature":0.7,"k":40,"repeat_penalty":1.3}"#,
        r#"{"sampling":"All","temperature":0.7,"repeat_penalty":1.3,"repeat_last_n":64}"#,
    ] {
        let run = run(&fx, json);
        let opts = VerifyOptions {
            seed: 7,
            draws: 1000,
            streams: 2,
            ..VerifyOptions::default()
        };
        verify_mirror(&format!("write_k60 {json}"), &run, &opts);
    }
}
