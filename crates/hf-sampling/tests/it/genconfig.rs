//! Every recorded (generation_config.json, settings, route) case of every
//! transformers version modelled (`fixtures/genconfig/transformers-*.json`, recorded
//! by `scripts/reference/hf_reference.py --only genconfig --transformers V`
//! from the real 4.57.6, 5.0.0 and 5.23.0 packages): hf-rust with `transformers`
//! and `passed` set as recorded must build the same processors with the same
//! values, give the same scores bit for bit, the softmax transformers drew
//! from bit for bit (torch's AVX2 kernel, as recorded) and within 1e-6 with
//! [`hf_sampling::process`]'s own (AVX512) softmax, or reject what
//! transformers rejected, for the same reason; [`HfSampler`] keeps the same
//! tokens or refuses too.

use std::path::PathBuf;

use hf_sampling::{GenerationConfig, GenerationParams, HfSampler, process, resolve};
use replicas::torch::CpuCapability;
use serde_json::{Map, Value};

use crate::f32s;

/// |Δp| between `process`'s AVX512 softmax and the recorded AVX2 one.
const PROB_ABS_TOL: f32 = 1e-6;

fn fixture(version: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/genconfig")
        .join(format!("transformers-{version}.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A recorded config value as the number this crate holds: `None` (Python's)
/// is the value that adds no processor.
fn num_or(v: &Value, neutral: f64) -> f64 {
    v.as_f64()
        .or_else(|| v.as_bool().map(|b| f64::from(u8::from(b))))
        .unwrap_or(neutral)
}

/// What transformers' generation config and processor list say, against
/// the resolved params and this crate's processor names.
fn check_values(rec: &Value, p: &GenerationParams, names: &[&str]) -> Vec<String> {
    let mut bad = Vec::new();
    let config = &rec["config"];
    let top_k = config["top_k"].as_u64().filter(|&k| k > 0);
    let wanted = [
        (
            "do_sample",
            num_or(&config["do_sample"], 0.0),
            f64::from(u8::from(p.do_sample)),
        ),
        (
            "temperature",
            num_or(&config["temperature"], 1.0),
            p.temperature,
        ),
        ("top_p", num_or(&config["top_p"], 1.0), p.top_p),
        ("typical_p", num_or(&config["typical_p"], 1.0), p.typical_p),
        (
            "epsilon_cutoff",
            num_or(&config["epsilon_cutoff"], 0.0),
            p.epsilon_cutoff,
        ),
        (
            "eta_cutoff",
            num_or(&config["eta_cutoff"], 0.0),
            p.eta_cutoff,
        ),
        (
            "repetition_penalty",
            num_or(&config["repetition_penalty"], 1.0),
            p.repetition_penalty,
        ),
    ];
    for (key, want, got) in wanted {
        if want != got {
            bad.push(format!("{key}: transformers {want}, hf-rust {got}"));
        }
    }
    if top_k.map(|k| k as usize) != p.top_k {
        bad.push(format!(
            "top_k: transformers {top_k:?}, hf-rust {:?}",
            p.top_k
        ));
    }
    if config["min_p"].as_f64() != p.min_p {
        bad.push(format!(
            "min_p: transformers {}, hf-rust {:?}",
            config["min_p"], p.min_p
        ));
    }
    let procs = rec["processors"].as_array().expect("processors");
    let recorded: Vec<&str> = procs
        .iter()
        .map(|x| x["name"].as_str().expect("name"))
        .collect();
    if recorded != names {
        bad.push(format!(
            "processors: transformers {recorded:?}, hf-rust {names:?}"
        ));
    }
    // Each processor's own value is the resolved param it was built from.
    for x in procs {
        let value = |attr: &str| x.get(attr).and_then(Value::as_f64);
        let (attr, ours) = match x["name"].as_str().expect("name") {
            "TemperatureLogitsWarper" => ("temperature", Some(p.temperature)),
            "TopKLogitsWarper" => ("top_k", p.top_k.map(|k| k as f64)),
            "TopPLogitsWarper" => ("top_p", Some(p.top_p)),
            "MinPLogitsWarper" => ("min_p", p.min_p),
            "TypicalLogitsWarper" => ("mass", Some(p.typical_p)),
            "EpsilonLogitsWarper" => ("epsilon", Some(p.epsilon_cutoff)),
            // Held as a float32 tensor (`torch.tensor(epsilon)`).
            "EtaLogitsWarper" => ("epsilon", Some(f64::from(p.eta_cutoff as f32))),
            "TopHLogitsWarper" => ("top_h", p.constraints.top_h),
            "RepetitionPenaltyLogitsProcessor" => ("penalty", Some(p.repetition_penalty)),
            other => {
                bad.push(format!("processor {other} not expected here"));
                continue;
            }
        };
        if value(attr) != ours {
            bad.push(format!(
                "{}.{attr}: transformers {:?}, hf-rust {ours:?}",
                x["name"],
                value(attr)
            ));
        }
    }
    bad
}

/// transformers' message without its exception type, against hf-rust's.
fn same_reason(transformers: &str, ours: &str) -> bool {
    let message = transformers
        .split_once(": ")
        .map_or(transformers, |(_, m)| m);
    let head: String = message.chars().take(48).collect();
    ours.contains(&head)
}

#[derive(Default, Debug)]
struct Tally {
    accepted: usize,
    rejected: usize,
    max_prob_diff: f32,
}

fn replay(version: &str) -> (Tally, Vec<String>) {
    let fx = fixture(version);
    assert_eq!(fx["format"], "sampling-parity-genconfig/1");
    assert_eq!(fx["transformers_version"], version);
    let logits = f32s(&fx["logits"]);
    let mut tally = Tally::default();
    let mut failures = Vec::new();
    for case in fx["cases"].as_array().expect("cases") {
        let name = case["name"].as_str().expect("name");
        let file = &fx["files"][case["file"].as_str().expect("file")]["contents"];
        let config = file.as_object().map(|m| {
            GenerationConfig::from_values(m.clone()).unwrap_or_else(|e| panic!("{name}: {e}"))
        });
        let mut settings: Map<String, Value> = case["kwargs"].as_object().expect("kwargs").clone();
        settings.insert("transformers".into(), Value::from(version));
        settings.insert("passed".into(), case["passed"].clone());
        let ids: Vec<i64> = fx["contexts"][case["context"].as_str().expect("context")]
            .as_array()
            .expect("ids")
            .iter()
            .map(|x| x.as_i64().expect("id"))
            .collect();
        let ctx = format!("{version} {name} {}", Value::Object(settings.clone()));
        let out = resolve(&settings, config.as_ref()).and_then(|p| {
            let names = p.processor_names()?;
            let out = process(&logits, &ids, &p)?;
            Ok((p, names, out))
        });
        // The fast path agrees: the same kept set, or the same refusal.
        if let Ok(p) = resolve(&settings, config.as_ref()) {
            let fast = HfSampler::new(&p)
                .and_then(|mut s| s.distribution(&logits, &ids).map(|d| d.kept.to_vec()));
            match (&out, fast) {
                (Ok((_, _, o)), Ok(kept)) => {
                    let want: Vec<u32> = o.kept.iter().map(|&i| i as u32).collect();
                    if kept != want {
                        failures.push(format!("{ctx}: HfSampler kept {kept:?}, process {want:?}"));
                    }
                }
                (Err(_), Err(_)) => {}
                (o, f) => failures.push(format!(
                    "{ctx}: HfSampler {:?}, process {:?}",
                    f.map(|k| k.len()),
                    o.as_ref().map(|(_, _, o)| o.kept.len())
                )),
            }
        }
        match (case.get("error").and_then(Value::as_str), out) {
            (Some(err), Err(e)) => {
                tally.rejected += 1;
                if !same_reason(err, &e.to_string()) {
                    failures.push(format!(
                        "{ctx}: rejected for another reason:\n  transformers: {err}\n  hf-rust: {e}"
                    ));
                }
            }
            (Some(err), Ok(_)) => failures.push(format!(
                "{ctx}: transformers rejected it ({err}), hf-rust accepted"
            )),
            (None, Err(e)) => failures.push(format!("{ctx}: hf-rust rejected it: {e}")),
            (None, Ok((p, names, out))) => {
                tally.accepted += 1;
                failures.extend(
                    check_values(case, &p, &names)
                        .into_iter()
                        .map(|b| format!("{ctx}: {b}")),
                );
                let scores = f32s(&case["scores"]);
                if scores
                    .iter()
                    .map(|x| x.to_bits())
                    .ne(out.scores.iter().map(|x| x.to_bits()))
                {
                    failures.push(format!(
                        "{ctx}: scores differ\n  transformers {scores:?}\n  hf-rust {:?}",
                        out.scores
                    ));
                }
                match (case.get("probs"), case.get("greedy")) {
                    (Some(probs), _) => {
                        let probs = f32s(probs);
                        let avx2 = CpuCapability::Avx2.softmax(&out.scores);
                        if probs
                            .iter()
                            .map(|x| x.to_bits())
                            .ne(avx2.iter().map(|x| x.to_bits()))
                        {
                            failures.push(format!("{ctx}: AVX2 softmax differs\n  transformers {probs:?}\n  hf-rust {avx2:?}"));
                        }
                        for (a, b) in probs.iter().zip(&out.probs) {
                            tally.max_prob_diff = tally.max_prob_diff.max((a - b).abs());
                        }
                    }
                    (None, Some(g)) => {
                        if out.greedy != g.as_u64().map(|g| g as usize) {
                            failures
                                .push(format!("{ctx}: greedy {:?}, transformers {g}", out.greedy));
                        }
                    }
                    (None, None) => {
                        failures.push(format!("{ctx}: neither probs nor greedy recorded"))
                    }
                }
            }
        }
    }
    if tally.max_prob_diff > PROB_ABS_TOL {
        failures.push(format!(
            "{version}: max |Δp| {} > {PROB_ABS_TOL}",
            tally.max_prob_diff
        ));
    }
    (tally, failures)
}

/// What each version's `to_diff_dict()` kept of each recorded file: the
/// file's keys minus [`hf_sampling::version::dropped_by_to_diff_dict`].
#[test]
fn to_diff_dict_drops_what_each_version_drops() {
    use hf_sampling::TransformersVersion;
    let mut checked = 0;
    for v in TransformersVersion::ALL {
        let version = v.as_str();
        let fx = fixture(version);
        for (name, file) in fx["files"].as_object().expect("files") {
            let Some(contents) = file["contents"].as_object() else {
                continue;
            };
            let kept = file["to_diff_dict"].as_object().expect("to_diff_dict");
            let dropped = hf_sampling::version::dropped_by_to_diff_dict(v, contents);
            // `to_dict()` writes the running version's (4.57.6 line 1045).
            for (key, value) in contents
                .iter()
                .filter(|(k, _)| *k != "transformers_version")
            {
                let gone = dropped.iter().any(|(k, _)| k == key);
                assert_eq!(kept.get(key).is_none(), gone, "{version} {name}: {key}");
                if !gone {
                    assert_eq!(kept.get(key), Some(value), "{version} {name}: {key}");
                }
                checked += 1;
            }
        }
    }
    assert!(checked > 40, "{checked}");
}

#[test]
fn every_recorded_case_of_every_version_replays() {
    let mut all = Vec::new();
    for version in hf_sampling::TransformersVersion::ALL.map(|v| v.as_str()) {
        let (tally, failures) = replay(version);
        eprintln!("genconfig {version}: {tally:?}");
        assert!(
            tally.accepted > 150 && tally.rejected > 40,
            "{version}: {tally:?}"
        );
        all.extend(failures);
    }
    assert!(
        all.is_empty(),
        "{} failure(s):\n{}",
        all.len(),
        all.join("\n")
    );
}
