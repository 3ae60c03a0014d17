//! `compare diff`: two or more semantics on your own logits, record by record.
//!
//! Reads the same JSON-lines records as `compare dist`; `params` holds
//! transformers generate kwargs, which each semantics reads the way a port
//! would ([`parity_core::Semantics::from_generate`]; `--setup exact` gives
//! each side the engine's exact setup instead, where its crate has one:
//! [`parity_core::Semantics::exact_setup`], or the setup its translation
//! gives, as `compare translate --to` proves it: [`crate::translate::exact_params`];
//! a side that has neither stays literal, and a note on stderr says why).
//! `hf` is computed by hf-rust here (a record carries no recording).

use std::collections::BTreeMap;
use std::io::{self, BufRead, Write};

use parity_core::jsonl::{self, Summary};
use parity_core::{AnySemantics, Context, Record, Vocab};

use super::report::rows::{Case, CaseRows, RowArgs, Run};
use super::report::text::{pair_label, wrap_width, wrap_words, wrapped};
use super::report::{Row, Verdict, select};
use crate::Engines;
use crate::cli::{DiffArgs, Format, Setup};

/// A resolved `compare diff`: the pairs (their exact setups under
/// `--setup exact`) and the vocabulary.
struct Plan {
    pairs: Vec<(usize, usize)>,
    vocab: Option<Vocab>,
    /// `--setup exact`.
    exact: bool,
}

impl Plan {
    fn resolve(args: &DiffArgs, engines: &Engines) -> anyhow::Result<Self> {
        let registry = &engines.semantics[..];
        let default = [engines.defaults.diff_pair.to_string()];
        let specs = if args.pairs.is_empty() {
            &default[..]
        } else {
            &args.pairs[..]
        };
        let pairs = select::pairs(specs, registry)?;
        let exact = args.setup == Setup::Exact;
        let pairs = if exact {
            exact_setups(pairs, registry)
        } else {
            pairs
        };
        Ok(Self {
            pairs,
            vocab: args.vocab.load()?,
            exact,
        })
    }
}

/// Runs the batch; returns how it went and how many rows differ.
pub fn run<R: BufRead, W: Write, E: Write>(
    args: &DiffArgs,
    engines: &Engines,
    input: R,
    out: W,
    mut err: E,
) -> anyhow::Result<(Summary, usize)> {
    let registry = &engines.semantics[..];
    let Plan {
        pairs,
        vocab,
        exact,
    } = Plan::resolve(args, engines)?;
    let recorder = hf_sampling::Hf::default();
    let row_args = RowArgs {
        draws: parity_core::DrawCount::Exactly(0),
        seed: 0,
        show_tokens: args.show_tokens,
    };
    // Read once: it asks the terminal.
    let width = wrap_width();
    let mut number = 0usize;
    let mut differing = 0usize;
    let mut literal = BTreeMap::new();
    let summary = jsonl::drive(input, out, &mut err, "error: ", |line, answer| {
        number += 1;
        let record = Record::parse(line)?;
        let logits = record.logits.to_logits()?;
        let logits = logits.to_f32().map_err(|e| e.to_string())?;
        args.vocab.check(vocab.as_ref(), logits.len())?;
        let input_ids = record.input_ids()?;
        let context = Context::new(&input_ids, record.prompt_len()?).map_err(|e| e.to_string())?;
        let case = Case {
            name: format!("record {number}"),
            description: String::new(),
            origin: format!("record {number}"),
            logits: &logits,
            context,
            vocab: vocab.as_ref(),
        };
        let context_len = input_ids.len();
        if exact {
            stays_literal(
                &pairs,
                registry,
                &record.params,
                context_len,
                number,
                &mut literal,
            );
        }
        let rows = CaseRows::new(case, &recorder, registry)
            .setting_rows(
                &Run {
                    name: "params",
                    kwargs: &record.params,
                    generation_config: None,
                    recorded: None,
                    exact: exact.then_some(context_len),
                },
                &pairs,
                &row_args,
            )
            .map_err(|e| format!("{e:#}"))?;
        differing += rows.iter().filter(|r| r.verdict != Verdict::Same).count();
        match args.format {
            Format::Json => {
                // Through a JSON value, whose objects keep their keys sorted.
                let doc = serde_json::to_value(Answer {
                    record: number,
                    rows,
                })
                .map_err(|e| e.to_string())?;
                serde_json::to_writer(&mut *answer, &doc).map_err(|e| e.to_string())?;
            }
            Format::Text => write_text(answer, width, number, &rows),
        }
        Ok(())
    })?;
    // Best effort: stderr is for people.
    for ((name, why), first) in &literal {
        let _ = writeln!(
            err,
            "note: --setup exact: {name} stays literal (from record {first}): {why}"
        );
    }
    Ok((summary, differing))
}

/// The sides of `pairs` that have no exact setup for these kwargs (neither
/// a registry entry of their own nor a translation), each with why, and
/// the first record where that was so.
fn stays_literal(
    pairs: &[(usize, usize)],
    registry: &[Box<dyn AnySemantics>],
    kwargs: &serde_json::Map<String, serde_json::Value>,
    context_len: usize,
    number: usize,
    literal: &mut BTreeMap<(&'static str, String), usize>,
) {
    for &i in pairs.iter().flat_map(|(l, r)| [l, r]) {
        let semantics = &*registry[i];
        if semantics.role().is_reference() || semantics.exact_setup().is_some() {
            continue;
        }
        // The candle entry that is itself the exact setup: another's target.
        let name = semantics.info().name;
        if registry.iter().any(|s| s.exact_setup() == Some(name)) {
            continue;
        }
        if let Err(why) = crate::translate::exact_params(semantics, kwargs, context_len) {
            literal.entry((name, why)).or_insert(number);
        }
    }
}

/// Each side swapped for its engine's exact setup, where it has one.
fn exact_setups(
    pairs: Vec<(usize, usize)>,
    registry: &[Box<dyn AnySemantics>],
) -> Vec<(usize, usize)> {
    let exact = |i: usize| {
        registry[i]
            .exact_setup()
            .and_then(|name| registry.iter().position(|s| s.info().name == name))
            .unwrap_or(i)
    };
    pairs
        .into_iter()
        .map(|(l, r)| (exact(l), exact(r)))
        .collect()
}

/// The record's rows for people, wrapped at `width` (without the last
/// newline: the batch writes one).
fn write_text(out: &mut Vec<u8>, width: usize, number: usize, rows: &[Row]) {
    let mut text = Vec::new();
    // Writing into a Vec cannot fail.
    let _ = write_rows(&mut text, width, number, rows);
    while text.last() == Some(&b'\n') {
        text.pop();
    }
    out.extend_from_slice(&text);
}

fn write_rows(out: &mut dyn Write, width: usize, number: usize, rows: &[Row]) -> io::Result<()> {
    let figure = |x: Option<f64>| x.map_or("-".to_string(), |x| format!("{x:.2e}"));
    writeln!(out, "record {number}:")?;
    for row in rows {
        let pair = pair_label(row);
        let kept = |k: Option<usize>| k.map_or("-".to_string(), |k| k.to_string());
        writeln!(
            out,
            "  {pair}  kept {}/{}  max|Δp| {}  TV {}  {}{}",
            kept(row.kept_left),
            kept(row.kept_right),
            figure(row.max_abs_diff),
            figure(row.tv),
            match row.verdict {
                Verdict::Same => "same",
                Verdict::Differs => "differs",
            },
            if row.fragile.is_empty() { "" } else { " ≈" }
        )?;
        if let Some(reason) = &row.reason {
            wrapped(out, width, "    why: ", 6, reason)?;
        }
        if let Some(fix) = &row.fix {
            wrapped(out, width, "    fix: ", 6, fix)?;
        }
        for f in &row.fragile {
            let text = format!(
                "{} {} ({} ulps): {}; tokens {:?}",
                f.semantics,
                f.kind.as_str(),
                f.margin_ulps,
                f.detail,
                f.tokens
            );
            wrapped(out, width, "    fragile: ", 6, &text)?;
        }
        for (side, list) in [(&row.left, &row.only_left), (&row.right, &row.only_right)] {
            if !list.is_empty() {
                let shown: Vec<String> = list
                    .iter()
                    .enumerate()
                    .map(|(i, t)| {
                        let comma = if i + 1 < list.len() { "," } else { "" };
                        format!("{} {:.2e}{comma}", t.label(), t.mass)
                    })
                    .collect();
                let first = format!("    only {side}: ");
                wrap_words(out, width, &first, 6, shown.iter().map(String::as_str))?;
            }
        }
    }
    Ok(())
}

/// One answer line of `compare diff --format json`.
#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Answer {
    /// The record's number, counting from 1.
    pub record: usize,
    /// Its rows, as in `compare report` (`draws` is null: no real draws).
    pub rows: Vec<Row>,
}

/// The JSON Schema of one `compare diff --format json` line
/// ([`crate::json_schema`]).
pub(crate) fn json_schema() -> schemars::Schema {
    schemars::schema_for!(crate::json_schema::Line<Answer>)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::toy::{exact, toy};
    use parity_core::Role;

    /// hf; `a`, whose engine's exact setup is `a-exact`; `a-exact`; `b`,
    /// with none.
    fn registry() -> Vec<Box<dyn AnySemantics>> {
        vec![
            Box::new(hf_sampling::Hf::new(None)),
            exact("a", Role::Default, Some("a-exact")),
            toy("a-exact", Role::OnRequest),
            toy("b", Role::Default),
            // Names an exact setup the registry lacks.
            exact("c", Role::Default, Some("gone")),
        ]
    }

    #[test]
    fn each_side_is_swapped_for_its_exact_setup_where_it_has_one() {
        // `c`'s exact setup names no registry entry: `c` stays.
        assert_eq!(
            exact_setups(vec![(0, 1), (1, 3), (3, 2), (0, 4)], &registry()),
            [(0, 2), (2, 3), (3, 2), (0, 4)]
        );
    }

    #[test]
    fn a_side_without_an_exact_setup_is_noted_once_from_its_first_record() {
        let registry = registry();
        let mut literal = BTreeMap::new();
        let kwargs = serde_json::Map::from_iter([("do_sample".into(), true.into())]);
        for number in [3, 4] {
            stays_literal(
                &[(0, 1), (0, 2), (1, 3)],
                &registry,
                &kwargs,
                5,
                number,
                &mut literal,
            );
        }
        // hf is the reference, `a` has an exact setup, `a-exact` is one;
        // `b` has no translation.
        let no_recipe = "its crate offers no exact setup (no `compare translate --to` recipe)";
        let want: Vec<((&str, String), usize)> = vec![(("b", no_recipe.to_string()), 3)];
        assert_eq!(literal.into_iter().collect::<Vec<_>>(), want);
    }

    #[test]
    fn kwargs_transformers_refuses_are_why_a_side_stays_literal() {
        let registry = registry();
        let mut literal = BTreeMap::new();
        let kwargs = serde_json::Map::from_iter([
            ("do_sample".into(), true.into()),
            ("temperature".into(), (-1.0).into()),
        ]);
        stays_literal(&[(0, 3)], &registry, &kwargs, 1, 1, &mut literal);
        let [((name, why), 1)] = &literal.into_iter().collect::<Vec<_>>()[..] else {
            panic!("one note");
        };
        assert_eq!(*name, "b");
        assert!(
            why.starts_with("transformers would refuse these kwargs: "),
            "{why}"
        );
    }

    #[test]
    fn a_records_rows_in_text() {
        let same = Row::example("hf", "b");
        let differs = Row {
            kept_right: None,
            max_abs_diff: None,
            tv: Some(0.5),
            verdict: Verdict::Differs,
            reason: Some("b keeps the first argmax alone".into()),
            only_left: vec![crate::report::TokenRow {
                id: 1,
                token: None,
                text: None,
                bytes: None,
                mass: 0.25,
            }],
            ..Row::example("hf", "a")
        };
        let mut out = Vec::new();
        write_text(&mut out, 100, 7, &[same, differs]);
        assert_eq!(
            String::from_utf8(out).expect("utf-8"),
            "record 7:\n\
             \x20 hf:b  kept 3/3  max|Δp| 0.00e0  TV 0.00e0  same\n\
             \x20 hf:a  kept 3/-  max|Δp| -  TV 5.00e-1  differs\n\
             \x20   why: b keeps the first argmax alone\n\
             \x20   only hf: id 1 2.50e-1"
        );
    }
}
