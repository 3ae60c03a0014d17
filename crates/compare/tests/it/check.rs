//! The regression check never passes by checking nothing, and every fix a
//! report prints is proven on the row's own logits.

use comparison::report::Verdict;

use crate::helpers::{compare, fixture, text};

#[test]
fn a_misspelt_setting_is_a_usage_error_listing_the_recorded_ones() {
    let out = compare(
        &["report", "--settings", "t07,k4O", "--fail-on", "differs"],
        "",
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(err.contains("no fixture records k4O"), "{err}");
    assert!(err.contains("k40p09"), "lists the recorded names: {err}");
    assert!(out.stdout.is_empty());
}

#[test]
fn a_run_that_compares_nothing_is_exit_2_and_says_why() {
    // An empty folder.
    let empty = std::env::temp_dir().join(format!("sp-empty-{}", std::process::id()));
    std::fs::create_dir_all(&empty).expect("temp dir");
    let out = compare(
        &[
            "report",
            empty.to_str().expect("utf-8 path"),
            "--max-tv",
            "1e-5",
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("nothing compared: no .safetensors fixture"));
    // A setting the fixture does not record: refused, not an empty pass.
    let model = fixture("smollm2/hello_k0");
    let out = compare(&["report", &model, "--settings", "greedy"], "");
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("no fixture records greedy"));
}

#[test]
fn fail_on_differs_fails_rows_that_max_tv_lets_through() {
    // hello_k7 t07_default: the kept sets differ (50 vs 49,152) by 2.6e-6 of
    // mass, under --max-tv 1e-5 but not `same`.
    let file = fixture("smollm2/hello_k7");
    let args = [
        "report",
        &file,
        "--settings",
        "t07_default",
        "--pairs",
        "hf:candle",
        "--draws",
        "100",
    ];
    let out = compare(&[&args[..], &["--max-tv", "1e-5"]].concat(), "");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = compare(&[&args[..], &["--fail-on", "differs"]].concat(), "");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("1 row fails the check."));
}

#[test]
fn every_printed_fix_is_proven_on_every_bundled_fixture_and_setting() {
    let out = compare(
        &[
            "report",
            &format!("{}/../../fixtures/smollm2", env!("CARGO_MANIFEST_DIR")),
            &format!("{}/../../fixtures/edge", env!("CARGO_MANIFEST_DIR")),
            "--all-settings",
            "--pairs",
            "hf:candle",
            "--draws",
            "0",
            "--format",
            "json",
        ],
        "",
    );
    let report: comparison::report::Report = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", text(&out.stderr)));
    let mut proven = 0;
    for row in &report.rows {
        if row.fix.is_some() {
            assert_eq!(
                row.fix_verdict,
                Some(Verdict::Same),
                "{} {}",
                row.fixture,
                row.setting
            );
            proven += 1;
            // The printed fix is exactly the params, run again through dist.
            let params = row.fix_params.as_ref().expect("fix params");
            assert!(params.contains_key("sampling"), "{params:?}");
        }
        if row.fix_verdict == Some(Verdict::Differs) {
            assert!(row.fix.is_none());
            let reason = row.reason.as_deref().unwrap_or("");
            assert!(reason.contains("no proven fix"), "{reason}");
        }
    }
    // 36 when written: the literal port's default-top-k, top-k and renormalisation rows.
    assert!(proven >= 30, "only {proven} rows had a proven fix");
}

#[test]
fn the_llama_3_1_config_gets_the_closure_fix_not_top_k_then_top_p() {
    // transformers' default top-k 50 meets top_p 0.9, temperature 0.6: the
    // plain TopKThenTopP { k: 50 } keeps more than transformers; the proven
    // fix is translate's exact recipe (TopP + the top-k closure).
    let out = compare(
        &["diff", "--pairs", "hf:candle", "--format", "json"],
        &format!(
            "{{\"logits\": {}, \"params\": {{\"do_sample\": true, \"temperature\": 0.6, \"top_p\": 0.9}}}}\n",
            serde_json::to_string(&heavy_logits()).expect("json")
        ),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json line");
    let row = &v["rows"][0];
    assert_eq!(row["fix_verdict"], "same", "{row}");
    let fix = row["fix"].as_str().expect("a fix");
    assert!(
        fix.contains("TopP")
            && fix.contains("sample_f(&logits, |prs| HfTopK::new(&logits, 50, 0.6).apply(prs))"),
        "{fix}"
    );
    assert!(!fix.contains("TopKThenTopP"), "{fix}");
}

/// 200 logits: the top 50 hold only a quarter of the mass at T = 0.6
/// (50·e^(1/0.6) against 150·e^(0.9/0.6)), so transformers' top-p 0.9 on the
/// renormalised top 50 keeps about 45 tokens and a plain TopP about 180.
fn heavy_logits() -> Vec<f32> {
    (0..200)
        .map(|i| {
            if i < 50 {
                1.0 - 0.001 * i as f32
            } else {
                0.9 - 0.001 * (i - 50) as f32
            }
        })
        .collect()
}

#[test]
fn diff_compares_your_own_logits_pair_by_pair() {
    // [3, 2, 2, 1] with top_k 2: transformers keeps the tie (3 tokens), the
    // literal candle TopK exactly 2, the exact recipe 3 again.
    let record = "{\"logits\": [3, 2, 2, 1], \"params\": {\"do_sample\": true, \"top_k\": 2}}\n";
    let out = compare(
        &["diff", "--pairs", "hf:candle", "--format", "json"],
        record,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json line");
    assert_eq!(
        (
            v["rows"][0]["kept_left"].as_u64(),
            v["rows"][0]["kept_right"].as_u64()
        ),
        (Some(3), Some(2))
    );
    assert_eq!(v["rows"][0]["verdict"], "differs");
    let out = compare(
        &[
            "diff",
            "--pairs",
            "hf:candle",
            "--setup",
            "exact",
            "--format",
            "json",
            "--fail-on",
            "differs",
        ],
        record,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json line");
    assert_eq!(v["rows"][0]["verdict"], "same");
    // A bad record is answered and the batch goes on; exit 1.
    let out = compare(&["diff"], &format!("{{\"logits\": [1, true]}}\n{record}"));
    assert_eq!(out.status.code(), Some(1));
    let lines: Vec<String> = text(&out.stdout).lines().map(str::to_string).collect();
    assert!(lines[0].contains("error"), "{lines:?}");
    assert!(
        lines.iter().any(|l| l.starts_with("record 2:")),
        "{lines:?}"
    );
}

#[test]
fn a_moved_binary_finds_the_fixtures_or_says_where_it_looked() {
    let dir = std::env::temp_dir().join(format!("sp-moved-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let moved = dir.join("compare");
    std::fs::copy(env!("CARGO_BIN_EXE_compare"), &moved).expect("copy binary");
    // From another working directory, with the variable unset: the source
    // tree it was built from is still there, so it runs.
    let run = |env: Option<&str>| {
        let mut cmd = std::process::Command::new(&moved);
        cmd.args([
            "report",
            "--settings",
            "k40",
            "--pairs",
            "hf:hf-rust",
            "--format",
            "json",
        ])
        .current_dir(&dir);
        match env {
            Some(v) => cmd.env("SAMPLING_PARITY_FIXTURES", v),
            None => cmd.env_remove("SAMPLING_PARITY_FIXTURES"),
        };
        cmd.output().expect("moved binary runs")
    };
    let out = run(None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // Pointed at a folder without fixtures: exit 2 naming it.
    let out = run(Some(dir.to_str().expect("utf-8")));
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("SAMPLING_PARITY_FIXTURES="),
        "{}",
        text(&out.stderr)
    );
    // Pointed at the real folder from anywhere: runs.
    let real = format!("{}/../../fixtures", env!("CARGO_MANIFEST_DIR"));
    let out = run(Some(&real));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

/// One lookup of the bundled fixtures for every command: `trace` (which read
/// the source tree whatever `SAMPLING_PARITY_FIXTURES` said) takes its traces
/// from the folder the variable names, here one holding a single trace and
/// its llama.cpp logits.
#[test]
fn trace_takes_its_traces_from_sampling_parity_fixtures() {
    let dir = std::env::temp_dir().join(format!("sp-trace-env-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("smollm2")).expect("temp dir");
    std::fs::create_dir_all(dir.join("traces")).expect("temp dir");
    let real = format!("{}/../../fixtures", env!("CARGO_MANIFEST_DIR"));
    for name in [
        "bicycle_p09.safetensors",
        "bicycle_p09.llamacpp.safetensors",
    ] {
        std::fs::copy(
            format!("{real}/traces/{name}"),
            dir.join("traces").join(name),
        )
        .expect("copy trace");
    }
    let run = || {
        std::process::Command::new(env!("CARGO_BIN_EXE_compare"))
            .args(["trace", "--port", "llama.cpp", "--format", "json"])
            .env("SAMPLING_PARITY_FIXTURES", &dir)
            .output()
            .expect("compare runs")
    };
    let out = run();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let names: Vec<&str> = doc["traces"]
        .as_array()
        .expect("traces")
        .iter()
        .filter_map(|t| t["trace"].as_str())
        .collect();
    assert_eq!(
        names,
        ["bicycle_p09"],
        "only the trace in the variable's folder"
    );
    // Without traces/ there: an error naming the folder, not the source tree's.
    std::fs::remove_dir_all(dir.join("traces")).expect("remove traces");
    let out = run();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains(&dir.join("traces").display().to_string()),
        "{}",
        text(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn report_runs_your_kwargs_with_transformers_computed_and_labelled() {
    // On this context transformers' default top_k 50 cuts before top_p 0.9
    // renormalises (11 tokens kept); candle's literal TopP keeps 14.
    let model = fixture("smollm2/hello_k0");
    let kwargs = r#"{"do_sample": true, "temperature": 0.7, "top_p": 0.9}"#;
    // hf:candle on the fixture with these kwargs, one JSON report.
    let report = |extra: &[&str]| -> serde_json::Value {
        let mut args = vec!["report", &model, "--kwargs", kwargs, "--pairs", "hf:candle"];
        args.extend_from_slice(&["--format", "json", "--draws", "0"]);
        args.extend_from_slice(extra);
        let out = compare(&args, "");
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        serde_json::from_slice(&out.stdout).expect("json")
    };
    let v = report(&[]);
    let rows = v["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 1);
    let row = &rows[0];
    assert_eq!(
        (row["left"].as_str(), row["setting"].as_str()),
        (Some("hf-rust"), Some("kwargs"))
    );
    assert_eq!(row["verdict"], "differs");
    assert_eq!(row["fix_verdict"], "same", "{row}");

    // A generation config that sets top_k 1 makes transformers greedy-like:
    // one token kept on the transformers side.
    let config = std::env::temp_dir().join(format!("sp-genconfig-{}.json", std::process::id()));
    std::fs::write(&config, r#"{"top_k": 1}"#).expect("write config");
    let v = report(&["--generation-config", config.to_str().expect("utf-8 path")]);
    assert_eq!(v["rows"][0]["kept_left"], 1);

    let out = compare(&["report", &model, "--kwargs", "[1]"], "");
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--kwargs is not a JSON object: [1]"));
}
