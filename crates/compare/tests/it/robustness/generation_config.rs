//! `generation_config.json` and `--kwargs`: lenient where transformers is,
//! exit 2 naming the key where it is not, and bounded in size.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::helpers::{assert_close, probs};
use crate::helpers::{run, text_lossy};

fn config_file(name: &str, contents: &str) -> PathBuf {
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("robustness-{name}.json"));
    std::fs::write(&path, contents).expect("write config");
    path
}

#[test]
fn generation_config_unknown_keys_and_nulls_are_accepted() {
    // Unknown keys are kept and ignored (transformers keeps them as custom
    // attributes); null means unset, so transformers' default applies
    // (top_k: null here still gives top-k 50; in kwargs null turns it off).
    let path = config_file(
        "config-lenient",
        r#"{"do_sample": true, "temperature": 0.6, "top_k": null, "top_p": null, "my_custom_key": [1, {"x": null}], "_from_model_config": true, "transformers_version": "4.0"}"#,
    );
    let p = path.to_str().expect("utf-8");
    let out = run(&["translate", "--generation-config", p], Vec::new());
    assert_eq!(out.status.code(), Some(0), "{}", text_lossy(&out.stderr));
    let stdout = text_lossy(&out.stdout);
    assert!(
        stdout.contains("\ntransformers: TemperatureLogitsWarper → TopKLogitsWarper\n"),
        "{stdout}"
    );
    // Each resolved value says where it came from.
    assert!(
        stdout.contains("temperature = 0.6  (generation_config.json)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("top_k = 50  (transformers' default)"),
        "{stdout}"
    );
    let (status, answers, stderr) = {
        let o = run(
            &["dist", "--semantics", "hf", "--generation-config", p],
            br#"{"logits": [1, 0]}"#.to_vec(),
        );
        (
            o.status.code(),
            text_lossy(&o.stdout),
            text_lossy(&o.stderr),
        )
    };
    assert_eq!(status, Some(0), "{stderr}");
    // softmax([1, 0] / 0.6) = [0.8411309, 0.1588691].
    let a: Value = serde_json::from_str(answers.trim()).expect("JSON");
    assert_close(
        &probs(&a),
        &[0.841_130_895_052_954_8, 0.158_869_104_947_045_2],
        1e-6,
    );
}

#[test]
fn generation_config_wrong_types_and_bad_json_exit_2_naming_the_key() {
    let cases = [
        (
            "config-do-sample",
            r#"{"do_sample": "yes"}"#,
            r#"`do_sample` must be a boolean, but is "yes""#,
        ),
        (
            "config-temperature",
            r#"{"temperature": "hot"}"#,
            r#"`temperature` must be a number, but is "hot""#,
        ),
        (
            "config-top-k",
            r#"{"top_k": 2.5}"#,
            "`top_k` must be an integer, but is 2.5",
        ),
        (
            "config-array",
            "[1, 2]",
            "generation_config.json must be a JSON object, but is an array",
        ),
        (
            "config-truncated",
            r#"{"do_sample": true,"#,
            "generation_config.json is not valid JSON: EOF while parsing",
        ),
        (
            "config-empty",
            "",
            "generation_config.json is not valid JSON: EOF while parsing",
        ),
        (
            "config-beams",
            r#"{"num_beams": 4}"#,
            "`num_beams` (=4) changes transformers' distribution in a way hf-sampling does not implement",
        ),
    ];
    for (name, contents, message) in cases {
        let path = config_file(name, contents);
        let p = path.to_str().expect("utf-8");
        for args in [
            vec!["translate", "--generation-config", p],
            vec!["dist", "--semantics", "hf", "--generation-config", p],
        ] {
            let out = run(&args, br#"{"logits": [1, 0]}"#.to_vec());
            let stderr = text_lossy(&out.stderr);
            // translate refuses the whole run; dist refuses an unusable file
            // up front, and a config transformers would reject per record.
            let (want_status, want_stdout_empty) = match (args[0], name) {
                ("dist", "config-beams") => (Some(1), false),
                _ => (Some(2), true),
            };
            assert_eq!(out.status.code(), want_status, "{args:?}: {stderr}");
            assert_eq!(out.stdout.is_empty(), want_stdout_empty, "{args:?}");
            assert!(
                stderr.contains(message),
                "{args:?}\nexpected {message:?} in {stderr:?}"
            );
            assert!(!stderr.contains("panicked"), "{stderr}");
        }
    }
    // Missing file, and a config with another semantics.
    let out = run(
        &["translate", "--generation-config", "/nonexistent/g.json"],
        Vec::new(),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(text_lossy(&out.stderr).contains("/nonexistent/g.json: cannot read generation config"));
    let path = config_file("config-ok", "{}");
    let out = run(
        &[
            "dist",
            "--semantics",
            "spec",
            "--generation-config",
            path.to_str().expect("utf-8"),
        ],
        Vec::new(),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text_lossy(&out.stderr)
            .contains("--generation-config: spec does not read a model's generation_config.json"),
        "{}",
        text_lossy(&out.stderr)
    );
}

#[cfg(unix)]
#[test]
fn an_endless_generation_config_is_refused() {
    // Regression: read_to_string("/dev/zero") never ends.
    let out = run(
        &["translate", "--generation-config", "/dev/zero"],
        Vec::new(),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text_lossy(&out.stderr).contains("more than 16777216 bytes: not a generation_config.json"),
        "{}",
        text_lossy(&out.stderr)
    );
}

#[test]
fn translate_kwargs_malformed_and_wrong_types() {
    for (kwargs, message) in [
        (r#"{"do_sample": tru"#, "--kwargs is not a JSON object"),
        ("[1]", "--kwargs is not a JSON object"),
        (
            r#"{"do_sample": true, "temperature": 0}"#,
            "`temperature` (=0) has to be a strictly positive float",
        ),
        (
            r#"{"do_sample": true, "top_k": -3}"#,
            "`top_k` has to be a strictly positive integer, but is -3",
        ),
    ] {
        let out = run(&["translate", "--kwargs", kwargs], Vec::new());
        assert_eq!(out.status.code(), Some(2), "{kwargs}");
        assert!(
            text_lossy(&out.stderr).contains(message),
            "{kwargs}: {}",
            text_lossy(&out.stderr)
        );
    }
}

/// hf-rust's `transformers` param: 4.57.6 reads a file's `null` as a value
/// (`top_k: null` is off, where 5.23.0 uses 50), and a bad pick, a
/// sequence bias on id 0 under 4.57.6 (its `token_id > 0` check; 5.23.0
/// takes it) or an id >= V with a penalty under 4.57.6 is an error of its
/// record, in words (status 1).
#[test]
fn the_transformers_version_is_a_checked_param() {
    let path = config_file("config-nulls-4x", r#"{"do_sample": true, "top_k": null}"#);
    let p = path.to_str().expect("utf-8");
    let logits: Vec<String> = (0..60)
        .map(|i| format!("{}", f64::from(i) / 10.0))
        .collect();
    let record = |params: &str| {
        format!(
            r#"{{"logits": [{}], "input_ids": [1, 8], "params": {params}}}"#,
            logits.join(", ")
        )
    };
    let kept = |params: &str| {
        let o = run(
            &["dist", "--semantics", "hf-rust", "--generation-config", p],
            record(params).into_bytes(),
        );
        assert_eq!(o.status.code(), Some(0), "{}", text_lossy(&o.stderr));
        let a: Value = serde_json::from_str(text_lossy(&o.stdout).trim()).expect("JSON");
        probs(&a).iter().filter(|&&x| x > 0.0).count()
    };
    assert_eq!(kept("{}"), 50);
    assert_eq!(kept(r#"{"transformers": "5.23.0"}"#), 50);
    assert_eq!(kept(r#"{"transformers": "4.57.6"}"#), 60);
    let input = [
        r#"{"transformers": "4.46"}"#,
        r#"{"passed": "object"}"#,
        r#"{"transformers": "4.57.6", "sequence_bias": [[[0], 1.5]]}"#,
        r#"{"transformers": "5.23.0", "sequence_bias": [[[0], 1.5]]}"#,
    ]
    .iter()
    .map(|params| record(params))
    .chain(std::iter::once(
        r#"{"logits": [1, 2, 3, 4, 5, 6, 7, 8], "input_ids": [1, 8], "params": {"transformers": "4.57.6", "repetition_penalty": 1.3}}"#.to_string(),
    ))
    .collect::<Vec<_>>()
    .join("\n");
    let o = run(&["dist", "--semantics", "hf-rust"], input.into_bytes());
    assert_eq!(o.status.code(), Some(1), "{}", text_lossy(&o.stderr));
    let stdout = text_lossy(&o.stdout);
    for want in [
        r#"`transformers` must be \"4.57.6\", \"5.0.0\" or \"5.23.0\", but is \"4.46\""#,
        r#"`passed` must be \"kwargs\" or \"generation_config\", but is \"object\""#,
        "Each element in `sequence_bias` has to be a non-empty list of lists of positive integers \
         and float, but is [[[0], 1.5]].",
        "index 8 is out of bounds for dimension 1 with size 8",
    ] {
        assert!(stdout.contains(want), "{want}\n{stdout}");
    }
    // 5.23.0 takes the same bias (`token_id >= 0`): one refusal, not two.
    assert_eq!(stdout.matches("sequence_bias").count(), 1, "{stdout}");
}
