//! The registry: a semantics is one module and one registry line away from
//! every command (docs/architecture.md).

use std::io::Cursor;

use comparison::cli::{
    DistArgs, Format, ReportArgs, RequestArgs, SemanticsArgs, TiesArgs, TranslateArgs,
};
use parity_core::metrics::argmax_first;
use parity_core::{
    Context, Distribution, Error, Info, Logits, Precision, Role, Route, Semantics,
    TranslateOptions, Translation, TranslationLine,
};
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
    fn role(&self) -> Role {
        Role::Default
    }
    /// A toy server: always greedy, whatever the request says.
    fn from_request(
        &self,
        request: &Map<String, Value>,
        _: Option<&Map<String, Value>>,
    ) -> Vec<Route<()>> {
        vec![
            Route::new(
                parity_core::Endpoint::http(
                    parity_core::Server::new("greedy-server"),
                    parity_core::Protocol::OpenaiChat,
                ),
                Ok(()),
            )
            .ignoring_all_but(request, |_| false),
        ]
    }
    /// Greedy decoding is the toy's only setup: it matches transformers
    /// exactly when transformers decodes greedily.
    fn translate(
        &self,
        kwargs: &Map<String, Value>,
        _: &TranslateOptions,
    ) -> Option<Result<Translation, Error>> {
        let greedy = kwargs.get("do_sample") != Some(&Value::Bool(true));
        Some(Ok(Translation {
            lines: vec![TranslationLine::Plain(format!(
                "greedy-server: exact = {greedy}"
            ))],
            json: Map::new(),
            params: greedy.then(Map::new),
        }))
    }
}

#[test]
fn a_toy_semantics_is_one_module_and_one_registry_line() {
    let mut engines = compare::registry::engines(None, &compare::registry::Options::default())
        .expect("the registry builds");
    engines.semantics.push(Box::new(Greedy)); // the registry line
    let mut progress = comparison::Progress::hidden();

    // dist: [1, 3, 3] → the first maximum, index 1.
    let args = DistArgs {
        semantics: "greedy".into(),
        generation_config: None,
        vocab: Default::default(),
    };
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let input = "{\"logits\": [1, 3, 3]}\n{\"logits\": [0], \"params\": {\"k\": 1}}\n";
    let summary = comparison::dist::run(&args, &engines, Cursor::new(input), &mut out, &mut err)
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
    let outcome = comparison::report::run(&args, &engines, &mut progress).expect("report runs");
    let row = &outcome.report.rows[0];
    assert_eq!((row.left.as_str(), row.right.as_str()), ("hf", "greedy"));
    assert_eq!((row.kept_left, row.kept_right), (Some(3), Some(1)));

    // The default report: Role::Default puts it beside the others, with no --pairs.
    let args = ReportArgs {
        settings: vec!["top_k2".into()],
        draws: parity_core::DrawCount::Exactly(0),
        ..ReportArgs::default()
    };
    let outcome = comparison::report::run(&args, &engines, &mut progress).expect("report runs");
    let greedy: Vec<_> = outcome
        .report
        .rows
        .iter()
        .filter(|r| r.right == "greedy")
        .collect();
    assert_eq!(greedy.len(), 1, "one tie fixture, one setting");
    assert_eq!(
        (greedy[0].left.as_str(), greedy[0].kept_right),
        ("hf", Some(1))
    );

    // semantics: listed with its role.
    let mut out = Vec::new();
    let args = SemanticsArgs {
        format: Format::Json,
    };
    comparison::semantics::run(&args, &engines, &mut out).expect("lists");
    let v: Value = serde_json::from_slice(&out).expect("json");
    let listed = v["semantics"]
        .as_array()
        .expect("list")
        .iter()
        .find(|s| s["name"] == "greedy")
        .cloned()
        .expect("greedy listed");
    assert_eq!(listed["role"], "default");

    // ties: the toy keeps only the first maximum of [3, 2, 2, 1].
    let mut out = Vec::new();
    let args = TiesArgs {
        logits: vec![3.0, 2.0, 2.0, 1.0],
        k: 2,
        draws: 0,
        seed: 42,
        format: Format::Json,
        vocab: Default::default(),
    };
    comparison::ties::run(&args, &engines, &mut out).expect("ties");
    let v: Value = serde_json::from_slice(&out).expect("json");
    let toy = v["semantics"]
        .as_array()
        .expect("list")
        .iter()
        .find(|s| s["name"] == "greedy")
        .cloned()
        .expect("greedy in ties");
    assert_eq!(toy["kept"], serde_json::json!([0]));

    // request: its server's route, every sampling field listed as ignored.
    let mut out = Vec::new();
    let args = RequestArgs {
        request: r#"{"temperature": 0.7}"#.into(),
        fixtures: Vec::new(),
        generation_config: None,
        expect_tv_below: None,
        against: None,
        allow_unknown: false,
        format: Format::Json,
    };
    comparison::request::run(&args, None, &engines, &mut out, &mut Vec::new()).expect("request");
    let v: Value = serde_json::from_slice(&out).expect("json");
    let endpoint = v["endpoints"]
        .as_array()
        .expect("endpoints")
        .iter()
        .find(|e| e["semantics"] == "greedy")
        .cloned()
        .expect("the toy's route");
    assert_eq!(endpoint["endpoint"], "greedy-server /v1/chat/completions");
    assert_eq!(endpoint["ignored"], serde_json::json!(["temperature"]));

    // translate --to greedy: its own lines, and the proof on the six SmolLM2
    // fixtures when transformers decodes greedily (argmax is argmax).
    let mut out = Vec::new();
    let args = TranslateArgs {
        kwargs: "{}".into(),
        to: Some("greedy".into()),
        context_len: 4096,
        generation_config: None,
        format: Format::Text,
    };
    comparison::translate::run(&args, None, &engines, &mut progress, &mut out).expect("translate");
    let text = String::from_utf8(out).expect("utf-8");
    assert!(text.contains("greedy-server: exact = true"), "{text}");
    assert!(
        text.contains("proof: same as transformers on 6 of 6 bundled SmolLM2 fixtures"),
        "{text}"
    );
}

#[test]
fn every_semantics_names_its_engine_and_params() {
    for s in compare::registry::all(None, Default::default()) {
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

/// `compare diff --setup exact` swaps each engine for its exact setup by
/// registry name, and keeps the literal one where the name is unknown: every
/// name an engine gives must be in the registry, another entry, of the same
/// engine.
#[test]
fn every_exact_setup_is_another_registry_entry_of_the_same_engine() {
    let all = compare::registry::all(None, Default::default());
    let mut setups = 0;
    for s in &all {
        let Some(exact) = s.exact_setup() else {
            continue;
        };
        setups += 1;
        let name = s.info().name;
        let target = all.iter().find(|t| t.info().name == exact);
        let target =
            target.unwrap_or_else(|| panic!("{name}: exact setup {exact:?} is no registry entry"));
        assert_ne!(exact, name, "{name} names itself as its exact setup");
        assert_eq!(target.info().engine, s.info().engine, "{name} → {exact}");
    }
    assert!(setups > 0, "no semantics has an exact setup");
}

/// Every request route states what `seed` does (with its source and
/// versions), and every stated rule names a route its semantics has: a
/// renamed endpoint cannot leave its seed line behind.
#[test]
fn every_request_route_says_what_seed_does() {
    let request = serde_json::Map::new();
    let mut routes = 0;
    for s in compare::registry::all(None, Default::default()) {
        let name = s.info().name;
        let endpoints: Vec<parity_core::Endpoint> = s
            .prepare_request(&request, None)
            .iter()
            .map(|r| r.endpoint)
            .collect();
        for &e in &endpoints {
            routes += 1;
            let rules: Vec<_> = parity_core::seed::for_endpoint(s.seed(), e).collect();
            assert!(!rules.is_empty(), "{name}: route {e} states no seed rule");
            assert_eq!(
                rules[0].setup, "",
                "{name}: {e}: the default setup comes first"
            );
        }
        for rule in s.seed() {
            let labels: Vec<String> = endpoints.iter().map(|e| e.label()).collect();
            assert!(
                endpoints.contains(&rule.endpoint),
                "{name}: seed rule for {}, which is not one of its routes {labels:?}",
                rule.endpoint
            );
            assert!(
                !rule.source.is_empty() && !rule.versions.is_empty(),
                "{name}: {rule:?}"
            );
        }
    }
    assert!(routes >= 18, "{routes} routes");
}

/// docs/semantics.md's seed table is the registry's seed rules, row for row.
#[test]
fn the_documented_seed_table_is_the_registrys() {
    let table =
        comparison::semantics::seed_table(&compare::registry::all(None, Default::default()));
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/semantics.md"
    ))
    .expect("docs/semantics.md");
    assert!(
        doc.contains(&table),
        "docs/semantics.md's seed table differs from the registry's; put this in its place:\n{table}"
    );
}
