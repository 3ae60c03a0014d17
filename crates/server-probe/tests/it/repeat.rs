//! `--repeat` against the real llama-server with two slots, checked against
//! raw distributions this test reads itself; and the committed recording of
//! such a session (fixtures/server-probe/llama-server-repeat.json, made by
//! the live test with SERVER_PROBE_WRITE_REPEAT set) replayed with the same
//! report.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use server_probe::repeat::{self, RepeatReport};
use server_probe::{Api, Options, Recording};

use crate::{PROMPT, drop_token_texts, obj, server_with_slots};

const RUNS: usize = 4;
const SEED: u64 = 1234;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/server-probe")
        .join(name)
}

fn options(url: &str) -> Options {
    Options {
        server: url.to_string(),
        api: Api::LlamaServer,
        model: None,
        prompt: Some(PROMPT.to_string()),
        prompt_ids: None,
        requests: vec![obj(json!({"temperature": 1.0}))],
        samples: None,
        auto_samples: None,
        seed: SEED,
        top: None,
        timeout_secs: 120,
        raw_from: None,
        vocab: None,
        repeat: Some(RUNS),
    }
}

/// A dense log p vector from `(id, logprob)` pairs (float's lowest is p = 0).
fn dense(entries: &[(i64, f64)], n: usize) -> Vec<f64> {
    let mut v = vec![f64::NEG_INFINITY; n];
    for &(id, lp) in entries {
        v[id as usize] = if lp <= f64::from(f32::MIN) {
            f64::NEG_INFINITY
        } else {
            lp
        };
    }
    v
}

fn bits_equal(a: &[f64], b: &[f64]) -> bool {
    a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
}

fn max_abs_diff(a: &[f64], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .filter(|(x, y)| x.is_finite() && y.is_finite())
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max)
}

/// Every figure of the report recomputed from the recording's raw answers,
/// in the order they were sent: `identical` and `max_abs_dlogit` per run
/// against the first answer (the cold run), and the verdict's words.
fn check_against_recording(report: &RepeatReport, recording: &Recording) {
    let raw = repeat::raw_answers(recording);
    let n = report.n_vocab;
    let ran: Vec<_> = report
        .conditions
        .iter()
        .filter(|c| c.skipped.is_none())
        .collect();
    let runs: usize = ran.iter().map(|c| c.runs.len()).sum();
    assert_eq!(raw.len(), runs, "one whole-vocabulary answer per run");
    let baseline = dense(&raw[0].1, n);
    let mut i = 0;
    for c in &ran {
        let mut identical = true;
        let mut max = 0.0f64;
        for r in &c.runs {
            let (body, entries) = &raw[i];
            assert_eq!(entries.len(), n, "the whole vocabulary");
            assert_eq!(body["n_probs"], json!(n));
            assert_eq!(body["post_sampling_probs"], json!(false));
            assert_eq!(
                r.slot,
                Some(0),
                "{} run {i}: the repeats are pinned to slot 0",
                c.name
            );
            let v = dense(entries, n);
            let same = bits_equal(&v, &baseline);
            let d = max_abs_diff(&v, &baseline);
            assert_eq!(r.identical, same, "{} run {i}", c.name);
            assert_eq!(
                r.max_abs_dlogit.to_bits(),
                d.to_bits(),
                "{} run {i}",
                c.name
            );
            identical &= same;
            max = max.max(d);
            i += 1;
        }
        assert_eq!(c.identical, identical, "{}", c.name);
        assert_eq!(c.max_abs_dlogit.to_bits(), max.to_bits(), "{}", c.name);
        if c.identical {
            assert_eq!(c.max_abs_dlogit, 0.0, "{}", c.name);
            assert!(
                c.verdict.starts_with("bit-identical logits"),
                "{}",
                c.verdict
            );
            assert_eq!(c.fix, None);
        } else {
            assert!(c.max_abs_dlogit > 0.0 || c.max_tv > 0.0, "{c:?}");
            assert!(c.verdict.contains("the logits moved by"), "{}", c.verdict);
            if c.name != "cache-off" {
                assert!(c.fix.is_some(), "{} names no fix", c.name);
            }
        }
    }
    // The cold run evaluated the whole prompt; the warm ones reused it.
    let cold_warm = &report.conditions[0];
    assert_eq!(cold_warm.name, "cold-warm");
    assert_eq!(cold_warm.runs[0].cached_tokens, Some(0));
    for r in &cold_warm.runs[1..] {
        let cached = r.cached_tokens.expect("cache_n");
        assert!(cached > 0, "a warm run reused no prompt token: {r:?}");
    }
    for r in &report.conditions[1].runs {
        assert_eq!(r.cached_tokens, Some(0), "cache-off: {r:?}");
    }
}

/// One `/completion` the test sends itself: the raw distribution over the
/// whole vocabulary, the drawn token and `timings.cache_n`.
fn direct(url: &str, body: &Value) -> (Vec<f64>, i64, u64) {
    let answer = minreq::post(format!("{url}/completion"))
        .with_header("Content-Type", "application/json")
        .with_body(body.to_string())
        .with_timeout(120)
        .send()
        .expect("POST /completion");
    let v: Value = serde_json::from_slice(answer.as_bytes()).expect("JSON");
    let first = &v["completion_probabilities"][0];
    let entries: Vec<(i64, f64)> = first["top_logprobs"]
        .as_array()
        .expect("top_logprobs")
        .iter()
        .map(|e| {
            (
                e["id"].as_i64().expect("id"),
                e["logprob"].as_f64().expect("logprob"),
            )
        })
        .collect();
    let n = body["n_probs"].as_u64().expect("n_probs") as usize;
    (
        dense(&entries, n),
        first["id"].as_i64().expect("drawn id"),
        v["timings"]["cache_n"].as_u64().expect("cache_n"),
    )
}

pub(crate) fn repeat_verdicts_agree_with_the_raw_distributions_on_a_two_slot_server() {
    let (_turn, server) = server_with_slots(2);
    let url = server.url.clone();
    let (report, mut recording) = repeat::probe(&options(&url)).expect("repeat probe");
    assert_eq!(report.total_slots, Some(2));
    assert_eq!(report.conditions.len(), 3);
    assert!(report.conditions.iter().all(|c| c.skipped.is_none()));
    check_against_recording(&report, &recording);

    // The test's own reads, with its own bodies: cold, then warm, then two
    // full evaluations.
    let body = |cache: bool| {
        json!({"prompt": report.prompt_ids, "n_predict": 1, "n_probs": report.n_vocab,
               "post_sampling_probs": false, "seed": SEED, "temperature": 1.0,
               "cache_prompt": cache, "id_slot": 0})
    };
    let (cold, cold_drawn, cold_cached) = direct(&url, &body(false));
    let (warm, warm_drawn, warm_cached) = direct(&url, &body(true));
    let (off_a, _, _) = direct(&url, &body(false));
    let (off_b, _, _) = direct(&url, &body(false));
    assert_eq!(cold_cached, 0);
    assert!(warm_cached > 0, "the warm read reused nothing");
    let warm_same = bits_equal(&cold, &warm);
    let off_same = bits_equal(&off_a, &off_b) && bits_equal(&off_a, &cold);
    eprintln!(
        "direct reads: warm vs cold bit-identical {warm_same} (max |Δ log p| {:e}, {} of {} \
         prompt tokens from the cache); two cache-off reads bit-identical {off_same}",
        max_abs_diff(&cold, &warm),
        warm_cached,
        report.prompt_ids.len()
    );
    // A full evaluation of the same prompt repeats on this CPU build: the
    // probe's baseline is the test's cold read, bit for bit.
    assert!(off_same, "two full evaluations differ on this machine");
    let raw = repeat::raw_answers(&recording);
    assert!(
        bits_equal(&dense(&raw[0].1, report.n_vocab), &cold),
        "the probe's baseline and the test's cold read differ"
    );
    let cold_warm = &report.conditions[0];
    assert_eq!(
        cold_warm.identical, warm_same,
        "the probe says cold-warm identical = {}, the test's own reads say {warm_same}",
        cold_warm.identical
    );
    if warm_same {
        eprintln!("this server gives bit-identical logits from the cache; asserted, not invented");
        assert_eq!(cold_warm.max_abs_dlogit, 0.0);
    } else {
        // The warm logits are the same warm logits every time.
        let d = max_abs_diff(&cold, &warm);
        assert_eq!(
            cold_warm.max_abs_dlogit.to_bits(),
            d.to_bits(),
            "probe {} vs direct {d}",
            cold_warm.max_abs_dlogit
        );
    }
    assert!(report.conditions[1].identical, "{:?}", report.conditions[1]);
    // The seed: llama-server's per-request chain draws the same token on
    // equal logits.
    assert_eq!(report.sampler_repeats_on_equal_logits, Some(true));
    if warm_same {
        assert_eq!(cold_drawn, warm_drawn);
    }
    // The replay gives the same report.
    let again = repeat::replay(&recording).expect("replay");
    assert!(again.replayed);
    let mut live = report.clone();
    live.replayed = true;
    assert_eq!(again, live);
    if std::env::var_os("SERVER_PROBE_WRITE_REPEAT").is_some() {
        drop_token_texts(&mut recording);
        let text = serde_json::to_string(&recording).expect("json");
        std::fs::write(fixture("llama-server-repeat.json"), text + "\n").expect("write");
        let text = serde_json::to_string_pretty(&report).expect("json");
        std::fs::write(fixture("llama-server-repeat.report.json"), text + "\n").expect("write");
        let mut out = Vec::new();
        repeat::write_text(&report, &mut out).expect("text");
        std::fs::write(fixture("llama-server-repeat.txt"), out).expect("write");
    }
}

/// The committed recording replays to the committed report (the live one,
/// `replayed` aside), and its figures agree with its raw answers.
pub(crate) fn the_committed_repeat_recording_replays_with_the_same_report() {
    let path = fixture("llama-server-repeat.json");
    let text = std::fs::read_to_string(&path).expect("recording");
    let recording: Recording = serde_json::from_str(&text).expect("a recording");
    let report = repeat::replay(&recording).expect("replay");
    assert!(report.replayed);
    check_against_recording(&report, &recording);
    let text = std::fs::read_to_string(fixture("llama-server-repeat.report.json")).expect("report");
    let mut recorded: RepeatReport = serde_json::from_str(&text).expect("a report");
    recorded.replayed = true;
    assert_eq!(report, recorded);
}

pub(crate) fn repeat_options_are_bounded_and_need_llama_server() {
    let mut o = options("http://127.0.0.1:9");
    for (n, want) in [
        (Some(1), "expected 2 to 64"),
        (Some(65), "expected 2 to 64"),
    ] {
        o.repeat = n;
        let e = repeat::probe(&o).unwrap_err().to_string();
        assert!(e.contains(want), "{e}");
    }
    o.repeat = Some(2);
    o.api = Api::Openai;
    let e = repeat::probe(&o).unwrap_err().to_string();
    assert!(e.contains("--repeat needs --api llama-server"), "{e}");
    o.api = Api::LlamaServer;
    o.requests.push(obj(json!({})));
    let e = repeat::probe(&o).unwrap_err().to_string();
    assert!(e.contains("repeats one --request; 2 were given"), "{e}");
}
