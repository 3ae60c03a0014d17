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
//!
//! Here: running the rows and the metrics; `sides` computes each semantics'
//! distribution, `explain` says why two differ, `schema` is the JSON wire
//! format and `text` the table for people.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::io::{self, Write};
use std::path::PathBuf;

use anyhow::{Context, bail};
use candle_adapter::VerifyOptions;
use hf_sampling::GenerationParams;
use parity_core::fixture::{self, Fixture, FixtureKind, Setting};
use parity_core::{Comparison, Vocab};

use crate::cli::{Format, ReportArgs};

mod explain;
mod schema;
mod sides;
mod text;

pub use schema::{Draws, Penalty, Report, Row, Summary, TokenRow, Verdict};
pub use sides::naive_candle;

use explain::{explain, fix_for};
use sides::{Dist, side_dist};
use text::{printable, write_text};

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

/// The finished report.
pub struct Outcome {
    /// The report.
    pub report: Report,
}

impl Outcome {
    /// Any row over `--max-tv` / `--max-abs-diff` (exit status 1).
    pub fn over_threshold(&self) -> bool {
        self.report.summary.over_threshold > 0
    }

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
            Some(m) => Some(match vocabs.entry(m.vocab.clone()) {
                Entry::Occupied(e) => &*e.into_mut(),
                Entry::Vacant(e) => &*e.insert(Vocab::load(&m.vocab)?),
            }),
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
