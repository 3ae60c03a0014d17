//! What a request's `seed` does, per request route: the one type every
//! engine states its routes' seed behaviour in ([`RouteSeed`]), so that
//! `compare request` and `compare semantics` print it and
//! docs/semantics.md tabulates it.
//!
//! "Same request, same seed, different answer" has two causes: the logits
//! moved (a prompt served from the cache, another batch shape), or the
//! seed does not do what the user thinks. This module is about the second:
//! an engine's route either seeds a generator of the request's own, seeds
//! (or draws from) the process-wide generator every concurrent request
//! shares, ignores or refuses the field, derives a seed when none is given,
//! or draws in a way that depends on the requests batched with it. Each
//! engine crate says which, with the source line and the versions read.
//! This module knows no engine.

use serde::Serialize;

/// What a route does with `seed`: once for a request that gives one
/// ([`RouteSeed::given`]) and once for a request without
/// ([`RouteSeed::absent`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case", tag = "rule")]
pub enum SeedRule {
    /// The seed seeds a generator of the request's own: the same seed
    /// draws the same token on the same logits, whatever else runs.
    PerRequest,
    /// The seed reseeds (or the draw continues) the one process-wide
    /// generator: a request's draw depends on every draw any other request
    /// made from it since, so concurrent requests do not repeat.
    ProcessGlobal,
    /// The seed seeds a generator of the request's own, but the draw still
    /// depends on the requests batched with it (see the note).
    BatchDependent,
    /// The route drops the field unread.
    Ignored,
    /// The route refuses a request carrying the field.
    Refused,
    /// No seed: a fresh random seed per request (not reproducible).
    Random,
    /// No seed: a fixed seed stands in for it, so every such request
    /// draws as if it had sent `value`.
    Fixed {
        /// The seed used, as the engine writes it.
        value: &'static str,
    },
    /// No seed: one generator per process, seeded with `value` when the
    /// process starts, so a fresh process repeats its first answers and
    /// later ones depend on every request before.
    FixedAtStart {
        /// The start seed, as the engine writes it.
        value: &'static str,
    },
    /// The API has no default: a seed must be given.
    Required,
}

impl SeedRule {
    /// The rule in a few words, for tables and one-line summaries.
    pub fn words(&self) -> String {
        match self {
            SeedRule::PerRequest => "per-request generator".into(),
            SeedRule::ProcessGlobal => "process-global generator".into(),
            SeedRule::BatchDependent => "per request, batch-dependent".into(),
            SeedRule::Ignored => "ignored".into(),
            SeedRule::Refused => "refused".into(),
            SeedRule::Random => "fresh random seed per request".into(),
            SeedRule::Fixed { value } => format!("fixed seed {value}"),
            SeedRule::FixedAtStart { value } => {
                format!("one generator seeded {value} at process start")
            }
            SeedRule::Required => "required (no default)".into(),
        }
    }

    /// Whether the same request with the same seed draws the same token on
    /// the same logits under this rule, whatever else the server runs.
    pub fn repeats_under_load(&self) -> bool {
        matches!(self, SeedRule::PerRequest | SeedRule::Fixed { .. })
    }
}

/// What `seed` does on one request route of one engine, in one server
/// setup.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct RouteSeed {
    /// The route it describes: a [`crate::Route::endpoint`] label of the
    /// same semantics.
    pub endpoint: crate::Endpoint,
    /// The server setup it holds in (`""`: the default setup; otherwise
    /// the flag, e.g. `--enable-deterministic-inference`).
    pub setup: &'static str,
    /// A request that gives a seed.
    pub given: SeedRule,
    /// A request that gives none (or the engine's "no seed" value).
    pub absent: SeedRule,
    /// The engine versions whose source was read.
    pub versions: &'static str,
    /// Where the source says so (file:line at a version).
    pub source: &'static str,
    /// Anything a user must know beyond the two rules (empty if nothing).
    pub note: &'static str,
}

impl RouteSeed {
    /// One line: `[with SETUP: ]GIVEN; absent: ABSENT [versions: source]`.
    pub fn line(&self) -> String {
        let setup = if self.setup.is_empty() {
            String::new()
        } else {
            format!("with {}: ", self.setup)
        };
        format!(
            "{setup}{}; absent: {} [{}: {}]",
            self.given.words(),
            self.absent.words(),
            self.versions,
            self.source
        )
    }
}

/// The entries of `seeds` for `endpoint`, in order (default setup first, as
/// engines list them).
pub fn for_endpoint(
    seeds: &[RouteSeed],
    endpoint: crate::Endpoint,
) -> impl Iterator<Item = &RouteSeed> + '_ {
    seeds.iter().filter(move |s| s.endpoint == endpoint)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_names_both_rules_the_setup_and_the_source() {
        let s = RouteSeed {
            endpoint: crate::Endpoint::http(
                crate::Server::new("x"),
                crate::Protocol::OpenaiCompletions,
            ),
            setup: "--flag",
            given: SeedRule::PerRequest,
            absent: SeedRule::Fixed { value: "42" },
            versions: "1.0",
            source: "a.py:3",
            note: "",
        };
        assert_eq!(
            s.line(),
            "with --flag: per-request generator; absent: fixed seed 42 [1.0: a.py:3]"
        );
        let json = serde_json::to_value(s.absent).expect("json");
        assert_eq!(json, serde_json::json!({"rule": "fixed", "value": "42"}));
        assert!(SeedRule::PerRequest.repeats_under_load());
        assert!(!SeedRule::ProcessGlobal.repeats_under_load());
    }
}
