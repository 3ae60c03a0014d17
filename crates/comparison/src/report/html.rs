//! `compare report --format html`: the report as one self-contained page.
//!
//! Everything is inline — styles, SVG charts, no script, no font, no
//! request — so the file opens offline and can be mailed (the default report
//! is about 0.9 MB). At the top the summary and a heatmap of TV per fixture
//! and setting (rows) and pair (columns); then each fixture as a collapsible
//! section (`<details>`), each row inside it with its figures, the reason
//! and fix, the fragile decisions, and a chart of both distributions over
//! the union of each side's most likely tokens ([`super::Row::top`]), where
//! tokens only one side can draw are highlighted.
//!
//! The charts are drawn by `plotters` through its SVG backend alone
//! (`default-features = false, features = ["svg_backend"]`): text is SVG
//! `<text>` in the page's sans-serif font, nothing is rasterised, and the
//! crate changes the features of no other dependency.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{self, Write};

use plotters::coord::ranged1d::{IntoSegmentedCoord, SegmentValue};
use plotters::prelude::*;

use super::schema::{Report, Row, Summary, Verdict};
use super::view::{RowView, pair_label, sci};

/// Chart width in pixels.
const CHART_WIDTH: u32 = 720;
/// Height per token in a chart.
const BAR_ROW: u32 = 18;
/// Colours of the left and right sides' bars, and of the band behind a
/// token only one side can draw.
const LEFT: RGBColor = RGBColor(0x1f, 0x77, 0xb4);
const RIGHT: RGBColor = RGBColor(0xff, 0x7f, 0x0e);
const ONLY: RGBColor = RGBColor(0xff, 0xe0, 0xe0);

const STYLE: &str = "
body{font-family:sans-serif;margin:1.5em;color:#222;max-width:1100px}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.5em}
table{border-collapse:collapse;font-size:.85em}
td,th{border:1px solid #ccc;padding:2px 6px;text-align:left;vertical-align:top}
.heat td.v{text-align:right;font-family:monospace}
.heat a{color:inherit;text-decoration:none}
details{margin:.3em 0}
details.fixture>summary{font-weight:bold;cursor:pointer}
details.row{margin-left:1.2em;border-left:3px solid #ddd;padding-left:.6em}
details.row.differs{border-left-color:#d62728}
details.row>summary{font-family:monospace;cursor:pointer}
.fragile{color:#8a5a00}
.legend span{display:inline-block;width:1em;height:.8em;margin:0 .3em 0 1em}
figure.chart{margin:.4em 0}
";

fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            _ => out.push(c),
        }
    }
    out
}

fn pair(row: &Row) -> String {
    pair_label(row)
}

fn verdict(row: &Row) -> &'static str {
    match row.verdict {
        Verdict::Same => "same",
        Verdict::Differs => "differs",
    }
}

/// The whole page.
pub(super) fn write_page(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    let mut page = String::new();
    page.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    page.push_str("<title>sampling-parity report</title><style>");
    page.push_str(STYLE);
    page.push_str("</style></head><body>\n<h1>sampling-parity report</h1>\n");
    summary(&mut page, &report.summary);
    heatmap(&mut page, &report.rows);
    let mut start = 0;
    while start < report.rows.len() {
        let name = &report.rows[start].fixture;
        let end = start
            + report.rows[start..]
                .iter()
                .take_while(|r| &r.fixture == name)
                .count();
        fixture(&mut page, &report.rows[start..end], start)?;
        start = end;
    }
    page.push_str("</body></html>\n");
    out.write_all(page.as_bytes())
}

fn summary(page: &mut String, s: &Summary) {
    let _ = write!(
        page,
        "<p id=\"summary\">{} rows: {} same, {} differ",
        s.rows, s.same, s.differs
    );
    if s.differs_only_fragile > 0 {
        let _ = write!(
            page,
            " ({} only where float rounding decides, ≈)",
            s.differs_only_fragile
        );
    }
    page.push('.');
    if s.draws > 0 {
        let _ = write!(
            page,
            " {} real {} draws, {} reproduced exactly by the replay.",
            s.draws,
            esc(&s.drawn_by.join("/")),
            s.replay_agree
        );
    }
    if s.over_threshold > 0 {
        let _ = write!(page, " <b>{} rows fail the check.</b>", s.over_threshold);
    }
    page.push_str("</p>\n");
}

/// Background colour for a TV: green when the row is `same`, from yellow
/// (TV 1e-5) to red (TV 1) on a log scale when it differs, grey without a
/// figure.
fn heat_colour(row: &Row) -> String {
    match (row.verdict, row.tv) {
        (_, None) => "#ddd".into(),
        (Verdict::Same, _) => "hsl(120,45%,85%)".into(),
        (Verdict::Differs, Some(tv)) => {
            let t = ((tv.max(1e-5).log10() + 5.0) / 5.0).clamp(0.0, 1.0);
            format!("hsl({:.0},85%,{:.0}%)", 55.0 * (1.0 - t), 80.0 - 25.0 * t)
        }
    }
}

fn heatmap(page: &mut String, rows: &[Row]) {
    let mut pairs: Vec<String> = Vec::new();
    let mut cells: BTreeMap<(usize, String), Vec<(String, usize)>> = BTreeMap::new();
    let mut order: Vec<(String, String)> = Vec::new();
    for (i, row) in rows.iter().enumerate() {
        let p = pair(row);
        if !pairs.contains(&p) {
            pairs.push(p.clone());
        }
        let key = (row.fixture.clone(), row.setting.clone());
        let index = match order.iter().position(|k| *k == key) {
            Some(x) => x,
            None => {
                order.push(key);
                order.len() - 1
            }
        };
        cells
            .entry((index, p))
            .or_default()
            .push((heat_colour(row), i));
    }
    page.push_str("<h2>Total variation per fixture, setting and pair</h2>\n");
    page.push_str("<table class=\"heat\"><tr><th>fixture</th><th>setting</th>");
    for p in &pairs {
        let _ = write!(page, "<th>{}</th>", esc(p));
    }
    page.push_str("</tr>\n");
    for (index, (fixture, setting)) in order.iter().enumerate() {
        let _ = write!(
            page,
            "<tr><td>{}</td><td>{}</td>",
            esc(fixture),
            esc(setting)
        );
        for p in &pairs {
            match cells.get(&(index, p.clone())).and_then(|v| v.first()) {
                Some((colour, i)) => {
                    let row = &rows[*i];
                    let mark = if row.fragile.is_empty() { "" } else { " ≈" };
                    let _ = write!(
                        page,
                        "<td class=\"v\" style=\"background:{colour}\" title=\"{} {} {}: {}\">\
                         <a href=\"#row-{i}\">{}{mark}</a></td>",
                        esc(fixture),
                        esc(setting),
                        esc(p),
                        verdict(row),
                        sci(row.tv)
                    );
                }
                None => page.push_str("<td></td>"),
            }
        }
        page.push_str("</tr>\n");
    }
    page.push_str("</table>\n");
}

fn fixture(page: &mut String, rows: &[Row], first: usize) -> io::Result<()> {
    let Some(head) = rows.first() else {
        return Ok(());
    };
    let differ = rows
        .iter()
        .filter(|r| r.verdict == Verdict::Differs)
        .count();
    let _ = writeln!(
        page,
        "<details class=\"fixture\" open><summary>{}: {} ({} rows, {} differ)</summary>",
        esc(&head.fixture),
        esc(&head.context),
        rows.len(),
        differ
    );
    for (k, row) in rows.iter().enumerate() {
        row_section(page, row, first + k)?;
    }
    page.push_str("</details>\n");
    Ok(())
}

fn row_section(page: &mut String, row: &Row, index: usize) -> io::Result<()> {
    let v = verdict(row);
    let mark = if row.fragile.is_empty() { "" } else { " ≈" };
    let open = if row.verdict == Verdict::Differs {
        " open"
    } else {
        ""
    };
    let _ = write!(
        page,
        "<details class=\"row {v}\" id=\"row-{index}\"{open}><summary>{} {} — TV {} — {v}{mark}\
         </summary>\n<table>",
        esc(&row.setting),
        esc(&pair(row)),
        sci(row.tv)
    );
    let kept = |k: Option<usize>| k.map_or("-".to_string(), |k| k.to_string());
    let mut line = |label: &str, value: String| {
        let _ = write!(page, "<tr><th>{label}</th><td>{value}</td></tr>");
    };
    line(
        "kept L/R",
        format!("{} / {}", kept(row.kept_left), kept(row.kept_right)),
    );
    line("max |Δp|", sci(row.max_abs_diff));
    line("TV", sci(row.tv));
    let view = RowView::of(row, &[]);
    if let Some(setup) = view.setup {
        line("setup", esc(setup));
    }
    if let Some(d) = &row.draws {
        line(
            "real draws",
            format!(
                "{} real draws (seed {}), {} replayed exactly; chi-square p-value {}; \
                 outside {}'s kept set {}, outside {}'s {}",
                d.n,
                d.seed,
                d.replay_agree.map_or("-".to_string(), |a| a.to_string()),
                d.p_value.map_or("-".to_string(), |p| format!("{p:.3}")),
                esc(&row.left),
                d.outside_left,
                esc(&row.right),
                d.outside_right
            ),
        );
    }
    if let Some(why) = view.why {
        line("why", esc(why));
    }
    if let Some(fix) = view.fix {
        line("fix", esc(fix));
    }
    for f in &view.fragile {
        line(
            "<span class=\"fragile\">fragile ≈</span>",
            format!("<span class=\"fragile\">{}</span>", esc(&f.line)),
        );
    }
    if let Some(penalty) = &view.penalty {
        line("penalty", esc(penalty));
    }
    page.push_str("</table>\n");
    let _ = writeln!(
        page,
        "<figure class=\"chart\"><figcaption class=\"legend\"><span style=\"background:#1f77b4\">\
         </span>{}<span style=\"background:#ff7f0e\"></span>{}<span style=\"background:#ffe0e0\">\
         </span>only one side can draw it</figcaption>",
        esc(&row.left),
        esc(&row.right)
    );
    page.push_str(&chart(row).map_err(io::Error::other)?);
    page.push_str("</figure>\n</details>\n");
    Ok(())
}

/// Both distributions over the row's top tokens as horizontal bars, one
/// band per token: the left side's bar above the right side's.
fn chart(row: &Row) -> Result<String, String> {
    let tokens = &row.top;
    let n = tokens.len().max(1);
    let height = 50 + BAR_ROW * n as u32;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (CHART_WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let max = tokens
            .iter()
            .map(|t| t.left.max(t.right))
            .fold(0.0f64, f64::max)
            .max(1e-12)
            * 1.05;
        let labels: Vec<String> = tokens.iter().map(|t| t.label()).collect();
        // Segment 0 is at the bottom: the most likely token goes on top.
        let at = |i: usize| n - 1 - i;
        let mut chart = ChartBuilder::on(&root)
            .margin(6)
            .x_label_area_size(28)
            .y_label_area_size(200)
            .build_cartesian_2d(0f64..max, (0..n).into_segmented())
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .disable_y_mesh()
            .y_labels(n)
            .y_label_formatter(&|v| match v {
                SegmentValue::CenterOf(j) if *j < n => {
                    labels.get(at(*j)).cloned().unwrap_or_default()
                }
                _ => String::new(),
            })
            .x_labels(6)
            .x_label_formatter(&|x| format!("{x:.2}"))
            .x_desc("probability")
            .draw()
            .map_err(|e| e.to_string())?;
        let only = tokens
            .iter()
            .enumerate()
            .filter(|(_, t)| (t.left > 0.0) != (t.right > 0.0))
            .map(|(i, _)| {
                Rectangle::new(
                    [
                        (0.0, SegmentValue::Exact(at(i))),
                        (max, SegmentValue::Exact(at(i) + 1)),
                    ],
                    ONLY.filled(),
                )
            });
        chart.draw_series(only).map_err(|e| e.to_string())?;
        let bars = tokens.iter().enumerate().flat_map(|(i, t)| {
            [
                Rectangle::new(
                    [
                        (0.0, SegmentValue::CenterOf(at(i))),
                        (t.left, SegmentValue::Exact(at(i) + 1)),
                    ],
                    LEFT.filled(),
                ),
                Rectangle::new(
                    [
                        (0.0, SegmentValue::Exact(at(i))),
                        (t.right, SegmentValue::CenterOf(at(i))),
                    ],
                    RIGHT.filled(),
                ),
            ]
        });
        chart.draw_series(bars).map_err(|e| e.to_string())?;
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_characters_are_escaped() {
        assert_eq!(
            esc(r#"<b a="1">&amp;</b>"#),
            "&lt;b a=&quot;1&quot;&gt;&amp;amp;&lt;/b&gt;"
        );
        assert_eq!(esc("plain ' text Δ"), "plain ' text Δ");
    }

    #[test]
    fn the_heat_runs_from_yellow_to_red_on_a_log_scale() {
        let colour = |verdict: Verdict, tv: Option<f64>| {
            heat_colour(&Row {
                verdict,
                tv,
                ..Row::example("hf", "x")
            })
        };
        assert_eq!(colour(Verdict::Differs, None), "#ddd");
        assert_eq!(colour(Verdict::Same, Some(1e-7)), "hsl(120,45%,85%)");
        // log10 TV from -5 to 0: hue 55 to 0, lightness 80% to 55%.
        assert_eq!(colour(Verdict::Differs, Some(1e-5)), "hsl(55,85%,80%)");
        assert_eq!(colour(Verdict::Differs, Some(1e-9)), "hsl(55,85%,80%)");
        assert_eq!(colour(Verdict::Differs, Some(1e-3)), "hsl(33,85%,70%)");
        assert_eq!(colour(Verdict::Differs, Some(1.0)), "hsl(0,85%,55%)");
    }
}
