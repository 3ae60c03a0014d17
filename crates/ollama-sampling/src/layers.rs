//! Ollama's option layering, written once for its three engines:
//! server/routes.go `modelOptionsWithEmbeddingBatchDefault` (the same at
//! every release covered, for every runner) starts from
//! `api.DefaultOptions()`, then applies `opts.FromMap(model.Options)` (the
//! model's Modelfile `PARAMETER`s), then `opts.FromMap(requestOpts)`.
//!
//! `FromMap` (api/types.go): JSON numbers arrive as float64; an `int`
//! option takes `int64(value)`, a `float32` one `float32(value)`; a value
//! of another JSON type is an error (`option "top_k" must be of type
//! integer`; in the model's layer it fails every request to that model);
//! `null` keeps the layer below; an unknown name is logged ("invalid option
//! provided") and ignored. Refused here instead, as everywhere in this
//! project, so a misspelt name cannot silently mean the default; a model
//! parameter that is an option of a newer Ollama than the engine's is
//! skipped, as that engine's Ollama skips it. An infinite float32 passes
//! `FromMap` and fails when the server JSON-encodes the options for its
//! runner ("json: unsupported value: +Inf"): [`Layered::finite`].
//!
//! Each engine's params type holds the options it reads ([`Holds`]) and
//! declares their defaults (its `params!` struct, at the newest release);
//! [`Layered::defaults`] adjusts the one default that moved between
//! releases ([`Version::default_repeat_penalty`]).

use serde_json::{Map, Value};

use parity_core::Error;

use crate::api::{self, Field, Read};
use crate::version::Version;

/// A params field that holds one of Ollama's options: Go `int` or `float32`.
#[derive(Debug)]
pub enum Slot<'a> {
    /// An `int` option.
    Int(&'a mut i64),
    /// A `float32` option.
    Float(&'a mut f32),
}

impl<'a> From<&'a mut i64> for Slot<'a> {
    fn from(v: &'a mut i64) -> Self {
        Slot::Int(v)
    }
}

impl<'a> From<&'a mut f32> for Slot<'a> {
    fn from(v: &'a mut f32) -> Self {
        Slot::Float(v)
    }
}

/// `impl Holds for Params` over the listed fields, each named as the Ollama
/// option it holds: `holds!(Params: temperature, top_k, ...)`.
macro_rules! holds {
    ($ty:ty: $($field:ident),* $(,)?) => {
        impl $crate::layers::Holds for $ty {
            fn slot(&mut self, name: &str) -> Option<$crate::layers::Slot<'_>> {
                match name {
                    $(stringify!($field) => Some((&mut self.$field).into()),)*
                    _ => None,
                }
            }
        }
    };
}
pub(crate) use holds;

/// An engine's params, which hold the sampling options it reads.
pub trait Holds: Default {
    /// The field for the option `name`, or `None` when the engine does not
    /// keep it (the option is then only type-checked).
    fn slot(&mut self, name: &str) -> Option<Slot<'_>>;

    /// Whether the engine keeps the option `name`.
    fn holds(name: &str) -> bool {
        Self::default().slot(name).is_some()
    }
}

/// Which layer set an option.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// `DefaultOptions()`.
    Default,
    /// The model's parameters.
    Model,
    /// The request's options.
    Request,
    /// Filled in by an OpenAI endpoint when the request left it out.
    Endpoint,
}

/// Where a map of options comes from: the words of its errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layer {
    /// The model's parameters.
    Model,
    /// The request's options.
    Request,
}

/// Which `api.Options` fields the engine's Ollama has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fields {
    /// The Go engine's Ollama (f63eea3d2): no `draft_num_predict`.
    GoEngine,
    /// v0.30.0 to v0.33.0-rc2: every field of [`api::OPTIONS`].
    Current,
}

impl Fields {
    fn has(self, field: &Field) -> bool {
        self == Fields::Current || field.since_go_engine
    }

    /// Whether `name` is an option of this Ollama.
    pub fn knows(self, name: &str) -> bool {
        api::option(name).is_some_and(|f| self.has(f))
    }

    fn names(self) -> String {
        api::OPTIONS
            .iter()
            .filter(|f| self.has(f))
            .map(|f| f.name)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// An engine's params after `DefaultOptions()` and the layers so far, with
/// the layer that set each option and the JSON value it was set from.
#[derive(Debug, Clone)]
pub struct Layered<P> {
    /// The params.
    pub params: P,
    fields: Fields,
    set: Vec<(String, Source, Value)>,
}

impl<P: Holds> Layered<P> {
    /// The engine's defaults (its params' `Default`, which is
    /// `DefaultOptions()` at the newest release) as they stand at `version`.
    pub fn defaults(version: Version, fields: Fields) -> Self {
        let mut params = P::default();
        if let Some(Slot::Float(rp)) = params.slot("repeat_penalty") {
            *rp = version.default_repeat_penalty();
        }
        Self {
            params,
            fields,
            set: Vec::new(),
        }
    }

    /// `opts.FromMap(m)`, the `layer`'s options over the ones so far.
    pub fn layer(&mut self, m: &Map<String, Value>, layer: Layer) -> Result<(), Error> {
        let source = match layer {
            Layer::Model => Source::Model,
            Layer::Request => Source::Request,
        };
        for (key, val) in m {
            let Some(field) = api::option(key).filter(|f| self.fields.has(f)) else {
                if layer == Layer::Model && api::option(key).is_some() {
                    continue; // an option of a newer Ollama
                }
                let whose = match layer {
                    Layer::Model => "model parameter",
                    Layer::Request => "option",
                };
                return Err(Error::new(format_args!(
                    "unknown {whose} `{key}` (= {val}; Ollama would log \"invalid option provided\" and ignore it; known options: {})",
                    self.fields.names()
                )));
            };
            if val.is_null() {
                continue;
            }
            let read = api::read(field.kind, val).map_err(|what| refused(key, val, what, layer))?;
            let kept = match (read, self.params.slot(key)) {
                (Read::Int(v), Some(Slot::Int(slot))) => {
                    *slot = v;
                    true
                }
                (Read::Float(v), Some(Slot::Float(slot))) => {
                    *slot = v;
                    true
                }
                _ => false,
            };
            if kept {
                self.set.retain(|(k, ..)| k != key);
                self.set.push((key.clone(), source, val.clone()));
            }
        }
        Ok(())
    }

    /// The layer that set `name` last.
    pub fn source(&self, name: &str) -> Source {
        self.set
            .iter()
            .find(|(k, ..)| k == name)
            .map_or(Source::Default, |(_, s, _)| *s)
    }

    /// Says that the endpoint, not the request, set `name`.
    pub fn mark(&mut self, name: &str, source: Source) {
        if let Some(entry) = self.set.iter_mut().find(|(k, ..)| k == name) {
            entry.1 = source;
        }
    }

    /// The server's JSON encoding of the options for its runner, which
    /// fails on an infinite float32: `to` names the runner, `quote` is what
    /// Ollama's error says before Go's (`failed to marshal data: ` or none).
    pub fn finite(&mut self, to: &str, quote: &str) -> Result<(), Error> {
        for field in api::OPTIONS.iter().filter(|f| f.sampling) {
            if let Some(Slot::Float(v)) = self.params.slot(field.name)
                && !v.is_finite()
            {
                let sign = if *v > 0.0 { "+Inf" } else { "-Inf" };
                let given = self
                    .set
                    .iter()
                    .find(|(k, ..)| k == field.name)
                    .map_or_else(String::new, |(_, _, raw)| format!(" = {raw}"));
                return Err(Error::new(format_args!(
                    "`{}`{given} is infinite as a float32: Ollama cannot send it to {to} ({quote}json: unsupported value: {sign})",
                    field.name
                )));
            }
        }
        Ok(())
    }
}

impl<P: Holds + Clone> Layered<P> {
    /// The value of `name` as Ollama prints it (a float32 shortest), when
    /// the engine keeps it.
    pub fn show(&self, name: &str) -> Option<String> {
        match self.params.clone().slot(name)? {
            Slot::Int(v) => Some(v.to_string()),
            Slot::Float(v) => Some(v.to_string()),
        }
    }
}

/// `FromMap`'s type check of the request's option `key` alone, for an option
/// the engine does not keep: `None` when `key` is no option of `fields`'
/// Ollama.
pub fn check(key: &str, val: &Value, fields: Fields) -> Option<Result<(), Error>> {
    let field = api::option(key).filter(|f| fields.has(f))?;
    Some(if val.is_null() {
        Ok(())
    } else {
        api::read(field.kind, val)
            .map(|_| ())
            .map_err(|what| refused(key, val, what, Layer::Request))
    })
}

/// A native request (`/api/generate`, `/api/chat`) as Ollama's routes read
/// it for an engine whose params are `P`: the `options` object when there is
/// one, otherwise the body's fields that are option names (server/routes.go
/// decodes the body into `api.GenerateRequest` / `api.ChatRequest`, whose
/// `Options map[string]any` is what `FromMap` layers).
#[derive(Debug, Clone)]
pub(crate) struct Native {
    /// The options the engine keeps; an option it does not keep is only
    /// type-checked, as `FromMap` checks it (its error here).
    pub options: Result<Map<String, Value>, Error>,
    /// What the request sends that the engine never reads: top-level fields
    /// beside `options` (a sampling option there is no field of the
    /// request type), options the engine does not keep that shape sampling,
    /// and unknown names under `options`.
    pub ignored: Vec<String>,
}

/// What an engine does with a native request's top-level `format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    /// Samples under the grammar it makes ([`crate::format`]: refused when it
    /// constrains): the field is read.
    Grammar,
    /// Never receives it: the field is ignored.
    Dropped,
}

impl Native {
    /// Reads `request` for an engine that does `format` with its `format`;
    /// `not_an_object` is Go's decoding error for an `options` that is not a
    /// JSON object, which differs between the Go releases of the engines'
    /// Ollama.
    pub(crate) fn read<P: Holds>(
        request: &Map<String, Value>,
        fields: Fields,
        format: Format,
        not_an_object: &str,
    ) -> Self {
        let mut native = Self::options::<P>(request, fields, not_an_object);
        if format == Format::Grammar {
            native.ignored.retain(|k| k != "format");
            if let Err(e) = crate::format::native(request) {
                native.options = Err(e);
            }
        }
        native
    }

    /// The options and the ignored fields, `format` among the latter.
    fn options<P: Holds>(
        request: &Map<String, Value>,
        fields: Fields,
        not_an_object: &str,
    ) -> Self {
        let nested = request.contains_key("options");
        let mut ignored: Vec<String> = if nested {
            request
                .keys()
                .filter(|k| *k != "options" && (!parity_core::not_sampling(k) || P::holds(k)))
                .cloned()
                .collect()
        } else {
            request
                .keys()
                .filter(|k| !fields.knows(k) && !parity_core::not_sampling(k))
                .cloned()
                .collect()
        };
        let source = match request.get("options") {
            Some(Value::Object(o)) => o,
            Some(other) => {
                return Self {
                    options: Err(Error::new(format_args!(
                        "`options` = {other}: Ollama answers 400 ({not_an_object})"
                    ))),
                    ignored,
                };
            }
            None => request,
        };
        let name = |k: &str| {
            if nested {
                format!("options.{k}")
            } else {
                k.to_string()
            }
        };
        let mut options = Map::new();
        for (k, v) in source {
            let unread = if P::holds(k) {
                options.insert(k.clone(), v.clone());
                false
            } else {
                match check(k, v, fields) {
                    Some(Err(e)) => {
                        return Self {
                            options: Err(e),
                            ignored,
                        };
                    }
                    Some(Ok(())) => api::is_sampling(k),
                    None => nested,
                }
            };
            if unread && !ignored.contains(&name(k)) {
                ignored.push(name(k));
            }
        }
        Self {
            options: Ok(options),
            ignored,
        }
    }
}

/// `FromMap`'s refusal of a value, in the words of its layer.
fn refused(key: &str, val: &Value, what: &str, layer: Layer) -> Error {
    match layer {
        Layer::Request => Error::new(format_args!(
            "`{key}` = {val}: Ollama refuses it (option \"{key}\" must be {what})"
        )),
        Layer::Model => Error::new(format_args!(
            "model parameter `{key}` = {val}: Ollama fails every request to this model (option \"{key}\" must be {what})"
        )),
    }
}
