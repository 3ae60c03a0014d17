//! The text report: a table per fixture that fits 120 columns, with the
//! reasons, fixes and one-side-only tokens under the rows that differ.

use std::io::{self, Write};

use super::Side;
use super::schema::{Report, Verdict};

/// `s` with control characters escaped (`\n`, `\u{1b}`, ...): metadata from
/// a fixture file must not be able to forge report lines or drive a terminal.
pub(super) fn printable(s: &str) -> String {
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

fn sci(x: Option<f64>) -> String {
    match x {
        None => "-".into(),
        Some(0.0) => "0".into(),
        Some(x) => format!("{x:.2e}"),
    }
}

pub(super) fn write_text(report: &Report, out: &mut dyn Write) -> io::Result<()> {
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
