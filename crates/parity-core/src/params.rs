//! Params parsing that every engine shares: an engine's params are one
//! struct declared with [`params!`](crate::params!) (each field once, with
//! its doc, its default and what `compare semantics` says of it), read from a
//! JSON map by [`from_map`] (serde, errors naming the field and quoting its
//! value), and checked with [`ensure!`](crate::ensure!) in the engine's own
//! order and words. Also Python's `int(str)`, which the servers written in
//! Python apply to `logit_bias` keys, and [`defaults_agree`], which tests
//! that what `compare semantics` lists is what the parser accepts and
//! defaults to.

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::record::Logits;
use crate::semantics::{Context, Error, Semantics};

/// Declares an engine's params struct, each field once:
///
/// ```text
/// parity_core::params! {
///     /// The struct's doc.
///     #[derive(Debug, Clone, PartialEq, serde::Deserialize)]
///     #[serde(default, deny_unknown_fields)]
///     pub struct P {
///         /// The field's doc.
///         pub top_p: f64 = 1.0 => "what compare semantics says of it",
///         /// Unset is `None` (`Default::default()`); listed as `null`.
///         pub seed: Option<u64> => "...",
///         /// Unset is `None`, which the engine reads as 1.0: listed as `1.0`.
///         pub temperature: Option<f64> ["1.0"] => "...",
///     }
/// }
/// ```
///
/// It writes the struct, its `Default` (each `= expr`, else the type's
/// default), `P::FIELDS` (the names, in order) and `P::PARAMS` (the
/// [`ParamInfo`](crate::ParamInfo) list for [`Info`](crate::Info): the
/// `[text]` when given, else the default expression as written, else
/// `null`).
#[macro_export]
macro_rules! params {
    (@default) => { ::core::default::Default::default() };
    (@default $e:expr) => { $crate::params::DefaultFrom::default_from($e) };
    (@shown [$s:literal] $(= $e:expr)?) => { $s };
    (@shown = $e:expr) => { stringify!($e) };
    (@shown) => { "null" };
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $(
                $(#[$fmeta:meta])*
                $fvis:vis $field:ident : $ty:ty $([$shown:literal])? $(= $default:expr)? => $meaning:literal
            ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        $vis struct $name {
            $( $(#[$fmeta])* $fvis $field: $ty, )*
        }

        impl ::core::default::Default for $name {
            fn default() -> Self {
                Self { $( $field: $crate::params!(@default $($default)?), )* }
            }
        }

        impl $name {
            /// The fields' names, in declaration order.
            #[allow(dead_code)]
            pub const FIELDS: &'static [&'static str] = &[$(stringify!($field)),*];
            /// The fields as `compare semantics` lists them.
            #[allow(dead_code)]
            pub const PARAMS: &'static [$crate::ParamInfo] = &[$(
                $crate::ParamInfo {
                    name: stringify!($field),
                    default: $crate::params!(@shown $([$shown])? $(= $default)?),
                    meaning: $meaning,
                },
            )*];
        }
    };
}

/// How a field's `= expr` default in [`params!`](crate::params!) becomes
/// the field's value: itself, or (for a type holding a JSON number as
/// written, such as an int-or-float) a conversion the type provides, so the
/// default is written as the literal `compare semantics` shows.
pub trait DefaultFrom<T> {
    /// The field's default from the declared expression.
    fn default_from(value: T) -> Self;
}

impl<T> DefaultFrom<T> for T {
    fn default_from(value: T) -> T {
        value
    }
}

/// Returns an [`Error`](crate::Error) unless `cond` holds: a check stated in
/// the engine's order and words, `ensure!(n >= 1, "n must be at least 1, got
/// {n}.")`, or with an error value, `ensure!(ok, engine_error(...))`.
#[macro_export]
macro_rules! ensure {
    ($cond:expr, $fmt:literal $($arg:tt)*) => {
        if !($cond) {
            return ::core::result::Result::Err(
                $crate::Error::new(format_args!($fmt $($arg)*)).into(),
            );
        }
    };
    ($cond:expr, $err:expr $(,)?) => {
        if !($cond) {
            return ::core::result::Result::Err($err.into());
        }
    };
}

/// What a field written as `null` means to [`from_map`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Null {
    /// The field is unset: read as if absent (its default).
    Unset,
    /// `null` is handed to the field's type, which may refuse it.
    Value,
}

/// The fields of `map` whose names `keep` takes, in their order: the part
/// of a request one reader reads.
pub fn only(map: &Map<String, Value>, keep: impl Fn(&str) -> bool) -> Map<String, Value> {
    map.iter()
        .filter(|(k, _)| keep(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Reads `params` into `T` (a struct declared with
/// [`params!`](crate::params!) and `serde::Deserialize`): a field not in
/// `fields` is refused first ([`unknown_field`], naming `engine`), a `null`
/// field is dropped with [`Null::Unset`], then serde reads the rest; its
/// error names the field (a path such as `logit_bias.3` or `ids[2]`) and
/// quotes the value there:
/// `` `top_k` = -1: invalid value: integer `-1`, expected usize ``.
pub fn from_map<T: DeserializeOwned>(
    params: &Map<String, Value>,
    engine: &str,
    fields: &[&str],
    null: Null,
) -> Result<T, Error> {
    refuse_unknown(params, engine, fields)?;
    let value = Value::Object(match null {
        Null::Unset => params
            .iter()
            .filter(|(_, v)| !v.is_null())
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        Null::Value => params.clone(),
    });
    serde_path_to_error::deserialize(&value).map_err(|e| {
        let mut at = Some(&value);
        let mut segments = 0;
        for segment in e.path().iter() {
            segments += 1;
            at = match segment {
                serde_path_to_error::Segment::Map { key } => at.and_then(|v| v.get(key)),
                serde_path_to_error::Segment::Seq { index } => at.and_then(|v| v.get(index)),
                _ => None,
            };
        }
        let inner = e.inner().to_string();
        if let Some(own) = inner.strip_prefix(VERBATIM) {
            return Error::new(own);
        }
        match at {
            _ if segments == 0 => Error::new(inner),
            Some(v) => Error::new(format_args!("`{}` = {v}: {}", e.path(), e.inner())),
            None => Error::new(format_args!("`{}`: {}", e.path(), e.inner())),
        }
    })
}

/// Marks a message made by [`verbatim`].
const VERBATIM: char = '\u{1}';

/// A serde error (from a field's `deserialize_with`) that [`from_map`]
/// returns as it is, without naming the field: for a message that quotes
/// the engine, which already says which field it is about.
pub fn verbatim<E: serde::de::Error>(message: impl std::fmt::Display) -> E {
    E::custom(format_args!("{VERBATIM}{message}"))
}

/// `params` as JSON without the fields equal to `T::default()`'s (a field
/// `T` does not serialize, `#[serde(skip_serializing)]`, is never there):
/// the `to_json` of engines that describe a setup by what it changes.
pub fn non_default<T: serde::Serialize + Default>(params: &T) -> Map<String, Value> {
    let default = to_map(&T::default());
    let mut m = to_map(params);
    m.retain(|k, v| default.get(k) != Some(v));
    m
}

/// [`non_default`], with the numbers under `f32_keys` as the float32 the
/// engine holds them in, printed as their shortest float32 text
/// ([`crate::jsonl::f32_value`]): how an engine with f32 options describes
/// a setup.
pub fn non_default_f32<T: serde::Serialize + Default>(
    params: &T,
    f32_keys: &[&str],
) -> Map<String, Value> {
    let mut m = non_default(params);
    for (k, v) in m.iter_mut() {
        if f32_keys.contains(&k.as_str())
            && let Some(x) = v.as_f64()
        {
            *v = crate::jsonl::f32_value(x as f32);
        }
    }
    m
}

/// `params` as JSON, for `to_json`: `T`'s `serde::Serialize` (which says
/// which fields are left out, e.g. `skip_serializing_if`) as a map; empty if
/// `T` does not serialize to one.
pub fn to_map<T: serde::Serialize>(params: &T) -> Map<String, Value> {
    match serde_json::to_value(params) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    }
}

/// Checks `semantics`' listed params ([`Info::params`](crate::Info)) against
/// its parser: each listed default, written as the field's value, is
/// accepted and gives the distribution the field's absence gives (on a
/// small record with repeated context ids). `Err` names the first field that
/// disagrees. For tests: a default listed in `compare semantics` that is not
/// the parser's fails here.
pub fn defaults_agree<S: Semantics>(semantics: &S) -> Result<(), String> {
    let logits = Logits::from_f32(&[1.5, -0.5, 2.0, 0.25, 2.0, -3.0, 0.75, 1.0]);
    let ids = [0, 2, 2, 4, 1, 2];
    let context = Context::new(&ids, Some(3)).map_err(|e| e.to_string())?;
    let dist = |params: &Map<String, Value>| {
        let p = semantics.parse_params(params)?;
        semantics.distribution(&logits, &context, &p)
    };
    let unset = dist(&Map::new()).map_err(|e| format!("no params: {e}"))?;
    for p in semantics.info().params {
        if p.default == "required" {
            continue;
        }
        let value: Value = serde_json::from_str(p.default)
            .map_err(|e| format!("`{}`: default {} is not JSON: {e}", p.name, p.default))?;
        let mut one = Map::new();
        one.insert(p.name.to_string(), value);
        let got = dist(&one).map_err(|e| format!("`{}` = {}: {e}", p.name, p.default))?;
        if got != unset {
            return Err(format!(
                "`{}` = {} gives another distribution than leaving it out",
                p.name, p.default
            ));
        }
    }
    Ok(())
}

/// The refusal of a request field `field` (= `value`) that puts a grammar
/// into the engine's chain: `engine_does` says how the engine constrains
/// sampling with it (empty: nothing to add). No semantics reproduces a
/// grammar: it needs the model's vocabulary.
pub fn grammar_constrained(field: &str, value: &Value, engine_does: &str) -> Error {
    let does = if engine_does.is_empty() {
        String::new()
    } else {
        format!("{engine_does}; ")
    };
    Error::new(format_args!(
        "`{field}` = {value}: {does}grammar-constrained sampling needs the model's vocabulary and is not reproduced"
    ))
}

/// The error for a params field `key` (= `value`) that `engine`'s semantics
/// does not read, listing the ones it does (`known`).
pub fn unknown_field(engine: &str, key: &str, value: &Value, known: &[&str]) -> Error {
    Error::new(format_args!(
        "unknown field `{key}` (= {value}) for {engine}; known: {}",
        known.join(", ")
    ))
}

/// Refuses `params` when one of its fields is not in `known`: the
/// [`unknown_field`] error for the first such field.
pub fn refuse_unknown(
    params: &Map<String, Value>,
    engine: &str,
    known: &[&str],
) -> Result<(), Error> {
    match params.iter().find(|(k, _)| !known.contains(&k.as_str())) {
        Some((k, v)) => Err(unknown_field(engine, k, v, known)),
        None => Ok(()),
    }
}

/// Python's `int(s)` for a string: surrounding whitespace, an optional
/// sign, decimal digits with single underscores between them. `None` where
/// Python raises (or the value does not fit an `i64`).
pub fn python_int(s: &str) -> Option<i64> {
    let t = s.trim();
    let (neg, digits) = match t.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    if digits.is_empty()
        || digits.starts_with('_')
        || digits.ends_with('_')
        || digits.contains("__")
        || !digits.chars().all(|c| c.is_ascii_digit() || c == '_')
    {
        return None;
    }
    let n: i64 = digits.replace('_', "").parse().ok()?;
    Some(if neg { -n } else { n })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::semantics::{Distribution, Info, Precision};
    use serde_json::json;

    crate::params! {
        /// A toy engine's params.
        #[derive(Debug, Clone, PartialEq, serde::Deserialize, serde::Serialize)]
        #[serde(default, deny_unknown_fields)]
        struct Toy {
            /// Divides the logits.
            temperature: f64 = 1.0 => "divides the logits",
            /// Unset: none.
            seed: Option<u64> => "a seed",
            /// Unset means 2 to the engine.
            top_k: Option<usize> ["2"] => "keeps k",
            /// A number kept as written (int or float).
            offset: Written = -1 => "an int or float",
            /// A list.
            ids: Vec<i64> => "ids",
        }
    }

    /// A JSON number as written: int or float.
    #[derive(Debug, Clone, Copy, PartialEq, serde::Deserialize, serde::Serialize)]
    #[serde(untagged)]
    enum Written {
        Int(i64),
        Float(f64),
    }

    impl DefaultFrom<i64> for Written {
        fn default_from(value: i64) -> Self {
            Self::Int(value)
        }
    }

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    fn toy(v: Value) -> Result<Toy, Error> {
        from_map(&obj(v), "toy", Toy::FIELDS, Null::Value)
    }

    #[test]
    fn the_declaration_gives_default_fields_and_param_list() {
        assert_eq!(
            Toy::default(),
            Toy {
                temperature: 1.0,
                seed: None,
                top_k: None,
                offset: Written::Int(-1),
                ids: Vec::new()
            }
        );
        assert_eq!(
            Toy::FIELDS,
            ["temperature", "seed", "top_k", "offset", "ids"]
        );
        let listed: Vec<_> = Toy::PARAMS
            .iter()
            .map(|p| (p.name, p.default, p.meaning))
            .collect();
        assert_eq!(
            listed,
            [
                ("temperature", "1.0", "divides the logits"),
                ("seed", "null", "a seed"),
                ("top_k", "2", "keeps k"),
                ("offset", "-1", "an int or float"),
                ("ids", "null", "ids"),
            ]
        );
    }

    #[test]
    fn from_map_reads_and_names_the_bad_field_with_its_value() {
        assert_eq!(
            toy(json!({"temperature": 2, "seed": null})),
            Ok(Toy {
                temperature: 2.0,
                ..Toy::default()
            })
        );
        let err = |v: Value| toy(v).unwrap_err().to_string();
        assert_eq!(
            err(json!({"top_k": -1})),
            "`top_k` = -1: invalid value: integer `-1`, expected usize"
        );
        assert_eq!(
            err(json!({"temperature": "hot"})),
            "`temperature` = \"hot\": invalid type: string \"hot\", expected f64"
        );
        assert_eq!(
            err(json!({"ids": [1, 2.5]})),
            "`ids[1]` = 2.5: invalid type: floating point `2.5`, expected i64"
        );
        assert_eq!(
            err(json!({"temprature": 1})),
            "unknown field `temprature` (= 1) for toy; known: temperature, seed, top_k, offset, ids"
        );
    }

    #[test]
    fn null_is_unset_or_handed_to_the_type() {
        let p = obj(json!({"temperature": null, "seed": null}));
        let unset: Result<Toy, _> = from_map(&p, "toy", Toy::FIELDS, Null::Unset);
        assert_eq!(unset, Ok(Toy::default()));
        assert_eq!(
            toy(json!({"temperature": null})).unwrap_err().to_string(),
            "`temperature` = null: invalid type: null, expected f64"
        );
    }

    #[test]
    fn to_map_is_the_serialized_struct() {
        #[derive(serde::Serialize)]
        struct S {
            a: f64,
            #[serde(skip_serializing_if = "Option::is_none")]
            b: Option<u32>,
        }
        assert_eq!(to_map(&S { a: 0.5, b: None }), obj(json!({"a": 0.5})));
        assert_eq!(to_map(&1.0), Map::new());
    }

    #[test]
    fn a_verbatim_error_is_returned_as_written() {
        #[derive(Debug, serde::Deserialize)]
        struct V {
            #[serde(deserialize_with = "odd")]
            _n: i64,
        }
        fn odd<'de, D: serde::Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
            let n = <i64 as serde::Deserialize>::deserialize(d)?;
            if n % 2 == 0 {
                return Err(verbatim(format_args!("n must be odd, got {n}.")));
            }
            Ok(n)
        }
        let e = from_map::<V>(&obj(json!({"_n": 4})), "v", &["_n"], Null::Value);
        assert_eq!(e.unwrap_err().to_string(), "n must be odd, got 4.");
    }

    #[test]
    fn non_default_keeps_what_differs_from_the_default() {
        let t = Toy {
            temperature: 0.5,
            ids: vec![3],
            ..Toy::default()
        };
        assert_eq!(
            non_default(&t),
            obj(json!({"temperature": 0.5, "ids": [3]}))
        );
        assert_eq!(non_default(&Toy::default()), Map::new());
    }

    fn checked(n: i64) -> Result<i64, Error> {
        crate::ensure!(n >= 1, "n must be at least 1, got {n}.");
        crate::ensure!(n != 7, Error::new("not seven"));
        Ok(n)
    }

    #[test]
    fn ensure_returns_the_error_in_the_words_given() {
        assert_eq!(checked(3), Ok(3));
        assert_eq!(checked(0), Err(Error::new("n must be at least 1, got 0.")));
        assert_eq!(checked(7), Err(Error::new("not seven")));
    }

    /// The toy as a semantics: temperature divides, top_k (unset = 2) keeps.
    struct ToySemantics(&'static Info);

    impl Semantics for ToySemantics {
        type Params = Toy;
        fn info(&self) -> &'static Info {
            self.0
        }
        fn parse_params(&self, params: &Map<String, Value>) -> Result<Toy, Error> {
            from_map(params, "toy", Toy::FIELDS, Null::Unset)
        }
        fn distribution(
            &self,
            logits: &Logits,
            _: &Context<'_>,
            p: &Toy,
        ) -> Result<Distribution, Error> {
            let x: Vec<f64> = logits.as_f64().iter().map(|l| l / p.temperature).collect();
            let mut order: Vec<usize> = (0..x.len()).collect();
            order.sort_by(|&a, &b| x[b].total_cmp(&x[a]));
            let mut probs = vec![0.0; x.len()];
            for &i in order.iter().take(p.top_k.unwrap_or(2)) {
                probs[i] = x[i].exp();
            }
            let total: f64 = probs.iter().sum();
            Ok(Distribution::new(
                probs.iter().map(|q| q / total).collect(),
                Precision::F64,
            ))
        }
        fn from_generate(&self, _: &Map<String, Value>) -> Option<Result<Toy, Error>> {
            None
        }
    }

    fn info(params: &'static [crate::ParamInfo]) -> &'static Info {
        Box::leak(Box::new(Info {
            name: "toy",
            engine: "toy",
            summary: "",
            verified_against: "",
            params,
        }))
    }

    #[test]
    fn defaults_agree_catches_a_listed_default_the_parser_does_not_have() {
        assert_eq!(defaults_agree(&ToySemantics(info(Toy::PARAMS))), Ok(()));
        let wrong: &'static [crate::ParamInfo] = Box::leak(Box::new([crate::ParamInfo {
            name: "top_k",
            default: "3",
            meaning: "",
        }]));
        assert_eq!(
            defaults_agree(&ToySemantics(info(wrong))),
            Err("`top_k` = 3 gives another distribution than leaving it out".into())
        );
        let unknown: &'static [crate::ParamInfo] = Box::leak(Box::new([crate::ParamInfo {
            name: "top_kk",
            default: "null",
            meaning: "",
        }]));
        assert!(defaults_agree(&ToySemantics(info(unknown))).is_err());
    }

    #[test]
    fn the_first_unknown_field_is_named_with_its_value() {
        let params = json!({"top_p": 0.9, "top_kk": 4});
        let params = params.as_object().cloned().unwrap_or_default();
        assert_eq!(refuse_unknown(&params, "e", &["top_p", "top_kk"]), Ok(()));
        assert_eq!(
            refuse_unknown(&params, "e", &["top_p", "top_k"])
                .unwrap_err()
                .to_string(),
            "unknown field `top_kk` (= 4) for e; known: top_p, top_k"
        );
    }
}
