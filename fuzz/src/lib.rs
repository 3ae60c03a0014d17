//! The fuzz harnesses of sampling-parity, one function per target.
//!
//! Each function feeds arbitrary bytes through a public entry point and checks
//! what comes back: it must be an answer or a clear error, never a panic, and
//! an answer must be a real distribution (finite probabilities in [0, 1] that
//! sum to 1), so a silently wrong number fails the run too.
//!
//! The same file is compiled twice: as this crate's library, called by the
//! libFuzzer targets in `fuzz_targets/`, and as a module of the `compare`
//! integration tests (`crates/compare/tests/it/robustness/fuzz_corpus.rs`, via `#[path]`),
//! which replay every file of `fuzz/corpus/<target>/` and `fuzz/regressions/`
//! on each `cargo test`. It may only use crates both places have: `compare`,
//! `spec_sampler`, `hf_sampling`, `parity_core` and `serde_json`.

use std::io::Cursor;
use std::path::Path;

use comparison::cli::DistArgs;
use serde_json::Value;

/// Every engine `compare` has, as its commands get them.
fn engines() -> comparison::Engines {
    compare::registry::engines(None, &compare::registry::Options::default())
        .expect("the registry builds without options")
}

/// Tolerance on the sum of a distribution's probabilities (hf-sampling sums
/// f32 values; 1e-3 is far above its rounding for the input sizes fuzzed).
const SUM_TOLERANCE: f64 = 1e-3;

/// Target `compare_dist`: the bytes as a `compare dist` JSON-lines batch, run
/// through `comparison::dist::run` under every semantics.
pub fn compare_dist(data: &[u8]) {
    let engines = engines();
    let registry = &engines.semantics;
    for semantics in registry.iter().map(|s| s.info().name) {
        let args = DistArgs {
            semantics: semantics.to_string(),
            generation_config: None,
            vocab: Default::default(),
        };
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let summary = comparison::dist::run(&args, &engines, Cursor::new(data), &mut out, &mut err)
            .unwrap_or_else(|e| panic!("{semantics:?}: in-memory I/O failed: {e:#}"));
        let out = String::from_utf8(out).expect("stdout is UTF-8");
        let err = String::from_utf8(err).expect("stderr is UTF-8");
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines.len(),
            summary.records,
            "{semantics:?}: one output line per record\n{out}"
        );
        assert_eq!(
            err.lines().count(),
            summary.failed,
            "{semantics:?}: one stderr line per failed record\n{err}"
        );
        let mut failed = 0;
        for line in lines {
            let value: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("{semantics:?}: output is not JSON ({e}): {line}"));
            // Every line fits the type docs/schema/dist-line.json is generated from.
            if let Err(e) = serde_json::from_str::<
                comparison::json_schema::Line<comparison::dist::Answer>,
            >(line)
            {
                panic!("{semantics:?}: line does not fit its schema type ({e}): {line}");
            }
            if let Some(message) = value.get("error") {
                failed += 1;
                let message = message.as_str().expect("error is a string");
                assert!(!message.is_empty(), "{semantics:?}: empty error message");
                continue;
            }
            check_dist_answer(semantics, &value, line);
        }
        assert_eq!(failed, summary.failed, "{semantics:?}: failed count");
    }
}

/// Target `compare_request`: each line of the bytes that is a JSON object
/// (its `params` when it has them, a `compare dist` record's shape) as an
/// OpenAI-style request, through every semantics' server routes
/// (`prepare_request`), each run on a record's logits when the line has
/// them. A route is params or a non-empty refusal; what it ignores is among
/// the request's fields; an answer is a real distribution.
pub fn compare_request(data: &[u8]) {
    let engines = engines();
    let registry = &engines.semantics;
    let text = String::from_utf8_lossy(data);
    for line in text.lines() {
        let Ok(Value::Object(object)) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let request = match object.get("params") {
            Some(Value::Object(p)) => p.clone(),
            _ => object.clone(),
        };
        let logits: Vec<f32> = match object.get("logits") {
            Some(Value::Array(l)) if !l.is_empty() => l
                .iter()
                .map(|x| x.as_f64().map_or(f32::NAN, |x| x as f32))
                .collect(),
            _ => vec![3.0, 2.0, 2.0, 1.0],
        };
        if logits.iter().any(|x| x.is_nan()) || logits.len() > 1 << 16 {
            continue;
        }
        let logits = parity_core::Logits::from_f32(&logits);
        let ids: Vec<i64> = Vec::new();
        let context = parity_core::Context::new(&ids, None).expect("empty context");
        for semantics in registry {
            for route in semantics.prepare_request(&request, None) {
                let name = route.endpoint;
                let nested = request.get("options").and_then(Value::as_object);
                for field in &route.ignored {
                    let sent = match field.strip_prefix("options.") {
                        Some(option) => nested.is_some_and(|o| o.contains_key(option)),
                        None => request.contains_key(field),
                    };
                    assert!(sent, "{name}: ignores {field:?}, not sent: {line}");
                }
                match route.params {
                    Err(e) => assert!(!e.to_string().is_empty(), "{name}: empty refusal: {line}"),
                    Ok(prepared) => {
                        if let Ok(d) = prepared.distribution(&logits, &context) {
                            let sum: f64 = d.probs().iter().sum();
                            assert!(
                                d.probs()
                                    .iter()
                                    .all(|p| p.is_finite() && (0.0..=1.0).contains(p))
                                    && (d.kept().is_empty() || (sum - 1.0).abs() < SUM_TOLERANCE),
                                "{name}: not a distribution (sum {sum}): {line}"
                            );
                        }
                    }
                }
            }
        }
    }
}

/// Target `compare_diff`: the bytes as a `compare diff` JSON-lines batch
/// (params read as generate kwargs) through `comparison::diff::run`,
/// every pair against transformers, both setups (literal and exact). Every record gets
/// one line; an answer's rows carry figures in range.
pub fn compare_diff(data: &[u8]) {
    use comparison::cli::{DiffArgs, Format, Setup};
    let engines = engines();
    for setup in [Setup::Literal, Setup::Exact] {
        let args = DiffArgs {
            pairs: vec!["hf:hf-rust".into(), "hf:candle".into(), "hf:spec".into()],
            setup,
            format: Format::Json,
            fail_on: None,
            show_tokens: 3,
            vocab: Default::default(),
        };
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let (summary, _) =
            comparison::diff::run(&args, &engines, Cursor::new(data), &mut out, &mut err)
                .unwrap_or_else(|e| panic!("{setup:?}: in-memory I/O failed: {e:#}"));
        let out = String::from_utf8(out).expect("stdout is UTF-8");
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines.len(),
            summary.records,
            "one output line per record\n{out}"
        );
        for line in lines {
            let value: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("output is not JSON ({e}): {line}"));
            if value.get("error").is_some() {
                continue;
            }
            let rows = value["rows"].as_array().expect("rows");
            for row in rows {
                if let Some(tv) = row["tv"].as_f64() {
                    assert!((0.0..=1.0 + 1e-9).contains(&tv), "TV out of range: {line}");
                }
            }
        }
    }
}

/// One successful `compare dist` answer: `probs` is a distribution, `kept`
/// agrees with it, and a drawn token has mass.
fn check_dist_answer(semantics: &str, value: &Value, line: &str) {
    let probs = probabilities(value.get("probs"), line);
    let positive = probs.iter().filter(|&&p| p > 0.0).count();
    let kept = value
        .get("kept")
        .and_then(Value::as_u64)
        .unwrap_or_else(|| panic!("{semantics:?}: no `kept` count: {line}"));
    let kept = usize::try_from(kept).expect("kept fits usize");
    assert_eq!(
        kept, positive,
        "{semantics:?}: kept != positive probs: {line}"
    );
    // The spec draws with its `u`; its answer may be "no token" (-1, all zeros).
    if let Some(tokens) = value.get("tokens").and_then(Value::as_array) {
        for token in tokens {
            let token = token
                .as_i64()
                .unwrap_or_else(|| panic!("{semantics:?}: token is not an integer: {line}"));
            if positive == 0 {
                assert_eq!(token, -1, "no mass but a token: {line}");
                return;
            }
            let index =
                usize::try_from(token).unwrap_or_else(|_| panic!("token -1 with mass: {line}"));
            assert!(
                probs.get(index).is_some_and(|&p| p > 0.0),
                "token without mass: {line}"
            );
        }
    }
    if positive == 0 {
        // Only an answer that drew "no token" may have no mass at all.
        assert!(
            value.get("tokens").is_some(),
            "{semantics:?}: no mass and no token: {line}"
        );
        return;
    }
    assert_sums_to_one(&probs, line);
}

/// Reads a `probs` array: every entry must be a number in [0, 1] (no `"nan"`,
/// `"inf"` or `null` placeholders).
fn probabilities(probs: Option<&Value>, line: &str) -> Vec<f64> {
    let probs = probs
        .and_then(Value::as_array)
        .unwrap_or_else(|| panic!("no `probs` array: {line}"));
    probs
        .iter()
        .map(|p| match p.as_f64() {
            Some(x) if (0.0..=1.0).contains(&x) => x,
            _ => panic!("probability {p} is not a number in [0, 1]: {line}"),
        })
        .collect()
}

fn assert_sums_to_one(probs: &[f64], context: &str) {
    let sum: f64 = probs.iter().sum();
    assert!(
        (sum - 1.0).abs() <= SUM_TOLERANCE,
        "probabilities sum to {sum}, not 1 (±{SUM_TOLERANCE}): {context}"
    );
}

/// Target `spec_line`: the bytes as one `spec-sampler` input line, through
/// `spec_sampler::Input::from_json_slice` and `spec_sampler::sample`.
pub fn spec_line(data: &[u8]) {
    let input = match spec_sampler::Input::from_json_slice(data) {
        Ok(input) => input,
        Err(error) => {
            assert!(!error.to_string().is_empty(), "empty error message");
            return;
        }
    };
    let output = spec_sampler::sample(&input);
    let context = || format!("{}", input.to_json());
    let v = input.logits().len();
    assert_eq!(
        output.probs.len(),
        v,
        "one probability per logit: {}",
        context()
    );
    assert!(
        output.probs.iter().all(|p| (0.0..=1.0).contains(p)),
        "probability outside [0, 1]: {:?} for {}",
        output.probs,
        context()
    );
    match usize::try_from(output.token_id) {
        Ok(token) => {
            assert!(
                output.probs.get(token).is_some_and(|&p| p > 0.0),
                "token {token} has no mass: {:?} for {}",
                output.probs,
                context()
            );
            assert_sums_to_one(&output.probs, &context());
        }
        Err(_) => {
            assert_eq!(output.token_id, -1, "token id: {}", context());
            assert!(
                output.probs.iter().all(|&p| p == 0.0),
                "token -1 but some mass: {:?} for {}",
                output.probs,
                context()
            );
        }
    }
    // The output line is JSON, and the input survives its own JSON form.
    let line = output.to_json_line();
    let back: Value = serde_json::from_str(&line).expect("output line is JSON");
    assert!(back.get("error").is_none(), "serialisation failed: {line}");
    let again = spec_sampler::Input::from_json(&input.to_json()).expect("round trip validates");
    assert_eq!(again, input, "round trip changed the input");
}

/// Target `fixture`: the bytes as a fixture file, through
/// `parity_core::fixture::Fixture::from_bytes`. An error must name the file;
/// a loaded fixture must hold the invariants the loader promises.
pub fn fixture(data: &[u8]) {
    let path = Path::new("fuzz/input.safetensors");
    match parity_core::fixture::Fixture::from_bytes(path, data) {
        Err(error) => {
            let message = error.to_string();
            assert!(
                message.starts_with("fuzz/input.safetensors: "),
                "error does not name the file: {message}"
            );
        }
        Ok(fixture) => {
            assert!(!fixture.logits.is_empty(), "empty logits loaded");
            assert!(
                fixture
                    .logits
                    .iter()
                    .all(|x| !x.is_nan() && *x != f32::INFINITY),
                "NaN or +inf logit loaded"
            );
            for setting in &fixture.settings {
                assert_eq!(
                    setting.scores.len(),
                    fixture.vocab_size(),
                    "{}",
                    setting.name
                );
                assert!(
                    setting.scores.iter().all(|x| !x.is_nan()),
                    "{}",
                    setting.name
                );
            }
            if let Some(model) = &fixture.model {
                assert_eq!(model.prompt_len + model.k, fixture.input_ids.len());
            }
        }
    }
}

/// A vocabulary string, as a fixture's `vocab.json` could hold it, read as
/// a byte-level token and as written: never a panic; the label a report
/// prints holds no control character and no whitespace but the space (so a
/// token cannot forge report lines), and decoding a byte-level token gives
/// back exactly its bytes.
pub fn token_piece(data: &[u8]) {
    use parity_core::token::{Piece, byte_level_bytes};
    let token = String::from_utf8_lossy(data);
    for byte_level in [false, true] {
        let piece = Piece::new(&token, byte_level);
        let label = parity_core::vocab::label(Some(&piece), 7);
        assert!(
            !label
                .chars()
                .any(|c| c.is_control() || (c.is_whitespace() && c != ' ')),
            "{token:?} printed as {label:?}"
        );
        if byte_level && let Some(bytes) = byte_level_bytes(&token) {
            let back = match &piece {
                Piece::Text(t) => t.as_bytes().to_vec(),
                Piece::Bytes(b) => b.clone(),
            };
            assert_eq!(back, bytes, "{token:?}");
        }
    }
}

/// Target `speculative_args`: the bytes, as UTF-8 text, through the parsers of
/// `compare speculative`'s `--target`/`--draft SEMANTICS:PARAMS` and
/// `--draft-perturb SCALE:SEED`. An accepted side names a registry semantics
/// whose params are a JSON object that semantics accepts; an accepted
/// perturbation has a finite scale >= 0; an error quotes the argument's flag.
pub fn speculative_args(data: &[u8]) {
    use comparison::speculative::{parse_perturb, parse_side};
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let engines = engines();
    let registry = &engines.semantics;
    match parse_side("--target", text, registry) {
        Ok(side) => {
            let semantics = engines
                .find(&side.semantics)
                .unwrap_or_else(|e| panic!("accepted an unknown semantics: {e}"));
            assert!(
                semantics.prepare(&side.params).is_ok(),
                "accepted params the semantics refuses: {text:?}"
            );
        }
        Err(e) => {
            let message = format!("{e:#}");
            assert!(message.starts_with("--target: "), "{message}");
        }
    }
    match parse_perturb(text) {
        Ok(p) => assert!(p.scale.is_finite() && p.scale >= 0.0, "{text:?}: {p:?}"),
        Err(e) => assert!(e.to_string().starts_with("--draft-perturb: "), "{e}"),
    }
}

/// Target `trace`: the bytes as a `compare trace` trace file, through
/// `parity_core::trace::parse_trace`. An error must name the file; a
/// loaded trace must hold the invariants the loader promises.
pub fn trace(data: &[u8]) {
    let path = Path::new("fuzz/input.safetensors");
    match parity_core::trace::parse_trace(path, data) {
        Err(error) => {
            let message = format!("{error:#}");
            assert!(
                message.starts_with("fuzz/input.safetensors: "),
                "error does not name the file: {message}"
            );
        }
        Ok(trace) => {
            let v = trace.vocab_size;
            assert!(v > 0 && trace.steps() > 0 && trace.prompt_len > 0);
            assert_eq!(trace.input_ids.len(), trace.prompt_len + trace.steps());
            assert!(
                trace
                    .input_ids
                    .iter()
                    .all(|&id| id >= 0 && (id as u128) < v as u128)
            );
            assert_eq!(trace.scores.len(), trace.steps());
            for row in &trace.logits {
                assert_eq!(row.len(), v);
                assert!(row.iter().all(|x| !x.is_nan() && *x != f32::INFINITY));
            }
            for row in &trace.scores {
                assert!(row.iter().all(|&(id, s)| id < v && s.is_finite()));
            }
        }
    }
}

/// Target `hf_sampler`: the bytes as one sampling step for
/// `hf_sampling::HfSampler` at both dispatch levels, checked against the
/// reference (`hf_sampling::process`): the same error, or the same kept set
/// with the same probabilities (bit for bit, except dense steps, whose fast
/// exp is within 4e-6 relative).
///
/// Layout: byte 0 picks a setting; byte 1 (mod 8) is the context length,
/// whose ids follow as signed bytes (negative ids included, which the
/// reference refuses); the rest is the logits, little-endian f32 (any bit
/// pattern: NaN, infinities, signed zeros).
pub fn hf_sampler(data: &[u8]) {
    use hf_sampling::{Dispatch, GenerationParams, HfSampler, StepPath};

    let (Some(&pick), Some(&n)) = (data.first(), data.get(1)) else {
        return;
    };
    let n = usize::from(n % 8);
    let Some(ids) = data.get(2..2 + n) else {
        return;
    };
    let context: Vec<i64> = ids.iter().map(|&b| i64::from(b as i8)).collect();
    let (words, _) = data[2 + n..].as_chunks::<4>();
    let logits: Vec<f32> = words.iter().map(|w| f32::from_le_bytes(*w)).collect();
    let mut params = GenerationParams {
        do_sample: true,
        top_k: None,
        ..GenerationParams::default()
    };
    match pick % 9 {
        0 => params.temperature = 0.7,
        1 => params.top_k = Some(usize::from(pick / 9) + 1),
        2 => params.top_p = 0.9,
        3 => (params.top_k, params.top_p) = (Some(40), 0.9),
        4 => params.min_p = Some(0.05),
        5 => params.repetition_penalty = 1.3,
        6 => (params.top_p, params.temperature) = (0.5, 1.5),
        7 => (params.min_p, params.temperature) = (Some(0.1), 0.6),
        _ => params.do_sample = false,
    }
    let want = hf_sampling::process(&logits, &context, &params);
    for dispatch in [Dispatch::Native, Dispatch::Baseline] {
        let level = dispatch.level();
        let mut sampler = HfSampler::new(&params)
            .expect("the grid's parameters are valid")
            .with_dispatch(dispatch);
        let got = sampler.distribution(&logits, &context);
        let (want, got) = match (&want, got) {
            (Err(a), Err(b)) => {
                assert_eq!(a.to_string(), b.to_string(), "{level}: errors differ");
                continue;
            }
            (Ok(w), Ok(g)) => (w, g),
            (w, g) => panic!("{level}: reference {w:?}, sampler {:?}", g.map(|d| d.path)),
        };
        let kept: Vec<usize> = got.kept.iter().map(|&i| i as usize).collect();
        assert_eq!(kept, want.kept, "{level} {:?}: kept sets differ", got.path);
        for (&i, &p) in kept.iter().zip(got.probs) {
            let q = want.probs[i];
            let same = match got.path {
                StepPath::Dense => (f64::from(p) - f64::from(q)).abs() <= 4e-6 * f64::from(q),
                _ => p.to_bits() == q.to_bits(),
            };
            assert!(
                same,
                "{level} {:?}: prob[{i}] {p:e}, reference {q:e}",
                got.path
            );
        }
    }
}

/// Target `probe_replay`: the bytes as a `compare probe --replay` recording
/// (`server_probe::Recording` JSON) replayed against the registry. A file
/// that is not a recording is refused by serde; a recording whose answers
/// make no sense (missing fields, probabilities out of range, a vocabulary
/// that disagrees, ...) must give an error with a message, never a panic,
/// and a report's figures must be in range.
pub fn probe_replay(data: &[u8]) {
    let Ok(recording) = serde_json::from_slice::<server_probe::Recording>(data) else {
        return;
    };
    if recording.options.repeat.is_some() {
        return repeat_replay(&recording);
    }
    let engines = engines();
    let registry = &engines.semantics;
    match server_probe::replay(&recording, registry) {
        Err(e) => assert!(
            !e.to_string().is_empty(),
            "empty error replaying {recording:?}"
        ),
        Ok(report) => {
            let unit = |x: f64| (0.0..=1.0).contains(&x);
            for probe in &report.probes {
                assert!(unit(probe.tail_mass), "tail mass {}", probe.tail_mass);
                assert!(probe.tv_to_transformers.is_none_or(unit), "{probe:?}");
                assert!(probe.draws_needed.is_none_or(|n| n > 0), "{probe:?}");
                for c in &probe.candidates {
                    assert!(
                        c.tv.is_none_or(unit)
                            && c.p_value.is_none_or(unit)
                            && c.p_support.is_none_or(unit)
                            && c.p_shape.is_none_or(unit),
                        "{c:?}"
                    );
                }
            }
        }
    }
}

/// `probe_replay` on a `--repeat` recording: an error with words, or a
/// report whose figures are in range (TV in [0, 1 + 1e-3], |Δ logit| ≥ 0,
/// `identical` exactly when nothing moved) with one run per repeat.
fn repeat_replay(recording: &server_probe::Recording) {
    match server_probe::repeat::replay(recording) {
        Err(e) => assert!(!e.to_string().is_empty(), "empty error"),
        Ok(report) => {
            for c in &report.conditions {
                if c.skipped.is_none() {
                    assert_eq!(c.runs.len(), report.repeat, "{c:?}");
                }
                assert!(c.max_tv >= 0.0 && c.max_tv <= 1.0 + 1e-3, "{c:?}");
                assert!(c.max_abs_dlogit >= 0.0, "{c:?}");
                if c.identical && c.skipped.is_none() {
                    assert!(c.max_abs_dlogit == 0.0 && c.max_tv == 0.0, "{c:?}");
                }
            }
            serde_json::to_string(&report).expect("the report serialises");
        }
    }
}

/// Target `beam_recording`: the bytes as a beam recording file
/// (`fixtures/beam/*.jsonl`, either format), parsed as `compare beam
/// --recorded` reads it and, when it parses, every run replayed. A bad file
/// is an error naming `file:line`, never a panic; a search's work is
/// bounded by the parser (beams, new tokens, vocabulary), so a replay ends;
/// a replay that reproduces its recording has scores within the tolerance.
pub fn beam_recording(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match comparison::beam::parse(text, "fuzz.jsonl") {
        Err(e) => assert!(
            format!("{e:#}").contains("fuzz.jsonl"),
            "an error that does not name the file: {e:#}"
        ),
        Ok(records) => {
            for rec in &records {
                let check = comparison::beam::check(rec);
                assert!(
                    !check.reproduced || check.max_score_diff <= 1e-5,
                    "{}: reproduced with a score {} apart",
                    rec.origin,
                    check.max_score_diff
                );
                assert_eq!(check.reproduced, check.problem.is_none(), "{}", rec.origin);
            }
        }
    }
}

/// A GGUF's metadata (`--model-file`): any bytes give the metadata or an
/// error naming a byte offset inside the input, never a panic or an
/// allocation past the input's size.
pub fn gguf_metadata(data: &[u8]) {
    match parity_core::gguf::GgufMetadata::from_bytes(data) {
        Err(error) => {
            assert!(
                error.offset <= data.len() as u64,
                "offset {} past the {} input bytes: {error}",
                error.offset,
                data.len()
            );
            assert!(error.to_string().contains("byte offset"), "{error}");
        }
        Ok(meta) => {
            assert!(meta.entries.len() as u64 <= parity_core::gguf::MAX_KEYS);
            assert!((2..=3).contains(&meta.version));
        }
    }
}

/// Target `compare_check`: the bytes as a `compare check` JSON-lines batch
/// (records with `probs` or `logprobs`), through `comparison::check::run`
/// under every semantics. One answer line per record; an answer's figures
/// lie in [0, 1], its lists are tokens of the vocabulary, and a record that
/// differs says why.
pub fn compare_check(data: &[u8]) {
    let engines = engines();
    for semantics in engines.semantics.iter().map(|s| s.info().name) {
        let args = comparison::cli::CheckRecordsArgs {
            semantics: semantics.to_string(),
            logits: None,
            probs: None,
            logprobs: None,
            params: None,
            input_ids: None,
            prompt_len: None,
            dense: false,
            ignore_fragile: false,
            format: comparison::cli::Format::Json,
        };
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let (summary, _) =
            comparison::check::run(&args, &engines, Cursor::new(data), &mut out, &mut err)
                .unwrap_or_else(|e| panic!("{semantics:?}: in-memory I/O failed: {e:#}"));
        let out = String::from_utf8(out).expect("stdout is UTF-8");
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines.len(),
            summary.records,
            "{semantics:?}: one line per record"
        );
        for line in lines {
            let value: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("{semantics:?}: output is not JSON ({e}): {line}"));
            if value.get("error").is_some() {
                continue;
            }
            let record = value["record"].as_u64().expect("record number");
            assert!(record >= 1, "{line}");
            // The line is the answer's fields and `record`.
            let mut fields = value.clone();
            fields.as_object_mut().expect("object").remove("record");
            let checked: comparison::check::Checked = serde_json::from_value(fields)
                .unwrap_or_else(|e| panic!("{semantics:?}: {e}: {line}"));
            for x in [checked.tv, checked.max_abs_diff] {
                assert!(
                    (0.0..=1.0 + 1e-9).contains(&x),
                    "{semantics:?}: figure {x}: {line}"
                );
            }
            for t in checked.only_yours.iter().chain(&checked.only_semantics) {
                assert!(t.id < checked.vocab && t.p > 0.0, "{semantics:?}: {line}");
            }
            let same = checked.verdict == comparison::report::Verdict::Same;
            assert_eq!(same, checked.explanation.is_none(), "{semantics:?}: {line}");
        }
    }
}

/// Target `arrays`: the bytes as a `.npy` or safetensors array file, through
/// `parity_core::arrays::from_bytes` (the readers of `compare check
/// --logits/--probs`). An array read has rows of equal, non-zero width that
/// hold every number; an error is a non-empty message.
pub fn arrays(data: &[u8]) {
    for tensor in [None, Some("x")] {
        match parity_core::arrays::from_bytes(data, tensor) {
            Ok(rows) => {
                assert!(rows.rows > 0 && rows.width > 0);
                let last = rows.row(rows.rows - 1);
                assert_eq!(last.len(), rows.width);
            }
            Err(message) => assert!(!message.is_empty()),
        }
    }
}
