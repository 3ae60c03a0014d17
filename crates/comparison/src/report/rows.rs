//! One report row, built in steps: each side's distribution, the metrics,
//! real draws where an engine can be run, penalty details, the verdict, and
//! the explanation the right side's own crate gives.

use std::collections::HashMap;

use anyhow::Context as _;
use parity_core::fixture::{Fixture, Setting};
use parity_core::metrics::max_logit_diff;
use parity_core::semantics::prepared;
use parity_core::text::one_line;
use parity_core::{
    Against, AnySemantics, Comparison, Context, Distribution, DrawOptions, Logits, Prepared,
    Semantics, TokenMass, Variant, Vocab,
};
use serde_json::{Map, Value};

use super::SAME_TOLERANCE;
use super::schema::{Draws, FragileRow, Penalty, Row, TokenRow, TopToken, Verdict, text_fields};

/// Tokens of each side in a row's `top` (the union is at most twice this).
const TOP_TOKENS: usize = 10;

/// What rows need from the command line.
pub(crate) struct RowArgs {
    /// Real draws per row whose engine can be run.
    pub draws: parity_core::DrawCount,
    /// Seed of the real draws.
    pub seed: u64,
    /// Tokens listed per row that one side keeps and the other does not.
    pub show_tokens: usize,
}

/// One semantics' answer on one (fixture, setting).
struct Side<'a> {
    name: &'static str,
    semantics: &'a dyn AnySemantics,
    prepared: Option<Box<dyn Prepared + 'a>>,
    dist: Result<Distribution, String>,
}

/// A side as a row sees it: the base setup or one of its variants.
struct View<'s> {
    name: &'static str,
    semantics: &'s dyn AnySemantics,
    prepared: Option<&'s dyn Prepared>,
    dist: &'s Result<Distribution, String>,
}

impl View<'_> {
    /// Whether rows explain the other side against this one.
    fn is_reference(&self) -> bool {
        self.semantics.role().is_reference()
    }
}

impl<'a> Side<'a> {
    fn is_reference(&self) -> bool {
        self.semantics.role().is_reference()
    }

    fn view(&self) -> View<'_> {
        View {
            name: self.name,
            semantics: self.semantics,
            prepared: self.prepared.as_deref(),
            dist: &self.dist,
        }
    }
}

/// What a row compares on: one step's logits and context, from a fixture
/// or a user's record.
pub(crate) struct Case<'a> {
    /// The fixture's name, or the record's.
    pub name: String,
    /// Where the logits come from, in words.
    pub description: String,
    /// Where errors point (a file path, a line of input).
    pub origin: String,
    /// The logits.
    pub logits: &'a [f32],
    /// The context.
    pub context: Context<'a>,
    /// Token strings, when known.
    pub vocab: Option<&'a Vocab>,
}

impl<'a> Case<'a> {
    /// A fixture's case.
    pub(crate) fn fixture(fx: &'a Fixture, vocab: Option<&'a Vocab>) -> anyhow::Result<Self> {
        let context = Context::new(&fx.input_ids, fx.model.as_ref().map(|m| m.prompt_len))
            .with_context(|| fx.path.display().to_string())?;
        Ok(Self {
            name: fx.name.clone(),
            description: context_text(fx),
            origin: fx.path.display().to_string(),
            logits: &fx.logits,
            context,
            vocab,
        })
    }
}

/// A setting as a row runs it: generate kwargs and, when transformers'
/// output was recorded for them, its scores.
pub(crate) struct Run<'s> {
    /// The setting's name.
    pub name: &'s str,
    /// The generate kwargs.
    pub kwargs: &'s Map<String, Value>,
    /// The model's generation_config.json merged under them (`--kwargs`
    /// with `--generation-config`), if any.
    pub generation_config: Option<&'s Map<String, Value>>,
    /// transformers' recorded scores; `None`: `hf` is computed by hf-rust.
    pub recorded: Option<&'s [f32]>,
    /// `Some(context length)`: each side runs its engine's exact setup for
    /// the kwargs where its crate translates them (`diff --setup exact`);
    /// `None`: each side reads the kwargs literally.
    pub exact: Option<usize>,
}

impl<'s> Run<'s> {
    /// A fixture's recorded setting.
    pub(crate) fn recorded(setting: &'s Setting) -> Self {
        Self {
            name: &setting.name,
            kwargs: &setting.kwargs,
            generation_config: None,
            recorded: Some(&setting.scores),
            exact: None,
        }
    }
}

/// Everything the rows of one case share.
pub(crate) struct CaseRows<'a> {
    case: Case<'a>,
    recorder: &'a hf_sampling::Hf,
    registry: &'a [Box<dyn AnySemantics>],
    logits: Logits,
}

impl<'a> CaseRows<'a> {
    pub(crate) fn new(
        case: Case<'a>,
        recorder: &'a hf_sampling::Hf,
        registry: &'a [Box<dyn AnySemantics>],
    ) -> Self {
        let logits = Logits::from_f32(case.logits);
        Self {
            case,
            recorder,
            registry,
            logits,
        }
    }

    /// Every row of one setting: each pair, and each variant of its right side.
    pub(crate) fn setting_rows(
        &self,
        setting: &Run<'_>,
        pairs: &[(usize, usize)],
        args: &RowArgs,
    ) -> anyhow::Result<Vec<Row>> {
        hf_sampling::resolve(setting.kwargs, None)
            .with_context(|| format!("{}: setting {}", self.case.origin, setting.name))?;
        let mut sides: HashMap<usize, Option<Side<'_>>> = HashMap::new();
        let mut rows = Vec::new();
        // transformers' own side, for pairs that leave it out (a row between
        // two other semantics is explained through it).
        let reference = self.registry.iter().position(|s| s.role().is_reference());
        for &(l, r) in pairs {
            for i in [l, r].into_iter().chain(reference) {
                sides.entry(i).or_insert_with(|| self.side(i, setting));
            }
            let (Some(left), Some(right)) = (&sides[&l], &sides[&r]) else {
                continue; // the setting does not map onto one of the sides
            };
            let third = reference
                .and_then(|i| sides[&i].as_ref())
                .filter(|_| !left.is_reference() && !right.is_reference())
                .map(Side::view);
            let third = third.as_ref();
            rows.push(self.row(setting, left.view(), right.view(), None, third, args)?);
            let variants = right.prepared.as_ref().map_or(Vec::new(), |p| p.variants());
            for (variant, p) in &variants {
                let dist = p
                    .distribution(&self.logits, &self.case.context)
                    .map_err(|e| e.to_string());
                let view = View {
                    name: right.name,
                    semantics: right.semantics,
                    prepared: Some(&**p),
                    dist: &dist,
                };
                rows.push(self.row(setting, left.view(), view, Some(variant), third, args)?);
            }
        }
        Ok(rows)
    }

    /// Semantics `index` on this setting; `None` when the setting does not
    /// map onto it. The recorded side reads the fixture's scores.
    fn side(&self, index: usize, setting: &Run<'_>) -> Option<Side<'_>> {
        let semantics = &*self.registry[index];
        let name = semantics.info().name;
        let prepared = match setting.recorded {
            Some(scores) if name == Semantics::info(self.recorder).name => self
                .recorder
                .recorded(setting.kwargs, scores.to_vec())
                .map(|params| prepared(self.recorder, params)),
            _ => match setting
                .exact
                .and_then(|n| crate::translate::exact_params(semantics, setting.kwargs, n).ok())
            {
                Some(setup) => semantics.prepare(&setup),
                None => semantics.prepare_generate(setting.kwargs)?,
            },
        };
        Some(match prepared {
            Ok(p) => {
                let dist = p
                    .distribution(&self.logits, &self.case.context)
                    .map_err(|e| e.to_string());
                Side {
                    name,
                    semantics,
                    prepared: Some(p),
                    dist,
                }
            }
            Err(e) => Side {
                name,
                semantics,
                prepared: None,
                dist: Err(e.to_string()),
            },
        })
    }

    fn row(
        &self,
        setting: &Run<'_>,
        l: View<'_>,
        r: View<'_>,
        variant: Option<&Variant>,
        reference: Option<&View<'_>>,
        args: &RowArgs,
    ) -> anyhow::Result<Row> {
        let mut row = self.base_row(setting, &l, &r, variant);
        let (left, right) = match (l.dist, r.dist) {
            (Ok(a), Ok(b)) => (a, b),
            (Err(e), _) => {
                row.reason = Some(format!("{} fails: {e}", l.name));
                return Ok(row);
            }
            (Ok(reference), Err(e)) => {
                let mut reasons = vec![format!("{} fails: {e}", r.name)];
                if let Some(fix) = r.prepared.and_then(|p| p.fix(setting.kwargs, variant)) {
                    self.prove(&mut row, &mut reasons, r.semantics, fix, reference);
                }
                row.reason = Some(reasons.join("; "));
                return Ok(row);
            }
        };
        let cmp = Comparison::new(left.probs(), right.probs())
            .with_context(|| format!("{}: setting {}", self.case.origin, setting.name))?;
        self.fill_metrics(&mut row, &cmp, args.show_tokens);
        let only: Vec<usize> = cmp
            .only_left
            .iter()
            .take(args.show_tokens.max(3))
            .chain(cmp.only_right.iter().take(args.show_tokens.max(3)))
            .map(|t| t.id)
            .collect();
        row.top = self.top_tokens(left.probs(), right.probs(), &only);
        row.fragile = self.fragile(&l, &r);
        row.draws = self
            .draws(&l, &r, args)
            .with_context(|| format!("{}: setting {}", self.case.origin, setting.name))?;
        row.penalty = self.penalty(left, right, variant);
        row.verdict = verdict(&cmp, row.penalty.as_ref());
        if row.verdict == Verdict::Differs {
            let (mut explained, mut explanation) =
                self.explain(setting, (&l, left), (&r, right), &cmp, variant);
            if explanation.reasons.is_empty()
                && let Some(reference) = reference
            {
                (explained, explanation) =
                    self.via_reference(setting, reference, (&l, left), (&r, right), variant);
            }
            let mut reasons = if explanation.reasons.is_empty() {
                vec![unexplained(&cmp, l.name, r.name)]
            } else {
                explanation.reasons
            };
            if let (Some(fix), Some((semantics, reference))) = (explanation.fix, explained) {
                self.prove(&mut row, &mut reasons, semantics, fix, reference);
            }
            row.reason = Some(reasons.join("; "));
            row.only_fragile = only_fragile(&cmp, &row.fragile, row.penalty.as_ref());
        }
        Ok(row)
    }

    /// Both sides' fragile decisions, each once (hf and hf-rust share theirs).
    fn fragile(&self, l: &View<'_>, r: &View<'_>) -> Vec<FragileRow> {
        let mut rows: Vec<FragileRow> = Vec::new();
        for side in [l, r] {
            let Some(p) = side.prepared else { continue };
            for f in p.fragile(&self.logits, &self.case.context) {
                let seen = rows.iter().any(|x| {
                    x.kind == f.kind && x.tokens == f.tokens && x.margin_ulps == f.margin_ulps
                });
                if !seen {
                    rows.push(fragile_row(side.name, f));
                }
            }
        }
        rows
    }

    /// The union of each side's `TOP_TOKENS` most likely tokens and the
    /// heaviest tokens only one side keeps (`only`), with both
    /// probabilities, most likely on either side first.
    fn top_tokens(&self, left: &[f64], right: &[f64], only: &[usize]) -> Vec<TopToken> {
        let top = |p: &[f64]| {
            let mut ids: Vec<usize> = (0..p.len()).filter(|&i| p[i] > 0.0).collect();
            ids.sort_by(|&a, &b| p[b].total_cmp(&p[a]).then(a.cmp(&b)));
            ids.truncate(TOP_TOKENS);
            ids
        };
        let mut ids = top(left);
        for id in top(right).into_iter().chain(only.iter().copied()) {
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
        let most = |i: usize| left[i].max(right[i]);
        ids.sort_by(|&a, &b| most(b).total_cmp(&most(a)).then(a.cmp(&b)));
        ids.into_iter()
            .map(|id| {
                let (text, bytes) = text_fields(self.case.vocab.and_then(|v| v.piece(id)));
                TopToken {
                    id,
                    token: self.token_string(id),
                    text,
                    bytes,
                    left: left[id],
                    right: right[id],
                }
            })
            .collect()
    }

    fn token_string(&self, id: usize) -> Option<String> {
        self.case
            .vocab
            .and_then(|v| v.token(id))
            .map(str::to_string)
    }

    /// The row's identity, with every figure still unknown.
    fn base_row(
        &self,
        setting: &Run<'_>,
        l: &View<'_>,
        r: &View<'_>,
        variant: Option<&Variant>,
    ) -> Row {
        // The setup of the side measured against transformers, not
        // transformers' own parameters.
        let setup = [l, r]
            .into_iter()
            .filter(|s| s.dist.is_ok() && !s.is_reference())
            .find_map(|s| s.prepared.and_then(|p| p.describe()))
            .map(|d| d.to_string());
        Row {
            fixture: self.case.name.clone(),
            context: self.case.description.clone(),
            setting: setting.name.to_string(),
            kwargs: setting.kwargs.clone(),
            left: l.name.into(),
            right: r.name.into(),
            setup,
            variant: variant.map(|v| v.label.clone()),
            penalty_window: variant.and_then(|v| v.penalty_window),
            // A side run with variants shows its penalty scope even where
            // it agrees.
            kept_left: None,
            kept_right: None,
            max_abs_diff: None,
            tv: None,
            mass_only_left: None,
            mass_only_right: None,
            only_left: Vec::new(),
            only_right: Vec::new(),
            verdict: Verdict::Differs,
            reason: None,
            fix: None,
            fix_params: None,
            fix_verdict: None,
            draws: None,
            penalty: None,
            top: Vec::new(),
            fragile: Vec::new(),
            only_fragile: false,
        }
    }

    fn fill_metrics(&self, row: &mut Row, cmp: &Comparison, show: usize) {
        let tokens = |list: &[TokenMass]| {
            list.iter()
                .take(show)
                .map(|t| {
                    let (text, bytes) = text_fields(self.case.vocab.and_then(|v| v.piece(t.id)));
                    TokenRow {
                        id: t.id,
                        token: self.token_string(t.id),
                        text,
                        bytes,
                        mass: t.mass,
                    }
                })
                .collect()
        };
        row.kept_left = Some(cmp.kept_left);
        row.kept_right = Some(cmp.kept_right);
        row.max_abs_diff = Some(cmp.max_abs_diff);
        row.tv = Some(cmp.tv);
        row.mass_only_left = Some(cmp.mass_only_left());
        row.mass_only_right = Some(cmp.mass_only_right());
        row.only_left = tokens(&cmp.only_left);
        row.only_right = tokens(&cmp.only_right);
    }

    /// Real draws from the first side whose engine can be run here, with the
    /// share that falls outside each side's kept set.
    fn draws(&self, l: &View<'_>, r: &View<'_>, args: &RowArgs) -> anyhow::Result<Option<Draws>> {
        if args.draws.is_none() {
            return Ok(None);
        }
        for (side, other, side_is_left) in [(l, r, true), (r, l, false)] {
            let (Some(p), Ok(_), Ok(other_dist)) = (side.prepared, side.dist, other.dist) else {
                continue;
            };
            let options = DrawOptions {
                seed: args.seed,
                draws: args.draws,
                other_kept: other_dist.kept(),
                parallel: true,
            };
            let Some(check) = p.check_draws(&self.logits, &self.case.context, &options) else {
                continue;
            };
            let c = check?;
            let (outside_left, outside_right) = if side_is_left {
                (c.outside_own, c.outside_other)
            } else {
                (c.outside_other, c.outside_own)
            };
            return Ok(Some(Draws {
                engine: c.engine.to_string(),
                n: c.n,
                replay_agree: c.replay_agree,
                seed: args.seed,
                max_freq_dev: c.max_freq_dev,
                p_value: c.p_value,
                outside_left,
                outside_right,
            }));
        }
        Ok(None)
    }

    /// How the two sides' penalties compare, when both penalise.
    fn penalty(
        &self,
        left: &Distribution,
        right: &Distribution,
        variant: Option<&Variant>,
    ) -> Option<Penalty> {
        let (pl, pr) = (left.penalised()?, right.penalised()?);
        let changed = |p: &[f32]| {
            p.iter()
                .zip(self.case.logits)
                .filter(|(a, b)| a.to_bits() != b.to_bits())
                .count()
        };
        let (missed_ids, missed_in_prompt) =
            variant.and_then(|v| v.penalty_window).map_or((0, 0), |n| {
                self.case
                    .context
                    .missed_by_window(n, self.case.logits.len())
            });
        Some(Penalty {
            context_len: self.case.context.input_ids().len(),
            changed_left: changed(pl),
            changed_right: changed(pr),
            max_logit_diff: max_logit_diff(pl, pr),
            missed_ids,
            missed_in_prompt,
        })
    }

    /// The explanation of the side that is not transformers, asked against
    /// transformers.
    fn explain<'s>(
        &self,
        setting: &Run<'_>,
        (l, left): (&View<'s>, &'s Distribution),
        (r, right): (&View<'s>, &'s Distribution),
        cmp: &Comparison,
        variant: Option<&Variant>,
    ) -> (
        Option<(&'s dyn AnySemantics, &'s Distribution)>,
        parity_core::Explanation,
    ) {
        let swapped;
        let (reference, this, other, comparison) = if l.is_reference() {
            (left, right, r, cmp)
        } else if r.is_reference() {
            swapped = cmp.swapped();
            (right, left, l, &swapped)
        } else {
            return (None, parity_core::Explanation::default());
        };
        let Some(p) = other.prepared else {
            return (None, parity_core::Explanation::default());
        };
        let explanation = p.explain(&Against {
            kwargs: setting.kwargs,
            generation_config: setting.generation_config,
            logits: self.case.logits,
            context: self.case.context,
            transformers: reference,
            this,
            comparison,
            variant,
        });
        (Some((other.semantics, reference)), explanation)
    }

    /// A row between two semantics other than transformers: when one side
    /// keeps transformers' distribution here, the other side differs from
    /// it as it differs from transformers, so that explanation (and its
    /// fix, proven against transformers) is the row's.
    fn via_reference<'s>(
        &self,
        setting: &Run<'_>,
        reference: &View<'s>,
        (l, left): (&View<'s>, &'s Distribution),
        (r, right): (&View<'s>, &'s Distribution),
        variant: Option<&Variant>,
    ) -> (
        Option<(&'s dyn AnySemantics, &'s Distribution)>,
        parity_core::Explanation,
    ) {
        let Ok(transformers) = reference.dist else {
            return (None, parity_core::Explanation::default());
        };
        for ((same, same_dist), (other, other_dist)) in
            [((l, left), (r, right)), ((r, right), (l, left))]
        {
            let agrees = Comparison::new(transformers.probs(), same_dist.probs())
                .is_ok_and(|c| verdict(&c, None) == Verdict::Same);
            let Ok(cmp) = Comparison::new(transformers.probs(), other_dist.probs()) else {
                continue;
            };
            if !agrees {
                continue;
            }
            let (explained, mut explanation) = self.explain(
                setting,
                (reference, transformers),
                (other, other_dist),
                &cmp,
                variant,
            );
            if let Some(first) = explanation.reasons.first_mut() {
                *first = format!(
                    "{} keeps transformers' distribution here, and {} differs from it: {first}",
                    same.name, other.name
                );
                return (explained, explanation);
            }
        }
        (None, parity_core::Explanation::default())
    }

    /// Runs a fix on this row's logits: it is printed as the row's fix only
    /// when it then matches transformers; otherwise the reasons say so.
    fn prove(
        &self,
        row: &mut Row,
        reasons: &mut Vec<String>,
        semantics: &dyn AnySemantics,
        fix: parity_core::Fix,
        reference: &Distribution,
    ) {
        let outcome = semantics
            .run(&self.logits, &self.case.context, &fix.params)
            .map_err(|e| e.to_string())
            .and_then(|d| Comparison::new(reference.probs(), d.probs()).map_err(|e| e.to_string()));
        let verdict = match &outcome {
            Ok(cmp) => verdict(cmp, None),
            Err(_) => Verdict::Differs,
        };
        row.fix_params = Some(fix.params);
        row.fix_verdict = Some(verdict);
        if verdict == Verdict::Same {
            row.fix = Some(fix.text);
        } else {
            reasons.push(match outcome {
                Ok(cmp) => format!(
                    "no proven fix: translate's recipe ({}) still differs here (TV {:.2e})",
                    fix.text.trim_start_matches("use "),
                    cmp.tv
                ),
                Err(e) => format!("no proven fix: translate's recipe fails here: {e}"),
            });
        }
    }
}

/// Same means: the same tokens can be drawn, with probabilities equal up to
/// float rounding, from logits penalised alike.
pub(crate) fn verdict(cmp: &Comparison, penalty: Option<&Penalty>) -> Verdict {
    let same = cmp.only_left.is_empty()
        && cmp.only_right.is_empty()
        && cmp.max_abs_diff <= SAME_TOLERANCE
        && penalty.is_none_or(|p| p.max_logit_diff <= SAME_TOLERANCE);
    if same {
        Verdict::Same
    } else {
        Verdict::Differs
    }
}

/// Whether a differing row differs only in tokens its fragile decisions
/// name: the kept sets differ, every token kept by one side only is one of
/// them, and the penalised logits (if any) agree.
pub(crate) fn only_fragile(
    cmp: &Comparison,
    fragile: &[FragileRow],
    penalty: Option<&Penalty>,
) -> bool {
    let named = |id: usize| fragile.iter().any(|f| f.tokens.contains(&id));
    let differing = cmp.only_left.iter().chain(&cmp.only_right);
    !(cmp.only_left.is_empty() && cmp.only_right.is_empty())
        && differing.clone().all(|t| named(t.id))
        && penalty.is_none_or(|p| p.max_logit_diff <= SAME_TOLERANCE)
}

/// A semantics' fragile decision as a row lists it.
pub(crate) fn fragile_row(semantics: &str, f: parity_core::Fragile) -> FragileRow {
    FragileRow {
        semantics: semantics.to_string(),
        kind: f.kind,
        tokens: f.tokens,
        margin_ulps: f.margin_ulps,
        penalised: f.penalised,
        detail: f.detail,
    }
}

/// What differs, plainly, when no known rule explains it.
fn unexplained(cmp: &Comparison, left: &str, right: &str) -> String {
    if !cmp.only_left.is_empty() || !cmp.only_right.is_empty() {
        let n = cmp.only_left.len();
        format!(
            "kept sets differ ({n} {} only {left}, {} only {right}) by no rule listed here",
            if n == 1 { "token" } else { "tokens" },
            cmp.only_right.len(),
        )
    } else {
        format!(
            "same kept set, probabilities differ by up to {:.2e} (more than float rounding)",
            cmp.max_abs_diff
        )
    }
}

fn context_text(fx: &Fixture) -> String {
    match &fx.model {
        Some(m) => {
            let mut s = format!(
                "{:?} + {} answer tokens ({})",
                clip(&m.prompt, 40),
                m.k,
                super::text::ids(fx.input_ids.len())
            );
            if m.k > 0 {
                s.push_str(&format!(", ending {:?}", tail(&m.answer, 20)));
            }
            s
        }
        None => one_line(&fx.description).into_owned(),
    }
}

/// The first `n` characters of `s`, with an ellipsis when cut.
fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        s.chars().take(n - 1).chain(['…']).collect()
    }
}

/// The last `n` characters of `s`.
fn tail(s: &str, n: usize) -> String {
    let chars: Vec<char> = s.chars().collect();
    chars[chars.len().saturating_sub(n)..].iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmp(left: &[f64], right: &[f64]) -> Comparison {
        Comparison::new(left, right).expect("same length")
    }

    fn penalty(max_logit_diff: f64) -> Penalty {
        Penalty {
            context_len: 4,
            changed_left: 1,
            changed_right: 1,
            max_logit_diff,
            missed_ids: 0,
            missed_in_prompt: 0,
        }
    }

    fn fragile(tokens: &[usize]) -> FragileRow {
        FragileRow {
            semantics: "hf".into(),
            kind: parity_core::FragileKind::TopKTie,
            tokens: tokens.to_vec(),
            margin_ulps: 0,
            penalised: false,
            detail: String::new(),
        }
    }

    #[test]
    fn same_is_one_kept_set_within_the_tolerance() {
        let at = |d: f64| verdict(&cmp(&[0.5, 0.5, 0.0], &[0.5 + d, 0.5 - d, 0.0]), None);
        assert_eq!(at(0.0), Verdict::Same);
        // Either side of the tolerance (1e-5 itself is not exact in binary).
        assert_eq!(at(0.9 * SAME_TOLERANCE), Verdict::Same);
        assert_eq!(at(1.1 * SAME_TOLERANCE), Verdict::Differs);
        // A token one side keeps, however light, differs.
        assert_eq!(
            verdict(&cmp(&[1.0, 0.0], &[1.0 - 1e-12, 1e-12]), None),
            Verdict::Differs
        );
    }

    #[test]
    fn logits_penalised_otherwise_differ_even_with_equal_probabilities() {
        let equal = cmp(&[0.25, 0.75], &[0.25, 0.75]);
        assert_eq!(verdict(&equal, Some(&penalty(0.0))), Verdict::Same);
        assert_eq!(
            verdict(&equal, Some(&penalty(SAME_TOLERANCE))),
            Verdict::Same,
            "the tolerance itself is within"
        );
        assert_eq!(verdict(&equal, Some(&penalty(1e-3))), Verdict::Differs);
    }

    #[test]
    fn only_fragile_needs_every_differing_token_named() {
        // Token 2 only on the left, token 3 only on the right.
        let c = cmp(&[0.5, 0.3, 0.2, 0.0], &[0.5, 0.3, 0.0, 0.2]);
        assert!(only_fragile(&c, &[fragile(&[2, 3])], None));
        assert!(only_fragile(&c, &[fragile(&[2]), fragile(&[3, 9])], None));
        assert!(!only_fragile(&c, &[fragile(&[2])], None));
        assert!(!only_fragile(&c, &[], None));
        // The penalised logits must agree too.
        assert!(!only_fragile(&c, &[fragile(&[2, 3])], Some(&penalty(0.1))));
        // The same kept sets: the difference is not the fragile decision's.
        let c = cmp(&[0.5, 0.5], &[0.6, 0.4]);
        assert!(!only_fragile(&c, &[fragile(&[0, 1])], None));
    }

    #[test]
    fn an_unexplained_difference_in_words() {
        let c = cmp(&[0.5, 0.3, 0.2, 0.0], &[0.5, 0.5, 0.0, 0.0]);
        assert_eq!(
            unexplained(&c, "hf", "x"),
            "kept sets differ (1 token only hf, 0 only x) by no rule listed here"
        );
        let c = cmp(&[0.5, 0.5], &[0.5 + 1e-3, 0.5 - 1e-3]);
        assert_eq!(
            unexplained(&c, "hf", "x"),
            "same kept set, probabilities differ by up to 1.00e-3 (more than float rounding)"
        );
    }

    #[test]
    fn clip_and_tail_count_characters() {
        assert_eq!(clip("hello", 5), "hello");
        assert_eq!(clip("hello!", 5), "hell…");
        assert_eq!(clip("ééééé é", 3), "éé…");
        assert_eq!(tail("hello", 3), "llo");
        assert_eq!(tail("hi", 20), "hi");
        assert_eq!(tail("aΔé", 2), "Δé");
    }

    #[test]
    fn a_fragile_decision_keeps_its_fields_in_the_row() {
        let f = parity_core::Fragile {
            kind: parity_core::FragileKind::MinP,
            tokens: vec![4, 2],
            margin_ulps: 3,
            penalised: true,
            detail: "p 0.05 × top".into(),
        };
        let row = fragile_row("hf-rust", f);
        assert_eq!(
            (
                row.semantics.as_str(),
                row.kind,
                row.tokens,
                row.margin_ulps,
                row.penalised
            ),
            (
                "hf-rust",
                parity_core::FragileKind::MinP,
                vec![4, 2],
                3,
                true
            )
        );
        assert_eq!(row.detail, "p 0.05 × top");
    }
}
