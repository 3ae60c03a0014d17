//! The processors beyond the sampling kwargs against real transformers
//! generations of 5.23.0 (`fixtures/processors/`), 4.57.6 and 5.0.0
//! (`fixtures/processors/transformers-<version>/`), recorded by
//! `scripts/reference/hf_processors.py --transformers <version>`: every step
//! of every setting is replayed, with the recording's `transformers` param,
//! its grown context and the prompt length, through the reference
//! ([`process_at`]) and the fast path ([`HfSampler`]).
//!
//! Tolerances: scores bit-identical (NaN equal to NaN), except after
//! `top_h` and `renormalize_logits`, whose reductions are computed in f64 and
//! rounded (within 1e-5 relative, kept set identical). Every `rejected`
//! setting must be rejected by `resolve` or at its first step.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use hf_sampling::{GenerationConfig, HfSampler, StepPath, process_at, resolve};
use safetensors::{Dtype, SafeTensors};
use serde_json::{Map, Value};

struct File {
    bytes: Vec<u8>,
    meta: HashMap<String, String>,
}

impl File {
    fn load(path: &Path) -> File {
        let bytes = std::fs::read(path).expect("fixture readable");
        let (_, m) = SafeTensors::read_metadata(&bytes).expect("safetensors header");
        let meta = m.metadata().clone().expect("metadata");
        File { bytes, meta }
    }

    fn tensors(&self) -> SafeTensors<'_> {
        SafeTensors::deserialize(&self.bytes).expect("safetensors")
    }

    fn f32s(&self, name: &str) -> Option<(Vec<usize>, Vec<f32>)> {
        let st = self.tensors();
        let t = st.tensor(name).ok()?;
        assert_eq!(t.dtype(), Dtype::F32, "{name}");
        let v = t
            .data()
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        Some((t.shape().to_vec(), v))
    }

    fn i64s(&self, name: &str) -> Option<Vec<i64>> {
        let st = self.tensors();
        let t = st.tensor(name).ok()?;
        assert_eq!(t.dtype(), Dtype::I64, "{name}");
        Some(
            t.data()
                .chunks_exact(8)
                .map(|b| i64::from_le_bytes(b.try_into().expect("8 bytes")))
                .collect(),
        )
    }

    fn json(&self, key: &str) -> Value {
        serde_json::from_str(&self.meta[key]).expect("JSON metadata")
    }
}

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/processors")
}

/// The versions recorded and their folders: 5.23.0's files in
/// `fixtures/processors/`, the older releases' in `transformers-<version>/`.
const VERSIONS: [(&str, &str); 3] = [
    ("5.23.0", ""),
    ("4.57.6", "transformers-4.57.6"),
    ("5.0.0", "transformers-5.0.0"),
];

/// One recorded file: its version, `<version>/<stem>` for messages, the file.
struct Recorded {
    version: &'static str,
    label: String,
    file: File,
}

impl Recorded {
    /// A setting's kwargs with the `transformers` param of the recording.
    fn kwargs(&self, setting: &Value) -> Map<String, Value> {
        let mut k = kwargs_of(setting);
        k.insert("transformers".into(), Value::from(self.version));
        k
    }
}

fn files() -> Vec<Recorded> {
    let mut out = Vec::new();
    for (version, dir) in VERSIONS {
        let mut these: Vec<(String, File)> = std::fs::read_dir(fixture_dir().join(dir))
            .unwrap_or_else(|e| panic!("fixtures/processors/{dir}: {e}"))
            .map(|e| e.expect("dir entry").path())
            .filter(|p| p.extension().is_some_and(|e| e == "safetensors"))
            .map(|p| {
                let name = p.file_stem().expect("stem").to_string_lossy().into_owned();
                (name, File::load(&p))
            })
            .collect();
        these.sort_by(|a, b| a.0.cmp(&b.0));
        let names: Vec<&str> = these.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            ["edge_bos", "edge_v8", "smollm2_steps"],
            "transformers {version}: the edge and SmolLM2 step fixtures"
        );
        for (name, file) in these {
            assert_eq!(
                file.meta["transformers_version"], version,
                "{dir}/{name}: recorded from another version"
            );
            out.push(Recorded {
                version,
                label: format!("{version}/{name}"),
                file,
            });
        }
    }
    out
}

/// The recorded scores of one setting, `[steps][V]`.
/// The edge_v8 recording of every version.
fn edge_v8_of_every_version() -> Vec<Recorded> {
    let edge: Vec<Recorded> = files()
        .into_iter()
        .filter(|r| r.label.ends_with("/edge_v8"))
        .collect();
    assert_eq!(edge.len(), VERSIONS.len(), "edge_v8 of every version");
    edge
}

/// The entry of a recorded `settings` or `rejected` list named `name`.
fn named(list: &Value, name: &str) -> Option<Value> {
    list.as_array()
        .expect("a list of settings")
        .iter()
        .find(|s| s["name"] == name)
        .cloned()
}

fn scores(f: &File, name: &str, logits: &[Vec<f32>]) -> Vec<Vec<f32>> {
    if let Some((shape, flat)) = f.f32s(&format!("scores.{name}")) {
        return flat.chunks(shape[1]).map(<[f32]>::to_vec).collect();
    }
    // Sparse form: the logits with the listed (step, id) entries replaced.
    let at = f.i64s(&format!("scores_at.{name}")).expect("scores_at");
    let (_, values) = f
        .f32s(&format!("scores_value.{name}"))
        .expect("scores_value");
    let mut out = logits.to_vec();
    for (pair, v) in at.chunks_exact(2).zip(values) {
        out[pair[0] as usize][pair[1] as usize] = v;
    }
    out
}

fn kwargs_of(setting: &Value) -> Map<String, Value> {
    setting["kwargs"].as_object().expect("kwargs").clone()
}

fn same(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

fn close(a: f32, b: f32) -> bool {
    same(a, b)
        || (a.is_finite()
            && b.is_finite()
            && ((a - b).abs() as f64) <= 1e-5 * (b.abs() as f64).max(1e-30))
}

#[test]
fn every_step_of_every_setting_matches_transformers() {
    let mut checked_steps = 0;
    let mut later_steps = 0;
    let mut settings = 0;
    let mut inexact = Vec::new();
    let mut fast_paths: HashMap<String, usize> = HashMap::new();
    let mut failures = Vec::new();
    let mut per_version: HashMap<&str, (usize, usize)> = HashMap::new();
    for r in files() {
        let (file, f) = (&r.label, &r.file);
        let config = GenerationConfig::from_json_str(&f.meta["generation_config"]).expect("config");
        let prompt_len: usize = f.meta["prompt_len"].parse().expect("prompt_len");
        for setting in f.json("settings").as_array().expect("settings") {
            let name = setting["name"].as_str().expect("name");
            let kwargs = r.kwargs(setting);
            let params = match resolve(&kwargs, Some(&config)) {
                Ok(p) => p,
                Err(e) => {
                    failures.push(format!(
                        "{file}/{name}: resolve rejected an accepted setting: {e}"
                    ));
                    continue;
                }
            };
            let (shape, flat) = f.f32s(&format!("logits.{name}")).expect("logits");
            let logits: Vec<Vec<f32>> = flat.chunks(shape[1]).map(<[f32]>::to_vec).collect();
            let want = scores(f, name, &logits);
            let sequence = f.i64s(&format!("sequence.{name}")).expect("sequence");
            let approximate =
                kwargs.contains_key("top_h") || kwargs.contains_key("renormalize_logits");
            let mut sampler = HfSampler::new(&params).expect("valid parameters");
            settings += 1;
            let counts = per_version.entry(r.version).or_default();
            counts.0 += 1;
            counts.1 += logits.len();
            for (step, (x, w)) in logits.iter().zip(&want).enumerate() {
                let ctx = &sequence[..prompt_len + step];
                let got = match process_at(x, ctx, prompt_len, &params) {
                    Ok(out) => out,
                    Err(e) => {
                        failures.push(format!("{file}/{name} step {step}: rejected: {e}"));
                        break;
                    }
                };
                let ok = got.scores.iter().zip(w).all(|(&a, &b)| {
                    if approximate { close(a, b) } else { same(a, b) }
                });
                if !got.scores.iter().zip(w).all(|(&a, &b)| same(a, b)) {
                    let rel = got
                        .scores
                        .iter()
                        .zip(w)
                        .filter(|(a, b)| a.is_finite() && b.is_finite())
                        .map(|(&a, &b)| ((a - b).abs() / b.abs().max(1e-30)) as f64)
                        .fold(0.0, f64::max);
                    inexact.push(format!("{file}/{name} step {step}: max rel {rel:.1e}"));
                }
                let kept_ok = got
                    .scores
                    .iter()
                    .zip(w)
                    .all(|(a, b)| (*a == f32::NEG_INFINITY) == (*b == f32::NEG_INFINITY));
                if !ok || !kept_ok {
                    failures.push(format!(
                        "{file}/{name} step {step}: scores differ\n  ours {:?}\n  hf   {:?}",
                        &got.scores[..got.scores.len().min(12)],
                        &w[..w.len().min(12)]
                    ));
                }
                // The fast path: the same kept set and, off the dense path,
                // the same probabilities bit for bit.
                let d = sampler
                    .distribution_at(x, ctx, prompt_len)
                    .expect("fast path");
                let kept: Vec<usize> = d.kept.iter().map(|&i| i as usize).collect();
                if kept != got.kept {
                    failures.push(format!(
                        "{file}/{name} step {step}: fast kept {kept:?} vs {:?}",
                        got.kept
                    ));
                } else if d.path != StepPath::Dense
                    && !d
                        .kept
                        .iter()
                        .zip(d.probs)
                        .all(|(&i, &p)| same(p, got.probs[i as usize]))
                {
                    failures.push(format!(
                        "{file}/{name} step {step}: fast probabilities differ"
                    ));
                }
                *fast_paths.entry(format!("{:?}", d.path)).or_default() += 1;
                checked_steps += 1;
                later_steps += usize::from(step > 0);
            }
        }
    }
    eprintln!(
        "{settings} settings, {checked_steps} steps ({later_steps} after the first), \
         not bit-identical: {inexact:?}; fast paths {fast_paths:?}; \
         (settings, steps) per version {per_version:?}"
    );
    assert!(
        failures.is_empty(),
        "{} failure(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(
        checked_steps >= 450 && later_steps >= 300,
        "{checked_steps} {later_steps}"
    );
    for (version, _) in VERSIONS {
        let (n, steps) = per_version.get(version).copied().unwrap_or_default();
        assert!(
            n >= 40 && steps >= 150,
            "transformers {version}: {n} settings, {steps} steps"
        );
    }
}

#[test]
fn every_rejected_setting_is_rejected() {
    let mut n = 0;
    let mut per_version: HashMap<&str, usize> = HashMap::new();
    for rec in files() {
        let (file, f) = (&rec.label, &rec.file);
        let config = GenerationConfig::from_json_str(&f.meta["generation_config"]).expect("config");
        let prompt = f.i64s("input_ids").expect("input_ids");
        let logits = [2.0f32, 1.0, 0.5, 0.0, -1.0, 3.0, 1.5, -0.5]; // the edge files' V = 8 logits
        for r in f.json("rejected").as_array().expect("rejected") {
            let name = r["name"].as_str().expect("name");
            let kwargs = rec.kwargs(r);
            // Some errors only come at a later step (a forced eos at
            // max_length - 1): run the generation, extending the context
            // with the greedy (or first kept) token, until one step fails.
            let steps = kwargs
                .get("max_new_tokens")
                .and_then(Value::as_u64)
                .unwrap_or(20);
            let outcome = resolve(&kwargs, Some(&config)).and_then(|p| {
                let mut ctx = prompt.clone();
                for _ in 0..steps {
                    let out = process_at(&logits, &ctx, prompt.len(), &p)?;
                    ctx.push(out.greedy.unwrap_or(out.kept[0]) as i64);
                }
                Ok(())
            });
            let err = match outcome {
                Ok(()) => panic!("{file}/{name}: accepted; transformers said {}", r["error"]),
                Err(e) => e.to_string(),
            };
            // transformers' reason, not just any error: the message shares
            // its key words (torch's own wording aside).
            let hf = r["error"].as_str().expect("error");
            let key_words = [
                "`ngram_size`",
                "bad_words_ids",
                "sequence_bias",
                "`min_length`",
                "`eos_token_id`",
                "`max_length`",
                "out of bounds",
                "top_h",
                "NoneType",
                "suppress_tokens",
                "vocabulary size",
            ];
            let shared = key_words.iter().any(|k| hf.contains(k) && err.contains(k));
            assert!(shared, "{file}/{name}:\n  ours: {err}\n  hf:   {hf}");
            n += 1;
            *per_version.entry(rec.version).or_default() += 1;
        }
    }
    eprintln!("{n} rejected settings rejected; per version {per_version:?}");
    assert!(n >= 45, "{n}");
}

/// generate's own checks, before any processor (issue #27): `eos_token_id:
/// []` with no pad token (`pad_token_tensor = eos_token_tensor[0]`, an
/// IndexError) and `max_length` not above the prompt (`_validate_generated_length`'s
/// ValueError). Each is refused with transformers' own words; with a pad
/// token, `[]` is accepted (and replayed by the test above).
#[test]
fn generate_refuses_an_empty_eos_list_and_a_max_length_within_the_prompt() {
    let edge = edge_v8_of_every_version();
    for rec in &edge {
        let (file, f) = (&rec.label, &rec.file);
        let config = GenerationConfig::from_json_str(&f.meta["generation_config"]).expect("config");
        let prompt = f.i64s("input_ids").expect("input_ids");
        let logits = [2.0f32, 1.0, 0.5, 0.0, -1.0, 3.0, 1.5, -0.5];
        let names = [
            "eos_empty",
            "eos_empty_sample",
            "max_length_at_prompt",
            "max_length_below_prompt",
            "max_length_float",
        ];
        let rejected = f.json("rejected");
        for name in names {
            let r = named(&rejected, name)
                .unwrap_or_else(|| panic!("{file}/{name}: transformers accepted it"));
            let hf = r["error"].as_str().expect("error");
            // "ValueError: <message>" / "IndexError: <message>"
            let (_, message) = hf.split_once(": ").expect("Type: message");
            let err = resolve(&rec.kwargs(&r), Some(&config))
                .and_then(|p| process_at(&logits, &prompt, prompt.len(), &p))
                .err()
                .unwrap_or_else(|| panic!("{file}/{name}: accepted; transformers said {hf}"))
                .to_string();
            assert!(
                err.contains(message),
                "{file}/{name}:\n  ours: {err}\n  hf:   {hf}"
            );
        }
        let accepted = f.json("settings");
        for name in ["eos_empty_pad", "max_length_above_prompt"] {
            assert!(
                named(&accepted, name).is_some(),
                "{file}/{name}: transformers refused it"
            );
        }
    }
}

/// The length penalty and a forced eos count generated tokens from the
/// prompt, not from the context (issue #27: a step where transformers leaves
/// only the eos finite and a replay "keeps another token"). At the recorded
/// last step (`max_length - 1`) transformers keeps the forced eos alone, and
/// so does hf-rust given the prompt length; read as a first step (the whole
/// context taken as the prompt, what a record without `prompt_len` means)
/// neither processor acts yet and other tokens stay finite.
#[test]
fn the_length_penalty_and_forced_eos_count_from_the_prompt() {
    let edge = edge_v8_of_every_version();
    for rec in &edge {
        let (file, f) = (&rec.label, &rec.file);
        let config = GenerationConfig::from_json_str(&f.meta["generation_config"]).expect("config");
        let prompt_len: usize = f.meta["prompt_len"].parse().expect("prompt_len");
        // (setting, how many forced ids)
        for (name, forced) in [("decay_forced_top_p", 1), ("decay_forced_t07", 2)] {
            let setting = named(&f.json("settings"), name)
                .unwrap_or_else(|| panic!("{file}/{name} recorded"));
            let params = resolve(&rec.kwargs(&setting), Some(&config)).expect("accepted");
            let (shape, flat) = f.f32s(&format!("logits.{name}")).expect("logits");
            let logits: Vec<Vec<f32>> = flat.chunks(shape[1]).map(<[f32]>::to_vec).collect();
            let want = scores(f, name, &logits);
            let sequence = f.i64s(&format!("sequence.{name}")).expect("sequence");
            let last = want.len() - 1;
            assert_eq!(last, 3, "{file}/{name}: generation reached max_length - 1");
            let finite = |s: &[f32]| s.iter().filter(|x| x.is_finite()).count();
            assert_eq!(
                finite(&want[last]),
                forced,
                "{file}/{name}: transformers forced the eos"
            );
            let ctx = &sequence[..prompt_len + last];
            let counted = process_at(&logits[last], ctx, prompt_len, &params).expect("step");
            assert_eq!(
                counted.scores, want[last],
                "{file}/{name}: counted from the prompt"
            );
            let first = process_at(&logits[last], ctx, ctx.len(), &params).expect("step");
            assert!(
                finite(&first.scores) > forced,
                "{file}/{name}: as a first step, more than the eos is kept"
            );
        }
    }
}

/// Where the versions differ (`crate::version`'s processor rules), each
/// recorded: 4.57.6 and 5.0.0 refuse a sequence bias on id 0 (`token_id >
/// 0`) and accept a forced eos that is also suppressed (no `validate`
/// check 2.7); 5.23.0 the other way round. Refusals carry transformers'
/// own message; acceptances are replayed step by step by the first test.
#[test]
fn the_versions_differ_where_they_were_recorded_to() {
    let edge = edge_v8_of_every_version();
    let logits = [2.0f32, 1.0, 0.5, 0.0, -1.0, 3.0, 1.5, -0.5];
    for rec in &edge {
        let (file, f) = (&rec.label, &rec.file);
        let config = GenerationConfig::from_json_str(&f.meta["generation_config"]).expect("config");
        let prompt = f.i64s("input_ids").expect("input_ids");
        let old = rec.version != "5.23.0";
        let (accepted, rejected) = (f.json("settings"), f.json("rejected"));
        for (name, refused) in [
            ("bias", old),
            ("bias_sample", old),
            ("forced_suppressed", !old),
        ] {
            let Some(r) = named(&rejected, name) else {
                assert!(!refused, "{file}/{name}: transformers accepted it");
                assert!(named(&accepted, name).is_some(), "{file}/{name} recorded");
                continue;
            };
            assert!(
                refused,
                "{file}/{name}: transformers refused it: {}",
                r["error"]
            );
            let hf = r["error"].as_str().expect("error");
            let (_, message) = hf.split_once(": ").expect("Type: message");
            let err = resolve(&rec.kwargs(&r), Some(&config))
                .and_then(|p| {
                    let mut ctx = prompt.clone();
                    for _ in 0..2 {
                        let out = process_at(&logits, &ctx, prompt.len(), &p)?;
                        ctx.push(out.greedy.unwrap_or(out.kept[0]) as i64);
                    }
                    Ok(())
                })
                .err()
                .unwrap_or_else(|| panic!("{file}/{name}: accepted; transformers said {hf}"))
                .to_string();
            assert!(
                err.contains(message),
                "{file}/{name}:\n  ours: {err}\n  hf:   {hf}"
            );
        }
    }
}
