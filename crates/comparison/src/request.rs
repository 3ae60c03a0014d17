//! `compare request`: one OpenAI-style request through every engine's server.
//!
//! "The same model answers differently in two servers": the
//! same request body reaches each engine's sampler through that engine's own
//! reading of it — its defaults for absent fields, the fields it drops, the
//! model's `generation_config.json` merged or not. Each semantics says how
//! its servers read a request ([`parity_core::Semantics::from_request`]);
//! this command runs every route on each fixture's logits and measures it
//! against the first route, transformers' `generate(**request)`.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::bail;
use parity_core::{AnySemantics, Comparison, Distribution, Fixture, Logits, Prepared};
use serde::Serialize;
use serde_json::{Map, Value};

use super::report::rows::Case;
use super::report::select;
use super::report::text::{wrap_width, wrapped};
use crate::Engines;
use crate::cli::{Format, RequestArgs};
use hf_sampling::GenerationConfig;

mod send;
mod unknown;

/// One endpoint's reading of the request.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Endpoint {
    /// The semantics that runs it (`compare semantics` lists them).
    pub semantics: &'static str,
    /// The endpoint and server.
    pub endpoint: parity_core::Endpoint,
    /// The params the sampler runs with (null when refused).
    pub params: Option<Value>,
    /// Why the engine refuses the request, when it does.
    pub error: Option<String>,
    /// Request fields this endpoint drops unread.
    pub ignored: Vec<String>,
    /// What the endpoint decided on its own.
    pub notes: Vec<String>,
    /// Where each effective field came from, for the engines that say
    /// (`{"top_k": "model-file", ...}`; empty for the others).
    #[serde(skip_serializing_if = "Map::is_empty")]
    pub sources: Map<String, Value>,
    /// What `seed` does on this endpoint, one entry per server setup
    /// ([`parity_core::RouteSeed`]).
    pub seed: Vec<parity_core::RouteSeed>,
}

/// One endpoint on one fixture.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct Cell {
    /// [`Endpoint::endpoint`].
    pub endpoint: parity_core::Endpoint,
    /// Tokens it can draw (null when it could not run).
    pub kept: Option<usize>,
    /// Total variation distance to the reference.
    pub tv: Option<f64>,
    /// Largest |Δp| to the reference.
    pub max_abs_diff: Option<f64>,
    /// Why it could not run on these logits.
    pub error: Option<String>,
}

/// One fixture's cells.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct FixtureCells {
    /// The fixture's name.
    pub fixture: String,
    /// Its context, in words.
    pub context: String,
    /// One cell per endpoint, in [`Answer::endpoints`] order.
    pub cells: Vec<Cell>,
}

/// The whole answer (`--format json`, docs/report-schema.md).
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct Answer {
    /// Version of the document ([`crate::report::SCHEMA`]).
    pub schema: u32,
    /// The request as given.
    pub request: Map<String, Value>,
    /// The generation_config.json read (`--generation-config`, or a
    /// `--model-file` that is one), if any.
    pub generation_config: Option<String>,
    /// Every endpoint; the first is the reference.
    pub endpoints: Vec<Endpoint>,
    /// Per fixture, each endpoint against the reference.
    pub fixtures: Vec<FixtureCells>,
    /// What to send to each endpoint but the reference for its distribution.
    pub send: Vec<send::Send>,
}

/// A resolved `compare request`: the request read, every route's reading
/// of it (the reference's accepted), the fixtures to run it on.
struct Plan<'s> {
    request: Map<String, Value>,
    /// The generation config's values, when one was given.
    config: Option<Map<String, Value>>,
    routes: Vec<Routed<'s>>,
    files: Vec<PathBuf>,
}

impl<'s> Plan<'s> {
    /// Reads `args` against `semantics`: the request (a JSON object), each
    /// route's reading, the unknown-field refusal (unless
    /// `--allow-unknown`), the reference's verdict and the fixture files.
    fn resolve(
        args: &RequestArgs,
        config: Option<&GenerationConfig>,
        semantics: &'s [Box<dyn AnySemantics>],
    ) -> anyhow::Result<Self> {
        let request = match serde_json::from_str::<Value>(&args.request) {
            Ok(Value::Object(m)) => m,
            Ok(other) => bail!("the request must be a JSON object, got {other}"),
            Err(e) => bail!("the request is not JSON ({e}): {:?}", args.request),
        };
        let config = config.map(|c| c.values().clone());
        let routes = routes(semantics, &request, config.as_ref());
        if !args.allow_unknown {
            let params: Vec<Option<&Value>> =
                routes.iter().map(|(e, _)| e.params.as_ref()).collect();
            unknown::refuse_unknown(semantics, &request, config.as_ref(), &params)?;
        }
        let Some((first, reference)) = routes.first() else {
            bail!("no semantics reads requests");
        };
        if reference.is_err() {
            let why = first.error.clone().unwrap_or_default();
            bail!("{} refuses the request: {why}", first.endpoint);
        }
        let files = select::fixture_files(&args.fixtures)?;
        let files: Vec<PathBuf> = files
            .into_iter()
            // The model fixtures by default; the bundled tie case is a
            // 4-token toy.
            .filter(|(_, s)| !args.fixtures.is_empty() || s.is_none())
            .map(|(path, _)| path)
            .collect();
        if files.is_empty() {
            bail!("nothing compared: no .safetensors fixture given");
        }
        Ok(Self {
            request,
            config,
            routes,
            files,
        })
    }

    /// Runs every route on every fixture, then works out what to send.
    fn answer(
        self,
        semantics: &[Box<dyn AnySemantics>],
        generation_config: Option<String>,
    ) -> anyhow::Result<Answer> {
        let fixtures = self
            .files
            .iter()
            .map(|path| fixture_cells(path, &self.routes))
            .collect::<anyhow::Result<Vec<_>>>()?;
        let send = send::advise(
            semantics,
            &self.request,
            self.config.as_ref(),
            &self.routes,
            &self.files,
        )?;
        Ok(Answer {
            schema: crate::report::SCHEMA,
            request: self.request,
            generation_config,
            endpoints: self.routes.into_iter().map(|(e, _)| e).collect(),
            fixtures,
            send,
        })
    }
}

/// Runs the request through every engine on every fixture and writes the answer.
/// `config` is the `--generation-config` the registry was built with.
/// `Ok(true)`: `--expect-tv-below` failed (the command exits 1); each
/// failing cell is a line on `err`.
pub fn run(
    args: &RequestArgs,
    config: Option<&GenerationConfig>,
    engines: &Engines,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<bool> {
    let semantics = &engines.semantics[..];
    let plan = Plan::resolve(args, config, semantics)?;
    let generation_config = args
        .generation_config
        .as_ref()
        .map(|p| p.display().to_string());
    let answer = plan.answer(semantics, generation_config)?;
    match args.format {
        Format::Json => {
            serde_json::to_writer_pretty(&mut *out, &answer)?;
            writeln!(out)?;
        }
        Format::Text => {
            write_text(&answer, wrap_width(), out)?;
            write_send(&answer, wrap_width(), out)?;
        }
    }
    Ok(match (args.expect_tv_below, &args.against) {
        (Some(bar), Some(against)) => {
            let failures = expect_tv_below(&answer, against, bar);
            for f in &failures {
                // Best effort: the exit status carries the verdict.
                let _ = writeln!(err, "--expect-tv-below {bar}: {f}");
            }
            !failures.is_empty()
        }
        _ => false,
    })
}

/// The "what to send" lines, one per endpoint, after the tables.
fn write_send(answer: &Answer, width: usize, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out)?;
    writeln!(
        out,
        "What to send for transformers' distribution (proven on the {} above):",
        match answer.fixtures.len() {
            1 => "fixture".to_string(),
            n => format!("{n} fixtures"),
        }
    )?;
    for s in &answer.send {
        wrapped(
            out,
            width,
            &format!("  {}: ", s.endpoint),
            6,
            &send::text(s),
        )?;
    }
    Ok(())
}

/// The routes named by `against` (an endpoint, or every route of a
/// semantics) must be within TV `bar` of the reference on every fixture:
/// one line per cell that is not (or could not run).
fn expect_tv_below(answer: &Answer, against: &str, bar: f64) -> Vec<String> {
    let picked: Vec<usize> = answer
        .endpoints
        .iter()
        .enumerate()
        .filter(|(_, e)| e.endpoint.label() == against || e.semantics == against)
        .map(|(i, _)| i)
        .collect();
    if picked.is_empty() {
        let names: Vec<String> = answer
            .endpoints
            .iter()
            .map(|e| e.endpoint.label())
            .collect();
        return vec![format!(
            "--against {against:?} names no route (one of: {})",
            names.join("; ")
        )];
    }
    let mut failures = Vec::new();
    for f in &answer.fixtures {
        for &i in &picked {
            let Some(cell) = f.cells.get(i) else { continue };
            match cell.tv {
                Some(tv) if tv < bar => {}
                Some(tv) => failures.push(format!(
                    "{}: {} is at TV {tv:.3e} from {}, not below {bar}",
                    f.fixture, cell.endpoint, answer.endpoints[0].endpoint
                )),
                None => failures.push(format!(
                    "{}: {} could not run: {}",
                    f.fixture,
                    cell.endpoint,
                    cell.error.as_deref().unwrap_or("refused")
                )),
            }
        }
    }
    failures
}

type Routed<'s> = (Endpoint, Result<Box<dyn Prepared + 's>, String>);

/// Every semantics' routes for the request, prepared once.
fn routes<'s>(
    semantics: &'s [Box<dyn AnySemantics>],
    request: &Map<String, Value>,
    config: Option<&Map<String, Value>>,
) -> Vec<Routed<'s>> {
    let mut out: Vec<Routed<'s>> = Vec::new();
    for s in semantics {
        for route in s.prepare_request(request, config) {
            let params = route
                .params
                .as_ref()
                .ok()
                .and_then(|p| p.describe())
                .map(parity_core::Described::into_json);
            let endpoint = Endpoint {
                semantics: s.info().name,
                endpoint: route.endpoint,
                params,
                error: route.params.as_ref().err().map(|e| e.to_string()),
                ignored: route.ignored,
                notes: route.notes,
                sources: sources_json(&route.sources),
                seed: seed_of(s.as_ref(), route.endpoint),
            };
            out.push((endpoint, route.params.map_err(|e| e.to_string())));
        }
    }
    out
}

/// Every route on one fixture, measured against the first (the reference,
/// which the caller has checked is not refused).
fn fixture_cells(path: &Path, routes: &[Routed<'_>]) -> anyhow::Result<FixtureCells> {
    let fx = Fixture::load(path)?;
    let case = Case::fixture(&fx, None)?;
    let logits = Logits::from_f32(case.logits);
    let dists: Vec<Result<Distribution, String>> = routes
        .iter()
        .map(|(_, prepared)| {
            prepared
                .as_ref()
                .map_err(|_| "refused (see above)".to_string())
                .and_then(|p| {
                    p.distribution(&logits, &case.context)
                        .map_err(|e| e.to_string())
                })
        })
        .collect();
    let reference = match dists.first() {
        Some(Ok(d)) => d,
        Some(Err(e)) => bail!("{}: transformers' distribution: {e}", case.origin),
        None => bail!("no semantics reads requests"),
    };
    let cells = routes
        .iter()
        .zip(&dists)
        .map(|((endpoint, _), dist)| {
            let cmp = dist.as_ref().ok().and_then(|d| {
                Comparison::new(reference.probs(), d.probs())
                    .ok()
                    .map(|c| (d.kept().len(), c))
            });
            Cell {
                endpoint: endpoint.endpoint,
                kept: cmp.as_ref().map(|(k, _)| *k),
                tv: cmp.as_ref().map(|(_, c)| c.tv),
                max_abs_diff: cmp.as_ref().map(|(_, c)| c.max_abs_diff),
                error: dist.as_ref().err().cloned(),
            }
        })
        .collect();
    Ok(FixtureCells {
        fixture: case.name.clone(),
        context: case.description.clone(),
        cells,
    })
}

/// What `seed` does on `endpoint`, as its semantics states it.
fn seed_of(
    semantics: &dyn AnySemantics,
    endpoint: parity_core::Endpoint,
) -> Vec<parity_core::RouteSeed> {
    parity_core::seed::for_endpoint(semantics.seed(), endpoint)
        .copied()
        .collect()
}

/// One `seed:` line per route: the default setup's rules, then each other
/// setup's after ` | ` (`unknown` when the engine states none).
fn write_seed(out: &mut dyn Write, width: usize, e: &Endpoint) -> io::Result<()> {
    let line = if e.seed.is_empty() {
        "unknown (the engine states no rule)".to_string()
    } else {
        e.seed
            .iter()
            .map(parity_core::RouteSeed::line)
            .collect::<Vec<_>>()
            .join(" | ")
    };
    wrapped(out, width, "      seed: ", 8, &line)
}

/// The params object as `key value, key value`, for wrapping.
fn params_text(params: &Option<Value>) -> String {
    match params {
        Some(Value::Object(m)) => m
            .iter()
            .map(|(k, v)| match v {
                // A nested object as `{key: value, ...}`, so that it wraps.
                Value::Object(inner) => format!(
                    "{k} {{{}}}",
                    inner
                        .iter()
                        .map(|(a, b)| format!("{a}: {b}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                v => format!("{k} {v}"),
            })
            .collect::<Vec<_>>()
            .join(", "),
        Some(Value::String(text)) => text.clone(),
        Some(other) => other.to_string(),
        None => "-".to_string(),
    }
}

fn write_text(answer: &Answer, width: usize, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "request: {}", Value::Object(answer.request.clone()))?;
    match &answer.generation_config {
        Some(path) => writeln!(out, "generation config: {path}")?,
        None => writeln!(out, "generation config: none")?,
    }
    writeln!(out)?;
    writeln!(
        out,
        "What each server samples with (the first is the reference):"
    )?;
    for e in &answer.endpoints {
        writeln!(out, "  {} [{}]", e.endpoint, e.semantics)?;
        match &e.error {
            Some(err) => wrapped(out, width, "      refused: ", 6, err)?,
            None => wrapped(out, width, "      ", 6, &params_text(&e.params))?,
        }
        if !e.ignored.is_empty() {
            wrapped(out, width, "      ignores: ", 6, &e.ignored.join(", "))?;
        }
        for note in &e.notes {
            wrapped(out, width, "      note: ", 6, note)?;
        }
        write_sources(e, width, out)?;
        write_seed(out, width, e)?;
    }
    // The figures take 2 + 6 + 2 + 9 + 2 + 9 columns after the name.
    let name_width = answer
        .endpoints
        .iter()
        .map(|e| e.endpoint.label().chars().count())
        .max()
        .unwrap_or(0)
        .min(width.saturating_sub(32).max(20));
    let figure = |x: Option<f64>| x.map_or("-".to_string(), |x| format!("{x:.2e}"));
    for fx in &answer.fixtures {
        writeln!(out)?;
        let header = format!("{} ({})", fx.fixture, fx.context);
        wrapped(out, width, "", 4, &header)?;
        writeln!(
            out,
            "  {:name_width$}  {:>6}  {:>9}  {:>9}",
            "endpoint", "kept", "TV", "max|Δp|"
        )?;
        for (i, c) in fx.cells.iter().enumerate() {
            let kept = c.kept.map_or("-".to_string(), |k| k.to_string());
            let (tv, dp) = if i == 0 {
                ("reference".to_string(), String::new())
            } else {
                (figure(c.tv), figure(c.max_abs_diff))
            };
            // A label wider than the column gets a line of its own, the
            // figures below it, so the table stays within the width.
            let label = c.endpoint.label();
            let name = if label.chars().count() > name_width {
                writeln!(out, "  {label}")?;
                ""
            } else {
                &label
            };
            let line = format!("  {name:name_width$}  {kept:>6}  {tv:>9}  {dp:>9}");
            writeln!(out, "{}", line.trim_end())?;
            if let Some(err) = c.error.as_deref().filter(|e| !e.starts_with("refused")) {
                wrapped(out, width, "      error: ", 6, err)?;
            }
        }
    }
    Ok(())
}

/// The route's field sources as a JSON object, field → source.
fn sources_json(sources: &[(String, parity_core::FieldSource)]) -> Map<String, Value> {
    sources
        .iter()
        .map(|(k, s)| {
            let v = serde_json::to_value(s).unwrap_or(Value::Null);
            (k.clone(), v)
        })
        .collect()
}

/// The `from:` line: each field whose value is not the engine's built-in
/// default, with where it came from (nothing when every field is the
/// request's or built in and the engine says no more).
fn write_sources(e: &Endpoint, width: usize, out: &mut dyn Write) -> io::Result<()> {
    if e.sources.is_empty() {
        return Ok(());
    }
    let mut by_source: Vec<(String, Vec<&str>)> = Vec::new();
    for (field, source) in &e.sources {
        let words = source.as_str().unwrap_or("?").replace('-', " ");
        match by_source.iter_mut().find(|(w, _)| *w == words) {
            Some((_, fields)) => fields.push(field),
            None => by_source.push((words, vec![field])),
        }
    }
    let rest = "engine default";
    let mut parts: Vec<String> = by_source
        .iter()
        .filter(|(w, _)| w != rest)
        .map(|(w, fields)| format!("{w}: {}", fields.join(", ")))
        .collect();
    if by_source.iter().any(|(w, _)| w == rest) {
        parts.push(format!("the rest: {rest}"));
    }
    let text = parts.join("; ");
    wrapped(out, width, "      from: ", 6, &text)
}

/// The JSON Schema of this command's `--format json` document
/// ([`crate::json_schema`]).
pub(crate) fn json_schema() -> schemars::Schema {
    schemars::schema_for!(Answer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use parity_core::{Protocol, Server};

    mod plan {
        use super::super::*;
        use clap::Parser;

        #[derive(Parser)]
        struct Cli {
            #[command(flatten)]
            request: RequestArgs,
        }

        fn args(argv: &[&str]) -> RequestArgs {
            let argv = std::iter::once("request").chain(argv.iter().copied());
            Cli::try_parse_from(argv).expect("valid arguments").request
        }

        fn semantics() -> Vec<Box<dyn AnySemantics>> {
            vec![
                crate::toy::server("ref", &["temperature"]),
                crate::toy::server("other", &["top_p"]),
            ]
        }

        fn error(argv: &[&str]) -> String {
            match Plan::resolve(&args(argv), None, &semantics()) {
                Ok(_) => panic!("{argv:?} resolved"),
                Err(e) => format!("{e:#}"),
            }
        }

        #[test]
        fn the_request_must_be_a_json_object() {
            assert_eq!(
                error(&["[1]"]),
                "the request must be a JSON object, got [1]"
            );
            assert!(
                error(&["{"]).starts_with("the request is not JSON ("),
                "{}",
                error(&["{"])
            );
        }

        #[test]
        fn a_field_no_route_reads_is_refused_unless_allowed() {
            let e = error(&[r#"{"frobnicate": 1}"#]);
            assert!(e.contains("frobnicate"), "{e}");
            let sem = semantics();
            let argv = [r#"{"frobnicate": 1}"#, "--allow-unknown"];
            let plan = Plan::resolve(&args(&argv), None, &sem).expect("plan");
            assert_eq!(plan.routes.len(), 2);
            assert_eq!(plan.routes[0].0.ignored, ["frobnicate"]);
        }

        #[test]
        fn the_default_fixtures_leave_out_the_tie_case() {
            let sem = semantics();
            let plan =
                Plan::resolve(&args(&[r#"{"temperature": 0.5}"#]), None, &sem).expect("plan");
            let dir = parity_core::fixture::bundled_dir().expect("bundled fixtures");
            assert!(!plan.files.is_empty());
            assert!(
                plan.files
                    .iter()
                    .all(|f| f.starts_with(dir.join("smollm2"))),
                "{:?}",
                plan.files
            );
            // A folder given is read whole.
            let edge = dir.join("edge").display().to_string();
            let plan = Plan::resolve(&args(&[r#"{"temperature": 0.5}"#, &edge]), None, &sem)
                .expect("plan");
            assert!(plan.files.iter().all(|f| f.starts_with(dir.join("edge"))));
            let empty = std::env::temp_dir().join("comparison-request-plan-empty");
            std::fs::create_dir_all(&empty).expect("scratch folder");
            assert_eq!(
                error(&["{}", &empty.display().to_string()]),
                "nothing compared: no .safetensors fixture given"
            );
        }
    }

    fn endpoint(semantics: &'static str, product: &'static str) -> Endpoint {
        Endpoint {
            semantics,
            endpoint: parity_core::Endpoint::http(Server::new(product), Protocol::OpenaiChat),
            params: None,
            error: None,
            ignored: Vec::new(),
            notes: Vec::new(),
            sources: Map::new(),
            seed: Vec::new(),
        }
    }

    fn cell(e: &Endpoint, tv: Option<f64>, error: Option<&str>) -> Cell {
        Cell {
            endpoint: e.endpoint,
            kept: None,
            tv,
            max_abs_diff: tv,
            error: error.map(str::to_string),
        }
    }

    /// The reference `ref`, engine `x`'s two servers `x1` and `x2`, and `y`,
    /// on two fixtures.
    fn answer() -> Answer {
        let endpoints = vec![
            endpoint("hf", "ref"),
            endpoint("x", "x1"),
            endpoint("x", "x2"),
            endpoint("y", "y1"),
        ];
        let fixtures = vec![
            FixtureCells {
                fixture: "f1".into(),
                context: String::new(),
                cells: vec![
                    cell(&endpoints[0], Some(0.0), None),
                    cell(&endpoints[1], Some(0.001), None),
                    cell(&endpoints[2], Some(0.02), None),
                    cell(&endpoints[3], Some(0.5), None),
                ],
            },
            FixtureCells {
                fixture: "f2".into(),
                context: String::new(),
                cells: vec![
                    cell(&endpoints[0], Some(0.0), None),
                    cell(&endpoints[1], None, Some("no logits")),
                    cell(&endpoints[2], Some(0.01), None),
                    cell(&endpoints[3], None, None),
                ],
            },
        ];
        Answer {
            schema: crate::report::SCHEMA,
            request: Map::new(),
            generation_config: None,
            endpoints,
            fixtures,
            send: Vec::new(),
        }
    }

    #[test]
    fn an_endpoint_within_the_bar_everywhere_passes() {
        // x2 is at 0.02 and 0.01: below 0.05, not below 0.01 (strictly).
        assert!(expect_tv_below(&answer(), "x2 /v1/chat/completions", 0.05).is_empty());
        assert_eq!(
            expect_tv_below(&answer(), "x2 /v1/chat/completions", 0.01),
            [
                "f1: x2 /v1/chat/completions is at TV 2.000e-2 from ref /v1/chat/completions, \
                 not below 0.01",
                "f2: x2 /v1/chat/completions is at TV 1.000e-2 from ref /v1/chat/completions, \
                 not below 0.01",
            ]
        );
    }

    #[test]
    fn a_semantics_name_picks_each_of_its_endpoints() {
        // x1 passes on f1, could not run on f2; x2 fails on f1.
        assert_eq!(
            expect_tv_below(&answer(), "x", 0.015),
            [
                "f1: x2 /v1/chat/completions is at TV 2.000e-2 from ref /v1/chat/completions, \
                 not below 0.015",
                "f2: x1 /v1/chat/completions could not run: no logits",
            ]
        );
        // A cell with neither figure nor error says `refused`.
        assert_eq!(
            expect_tv_below(&answer(), "y", 1.0),
            ["f2: y1 /v1/chat/completions could not run: refused"]
        );
    }

    #[test]
    fn an_against_that_names_nothing_lists_the_routes() {
        assert_eq!(
            expect_tv_below(&answer(), "x3", 0.1),
            [
                "--against \"x3\" names no route (one of: ref /v1/chat/completions; \
                 x1 /v1/chat/completions; x2 /v1/chat/completions; y1 /v1/chat/completions)"
            ]
        );
    }
}
