//! Counts over the rows, and which rows cross the user's thresholds.

use super::schema::{Row, Summary, Verdict};
use crate::cli::{FailOn, ReportArgs};

/// Whether a row fails the check: over `--max-tv` / `--max-abs-diff` (a row
/// with no figure, because a side failed, exceeds any threshold), or not
/// `same` under `--fail-on differs`; never, under `--ignore-fragile`, a row
/// whose whole difference is a decision float rounding could flip.
fn over(row: &Row, args: &ReportArgs) -> bool {
    if args.check.ignore_fragile && row.only_fragile {
        return false;
    }
    if args.check.fail_on == Some(FailOn::Differs) && row.verdict != Verdict::Same {
        return true;
    }
    let exceeds = |value: Option<f64>, limit: Option<f64>| match limit {
        Some(limit) => value.is_none_or(|v| v > limit),
        None => false,
    };
    exceeds(row.tv, args.check.max_tv) || exceeds(row.max_abs_diff, args.check.max_abs_diff)
}

/// The summary of `rows`.
pub(super) fn summarise(rows: &[Row], args: &ReportArgs) -> Summary {
    Summary {
        rows: rows.len(),
        same: rows.iter().filter(|r| r.verdict == Verdict::Same).count(),
        differs: rows
            .iter()
            .filter(|r| r.verdict == Verdict::Differs)
            .count(),
        draws: rows
            .iter()
            .filter_map(|r| r.draws.as_ref())
            .map(|d| d.n)
            .sum(),
        drawn_by: rows
            .iter()
            .filter_map(|r| r.draws.as_ref())
            .fold(Vec::new(), |mut names, d| {
                if !names.contains(&d.engine) {
                    names.push(d.engine.clone());
                }
                names
            }),
        replay_agree: rows
            .iter()
            .filter_map(|r| r.draws.as_ref().and_then(|d| d.replay_agree))
            .sum(),
        over_threshold: rows.iter().filter(|r| over(r, args)).count(),
        fragile: rows.iter().filter(|r| !r.fragile.is_empty()).count(),
        differs_only_fragile: rows.iter().filter(|r| r.only_fragile).count(),
    }
}
