//! Replays every case recorded from mistral.rs's own `sampler.rs`
//! (`fixtures/mistralrs/`, made by `scripts/reference/mistralrs/record.py`;
//! the README there says what the harness called, at which commits).

use std::path::PathBuf;

use mistralrs_sampling::{MistralRs, weighted_index_input};
use parity_core::recording::{Recording, fnv1a64};
use parity_core::{Context, Fixture, Logits, Semantics};
use serde_json::{Map, Value};

/// The probability tolerance of the issue; the report prints the real max.
const TOL: f64 = 1e-6;

fn fixtures() -> PathBuf {
    parity_core::fixture::bundled_dir().expect("bundled fixtures")
}

fn recorded(version: &str) -> Vec<Recording> {
    Recording::list(&fixtures().join("mistralrs").join(format!("v{version}")))
        .expect("fixtures/mistralrs")
}

/// The recorded request fields as this crate's params (`logits_bias` is
/// mistral.rs's `SamplingParams` name of the request's `logit_bias`).
fn params(version: &str, recorded: &Value, extra: &[(&str, Value)]) -> Map<String, Value> {
    let mut p = Map::new();
    for (k, v) in recorded.as_object().expect("params") {
        let k = if k == "logits_bias" { "logit_bias" } else { k };
        p.insert(k.to_string(), v.clone());
    }
    p.insert("version".into(), Value::from(version));
    for (k, v) in extra {
        p.insert((*k).to_string(), v.clone());
    }
    p
}

fn source_logits(rec: &Recording, source: &str) -> Vec<f32> {
    if source == "synthetic" {
        rec.f32s("logits").expect("recorded")
    } else {
        Fixture::load(&fixtures().join(source))
            .expect("source fixture")
            .logits
    }
}

#[derive(Default, Debug)]
struct Tally {
    files: usize,
    cases: usize,
    sampled: usize,
    complete: usize,
    greedy: usize,
    errors: usize,
    draws: usize,
    max_dp: f64,
    failed: Vec<String>,
}

fn replay_version(version: &str) -> Tally {
    let mut t = Tally::default();
    for rec in recorded(version)
        .iter()
        .filter(|r| r.meta.contains_key("cases"))
    {
        t.files += 1;
        assert_eq!(
            rec.meta_str("format").expect("recorded"),
            "sampling-parity-mistralrs/1"
        );
        assert_eq!(
            rec.meta_str("mistralrs_version").expect("recorded"),
            version,
            "{}",
            rec.name
        );
        let source = rec.meta_str("source").expect("recorded").to_string();
        let raw = source_logits(rec, &source);
        let ids = rec.i64s("context").expect("recorded");
        let prompt_len: usize = rec
            .meta_str("prompt_len")
            .expect("recorded")
            .parse()
            .expect("prompt_len");
        let context = Context::new(&ids, Some(prompt_len)).expect("context");
        let logits = Logits::from_f32(&raw);
        let draws_per_case: u64 = rec
            .meta_str("draws_per_case")
            .expect("recorded")
            .parse()
            .expect("draws");
        for case in rec
            .meta_json("cases")
            .expect("recorded")
            .as_array()
            .expect("cases")
        {
            let what = format!(
                "v{version} {source} {}",
                case["name"].as_str().expect("name")
            );
            t.cases += 1;
            let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                replay_case(
                    version,
                    rec,
                    &context,
                    &logits,
                    draws_per_case,
                    case,
                    &mut t,
                )
            }));
            if run.is_err() {
                t.failed.push(what);
            }
        }
    }
    t
}

/// One recorded case: panics (caught by the caller, which counts it) on
/// any difference.
#[allow(clippy::too_many_arguments)]
fn replay_case(
    version: &str,
    rec: &Recording,
    context: &Context<'_>,
    logits: &Logits,
    draws_per_case: u64,
    case: &Value,
    t: &mut Tally,
) {
    let name = case["name"].as_str().expect("name");
    let what = format!(
        "v{version} {} {name}",
        rec.meta_str("source").expect("recorded")
    );
    assert!(
        case.get("new_error").is_none(),
        "{what}: Sampler::new failed"
    );
    let p = MistralRs
        .parse_params(&params(
            version,
            &case["params"],
            &[("draws", Value::from(draws_per_case))],
        ))
        .unwrap_or_else(|e| panic!("{what}: params refused: {e}"));
    let got = MistralRs.distribution(logits, context, &p);
    if let Some(err) = case.get("sample_error") {
        let err = err.as_str().expect("message");
        let ours = got.expect_err(&format!(
            "{what}: mistral.rs failed with {err}, we answered"
        ));
        assert!(
            ours.to_string().contains(err),
            "{what}: mistral.rs: {err}; ours: {ours}"
        );
        t.errors += 1;
        return;
    }
    let got = got.unwrap_or_else(|e| panic!("{what}: {e}"));
    let want_draws = rec.i64s(&format!("{name}.draws")).expect("recorded");
    let weights = weighted_index_input(logits, context, &p).expect("weights");
    let Some(w) = weights else {
        assert_eq!(
            case["argmax"],
            Value::Bool(true),
            "{what}: we took the argmax"
        );
        // An argmax draws the same token every time.
        assert_eq!(got.kept(), &[want_draws[0] as usize], "{what}: argmax");
        assert_eq!(got.tokens(), Some(&want_draws[..]), "{what}: argmax draws");
        t.greedy += 1;
        return;
    };
    assert_eq!(
        case["argmax"],
        Value::Bool(false),
        "{what}: mistral.rs took the argmax"
    );
    t.sampled += 1;
    assert_eq!(w.len(), case["weights_len"].as_u64().expect("len") as usize);
    // The kept set: every id with a non-zero weight.
    let kept: Vec<usize> = (0..w.len()).filter(|&i| w[i] != 0.0).collect();
    assert_eq!(
        got.kept(),
        &kept[..],
        "{what}: kept set of the distribution"
    );
    assert_eq!(
        kept.len() as u64,
        case["nonzero"].as_u64().expect("nonzero"),
        "{what}: kept count"
    );
    let rec_ids = rec.i64s(&format!("{name}.ids")).expect("recorded");
    let rec_w = rec.f32_bits(&format!("{name}.weights")).expect("recorded");
    let complete = case["complete"].as_bool().expect("complete");
    if complete {
        let ours: Vec<i64> = kept.iter().map(|&i| i as i64).collect();
        assert_eq!(ours, rec_ids, "{what}: kept set");
        t.complete += 1;
    }
    // Probabilities: the recorded weights over their sum, against ours.
    let sum = case["weights_sum"].as_f64().expect("sum");
    for (&i, &rw) in rec_ids.iter().zip(&rec_w) {
        let dp = (got.probs()[i as usize] - f64::from(rw) / sum).abs();
        t.max_dp = t.max_dp.max(dp);
        assert!(
            dp <= TOL,
            "{what}: p[{i}] = {}, mistral.rs {}",
            got.probs()[i as usize],
            f64::from(rw) / sum
        );
    }
    // The whole vector WeightedIndex gets, bit for bit.
    assert_eq!(
        fnv1a64(&w),
        case["weights_fnv1a64"].as_str().expect("hash"),
        "{what}: weights differ in some bit"
    );
    // Draws: token for token, from a fresh engine and after n earlier draws.
    assert_eq!(got.tokens(), Some(&want_draws[..]), "{what}: draws");
    t.draws += want_draws.len();
    for earlier in [1u64, 7] {
        let p = MistralRs
            .parse_params(&params(
                version,
                &case["params"],
                &[
                    ("draws", Value::from(draws_per_case - earlier)),
                    ("earlier_draws", Value::from(earlier)),
                ],
            ))
            .expect("params");
        let d = MistralRs.distribution(logits, context, &p).expect("dist");
        assert_eq!(
            d.tokens(),
            Some(&want_draws[earlier as usize..]),
            "{what}: draws after {earlier} earlier"
        );
    }
}

/// Requests sharing the engine's generator in arrival order, and a
/// freshly started server (whose startup dummy run draws once).
fn replay_sequences(version: &str) -> usize {
    let mut n = 0;
    for rec in recorded(version)
        .iter()
        .filter(|r| r.meta.contains_key("steps"))
    {
        let mut earlier = 0u64;
        for step in rec
            .meta_json("steps")
            .expect("recorded")
            .as_array()
            .expect("steps")
        {
            let i = step["step"].as_u64().expect("step");
            let source = step["source"].as_str().expect("source");
            let f = Fixture::load(&fixtures().join(source)).expect("source fixture");
            let prompt_len = step["prompt_len"].as_u64().expect("prompt_len") as usize;
            let context = Context::new(&f.input_ids, Some(prompt_len)).expect("context");
            let calls = step["calls"].as_u64().expect("calls");
            let p = MistralRs
                .parse_params(&params(
                    version,
                    &step["params"],
                    &[
                        ("draws", Value::from(calls)),
                        ("earlier_draws", Value::from(earlier)),
                    ],
                ))
                .expect("params");
            let d = MistralRs
                .distribution(&Logits::from_f32(&f.logits), &context, &p)
                .expect("dist");
            let want = rec.i64s(&format!("{i}.draws")).expect("recorded");
            assert_eq!(
                d.tokens(),
                Some(&want[..]),
                "v{version} {} step {i} ({source}, after {earlier} earlier draws)",
                rec.meta_str("sequence").expect("recorded")
            );
            n += want.len();
            if step["argmax"] == Value::Bool(false) {
                earlier += calls;
            }
        }
    }
    n
}

fn check(version: &str, min_cases: usize) {
    let t = replay_version(version);
    let seq = replay_sequences(version);
    eprintln!(
        "mistral.rs {version}: {} cases in {} files: {} sampled ({} with every kept weight stored), \
         {} argmax, {} errors; {} draws; max |dp| {:e}; sequence draws {seq}",
        t.cases, t.files, t.sampled, t.complete, t.greedy, t.errors, t.draws, t.max_dp
    );
    assert!(
        t.failed.is_empty(),
        "{version}: {} of {} cases differ: {:?}",
        t.failed.len(),
        t.cases,
        t.failed
    );
    assert!(
        t.cases >= min_cases,
        "{version}: expected the recorded cases, found {}",
        t.cases
    );
    assert!(t.draws > 0 && seq > 0 && t.greedy > 0 && t.errors > 0);
}

#[test]
fn every_recorded_0_9_2_case_replays() {
    check("0.9.2", 866);
}

#[test]
fn every_recorded_0_9_1_case_replays() {
    check("0.9.1", 866);
}
