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
    let mut seen: Vec<&String> = Vec::new();
    specs
        .iter()
        .map(|spec| {
            // The same rows twice are a slip, not a comparison.
            if seen.contains(&spec) {
                bail!("--pairs: {spec:?} is given twice");
            }
            seen.push(spec);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::toy::toy;
    use std::path::Path;

    /// hf, hf-rust, then toys: `a` and `c` in the default report, `b` on request.
    fn registry() -> Vec<Box<dyn AnySemantics>> {
        vec![
            Box::new(hf_sampling::Hf::new(None)),
            Box::new(hf_sampling::HfRust::new(None)),
            toy("a", Role::Default),
            toy("b", Role::OnRequest),
            toy("c", Role::Default),
        ]
    }

    fn specs(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    fn refusal(list: &[&str]) -> String {
        pairs(&specs(list), &registry())
            .expect_err("refused")
            .to_string()
    }

    #[test]
    fn without_specs_the_reference_meets_every_default_semantics() {
        // hf against hf-rust (the computed reference) and the two defaults;
        // never against itself, never `b`.
        assert_eq!(
            pairs(&[], &registry()).expect("pairs"),
            [(0, 1), (0, 2), (0, 4)]
        );
    }

    #[test]
    fn a_registry_without_a_reference_has_no_default_pairs() {
        let registry = vec![toy("a", Role::Default), toy("b", Role::Default)];
        let err = pairs(&[], &registry).expect_err("no reference");
        assert_eq!(
            err.to_string(),
            "the registry has no reference semantics (Role::Reference)"
        );
        // Named pairs need none.
        assert_eq!(pairs(&specs(&["b:a"]), &registry).expect("pairs"), [(1, 0)]);
    }

    #[test]
    fn specs_are_pairs_of_registry_names_in_the_order_given() {
        assert_eq!(
            pairs(&specs(&["a:c", "hf:b", "hf-rust:hf"]), &registry()).expect("pairs"),
            [(2, 4), (0, 3), (1, 0)]
        );
    }

    #[test]
    fn a_pair_given_twice_is_refused_by_its_text() {
        assert_eq!(
            refusal(&["hf:a", "a:hf", "hf:a"]),
            r#"--pairs: "hf:a" is given twice"#
        );
    }

    #[test]
    fn a_spec_without_a_colon_is_refused_by_its_text() {
        assert_eq!(
            refusal(&["hf:a", "hf-a"]),
            r#"--pairs: "hf-a" is not LEFT:RIGHT"#
        );
        // `--pairs hf:a,` gives an empty spec.
        assert_eq!(refusal(&[""]), r#"--pairs: "" is not LEFT:RIGHT"#);
    }

    #[test]
    fn an_unknown_name_on_either_side_is_refused_listing_the_known() {
        let known = "(known: hf, hf-rust, a, b, c)";
        assert_eq!(
            refusal(&["hf:nope"]),
            format!(r#"--pairs: unknown semantics "nope" in "hf:nope" {known}"#)
        );
        assert_eq!(
            refusal(&["nope:hf"]),
            format!(r#"--pairs: unknown semantics "nope" in "nope:hf" {known}"#)
        );
        // Names are exact: no trimming, no case folding, one colon.
        assert_eq!(
            refusal(&["hf: a"]),
            format!(r#"--pairs: unknown semantics " a" in "hf: a" {known}"#)
        );
        assert_eq!(
            refusal(&["HF:a"]),
            format!(r#"--pairs: unknown semantics "HF" in "HF:a" {known}"#)
        );
        assert_eq!(
            refusal(&["hf:a:b"]),
            format!(r#"--pairs: unknown semantics "a:b" in "hf:a:b" {known}"#)
        );
    }

    #[test]
    fn a_semantics_against_itself_is_refused() {
        assert_eq!(
            refusal(&["a:a"]),
            r#"--pairs: "a:a" compares a semantics with itself"#
        );
    }

    #[test]
    fn the_computed_reference_stands_in_for_the_recorded_one() {
        // hf → hf-rust: (0, 2) becomes (1, 2), (0, 1) becomes (1, 1) and is
        // dropped, (1, 2) is then a repeat, (3, 0) becomes (3, 1).
        assert_eq!(
            computed_reference(vec![(0, 2), (0, 1), (1, 2), (3, 0)], &registry()),
            [(1, 2), (3, 1)]
        );
        // No computed twin in the registry: the pairs as they were.
        let registry = vec![
            Box::new(hf_sampling::Hf::new(None)) as Box<dyn AnySemantics>,
            toy("a", Role::Default),
        ];
        assert_eq!(
            computed_reference(vec![(0, 1), (0, 1)], &registry),
            [(0, 1), (0, 1)]
        );
    }

    /// A scratch folder, removed when dropped.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new(name: &str) -> Self {
            let dir =
                std::env::temp_dir().join(format!("comparison-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).expect("scratch folder");
            Self(dir)
        }
        fn file(&self, name: &str) -> PathBuf {
            let path = self.0.join(name);
            std::fs::write(&path, b"").expect("scratch file");
            path
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn a_folder_gives_its_safetensors_files_sorted_and_a_file_is_taken_as_given() {
        let dir = Scratch::new("select");
        let b = dir.file("b.safetensors");
        let a = dir.file("a.safetensors");
        let notes = dir.file("notes.txt");
        dir.file("upper.SAFETENSORS");
        std::fs::create_dir(dir.0.join("sub")).expect("subfolder");
        std::fs::write(dir.0.join("sub/d.safetensors"), b"").expect("nested file");
        // A path that does not exist is not a folder: it is passed on, to
        // fail when loaded (naming it).
        let missing = dir.0.join("missing.safetensors");
        let got = fixture_files(&[dir.0.clone(), notes.clone(), missing.clone()]).expect("files");
        let want: Vec<(PathBuf, Option<SettingNames>)> =
            vec![(a, None), (b, None), (notes, None), (missing, None)];
        assert_eq!(got, want);
    }

    #[test]
    fn a_path_under_a_file_is_taken_as_a_file() {
        // Never a folder, so never listed: passed on as given.
        let dir = Scratch::new("select-file");
        let under = dir.file("x.safetensors").join("y");
        assert_eq!(
            fixture_files(std::slice::from_ref(&under)).expect("taken"),
            [(under, None)]
        );
    }

    #[test]
    fn without_arguments_the_bundled_fixtures_and_the_tie_case() {
        let files = fixture_files(&[]).expect("bundled");
        let (last, rest) = files.split_last().expect("some fixtures");
        assert!(last.0.ends_with("edge/ties_3221.safetensors"), "{last:?}");
        assert_eq!(last.1, Some(&TIE_SETTINGS[..]));
        assert_eq!(rest.len(), 6, "{rest:?}");
        for (path, settings) in rest {
            assert_eq!(
                path.parent().and_then(Path::file_name),
                Some("smollm2".as_ref())
            );
            assert_eq!(*settings, None);
        }
    }

    fn bundled(path: &str) -> Fixture {
        let dir = fixture::bundled_dir().expect("bundled fixtures");
        Fixture::load(&dir.join(path)).expect("fixture")
    }

    fn with_settings(names: &[&str]) -> ReportArgs {
        ReportArgs {
            settings: specs(names),
            ..ReportArgs::default()
        }
    }

    #[test]
    fn a_model_fixture_runs_the_article_six_an_edge_fixture_all() {
        let model = bundled("smollm2/hello_k17.safetensors");
        let edge = bundled("edge/v1.safetensors");
        let default = ReportArgs::default();
        let six: Vec<&str> = settings(&model, None, &default)
            .iter()
            .map(|&i| model.settings[i].name.as_str())
            .collect();
        assert_eq!(six, DEFAULT_SETTINGS);
        assert_eq!(
            settings(&edge, None, &default),
            (0..edge.settings.len()).collect::<Vec<_>>()
        );
        // --all-settings: every one on a model fixture too.
        let all = ReportArgs {
            all_settings: true,
            ..ReportArgs::default()
        };
        assert_eq!(settings(&model, None, &all).len(), model.settings.len());
        assert!(model.settings.len() > DEFAULT_SETTINGS.len());
    }

    #[test]
    fn named_settings_run_in_the_fixtures_order() {
        let ties = bundled("edge/ties_3221.safetensors");
        let index = |name: &str| {
            ties.settings
                .iter()
                .position(|s| s.name == name)
                .expect("recorded")
        };
        assert_eq!(
            settings(&ties, Some(&TIE_SETTINGS[..]), &ReportArgs::default()),
            [index("top_k2")]
        );
        // --settings wins over the fixture's defaults.
        assert_eq!(
            settings(
                &ties,
                Some(&TIE_SETTINGS[..]),
                &with_settings(&["greedy", "k40"])
            ),
            [index("k40"), index("greedy")]
        );
    }

    #[test]
    fn a_misspelt_setting_is_refused_listing_each_recorded_name_once() {
        let ties = bundled("edge/ties_3221.safetensors");
        let v1 = bundled("edge/v1.safetensors");
        assert!(check_settings(&[], [&ties].into_iter()).is_ok());
        assert!(check_settings(&specs(&["top_k2", "p01"]), [&ties, &v1].into_iter()).is_ok());
        let err = check_settings(&specs(&["k04", "top_k2", "zz"]), [&ties, &v1].into_iter())
            .expect_err("misspelt");
        let text = err.to_string();
        assert!(
            text.starts_with(
                "--settings: no fixture records k04, zz (recorded: t07_default, t07, "
            ),
            "{text}"
        );
        // v1's only new name comes last; the names both record come once.
        assert!(text.ends_with(", t07_top_k2, greedy, p01)"), "{text}");
        assert_eq!(text.matches("t07_default").count(), 1, "{text}");
    }

    #[test]
    fn the_settings_a_fixture_lacks_are_named() {
        let ties = bundled("edge/ties_3221.safetensors");
        assert_eq!(
            missing_settings(&ties, &with_settings(&["top_k2", "p01", "greedy", "zz"])),
            ["p01", "zz"]
        );
        assert!(missing_settings(&ties, &ReportArgs::default()).is_empty());
    }

    #[test]
    fn why_nothing_says_which_settings_were_looked_for() {
        let v1 = bundled("edge/v1.safetensors");
        let fixtures = [(v1, Some(&TIE_SETTINGS[..]))];
        let text = why_nothing(&fixtures, &ReportArgs::default());
        assert!(
            text.starts_with(
                "none of the default settings (t07_default, t07, k40, p09, k40p09, rep13) is \
                 recorded (v1 records t07_default, t07, k40, "
            ),
            "{text}"
        );
        assert!(
            text.ends_with(
                "greedy); name settings with --settings or run every recorded one with \
                 --all-settings"
            ),
            "{text}"
        );
        let text = why_nothing(&fixtures, &with_settings(&["greedy"]));
        assert!(
            text.starts_with("no pair could run on the selected settings (v1 records "),
            "{text}"
        );
        assert!(
            text.ends_with("greedy); a semantics skips settings it cannot express"),
            "{text}"
        );
    }
}
