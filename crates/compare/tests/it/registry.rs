//! The registry: a semantics is one module and one registry line away from
//! every command (docs/architecture.md).

use std::io::Cursor;

use compare::cli::{DistArgs, ReportArgs};
use parity_core::metrics::argmax_first;
use parity_core::{Context, Distribution, Error, Info, Logits, Precision, Semantics};
use serde_json::{Map, Value};

/// The toy: always the first argmax, whatever the params.
struct Greedy;

static INFO: Info = Info {
    name: "greedy",
    engine: "none (a test)",
    summary: "the first argmax of the logits",
    verified_against: "nothing: a test of the registry",
    params: &[],
};

impl Semantics for Greedy {
    type Params = ();
    fn info(&self) -> &'static Info {
        &INFO
    }
    fn parse_params(&self, params: &Map<String, Value>) -> Result<(), Error> {
        match params.keys().next() {
            Some(key) => Err(Error::new(format_args!("params: unknown key `{key}`"))),
            None => Ok(()),
        }
    }
    fn distribution(
        &self,
        logits: &Logits,
        _: &Context<'_>,
        _: &(),
    ) -> Result<Distribution, Error> {
        let l = logits.to_f32()?;
        Ok(Distribution::one_hot(
            l.len(),
            argmax_first(&l),
            Precision::F32,
        ))
    }
    fn from_generate(&self, _: &Map<String, Value>) -> Option<Result<(), Error>> {
        Some(Ok(()))
    }
}

#[test]
fn a_toy_semantics_is_one_module_and_one_registry_line() {
    let mut registry = compare::registry::all(None);
    registry.push(Box::new(Greedy)); // the registry line

    // dist: [1, 3, 3] → the first maximum, index 1.
    let args = DistArgs {
        semantics: "greedy".into(),
        generation_config: None,
        vocab: None,
    };
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let input = "{\"logits\": [1, 3, 3]}\n{\"logits\": [0], \"params\": {\"k\": 1}}\n";
    let summary =
        compare::commands::dist::run(&args, &registry, Cursor::new(input), &mut out, &mut err)
            .expect("in-memory I/O");
    assert_eq!(summary.failed, 1);
    assert_eq!(
        String::from_utf8(out).expect("utf-8"),
        "{\"kept\":1,\"probs\":[0.0,1.0,0.0]}\n{\"error\":\"params: unknown key `k`\"}\n"
    );

    // report: transformers' top-k 2 on [3, 2, 2, 1] keeps 3 tokens (ties at
    // the k-th kept); greedy keeps token 0 alone.
    let args = ReportArgs {
        fixtures: vec![
            format!(
                "{}/../../fixtures/edge/ties_3221.safetensors",
                env!("CARGO_MANIFEST_DIR")
            )
            .into(),
        ],
        settings: vec!["top_k2".into()],
        pairs: vec!["hf:greedy".into()],
        ..ReportArgs::default()
    };
    let outcome = compare::commands::report::run(&args, &registry, false).expect("report runs");
    let row = &outcome.report.rows[0];
    assert_eq!((row.left.as_str(), row.right.as_str()), ("hf", "greedy"));
    assert_eq!((row.kept_left, row.kept_right), (Some(3), Some(1)));
}

#[test]
fn every_semantics_names_its_engine_and_params() {
    for s in compare::registry::all(None) {
        let info = s.info();
        assert!(
            !info.engine.is_empty() && !info.verified_against.is_empty(),
            "{}",
            info.name
        );
        for p in info.params {
            assert!(
                !p.default.is_empty() && !p.meaning.is_empty(),
                "{}.{}",
                info.name,
                p.name
            );
        }
    }
}
