//! [`LlamaServer`]: llama.cpp's chain as a llama-server started on a model
//! file with sampling metadata, or with sampling flags, runs it — the same
//! semantics (`llama.cpp`) with [`ServerDefaults`] under every request
//! instead of the built-in defaults (see [`crate::defaults`] for the layers
//! and their order).

use serde_json::{Map, Value};

use parity_core::{
    Against, Context, Described, Distribution, Error, Explanation, FieldSource, Info, Logits,
    Route, Semantics, TranslateOptions, Translation,
};

use crate::defaults::ServerDefaults;

/// llama.cpp's server.
pub const LLAMA_SERVER: parity_core::Server = parity_core::Server::new("llama-server");
/// The route compare names (the same chain reads `/completion`'s fields).
pub(crate) const ROUTE: parity_core::Endpoint =
    parity_core::Endpoint::http(LLAMA_SERVER, parity_core::Protocol::OpenaiChat);
use crate::params::{self, ServerParams};
use crate::{LlamaCpp, request_for_generate};

/// llama.cpp's chain under a server's own defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct LlamaServer {
    defaults: ServerDefaults,
}

impl LlamaServer {
    /// The semantics of a llama-server whose defaults are `defaults`.
    pub fn new(defaults: ServerDefaults) -> Self {
        Self { defaults }
    }

    /// Its defaults.
    pub fn defaults(&self) -> &ServerDefaults {
        &self.defaults
    }
}

/// llama-server's route for `request` over `defaults`: the request's own
/// fields replace the defaults; each described field says where its value
/// came from.
pub(crate) fn routes(
    defaults: &ServerDefaults,
    request: &Map<String, Value>,
) -> Vec<Route<ServerParams>> {
    let known = |k: &str| params::Completion::FIELDS.contains(&k) && k != "draws";
    let own: Map<String, Value> = request
        .iter()
        .filter(|(k, _)| known(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let parsed = params::parse_over(defaults.params.clone(), &own);
    let sources = parsed
        .as_ref()
        .map(|p| {
            p.describe()
                .keys()
                .map(|k| {
                    let from_request = own.get(k).is_some_and(|v| !v.is_null());
                    let source = if from_request {
                        FieldSource::Request
                    } else {
                        defaults.source(k)
                    };
                    (k.clone(), source)
                })
                .collect()
        })
        .unwrap_or_default();
    let mut route = Route::new(ROUTE, parsed)
        .ignoring_all_but(request, known)
        .with_sources(sources);
    let layered: Vec<_> = defaults.layered().collect();
    if layered.is_empty() {
        route = route.note(
            "defaults for absent fields: top_k 40, top_p 0.95, min_p 0.05, repeat_last_n 64 (built in; no general.sampling.* key and no flag given)",
        );
    }
    for note in &defaults.notes {
        route = route.note(note.clone());
    }
    vec![route.note(
        "generation_config.json is read only through the GGUF: llama.cpp's converter writes it into general.sampling.* (gguf-py/gguf/metadata.py)",
    )]
}

impl Semantics for LlamaServer {
    type Params = ServerParams;

    fn info(&self) -> &'static Info {
        LlamaCpp.info()
    }

    /// The fields over this server's defaults.
    fn parse_params(&self, params: &Map<String, Value>) -> Result<ServerParams, Error> {
        params::parse_over(self.defaults.params.clone(), params)
    }

    fn distribution(
        &self,
        logits: &Logits,
        context: &Context<'_>,
        params: &ServerParams,
    ) -> Result<Distribution, Error> {
        LlamaCpp.distribution(logits, context, params)
    }

    /// The literal port's request ([`request_for_generate`]), with this
    /// server's defaults under the fields it leaves out.
    fn from_generate(&self, kwargs: &Map<String, Value>) -> Option<Result<ServerParams, Error>> {
        let request = request_for_generate(kwargs)?;
        Some(self.parse_params(&request))
    }

    fn translate(
        &self,
        kwargs: &Map<String, Value>,
        options: &TranslateOptions,
    ) -> Option<Result<Translation, Error>> {
        LlamaCpp.translate(kwargs, options)
    }

    fn from_request(
        &self,
        request: &Map<String, Value>,
        _generation_config: Option<&Map<String, Value>>,
    ) -> Vec<Route<ServerParams>> {
        routes(&self.defaults, request)
    }

    fn describe(&self, params: &ServerParams) -> Option<Described> {
        LlamaCpp.describe(params)
    }

    fn explain(&self, row: &Against<'_>, params: &ServerParams) -> Explanation {
        LlamaCpp.explain(row, params)
    }
}
