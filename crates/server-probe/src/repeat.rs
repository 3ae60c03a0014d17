//! `compare probe --repeat N`: the same request N times under each
//! condition a deployment has, and whether the logits or the sampler moved.
//!
//! "I sent the same request, at temperature 0 or with a fixed seed, and got
//! different text." Each run here is one `/completion` that returns both
//! the model's raw next-token distribution over the whole vocabulary
//! (`n_probs` = `n_vocab`, `post_sampling_probs: false`, as the probe's
//! raw read) and the token the server drew for the user's request with the
//! probe's `--seed` (`completion_probabilities[0].id`), so the two causes
//! are told apart on the same answer: the logits moved (the top and greedy
//! token may change with them), or the sampler drew differently on equal
//! logits. The conditions, in order:
//!
//! 1. `cold-warm`: run 0 evaluates the whole prompt (`cache_prompt:
//!    false`); runs 1.. send the same request with `cache_prompt: true`
//!    right after it, so the prompt comes from the slot's cache and only
//!    its last token is evaluated (tools/server/server-context.cpp:3384-3390,
//!    "need to evaluate at least 1 token"). Run 0 is the **baseline** every
//!    run of every condition is compared with.
//! 2. `cache-off`: N runs with `cache_prompt: false`, one after the other.
//! 3. `concurrent`: N runs with `cache_prompt: false`, each sent at the same
//!    time as a batch-mate (another prompt, generating 32 tokens, no seed)
//!    pinned to the other slot, so the server decodes them in one batch.
//!    Needs a server with at least two slots (`-np 2`, `/props`
//!    `total_slots`); with one the condition is reported as skipped.
//!
//! The repeats are pinned to slot 0 (`id_slot`, tools/server/README.md:585)
//! so that the cache a warm run reuses is the one the run before filled;
//! each answer's `timings.cache_n` (prompt tokens reused) and `prompt_n`
//! (evaluated) say what really happened, and are reported per run.
//!
//! Only llama-server gives the whole raw distribution and the cache switch;
//! other APIs are refused with that reason. Everything goes through the
//! probe's [`Transport`], so `--record` and `--replay` work as for the
//! single probe.

use std::time::Duration;

use parity_core::{Comparison, Error};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::api::{self, Api, Key};
use crate::http::{Live, Replay, Transport};
use crate::{Options, Recording};

/// The most repeats one condition may ask for (each is a whole-vocabulary
/// answer, about 0.5 MB for a 50k-token model).
pub const MAX_REPEAT: usize = 64;

/// The batch-mate of the `concurrent` condition: another prompt, long
/// enough to still be decoding while the repeat's prompt is evaluated.
const BATCH_MATE_PROMPT: &str = "Once upon a time, in a small village by the sea, there lived";
/// Tokens the batch-mate generates.
const BATCH_MATE_TOKENS: u64 = 32;

/// The whole `--repeat` answer (`--format json`, docs/report-schema.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RepeatReport {
    /// Format version (1).
    pub schema: u32,
    /// The server's base URL.
    pub server: String,
    /// Its API (llama-server).
    pub api: Api,
    /// Vocabulary size the server reported.
    pub n_vocab: usize,
    /// Slots the server runs (`/props` `total_slots`), when it says.
    pub total_slots: Option<u64>,
    /// The prompt's token ids.
    pub prompt_ids: Vec<i64>,
    /// The request repeated (sampling fields as given).
    pub request: Map<String, Value>,
    /// The seed every run sends.
    pub seed: u64,
    /// Runs per condition.
    pub repeat: usize,
    /// Whether this report was replayed from a recording.
    pub replayed: bool,
    /// Whether every pair of runs with bit-identical logits drew the same
    /// token (`null`: no two runs had equal logits).
    pub sampler_repeats_on_equal_logits: Option<bool>,
    /// Pairs of runs (over all conditions) with bit-identical logits.
    pub equal_logit_pairs: usize,
    /// The sampler's part of the verdict, in words.
    pub sampler_verdict: String,
    /// One entry per condition, in the order run.
    pub conditions: Vec<Condition>,
}

/// One condition's runs against the baseline (`cold-warm` run 0).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Condition {
    /// `cold-warm`, `cache-off` or `concurrent`.
    pub name: String,
    /// What was sent, in words.
    pub description: String,
    /// Why it was not run (the server has one slot), if so.
    pub skipped: Option<String>,
    /// Every run's raw distribution is bit-identical to the baseline's
    /// (false when the condition was skipped).
    pub identical: bool,
    /// Distinct raw distributions among this condition's runs.
    pub distinct: usize,
    /// Largest |Δ logit| of any run against the baseline, over the tokens
    /// finite in both (the logits as the probe rebuilds them: log p; a
    /// shift of every logit by one constant does not count).
    pub max_abs_dlogit: f64,
    /// Largest total variation of a run's raw distribution from the
    /// baseline's.
    pub max_tv: f64,
    /// Some run's most likely token (the greedy token) differs from the
    /// baseline's.
    pub greedy_changed: bool,
    /// Some run drew another token than the baseline with the same seed.
    pub draw_changed: bool,
    /// Runs that drew another token than the baseline on bit-identical
    /// logits (the sampler, not the logits, moved).
    pub draw_changed_on_equal_logits: usize,
    /// What moved, in words.
    pub verdict: String,
    /// The engine's documented fix, cited, when the logits moved.
    pub fix: Option<String>,
    /// The runs.
    pub runs: Vec<Run>,
}

/// One run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Run {
    /// Prompt tokens the server reused from its cache (`timings.cache_n`).
    pub cached_tokens: Option<u64>,
    /// Prompt tokens it evaluated (`timings.prompt_n`).
    pub evaluated_tokens: Option<u64>,
    /// The slot that answered (`id_slot`).
    pub slot: Option<i64>,
    /// The most likely token of the raw distribution.
    pub greedy: i64,
    /// The token drawn for the request with the seed.
    pub drawn: i64,
    /// The raw distribution is bit-identical to the baseline's.
    pub identical: bool,
    /// Largest |Δ logit| against the baseline (see [`Condition`]).
    pub max_abs_dlogit: f64,
    /// Total variation from the baseline.
    pub tv: f64,
}

/// Probes a live llama-server `options.repeat` times per condition.
pub fn probe(options: &Options) -> Result<(RepeatReport, Recording), Error> {
    let mut live = Live::new(&options.server, Duration::from_secs(options.timeout_secs))?;
    let report = run(options, &mut live, false)?;
    let recording = Recording {
        schema: 1,
        options: options.clone(),
        exchanges: std::mem::take(&mut live.exchanges),
    };
    Ok((report, recording))
}

/// Re-runs a recorded `--repeat` probe offline.
pub fn replay(recording: &Recording) -> Result<RepeatReport, Error> {
    if recording.schema != 1 {
        return Err(Error::new(format_args!(
            "recording schema {} is not supported (expected 1)",
            recording.schema
        )));
    }
    let mut transport = Replay::new(recording.exchanges.clone());
    run(&recording.options, &mut transport, true)
}

/// What one run's answer said.
struct Answer {
    /// log p per token id (`-inf` for p = 0 or a token not listed).
    logp: Vec<f64>,
    greedy: i64,
    drawn: i64,
    cached: Option<u64>,
    evaluated: Option<u64>,
    slot: Option<i64>,
}

fn run(
    options: &Options,
    transport: &mut dyn Transport,
    replayed: bool,
) -> Result<RepeatReport, Error> {
    let repeat = options
        .repeat
        .ok_or_else(|| Error::new("--repeat N is missing"))?;
    if !(2..=MAX_REPEAT).contains(&repeat) {
        return Err(Error::new(format_args!(
            "--repeat {repeat}: expected 2 to {MAX_REPEAT}"
        )));
    }
    let Some(advice) = &options.api.dialect().repeat else {
        let (name, why) = Api::ALL
            .iter()
            .find_map(|a| Some((a.name(), a.dialect().repeat.as_ref()?.why)))
            .unwrap_or(("none", "no API can be measured"));
        return Err(Error::new(format_args!(
            "--repeat needs --api {name} (got {}): {why}",
            options.api.name()
        )));
    };
    if options.samples.is_some() {
        return Err(Error::new("--repeat and --samples do not go together"));
    }
    let request = match options.requests.as_slice() {
        [one] => one.clone(),
        [] => Map::new(),
        more => {
            return Err(Error::new(format_args!(
                "--repeat repeats one --request; {} were given",
                more.len()
            )));
        }
    };
    let prompt = options.prompt()?;
    let (n_vocab, total_slots, prompt_ids) = {
        let mut session = api::Session::new(transport, options.api, options.model.clone());
        let info = session.hello()?;
        let ids = session
            .prompt_ids(&prompt)?
            .ok_or_else(|| Error::new("the server gave no token ids for the prompt"))?;
        let n = info
            .n_vocab
            .ok_or_else(|| Error::new("the server did not say its vocabulary size"))?;
        (
            n,
            info.props.get("total_slots").and_then(Value::as_u64),
            ids,
        )
    };
    if let Some((i, id)) = prompt_ids
        .iter()
        .enumerate()
        .find(|&(_, &id)| usize::try_from(id).map_or(true, |id| id >= n_vocab))
    {
        return Err(Error::new(format_args!(
            "prompt id [{i}] = {id} is outside the server's vocabulary of {n_vocab} tokens"
        )));
    }
    let body = |cache: bool| -> Value {
        let mut b = request.clone();
        let own = json!({"prompt": prompt_ids, "n_predict": 1, "n_probs": n_vocab,
                         "post_sampling_probs": false, "seed": options.seed,
                         "cache_prompt": cache, "id_slot": 0});
        if let Value::Object(own) = own {
            b.extend(own);
        }
        Value::Object(b)
    };
    let read = |v: Result<(i32, Value), Error>| answer(v, n_vocab);

    let mut conditions: Vec<(String, String, Option<String>, Vec<Answer>)> = Vec::new();
    // 1. cold, then warm.
    let mut runs = vec![read(transport.call("/completion", Some(&body(false))))?];
    for _ in 1..repeat {
        runs.push(read(transport.call("/completion", Some(&body(true))))?);
    }
    conditions.push((
        "cold-warm".into(),
        "run 0 evaluates the whole prompt (cache_prompt false, the baseline); the others send \
         the same request with cache_prompt true right after it, so the prompt comes from slot 0's cache"
            .into(),
        None,
        runs,
    ));
    // 2. cache off.
    let mut runs = Vec::new();
    for _ in 0..repeat {
        runs.push(read(transport.call("/completion", Some(&body(false))))?);
    }
    conditions.push((
        "cache-off".into(),
        "every run evaluates the whole prompt (cache_prompt false), one after the other".into(),
        None,
        runs,
    ));
    // 3. concurrent.
    let mate = json!({"prompt": BATCH_MATE_PROMPT, "n_predict": BATCH_MATE_TOKENS,
                      "cache_prompt": false, "id_slot": 1, "temperature": 1.0});
    let description = format!(
        "every run (cache_prompt false, slot 0) is sent at the same time as a batch-mate on \
         slot 1 ({BATCH_MATE_TOKENS} tokens of another prompt, no seed)"
    );
    if total_slots.is_some_and(|n| n >= 2) {
        let mut runs = Vec::new();
        let own = body(false);
        for _ in 0..repeat {
            let mut answers = transport
                .call_together(&[("/completion", &own), ("/completion", &mate)])
                .into_iter();
            let ours = answers
                .next()
                .ok_or_else(|| Error::new("no answer to the concurrent request"))?;
            let theirs = answers
                .next()
                .ok_or_else(|| Error::new("no answer to the batch-mate"))?;
            let (status, _) =
                theirs.map_err(|e| Error::new(format_args!("the batch-mate: {e}")))?;
            if !(200..300).contains(&status) {
                return Err(Error::new(format_args!(
                    "the batch-mate was refused (HTTP {status})"
                )));
            }
            runs.push(read(ours)?);
        }
        conditions.push(("concurrent".into(), description, None, runs));
    } else {
        let why = match total_slots {
            Some(n) => format!("the server has {n} slot: {}", advice.more_slots),
            None => "the server does not say how many slots it has (/props total_slots)".into(),
        };
        conditions.push(("concurrent".into(), description, Some(why), Vec::new()));
    }

    analyse(
        options,
        request,
        n_vocab,
        total_slots,
        prompt_ids,
        repeat,
        replayed,
        &conditions,
    )
}

/// One `/completion` answer: the raw distribution, its most likely token,
/// the drawn token and the cache figures.
fn answer(v: Result<(i32, Value), Error>, n_vocab: usize) -> Result<Answer, Error> {
    let (status, v) = v?;
    let message = || {
        v.pointer("/error/message")
            .and_then(Value::as_str)
            .map_or_else(|| v.to_string().chars().take(200).collect(), String::from)
    };
    if !(200..300).contains(&status) {
        return Err(Error::new(format_args!(
            "/completion: the server refused the request (HTTP {status}): {}",
            message()
        )));
    }
    let Value::Object(map) = &v else {
        return Err(Error::new("/completion: expected a JSON object"));
    };
    let first = api::first_prob(map, "/completion")?;
    let entries = api::entries(first, "top_logprobs", "logprob", "/completion")?;
    let mut logp = vec![f64::NEG_INFINITY; n_vocab];
    let mut seen = vec![false; n_vocab];
    let mut greedy: Option<(i64, f64)> = None;
    for (i, (key, lp)) in entries.iter().enumerate() {
        let Key::Id(id) = key else {
            return Err(Error::new(format_args!(
                "/completion: top_logprobs[{i}] names no token id"
            )));
        };
        let idx = usize::try_from(*id)
            .ok()
            .filter(|&x| x < n_vocab)
            .ok_or_else(|| {
                Error::new(format_args!(
                    "/completion: top_logprobs[{i}] names token {id}, outside the vocabulary of {n_vocab}"
                ))
            })?;
        if lp.is_nan() || *lp > 1e-4 {
            return Err(Error::new(format_args!(
                "/completion: top_logprobs[{i}].logprob = {lp} is not a log-probability"
            )));
        }
        // llama-server writes float's lowest value for p = 0.
        let l = if *lp <= f64::from(f32::MIN) {
            f64::NEG_INFINITY
        } else {
            *lp
        };
        if seen[idx] {
            return Err(Error::new(format_args!(
                "/completion: top_logprobs[{i}] names token {id} a second time"
            )));
        }
        seen[idx] = true;
        logp[idx] = l;
        if greedy.is_none_or(|(_, g)| l > g) {
            greedy = Some((*id, l));
        }
    }
    // The whole vocabulary was asked for: its probabilities sum to 1.
    let mass: f64 = logp.iter().map(|l| l.exp()).sum();
    if (mass - 1.0).abs() > 1e-3 {
        return Err(Error::new(format_args!(
            "/completion: the raw distribution's {} entries sum to {mass}, not 1 (n_probs = {n_vocab} \
             should return the whole vocabulary)",
            entries.len()
        )));
    }
    let greedy = greedy
        .map(|(id, _)| id)
        .ok_or_else(|| Error::new("/completion: an empty top_logprobs list"))?;
    let drawn = first
        .get("id")
        .and_then(Value::as_i64)
        .ok_or_else(|| Error::new("/completion: completion_probabilities[0] has no `id`"))?;
    let timing = |k: &str| v.pointer(&format!("/timings/{k}")).and_then(Value::as_u64);
    Ok(Answer {
        logp,
        greedy,
        drawn,
        cached: timing("cache_n"),
        evaluated: timing("prompt_n"),
        slot: map.get("id_slot").and_then(Value::as_i64),
    })
}

/// Bitwise equality of two raw distributions.
fn same(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
}

/// Largest |Δ log p| over tokens finite in both, and the TV.
fn distance(a: &[f64], b: &[f64]) -> Result<(f64, f64), Error> {
    let d = a
        .iter()
        .zip(b)
        .filter(|(x, y)| x.is_finite() && y.is_finite())
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max);
    let p: Vec<f64> = a.iter().map(|x| x.exp()).collect();
    let q: Vec<f64> = b.iter().map(|x| x.exp()).collect();
    let tv = Comparison::new(&p, &q)
        .map_err(|e| Error::new(e.to_string()))?
        .tv;
    Ok((d, tv))
}

type Raw = (String, String, Option<String>, Vec<Answer>);

#[allow(clippy::too_many_arguments)]
fn analyse(
    options: &Options,
    request: Map<String, Value>,
    n_vocab: usize,
    total_slots: Option<u64>,
    prompt_ids: Vec<i64>,
    repeat: usize,
    replayed: bool,
    conditions: &[Raw],
) -> Result<RepeatReport, Error> {
    let advice = options
        .api
        .dialect()
        .repeat
        .as_ref()
        .ok_or_else(|| Error::new("--repeat: this API cannot be measured"))?;
    let baseline = &conditions[0].3[0];
    let all: Vec<&Answer> = conditions.iter().flat_map(|c| c.3.iter()).collect();
    let mut equal_pairs = 0usize;
    let mut equal_pairs_same_draw = 0usize;
    for (i, a) in all.iter().enumerate() {
        for b in &all[i + 1..] {
            if same(&a.logp, &b.logp) {
                equal_pairs += 1;
                if a.drawn == b.drawn {
                    equal_pairs_same_draw += 1;
                }
            }
        }
    }
    let sampler_repeats = (equal_pairs > 0).then_some(equal_pairs_same_draw == equal_pairs);
    let sampler_verdict = match sampler_repeats {
        Some(true) => format!(
            "the sampler gives the same token on equal logits: each of the {equal_pairs} pairs of \
             runs with bit-identical logits drew the same token with seed {}",
            options.seed
        ),
        Some(false) => format!(
            "the sampler does not repeat: {} of {equal_pairs} pairs of runs with bit-identical \
             logits drew different tokens with seed {}",
            equal_pairs - equal_pairs_same_draw,
            options.seed
        ),
        None => "no two runs had bit-identical logits, so the sampler could not be checked on \
                 equal logits"
            .into(),
    };
    let out = conditions
        .iter()
        .map(|(name, description, skipped, answers)| {
            let runs: Vec<Run> = answers
                .iter()
                .map(|a| {
                    let (d, tv) = distance(&a.logp, &baseline.logp)?;
                    Ok(Run {
                        cached_tokens: a.cached,
                        evaluated_tokens: a.evaluated,
                        slot: a.slot,
                        greedy: a.greedy,
                        drawn: a.drawn,
                        identical: same(&a.logp, &baseline.logp),
                        max_abs_dlogit: d,
                        tv,
                    })
                })
                .collect::<Result<_, Error>>()?;
            let mut distinct: Vec<&[f64]> = Vec::new();
            for a in answers {
                if !distinct.iter().any(|d| same(d, &a.logp)) {
                    distinct.push(&a.logp);
                }
            }
            let mut c = Condition {
                name: name.clone(),
                description: description.clone(),
                skipped: skipped.clone(),
                identical: skipped.is_none() && runs.iter().all(|r| r.identical),
                distinct: distinct.len(),
                max_abs_dlogit: runs.iter().map(|r| r.max_abs_dlogit).fold(0.0, f64::max),
                max_tv: runs.iter().map(|r| r.tv).fold(0.0, f64::max),
                greedy_changed: runs.iter().any(|r| r.greedy != baseline.greedy),
                draw_changed: runs.iter().any(|r| r.drawn != baseline.drawn),
                draw_changed_on_equal_logits: runs
                    .iter()
                    .filter(|r| r.identical && r.drawn != baseline.drawn)
                    .count(),
                verdict: String::new(),
                fix: None,
                runs,
            };
            let (verdict, fix) = verdict(&c, baseline, &sampler_verdict, advice);
            c.verdict = verdict;
            c.fix = fix;
            Ok(c)
        })
        .collect::<Result<_, Error>>()?;
    Ok(RepeatReport {
        schema: 1,
        server: options.server.clone(),
        api: options.api,
        n_vocab,
        total_slots,
        prompt_ids,
        request,
        seed: options.seed,
        repeat,
        replayed,
        sampler_repeats_on_equal_logits: sampler_repeats,
        equal_logit_pairs: equal_pairs,
        sampler_verdict,
        conditions: out,
    })
}

/// What moved, and the server's documented fix when the logits did.
fn verdict(
    c: &Condition,
    baseline: &Answer,
    sampler: &str,
    advice: &api::dialect::Repeat,
) -> (String, Option<String>) {
    if let Some(why) = &c.skipped {
        return (format!("not run: {why}"), None);
    }
    let n = c.runs.len();
    let draws = if c.draw_changed {
        let changed = c.runs.iter().filter(|r| r.drawn != baseline.drawn).count();
        format!(
            "the seeded draw differed from the baseline's token {} in {changed} of {n} runs",
            baseline.drawn
        )
    } else {
        format!(
            "the seeded draw gave token {} in all {n} runs",
            baseline.drawn
        )
    };
    if c.identical {
        return (
            format!(
                "bit-identical logits in all {n} runs (baseline included where it is one of them); {draws}"
            ),
            None,
        );
    }
    let when = match c.name.as_str() {
        "cold-warm" => {
            let cached = c
                .runs
                .iter()
                .filter_map(|r| r.cached_tokens)
                .max()
                .unwrap_or(0);
            format!("when the prompt came from the cache (up to {cached} prompt tokens reused)")
        }
        "concurrent" => "when the request was batched with another".into(),
        _ => "between full evaluations of the same prompt".into(),
    };
    let greedy = if c.greedy_changed {
        "; the greedy token changed"
    } else {
        "; the greedy token did not change"
    };
    let sampler = if c.draw_changed_on_equal_logits > 0 {
        format!(
            "the draw also changed on bit-identical logits in {} runs",
            c.draw_changed_on_equal_logits
        )
    } else {
        sampler.to_string()
    };
    let verdict = format!(
        "{sampler}; the logits moved by {:.3e} (max |Δ logit|, TV {:.3e}) {when}{greedy}; {draws}",
        c.max_abs_dlogit, c.max_tv
    );
    let fix = match c.name.as_str() {
        "cold-warm" => Some(advice.cold_warm_fix.to_string()),
        "concurrent" => Some(advice.concurrent_fix.to_string()),
        _ => None,
    };
    (verdict, fix)
}

/// The text report.
pub fn write_text(report: &RepeatReport, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    writeln!(
        out,
        "server: {} ({}, {} slots){}",
        report.server,
        report.api.name(),
        report
            .total_slots
            .map_or_else(|| "?".to_string(), |n| n.to_string()),
        if report.replayed { " [replayed]" } else { "" }
    )?;
    writeln!(
        out,
        "request: {} with seed {}, {} runs per condition, {} prompt tokens, whole vocabulary ({})",
        Value::Object(report.request.clone()),
        report.seed,
        report.repeat,
        report.prompt_ids.len(),
        report.n_vocab
    )?;
    writeln!(out, "sampler: {}", report.sampler_verdict)?;
    for c in &report.conditions {
        writeln!(out)?;
        writeln!(out, "{}: {}", c.name, c.description)?;
        if c.skipped.is_none() {
            writeln!(
                out,
                "  identical {}  distinct {}  max|Δlogit| {:.3e}  max TV {:.3e}  greedy changed {}  draw changed {}",
                c.identical,
                c.distinct,
                c.max_abs_dlogit,
                c.max_tv,
                c.greedy_changed,
                c.draw_changed
            )?;
            for (i, r) in c.runs.iter().enumerate() {
                let figure = |x: Option<u64>| x.map_or("?".to_string(), |x| x.to_string());
                writeln!(
                    out,
                    "  run {i}: cached {} evaluated {}  greedy {} drawn {}  identical {}  |Δlogit| {:.3e}  TV {:.3e}",
                    figure(r.cached_tokens),
                    figure(r.evaluated_tokens),
                    r.greedy,
                    r.drawn,
                    r.identical,
                    r.max_abs_dlogit,
                    r.tv
                )?;
            }
        }
        writeln!(out, "  verdict: {}", c.verdict)?;
        if let Some(fix) = &c.fix {
            writeln!(out, "  fix: {fix}")?;
        }
    }
    Ok(())
}

/// Every whole-vocabulary `/completion` answer a recording holds, with its
/// request body, as `(id, logprob)` pairs: what a test reads to check the
/// verdicts against the raw distributions directly.
pub fn raw_answers(recording: &Recording) -> Vec<(Value, Vec<(i64, f64)>)> {
    let mut out = Vec::new();
    for e in &recording.exchanges {
        if e.path != "/completion" || e.body.get("n_probs").is_none() {
            continue;
        }
        let Some(list) = e
            .response
            .as_ref()
            .and_then(|r| r.pointer("/completion_probabilities/0/top_logprobs"))
            .and_then(Value::as_array)
        else {
            continue;
        };
        let entries = list
            .iter()
            .filter_map(|x| Some((x.get("id")?.as_i64()?, x.get("logprob")?.as_f64()?)))
            .collect();
        out.push((e.body.clone(), entries));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances_ignore_tokens_missing_on_a_side_and_tv_counts_them() {
        let a = [0.5f64.ln(), 0.5f64.ln(), f64::NEG_INFINITY];
        let b = [0.25f64.ln(), 0.5f64.ln(), 0.25f64.ln()];
        let (d, tv) = distance(&a, &b).expect("equal lengths");
        // |ln 0.5 − ln 0.25| = ln 2
        assert!((d - 2f64.ln()).abs() < 1e-12, "{d}");
        // ½ (0.25 + 0 + 0.25)
        assert!((tv - 0.25).abs() < 1e-12, "{tv}");
        assert!(same(&a, &a) && !same(&a, &b));
    }
}
