//! The report for people (`--format text`).

use std::io::{self, Write};

use serde_json::Value;

use crate::{Report, Verdict};

/// `label` then `text` broken after commas into lines of at most 100
/// characters, continued under the text.
fn wrapped(out: &mut dyn Write, label: &str, text: &str) -> io::Result<()> {
    const WIDTH: usize = 100;
    let indent = " ".repeat(label.chars().count());
    let mut line = label.to_string();
    let mut fresh = true;
    for piece in text.split_inclusive(',') {
        if !fresh && line.chars().count() + piece.chars().count() > WIDTH {
            writeln!(out, "{line}")?;
            line = indent.clone();
        }
        line.push_str(piece);
        fresh = false;
    }
    writeln!(out, "{line}")
}

fn figure(x: Option<f64>) -> String {
    x.map_or_else(|| "-".to_string(), |x| format!("{x:.2e}"))
}

/// Writes `report` as text: per request, the mode, the verdicts and each
/// candidate's score and effective params.
pub fn write_text(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    writeln!(
        out,
        "server: {} (--api {}{}){}",
        report.server,
        report.api.name(),
        report
            .model
            .as_ref()
            .map_or(String::new(), |m| format!(", model {m}")),
        if report.replayed { " [replayed]" } else { "" }
    )?;
    let revealed = match report.revealed {
        0 => String::new(),
        n => format!(" (and {n} more named by the draws, with their raw log-probabilities)"),
    };
    match (&report.n_vocab, &report.prompt_ids) {
        (Some(n), Some(ids)) => writeln!(
            out,
            "vocabulary: {n} tokens; prompt: {} tokens; raw distribution: {} entries{revealed}",
            ids.len(),
            report.raw_entries
        )?,
        (n_vocab, ids) => writeln!(
            out,
            "raw distribution: {} entries{revealed} ({}; prompt ids {})",
            report.raw_entries,
            n_vocab.map_or("vocabulary size not given".to_string(), |n| format!(
                "vocabulary: {n} tokens"
            )),
            if ids.is_some() {
                "known"
            } else {
                "unknown: penalties see no context"
            }
        )?,
    }
    for p in &report.probes {
        writeln!(out)?;
        writeln!(out, "request: {}", Value::Object(p.request.clone()))?;
        match p.samples {
            Some(n) => writeln!(
                out,
                "  mode: samples ({n} draws, {} distinct tokens); tail mass {:.1e}",
                p.server_kept, p.tail_mass
            )?,
            None => writeln!(
                out,
                "  mode: post-sampling ({} tokens kept by the server); tail mass {:.1e}",
                p.server_kept, p.tail_mass
            )?,
        }
        if p.tail_cell {
            writeln!(
                out,
                "  truncated list: the unnamed tokens are one cell; candidates run under every tail the list allows, concentrated to spread"
            )?;
        }
        // "explains" needs every other candidate ruled out (or unable to
        // differ); short of that the evidence is consistent with some and
        // cannot tell them from others.
        match (p.explained_by.is_empty(), p.consistent_with.is_empty()) {
            (false, _) => wrapped(out, "  explained by: ", &p.explained_by.join(", "))?,
            (true, false) => writeln!(
                out,
                "  explained by: no candidate alone (the evidence cannot tell the candidates below apart)"
            )?,
            (true, true) => writeln!(out, "  explained by: no candidate (undecided)")?,
        }
        if !p.consistent_with.is_empty() {
            wrapped(out, "  consistent with: ", &p.consistent_with.join(", "))?;
        }
        if !p.not_ruled_out.is_empty() {
            wrapped(out, "  not ruled out: ", &p.not_ruled_out.join(", "))?;
        }
        if let Some(pair) = &p.closest {
            match p.draws_needed {
                Some(n) => writeln!(
                    out,
                    "  power: {} draws tell every pair of different candidates apart (hardest: {})",
                    n,
                    pair.join(" vs ")
                )?,
                None => writeln!(
                    out,
                    "  power: no number of draws tells {} apart",
                    pair.join(" and ")
                )?,
            }
        }
        if p.hidden_pairs > 0 {
            writeln!(
                out,
                "  power: {} pairs of candidates may differ only on tokens the list does not name: no number of draws tells them apart on it",
                p.hidden_pairs
            )?;
        }
        for note in &p.notes {
            wrapped(out, "  note: ", note)?;
        }
        match (&p.tv_to_transformers, &p.transformers_error) {
            (Some(tv), _) => writeln!(out, "  TV to transformers generate(**request): {tv:.3e}")?,
            (None, Some(e)) => writeln!(out, "  TV to transformers: - ({e})")?,
            (None, None) => writeln!(out, "  TV to transformers: -")?,
        }
        let width = p
            .candidates
            .iter()
            .map(|c| c.label().chars().count())
            .max()
            .unwrap_or(9)
            .max(9);
        let score = if p.samples.is_some() { "p-value" } else { "TV" };
        writeln!(
            out,
            "  {:width$}  {:>6}  {:>9}  {:>9}  verdict",
            "candidate", "kept", score, "max|Δp|"
        )?;
        for c in &p.candidates {
            let kept = c.kept.map_or("-".to_string(), |k| k.to_string());
            let s = if p.samples.is_some() { c.p_value } else { c.tv };
            let verdict = match c.verdict {
                Verdict::Explains => "explains",
                Verdict::RuledOut => "ruled out",
                Verdict::NotRejected => "not rejected",
                Verdict::Undecided => "undecided",
            };
            writeln!(
                out,
                "  {:width$}  {kept:>6}  {:>9}  {:>9}  {verdict}",
                c.label(),
                figure(s),
                figure(c.max_abs_diff)
            )?;
            writeln!(out, "      route: {}", c.endpoint)?;
            if let Some(params) = &c.params {
                wrapped(out, "      params: ", &params.to_string())?;
            }
            if let Some(e) = &c.error {
                writeln!(out, "      error: {e}")?;
            }
        }
    }
    Ok(())
}
