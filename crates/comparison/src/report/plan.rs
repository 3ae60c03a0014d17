//! A report's plan: everything its options decide, resolved before any row
//! runs (as cargo's `ops` resolve a compile plan first). [`Plan::resolve`]
//! parses the kwargs and the model's generation config, picks the pairs,
//! loads the fixtures and their vocabularies, and picks each fixture's
//! settings; every mistake in the options is an error here, before a row is
//! computed. Running the plan reads no option but the thresholds.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::path::PathBuf;

use anyhow::bail;
use hf_sampling::GenerationConfig;
use parity_core::{AnySemantics, Fixture, Vocab};
use serde_json::{Map, Value};

use super::rows::RowArgs;
use super::schema::TransformersWarning;
use super::select;
use crate::cli::ReportArgs;

/// What the rows run on.
pub(super) enum Input {
    /// Each fixture's recorded settings, transformers' recorded scores the
    /// reference.
    Recorded,
    /// `--kwargs` on every fixture (the reference computed), over the model's
    /// `--generation-config` if given.
    Kwargs {
        kwargs: Map<String, Value>,
        config: Option<GenerationConfig>,
    },
}

/// One fixture of the plan.
pub(super) struct PlannedFixture {
    /// The fixture, loaded.
    pub fixture: Fixture,
    /// The indices of the recorded settings it runs (in `fixture.settings`;
    /// empty under [`Input::Kwargs`]).
    pub settings: Vec<usize>,
    /// The `--settings` names it does not record (another fixture does): a
    /// note says it skipped them.
    pub missing: Vec<String>,
}

/// A resolved report.
pub(super) struct Plan {
    pub input: Input,
    /// Said on stderr before the rows: transformers' ignored-flag warning
    /// (the JSON carries it too) ...
    pub transformers_warning: Option<TransformersWarning>,
    /// ... and where transformers 4.57.6 reads the same kwargs and model file
    /// differently from 5.23.0, whose side the rows are.
    pub version_notes: Vec<String>,
    /// The pairs, as indices into the registry.
    pub pairs: Vec<(usize, usize)>,
    pub fixtures: Vec<PlannedFixture>,
    /// The vocabularies of the model fixtures, by path.
    pub vocabs: HashMap<PathBuf, Vocab>,
    pub row_args: RowArgs,
    /// Why the report would have no rows, in words (its error then).
    pub why_nothing: String,
}

impl Plan {
    /// Resolves `args` against `registry`.
    pub(super) fn resolve(
        args: &ReportArgs,
        registry: &[Box<dyn AnySemantics>],
    ) -> anyhow::Result<Self> {
        let input = match select::kwargs(args)? {
            // The model's generation config sits under --kwargs (clap
            // requires them).
            Some(kwargs) => Input::Kwargs {
                config: args
                    .generation_config
                    .as_deref()
                    .map(GenerationConfig::from_path)
                    .transpose()?,
                kwargs,
            },
            None => Input::Recorded,
        };
        let (transformers_warning, version_notes) = match &input {
            Input::Kwargs { kwargs, config } => (
                TransformersWarning::for_kwargs(kwargs, config.as_ref()),
                hf_sampling::version::differences(kwargs, config.as_ref()),
            ),
            Input::Recorded => (None, Vec::new()),
        };
        let pairs = select::pairs(&args.pairs, registry)?;
        let pairs = match &input {
            Input::Kwargs { .. } => select::computed_reference(pairs, registry),
            Input::Recorded => pairs,
        };
        let files = select::fixture_files(&args.fixtures)?;
        if files.is_empty() {
            bail!(
                "nothing compared: no .safetensors fixture in {}",
                args.fixtures
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        let mut loaded = Vec::with_capacity(files.len());
        for (path, default_settings) in &files {
            loaded.push((Fixture::load(path)?, *default_settings));
        }
        select::check_settings(&args.settings, loaded.iter().map(|(fx, _)| fx))?;
        let why_nothing = select::why_nothing(&loaded, args);
        let mut vocabs: HashMap<PathBuf, Vocab> = HashMap::new();
        for (fx, _) in &loaded {
            if let Some(m) = &fx.model
                && let Entry::Vacant(e) = vocabs.entry(m.vocab.clone())
            {
                e.insert(Vocab::load(&m.vocab)?);
            }
        }
        let fixtures = loaded
            .into_iter()
            .map(|(fixture, default_settings)| {
                let (settings, missing) = match &input {
                    Input::Kwargs { .. } => (Vec::new(), Vec::new()),
                    Input::Recorded => {
                        let settings = select::settings(&fixture, default_settings, args);
                        let missing = select::missing_settings(&fixture, args)
                            .into_iter()
                            .map(String::from)
                            .collect();
                        (settings, missing)
                    }
                };
                PlannedFixture {
                    fixture,
                    settings,
                    missing,
                }
            })
            .collect();
        Ok(Self {
            input,
            transformers_warning,
            version_notes,
            pairs,
            fixtures,
            vocabs,
            row_args: RowArgs {
                draws: args.draws,
                seed: args.seed,
                show_tokens: args.show_tokens,
            },
            why_nothing,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use parity_core::Role;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        report: ReportArgs,
    }

    fn args(argv: &[&str]) -> ReportArgs {
        let argv = std::iter::once("report").chain(argv.iter().copied());
        Cli::try_parse_from(argv).expect("valid arguments").report
    }

    /// The two reference semantics (recorded and computed), which is all
    /// the library itself knows of.
    fn registry() -> Vec<Box<dyn AnySemantics>> {
        vec![
            Box::new(hf_sampling::Hf::new(None)),
            Box::new(hf_sampling::HfRust::new(None)),
        ]
    }

    fn edge(name: &str) -> String {
        let dir = parity_core::fixture::bundled_dir().expect("bundled fixtures");
        dir.join("edge").join(name).display().to_string()
    }

    #[test]
    fn the_default_plan_is_the_bundled_fixtures_settings() {
        let registry = registry();
        let plan = Plan::resolve(&args(&[]), &registry).expect("plan");
        assert!(matches!(plan.input, Input::Recorded));
        assert!(plan.transformers_warning.is_none() && plan.version_notes.is_empty());
        let names: Vec<&str> = plan
            .fixtures
            .iter()
            .map(|f| f.fixture.name.as_str())
            .collect();
        assert_eq!(names.last(), Some(&"ties_3221"), "{names:?}");
        // The article's six on each model fixture, the tie demonstration's one.
        for f in &plan.fixtures {
            let got: Vec<&str> = f
                .settings
                .iter()
                .map(|&i| f.fixture.settings[i].name.as_str())
                .collect();
            if f.fixture.name == "ties_3221" {
                assert_eq!(got, ["top_k2"]);
            } else {
                assert_eq!(got.len(), select::DEFAULT_SETTINGS.len(), "{got:?}");
            }
            assert!(f.missing.is_empty());
        }
        // The recorded reference against every default semantics (here: its
        // computed twin).
        let role = |r: Role| registry.iter().position(|s| s.role() == r);
        assert_eq!(
            plan.pairs,
            [(
                role(Role::Reference).expect("recorded"),
                role(Role::ReferenceComputed).expect("computed")
            )]
        );
    }

    #[test]
    fn kwargs_swap_the_recorded_reference_for_the_computed_one() {
        let registry = registry();
        let plan = Plan::resolve(
            &args(&["--kwargs", r#"{"do_sample": true, "top_k": 5}"#]),
            &registry,
        )
        .expect("plan");
        assert!(matches!(plan.input, Input::Kwargs { .. }));
        // hf:hf-rust became hf-rust:hf-rust, and is dropped.
        assert_eq!(plan.pairs, []);
        assert!(plan.fixtures.iter().all(|f| f.settings.is_empty()));
    }

    #[test]
    fn a_setting_no_fixture_records_is_refused_before_any_row() {
        let err = Plan::resolve(&args(&["--settings", "k40,nope"]), &registry())
            .err()
            .expect("refused");
        let text = err.to_string();
        assert!(text.contains("no fixture records nope"), "{text}");
    }

    #[test]
    fn a_setting_one_fixture_lacks_is_noted_there() {
        let plan = Plan::resolve(
            &args(&[
                &edge("ties_3221.safetensors"),
                &edge("v1.safetensors"),
                "--settings",
                "top_k2",
            ]),
            &registry(),
        )
        .expect("plan");
        let [ties, v1] = &plan.fixtures[..] else {
            panic!("two fixtures");
        };
        assert_eq!((ties.settings.len(), ties.missing.len()), (1, 0));
        assert_eq!(v1.settings, Vec::<usize>::new());
        assert_eq!(v1.missing, ["top_k2"]);
    }

    #[test]
    fn version_notes_come_with_the_kwargs() {
        let plan = Plan::resolve(
            &args(&[
                "--kwargs",
                r#"{"sequence_bias": [[[0], -1.0]], "do_sample": true}"#,
            ]),
            &registry(),
        )
        .expect("plan");
        assert_eq!(plan.version_notes.len(), 2, "{:#?}", plan.version_notes);
        assert!(plan.version_notes[0].contains("4.57.6 raises"));
    }

    #[test]
    fn an_unknown_pair_is_refused_naming_the_known() {
        let err = Plan::resolve(&args(&["--pairs", "hf:nope"]), &registry())
            .err()
            .expect("refused");
        let text = err.to_string();
        assert!(text.contains(r#"unknown semantics "nope""#), "{text}");
        assert!(text.contains("hf-rust"), "{text}");
    }
}
