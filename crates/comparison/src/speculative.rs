//! `compare speculative`: what each speculative-decoding verifier emits first,
//! against the target, computed exactly by the registry's
//! [`SpeculativeTable`] ([`Engines::speculative`]).
//!
//! The target's and the draft's distributions come from any two semantics of
//! the registry run on each fixture's logits (the draft optionally on a
//! perturbed copy, or on another fixture's logits); this module only lines
//! the library's rows up and says in words why an inexact row misses.

use std::io::Write;

use anyhow::{Context as _, bail};
use parity_core::speculative::{SpeculativeTable, Table};
use parity_core::{AnySemantics, Context, Fixture, Logits};
use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::Engines;
use crate::cli::{Format, SpeculativeArgs};
use crate::engines::{find, names};
use crate::report::select;
use crate::report::text::wrapped;

pub use parity_core::speculative::EXACT_TV;

/// One side of a pair: a semantics and its params.
#[derive(Debug, Clone, PartialEq)]
pub struct Side {
    /// Registry name.
    pub semantics: String,
    /// The semantics' params.
    pub params: Map<String, Value>,
}

/// `--draft-perturb SCALE:SEED`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Perturb {
    /// Each logit moves by at most this much.
    pub scale: f32,
    /// SplitMix64 seed.
    pub seed: u64,
}

/// A target/draft pair to run on every fixture.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Pair {
    /// The target's sampling.
    pub target: Side,
    /// The draft's sampling.
    pub draft: Side,
    /// The draft's logits perturbed.
    pub perturb: Option<Perturb>,
}

/// Parses `SEMANTICS:PARAMS` (or `SEMANTICS` alone: `{}`), checking the name
/// against the registry and the params with the semantics itself. `flag`
/// names the argument in messages.
pub fn parse_side(
    flag: &str,
    text: &str,
    registry: &[Box<dyn AnySemantics>],
) -> anyhow::Result<Side> {
    let (name, params) = match text.split_once(':') {
        Some((name, params)) => (name, params),
        None => (text, "{}"),
    };
    let semantics = registry.iter().find(|s| s.info().name == name);
    let Some(semantics) = semantics else {
        bail!(
            "{flag}: unknown semantics {name:?} in {text:?} (known: {})",
            names(registry)
        );
    };
    let params: Value = serde_json::from_str(params)
        .with_context(|| format!("{flag}: PARAMS in {text:?} is not JSON"))?;
    let Value::Object(params) = params else {
        bail!("{flag}: PARAMS in {text:?} must be a JSON object, got {params}");
    };
    if let Err(e) = semantics.prepare(&params) {
        bail!("{flag}: {name} refuses the params in {text:?}: {e}");
    }
    Ok(Side {
        semantics: name.to_string(),
        params,
    })
}

/// Parses `--draft-perturb SCALE:SEED` (SCALE finite and >= 0, SEED an
/// unsigned 64-bit integer).
pub fn parse_perturb(text: &str) -> anyhow::Result<Perturb> {
    let bad = |why: &str| anyhow::anyhow!("--draft-perturb: {text:?} {why}");
    let (scale, seed) = text
        .split_once(':')
        .ok_or_else(|| bad("is not SCALE:SEED (e.g. 1.5:7)"))?;
    let scale: f32 = scale
        .trim()
        .parse()
        .map_err(|_| bad("has a SCALE that is not a number"))?;
    if !scale.is_finite() || scale < 0.0 {
        return Err(bad("has a SCALE that is not finite and >= 0"));
    }
    let seed: u64 = seed
        .trim()
        .parse()
        .map_err(|_| bad("has a SEED that is not an integer in 0..2^64"))?;
    Ok(Perturb { scale, seed })
}

/// The pairs run without `--target`/`--draft`: transformers at temperature
/// 0.7 without top-k (the fixtures' `t07`) as the target; as drafts, the same
/// logits under `k40p09` (a truncated draft), and a copy of the logits
/// perturbed by ±1.5 (a weaker draft), the pairs of
/// `docs/search.md`.
pub(crate) fn default_pairs() -> Vec<Pair> {
    let side = |params: Value| Side {
        semantics: "hf".into(),
        params: match params {
            Value::Object(m) => m,
            _ => Map::new(),
        },
    };
    let t07 = json!({"do_sample": true, "temperature": 0.7, "top_k": 0});
    let k40p09 = json!({"do_sample": true, "temperature": 0.7, "top_k": 40, "top_p": 0.9});
    vec![
        Pair {
            target: side(t07.clone()),
            draft: side(k40p09),
            perturb: None,
        },
        Pair {
            target: side(t07.clone()),
            draft: side(t07),
            perturb: Some(Perturb {
                scale: 1.5,
                seed: 7,
            }),
        },
    ]
}

/// `compare speculative --format json` (docs/report-schema.md); fields in
/// alphabetical order, as the schema lists them.
#[derive(Serialize, schemars::JsonSchema)]
struct Document<'a> {
    exact_tv: f64,
    k: usize,
    pairs: Vec<PairDoc<'a>>,
    schema: u32,
}

/// One target/draft pair over every fixture (each side as a JSON object:
/// its semantics and params).
#[derive(Serialize, schemars::JsonSchema)]
struct PairDoc<'a> {
    draft: Value,
    fixtures: Vec<FixtureDoc<'a>>,
    target: Value,
}

/// One fixture of a pair.
#[derive(Serialize, schemars::JsonSchema)]
struct FixtureDoc<'a> {
    acceptance_rate: f64,
    draft_kept: usize,
    fixture: &'a str,
    rows: Vec<RowDoc>,
    target_kept: usize,
    vocab: usize,
}

/// One verifier on one fixture.
#[derive(Serialize, schemars::JsonSchema)]
struct RowDoc {
    acceptance: f64,
    algorithm: &'static str,
    candidates: String,
    exact: bool,
    expected_accepted: f64,
    expected_emitted: f64,
    reason: Option<String>,
    setting: &'static str,
    tv: f64,
    undefined: f64,
}

/// One pair on one fixture.
struct Case {
    fixture: String,
    target_kept: usize,
    draft_kept: usize,
    spec: Table,
}

/// A resolved `compare speculative`: the pairs, the fixtures (each with
/// the draft's fixture, same vocabulary checked).
struct Plan {
    pairs: Vec<Pair>,
    draft_fixture: Option<Fixture>,
    fixtures: Vec<Fixture>,
}

impl Plan {
    fn resolve(args: &SpeculativeArgs, registry: &[Box<dyn AnySemantics>]) -> anyhow::Result<Self> {
        if args.k == 0 {
            bail!("--k: K = 0, but speculative decoding needs at least one draft token");
        }
        let pairs = match (&args.target, &args.draft) {
            (Some(t), Some(d)) => vec![Pair {
                target: parse_side("--target", t, registry)?,
                draft: parse_side("--draft", d, registry)?,
                perturb: args
                    .draft_perturb
                    .as_deref()
                    .map(parse_perturb)
                    .transpose()?,
            }],
            (None, None) => default_pairs(),
            _ => bail!("--target and --draft go together"),
        };
        for pair in &pairs {
            find(registry, &pair.target.semantics)?;
            find(registry, &pair.draft.semantics)?;
        }
        let draft_fixture = args
            .draft_fixture
            .as_deref()
            .map(|p| Fixture::load(p).context("--draft-fixture"))
            .transpose()?;
        let mut files = select::fixture_files(&args.fixtures)?;
        if args.fixtures.is_empty() {
            // The bundled model fixtures only (not the tie demonstration).
            files.retain(|(_, names)| names.is_none());
        }
        let fixtures = files
            .iter()
            .map(|(path, _)| Fixture::load(path).map_err(anyhow::Error::from))
            .collect::<anyhow::Result<Vec<_>>>()?;
        if fixtures.is_empty() {
            bail!("no fixture files found in the paths given");
        }
        if let Some(dfx) = &draft_fixture
            && let Some(fx) = fixtures
                .iter()
                .find(|fx| fx.logits.len() != dfx.logits.len())
        {
            bail!(
                "--draft-fixture: {} has {} tokens and the target's fixture {} has {}: \
                 speculative decoding needs one vocabulary",
                dfx.path.display(),
                dfx.logits.len(),
                fx.path.display(),
                fx.logits.len()
            );
        }
        Ok(Self {
            pairs,
            draft_fixture,
            fixtures,
        })
    }
}

/// Runs the pairs of `args` (or [`default_pairs`]) on every fixture and
/// writes the tables; hints (a one-token target or draft) go to `err`.
pub fn run(
    args: &SpeculativeArgs,
    engines: &Engines,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<()> {
    let registry = &engines.semantics[..];
    let plan = Plan::resolve(args, registry)?;
    let table = &*engines.speculative;
    let mut results = Vec::new();
    for pair in &plan.pairs {
        let target = find(registry, &pair.target.semantics)?;
        let draft = find(registry, &pair.draft.semantics)?;
        let mut cases = Vec::new();
        for fx in &plan.fixtures {
            let dfx = plan.draft_fixture.as_ref().unwrap_or(fx);
            let p = distribution("--target", target, &pair.target.params, fx, None, table)?;
            let q = distribution(
                "--draft",
                draft,
                &pair.draft.params,
                dfx,
                pair.perturb,
                table,
            )?;
            let spec = table
                .table(&p.0, &q.0, args.k)
                .map_err(anyhow::Error::from_boxed)
                .with_context(|| format!("{}", fx.path.display()))?;
            cases.push(Case {
                fixture: fx.name.clone(),
                target_kept: p.1,
                draft_kept: q.1,
                spec,
            });
        }
        for (which, kept) in [
            ("target", cases.iter().map(|c| c.target_kept).max()),
            ("draft", cases.iter().map(|c| c.draft_kept).max()),
        ] {
            if kept == Some(1) {
                writeln!(
                    err,
                    "hint: the {which} keeps one token on every fixture (greedy); for hf, \
                     sampling needs \"do_sample\": true"
                )?;
            }
        }
        results.push((pair, cases));
    }
    match args.format {
        Format::Json => write_json(args.k, &results, plan.draft_fixture.as_ref(), out),
        Format::Text => write_text(args.k, &results, plan.draft_fixture.as_ref(), table, out),
    }
}

/// A side's distribution on a fixture's (possibly perturbed) logits, with
/// the number of tokens it keeps.
fn distribution(
    flag: &str,
    semantics: &dyn AnySemantics,
    params: &Map<String, Value>,
    fx: &Fixture,
    perturb: Option<Perturb>,
    table: &dyn SpeculativeTable,
) -> anyhow::Result<(Vec<f64>, usize)> {
    let logits = match perturb {
        Some(p) => table.perturbed(&fx.logits, p.scale, p.seed),
        None => fx.logits.clone(),
    };
    let name = semantics.info().name;
    let context = Context::new(&fx.input_ids, fx.model.as_ref().map(|m| m.prompt_len))
        .with_context(|| fx.path.display().to_string())?;
    let dist = semantics
        .run(&Logits::from_f32(&logits), &context, params)
        .with_context(|| format!("{flag} {name} on {}", fx.path.display()))?;
    Ok((dist.probs().to_vec(), dist.kept().len()))
}

fn side_json(side: &Side) -> Value {
    json!({"semantics": side.semantics, "params": side.params})
}

fn write_json(
    k: usize,
    results: &[(&Pair, Vec<Case>)],
    draft_fixture: Option<&Fixture>,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let pairs: Vec<PairDoc<'_>> = results
        .iter()
        .map(|(pair, cases)| {
            let mut draft = side_json(&pair.draft);
            draft["perturb"] = pair
                .perturb
                .map_or(Value::Null, |p| json!({"scale": p.scale, "seed": p.seed}));
            draft["fixture"] =
                draft_fixture.map_or(Value::Null, |f| json!(f.path.display().to_string()));
            let fixtures = cases
                .iter()
                .map(|c| FixtureDoc {
                    acceptance_rate: c.spec.acceptance_rate,
                    draft_kept: c.draft_kept,
                    fixture: &c.fixture,
                    rows: c
                        .spec
                        .rows
                        .iter()
                        .map(|r| RowDoc {
                            acceptance: r.acceptance,
                            algorithm: r.algorithm,
                            candidates: r.candidates.clone(),
                            exact: r.tv <= EXACT_TV,
                            expected_accepted: r.expected_accepted,
                            expected_emitted: r.expected_emitted,
                            reason: r.reason.clone(),
                            setting: r.setting,
                            tv: r.tv,
                            undefined: r.undefined,
                        })
                        .collect(),
                    target_kept: c.target_kept,
                    vocab: c.spec.vocab,
                })
                .collect();
            PairDoc {
                draft,
                fixtures,
                target: side_json(&pair.target),
            }
        })
        .collect();
    let doc = Document {
        exact_tv: EXACT_TV,
        k,
        pairs,
        schema: super::report::SCHEMA,
    };
    serde_json::to_writer_pretty(&mut *out, &doc)?;
    writeln!(out)?;
    Ok(())
}

fn compact(side: &Side) -> String {
    format!("{}:{}", side.semantics, Value::Object(side.params.clone()))
}

fn write_text(
    k: usize,
    results: &[(&Pair, Vec<Case>)],
    draft_fixture: Option<&Fixture>,
    table: &dyn SpeculativeTable,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    for (i, (pair, cases)) in results.iter().enumerate() {
        if i > 0 {
            writeln!(out)?;
        }
        writeln!(out, "target {}", compact(&pair.target))?;
        let mut draft = format!("draft  {}", compact(&pair.draft));
        if let Some(p) = pair.perturb {
            draft.push_str(&format!(
                " on logits perturbed by ±{} (seed {})",
                p.scale, p.seed
            ));
        }
        if let Some(f) = draft_fixture {
            draft.push_str(&format!(" on the logits of {}", f.path.display()));
        }
        writeln!(out, "{draft}")?;
        for c in cases {
            writeln!(
                out,
                "{} (V = {}, K = {k}; target keeps {}, draft {}): sum min(p, q) = {:.4}",
                c.fixture, c.spec.vocab, c.target_kept, c.draft_kept, c.spec.acceptance_rate
            )?;
            writeln!(
                out,
                "  {:<18} {:<12} {:>9} {:>9} {:>7} {:>8} {:>7}  exact",
                "algorithm", "candidates", "TV", "undefined", "alpha", "accepted", "emitted"
            )?;
            let mut reasons = Vec::new();
            for r in &c.spec.rows {
                let exact = r.tv <= EXACT_TV;
                writeln!(
                    out,
                    "  {:<18} {:<12} {:>9.2e} {:>9.2e} {:>7.4} {:>8.3} {:>7.3}  {}",
                    r.algorithm,
                    r.candidates,
                    r.tv,
                    r.undefined,
                    r.acceptance,
                    r.expected_accepted,
                    r.expected_emitted,
                    if exact { "yes" } else { "no" }
                )?;
                if let Some(why) = &r.reason {
                    reasons.push(format!("{}, {}: {why}", r.algorithm, r.candidates));
                }
            }
            for why in reasons {
                wrapped(out, 98, "  ", 4, &why)?;
            }
        }
    }
    writeln!(out)?;
    writeln!(
        out,
        "sum min(p, q): the acceptance rate with x ~ q. exact: TV <= {EXACT_TV:e}. alpha: \
         acceptance"
    )?;
    writeln!(
        out,
        "probability; accepted, emitted: expected tokens per step for K (docs/search.md)."
    )?;
    writeln!(out, "Where each row occurs:")?;
    for o in table.legend() {
        let line = format!("{}, {}: {}", o.algorithm, o.candidates, o.setting);
        wrapped(out, 98, "  ", 4, &line)?;
    }
    Ok(())
}

/// The JSON Schema of this command's `--format json` document
/// ([`crate::json_schema`]).
pub(crate) fn json_schema() -> schemars::Schema {
    schemars::schema_for!(Document<'static>)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn registry() -> Vec<Box<dyn AnySemantics>> {
        vec![
            Box::new(hf_sampling::Hf::new(None)),
            Box::new(hf_sampling::HfRust::new(None)),
        ]
    }

    fn side(text: &str) -> anyhow::Result<Side> {
        parse_side("--target", text, &registry())
    }

    fn refusal(text: &str) -> String {
        side(text).expect_err("refused").to_string()
    }

    fn plan(argv: &[&str]) -> anyhow::Result<Plan> {
        use clap::Parser;
        #[derive(Parser)]
        struct Cli {
            #[command(flatten)]
            speculative: SpeculativeArgs,
        }
        let argv = std::iter::once("speculative").chain(argv.iter().copied());
        let args = Cli::try_parse_from(argv)
            .expect("valid arguments")
            .speculative;
        Plan::resolve(&args, &registry())
    }

    #[test]
    fn the_plan_checks_k_the_pair_and_one_vocabulary_before_any_table() {
        let pair = ["--target", "hf", "--draft", "hf-rust"];
        let p = plan(&pair).expect("plan");
        assert_eq!(p.pairs.len(), 1);
        assert!(p.draft_fixture.is_none() && !p.fixtures.is_empty());
        let e = plan(&[&pair[..], &["--k", "0"]].concat())
            .err()
            .expect("refused");
        assert_eq!(
            e.to_string(),
            "--k: K = 0, but speculative decoding needs at least one draft token"
        );
        let dir = parity_core::fixture::bundled_dir().expect("bundled fixtures");
        let eight = dir
            .join("edge/all_equal_v8.safetensors")
            .display()
            .to_string();
        let e = plan(&[&pair[..], &["--draft-fixture", &eight]].concat())
            .err()
            .expect("refused");
        assert!(
            e.to_string()
                .contains("has 8 tokens and the target's fixture")
                && e.to_string()
                    .ends_with("speculative decoding needs one vocabulary"),
            "{e}"
        );
        // The same fixture for both sides: one vocabulary.
        let both = [&pair[..], &["--draft-fixture", &eight, &eight]].concat();
        assert_eq!(plan(&both).expect("plan").fixtures.len(), 1);
    }

    #[test]
    fn a_side_is_a_name_and_its_params() {
        let s = side(r#"hf-rust:{"do_sample": true, "top_k": 5}"#).expect("side");
        assert_eq!(s.semantics, "hf-rust");
        assert_eq!(
            Value::Object(s.params),
            serde_json::json!({"do_sample": true, "top_k": 5})
        );
        // The name alone: no params. The JSON may hold colons.
        assert_eq!(side("hf").expect("side").params, Map::new());
        let s = side(r#"hf:{"do_sample": true, "sequence_bias": [[[0], -1.0]]}"#).expect("side");
        assert_eq!(s.params.len(), 2);
    }

    #[test]
    fn a_bad_side_is_refused_naming_the_flag_and_the_text() {
        assert_eq!(
            refusal("nope:{}"),
            r#"--target: unknown semantics "nope" in "nope:{}" (known: hf, hf-rust)"#
        );
        assert_eq!(refusal("hf:{"), r#"--target: PARAMS in "hf:{" is not JSON"#);
        assert_eq!(
            refusal("hf:[1]"),
            r#"--target: PARAMS in "hf:[1]" must be a JSON object, got [1]"#
        );
        let text = refusal(r#"hf:{"do_sample": true, "top_k": -1}"#);
        assert!(
            text.starts_with(
                r#"--target: hf refuses the params in "hf:{\"do_sample\": true, \"top_k\": -1}": "#
            ),
            "{text}"
        );
    }

    #[test]
    fn a_perturbation_is_scale_and_seed() {
        assert_eq!(
            parse_perturb("1.5:7").expect("perturb"),
            Perturb {
                scale: 1.5,
                seed: 7
            }
        );
        assert_eq!(
            parse_perturb(" 0 : 18446744073709551615 ").expect("perturb"),
            Perturb {
                scale: 0.0,
                seed: u64::MAX
            }
        );
    }

    #[test]
    fn a_bad_perturbation_says_which_half_is_wrong() {
        let err = |t: &str| parse_perturb(t).expect_err("refused").to_string();
        assert_eq!(
            err("1.5"),
            r#"--draft-perturb: "1.5" is not SCALE:SEED (e.g. 1.5:7)"#
        );
        assert_eq!(
            err("x:7"),
            r#"--draft-perturb: "x:7" has a SCALE that is not a number"#
        );
        for bad in ["-1:7", "inf:7", "NaN:7"] {
            assert_eq!(
                err(bad),
                format!("--draft-perturb: {bad:?} has a SCALE that is not finite and >= 0")
            );
        }
        for bad in ["1:-1", "1:1.5", "1:18446744073709551616"] {
            assert_eq!(
                err(bad),
                format!("--draft-perturb: {bad:?} has a SEED that is not an integer in 0..2^64")
            );
        }
    }
}
