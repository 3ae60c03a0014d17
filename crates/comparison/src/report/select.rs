//! What a report runs: the pairs of semantics, the fixture files, and the
//! settings of each fixture.

use std::path::PathBuf;

use anyhow::{Context, bail};
use parity_core::fixture::{self, Fixture, FixtureKind};
use parity_core::{AnySemantics, Role};
use serde_json::{Map, Value};

use crate::cli::ReportArgs;

/// The settings of the seed article, run by default.
pub const DEFAULT_SETTINGS: [&str; 6] = ["t07_default", "t07", "k40", "p09", "k40p09", "rep13"];

/// The tie demonstration's settings in `fixtures/edge/ties_3221.safetensors`.
const TIE_SETTINGS: [&str; 1] = ["top_k2"];

/// `--pairs` as indices into the registry. Without `--pairs`: the
/// reference (transformers as recorded) against every semantics whose
/// [`parity_core::Role`] puts it in the default report, in registry order.
pub(crate) fn pairs(
    specs: &[String],
    registry: &[Box<dyn AnySemantics>],
) -> anyhow::Result<Vec<(usize, usize)>> {
    let index = |name: &str| registry.iter().position(|s| s.info().name == name);
    if specs.is_empty() {
        let reference = registry
            .iter()
            .position(|s| s.role() == Role::Reference)
            .context("the registry has no reference semantics (Role::Reference)")?;
        return Ok(registry
            .iter()
            .enumerate()
            .filter(|(_, s)| matches!(s.role(), Role::ReferenceComputed | Role::Default))
            .map(|(i, _)| (reference, i))
            .collect());
    }
    let names = || {
        registry
            .iter()
            .map(|s| s.info().name)
            .collect::<Vec<_>>()
            .join(", ")
    };
    specs
        .iter()
        .map(|spec| {
            let (l, r) = spec
                .split_once(':')
                .with_context(|| format!("--pairs: {spec:?} is not LEFT:RIGHT"))?;
            let side = |s: &str| {
                index(s).with_context(|| {
                    format!(
                        "--pairs: unknown semantics {s:?} in {spec:?} (known: {})",
                        names()
                    )
                })
            };
            let (l, r) = (side(l)?, side(r)?);
            if l == r {
                bail!("--pairs: {spec:?} compares a semantics with itself");
            }
            Ok((l, r))
        })
        .collect()
}

/// `--kwargs`, parsed.
pub(super) fn kwargs(args: &ReportArgs) -> anyhow::Result<Option<Map<String, Value>>> {
    args.kwargs
        .as_deref()
        .map(|text| crate::json_object_arg("--kwargs", text))
        .transpose()
}

/// With `--kwargs` nothing transformers recorded applies: the recorded
/// reference is computed, which is exactly what its
/// [`Role::ReferenceComputed`] twin does, so the pairs say so (a pair that
/// becomes the twin against itself is dropped).
pub(super) fn computed_reference(
    pairs: Vec<(usize, usize)>,
    registry: &[Box<dyn AnySemantics>],
) -> Vec<(usize, usize)> {
    let role = |r: Role| registry.iter().position(|s| s.role() == r);
    let (Some(recorded), Some(computed)) = (role(Role::Reference), role(Role::ReferenceComputed))
    else {
        return pairs;
    };
    let swap = |i: usize| if i == recorded { computed } else { i };
    let mut out: Vec<(usize, usize)> = Vec::new();
    for (l, r) in pairs {
        let pair = (swap(l), swap(r));
        if pair.0 != pair.1 && !out.contains(&pair) {
            out.push(pair);
        }
    }
    out
}

/// A fixed list of setting names.
pub(crate) type SettingNames = &'static [&'static str];

/// Fixture files with the settings each runs by default (`None`: the
/// article's six on a model fixture, every setting on an edge fixture).
pub(crate) fn fixture_files(
    args: &[PathBuf],
) -> anyhow::Result<Vec<(PathBuf, Option<SettingNames>)>> {
    if args.is_empty() {
        let dir = fixture::bundled_dir()?;
        let mut files: Vec<_> = fixture::list_dir(&dir.join("smollm2"))?
            .into_iter()
            .map(|p| (p, None))
            .collect();
        files.push((
            dir.join("edge/ties_3221.safetensors"),
            Some(&TIE_SETTINGS[..]),
        ));
        return Ok(files);
    }
    let mut files = Vec::new();
    for arg in args {
        if arg.is_dir() {
            files.extend(fixture::list_dir(arg)?.into_iter().map(|p| (p, None)));
        } else {
            files.push((arg.clone(), None));
        }
    }
    Ok(files)
}

/// Every name in `--settings` must be recorded by at least one fixture: a
/// misspelt name is an error listing the names there are, never a silently
/// smaller check.
pub(super) fn check_settings<'f>(
    wanted: &[String],
    fixtures: impl Iterator<Item = &'f Fixture>,
) -> anyhow::Result<()> {
    if wanted.is_empty() {
        return Ok(());
    }
    let mut known: Vec<&str> = Vec::new();
    for fx in fixtures {
        for s in &fx.settings {
            if !known.contains(&s.name.as_str()) {
                known.push(&s.name);
            }
        }
    }
    let unknown: Vec<&str> = wanted
        .iter()
        .map(String::as_str)
        .filter(|w| !known.contains(w))
        .collect();
    if !unknown.is_empty() {
        bail!(
            "--settings: no fixture records {} (recorded: {})",
            unknown.join(", "),
            known.join(", ")
        );
    }
    Ok(())
}

/// The `--settings` names `fx` does not record: the report skips them on
/// this fixture (another fixture records them, or [`check_settings`] would
/// have refused them), and says so on stderr.
pub(super) fn missing_settings<'a>(fx: &Fixture, args: &'a ReportArgs) -> Vec<&'a str> {
    args.settings
        .iter()
        .map(String::as_str)
        .filter(|name| !fx.settings.iter().any(|s| s.name == *name))
        .collect()
}

/// Why a report has no rows, in words.
pub(super) fn why_nothing(
    fixtures: &[(Fixture, Option<SettingNames>)],
    args: &ReportArgs,
) -> String {
    let recorded: Vec<String> = fixtures
        .iter()
        .map(|(fx, _)| {
            let names: Vec<&str> = fx.settings.iter().map(|s| s.name.as_str()).collect();
            format!("{} records {}", fx.name, names.join(", "))
        })
        .collect();
    if args.settings.is_empty() && !args.all_settings {
        format!(
            "none of the default settings ({}) is recorded ({}); name settings with --settings \
             or run every recorded one with --all-settings",
            DEFAULT_SETTINGS.join(", "),
            recorded.join("; ")
        )
    } else {
        format!(
            "no pair could run on the selected settings ({}); a semantics skips settings it \
             cannot express",
            recorded.join("; ")
        )
    }
}

/// The settings of `fx` this report runs, as indices into `fx.settings`.
pub(super) fn settings(
    fx: &Fixture,
    default_settings: Option<SettingNames>,
    args: &ReportArgs,
) -> Vec<usize> {
    fx.settings
        .iter()
        .enumerate()
        .filter(|(_, s)| {
            if !args.settings.is_empty() {
                args.settings.contains(&s.name)
            } else if args.all_settings {
                true
            } else {
                match (default_settings, fx.kind) {
                    (Some(names), _) => names.contains(&s.name.as_str()),
                    (None, FixtureKind::Model) => DEFAULT_SETTINGS.contains(&s.name.as_str()),
                    (None, FixtureKind::Edge) => true,
                }
            }
        })
        .map(|(i, _)| i)
        .collect()
}
