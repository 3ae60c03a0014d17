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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::CheckArgs;

    fn report_args(check: CheckArgs) -> ReportArgs {
        ReportArgs {
            check,
            ..ReportArgs::default()
        }
    }

    fn row(tv: Option<f64>, max_abs_diff: Option<f64>, verdict: Verdict) -> Row {
        Row {
            tv,
            max_abs_diff,
            verdict,
            ..Row::example("hf", "other")
        }
    }

    #[test]
    fn no_threshold_fails_no_row() {
        let args = report_args(CheckArgs::default());
        assert!(!over(&row(Some(1.0), Some(1.0), Verdict::Differs), &args));
        assert!(!over(&row(None, None, Verdict::Differs), &args));
    }

    #[test]
    fn a_threshold_is_exceeded_strictly_and_by_a_missing_figure() {
        let args = report_args(CheckArgs {
            max_tv: Some(0.1),
            ..CheckArgs::default()
        });
        assert!(!over(&row(Some(0.1), Some(0.9), Verdict::Differs), &args));
        assert!(over(
            &row(Some(0.1000001), Some(0.0), Verdict::Differs),
            &args
        ));
        // A side failed: no TV, which exceeds any threshold.
        assert!(over(&row(None, Some(0.0), Verdict::Differs), &args));
        let args = report_args(CheckArgs {
            max_abs_diff: Some(0.0),
            ..CheckArgs::default()
        });
        assert!(!over(&row(Some(0.5), Some(0.0), Verdict::Same), &args));
        assert!(over(&row(Some(0.0), Some(1e-9), Verdict::Same), &args));
    }

    #[test]
    fn fail_on_differs_fails_a_row_under_every_threshold() {
        let args = report_args(CheckArgs {
            max_tv: Some(1.0),
            fail_on: Some(FailOn::Differs),
            ..CheckArgs::default()
        });
        assert!(over(&row(Some(1e-9), Some(1e-9), Verdict::Differs), &args));
        assert!(!over(&row(Some(1e-9), Some(1e-9), Verdict::Same), &args));
    }

    #[test]
    fn ignore_fragile_passes_only_a_wholly_fragile_row() {
        let args = report_args(CheckArgs {
            max_tv: Some(0.01),
            fail_on: Some(FailOn::Differs),
            ignore_fragile: true,
            ..CheckArgs::default()
        });
        let mut r = row(Some(0.5), Some(0.5), Verdict::Differs);
        assert!(over(&r, &args));
        r.only_fragile = true;
        assert!(!over(&r, &args));
        // Without the flag the same row fails.
        let strict = report_args(CheckArgs {
            ignore_fragile: false,
            ..args.check.clone()
        });
        assert!(over(&r, &strict));
    }

    #[test]
    fn the_summary_counts_rows_draws_and_engines_once_each() {
        let draws = |engine: &str, n: usize, agree: Option<usize>| super::super::schema::Draws {
            engine: engine.into(),
            n,
            replay_agree: agree,
            seed: 42,
            max_freq_dev: 0.0,
            p_value: None,
            outside_left: 0.0,
            outside_right: 0.0,
        };
        let mut rows = vec![
            row(Some(0.0), Some(0.0), Verdict::Same),
            row(Some(0.3), Some(0.2), Verdict::Differs),
            row(Some(0.01), Some(0.01), Verdict::Differs),
        ];
        rows[0].draws = Some(draws("b", 100, Some(100)));
        rows[1].draws = Some(draws("a", 50, None));
        rows[2].draws = Some(draws("b", 10, Some(9)));
        rows[2].only_fragile = true;
        rows[2].fragile = vec![super::super::schema::FragileRow {
            semantics: "hf".into(),
            kind: parity_core::FragileKind::MinP,
            tokens: vec![1],
            margin_ulps: 2,
            penalised: false,
            detail: String::new(),
        }];
        let s = summarise(
            &rows,
            &report_args(CheckArgs {
                max_tv: Some(0.005),
                ..CheckArgs::default()
            }),
        );
        assert_eq!((s.rows, s.same, s.differs), (3, 1, 2));
        assert_eq!((s.draws, s.replay_agree), (160, 109));
        assert_eq!(s.drawn_by, ["b", "a"]);
        assert_eq!((s.fragile, s.differs_only_fragile), (1, 1));
        assert_eq!(s.over_threshold, 2);
    }
}
