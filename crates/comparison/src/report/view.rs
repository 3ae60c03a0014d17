//! A row as people read it, for the text table and the HTML page alike: its
//! figures formatted once, and its detail lines (setup, why, fix, the tokens
//! only one side keeps, fragile decisions, the penalty) in the words both
//! print. Each renderer decides only where and when a line goes.

use super::schema::{Row, Verdict};

/// How many tokens a fragile decision names before "and N more".
const FRAGILE_TOKENS: usize = 4;

/// A figure in a row: `-` when a side failed, `0`, or two decimals in
/// scientific notation.
pub(crate) fn sci(x: Option<f64>) -> String {
    match x {
        None => "-".into(),
        Some(0.0) => "0".into(),
        Some(x) => format!("{x:.2e}"),
    }
}

/// `left:right`, with the right side's variant: `LEFT:RIGHT[VARIANT]`.
pub(crate) fn pair_label(row: &Row) -> String {
    match &row.variant {
        Some(v) => format!("{}:{}[{v}]", row.left, row.right),
        None => format!("{}:{}", row.left, row.right),
    }
}

/// Tokens only one side keeps.
pub(crate) struct OnlyView<'a> {
    /// The side that keeps them.
    pub side: &'a str,
    /// Their mass on that side.
    pub mass: String,
    /// Each token with its probability.
    pub tokens: Vec<String>,
}

/// A decision float rounding could flip.
pub(crate) struct FragileView {
    /// `SEMANTICS KIND (N ulps): DETAIL`.
    pub line: String,
    /// The tied or boundary tokens, by text where the row carries it.
    pub tokens: Vec<String>,
}

/// One row's details; see the module doc.
pub(crate) struct RowView<'a> {
    /// Whether the verdict is `differs`.
    pub differs: bool,
    /// The side's setup in its engine's terms.
    pub setup: Option<&'a str>,
    /// Why the two sides differ.
    pub why: Option<&'a str>,
    /// The proven fix.
    pub fix: Option<&'a str>,
    /// Tokens only the left, then only the right keeps (sides with none
    /// left out).
    pub only: Vec<OnlyView<'a>>,
    /// Fragile decisions.
    pub fragile: Vec<FragileView>,
    /// The repetition penalty's effect on both sides.
    pub penalty: Option<String>,
    /// Whether the penalty line belongs under the row even when it agrees:
    /// the row is one of an engine's variants, or the base row beside them
    /// (a window against the whole context reads best side by side).
    pub penalty_when_same: bool,
}

impl<'a> RowView<'a> {
    /// The view of `row`, one of `rows` (the rows it is shown with: a
    /// variant's base row shows its penalty line too).
    pub(crate) fn of(row: &'a Row, rows: &[Row]) -> Self {
        let penalty_when_same = row.variant.is_some()
            || rows.iter().any(|o| {
                o.variant.is_some()
                    && (&o.fixture, &o.setting, &o.left, &o.right)
                        == (&row.fixture, &row.setting, &row.left, &row.right)
            });
        let only = [
            (&row.left, &row.only_left, row.mass_only_left),
            (&row.right, &row.only_right, row.mass_only_right),
        ]
        .into_iter()
        .filter(|(_, list, _)| !list.is_empty())
        .map(|(side, list, mass)| OnlyView {
            side,
            mass: sci(mass),
            tokens: list
                .iter()
                .map(|t| format!("{} {:.2e}", t.label(), t.mass))
                .collect(),
        })
        .collect();
        let fragile = row
            .fragile
            .iter()
            .map(|f| {
                let mut tokens: Vec<String> = f
                    .tokens
                    .iter()
                    .take(FRAGILE_TOKENS)
                    .map(|&id| {
                        // The row carries token text for its top and
                        // only-one-side tokens; a tied token beyond those
                        // is named by id.
                        let top = row.top.iter().find(|t| t.id == id).map(|t| t.label());
                        let only = || {
                            row.only_left
                                .iter()
                                .chain(&row.only_right)
                                .find(|t| t.id == id)
                                .map(|t| t.label())
                        };
                        top.or_else(only).unwrap_or_else(|| format!("id {id}"))
                    })
                    .collect();
                if f.tokens.len() > FRAGILE_TOKENS {
                    tokens.push(format!("and {} more", f.tokens.len() - FRAGILE_TOKENS));
                }
                FragileView {
                    line: format!(
                        "{} {} ({} ulps): {}",
                        f.semantics,
                        f.kind.as_str(),
                        f.margin_ulps,
                        f.detail,
                    ),
                    tokens,
                }
            })
            .collect();
        let penalty = row.penalty.as_ref().map(|p| {
            format!(
                "context {}, changed {} / {} logits, max |Δ logit| {}",
                super::text::ids(p.context_len),
                p.changed_left,
                p.changed_right,
                sci(Some(p.max_logit_diff))
            )
        });
        Self {
            differs: row.verdict == Verdict::Differs,
            setup: row.setup.as_deref(),
            why: row.reason.as_deref(),
            fix: row.fix.as_deref(),
            only,
            fragile,
            penalty,
            penalty_when_same,
        }
    }
}
