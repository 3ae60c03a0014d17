//! `compare check`: your own sampler's probabilities against a semantics.
//!
//! Each record carries logits, the semantics' own params (as `compare dist`
//! reads them), the context, and the probabilities your sampler gave for
//! those logits (`probs`, or `logprobs`). The semantics computes its
//! distribution; the two are compared with the report's metrics and its
//! verdict rule ([`crate::report::SAME_TOLERANCE`], the same kept set), with
//! the semantics' fragile decisions listed and the report's rule for a
//! difference that is only fragile. The answer is sparse: the figures, the
//! semantics' kept ids as ranges and the tokens only one side can draw; the
//! semantics' dense vector only when asked for.
//!
//! Records come as JSON lines ([`run`] on stdin) or as rows of binary arrays
//! (`--logits FILE --probs FILE`: `.npy` or plain safetensors,
//! [`parity_core::arrays`]). The Python package calls [`check`] and
//! [`check_rows`] directly.

use std::io::{self, BufRead, Write};

use anyhow::Context as _;
use parity_core::arrays::{self, Row, Rows};
use parity_core::jsonl::{self, Summary};
use parity_core::{
    AnySemantics, Comparison, Context, Distribution, Logits, Prepared, Record, TokenMass,
};
use serde::{Deserialize, Serialize};

use crate::Engines;
use crate::cli::{CheckRecordsArgs, Format};
use crate::report::rows::{fragile_row, only_fragile, verdict};
use crate::report::{FragileRow, SAME_TOLERANCE, Verdict};

/// How far the user's probabilities may sum from 1. Float32 softmaxes of
/// real vocabularies sum within about 1e-6 of 1; a sum further off is not a
/// distribution (logits or unnormalised weights passed by mistake).
pub const SUM_TOLERANCE: f64 = 1e-3;

/// Tokens the explanation names on each side (the lists hold all of them).
const NAMED: usize = 5;

/// Which numbers the user gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Given {
    /// Probabilities.
    Probs,
    /// Natural logarithms of probabilities.
    Logprobs,
}

impl Given {
    /// The record field (and Python keyword) that holds them.
    pub fn field(self) -> &'static str {
        match self {
            Self::Probs => "probs",
            Self::Logprobs => "logprobs",
        }
    }
}

/// The user's numbers as probabilities: `vocab` entries, each in [0, 1]
/// (from logprobs: exp, `-inf` giving 0), summing to 1 within
/// [`SUM_TOLERANCE`]. Errors name the field and index and quote the value.
pub fn your_probs(values: Vec<f64>, given: Given, vocab: usize) -> Result<Vec<f64>, String> {
    let field = given.field();
    if values.len() != vocab {
        return Err(format!(
            "`{field}` has {} entries, but there are {vocab} logits",
            values.len()
        ));
    }
    let probs: Vec<f64> = match given {
        Given::Probs => values,
        Given::Logprobs => values.into_iter().map(f64::exp).collect(),
    };
    if let Some(i) = probs
        .iter()
        .position(|p| !(p.is_finite() && (0.0..=1.0 + SUM_TOLERANCE).contains(p)))
    {
        let what = match given {
            Given::Probs => format!("`probs[{i}]` = {} is not a probability", probs[i]),
            Given::Logprobs => format!(
                "`logprobs[{i}]` = {} is not a log-probability (at most 0, or -inf)",
                probs[i].ln()
            ),
        };
        return Err(what);
    }
    let sum: f64 = probs.iter().sum();
    if (sum - 1.0).abs() > SUM_TOLERANCE {
        return Err(format!(
            "`{field}` sum{} to {sum}, not 1 (within {SUM_TOLERANCE:e}): logits or unnormalised \
             weights?",
            if given == Given::Logprobs {
                " (as probabilities)"
            } else {
                ""
            }
        ));
    }
    Ok(probs)
}

/// A token and the probability the side that keeps it gives it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Mass {
    /// Token id.
    pub id: usize,
    /// Its probability on the side that keeps it.
    pub p: f64,
}

impl From<&TokenMass> for Mass {
    fn from(t: &TokenMass) -> Self {
        Self {
            id: t.id,
            p: t.mass,
        }
    }
}

/// One record checked: the answer `compare check` prints per record.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Checked {
    /// The semantics checked against.
    pub semantics: String,
    /// Vocabulary size.
    pub vocab: usize,
    /// `same`: the same tokens can be drawn, with probabilities within
    /// float rounding ([`SAME_TOLERANCE`]), as in `compare report`.
    pub verdict: Verdict,
    /// Total variation distance.
    pub tv: f64,
    /// max over tokens of |p_yours − p_semantics|.
    pub max_abs_diff: f64,
    /// Tokens your probabilities keep (p > 0).
    pub kept_yours: usize,
    /// Tokens the semantics keeps.
    pub kept_semantics: usize,
    /// The semantics' kept ids as half-open ranges `[start, end)` (an
    /// unfiltered distribution is `[[0, V]]`); yours is this with
    /// `only_yours` added and `only_semantics` taken away.
    pub kept: Vec<[usize; 2]>,
    /// Tokens only your sampler can draw, heaviest first (all of them).
    pub only_yours: Vec<Mass>,
    /// Tokens only the semantics can draw, heaviest first (all of them).
    pub only_semantics: Vec<Mass>,
    /// The semantics' decisions on these logits that float rounding could flip.
    pub fragile: Vec<FragileRow>,
    /// Whether every token only one side keeps is one of those decisions'
    /// (`--ignore-fragile` passes such a record).
    pub only_fragile: bool,
    /// What differs, in words; absent when the verdict is `same`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explanation: Option<String>,
    /// The semantics' whole distribution (only with `--dense`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probs: Option<Vec<f64>>,
}

impl Checked {
    /// Whether a check fails on this record (`ignore_fragile`: a difference
    /// that is only fragile passes).
    pub fn fails(&self, ignore_fragile: bool) -> bool {
        self.verdict == Verdict::Differs && !(ignore_fragile && self.only_fragile)
    }
}

/// A checked record and, when kept, the semantics' distribution.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The answer.
    pub checked: Checked,
    /// The semantics' distribution (kept only when asked for).
    pub distribution: Option<Distribution>,
}

/// Checks `yours` (probabilities, as [`your_probs`] gives them) against
/// `semantics` (params parsed) on these logits and context.
pub fn check(
    semantics: &dyn Prepared,
    logits: &Logits,
    context: &Context<'_>,
    yours: &[f64],
    keep_distribution: bool,
) -> Result<Outcome, String> {
    let name = semantics.name();
    let (dist, fragile) = semantics
        .distribution_and_fragile(logits, context)
        .map_err(|e| e.to_string())?;
    let cmp = Comparison::new(dist.probs(), yours).map_err(|e| e.to_string())?;
    let fragile: Vec<FragileRow> = fragile.into_iter().map(|f| fragile_row(name, f)).collect();
    let verdict = verdict(&cmp, None);
    let only_fragile = verdict == Verdict::Differs && only_fragile(&cmp, &fragile, None);
    let explanation =
        (verdict == Verdict::Differs).then(|| explain(name, &cmp, &fragile, only_fragile));
    let checked = Checked {
        semantics: name.to_string(),
        vocab: yours.len(),
        verdict,
        tv: cmp.tv,
        max_abs_diff: cmp.max_abs_diff,
        kept_yours: cmp.kept_right,
        kept_semantics: cmp.kept_left,
        kept: ranges(dist.kept()),
        only_yours: cmp.only_right.iter().map(Mass::from).collect(),
        only_semantics: cmp.only_left.iter().map(Mass::from).collect(),
        fragile,
        only_fragile,
        explanation,
        probs: None,
    };
    Ok(Outcome {
        checked,
        distribution: keep_distribution.then_some(dist),
    })
}

/// One row of a batch: logits, context and your numbers.
pub struct Item<'a> {
    /// The logits (f32 or f64, as given).
    pub logits: Row<'a>,
    /// Your numbers for them.
    pub yours: Row<'a>,
}

/// [`check`] on every row, on every core (rayon); each row's answer or its
/// error, in order. `context` is every row's.
pub fn check_rows(
    semantics: &dyn Prepared,
    items: &[Item<'_>],
    given: Given,
    context: &Context<'_>,
    keep_distribution: bool,
) -> Vec<Result<Outcome, String>> {
    use rayon::prelude::*;
    items
        .par_iter()
        .map(|item| {
            let logits = Logits::from_f64(item.logits.to_f64())?;
            let yours = your_probs(item.yours.to_f64(), given, logits.len())?;
            check(semantics, &logits, context, &yours, keep_distribution)
        })
        .collect()
}

/// Sorted ids as half-open ranges.
fn ranges(ids: &[usize]) -> Vec<[usize; 2]> {
    let mut out: Vec<[usize; 2]> = Vec::new();
    for &id in ids {
        match out.last_mut() {
            Some(last) if last[1] == id => last[1] = id + 1,
            _ => out.push([id, id + 1]),
        }
    }
    out
}

/// What differs, plainly: the tokens only one side can draw (named), or how
/// far the probabilities are apart, and whether float rounding could explain it.
fn explain(name: &str, cmp: &Comparison, fragile: &[FragileRow], only_fragile: bool) -> String {
    let listed = |list: &[TokenMass]| {
        let mut text: Vec<String> = list
            .iter()
            .take(NAMED)
            .map(|t| format!("token {} (p {:.3e})", t.id, t.mass))
            .collect();
        if list.len() > NAMED {
            text.push(format!("and {} more", list.len() - NAMED));
        }
        text.join(", ")
    };
    let mut parts = Vec::new();
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    if !cmp.only_right.is_empty() {
        parts.push(format!(
            "your sampler can draw {} token{} {name} never draws: {} ({:.3e} of your mass)",
            cmp.only_right.len(),
            plural(cmp.only_right.len()),
            listed(&cmp.only_right),
            cmp.mass_only_right()
        ));
    }
    if !cmp.only_left.is_empty() {
        parts.push(format!(
            "{name} can draw {} token{} your sampler never draws: {} ({:.3e} of {name}'s mass)",
            cmp.only_left.len(),
            plural(cmp.only_left.len()),
            listed(&cmp.only_left),
            cmp.mass_only_left()
        ));
    }
    if parts.is_empty() {
        parts.push(format!(
            "the same {} tokens are kept, but their probabilities differ by up to {:.3e} (more \
             than float rounding, {SAME_TOLERANCE:e})",
            cmp.kept_left, cmp.max_abs_diff
        ));
    }
    let mut text = format!("differs from {name}: {}", parts.join("; "));
    text.push_str(&format!(
        " (TV {:.3e}, max |Δp| {:.3e})",
        cmp.tv, cmp.max_abs_diff
    ));
    if only_fragile {
        let details: Vec<&str> = fragile.iter().map(|f| f.detail.as_str()).collect();
        text.push_str(&format!(
            "; every such token sits on a decision float rounding could flip ({}), so another \
             summation order can land either way",
            details.join("; ")
        ));
    }
    text
}

/// A resolved `compare check`: row files given on the command line, or
/// records on stdin (each with its own params and context).
enum Plan<'s> {
    /// `--logits FILE` with `--probs FILE` or `--logprobs FILE`.
    Files {
        prepared: Box<dyn Prepared + 's>,
        given: Given,
        logits: Rows,
        yours: Rows,
        /// `--input-ids` (checked with `--prompt-len` as a context).
        input_ids: Vec<i64>,
    },
    /// JSON lines on stdin.
    Records,
}

impl<'s> Plan<'s> {
    fn resolve(args: &CheckRecordsArgs, semantics: &'s dyn AnySemantics) -> anyhow::Result<Self> {
        let Some(logits_arg) = &args.logits else {
            for (flag, given) in [
                ("--probs", args.probs.is_some()),
                ("--logprobs", args.logprobs.is_some()),
                ("--params", args.params.is_some()),
                ("--input-ids", args.input_ids.is_some()),
                ("--prompt-len", args.prompt_len.is_some()),
            ] {
                anyhow::ensure!(
                    !given,
                    "{flag} goes with --logits FILE (records on stdin carry their own fields)"
                );
            }
            return Ok(Self::Records);
        };
        let params = match &args.params {
            Some(text) => crate::json_object_arg("--params", text)?,
            None => serde_json::Map::new(),
        };
        let prepared = semantics
            .prepare(&params)
            .map_err(|e| anyhow::anyhow!("--params: {e}"))?;
        let (given, yours_arg) = match (&args.probs, &args.logprobs) {
            (Some(p), None) => (Given::Probs, p),
            (None, Some(l)) => (Given::Logprobs, l),
            _ => anyhow::bail!("--logits needs --probs FILE or --logprobs FILE"),
        };
        let logits = read_rows("--logits", logits_arg)?;
        let yours = read_rows(&format!("--{}", given.field()), yours_arg)?;
        anyhow::ensure!(
            logits.rows == yours.rows,
            "--logits {} has {} rows, --{} {} has {}: one row of yours per row of logits",
            logits_arg,
            logits.rows,
            given.field(),
            yours_arg,
            yours.rows
        );
        let input_ids: Vec<i64> = match &args.input_ids {
            Some(text) => serde_json::from_str(text)
                .with_context(|| format!("--input-ids is not a JSON array of integers: {text}"))?,
            None => Vec::new(),
        };
        Context::new(&input_ids, args.prompt_len)?;
        Ok(Self::Files {
            prepared,
            given,
            logits,
            yours,
            input_ids,
        })
    }
}

/// Runs `compare check`: records from stdin (JSON lines), or rows of the
/// binary files the args name. Returns how it went and how many records fail
/// the check.
pub fn run<R: BufRead, W: Write, E: Write>(
    args: &CheckRecordsArgs,
    engines: &Engines,
    input: R,
    mut out: W,
    mut err: E,
) -> anyhow::Result<(Summary, usize)> {
    let semantics = engines.find(&args.semantics)?;
    let plan = Plan::resolve(args, semantics)?;
    let mut failing = 0usize;
    let mut emit = |answer: &mut Vec<u8>, number: usize, outcome: Outcome| {
        let mut checked = outcome.checked;
        failing += usize::from(checked.fails(args.ignore_fragile));
        checked.probs = outcome.distribution.map(Distribution::into_probs);
        write_checked(answer, args.format, number, &checked)
    };
    if let Plan::Files {
        prepared,
        given,
        logits,
        yours,
        input_ids,
    } = plan
    {
        let context = Context::new(&input_ids, args.prompt_len)?;
        let items: Vec<Item<'_>> = (0..logits.rows)
            .map(|i| Item {
                logits: logits.row(i),
                yours: yours.row(i),
            })
            .collect();
        let mut summary = Summary {
            records: 0,
            failed: 0,
            closed: false,
        };
        // In chunks, so a long file streams and memory stays bounded.
        let chunk = 4 * rayon::current_num_threads().max(1);
        for (c, items) in items.chunks(chunk).enumerate() {
            for (k, result) in check_rows(&*prepared, items, given, &context, args.dense)
                .into_iter()
                .enumerate()
            {
                let number = c * chunk + k + 1;
                summary.records += 1;
                let mut answer = Vec::new();
                let written = match result.and_then(|o| emit(&mut answer, number, o)) {
                    Ok(()) => out.write_all(&answer).and_then(|()| out.write_all(b"\n")),
                    Err(message) => {
                        summary.failed += 1;
                        let _ = writeln!(err, "error: record {number}: {message}");
                        serde_json::to_writer(
                            &mut out,
                            &serde_json::json!({ "record": number, "error": message }),
                        )
                        .map_err(io::Error::from)
                        .and_then(|()| out.write_all(b"\n"))
                    }
                };
                match written {
                    Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
                        summary.closed = true;
                        return Ok((summary, failing));
                    }
                    other => other?,
                }
            }
        }
        out.flush()?;
        return Ok((summary, failing));
    }
    let mut number = 0usize;
    let summary = jsonl::drive(input, out, err, "error: ", |line, answer| {
        number += 1;
        let record = Record::parse_with_probs(line)?;
        let logits = record.logits.to_logits()?;
        let (given, values) = match (&record.probs, &record.logprobs) {
            (Some(p), None) => (Given::Probs, p),
            (None, Some(l)) => (Given::Logprobs, l),
            (Some(_), Some(_)) => {
                return Err("give `probs` or `logprobs`, not both".into());
            }
            (None, None) => {
                return Err(
                    "a check record carries your sampler's `probs` (or `logprobs`) beside its \
                     `logits` and `params`"
                        .into(),
                );
            }
        };
        let yours = your_probs(values.to_f64(given.field())?, given, logits.len())?;
        let input_ids = record.input_ids()?;
        let context = Context::new(&input_ids, record.prompt_len()?).map_err(|e| e.to_string())?;
        let prepared = semantics
            .prepare(&record.params)
            .map_err(|e| e.to_string())?;
        let outcome = check(&*prepared, &logits, &context, &yours, args.dense)?;
        emit(answer, number, outcome)
    })?;
    Ok((summary, failing))
}

/// `FILE` or `FILE:TENSOR` (a safetensors tensor's name), read.
fn read_rows(flag: &str, arg: &str) -> anyhow::Result<Rows> {
    let path = std::path::Path::new(arg);
    let (path, tensor) = if path.exists() {
        (path, None)
    } else {
        match arg.rsplit_once(':') {
            Some((file, name)) => (std::path::Path::new(file), Some(name)),
            None => (path, None),
        }
    };
    arrays::read(path, tensor).with_context(|| flag.to_string())
}

/// One record's answer line: `{"record": N, ...}` ([`Checked`]) or a line
/// of text.
fn write_checked(
    answer: &mut Vec<u8>,
    format: Format,
    number: usize,
    checked: &Checked,
) -> Result<(), String> {
    match format {
        Format::Json => serde_json::to_writer(
            &mut *answer,
            &Answer {
                record: number,
                checked,
            },
        )
        .map_err(|e| e.to_string()),
        Format::Text => {
            let verdict = match checked.verdict {
                Verdict::Same => "same",
                Verdict::Differs => "differs",
            };
            answer.extend_from_slice(
                format!(
                    "record {number}: {verdict} against {}  kept {}/{}  max|Δp| {:.2e}  TV {:.2e}{}",
                    checked.semantics,
                    checked.kept_yours,
                    checked.kept_semantics,
                    checked.max_abs_diff,
                    checked.tv,
                    if checked.fragile.is_empty() { "" } else { " ≈" },
                )
                .as_bytes(),
            );
            if let Some(why) = &checked.explanation {
                answer.push(b'\n');
                let mut lines = Vec::new();
                crate::report::text::wrapped(
                    &mut lines,
                    crate::report::text::wrap_width(),
                    "  ",
                    4,
                    why,
                )
                .map_err(|e| e.to_string())?;
                // `wrapped` ends its last line; the record's answer does not.
                lines.pop();
                answer.extend_from_slice(&lines);
            }
            Ok(())
        }
    }
}

/// One answer line of `compare check --format json`: the record's number and
/// what [`Checked`] holds.
#[derive(Serialize, schemars::JsonSchema)]
struct Answer<'a> {
    /// The record's number, counting from 1.
    record: usize,
    #[serde(flatten)]
    checked: &'a Checked,
}

/// The JSON Schema of one `compare check --format json` line
/// ([`crate::json_schema`]).
pub(crate) fn json_schema() -> schemars::Schema {
    schemars::schema_for!(crate::json_schema::Line<Answer<'static>>)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_of_kept_ids() {
        assert_eq!(ranges(&[0, 1, 2, 5, 7, 8]), vec![[0, 3], [5, 6], [7, 9]]);
        assert!(ranges(&[]).is_empty());
    }

    #[test]
    fn your_numbers_must_be_a_distribution() {
        assert_eq!(
            your_probs(vec![0.5], Given::Probs, 2).unwrap_err(),
            "`probs` has 1 entries, but there are 2 logits"
        );
        assert_eq!(
            your_probs(vec![0.5, -0.5], Given::Probs, 2).unwrap_err(),
            "`probs[1]` = -0.5 is not a probability"
        );
        assert_eq!(
            your_probs(vec![3.0, 2.0], Given::Probs, 2).unwrap_err(),
            "`probs[0]` = 3 is not a probability"
        );
        let err = your_probs(vec![0.5, 0.25], Given::Probs, 2).unwrap_err();
        assert!(err.starts_with("`probs` sum to 0.75, not 1"), "{err}");
        let p = your_probs(vec![0.0, f64::NEG_INFINITY], Given::Logprobs, 2).expect("valid");
        assert_eq!(p, vec![1.0, 0.0]);
        let err = your_probs(vec![1.0, f64::NEG_INFINITY], Given::Logprobs, 2).unwrap_err();
        assert!(
            err.starts_with("`logprobs[0]` = 1 is not a log-probability"),
            "{err}"
        );
    }
}
