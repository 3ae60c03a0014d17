//! What every Ollama engine shares from Ollama's `api` package, written
//! once: the fields of `api.Options` with the JSON type `Options.FromMap`
//! checks (api/types.go), and `FromMap`'s reading of one value, which
//! [`crate::layers`] layers for every engine.

use serde_json::Value;

/// How `Options.FromMap` reads a field (the Go types of api/types.go
/// `Options` and `Runner`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `int` and `*int`: a JSON number, truncated (`int64(value)`).
    Int,
    /// `float32`: a JSON number, `float32(value)`.
    Float,
    /// `*bool`.
    Bool,
    /// `[]string`: an array of strings.
    Strings,
}

/// Every field of `api.Options` by JSON name, in the struct's order, at
/// fb3076099 (v0.33.0-rc2; the same from v0.30.0). The first ten shape
/// sampling ([`Field::sampling`]). `draft_num_predict` is newer than the Go engine's f63eea3d2
/// ([`Field::since_go_engine`] says which are older).
pub const OPTIONS: &[Field] = &[
    Field::sampling("temperature", Kind::Float),
    Field::sampling("top_k", Kind::Int),
    Field::sampling("top_p", Kind::Float),
    Field::sampling("min_p", Kind::Float),
    Field::sampling("typical_p", Kind::Float),
    Field::sampling("repeat_last_n", Kind::Int),
    Field::sampling("repeat_penalty", Kind::Float),
    Field::sampling("presence_penalty", Kind::Float),
    Field::sampling("frequency_penalty", Kind::Float),
    Field::sampling("seed", Kind::Int),
    Field::new("num_keep", Kind::Int),
    Field::new("num_predict", Kind::Int),
    Field::new("stop", Kind::Strings),
    Field::new("num_ctx", Kind::Int),
    Field::new("num_batch", Kind::Int),
    Field::new("num_gpu", Kind::Int),
    Field::new("main_gpu", Kind::Int),
    Field::new("use_mmap", Kind::Bool),
    Field::new("num_thread", Kind::Int),
    Field {
        name: "draft_num_predict",
        kind: Kind::Int,
        sampling: false,
        since_go_engine: false,
    },
];

/// One field of `api.Options`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    /// Its JSON name.
    pub name: &'static str,
    /// How `FromMap` reads it.
    pub kind: Kind,
    /// Whether it shapes sampling (the sampler's options and its seed).
    pub sampling: bool,
    /// Whether the Go engine's Ollama (f63eea3d2) has it.
    pub since_go_engine: bool,
}

impl Field {
    const fn new(name: &'static str, kind: Kind) -> Self {
        Self {
            name,
            kind,
            sampling: false,
            since_go_engine: true,
        }
    }

    /// A field that shapes sampling.
    const fn sampling(name: &'static str, kind: Kind) -> Self {
        Self {
            sampling: true,
            ..Self::new(name, kind)
        }
    }
}

/// The field of `api.Options` named `name`.
pub fn option(name: &str) -> Option<&'static Field> {
    OPTIONS.iter().find(|o| o.name == name)
}

/// Whether `name` is one of the options that shape sampling.
pub fn is_sampling(name: &str) -> bool {
    option(name).is_some_and(|o| o.sampling)
}

/// What `FromMap` makes of one non-null value: Go's `int64(value)` or
/// `float32(value)` of the JSON number, or nothing to keep (a bool or a
/// string list, checked).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Read {
    /// An `int` option.
    Int(i64),
    /// A `float32` option (possibly infinite: `FromMap` does not check;
    /// encoding it for the runner fails).
    Float(f32),
    /// A `*bool` or `[]string` option of the right type.
    Checked,
}

/// `FromMap`'s reading of `val` (not null) for a field of kind `kind`, or
/// the end of Go's refusal, `option "top_k" must be {what}`: `of type
/// integer`, `of type float32`, `of type boolean`, `of type array`, `of an
/// array of strings`.
pub fn read(kind: Kind, val: &Value) -> Result<Read, &'static str> {
    match kind {
        Kind::Int | Kind::Float => match val.as_f64() {
            Some(f) if kind == Kind::Int => Ok(Read::Int(replicas::go::int64(f))),
            Some(f) => Ok(Read::Float(f as f32)),
            None if kind == Kind::Int => Err("of type integer"),
            None => Err("of type float32"),
        },
        Kind::Bool if val.is_boolean() => Ok(Read::Checked),
        Kind::Bool => Err("of type boolean"),
        Kind::Strings => match val.as_array() {
            None => Err("of type array"),
            Some(items) if items.iter().all(Value::is_string) => Ok(Read::Checked),
            Some(_) => Err("of an array of strings"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_sampling_options_are_the_samplers_and_its_seed() {
        let sampling: Vec<&str> = OPTIONS
            .iter()
            .filter(|o| o.sampling)
            .map(|o| o.name)
            .collect();
        assert_eq!(
            sampling,
            [
                "temperature",
                "top_k",
                "top_p",
                "min_p",
                "typical_p",
                "repeat_last_n",
                "repeat_penalty",
                "presence_penalty",
                "frequency_penalty",
                "seed"
            ]
        );
        assert!(is_sampling("seed") && !is_sampling("num_ctx") && !is_sampling("nope"));
    }

    #[test]
    fn from_map_reads_as_go_does() {
        assert_eq!(read(Kind::Int, &json!(7.9)), Ok(Read::Int(7)));
        assert_eq!(read(Kind::Float, &json!(0.1)), Ok(Read::Float(0.1)));
        assert_eq!(read(Kind::Int, &json!("7")), Err("of type integer"));
        assert_eq!(read(Kind::Float, &json!(true)), Err("of type float32"));
        assert_eq!(read(Kind::Bool, &json!(1)), Err("of type boolean"));
        assert_eq!(read(Kind::Strings, &json!("x")), Err("of type array"));
        assert_eq!(
            read(Kind::Strings, &json!([1])),
            Err("of an array of strings")
        );
        assert_eq!(read(Kind::Strings, &json!(["\n"])), Ok(Read::Checked));
    }
}
