//! The text report: a table per fixture, its columns as wide as their
//! content (about 90 columns for the default report), and under each row
//! that differs the reason, the proven fix and the tokens only one side
//! keeps, wrapped at the terminal's width (100 columns when not a terminal).
//! A row with a decision float rounding could flip has `≈` after its verdict
//! and a `fragile:` line saying which.

use std::io::{self, Write};

use parity_core::text::one_line;

use super::schema::{Row, Summary, Verdict};
pub(crate) use super::view::pair_label;
use super::view::{RowView, sci};

/// Width to wrap detail lines at when standard output is not a terminal.
const DEFAULT_WIDTH: usize = 100;

/// Indent of the detail lines under a row.
const DETAIL: &str = "      ";

/// The width detail lines are wrapped at.
pub(crate) fn wrap_width() -> usize {
    use std::io::IsTerminal;
    // A terminal's width is read from $COLUMNS when the shell exports it.
    let columns = std::env::var("COLUMNS").ok().and_then(|c| c.parse().ok());
    match columns {
        Some(c) if io::stdout().is_terminal() => usize::max(c, 60),
        _ => DEFAULT_WIDTH,
    }
}

/// `n` token ids in words: "1 id", "24 ids".
pub(crate) fn ids(n: usize) -> String {
    if n == 1 {
        "1 id".to_string()
    } else {
        format!("{n} ids")
    }
}

fn share(x: f64) -> String {
    if x == 0.0 {
        "0".into()
    } else {
        format!("{x:.1e}")
    }
}

/// The table's cells for one row.
fn cells(row: &Row) -> [String; 8] {
    let pair = pair_label(row);
    let kept = format!(
        "{}/{}",
        row.kept_left.map_or("-".into(), |k| k.to_string()),
        row.kept_right.map_or("-".into(), |k| k.to_string())
    );
    let (replayed, p_value) = match &row.draws {
        Some(d) => (
            match d.replay_agree {
                Some(a) => format!("{a}/{}", d.n),
                None => format!("-/{}", d.n),
            },
            d.p_value.map_or("-".into(), |p| format!("{p:.3}")),
        ),
        None => ("-".into(), "-".into()),
    };
    let mut verdict = match row.verdict {
        Verdict::Same => "same",
        Verdict::Differs => "differs",
    }
    .to_string();
    if !row.fragile.is_empty() {
        verdict.push_str(FRAGILE_MARK);
    }
    [
        one_line(&row.setting).into_owned(),
        pair,
        kept,
        sci(row.max_abs_diff),
        sci(row.tv),
        replayed,
        p_value,
        verdict,
    ]
}

/// After the verdict of a row with a fragile decision.
const FRAGILE_MARK: &str = " ≈";

const HEADERS: [&str; 8] = [
    "setting", "pair", "kept L/R", "max|Δp|", "TV", "replayed", "p-value", "verdict",
];

/// Numeric columns are right-aligned.
const RIGHT: [bool; 8] = [false, false, true, true, true, true, true, false];

/// One fixture's rows as a table with their details.
pub(super) fn write_fixture(rows: &[Row], width: usize, out: &mut dyn Write) -> io::Result<()> {
    let Some(first) = rows.first() else {
        return Ok(());
    };
    wrapped(
        out,
        width,
        &format!("{}: ", one_line(&first.fixture)),
        2,
        &first.context,
    )?;
    let table: Vec<[String; 8]> = rows.iter().map(cells).collect();
    let mut widths = HEADERS.map(|h| h.chars().count());
    for line in &table {
        for (w, cell) in widths.iter_mut().zip(line) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let format_line = |line: [&str; 8]| {
        let mut s = String::from(" ");
        for (i, cell) in line.iter().enumerate() {
            let pad = widths[i].saturating_sub(cell.chars().count());
            s.push(' ');
            if RIGHT[i] {
                s.push_str(&" ".repeat(pad));
                s.push_str(cell);
            } else {
                s.push_str(cell);
                if i + 1 < line.len() {
                    s.push_str(&" ".repeat(pad));
                }
            }
            s.push(' ');
        }
        s.trim_end().to_string()
    };
    writeln!(out, "{}", format_line(HEADERS))?;
    for (row, line) in rows.iter().zip(&table) {
        let line: [&str; 8] = std::array::from_fn(|i| line[i].as_str());
        writeln!(out, "{}", format_line(line))?;
        write_details(row, rows, width, out)?;
    }
    Ok(())
}

/// `label: text` under a row, wrapped with a hanging indent.
fn detail(out: &mut dyn Write, width: usize, label: &str, text: &str) -> io::Result<()> {
    let first = format!("{DETAIL}{label}: ");
    let indent = first.chars().count();
    wrapped(out, width, &first, indent, text)
}

/// `first` then `text`, wrapped at spaces to `width` columns, continuation
/// lines indented by `indent` (a word longer than a line stands alone).
pub(crate) fn wrapped(
    out: &mut dyn Write,
    width: usize,
    first: &str,
    indent: usize,
    text: &str,
) -> io::Result<()> {
    let text = one_line(text);
    let words = text.split(' ').filter(|w| !w.is_empty());
    wrap_words(out, width, first, indent, words)
}

/// `first` then `words` separated by spaces, wrapped to `width` columns
/// between words (a word may hold spaces: a token's `" M" (372) 1.99e-3`
/// is never split, so the spaces of a token stay as they are).
pub(crate) fn wrap_words<'w>(
    out: &mut dyn Write,
    width: usize,
    first: &str,
    indent: usize,
    words: impl Iterator<Item = &'w str>,
) -> io::Result<()> {
    let mut line = first.to_string();
    let mut used = first.chars().count();
    let mut empty = true;
    for word in words {
        let n = word.chars().count();
        if !empty && used + 1 + n > width {
            writeln!(out, "{line}")?;
            line = " ".repeat(indent);
            used = indent;
            empty = true;
        }
        if !empty {
            line.push(' ');
            used += 1;
        }
        line.push_str(word);
        used += n;
        empty = false;
    }
    writeln!(out, "{line}")
}

/// `label: a, b, c` under a row, wrapped between items only.
fn detail_list(out: &mut dyn Write, width: usize, label: &str, items: &[String]) -> io::Result<()> {
    let first = format!("{DETAIL}{label}: ");
    let indent = first.chars().count();
    let words: Vec<String> = items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            if i + 1 < items.len() {
                format!("{item},")
            } else {
                item.clone()
            }
        })
        .collect();
    wrap_words(out, width, &first, indent, words.iter().map(String::as_str))
}

/// `setup: ...` under a row. A setup that is JSON (a server request) is
/// the same JSON with a space after every comma, `{"a":1, "b":[1, 2]}`, so
/// it wraps between values; any other setup as words.
fn setup_detail(out: &mut dyn Write, width: usize, setup: &str) -> io::Result<()> {
    fn spaced(v: &serde_json::Value) -> String {
        match v {
            serde_json::Value::Object(m) => {
                let fields: Vec<String> = m
                    .iter()
                    .map(|(k, v)| format!("{}:{}", serde_json::Value::from(k.as_str()), spaced(v)))
                    .collect();
                format!("{{{}}}", fields.join(", "))
            }
            serde_json::Value::Array(a) => {
                let items: Vec<String> = a.iter().map(spaced).collect();
                format!("[{}]", items.join(", "))
            }
            other => other.to_string(),
        }
    }
    let text = match serde_json::from_str::<serde_json::Value>(setup) {
        Ok(v @ serde_json::Value::Object(_)) => spaced(&v),
        _ => setup.to_string(),
    };
    let first = format!("{DETAIL}setup: ");
    let indent = first.chars().count();
    wrapped(out, width, &first, indent, &text)
}

fn write_details(row: &Row, rows: &[Row], width: usize, out: &mut dyn Write) -> io::Result<()> {
    let view = RowView::of(row, rows);
    if let Some(setup) = view.setup
        && view.differs
    {
        setup_detail(out, width, setup)?;
    }
    if let Some(why) = view.why {
        detail(out, width, "why", why)?;
    }
    if let Some(fix) = view.fix {
        detail(out, width, "fix", fix)?;
    }
    if let Some(d) = &row.draws
        && (d.outside_left > 0.0 || d.outside_right > 0.0)
    {
        detail(
            out,
            width,
            "draws",
            &format!(
                "{} of the real draws fall outside {}'s kept set, {} outside {}'s",
                share(d.outside_left),
                row.left,
                share(d.outside_right),
                row.right
            ),
        )?;
    }
    for only in &view.only {
        detail_list(
            out,
            width,
            &format!("only {} (mass {})", only.side, only.mass),
            &only.tokens,
        )?;
    }
    for f in &view.fragile {
        detail(out, width, "fragile", &f.line)?;
        detail_list(out, width, "  tokens", &f.tokens)?;
    }
    if let Some(penalty) = &view.penalty
        && (view.differs || view.penalty_when_same)
    {
        detail(out, width, "penalty", penalty)?;
    }
    Ok(())
}

/// The closing lines: counts, real draws, rows that fail the check.
pub(super) fn write_summary(s: &Summary, out: &mut dyn Write) -> io::Result<()> {
    let plural =
        |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    write!(
        out,
        "{}: {} same, {} differ",
        plural(s.rows, "row", "rows"),
        s.same,
        s.differs
    )?;
    write!(out, ".")?;
    if s.draws > 0 {
        write!(
            out,
            " {} real {} draws, {} reproduced exactly by the replay.",
            s.draws,
            s.drawn_by.join("/"),
            s.replay_agree
        )?;
    }
    writeln!(out)?;
    if s.differs_only_fragile > 0 {
        writeln!(
            out,
            "{} only where float rounding decides (≈; --ignore-fragile lets {} pass a check).",
            plural(s.differs_only_fragile, "row differs", "rows differ"),
            if s.differs_only_fragile == 1 {
                "it"
            } else {
                "them"
            }
        )?;
    }
    if s.over_threshold > 0 {
        writeln!(
            out,
            "{} the check.",
            plural(s.over_threshold, "row fails", "rows fail")
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(width: usize, first: &str, indent: usize, words: &[&str]) -> String {
        let mut out = Vec::new();
        wrap_words(&mut out, width, first, indent, words.iter().copied()).expect("a Vec");
        String::from_utf8(out).expect("utf-8")
    }

    fn text(width: usize, first: &str, indent: usize, s: &str) -> String {
        let mut out = Vec::new();
        wrapped(&mut out, width, first, indent, s).expect("a Vec");
        String::from_utf8(out).expect("utf-8")
    }

    #[test]
    fn a_line_exactly_as_wide_as_the_width_is_not_broken() {
        // "ab: one two" is 11 columns: it fits in 11, "three" does not.
        assert_eq!(
            words(11, "ab: ", 2, &["one", "two", "three"]),
            "ab: one two\n  three\n"
        );
        assert_eq!(
            words(10, "ab: ", 2, &["one", "two", "three"]),
            "ab: one\n  two\n  three\n"
        );
    }

    #[test]
    fn a_word_longer_than_a_line_stands_alone() {
        assert_eq!(words(5, "", 0, &["abcdefgh", "x"]), "abcdefgh\nx\n");
        // The first word goes on the first line however long `first` is.
        assert_eq!(words(3, "label: ", 4, &["a", "b"]), "label: a\n    b\n");
    }

    #[test]
    fn widths_count_characters_not_bytes() {
        // Two 2-character words and a space: 5 columns (9 bytes).
        assert_eq!(words(5, "", 0, &["ΔΔ", "ΔΔ"]), "ΔΔ ΔΔ\n");
        assert_eq!(words(4, "", 0, &["ΔΔ", "ΔΔ"]), "ΔΔ\nΔΔ\n");
    }

    #[test]
    fn a_word_with_spaces_is_never_split() {
        let token = "\" M\" (372) 1.99e-3";
        assert_eq!(
            words(20, "    only: ", 6, &["\"a\" (1) 2.00e-1,", token]),
            format!("    only: \"a\" (1) 2.00e-1,\n      {token}\n")
        );
    }

    #[test]
    fn wrapped_splits_at_spaces_and_escapes_control_characters() {
        // Runs of spaces collapse; a tab or newline is escaped, so it joins
        // its neighbours into one word and cannot forge a line.
        assert_eq!(text(100, "why: ", 2, "a  b\tc\nd"), "why: a b\\tc\\nd\n");
        assert_eq!(
            text(12, "why: ", 5, "one two three four"),
            "why: one two\n     three\n     four\n"
        );
    }

    #[test]
    fn ids_shares_and_figures_in_words() {
        assert_eq!(ids(0), "0 ids");
        assert_eq!(ids(1), "1 id");
        assert_eq!(ids(24), "24 ids");
        assert_eq!(share(0.0), "0");
        assert_eq!(share(0.25), "2.5e-1");
        assert_eq!(share(1.0), "1.0e0");
        assert_eq!(sci(None), "-");
        assert_eq!(sci(Some(0.0)), "0");
        assert_eq!(sci(Some(1.234e-5)), "1.23e-5");
    }

    #[test]
    fn a_pair_label_names_the_right_sides_variant() {
        let mut row = Row::example("hf", "hf-rust");
        assert_eq!(pair_label(&row), "hf:hf-rust");
        row.variant = Some("last 64".into());
        assert_eq!(pair_label(&row), "hf:hf-rust[last 64]");
    }

    fn summary(rows: usize, same: usize) -> Summary {
        Summary {
            rows,
            same,
            differs: rows - same,
            draws: 0,
            drawn_by: Vec::new(),
            replay_agree: 0,
            over_threshold: 0,
            fragile: 0,
            differs_only_fragile: 0,
        }
    }

    fn summary_text(s: &Summary) -> String {
        let mut out = Vec::new();
        write_summary(s, &mut out).expect("a Vec");
        String::from_utf8(out).expect("utf-8")
    }

    #[test]
    fn the_summary_counts_in_the_singular_and_the_plural() {
        assert_eq!(summary_text(&summary(1, 1)), "1 row: 1 same, 0 differ.\n");
        let s = Summary {
            draws: 2000,
            drawn_by: vec!["a".into(), "b".into()],
            replay_agree: 1999,
            differs_only_fragile: 1,
            over_threshold: 2,
            ..summary(5, 2)
        };
        assert_eq!(
            summary_text(&s),
            "5 rows: 2 same, 3 differ. 2000 real a/b draws, 1999 reproduced exactly by the replay.\n\
             1 row differs only where float rounding decides (≈; --ignore-fragile lets it pass a check).\n\
             2 rows fail the check.\n"
        );
        let s = Summary {
            differs_only_fragile: 2,
            over_threshold: 1,
            ..summary(3, 1)
        };
        assert_eq!(
            summary_text(&s),
            "3 rows: 1 same, 2 differ.\n\
             2 rows differ only where float rounding decides (≈; --ignore-fragile lets them pass a check).\n\
             1 row fails the check.\n"
        );
    }

    fn fixture_text(rows: &[Row], width: usize) -> String {
        let mut out = Vec::new();
        write_fixture(rows, width, &mut out).expect("a Vec");
        String::from_utf8(out).expect("utf-8")
    }

    #[test]
    fn no_rows_write_nothing() {
        assert_eq!(fixture_text(&[], 100), "");
    }

    #[test]
    fn a_table_aligns_its_columns_and_details_a_differing_row() {
        let same = Row::example("hf", "hf-rust");
        let differs = Row {
            setting: "k40".into(),
            kept_right: Some(40),
            max_abs_diff: Some(0.125),
            tv: None,
            verdict: Verdict::Differs,
            reason: Some("one two three four five six seven eight".into()),
            fix: Some("send top_k".into()),
            fragile: vec![super::super::schema::FragileRow {
                semantics: "hf".into(),
                kind: parity_core::FragileKind::TopKTie,
                tokens: vec![7],
                margin_ulps: 0,
                penalised: false,
                detail: "a tie".into(),
            }],
            ..Row::example("hf", "other")
        };
        let got = fixture_text(&[same, differs], 30);
        // Columns as wide as their widest cell, numbers right-aligned, the
        // fragile mark after the verdict; details only under the row that
        // differs, wrapped at 30 columns under their label.
        let want = [
            "fx: a test",
            "  setting  pair        kept L/R  max|Δp|  TV  replayed  p-value  verdict",
            "  s1       hf:hf-rust       3/3        0   0         -        -  same",
            "  k40      hf:other        3/40  1.25e-1   -         -        -  differs ≈",
            "      why: one two three four",
            "           five six seven",
            "           eight",
            "      fix: send top_k",
            "      fragile: hf top_k_tie (0",
            "               ulps): a tie",
            "        tokens: id 7",
        ];
        assert_eq!(got.lines().collect::<Vec<_>>(), want);
        assert!(got.ends_with('\n'));
    }
}
