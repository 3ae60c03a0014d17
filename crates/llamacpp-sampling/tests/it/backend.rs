//! Backend sampling. fixtures/llamacpp-b11434/backend-cpu.jsonl holds
//! llama.cpp b11434's chains run the way `--backend-sampling` runs them, on
//! ggml's CPU backend (scripts/reference/llamacpp/record_backend.py), for
//! every case record.py records. The `llama.cpp` semantics with
//! `backend_sampling: true` (crate::backend) replays every case; without it
//! (the CPU chain) these tests measure where the backend samples otherwise,
//! and check each cause docs/engines/llamacpp.md ("Backend sampling")
//! names, with the figures it quotes.

use std::collections::{HashMap, HashSet};

use llamacpp_sampling::LlamaCpp;
use parity_core::Semantics;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::recorded::{
    B11434, Branch, Case, Header, expected, fixtures, kept, load_file, max_diff, run, with_replay,
};

const BACKEND: &str = "llamacpp-b11434/backend-cpu.jsonl";

#[derive(Debug, Deserialize)]
struct BackendHeader {
    format: String,
    llama_cpp_build: String,
    backend: String,
    seed: u32,
    draws: usize,
}

#[derive(Debug, Deserialize)]
struct BackendCase {
    fixture: String,
    name: String,
    request: Map<String, Value>,
    seed: u32,
    chain: Vec<String>,
    #[serde(default)]
    abort: Option<String>,
    #[serde(default)]
    abort_seen: bool,
    #[serde(default)]
    offloaded: bool,
    #[serde(default)]
    ids: Vec<i64>,
    #[serde(default)]
    p: Vec<Option<f64>>,
    #[serde(default)]
    tokens: Vec<i64>,
    #[serde(default)]
    xtc_applied: Option<Branch>,
    #[serde(default)]
    xtc_skipped: Option<Branch>,
}

/// What one backend case and the semantics say.
struct Compared<'a> {
    case: &'a BackendCase,
    /// the backend's distribution (XTC 0.5: its two branches mixed, as
    /// recorded.rs mixes the CPU chain's)
    backend: Vec<f64>,
    semantics: Vec<f64>,
    tokens: Vec<i64>,
}

impl Compared<'_> {
    fn same_kept(&self) -> bool {
        kept(&self.backend) == kept(&self.semantics)
    }
    fn same_tokens(&self) -> bool {
        self.tokens == self.case.tokens
    }
    fn identical(&self) -> bool {
        self.same_kept() && self.same_tokens() && max_diff(&self.backend, &self.semantics) <= 1e-6
    }
}

fn load() -> (BackendHeader, Vec<BackendCase>) {
    load_file(BACKEND)
}

/// The samplers of record.py's chains without a backend implementation
/// (`backend_init` is nullptr in src/llama-sampler.cpp); the chain is
/// offloaded up to the first of them.
fn offloaded_prefix(chain: &[String]) -> Vec<&str> {
    chain
        .iter()
        .map(String::as_str)
        .take_while(|n| !matches!(*n, "typical" | "xtc" | "top-n-sigma"))
        .collect()
}

fn compare<'a>(cases: &'a [BackendCase]) -> Vec<Compared<'a>> {
    let fx = fixtures(cases.iter().map(|c| c.fixture.as_str()));
    let mut out = Vec::new();
    for c in cases.iter().filter(|c| c.abort.is_none()) {
        let f = &fx[&c.fixture];
        let vocab = f.logits.len();
        let request = with_replay(&c.request, c.seed, c.tokens.len());
        let d = run(&request, f).unwrap_or_else(|e| panic!("{} / {}: {e}", c.fixture, c.name));
        let backend = match (&c.xtc_applied, &c.xtc_skipped) {
            (Some(a), Some(s)) => {
                let w = (2_147_483_648.0 + 129.0) / 4_294_967_296.0;
                let a = expected(&a.ids, &a.p, vocab);
                let s = expected(&s.ids, &s.p, vocab);
                a.iter()
                    .zip(&s)
                    .map(|(a, s)| w * a + (1.0 - w) * s)
                    .collect()
            }
            _ => expected(&c.ids, &c.p, vocab),
        };
        out.push(Compared {
            case: c,
            backend,
            semantics: d.probs().to_vec(),
            tokens: d.tokens().expect("draws asked for").to_vec(),
        });
    }
    out
}

fn find<'a>(all: &'a [Compared<'a>], fixture: &str, name: &str) -> &'a Compared<'a> {
    all.iter()
        .find(|c| c.case.fixture == fixture && c.case.name == name)
        .unwrap_or_else(|| panic!("{fixture} / {name} recorded"))
}

#[test]
fn header_names_the_build_and_the_cpu_backend() {
    let (h, cases) = load();
    assert_eq!(h.format, "sampling-parity-llamacpp-backend/1");
    assert_eq!(h.llama_cpp_build, "b11434");
    assert_eq!(h.backend, "CPU");
    assert_eq!((h.seed, h.draws), (1234, 100));
    // every case the CPU recording samples (its 35 refused prompts never reach a sampler)
    let (_, cpu): (Header, Vec<Case>) = load_file(B11434);
    let sampled: HashSet<(&str, &str)> = cpu
        .iter()
        .filter(|c| c.error.is_none())
        .map(|c| (c.fixture.as_str(), c.name.as_str()))
        .collect();
    let here: HashSet<(&str, &str)> = cases
        .iter()
        .map(|c| (c.fixture.as_str(), c.name.as_str()))
        .collect();
    assert_eq!(here, sampled);
    assert_eq!(cases.len(), 962);
}

#[test]
fn aborts_are_exactly_the_offloaded_top_k_above_the_vocabulary() {
    // ggml_top_k asserts k <= the row's length (ggml/src/ggml.c line 5472);
    // the CPU top-k clamps k to the candidates instead
    let (_, cases) = load();
    let (_, cpu): (Header, Vec<Case>) = load_file(B11434);
    let resolved: HashMap<(&str, &str), &Value> = cpu
        .iter()
        .filter_map(|c| Some(((c.fixture.as_str(), c.name.as_str()), c.resolved.as_ref()?)))
        .collect();
    let fx = fixtures(cases.iter().map(|c| c.fixture.as_str()));
    let mut aborts = 0;
    let mut seen = HashSet::new();
    for c in &cases {
        let vocab = fx[&c.fixture].logits.len() as i64;
        let top_k = resolved[&(c.fixture.as_str(), c.name.as_str())]["top_k"]
            .as_i64()
            .expect("resolved top_k");
        let predicted = offloaded_prefix(&c.chain).contains(&"top-k") && top_k > vocab;
        assert_eq!(
            c.abort.is_some(),
            predicted,
            "{} / {}: top_k {top_k}, vocabulary {vocab}, chain {:?}",
            c.fixture,
            c.name,
            c.chain
        );
        if let Some(a) = &c.abort {
            assert_eq!(a, "GGML_ASSERT(a->ne[0] >= k) failed");
            aborts += 1;
        }
        if c.abort_seen {
            assert!(c.abort.is_some());
            assert!(seen.insert(c.fixture.as_str()), "{}", c.fixture);
        }
    }
    assert_eq!(aborts, 514);
    // one per fixture that has aborting cases was run for real and died
    let aborting: HashSet<&str> = cases
        .iter()
        .filter(|c| c.abort.is_some())
        .map(|c| c.fixture.as_str())
        .collect();
    assert_eq!(seen, aborting);
    assert_eq!(seen.len(), 21);
    // no SmolLM2 request aborts: their top_k never exceeds 49,152
    assert!(
        cases
            .iter()
            .filter(|c| c.fixture.starts_with("smollm2/"))
            .all(|c| c.abort.is_none())
    );
}

#[test]
fn backend_sampling_on_the_cpu_samples_otherwise() {
    let (_, cases) = load();
    let all = compare(&cases);
    let offloaded = all.iter().filter(|c| c.case.offloaded).count();
    let identical = all.iter().filter(|c| c.identical()).count();
    let draws: usize = all.iter().map(|c| c.tokens.len()).sum();
    let same_draws: usize = all
        .iter()
        .map(|c| {
            c.tokens
                .iter()
                .zip(&c.case.tokens)
                .filter(|(a, b)| a == b)
                .count()
        })
        .sum();
    eprintln!(
        "{} ran ({offloaded} offloaded), {identical} identical, {same_draws} of {draws} draws",
        all.len()
    );
    assert_eq!((all.len(), offloaded), (448, 321));
    assert_eq!(identical, 364);
    assert_eq!((same_draws, draws), (39_464, 44_800));
    // a chain offloaded only up to a CPU-only sampler (typical, XTC,
    // top-n-σ) samples as the CPU chain does, except on tied logits, where
    // the offloaded top-k keeps other tied tokens
    for c in all.iter().filter(|c| !c.identical()) {
        assert!(
            c.case.offloaded || c.case.fixture == "edge/int_ties_v1000",
            "{} / {}",
            c.case.fixture,
            c.case.name
        );
    }
}

#[test]
fn each_documented_cause_is_in_the_recording() {
    let (_, cases) = load();
    let all = compare(&cases);
    let smol = [
        "smollm2/hello_k0",
        "smollm2/hello_k17",
        "smollm2/hello_k7",
        "smollm2/write_k0",
        "smollm2/write_k60",
        "smollm2/write_k7",
    ];
    for fixture in smol {
        // top-k's order (ggml-cpu swaps its first two outputs) and no later
        // sort: same kept set and probabilities, other draws
        for name in ["unknown_sampler_dropped", "top_p_above_1"] {
            let c = find(&all, fixture, name);
            assert!(c.same_kept(), "{fixture} / {name}");
            let dp = max_diff(&c.backend, &c.semantics);
            assert!(dp <= 4.2e-7, "{fixture} / {name}: {dp:e}");
            assert!(!c.same_tokens(), "{fixture} / {name}");
            assert!(c.case.offloaded);
        }
        // min_keep is read by the CPU top-p / min-p only
        let c = find(&all, fixture, "min_keep");
        assert_eq!(kept(&c.semantics).len(), 5, "{fixture}");
        assert_eq!(kept(&c.backend).len(), 1, "{fixture}");
        // the default chain re-sorts in top-p: the CPU's answer exactly
        let c = find(&all, fixture, "server_defaults");
        assert!(c.identical(), "{fixture}");
    }
    // min-p's boundary: ggml_step is 1 only above 0, so the token exactly at
    // max + log(min_p) (here p = 0.1 p_max) is dropped; the CPU min-p keeps it
    for fixture in [
        "edge/top_p_boundary_050_eq",
        "edge/top_p_boundary_090_below",
    ] {
        let c = find(&all, fixture, "minp01_nok");
        let cpu = kept(&c.semantics);
        let backend = kept(&c.backend);
        assert_eq!(backend.len() + 1, cpu.len(), "{fixture}");
        assert!(backend.iter().all(|t| cpu.contains(t)), "{fixture}");
    }
    // dynamic temperature's entropy over the whole (masked) row
    let dyn_dp = all
        .iter()
        .filter(|c| c.case.name.starts_with("dynatemp") && c.case.fixture.starts_with("smollm2/"))
        .map(|c| max_diff(&c.backend, &c.semantics))
        .fold(0.0, f64::max);
    assert!(dyn_dp > 0.31, "{dyn_dp}");
    // ties: greedy picks another of the tied tokens
    let c = find(&all, "edge/int_ties_v1000", "greedy");
    assert_eq!(kept(&c.semantics), [108]);
    assert_eq!(kept(&c.backend), [314]);
    assert_eq!(c.case.tokens[0], 314);
    assert_eq!(c.tokens[0], 108);
    // an all -inf row: both fall back to their array's last candidate
    let c = find(&all, "edge/all_neg_inf", "article_p09");
    assert!(c.tokens.iter().all(|&t| t == 2));
    assert!(c.case.tokens.iter().all(|&t| t == 3));
}

/// The cases whose recorded distribution is XTC 0.5's two branches mixed:
/// record_backend.py records each branch by building the chain with XTC's
/// probability 1 (applied) and 0 (skipped); at 0 `llama_sampler_init_xtc`
/// returns an empty sampler, so that chain runs whole on the backend (float
/// softmax, ggml's dist), while the real chain's skipped branch runs XTC's
/// CPU remainder (CPU dist, double sums). The recorded mixture is therefore
/// not the real one; each branch is compared with the chain it was recorded
/// from instead, and the draws (the real chain, both branches) token for
/// token. These are the cases where the two mixtures differ (by at most
/// 2e-7, the float against the double softmax of the skipped branch); on
/// edge/int_ties_v1000 both branches keep one token and agree.
const XTC_MIXTURE_DIFFERS: [(&str, &str); 6] = [
    ("smollm2/hello_k0", "xtc05"),
    ("smollm2/hello_k17", "xtc05"),
    ("smollm2/hello_k7", "xtc05"),
    ("smollm2/write_k0", "xtc05"),
    ("smollm2/write_k60", "xtc05"),
    ("smollm2/write_k7", "xtc05"),
];

fn with_backend(request: &Map<String, Value>) -> Map<String, Value> {
    let mut m = request.clone();
    m.insert("backend_sampling".into(), json!(true));
    m
}

#[test]
fn backend_sampling_replays_every_recorded_case() {
    // `backend_sampling: true` (crate::backend) against every case of the
    // recording: aborts as errors, kept sets, probabilities and all 100
    // seeded draws
    let (h, cases) = load();
    let fx = fixtures(cases.iter().map(|c| c.fixture.as_str()));
    let (mut aborted, mut ran, mut draws, mut same_draws) = (0, 0, 0, 0);
    let mut max_dp: f64 = 0.0;
    let mut mixed = Vec::new();
    for c in &cases {
        let f = &fx[&c.fixture];
        let vocab = f.logits.len();
        let request = with_backend(&with_replay(&c.request, c.seed, h.draws));
        let what = format!("{} / {}", c.fixture, c.name);
        let result = run(&request, f);
        if c.abort.is_some() {
            let err = result.expect_err(&what).to_string();
            let k = c
                .request
                .get("top_k")
                .map_or("40".to_string(), Value::to_string);
            assert!(err.contains("aborts"), "{what}: {err}");
            assert!(err.contains(&format!("`top_k` = {k}")), "{what}: {err}");
            assert!(err.contains(&format!("k <= {vocab}")), "{what}: {err}");
            assert!(
                err.contains("GGML_ASSERT(a->ne[0] >= k) failed"),
                "{what}: {err}"
            );
            aborted += 1;
            continue;
        }
        let d = result.unwrap_or_else(|e| panic!("{what}: {e}"));
        ran += 1;
        let tokens = d.tokens().expect("draws asked for");
        draws += tokens.len();
        same_draws += tokens.iter().zip(&c.tokens).filter(|(a, b)| a == b).count();
        assert_eq!(tokens, c.tokens.as_slice(), "{what}: draws");
        match (&c.xtc_applied, &c.xtc_skipped) {
            (Some(applied), Some(skipped)) => {
                let w = (2_147_483_648.0 + 129.0) / 4_294_967_296.0;
                let a = expected(&applied.ids, &applied.p, vocab);
                let s = expected(&skipped.ids, &skipped.p, vocab);
                let recorded: Vec<f64> = a
                    .iter()
                    .zip(&s)
                    .map(|(a, s)| w * a + (1.0 - w) * s)
                    .collect();
                assert_eq!(kept(d.probs()), kept(&recorded), "{what}: kept set");
                let dp = max_diff(d.probs(), &recorded);
                if dp > 0.0 {
                    assert!(dp < 2e-7, "{what}: {dp:e}");
                    mixed.push((c.fixture.as_str(), c.name.as_str()));
                }
                for (q, b) in [(1.0, applied), (0.0, skipped)] {
                    let mut r = request.clone();
                    r.insert("xtc_probability".into(), json!(q));
                    let branch = run(&r, f).unwrap_or_else(|e| panic!("{what}: {e}"));
                    let want = expected(&b.ids, &b.p, vocab);
                    assert_eq!(kept(branch.probs()), kept(&want), "{what}: xtc {q}");
                    let dp = max_diff(branch.probs(), &want);
                    max_dp = max_dp.max(dp);
                }
            }
            _ => {
                let want = expected(&c.ids, &c.p, vocab);
                assert_eq!(kept(d.probs()), kept(&want), "{what}: kept set");
                max_dp = max_dp.max(max_diff(d.probs(), &want));
            }
        }
    }
    eprintln!(
        "backend sampling: {ran} ran, {aborted} aborted; {same_draws} of {draws} draws; max |dp| {max_dp:e}"
    );
    assert_eq!((ran, aborted), (448, 514));
    assert_eq!((same_draws, draws), (44_800, 44_800));
    // bit for bit: ggml's expf, the softmax's block sums, the fused
    // multiply-add of the dynamic temperature (an unfused one puts
    // smollm2/hello_k7 dynatemp 9.5e-7 off; libm's expf in the softmax
    // blocks leaves 116 cases off by a float rounding)
    assert_eq!(max_dp, 0.0);
    assert_eq!(mixed, XTC_MIXTURE_DIFFERS);
}

#[test]
fn backend_sampling_is_what_the_request_asks_for() {
    // the top-k order case: the CPU chain and the backend draw otherwise
    // (each_documented_cause_is_in_the_recording); the semantics follows the
    // field, and n_probs > 0 without post_sampling_probs turns it off
    // (tools/server/server-context.cpp lines 1923-1928)
    let (_, cases) = load();
    let c = cases
        .iter()
        .find(|c| c.fixture == "smollm2/hello_k0" && c.name == "unknown_sampler_dropped")
        .expect("recorded");
    let f = &fixtures([c.fixture.as_str()])[&c.fixture];
    let base = with_replay(&c.request, c.seed, c.tokens.len());
    let tokens = |extra: Value| {
        let mut r = base.clone();
        r.extend(extra.as_object().expect("object").clone());
        run(&r, f).expect("runs").tokens().expect("draws").to_vec()
    };
    let backend = tokens(json!({"backend_sampling": true}));
    assert_eq!(backend, c.tokens);
    assert_ne!(tokens(json!({"backend_sampling": false})), c.tokens);
    assert_ne!(
        tokens(json!({"backend_sampling": true, "n_probs": 5})),
        c.tokens
    );
    assert_eq!(
        tokens(json!({"backend_sampling": true, "n_probs": 5, "post_sampling_probs": true})),
        c.tokens
    );
    assert_eq!(
        tokens(json!({"backend_sampling": true, "n_probs": 0})),
        c.tokens
    );
    // still a boolean
    let err = LlamaCpp
        .parse_params(json!({"backend_sampling": 1}).as_object().expect("object"))
        .expect_err("not a boolean");
    assert!(err.to_string().contains("backend_sampling"), "{err}");
}

#[derive(Debug, Deserialize)]
struct ServerStep {
    id: i64,
    top: Vec<(i64, f64)>,
}

#[derive(Debug, Deserialize)]
struct ServerCase {
    name: String,
    cpu: Vec<ServerStep>,
    backend: Vec<ServerStep>,
}

#[derive(Debug, Deserialize)]
struct ServerRecording {
    llama_cpp_build: String,
    n_predict: usize,
    cases: Vec<ServerCase>,
    abort: Value,
}

#[test]
fn the_real_server_agrees_with_the_harness() {
    // fixtures/llamacpp-b11434/server-backend.json: the b11434 llama-server
    // (CPU build, SmolLM2 Q4_1) answering each request with
    // backend_sampling false and true (record_backend_server.py)
    let text = std::fs::read_to_string(
        crate::recorded::root().join("llamacpp-b11434/server-backend.json"),
    )
    .expect("committed");
    let r: ServerRecording = serde_json::from_str(&text).expect("parses");
    assert_eq!(r.llama_cpp_build, "b11434");
    let case = |name: &str| {
        r.cases
            .iter()
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("{name} recorded"))
    };
    let ids = |s: &[ServerStep]| s.iter().map(|s| s.id).collect::<Vec<_>>();
    for c in &r.cases {
        assert_eq!(
            (c.cpu.len(), c.backend.len()),
            (r.n_predict, r.n_predict),
            "{}",
            c.name
        );
    }
    // the default chain (top-p re-sorts) and greedy without ties: same tokens,
    // probabilities within float rounding
    for name in ["server_defaults", "t07", "greedy"] {
        let c = case(name);
        assert_eq!(ids(&c.cpu), ids(&c.backend), "{name}");
        let a = &c.cpu[0].top;
        let b = &c.backend[0].top;
        assert_eq!(
            a.iter().map(|t| t.0).collect::<Vec<_>>(),
            b.iter().map(|t| t.0).collect::<Vec<_>>(),
            "{name}"
        );
        for (x, y) in a.iter().zip(b) {
            assert!((x.1 - y.1).abs() < 1e-6, "{name}: {x:?} {y:?}");
        }
    }
    // top-k's order without a later sort: other tokens from the first step
    let c = case("top_k5_no_top_p");
    assert_ne!(c.cpu[0].id, c.backend[0].id);
    // min_keep ignored on the backend
    let c = case("min_keep");
    assert_eq!((c.cpu[0].top.len(), c.backend[0].top.len()), (5, 1));
    // dynamic temperature: other probabilities
    let c = case("dynatemp");
    assert!((c.cpu[0].top[0].1 - c.backend[0].top[0].1).abs() > 1e-3);
    // top_k above the vocabulary: the server process aborts
    assert_eq!(r.abort["server_died"], json!(true));
    assert_eq!(r.abort["returncode"], json!(-6));
    assert_eq!(r.abort["asserts"], json!(["(a->ne[0] >= k) failed"]));
}

/// The token dist draws at step `i` (the i-th uniform of `seed`) over
/// `kept` in that array order, with backend sampling or without.
fn replayed_draw(kept: &[(i64, f64)], i: usize, seed: u32, backend: bool) -> i64 {
    let logits: Vec<f32> = kept.iter().map(|t| (t.1 as f32).ln()).collect();
    let request = json!({
        "samplers": [], "backend_sampling": backend, "seed": seed, "draws": i + 1,
    });
    let params = LlamaCpp
        .parse_params(request.as_object().expect("object"))
        .expect("parses");
    let ctx = parity_core::Context::new(&[], None).expect("context");
    let d = LlamaCpp
        .distribution(&parity_core::Logits::from_f32(&logits), &ctx, &params)
        .expect("runs");
    kept[d.tokens().expect("draws")[i] as usize].0
}

#[test]
fn the_real_servers_draws_are_each_dists_draws() {
    // server-backend.json has no logits, only each step's token and its 8
    // most probable post-sampling candidates. Where those are all the
    // candidates the chain kept (fewer than 8, or a zero among them), the
    // draw can be replayed: dist alone (`"samplers": []`) over the logits
    // ln p (whose softmax gives p back within float rounding, not bit for
    // bit) in the array order the chain leaves them, with the
    // step's uniform (the i-th of the seeded mt19937, one per token). The
    // CPU chain leaves them sorted by probability (its top-k sorts); on the
    // backend top-p re-sorts (`ggml_argsort`), and without it top-k's order
    // has the first two swapped (`ggml_top_k`). Both servers' tokens follow.
    let text = std::fs::read_to_string(
        crate::recorded::root().join("llamacpp-b11434/server-backend.json"),
    )
    .expect("committed");
    let r: ServerRecording = serde_json::from_str(&text).expect("parses");
    let seed = 1234;
    let (mut replayed, mut matched, mut other_order_differs) = (0, 0, 0);
    for c in &r.cases {
        for (steps, backend) in [(&c.cpu, false), (&c.backend, true)] {
            for (i, s) in steps.iter().enumerate() {
                let kept: Vec<(i64, f64)> = s.top.iter().copied().filter(|t| t.1 > 0.0).collect();
                if kept.len() == 8 {
                    continue; // more candidates may be left
                }
                let mut order = kept.clone();
                let mut other = kept.clone();
                if backend && c.name == "top_k5_no_top_p" {
                    order.swap(0, 1);
                } else if c.name == "top_k5_no_top_p" {
                    other.swap(0, 1);
                }
                replayed += 1;
                let token = replayed_draw(&order, i, seed, backend);
                assert_eq!(token, s.id, "{} backend {backend} step {i}", c.name);
                matched += 1;
                if c.name == "top_k5_no_top_p" && replayed_draw(&other, i, seed, backend) != s.id {
                    other_order_differs += 1;
                }
            }
        }
    }
    eprintln!(
        "server steps replayed: {matched} of {replayed}; top_k5_no_top_p in the other order: {other_order_differs} of 48 steps differ"
    );
    // server_defaults 4 + 4 steps, t07 17 + 17, top_k5_no_top_p 24 + 24,
    // min_keep 24 + 24, dynatemp 9 + 11, greedy 24 + 24
    assert_eq!((matched, replayed), (206, 206));
    // the order is what decides: swapped on the CPU, unswapped on the backend, tokens change
    assert!(other_order_differs > 0);
}
