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

#[cfg(test)]
mod tests {
    use super::super::schema::{FragileRow, Penalty, TokenRow, TopToken};
    use super::*;

    fn token(id: usize, text: Option<&str>, mass: f64) -> TokenRow {
        TokenRow {
            id,
            token: None,
            text: text.map(str::to_string),
            bytes: None,
            mass,
        }
    }

    #[test]
    fn tokens_only_one_side_keeps_are_listed_by_side_with_their_mass() {
        let row = Row {
            only_right: vec![token(5, None, 0.015), token(6, None, 0.0)],
            mass_only_right: Some(0.015),
            mass_only_left: Some(0.0),
            verdict: Verdict::Differs,
            ..Row::example("hf", "x")
        };
        let view = RowView::of(&row, &[]);
        assert!(view.differs);
        let [only] = &view.only[..] else {
            panic!("one side only: the left keeps none");
        };
        assert_eq!((only.side, only.mass.as_str()), ("x", "1.50e-2"));
        assert_eq!(only.tokens, ["id 5 1.50e-2", "id 6 0.00e0"]);
    }

    #[test]
    fn a_fragile_decision_names_four_tokens_by_text_where_the_row_has_it() {
        let row = Row {
            top: vec![TopToken {
                id: 3,
                token: None,
                text: Some("the".into()),
                bytes: None,
                left: 0.5,
                right: 0.5,
            }],
            only_left: vec![token(8, Some(" a"), 0.1)],
            fragile: vec![FragileRow {
                semantics: "hf-rust".into(),
                kind: parity_core::FragileKind::TopKTie,
                tokens: vec![3, 8, 11, 12, 13, 14],
                margin_ulps: 2,
                penalised: false,
                detail: "3 tokens tie at the 40th score".into(),
            }],
            ..Row::example("hf", "x")
        };
        let view = RowView::of(&row, &[]);
        let [f] = &view.fragile[..] else {
            panic!("one fragile decision");
        };
        assert_eq!(
            f.line,
            "hf-rust top_k_tie (2 ulps): 3 tokens tie at the 40th score"
        );
        assert_eq!(
            f.tokens,
            [
                r#""the" (3)"#,
                r#"" a" (8)"#,
                "id 11",
                "id 12",
                "and 2 more"
            ]
        );
    }

    #[test]
    fn the_penalty_line_shows_beside_a_variant() {
        let penalty = Penalty {
            context_len: 1,
            changed_left: 2,
            changed_right: 3,
            max_logit_diff: 0.0,
            missed_ids: 0,
            missed_in_prompt: 0,
        };
        let base = Row {
            penalty: Some(penalty.clone()),
            ..Row::example("hf", "x")
        };
        let variant = Row {
            variant: Some("last 64".into()),
            penalty_window: Some(64),
            ..base.clone()
        };
        let other_setting = Row {
            setting: "s2".into(),
            ..base.clone()
        };
        let rows = [base.clone(), variant.clone(), other_setting.clone()];
        let view = RowView::of(&base, &rows);
        assert_eq!(
            view.penalty.as_deref(),
            Some("context 1 id, changed 2 / 3 logits, max |Δ logit| 0")
        );
        // The base row beside its variant, and the variant itself.
        assert!(view.penalty_when_same);
        assert!(RowView::of(&variant, &rows).penalty_when_same);
        // A row of another setting has no variant beside it.
        assert!(!RowView::of(&other_setting, &rows).penalty_when_same);
        assert!(!RowView::of(&base, &[]).penalty_when_same);
    }
}
