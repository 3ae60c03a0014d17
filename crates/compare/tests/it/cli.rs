//! `compare dist`, `translate` and `ties` end to end.

use crate::helpers::{compare, text};

#[test]
fn dist_hf_keeps_top_k_ties() {
    // transformers' top-k keeps every token tied with the k-th: [3, 2, 2, 1], k = 2
    // keeps three. softmax over {3, 2, 2}: e³/(e³+2e²) = e/(e+2) = 0.5761169,
    // e²/(e³+2e²) = 1/(e+2) = 0.21194157 (f32).
    let out = compare(
        &["dist", "--semantics", "hf"],
        r#"{"logits": [3, 2, 2, 1], "params": {"do_sample": true, "top_k": 2}}"#,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "{\"kept\":3,\"probs\":[0.5761169,0.21194157,0.21194157,0.0],\"scores\":[3.0,2.0,2.0,\"-inf\"]}\n"
    );
}

#[test]
fn dist_spec_answers_the_specs_example_1() {
    // Spec example 1: top-k 2 keeps indices 0 and 1; e²/(e²+e¹) = 0.7310585786300049.
    let out = compare(
        &["dist", "--semantics", "spec"],
        r#"{"logits": [2.0, 1.0, 0.0, -1.0], "input_ids": [], "params": {"temperature": 1.0, "top_k": 2, "top_p": 1.0, "repetition_penalty": 1.0, "u": 0.3}}"#,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "{\"kept\":2,\"probs\":[0.7310585786300049,0.2689414213699951,0.0,0.0],\"tokens\":[0]}\n"
    );
}

#[test]
fn dist_candle_keeps_exactly_k() {
    let out = compare(
        &["dist", "--semantics", "candle"],
        r#"{"logits": [3, 2, 2, 1], "params": {"sampling": "TopK", "k": 2, "temperature": 1.0}}"#,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON line");
    assert_eq!(v["kept"], 2);
    let probs: Vec<f64> = serde_json::from_value(v["probs"].clone()).expect("probs");
    // Index 0 always survives; e³/(e³+e²) = 0.7310586 on it.
    assert!((probs[0] - 0.731_058_6).abs() < 1e-6, "{probs:?}");
    assert_eq!(probs.iter().filter(|&&p| p > 0.0).count(), 2);
}

#[test]
fn dist_reports_each_bad_line_and_exits_1() {
    let input = concat!(
        "{\"logits\": [1, 0], \"params\": {\"do_sample\": true, \"temperature\": 0.0}}\n",
        "\n",
        "{\"logits\": [1, 0], \"params\": {\"do_sample\": false}}\n",
        "not json\n",
    );
    let out = compare(&["dist", "--semantics", "hf"], input);
    assert_eq!(out.status.code(), Some(1));
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{stdout}");
    assert!(
        lines[0].starts_with("{\"error\":") && lines[0].contains("do_sample=False"),
        "{}",
        lines[0]
    );
    assert_eq!(
        lines[1],
        "{\"kept\":1,\"probs\":[1.0,0.0],\"scores\":[1.0,0.0]}"
    );
    assert!(
        lines[2].starts_with("{\"error\":\"invalid record"),
        "{}",
        lines[2]
    );
    let stderr = text(&out.stderr);
    assert!(stderr.contains("error: line 1: "), "{stderr}");
    assert!(stderr.contains("error: line 4: invalid record"), "{stderr}");
}

#[test]
fn dist_generation_config_sits_between_kwargs_and_defaults() {
    let dir = std::env::temp_dir().join(format!("compare-genconfig-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("generation_config.json");
    std::fs::write(&path, r#"{"top_k": 1, "unknown_key": [1, 2]}"#).expect("write config");
    let p = path.to_str().expect("utf-8 path");
    // The config's top_k=1 replaces the default 50: one token kept.
    let out = compare(
        &["dist", "--semantics", "hf", "--generation-config", p],
        r#"{"logits": [0.5, 3, 1], "params": {"do_sample": true}}"#,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).starts_with("{\"kept\":1,\"probs\":[0.0,1.0,0.0]"),
        "{}",
        text(&out.stdout)
    );
    // A kwarg beats the config: top_k=0 turns top-k off, all three kept.
    let out = compare(
        &["dist", "--semantics", "hf", "--generation-config", p],
        r#"{"logits": [0.5, 3, 1], "params": {"do_sample": true, "top_k": 0}}"#,
    );
    assert!(
        text(&out.stdout).starts_with("{\"kept\":3,"),
        "{}",
        text(&out.stdout)
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn dist_missing_generation_config_is_exit_2() {
    let out = compare(
        &[
            "dist",
            "--semantics",
            "hf",
            "--generation-config",
            "/nonexistent/generation_config.json",
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("/nonexistent/generation_config.json"),
        "{}",
        text(&out.stderr)
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn translate_names_the_candle_setup_and_warnings() {
    let out = compare(
        &[
            "translate",
            "--kwargs",
            r#"{"do_sample": true, "temperature": 0.7}"#,
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let s = text(&out.stdout);
    assert!(
        s.contains("TemperatureLogitsWarper → TopKLogitsWarper"),
        "{s}"
    );
    assert!(
        s.contains("Sampling::TopK { k: 50, temperature: 0.7 }"),
        "{s}"
    );

    let out = compare(
        &[
            "translate",
            "--format",
            "json",
            "--kwargs",
            r#"{"do_sample": true, "temperature": 0.7, "top_k": 40, "top_p": 0.9}"#,
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["schema"], 2);
    assert_eq!(v["to"], "candle");
    let warnings = v["translation"]["warnings"].to_string();
    assert!(warnings.contains("top_p_not_renormalised"), "{warnings}");
}

#[test]
fn translate_refuses_temperature_zero_like_transformers() {
    let out = compare(
        &[
            "translate",
            "--kwargs",
            r#"{"do_sample": true, "temperature": 0.0}"#,
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("set `do_sample=False`"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn ties_shows_three_rules() {
    let out = compare(&["ties", "--format", "json", "--draws", "2000"], "");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["schema"], 2);
    let entry = |name: &str| {
        v["semantics"]
            .as_array()
            .expect("semantics")
            .iter()
            .find(|s| s["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no {name} in {v}"))
    };
    // The real candle draws: every one replayed, none outside its two tokens.
    let candle = entry("candle");
    assert_eq!(candle["draws"]["replay_agree"], 2000);
    let counts: Vec<u64> =
        serde_json::from_value(candle["draws"]["counts"].clone()).expect("counts");
    assert_eq!(counts.iter().sum::<u64>(), 2000);
    assert_eq!(counts[3], 0);
    assert_eq!(counts[2], 0);
    // Token 0 carries e³/(e³+e²) = 0.731; 2000 draws: sd = sqrt(.731·.269/2000) ≈ 0.0099.
    let share = counts[0] as f64 / 2000.0;
    assert!((share - 0.731).abs() < 0.05, "{counts:?}");
    // Semantics whose engine cannot be run here make no draws.
    assert_eq!(entry("spec")["draws"], serde_json::Value::Null);
    // Every registry semantics: a threshold at the k-th value keeps the tie
    // (transformers' TopKLogitsWarper, vLLM's `logits < kth` mask, the
    // tutorial); a selection cut to exactly k keeps two (llama.cpp's
    // partial sort, which Ollama runs, candle's and mistral.rs's
    // `select_nth_unstable_by`, the spec).
    let kept: Vec<(String, serde_json::Value)> = v["semantics"]
        .as_array()
        .expect("semantics")
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap_or("?").to_string(),
                s["kept"].clone(),
            )
        })
        .collect();
    let three = serde_json::json!([0, 1, 2]);
    let two = serde_json::json!([0, 1]);
    for (name, want) in [
        ("hf", &three),
        ("hf-rust", &three),
        ("candle", &two),
        ("candle+hf-closure", &three),
        ("spec", &two),
        ("llama.cpp", &two),
        ("ollama", &two),
        ("vllm", &three),
        ("mistral.rs", &two),
        ("tutorial", &three),
    ] {
        let got = kept.iter().find(|(n, _)| n == name).map(|(_, k)| k);
        assert_eq!(got, Some(want), "{name}: {kept:?}");
    }
}

#[test]
fn usage_errors_exit_2() {
    let out = compare(&["dist", "--semantics", "no-such-engine"], "");
    assert_eq!(out.status.code(), Some(2));
    let out = compare(&["report", "--pairs", "hf:llama"], "");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("unknown semantics \"llama\""),
        "{}",
        text(&out.stderr)
    );
    // docs/robustness.md: an unknown --dispatch lists the two levels.
    let out = compare(&["bench", "--dispatch", "avx512"], "");
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("native") && err.contains("baseline"), "{err}");
}

#[test]
fn bench_json_rows_have_the_documented_fields() {
    let out = compare(
        &[
            "bench", "--vocab", "2000", "--reps", "3", "--format", "json",
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(
        (v["schema"].as_u64(), v["engine"].as_str()),
        (Some(2), Some("candle"))
    );
    let rows = v["rows"].as_array().expect("rows");
    assert!(rows.len() >= 6, "{rows:?}");
    for row in rows {
        let keys: Vec<&str> = row
            .as_object()
            .expect("object")
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            ["engine_us", "ours_us", "ratio", "setting", "vocab"],
            "{row}"
        );
        assert_eq!(row["vocab"], 2000);
        let (ours, engine) = (
            row["ours_us"].as_f64().expect("num"),
            row["engine_us"].as_f64().expect("num"),
        );
        assert!(ours > 0.0 && engine > 0.0, "{row}");
    }
}

#[test]
fn translate_to_llama_cpp_is_proven_on_the_bundled_fixtures() {
    // Llama-3.1's generation config: transformers adds top_k 50 before top_p.
    let out = compare(
        &[
            "translate",
            "--to",
            "llama.cpp",
            "--format",
            "json",
            "--kwargs",
            r#"{"do_sample": true, "temperature": 0.6, "top_p": 0.9, "repetition_penalty": 1.3}"#,
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["to"], "llama.cpp");
    let r = &v["translation"]["llama_server_request"];
    assert_eq!(
        r["samplers"],
        serde_json::json!([
            "penalties",
            "temperature",
            "top_k",
            "top_p",
            "min_p",
            "typ_p"
        ])
    );
    assert_eq!(
        (r["top_k"].as_i64(), r["min_p"].as_f64()),
        (Some(50), Some(0.0))
    );
    assert_eq!(r["repeat_last_n"].as_u64(), Some(4096));
    let flags = v["translation"]["llama_cli_flags"].to_string();
    assert!(flags.contains("--top-k\",\"50"), "{flags}");
    // The proof ran on all six SmolLM2 fixtures and every one is `same`.
    let proof = v["proof"].as_array().expect("proof");
    assert_eq!(proof.len(), 6);
    for p in proof {
        assert_eq!(p["same"], true, "{p}");
    }
}

#[test]
fn translate_to_llama_cpp_names_what_it_cannot_match() {
    let out = compare(
        &[
            "translate",
            "--to",
            "llama.cpp",
            "--kwargs",
            r#"{"do_sample": true, "eta_cutoff": 0.001}"#,
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let s = text(&out.stdout);
    assert!(s.contains("llama.cpp cannot reproduce these kwargs"), "{s}");
    assert!(
        s.contains("eta_cutoff = 0.001: llama.cpp has no such sampler"),
        "{s}"
    );
}

/// The README's `--generation-config` example names a file the repository has.
#[test]
fn the_readmes_generation_config_example_runs() {
    let config = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/examples/generation_config.json"
    );
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md"))
        .expect("README");
    assert!(readme.contains("--generation-config docs/examples/generation_config.json"));
    let out = crate::helpers::compare(
        &[
            "report",
            "--draws",
            "0",
            "--kwargs",
            r#"{"do_sample": true, "temperature": 0.6, "top_p": 0.9}"#,
            "--generation-config",
            config,
        ],
        "",
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        crate::helpers::text(&out.stderr)
    );
}
