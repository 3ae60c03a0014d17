//! `compare report`: every pair of semantics on fixture logits, row by row.
//!
//! For each fixture and setting, each semantics turns the same logits into a
//! full distribution:
//! - `hf`: transformers itself — the scores recorded from its `generate`
//!   (softmax, or the one-hot of the argmax when not sampling);
//! - `hf-rust`: `hf-sampling` on the logits and kwargs (must equal `hf`);
//! - `candle`: the real candle `LogitsProcessor`, configured the way a porter
//!   reads the kwargs literally (see [`naive_candle`]), mirrored by
//!   `candle-adapter` and checked by replayed real draws;
//! - `candle+hf-closure`: candle configured by `candle_adapter::translate` to
//!   reproduce transformers (the top-k closure in `sample_f` where needed);
//! - `spec`: the written spec, where the setting maps onto its parameters.
//!
//! A row compares two of them. Nothing here decides what a semantics does:
//! each crate does; this module only lines the answers up and explains them.

use std::collections::HashMap;
use std::io::{self, Write};
use std::path::PathBuf;

use anyhow::{Context, bail};
use candle_adapter::{
    CandleParams, CandleRun, CandleSampling, RepeatPenalty, VerifyOptions, Window,
};
use hf_sampling::GenerationParams;
use parity_core::fixture::{self, Fixture, FixtureKind, Setting};
use parity_core::metrics::softmax_f64;
use parity_core::{Comparison, Vocab};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::cli::{Format, ReportArgs};

/// Version of the JSON document (`docs/report-schema.md`).
pub const SCHEMA: u32 = 1;

/// Probabilities closer than this are float rounding: the verdict is `same`.
pub const SAME_TOLERANCE: f64 = 1e-5;

/// The settings of the seed article, run by default.
pub const DEFAULT_SETTINGS: [&str; 6] = ["t07_default", "t07", "k40", "p09", "k40p09", "rep13"];

/// The tie demonstration's settings in `fixtures/edge/ties_3221.safetensors`.
const TIE_SETTINGS: [&str; 1] = ["top_k2"];

/// Repeat-penalty windows candle's examples use (`repeat_last_n`).
const WINDOWS: [usize; 2] = [64, 128];

/// The semantics a row can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Side {
    /// transformers' recorded scores.
    Hf,
    /// hf-sampling.
    HfRust,
    /// candle, literal translation.
    Candle,
    /// candle with `translate`'s exact setup.
    CandleClosure,
    /// The written spec.
    Spec,
}

impl Side {
    const ALL: [Side; 5] = [
        Side::Hf,
        Side::HfRust,
        Side::Candle,
        Side::CandleClosure,
        Side::Spec,
    ];

    /// The name used in `--pairs` and in the report.
    pub fn name(self) -> &'static str {
        match self {
            Side::Hf => "hf",
            Side::HfRust => "hf-rust",
            Side::Candle => "candle",
            Side::CandleClosure => "candle+hf-closure",
            Side::Spec => "spec",
        }
    }

    fn parse(s: &str) -> Option<Side> {
        Side::ALL.into_iter().find(|side| side.name() == s)
    }

    fn is_candle(self) -> bool {
        matches!(self, Side::Candle | Side::CandleClosure)
    }
}

/// The whole JSON document.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Report {
    /// Always [`SCHEMA`].
    pub schema: u32,
    /// Counts over all rows.
    pub summary: Summary,
    /// One row per (fixture, setting, pair[, penalty window]).
    pub rows: Vec<Row>,
}

/// Counts over all rows.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Summary {
    /// Rows in the report.
    pub rows: usize,
    /// Rows whose verdict is `same`.
    pub same: usize,
    /// Rows whose verdict is `differs`.
    pub differs: usize,
    /// Real candle draws made (every one replayed).
    pub candle_draws: usize,
    /// Of those, draws the replay reproduced exactly.
    pub replay_agree: usize,
    /// Rows over `--max-tv` / `--max-abs-diff` (0 when no threshold is set).
    pub over_threshold: usize,
}

/// One comparison of two semantics on one fixture and setting.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Row {
    /// Fixture name (file stem).
    pub fixture: String,
    /// Where the logits come from, in words.
    pub context: String,
    /// Setting name.
    pub setting: String,
    /// The generate kwargs of the setting.
    pub kwargs: Map<String, Value>,
    /// Left semantics.
    pub left: String,
    /// Right semantics.
    pub right: String,
    /// The candle configuration used by a candle side, if any.
    pub candle_setup: Option<String>,
    /// For candle rows: the repeat-penalty window (`null` = whole context).
    pub repeat_window: Option<usize>,
    /// Tokens the left keeps (probability > 0); null if it failed.
    pub kept_left: Option<usize>,
    /// Tokens the right keeps; null if it failed.
    pub kept_right: Option<usize>,
    /// max |p_left − p_right|; null if a side failed.
    pub max_abs_diff: Option<f64>,
    /// Total variation ½ Σ |p_left − p_right|; null if a side failed.
    pub tv: Option<f64>,
    /// Probability mass the left puts on tokens the right drops.
    pub mass_only_left: Option<f64>,
    /// Probability mass the right puts on tokens the left drops.
    pub mass_only_right: Option<f64>,
    /// The heaviest tokens only the left keeps.
    pub only_left: Vec<TokenRow>,
    /// The heaviest tokens only the right keeps.
    pub only_right: Vec<TokenRow>,
    /// `same` (max |Δp| ≤ 1e-5) or `differs`.
    pub verdict: Verdict,
    /// Why the sides differ, in words; null when they agree.
    pub reason: Option<String>,
    /// How to make candle match transformers, when there is a way.
    pub fix: Option<String>,
    /// Real candle draws behind a candle side.
    pub draws: Option<Draws>,
    /// Repetition-penalty details, for settings with a penalty.
    pub penalty: Option<Penalty>,
}

/// A token kept by one side only.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenRow {
    /// Token id.
    pub id: usize,
    /// Token text from the fixture's vocabulary, if known.
    pub token: Option<String>,
    /// Its probability on the side that keeps it.
    pub mass: f64,
}

/// Row verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Within float rounding.
    Same,
    /// Not.
    Differs,
}

/// What the real candle draws said.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Draws {
    /// Real `LogitsProcessor` draws.
    pub n: usize,
    /// Draws the replay (`StdRng` + `WeightedIndex` over the mirror) reproduced;
    /// null for GumbelSoftmax, which cannot be replayed.
    pub replay_agree: Option<usize>,
    /// First seed (stream s uses seed + s).
    pub seed: u64,
    /// max over tokens |frequency − p_candle|.
    pub max_freq_dev: f64,
    /// Chi-square goodness-of-fit p-value of the draws against the mirror
    /// (null when there is nothing to test, e.g. an argmax).
    pub p_value: Option<f64>,
    /// Share of draws outside the left side's kept set.
    pub outside_left: f64,
    /// Share of draws outside the right side's kept set.
    pub outside_right: f64,
}

/// How a repetition penalty was applied on each side.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Penalty {
    /// Context length (prompt + answer tokens).
    pub context_len: usize,
    /// Logits the left side's penalty changed.
    pub changed_left: usize,
    /// Logits the right side's penalty changed.
    pub changed_right: usize,
    /// max |Δ logit| between the two sides' penalised logits.
    pub max_logit_diff: f64,
    /// Ids penalised over the whole context but not in this window.
    pub missed_ids: usize,
    /// Of those, ids that occur in the templated prompt.
    pub missed_in_prompt: usize,
}

/// The finished report and whether a threshold was exceeded.
pub struct Outcome {
    /// The report.
    pub report: Report,
    /// Any row over `--max-tv` / `--max-abs-diff`.
    pub over_threshold: bool,
}

impl Outcome {
    /// Writes the report in the requested format.
    pub fn write(&self, args: &ReportArgs, out: &mut dyn Write) -> io::Result<()> {
        match args.format {
            Format::Json => {
                serde_json::to_writer_pretty(&mut *out, &self.report)?;
                writeln!(out)
            }
            Format::Text => write_text(&self.report, out),
        }
    }
}

/// One side's distribution on one (fixture, setting).
struct Dist {
    probs: Vec<f64>,
    /// The logits after this side's repetition penalty, when it has one.
    penalised: Option<Vec<f32>>,
    candle: Option<CandleSide>,
}

struct CandleSide {
    setup: String,
    run: CandleRun,
}

/// Runs the report.
pub fn run(args: &ReportArgs, progress: bool) -> anyhow::Result<Outcome> {
    let pairs = parse_pairs(&args.pairs)?;
    let files = fixture_files(&args.fixtures)?;
    let explicit_settings = !args.settings.is_empty();
    let mut rows = Vec::new();
    let mut vocabs: HashMap<PathBuf, Vocab> = HashMap::new();
    let mut selected_any = false;
    for (i, (path, default_settings)) in files.iter().enumerate() {
        if progress {
            eprint!("\r[{}/{}] {}        ", i + 1, files.len(), path.display());
        }
        let fx = Fixture::load(path)?;
        let vocab = match &fx.model {
            Some(m) => {
                if !vocabs.contains_key(&m.vocab) {
                    let v = Vocab::load(&m.vocab)?;
                    vocabs.insert(m.vocab.clone(), v);
                }
                vocabs.get(&m.vocab)
            }
            None => None,
        };
        let settings: Vec<&Setting> = fx
            .settings
            .iter()
            .filter(|s| {
                if explicit_settings {
                    args.settings.contains(&s.name)
                } else if args.all_settings {
                    true
                } else {
                    match (default_settings, fx.kind) {
                        (Some(names), _) => names.contains(&s.name.as_str()),
                        (None, FixtureKind::Model) => DEFAULT_SETTINGS.contains(&s.name.as_str()),
                        (None, FixtureKind::Edge) => true,
                    }
                }
            })
            .collect();
        selected_any |= !settings.is_empty();
        for setting in settings {
            rows.extend(setting_rows(&fx, setting, vocab, &pairs, args)?);
        }
    }
    if progress {
        eprint!("\r\x1b[2K");
    }
    if explicit_settings && !selected_any {
        bail!(
            "no fixture records any of the settings {}",
            args.settings.join(",")
        );
    }
    let over = |r: &Row| {
        let exceeds = |value: Option<f64>, limit: Option<f64>| match limit {
            Some(limit) => value.is_none_or(|v| v > limit),
            None => false,
        };
        exceeds(r.tv, args.max_tv) || exceeds(r.max_abs_diff, args.max_abs_diff)
    };
    let over_threshold = rows.iter().filter(|r| over(r)).count();
    let summary = Summary {
        rows: rows.len(),
        same: rows.iter().filter(|r| r.verdict == Verdict::Same).count(),
        differs: rows
            .iter()
            .filter(|r| r.verdict == Verdict::Differs)
            .count(),
        candle_draws: rows
            .iter()
            .filter_map(|r| r.draws.as_ref())
            .map(|d| d.n)
            .sum(),
        replay_agree: rows
            .iter()
            .filter_map(|r| r.draws.as_ref().and_then(|d| d.replay_agree))
            .sum(),
        over_threshold,
    };
    Ok(Outcome {
        over_threshold: over_threshold > 0,
        report: Report {
            schema: SCHEMA,
            summary,
            rows,
        },
    })
}

fn parse_pairs(specs: &[String]) -> anyhow::Result<Vec<(Side, Side)>> {
    if specs.is_empty() {
        return Ok(vec![
            (Side::Hf, Side::HfRust),
            (Side::Hf, Side::Candle),
            (Side::Hf, Side::CandleClosure),
            (Side::Hf, Side::Spec),
        ]);
    }
    let names = || Side::ALL.map(Side::name).join(", ");
    specs
        .iter()
        .map(|spec| {
            let (l, r) = spec
                .split_once(':')
                .with_context(|| format!("--pairs: {spec:?} is not LEFT:RIGHT"))?;
            let side = |s: &str| {
                Side::parse(s).with_context(|| {
                    format!(
                        "--pairs: unknown semantics {s:?} in {spec:?} (known: {})",
                        names()
                    )
                })
            };
            let (l, r) = (side(l)?, side(r)?);
            if l == r {
                bail!("--pairs: {spec:?} compares a semantics with itself");
            }
            Ok((l, r))
        })
        .collect()
}

/// A fixed list of setting names.
type SettingNames = &'static [&'static str];

/// Fixture files with the settings each runs by default (`None`: the
/// article's six on a model fixture, every setting on an edge fixture).
fn fixture_files(args: &[PathBuf]) -> anyhow::Result<Vec<(PathBuf, Option<SettingNames>)>> {
    if args.is_empty() {
        let dir = fixture::bundled_dir();
        let mut files: Vec<_> = fixture::list_dir(&dir.join("smollm2"))?
            .into_iter()
            .map(|p| (p, None))
            .collect();
        files.push((
            dir.join("edge/ties_3221.safetensors"),
            Some(&TIE_SETTINGS[..]),
        ));
        return Ok(files);
    }
    let mut files = Vec::new();
    for arg in args {
        if arg.is_dir() {
            files.extend(fixture::list_dir(arg)?.into_iter().map(|p| (p, None)));
        } else {
            files.push((arg.clone(), None));
        }
    }
    Ok(files)
}

fn context_text(fx: &Fixture) -> String {
    match &fx.model {
        Some(m) => {
            let mut s = format!(
                "{:?} + {} answer tokens ({} ids)",
                clip(&m.prompt, 40),
                m.k,
                fx.input_ids.len()
            );
            if m.k > 0 {
                s.push_str(&format!(", ending {:?}", tail(&m.answer, 20)));
            }
            s
        }
        None => printable(&fx.description),
    }
}

/// `s` with control characters escaped (`\n`, `\u{1b}`, ...): metadata from
/// a fixture file must not be able to forge report lines or drive a terminal.
fn printable(s: &str) -> String {
    s.chars()
        .flat_map(|c| {
            let escaped: Vec<char> = if c.is_control() {
                c.escape_default().collect()
            } else {
                vec![c]
            };
            escaped
        })
        .collect()
}

/// The first `n` characters of `s`, with an ellipsis when cut.
fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        s.chars().take(n - 1).chain(['…']).collect()
    }
}

/// The last `n` characters of `s`.
fn tail(s: &str, n: usize) -> String {
    let chars: Vec<char> = s.chars().collect();
    chars[chars.len().saturating_sub(n)..].iter().collect()
}

fn setting_rows(
    fx: &Fixture,
    setting: &Setting,
    vocab: Option<&Vocab>,
    pairs: &[(Side, Side)],
    args: &ReportArgs,
) -> anyhow::Result<Vec<Row>> {
    let params = hf_sampling::resolve(&setting.kwargs, None)
        .with_context(|| format!("{}: setting {}", fx.path.display(), setting.name))?;
    let mut cache: HashMap<Side, Option<Result<Dist, String>>> = HashMap::new();
    let mut rows = Vec::new();
    for &(l, r) in pairs {
        for side in [l, r] {
            cache
                .entry(side)
                .or_insert_with(|| side_dist(side, fx, setting, &params, None));
        }
        let (Some(left), Some(right)) = (&cache[&l], &cache[&r]) else {
            continue; // the setting does not map onto one of the sides (spec)
        };
        // candle's examples penalise only the last 64 or 128 tokens: with a
        // penalty, the candle side is also run with those windows.
        let windows: &[usize] = if params.repetition_penalty != 1.0 && r == Side::Candle {
            &WINDOWS
        } else {
            &[]
        };
        let windowed: Vec<(Option<usize>, Result<Dist, String>)> = windows
            .iter()
            .filter_map(|&n| {
                side_dist(Side::Candle, fx, setting, &params, Some(n)).map(|d| (Some(n), d))
            })
            .collect();
        let rights = std::iter::once((None, right)).chain(windowed.iter().map(|(n, d)| (*n, d)));
        for (window, right) in rights {
            rows.push(make_row(
                fx,
                setting,
                &params,
                vocab,
                (l, left),
                (r, right),
                window,
                args,
            )?);
        }
    }
    Ok(rows)
}

/// A side's distribution; `None` when the setting does not map onto it.
fn side_dist(
    side: Side,
    fx: &Fixture,
    setting: &Setting,
    params: &GenerationParams,
    window: Option<usize>,
) -> Option<Result<Dist, String>> {
    let plain = |probs| {
        Ok(Dist {
            probs,
            penalised: None,
            candle: None,
        })
    };
    match side {
        Side::Hf => {
            let probs = if params.do_sample {
                softmax_f64(&setting.scores)
            } else {
                one_hot(fx.vocab_size(), argmax_first(&setting.scores))
            };
            let penalised = (params.repetition_penalty != 1.0).then(|| {
                // Greedy scores are exactly transformers' penalised logits.
                // Sampling scores also went through temperature and
                // truncation, so the penalty is recomputed with hf-sampling's,
                // which is bit-identical to transformers' on every greedy
                // fixture (crates/hf-sampling/tests/it/fixtures.rs).
                if params.do_sample {
                    let mut l = fx.logits.clone();
                    hf_sampling::ops::repetition_penalty(
                        &mut l,
                        &fx.input_ids,
                        params.repetition_penalty,
                    );
                    l
                } else {
                    setting.scores.clone()
                }
            });
            Some(Ok(Dist {
                probs,
                penalised,
                candle: None,
            }))
        }
        Side::HfRust => Some(
            hf_sampling::process(&fx.logits, &fx.input_ids, params)
                .map_err(|e| e.to_string())
                .and_then(|o| plain(o.probs.iter().map(|&p| f64::from(p)).collect())),
        ),
        Side::Spec => spec_dist(fx, params).map(|r| r.and_then(plain)),
        Side::Candle => {
            let mut cp = naive_candle(&setting.kwargs);
            if let (Some(n), Some(rp)) = (window, cp.repeat_penalty.as_mut()) {
                rp.window = Window::LastN(n);
            }
            Some(candle_dist(fx, cp))
        }
        Side::CandleClosure => {
            let t = match candle_adapter::translate(params) {
                Ok(t) => t,
                Err(e) => return Some(Err(e.to_string())),
            };
            Some(candle_dist(fx, t.exact.unwrap_or(t.candle)))
        }
    }
}

fn candle_dist(fx: &Fixture, cp: CandleParams) -> Result<Dist, String> {
    let setup = candle_setup(&cp);
    let run = CandleRun::new(&fx.logits, &fx.input_ids, &cp).map_err(|e| e.to_string())?;
    let probs = run.mirrored().probs.clone();
    let penalised = cp
        .repeat_penalty
        .is_some()
        .then(|| run.mirrored().penalised_logits.clone());
    Ok(Dist {
        probs,
        penalised,
        candle: Some(CandleSide { setup, run }),
    })
}

/// How a candle configuration reads in a report.
fn candle_setup(cp: &CandleParams) -> String {
    let mut s = cp.sampling.to_string();
    if let Some(k) = cp.hf_top_k {
        s.push_str(&format!(" + sample_f(transformers top-k {k})"));
    }
    if let Some(rp) = &cp.repeat_penalty {
        match rp.window {
            Window::Whole => {
                s.push_str(&format!(", repeat_penalty {} on all input_ids", rp.penalty))
            }
            Window::LastN(n) => s.push_str(&format!(
                ", repeat_penalty {} on the last {n} ids",
                rp.penalty
            )),
        }
    }
    s
}

/// The candle configuration a porter writes by reading the kwargs literally:
/// `do_sample=False` → ArgMax; otherwise the temperature given (1.0 if none),
/// top_k and top_p as given (TopK, TopP or TopKThenTopP; none → All), and the
/// repetition penalty over the whole context. transformers' hidden defaults
/// (top_k=50) are exactly what this misses.
pub fn naive_candle(kwargs: &Map<String, Value>) -> CandleParams {
    let num = |k: &str| kwargs.get(k).and_then(Value::as_f64);
    let temperature = num("temperature").unwrap_or(1.0);
    let top_k = kwargs
        .get("top_k")
        .and_then(Value::as_u64)
        .filter(|&k| k > 0)
        .map(|k| k as usize);
    let top_p = num("top_p").filter(|&p| p < 1.0);
    let sampling = if kwargs.get("do_sample").and_then(Value::as_bool) != Some(true) {
        CandleSampling::ArgMax
    } else {
        match (top_k, top_p) {
            (Some(k), Some(p)) => CandleSampling::TopKThenTopP { k, p, temperature },
            (Some(k), None) => CandleSampling::TopK { k, temperature },
            (None, Some(p)) => CandleSampling::TopP { p, temperature },
            (None, None) => CandleSampling::All { temperature },
        }
    };
    let repeat_penalty = num("repetition_penalty")
        .filter(|&p| p != 1.0)
        .map(|penalty| RepeatPenalty {
            penalty,
            window: Window::Whole,
        });
    CandleParams {
        sampling,
        repeat_penalty,
        hf_top_k: None,
    }
}

/// The spec's parameters for a transformers setting, when it has them: the
/// spec knows temperature (0 = greedy), top-k, top-p and the penalty only.
fn spec_dist(fx: &Fixture, p: &GenerationParams) -> Option<Result<Vec<f64>, String>> {
    let only_spec_processors = p.min_p.is_none()
        && p.typical_p >= 1.0
        && !(0.0 < p.epsilon_cutoff && p.epsilon_cutoff < 1.0)
        && !(0.0 < p.eta_cutoff && p.eta_cutoff < 1.0);
    if !only_spec_processors || (p.do_sample && p.top_p <= 0.0) {
        return None;
    }
    let params = serde_json::json!({
        "temperature": if p.do_sample { p.temperature } else { 0.0 },
        "top_k": p.top_k.filter(|_| p.do_sample).unwrap_or(0),
        "top_p": if p.do_sample { p.top_p.min(1.0) } else { 1.0 },
        "repetition_penalty": p.repetition_penalty,
        "u": 0.5,
    });
    let result = spec_sampler::Params::from_json(&params)
        .and_then(|params| {
            spec_sampler::Input::from_parts(
                fx.logits.iter().map(|&l| f64::from(l)).collect(),
                fx.input_ids.clone(),
                params,
            )
        })
        .map(|input| spec_sampler::distribution(&input).into_probs())
        .map_err(|e| e.to_string());
    Some(result)
}

fn one_hot(v: usize, i: usize) -> Vec<f64> {
    let mut p = vec![0.0; v];
    p[i] = 1.0;
    p
}

/// `torch.argmax`: the first index of the maximum.
fn argmax_first(xs: &[f32]) -> usize {
    let mut best = 0;
    for (i, &x) in xs.iter().enumerate() {
        if x > xs[best] {
            best = i;
        }
    }
    best
}

#[allow(clippy::too_many_arguments)]
fn make_row(
    fx: &Fixture,
    setting: &Setting,
    params: &GenerationParams,
    vocab: Option<&Vocab>,
    (l, left): (Side, &Result<Dist, String>),
    (r, right): (Side, &Result<Dist, String>),
    window: Option<usize>,
    args: &ReportArgs,
) -> anyhow::Result<Row> {
    let candle_side = [(l, left), (r, right)]
        .into_iter()
        .find(|(s, d)| s.is_candle() && d.as_ref().is_ok_and(|d| d.candle.is_some()));
    let mut row = Row {
        fixture: fx.name.clone(),
        context: context_text(fx),
        setting: setting.name.clone(),
        kwargs: setting.kwargs.clone(),
        left: l.name().into(),
        right: r.name().into(),
        candle_setup: candle_side
            .and_then(|(_, d)| d.as_ref().ok())
            .and_then(|d| d.candle.as_ref())
            .map(|c| c.setup.clone()),
        repeat_window: window,
        kept_left: None,
        kept_right: None,
        max_abs_diff: None,
        tv: None,
        mass_only_left: None,
        mass_only_right: None,
        only_left: Vec::new(),
        only_right: Vec::new(),
        verdict: Verdict::Differs,
        reason: None,
        fix: None,
        draws: None,
        penalty: None,
    };
    let (left, right) = match (left, right) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) => {
            row.reason = Some(format!("{} fails: {e}", l.name()));
            return Ok(row);
        }
        (_, Err(e)) => {
            row.reason = Some(format!("{} fails: {e}", r.name()));
            row.fix = fix_for(r, setting, params);
            return Ok(row);
        }
    };
    let cmp = Comparison::new(&left.probs, &right.probs)
        .with_context(|| format!("{}: setting {}", fx.path.display(), setting.name))?;
    let tokens = |list: &[parity_core::TokenMass]| {
        list.iter()
            .take(args.show_tokens)
            .map(|t| TokenRow {
                id: t.id,
                token: vocab.and_then(|v| v.token(t.id)).map(str::to_string),
                mass: t.mass,
            })
            .collect()
    };
    row.kept_left = Some(cmp.kept_left);
    row.kept_right = Some(cmp.kept_right);
    row.max_abs_diff = Some(cmp.max_abs_diff);
    row.tv = Some(cmp.tv);
    row.mass_only_left = Some(cmp.mass_only_left());
    row.mass_only_right = Some(cmp.mass_only_right());
    row.only_left = tokens(&cmp.only_left);
    row.only_right = tokens(&cmp.only_right);

    if let Some((side, dist)) = candle_side
        && let Ok(dist) = dist
        && let Some(c) = &dist.candle
    {
        let other = if side == l { right } else { left };
        let kept =
            |d: &Dist| -> Vec<usize> { (0..d.probs.len()).filter(|&i| d.probs[i] > 0.0).collect() };
        let other_kept = kept(other);
        let v = c
            .run
            .verify(&VerifyOptions {
                seed: args.seed,
                draws: args.draws,
                streams: 2,
                other_kept: Some(&other_kept),
                reference: None,
                ..VerifyOptions::default()
            })
            .with_context(|| {
                format!(
                    "{}: setting {}: candle draws",
                    fx.path.display(),
                    setting.name
                )
            })?;
        let outside_other = v.outside_other_kept.unwrap_or(0.0);
        let (outside_left, outside_right) = if side == l {
            (v.outside_mirror_kept, outside_other)
        } else {
            (outside_other, v.outside_mirror_kept)
        };
        row.draws = Some(Draws {
            n: v.draws,
            replay_agree: v.replay.as_ref().map(|r| r.agreed),
            seed: args.seed,
            max_freq_dev: v.vs_mirror.max_abs_diff,
            p_value: v.vs_mirror.gof.p_value,
            outside_left,
            outside_right,
        });
    }

    if let (Some(pl), Some(pr)) = (&left.penalised, &right.penalised) {
        let changed = |p: &[f32]| {
            p.iter()
                .zip(&fx.logits)
                .filter(|(a, b)| a.to_bits() != b.to_bits())
                .count()
        };
        let max_logit_diff = pl
            .iter()
            .zip(pr)
            .map(|(a, b)| f64::from(*a) - f64::from(*b))
            .map(f64::abs)
            .filter(|d| !d.is_nan())
            .fold(0.0, f64::max);
        let (missed_ids, missed_in_prompt) = missed(fx, window);
        row.penalty = Some(Penalty {
            context_len: fx.input_ids.len(),
            changed_left: changed(pl),
            changed_right: changed(pr),
            max_logit_diff,
            missed_ids,
            missed_in_prompt,
        });
    }

    // Same means: the same tokens can be drawn, with probabilities equal up
    // to float rounding, from logits penalised alike.
    let same = cmp.only_left.is_empty()
        && cmp.only_right.is_empty()
        && cmp.max_abs_diff <= SAME_TOLERANCE
        && row
            .penalty
            .as_ref()
            .is_none_or(|p| p.max_logit_diff <= SAME_TOLERANCE);
    row.verdict = if same {
        Verdict::Same
    } else {
        Verdict::Differs
    };
    if row.verdict == Verdict::Differs {
        let (reason, fix) = explain(fx, setting, params, (l, r), &cmp, window, &row);
        row.reason = Some(reason);
        row.fix = fix;
    }
    Ok(row)
}

/// Distinct in-vocabulary ids of the whole context that a last-`n` window
/// misses, and how many of them occur in the templated prompt.
fn missed(fx: &Fixture, window: Option<usize>) -> (usize, usize) {
    let Some(n) = window else { return (0, 0) };
    let v = fx.vocab_size() as i64;
    let ids = &fx.input_ids;
    let recent: std::collections::HashSet<i64> =
        ids[ids.len().saturating_sub(n)..].iter().copied().collect();
    let mut missed: Vec<i64> = ids
        .iter()
        .copied()
        .filter(|&t| (0..v).contains(&t) && !recent.contains(&t))
        .collect();
    missed.sort_unstable();
    missed.dedup();
    let prompt_len = fx.model.as_ref().map_or(0, |m| m.prompt_len);
    let prompt: std::collections::HashSet<i64> =
        ids[..prompt_len.min(ids.len())].iter().copied().collect();
    let in_prompt = missed.iter().filter(|t| prompt.contains(t)).count();
    (missed.len(), in_prompt)
}

/// The fix `translate` gives for the literal candle setup, in words: its
/// plain setup when that differs from the literal one (noting the exact one
/// when ties would still differ), else its exact setup with the closure.
fn fix_for(side: Side, setting: &Setting, params: &GenerationParams) -> Option<String> {
    if side != Side::Candle {
        return None;
    }
    let t = candle_adapter::translate(params).ok()?;
    let naive = naive_candle(&setting.kwargs);
    match t.exact {
        // The literal setup is already translate's best: nothing to change.
        Some(exact) if exact == naive => None,
        Some(exact) if t.candle != naive && !t.plain_is_exact => Some(format!(
            "use {} (exact even with ties at the k-th logit: {})",
            candle_setup(&t.candle),
            candle_setup(&exact)
        )),
        Some(exact) => Some(format!("use {}", candle_setup(&exact))),
        None => None,
    }
}

/// Why two sides differ, and the fix when there is one. Each clause is a
/// rule the sides are known to disagree on, checked against this row's data;
/// the fallback says plainly what differs when no known rule applies.
fn explain(
    fx: &Fixture,
    setting: &Setting,
    p: &GenerationParams,
    (l, r): (Side, Side),
    cmp: &Comparison,
    window: Option<usize>,
    row: &Row,
) -> (String, Option<String>) {
    let candle = [l, r].contains(&Side::Candle);
    let closure = [l, r].contains(&Side::CandleClosure);
    let spec = [l, r].contains(&Side::Spec);
    let other = if candle || closure {
        "candle"
    } else if spec {
        "the spec"
    } else {
        "the other side"
    };
    let top_k = p.top_k.filter(|&k| k != 0 && p.do_sample);
    let top_p = (p.do_sample && p.top_p < 1.0).then_some(p.top_p);
    let hf_kept = if l == Side::Hf {
        cmp.kept_left
    } else {
        cmp.kept_right
    };
    let sets_differ = !cmp.only_left.is_empty() || !cmp.only_right.is_empty();
    let mut why = Vec::new();
    if let Some(n) = window {
        let pen = row.penalty.as_ref();
        why.push(format!(
            "repeat window: candle penalises only the last {n} ids; {} ids that occur only earlier \
             ({} of them in the prompt) keep their logits (max |Δ logit| {:.3e})",
            pen.map_or(0, |x| x.missed_ids),
            pen.map_or(0, |x| x.missed_in_prompt),
            pen.map_or(0.0, |x| x.max_logit_diff),
        ));
    }
    if candle && !setting.kwargs.contains_key("top_k") && top_k == Some(50) {
        why.push(
            "default top-k 50: transformers adds top_k=50 when the kwargs don't set top_k; \
             the literal candle setup samples the whole vocabulary"
                .into(),
        );
    }
    let renormalisation = candle && top_k.is_some() && top_p.is_some();
    if let (true, Some(k), Some(pp)) = (renormalisation, top_k, top_p) {
        why.push(format!(
            "top-k then top-p: candle's TopKThenTopP compares p = {pp} with the raw mass of the \
             top {k} ({:.4}); transformers renormalises the top {k} first",
            top_k_mass(fx, p, k)
        ));
    }
    if let Some(k) = top_k
        && hf_kept > k
        && (candle || spec)
    {
        why.push(format!(
            "top-k tie: transformers keeps every token tied with the k-th ({hf_kept} for k = {k}); \
             {} keeps exactly {k}",
            if candle {
                "candle"
            } else {
                "the spec (smaller index first)"
            }
        ));
    }
    if top_p.is_some() && sets_differ && !renormalisation {
        let tied = cmp.only_left.iter().any(|a| {
            cmp.only_right
                .iter()
                .any(|b| fx.logits[a.id].to_bits() == fx.logits[b.id].to_bits())
        });
        why.push(if tied {
            format!(
                "top-p cut through tied logits: transformers keeps the tied tokens torch's sort \
                 leaves last, {other} the lower ids"
            )
        } else {
            format!(
                "top-p boundary: the cumulative mass lands on p within float rounding; transformers \
                 drops tokens whose ascending f32 cumulative mass is ≤ 1 − p, {other} keeps tokens \
                 until its own descending sum reaches p"
            )
        });
    }
    for (name, on) in [
        ("min-p", p.min_p.is_some()),
        ("typical", p.typical_p < 1.0),
        ("epsilon", 0.0 < p.epsilon_cutoff && p.epsilon_cutoff < 1.0),
        ("eta", 0.0 < p.eta_cutoff && p.eta_cutoff < 1.0),
    ] {
        if on && p.do_sample && (candle || closure) {
            why.push(format!("candle has no {name} sampling"));
        }
    }
    if why.is_empty() {
        why.push(if sets_differ {
            format!(
                "kept sets differ ({} tokens only {}, {} only {}) by no rule listed here",
                cmp.only_left.len(),
                l.name(),
                cmp.only_right.len(),
                r.name()
            )
        } else {
            format!(
                "same kept set, probabilities differ by up to {:.2e} (more than float rounding)",
                cmp.max_abs_diff
            )
        });
    }
    let fix = if window.is_some() {
        Some("pass the whole input_ids to apply_repeat_penalty".to_string())
    } else if candle {
        fix_for(Side::Candle, setting, p)
    } else {
        None
    };
    (why.join("; "), fix)
}

/// The raw (un-renormalised) probability mass of the k most likely tokens
/// after the penalty and temperature, as candle's TopKThenTopP measures it.
fn top_k_mass(fx: &Fixture, p: &GenerationParams, k: usize) -> f64 {
    let mut logits = fx.logits.clone();
    if p.repetition_penalty != 1.0 {
        hf_sampling::ops::repetition_penalty(&mut logits, &fx.input_ids, p.repetition_penalty);
    }
    let scaled: Vec<f32> = logits
        .iter()
        .map(|&x| (f64::from(x) / p.temperature) as f32)
        .collect();
    let mut probs = softmax_f64(&scaled);
    probs.sort_by(|a, b| b.total_cmp(a));
    probs.iter().take(k).sum()
}

// ---------------------------------------------------------------- text output

fn sci(x: Option<f64>) -> String {
    match x {
        None => "-".into(),
        Some(0.0) => "0".into(),
        Some(x) => format!("{x:.2e}"),
    }
}

fn write_text(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    let mut last_fixture = None;
    for row in &report.rows {
        if last_fixture != Some(&row.fixture) {
            if last_fixture.is_some() {
                writeln!(out)?;
            }
            writeln!(out, "{}: {}", printable(&row.fixture), row.context)?;
            writeln!(
                out,
                "  {:<12} {:<24} {:>12} {:>9} {:>9} {:>11} {:>8} {:>13}  verdict",
                "setting",
                "left:right",
                "kept L/R",
                "max|Δp|",
                "TV",
                "replayed",
                "p-value",
                "outside L/R",
            )?;
            last_fixture = Some(&row.fixture);
        }
        let pair = match row.repeat_window {
            Some(n) => format!("{}:{}[last {n}]", row.left, row.right),
            None => format!("{}:{}", row.left, row.right),
        };
        let kept = format!(
            "{}/{}",
            row.kept_left.map_or("-".into(), |k| k.to_string()),
            row.kept_right.map_or("-".into(), |k| k.to_string())
        );
        let (replayed, p_value, outside) = match &row.draws {
            Some(d) => (
                match d.replay_agree {
                    Some(a) => format!("{a}/{}", d.n),
                    None => format!("-/{}", d.n),
                },
                d.p_value.map_or("-".into(), |p| format!("{p:.3}")),
                format!("{}/{}", share(d.outside_left), share(d.outside_right)),
            ),
            None => ("-".into(), "-".into(), "-".into()),
        };
        let verdict = match row.verdict {
            Verdict::Same => "same",
            Verdict::Differs => "differs",
        };
        writeln!(
            out,
            "  {:<12} {:<24} {:>12} {:>9} {:>9} {:>11} {:>8} {:>13}  {}",
            row.setting,
            pair,
            kept,
            sci(row.max_abs_diff),
            sci(row.tv),
            replayed,
            p_value,
            outside,
            verdict
        )?;
        if let Some(setup) = &row.candle_setup
            && row.verdict == Verdict::Differs
        {
            writeln!(out, "      candle: {setup}")?;
        }
        if let Some(reason) = &row.reason {
            writeln!(out, "      why: {reason}")?;
        }
        if let Some(fix) = &row.fix {
            writeln!(out, "      fix: {fix}")?;
        }
        for (side, list, mass) in [
            (&row.left, &row.only_left, row.mass_only_left),
            (&row.right, &row.only_right, row.mass_only_right),
        ] {
            if !list.is_empty() {
                let shown: Vec<String> = list
                    .iter()
                    .map(|t| match &t.token {
                        Some(tok) => format!("{tok:?} ({}) {:.2e}", t.id, t.mass),
                        None => format!("id {} {:.2e}", t.id, t.mass),
                    })
                    .collect();
                writeln!(
                    out,
                    "      only {side} (mass {}): {}",
                    sci(mass),
                    shown.join(", ")
                )?;
            }
        }
        if let Some(p) = &row.penalty
            && (row.verdict == Verdict::Differs || row.right == Side::Candle.name())
        {
            writeln!(
                out,
                "      penalty: context {} ids, changed {} / {} logits, max |Δ logit| {}",
                p.context_len,
                p.changed_left,
                p.changed_right,
                sci(Some(p.max_logit_diff))
            )?;
        }
    }
    let s = &report.summary;
    writeln!(out)?;
    write!(
        out,
        "{} rows: {} same, {} differ.",
        s.rows, s.same, s.differs
    )?;
    if s.candle_draws > 0 {
        write!(
            out,
            " {} real candle draws, {} reproduced exactly by the replay.",
            s.candle_draws, s.replay_agree
        )?;
    }
    writeln!(out)?;
    if s.over_threshold > 0 {
        writeln!(out, "{} rows over the threshold.", s.over_threshold)?;
    }
    Ok(())
}

fn share(x: f64) -> String {
    if x == 0.0 {
        "0".into()
    } else {
        format!("{x:.1e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_in_metadata_are_escaped() {
        assert_eq!(printable("a\nb\u{1b}[31mc"), "a\\nb\\u{1b}[31mc");
        assert_eq!(printable("ĠAI \"quoted\""), "ĠAI \"quoted\"");
    }
}
