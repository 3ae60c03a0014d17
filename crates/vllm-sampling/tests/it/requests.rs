//! vLLM 0.32.0's generation-config merge, replayed: every case of
//! `fixtures/vllm/requests.jsonl` (recorded by
//! `scripts/reference/vllm/record_requests.py` with vLLM's own
//! `ModelConfig.get_diff_sampling_param` and
//! `ChatCompletionRequest.to_sampling_params`) through
//! [`Vllm::defaults`] and [`Semantics::from_request`].

use std::path::Path;

use parity_core::Semantics;
use serde_json::{Map, Value};
use vllm_sampling::{GenerationConfigSource, Vllm, VllmParams};

fn lines() -> (Map<String, Value>, Vec<Map<String, Value>>) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/vllm/requests.jsonl");
    let text = std::fs::read_to_string(path).expect("fixtures/vllm/requests.jsonl");
    let mut all = text.lines().map(|l| {
        serde_json::from_str::<Value>(l)
            .expect("JSON")
            .as_object()
            .cloned()
            .expect("object")
    });
    let meta = all.next().expect("metadata");
    assert_eq!(meta["format"], "sampling-parity-vllm-requests/1");
    assert_eq!(meta["vllm_version"], "0.32.0");
    (meta, all.collect())
}

fn check(what: &str, recorded: &Value, p: &VllmParams) {
    let f = |k: &str| {
        recorded[k]
            .as_f64()
            .unwrap_or_else(|| panic!("{what}: {k}"))
    };
    assert_eq!(f("temperature"), p.temperature, "{what}: temperature");
    assert_eq!(f("top_p"), p.top_p, "{what}: top_p");
    assert_eq!(recorded["top_k"].as_i64(), Some(p.top_k), "{what}: top_k");
    assert_eq!(f("min_p"), p.min_p, "{what}: min_p");
    assert_eq!(
        f("presence_penalty"),
        p.presence_penalty,
        "{what}: presence"
    );
    assert_eq!(
        f("frequency_penalty"),
        p.frequency_penalty,
        "{what}: frequency"
    );
    assert_eq!(
        f("repetition_penalty"),
        p.repetition_penalty,
        "{what}: repetition"
    );
    assert_eq!(recorded["seed"].as_u64(), p.seed, "{what}: seed");
}

#[test]
fn every_recorded_merge_is_reproduced() {
    let (meta, cases) = lines();
    let (mut ok, mut refused) = (0, 0);
    for c in &cases {
        let mode = c["generation_config"].as_str().expect("mode");
        let file = c["file"].as_str().expect("file");
        // A folder given to --generation-config is read like auto's file:
        // the caller passes that folder's file.
        let (source, file) = match mode {
            "auto" => (GenerationConfigSource::Model, file),
            "vllm" => (GenerationConfigSource::Vllm, file),
            folder => (GenerationConfigSource::Model, folder),
        };
        let gc = meta["files"][file].as_object();
        let overrides = c["override"].as_object().cloned().expect("override");
        let vllm = Vllm::new(source, overrides);
        let what = format!("{file}/{mode}/{} {}", c["override"], c["body"]);
        let mut defaults = vllm.defaults(gc);
        // vLLM's dict keeps the wheel's order; compare as sets.
        defaults.sort_keys();
        let mut expected = c["defaults"].as_object().cloned().expect("defaults");
        expected.sort_keys();
        assert_eq!(defaults, expected, "{what}: get_diff_sampling_param");
        let body = c["body"].as_object().expect("body");
        let routes = vllm.from_request(body, gc);
        let [route] = routes.as_slice() else {
            panic!("{what}: one route")
        };
        match (&route.params, c.get("sampling_params"), c.get("error")) {
            (Ok(p), Some(sp), None) => {
                check(&what, sp, p);
                ok += 1;
            }
            (Err(e), None, Some(err)) => {
                let err = err.as_str().expect("error");
                let text = err.split_once(": ").map_or(err, |(_, t)| t);
                assert!(e.to_string().starts_with(text), "{what}: {e} vs {err}");
                refused += 1;
            }
            (got, sp, err) => panic!("{what}: got {got:?}, recorded {sp:?} / {err:?}"),
        }
    }
    assert_eq!((ok, refused), (80, 10));
}

#[test]
fn the_default_semantics_is_auto_without_overrides() {
    assert_eq!(
        Vllm::AUTO,
        Vllm::new(GenerationConfigSource::Model, Map::new())
    );
}
