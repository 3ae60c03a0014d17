//! The JSON wire format of `compare report --format json`
//! (`docs/report-schema.md`): every field documented there is a field here,
//! and the tests read reports back with `deny_unknown_fields`.

use parity_core::FragileKind;
use parity_core::token::Piece;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The whole JSON document.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Report {
    /// Always [`SCHEMA`].
    pub schema: u32,
    /// Counts over all rows.
    pub summary: Summary,
    /// One row per (fixture, setting, pair[, penalty window]).
    pub rows: Vec<Row>,
    /// What transformers warns about `--kwargs` that set sampling flags without
    /// `do_sample=True` (it then decodes greedily); absent when it warns about nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transformers_warning: Option<TransformersWarning>,
}

/// transformers' warning for sampling flags it ignores because `do_sample` is
/// not `True` (`GenerationConfig.validate`, transformers 5.23.0).
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TransformersWarning {
    /// The WARNING-level message, as transformers logs it.
    pub message: String,
    /// Each ignored flag with transformers' INFO-level detail.
    pub flags: Vec<IgnoredFlag>,
}

/// One flag of a [`TransformersWarning`].
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IgnoredFlag {
    /// The flag (`temperature`, `top_p`, ...).
    pub flag: String,
    /// transformers' detail for it.
    pub detail: String,
}

impl TransformersWarning {
    /// transformers' warning for these generate kwargs (and generation
    /// config), if it gives one.
    pub fn for_kwargs(
        kwargs: &Map<String, Value>,
        config: Option<&hf_sampling::GenerationConfig>,
    ) -> Option<Self> {
        let flags = hf_sampling::ignored_sampling_flags(kwargs, config);
        Some(Self {
            message: hf_sampling::ignored_flags_warning(&flags)?,
            flags: flags
                .into_iter()
                .map(|f| IgnoredFlag {
                    flag: f.name.to_string(),
                    detail: f.detail,
                })
                .collect(),
        })
    }

    /// The warning for people (stderr), wrapped to `width` columns.
    pub fn write(&self, width: usize, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        let names: Vec<&str> = self.flags.iter().map(|f| f.flag.as_str()).collect();
        super::text::wrapped(
            out,
            width,
            "warning: ",
            4,
            &format!(
                "without `do_sample=True` transformers decodes greedily (the argmax) and ignores \
                 {}; transformers 5.23.0 warns: {}",
                names.join(", "),
                self.message
            ),
        )?;
        for f in &self.flags {
            super::text::wrapped(out, width, &format!("  - `{}`: ", f.flag), 6, &f.detail)?;
        }
        Ok(())
    }
}

/// Counts over all rows.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Summary {
    /// Rows in the report.
    pub rows: usize,
    /// Rows whose verdict is `same`.
    pub same: usize,
    /// Rows whose verdict is `differs`.
    pub differs: usize,
    /// Real draws made by the engines that can be run here (every one
    /// replayed where the engine's RNG is mirrored).
    pub draws: usize,
    /// The engines that made them, in the order first met.
    pub drawn_by: Vec<String>,
    /// Of those, draws the replay reproduced exactly.
    pub replay_agree: usize,
    /// Rows over `--max-tv` / `--max-abs-diff` (0 when no threshold is set).
    pub over_threshold: usize,
    /// Rows with at least one decision float rounding could flip.
    pub fragile: usize,
    /// Of the rows that differ, those whose whole difference is such a
    /// decision (`--ignore-fragile` lets them pass).
    pub differs_only_fragile: usize,
}

/// One comparison of two semantics on one fixture and setting.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Row {
    /// Fixture name (file stem).
    pub fixture: String,
    /// Where the logits come from, in words.
    pub context: String,
    /// Setting name.
    pub setting: String,
    /// The generate kwargs of the setting.
    pub kwargs: Map<String, Value>,
    /// Left semantics.
    pub left: String,
    /// Right semantics.
    pub right: String,
    /// The setup of the side measured against transformers, in its engine's
    /// own terms (`describe`), if it has one.
    pub setup: Option<String>,
    /// The right side's variant, as its engine labels it (e.g. `last 64`);
    /// `null` for its base setup.
    pub variant: Option<String>,
    /// The variant's penalty window (last n ids), if it narrows one.
    pub penalty_window: Option<usize>,
    /// Tokens the left keeps (probability > 0); null if it failed.
    pub kept_left: Option<usize>,
    /// Tokens the right keeps; null if it failed.
    pub kept_right: Option<usize>,
    /// max |p_left − p_right|; null if a side failed.
    pub max_abs_diff: Option<f64>,
    /// Total variation ½ Σ |p_left − p_right|; null if a side failed.
    pub tv: Option<f64>,
    /// Probability mass the left puts on tokens the right drops.
    pub mass_only_left: Option<f64>,
    /// Probability mass the right puts on tokens the left drops.
    pub mass_only_right: Option<f64>,
    /// The heaviest tokens only the left keeps.
    pub only_left: Vec<TokenRow>,
    /// The heaviest tokens only the right keeps.
    pub only_right: Vec<TokenRow>,
    /// Both sides' probabilities over the union of each side's most likely
    /// tokens, most likely (on either side) first.
    pub top: Vec<TopToken>,
    /// `same` (max |Δp| ≤ 1e-5) or `differs`.
    pub verdict: Verdict,
    /// Why the sides differ, in words; null when they agree.
    pub reason: Option<String>,
    /// How to make the right side match transformers, in words: printed
    /// only when `fix_verdict` is `same`.
    pub fix: Option<String>,
    /// The fix as the right side's params (`compare dist` accepts them),
    /// when its crate has one for this row.
    pub fix_params: Option<Map<String, Value>>,
    /// The verdict of the fix run on this row's logits against the left side.
    pub fix_verdict: Option<Verdict>,
    /// Real draws from a side whose engine can be run here.
    pub draws: Option<Draws>,
    /// Repetition-penalty details, for settings with a penalty.
    pub penalty: Option<Penalty>,
    /// Decisions of either side's rules that float rounding could flip.
    pub fragile: Vec<FragileRow>,
    /// The row differs, and only in tokens `fragile` names: the kept sets
    /// differ in those tokens alone and the penalised logits agree.
    pub only_fragile: bool,
}

/// A decision float rounding could flip (`parity_core::fragile`).
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FragileRow {
    /// The semantics whose rule it is.
    pub semantics: String,
    /// The rule.
    pub kind: FragileKind,
    /// The tokens the decision keeps or drops.
    pub tokens: Vec<usize>,
    /// Distance from flipping, in ulps of the compared f32 values.
    pub margin_ulps: u64,
    /// Whether a repetition penalty moved one of the tokens onto the threshold.
    pub penalised: bool,
    /// The decision in words.
    pub detail: String,
}

/// A token with both sides' probabilities.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TopToken {
    /// Token id.
    pub id: usize,
    /// The vocabulary string, if known.
    pub token: Option<String>,
    /// What it reads as, when its bytes are complete UTF-8.
    pub text: Option<String>,
    /// Its bytes, when they are not complete UTF-8.
    pub bytes: Option<Vec<u8>>,
    /// The left side's probability.
    pub left: f64,
    /// The right side's probability.
    pub right: f64,
}

/// A token kept by one side only.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TokenRow {
    /// Token id.
    pub id: usize,
    /// The vocabulary string (byte-level BPE form, e.g. `ĠAI`), if known.
    pub token: Option<String>,
    /// What it reads as (` AI`), when its bytes are complete UTF-8.
    pub text: Option<String>,
    /// Its bytes, when they are not complete UTF-8 (part of a character).
    pub bytes: Option<Vec<u8>>,
    /// Its probability on the side that keeps it.
    pub mass: f64,
}

/// `text` and `bytes` of a token as the schema writes them.
pub(crate) fn text_fields(piece: Option<Piece>) -> (Option<String>, Option<Vec<u8>>) {
    match piece {
        Some(Piece::Text(t)) => (Some(t), None),
        Some(Piece::Bytes(b)) => (None, Some(b)),
        None => (None, None),
    }
}

/// The token for people with its id: `" AI" (15593)`, `<0xE5 0xA4> (18614)`,
/// `id 3` without a vocabulary.
pub(crate) fn token_label(text: Option<&String>, bytes: Option<&Vec<u8>>, id: usize) -> String {
    let piece = match (text, bytes) {
        (Some(t), _) => Some(Piece::Text(t.clone())),
        (None, Some(b)) => Some(Piece::Bytes(b.clone())),
        (None, None) => None,
    };
    parity_core::vocab::label(piece.as_ref(), id)
}

impl TokenRow {
    /// See [`token_label`].
    pub fn label(&self) -> String {
        token_label(self.text.as_ref(), self.bytes.as_ref(), self.id)
    }
}

impl TopToken {
    /// See [`token_label`].
    pub fn label(&self) -> String {
        token_label(self.text.as_ref(), self.bytes.as_ref(), self.id)
    }
}

/// Row verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Within float rounding.
    Same,
    /// Not.
    Differs,
}

/// What the real draws said.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Draws {
    /// The engine that drew, in a word (its `DrawCheck::engine`).
    pub engine: String,
    /// Real draws made.
    pub n: usize,
    /// Draws the replay of the engine's RNG reproduced; null where the
    /// engine's RNG cannot be replayed.
    pub replay_agree: Option<usize>,
    /// First seed (stream s uses seed + s).
    pub seed: u64,
    /// max over tokens |frequency − p| of the drawing side.
    pub max_freq_dev: f64,
    /// Chi-square goodness-of-fit p-value of the draws against the mirror
    /// (null when there is nothing to test, e.g. an argmax).
    pub p_value: Option<f64>,
    /// Share of draws outside the left side's kept set.
    pub outside_left: f64,
    /// Share of draws outside the right side's kept set.
    pub outside_right: f64,
}

/// How a repetition penalty was applied on each side.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Penalty {
    /// Context length (prompt + answer tokens).
    pub context_len: usize,
    /// Logits the left side's penalty changed.
    pub changed_left: usize,
    /// Logits the right side's penalty changed.
    pub changed_right: usize,
    /// max |Δ logit| between the two sides' penalised logits.
    pub max_logit_diff: f64,
    /// Ids penalised over the whole context but not in this window.
    pub missed_ids: usize,
    /// Of those, ids that occur in the templated prompt.
    pub missed_in_prompt: usize,
}

#[cfg(test)]
impl Row {
    /// A row for unit tests: `left` against `right` on fixture `fx`,
    /// setting `s1`, both sides keeping 3 tokens and agreeing exactly; each
    /// test changes the fields it is about.
    pub(crate) fn example(left: &str, right: &str) -> Self {
        Self {
            fixture: "fx".into(),
            context: "a test".into(),
            setting: "s1".into(),
            kwargs: Map::new(),
            left: left.into(),
            right: right.into(),
            setup: None,
            variant: None,
            penalty_window: None,
            kept_left: Some(3),
            kept_right: Some(3),
            max_abs_diff: Some(0.0),
            tv: Some(0.0),
            mass_only_left: None,
            mass_only_right: None,
            only_left: Vec::new(),
            only_right: Vec::new(),
            top: Vec::new(),
            verdict: Verdict::Same,
            reason: None,
            fix: None,
            fix_params: None,
            fix_verdict: None,
            draws: None,
            penalty: None,
            fragile: Vec::new(),
            only_fragile: false,
        }
    }
}
