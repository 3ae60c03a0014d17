//! What reads a request, as a type: a server's HTTP route ([`Endpoint::Http`]:
//! a [`Server`] and the [`Protocol`] of the path) or a library call
//! ([`Endpoint::Call`]). A [`crate::Route`] and a [`crate::RouteSeed`] carry
//! one, so that a reader of routes (the server probe, `compare request`)
//! asks the typed fields, never the text of a label.
//!
//! The label every command prints is derived from the value, in one place
//! ([`Endpoint`]'s `Display`): `"{server} {build} {path}"` for a route (the
//! build left out when empty), the call's words for a call.
//!
//! This module knows no engine: each engine crate declares its own servers
//! and endpoints as constants, beside the rules they carry.

use std::borrow::Cow;
use std::fmt;

/// A server product as the engine crate that models it names it, with the
/// build whose source the route's rules were read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Server {
    /// The product's name as its users know it (e.g. `"llama-server"`,
    /// `"vllm serve"`, `"Ollama"`). Two routes of one product have the
    /// same name, whatever their builds.
    pub product: &'static str,
    /// What of the product the rules hold for, printed after its name: a
    /// version (`"0.5.23"`), an engine and a version range; `""` when the
    /// label names none.
    pub build: &'static str,
}

impl Server {
    /// The product `product`, no build named.
    pub const fn new(product: &'static str) -> Self {
        Self { product, build: "" }
    }

    /// The same product at `build`.
    pub const fn at(self, build: &'static str) -> Self {
        Self {
            product: self.product,
            build,
        }
    }
}

/// The request format a server route reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Protocol {
    /// OpenAI's `/v1/chat/completions`.
    OpenaiChat,
    /// OpenAI's `/v1/completions`.
    OpenaiCompletions,
    /// Both OpenAI paths, which the server reads alike.
    OpenaiChatAndCompletions,
    /// The server's own path(s), as the engine crate writes them (e.g.
    /// `"/api/generate (options)"`).
    Native(&'static str),
}

impl Protocol {
    /// Whether the route is one of OpenAI's (`/v1/...`).
    pub fn is_openai(self) -> bool {
        !matches!(self, Protocol::Native(_))
    }

    /// The path as labels write it.
    pub fn path(self) -> &'static str {
        match self {
            Protocol::OpenaiChat => "/v1/chat/completions",
            Protocol::OpenaiCompletions => "/v1/completions",
            Protocol::OpenaiChatAndCompletions => "/v1/chat/completions (and /v1/completions)",
            Protocol::Native(path) => path,
        }
    }
}

/// What reads a request: a server's route, or a library call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Endpoint {
    /// An HTTP route of a server.
    Http {
        /// The server.
        server: Server,
        /// The path and the format it reads.
        protocol: Protocol,
    },
    /// A library call (no server), in the words its users write it (e.g.
    /// `"transformers generate(**request)"`).
    Call(&'static str),
}

impl Endpoint {
    /// The route `protocol` of `server`.
    pub const fn http(server: Server, protocol: Protocol) -> Self {
        Endpoint::Http { server, protocol }
    }

    /// The server, for an HTTP route.
    pub fn server(self) -> Option<Server> {
        match self {
            Endpoint::Http { server, .. } => Some(server),
            Endpoint::Call(_) => None,
        }
    }

    /// The protocol, for an HTTP route.
    pub fn protocol(self) -> Option<Protocol> {
        match self {
            Endpoint::Http { protocol, .. } => Some(protocol),
            Endpoint::Call(_) => None,
        }
    }

    /// Whether this is one of OpenAI's routes, on any server.
    pub fn is_openai(self) -> bool {
        self.protocol().is_some_and(Protocol::is_openai)
    }

    /// The label commands print ([`fmt::Display`]'s text).
    pub fn label(self) -> String {
        self.to_string()
    }
}

/// The label: `"{product} {build} {path}"` (no build when empty), or the
/// call's words.
impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Endpoint::Http { server, protocol } => {
                f.write_str(server.product)?;
                if !server.build.is_empty() {
                    write!(f, " {}", server.build)?;
                }
                write!(f, " {}", protocol.path())
            }
            Endpoint::Call(words) => f.write_str(words),
        }
    }
}

/// As its label.
impl serde::Serialize for Endpoint {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// A string: the label.
impl schemars::JsonSchema for Endpoint {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "Endpoint".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        str::json_schema(generator)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_label_joins_product_build_and_path() {
        let s = Server::new("srv").at("1.0 engine");
        assert_eq!(
            Endpoint::http(s, Protocol::OpenaiChat).to_string(),
            "srv 1.0 engine /v1/chat/completions"
        );
        assert_eq!(
            Endpoint::http(Server::new("srv"), Protocol::Native("/gen (options)")).label(),
            "srv /gen (options)"
        );
        assert_eq!(Endpoint::Call("lib f(**x)").label(), "lib f(**x)");
        let json = serde_json::to_value(Endpoint::http(s, Protocol::OpenaiCompletions));
        assert_eq!(
            json.expect("json"),
            serde_json::json!("srv 1.0 engine /v1/completions")
        );
        assert!(Endpoint::http(s, Protocol::OpenaiChatAndCompletions).is_openai());
        assert!(!Endpoint::http(s, Protocol::Native("/v2")).is_openai());
        assert!(!Endpoint::Call("f()").is_openai());
    }
}
