//! A server endpoint's request body as a type: the fields of the endpoint's
//! request class (all of them, or those a reading tells apart), each written
//! once, under what the engine does with it (fills it from the server's defaults, passes it to the sampler,
//! refuses it, reads it for something else, drops it). The field lists an
//! engine checks a request against are derived from that one declaration
//! ([`body!`](crate::body!)), and a request is read into it by serde
//! ([`read`]).
//!
//! The fields are JSON values as sent (`null` is unset): an engine's own
//! reader types and validates the ones that shape the distribution, in its
//! own order and words, so the body type only says which field is which.

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::Error;

/// Declares an endpoint's request body: one serde struct, flattening one
/// group struct per role, each field of the request class listed once.
///
/// ```text
/// parity_core::body! {
///     /// The body's doc (the request class, its file and version).
///     pub struct ChatRequest {
///         /// What the engine does with these.
///         sampling: Sampling { temperature, top_p },
///         /// Read for something else.
///         read: Read { model, messages },
///     }
/// }
/// ```
///
/// It writes `ChatRequest` (the groups, flattened, and `other`: every
/// field not declared, as sent), each group struct
/// (`Option<Value>` fields, `null` read as `None`), `Group::FIELDS` (its
/// names, in order), `Group::set()` (its fields present and not `null`, in
/// order) and `ChatRequest::FIELDS` (every group's names, in order).
#[macro_export]
macro_rules! body {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $(
                $(#[$gmeta:meta])*
                $group:ident : $gty:ident { $($field:ident),* $(,)? }
            ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Default, PartialEq, $crate::__serde::Deserialize)]
        #[serde(crate = "parity_core::__serde")]
        $vis struct $name {
            $(
                $(#[$gmeta])*
                #[serde(flatten)]
                pub $group: $gty,
            )*
            /// Every field not declared in a group, as sent.
            #[serde(flatten)]
            pub other: ::serde_json::Map<::std::string::String, ::serde_json::Value>,
        }

        $(
            $(#[$gmeta])*
            #[derive(Debug, Clone, Default, PartialEq, $crate::__serde::Deserialize)]
            #[serde(crate = "parity_core::__serde", default)]
            $vis struct $gty {
                $(
                    #[allow(missing_docs)]
                    pub $field: ::core::option::Option<::serde_json::Value>,
                )*
            }

            impl $gty {
                /// The group's field names, in declaration order.
                #[allow(dead_code)]
                pub const FIELDS: &'static [&'static str] = &[$(stringify!($field)),*];

                /// The group's fields that are present and not `null`, in
                /// declaration order.
                #[allow(dead_code)]
                pub fn set(&self) -> ::std::vec::Vec<(&'static str, &::serde_json::Value)> {
                    let all: &[(&'static str, &::core::option::Option<::serde_json::Value>)] =
                        &[$((stringify!($field), &self.$field)),*];
                    all.iter().filter_map(|(k, v)| v.as_ref().map(|v| (*k, v))).collect()
                }
            }
        )*

        impl $name {
            /// Every field of the request class, group by group.
            #[allow(dead_code)]
            pub const FIELDS: &'static [&'static [&'static str]] = &[$($gty::FIELDS),*];

            /// Whether `field` is one of the request class's.
            #[allow(dead_code)]
            pub fn declares(field: &str) -> bool {
                Self::FIELDS.iter().any(|g| g.contains(&field))
            }
        }
    };
}

/// Reads `request` into the body type `T` (declared with
/// [`body!`](crate::body!)). Every field is a JSON value, so any JSON object
/// reads; the error is serde's, should a body narrow a field's type.
pub fn read<T: DeserializeOwned>(request: &Map<String, Value>) -> Result<T, Error> {
    T::deserialize(&Value::Object(request.clone()))
        .map_err(|e| Error::new(format_args!("reading the request body: {e}")))
}

/// The first field a body declares in two groups, if any (serde would give
/// it to the first group only): each body's tests assert `None`.
pub fn repeated(groups: &[&[&'static str]]) -> Option<&'static str> {
    let all: Vec<&'static str> = groups.concat();
    all.iter()
        .enumerate()
        .find(|(i, f)| all[..*i].contains(f))
        .map(|(_, f)| *f)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    crate::body! {
        /// A body for the tests.
        struct Body {
            /// Sampled with.
            sampling: Sampling { temperature, top_p },
            /// Read for something else.
            read: Read { model },
        }
    }

    #[test]
    fn fields_land_in_their_group_and_the_rest_in_other() {
        let request = json!({"top_p": 0.5, "temperature": null, "model": "m", "zzz": 1, "aaa": 2});
        let body: Body = super::read(request.as_object().expect("object")).expect("reads");
        assert_eq!(body.sampling.set(), vec![("top_p", &json!(0.5))]);
        assert_eq!(body.sampling.temperature, None);
        assert_eq!(body.read.model, Some(json!("m")));
        let other: Vec<&String> = body.other.keys().collect();
        assert_eq!(other, ["aaa", "zzz"]);
        assert_eq!(
            Body::FIELDS,
            [&["temperature", "top_p"][..], &["model"][..]]
        );
        assert!(Body::declares("model") && !Body::declares("zzz"));
        assert_eq!(super::repeated(Body::FIELDS), None);
        assert_eq!(super::repeated(&[&["a", "b"], &["c", "a"]]), Some("a"));
    }
}
