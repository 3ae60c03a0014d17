//! A toy semantics for the unit tests (no engine: the library names none).
//! Always the first argmax, whatever the params; its name, role, exact
//! setup and the request fields its one server reads are what each test
//! says.

use parity_core::metrics::argmax_first;
use parity_core::{
    AnySemantics, Context, Distribution, Endpoint, Error, Info, Logits, Precision, Protocol, Role,
    Route, Semantics, Server,
};
use serde_json::{Map, Value};

/// See the module doc.
pub(crate) struct Toy {
    info: &'static Info,
    role: Role,
    exact: Option<&'static str>,
    reads: &'static [&'static str],
}

/// A toy named `name` in `role`, with no exact setup.
pub(crate) fn toy(name: &'static str, role: Role) -> Box<dyn AnySemantics> {
    exact(name, role, None)
}

/// A toy whose engine's exact setup is the registry entry `exact`.
pub(crate) fn exact(
    name: &'static str,
    role: Role,
    exact: Option<&'static str>,
) -> Box<dyn AnySemantics> {
    Toy::boxed(name, role, exact, &[])
}

/// A toy whose server (`toy-server /v1/chat/completions`) reads the
/// request fields `reads` and drops every other.
pub(crate) fn server(name: &'static str, reads: &'static [&'static str]) -> Box<dyn AnySemantics> {
    Toy::boxed(name, Role::OnRequest, None, reads)
}

impl Toy {
    fn boxed(
        name: &'static str,
        role: Role,
        exact: Option<&'static str>,
        reads: &'static [&'static str],
    ) -> Box<dyn AnySemantics> {
        let info = Box::leak(Box::new(Info {
            name,
            engine: "none (a unit test)",
            summary: "the first argmax of the logits",
            verified_against: "nothing: a unit test",
            params: &[],
        }));
        Box::new(Toy {
            info,
            role,
            exact,
            reads,
        })
    }
}

impl Semantics for Toy {
    type Params = ();
    fn info(&self) -> &'static Info {
        self.info
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
        self.role
    }
    fn exact_setup(&self) -> Option<&'static str> {
        self.exact
    }
    fn from_request(
        &self,
        request: &Map<String, Value>,
        _: Option<&Map<String, Value>>,
    ) -> Vec<Route<()>> {
        let endpoint = Endpoint::http(Server::new("toy-server"), Protocol::OpenaiChat);
        vec![Route::new(endpoint, Ok(())).ignoring_all_but(request, |k| self.reads.contains(&k))]
    }
}
