//! What Python makes of a JSON value: the engines written in Python read a
//! request or a config through `json.loads` and quote what they refuse with
//! `repr`, `str` or `type(x).__name__`. One reader here, so every engine's
//! messages print a value the same way (`float` vs `int` included: `json.loads`
//! makes `2` an int and `2.0` a float).

use serde_json::{Number, Value};

use crate::text::python_float_repr;

/// A JSON number as `json.loads` makes it: an `int` (serde_json holds the
/// i64 and u64 ranges; Python's ints are unbounded, so both fit) or a
/// `float`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PyNum {
    /// A number written without a fraction or exponent.
    Int(i128),
    /// A number written with one.
    Float(f64),
}

impl PyNum {
    /// The number `n` is to Python.
    pub fn of(n: &Number) -> Self {
        if let Some(i) = n.as_i64() {
            Self::Int(i128::from(i))
        } else if let Some(u) = n.as_u64() {
            Self::Int(i128::from(u))
        } else {
            // serde_json's third kind (no `arbitrary_precision` here).
            Self::Float(n.as_f64().unwrap_or(f64::NAN))
        }
    }

    /// The number `v` is, if it is one (a JSON `true` is not: JSON keeps
    /// booleans apart, whatever Python's `bool` subclasses).
    pub fn of_value(v: &Value) -> Option<Self> {
        match v {
            Value::Number(n) => Some(Self::of(n)),
            _ => None,
        }
    }

    /// The number `v` is in Python's arithmetic: a JSON number, or a `bool`
    /// (Python's `True` is the int 1: `True == 1`, `float(True)`).
    pub fn numeric(v: &Value) -> Option<Self> {
        match v {
            Value::Bool(b) => Some(Self::Int(i128::from(*b))),
            other => Self::of_value(other),
        }
    }

    /// Python's `float(x)` (an int beyond 2^53 rounds to nearest, as Python
    /// does).
    pub fn float(self) -> f64 {
        match self {
            Self::Int(i) => i as f64,
            Self::Float(f) => f,
        }
    }

    /// The int, when it is one.
    pub fn int(self) -> Option<i128> {
        match self {
            Self::Int(i) => Some(i),
            Self::Float(_) => None,
        }
    }

    /// The int when it is one that fits an `i64`.
    pub fn int64(self) -> Option<i64> {
        self.int().and_then(|i| i64::try_from(i).ok())
    }

    /// Whether `json.loads` makes it a `float`.
    pub fn is_float(self) -> bool {
        matches!(self, Self::Float(_))
    }

    /// `str(x)` (and `repr(x)`: the same for numbers).
    pub fn str(self) -> String {
        match self {
            Self::Int(i) => i.to_string(),
            Self::Float(f) => python_float_repr(f),
        }
    }
}

impl From<PyNum> for Value {
    /// The JSON number again (an int beyond the u64/i64 ranges, which no
    /// JSON number read here holds, saturates).
    fn from(n: PyNum) -> Self {
        match n {
            PyNum::Int(i) => match (i64::try_from(i), u64::try_from(i)) {
                (Ok(i), _) => Value::from(i),
                (_, Ok(u)) => Value::from(u),
                _ if i < 0 => Value::from(i64::MIN),
                _ => Value::from(u64::MAX),
            },
            PyNum::Float(f) => Value::from(f),
        }
    }
}

/// `repr` of a str, as the engines' messages quote keys and values (single
/// quotes; a quote inside is not escaped).
pub fn str_repr(s: &str) -> String {
    format!("'{s}'")
}

/// `type(x).__name__` of what `json.loads` makes of `v`.
pub fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "NoneType",
        Value::Bool(_) => "bool",
        Value::Number(n) if PyNum::of(n).is_float() => "float",
        Value::Number(_) => "int",
        Value::String(_) => "str",
        Value::Array(_) => "list",
        Value::Object(_) => "dict",
    }
}

/// `repr(x)` of what `json.loads` makes of `v`.
pub fn repr(v: &Value) -> String {
    match v {
        Value::String(s) => str_repr(s),
        Value::Array(a) => format!("[{}]", a.iter().map(repr).collect::<Vec<_>>().join(", ")),
        Value::Object(o) => format!(
            "{{{}}}",
            o.iter()
                .map(|(k, v)| format!("{}: {}", str_repr(k), repr(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        other => str(other),
    }
}

/// `str(x)` (an f-string's `{x}`) of what `json.loads` makes of `v`.
pub fn str(v: &Value) -> String {
    match v {
        Value::Null => "None".into(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Number(n) => PyNum::of(n).str(),
        Value::String(s) => s.clone(),
        Value::Array(_) | Value::Object(_) => repr(v),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_values_print_like_python_objects() {
        assert_eq!(str(&json!(2)), "2");
        assert_eq!(str(&json!(2.0)), "2.0");
        assert_eq!(str(&json!(1e-5)), "1e-05");
        assert_eq!(str(&json!(u64::MAX)), "18446744073709551615");
        assert_eq!(str(&json!(true)), "True");
        assert_eq!(str(&json!(null)), "None");
        assert_eq!(str(&json!("x")), "x");
        assert_eq!(
            repr(&json!({"a": [1, 2.0, null, true, "x"]})),
            "{'a': [1, 2.0, None, True, 'x']}"
        );
        assert_eq!(type_name(&json!(2.0)), "float");
        assert_eq!(type_name(&json!(-2)), "int");
    }

    #[test]
    fn numbers_keep_their_python_kind() {
        assert_eq!(PyNum::of_value(&json!(3)), Some(PyNum::Int(3)));
        assert_eq!(PyNum::of_value(&json!(3.0)), Some(PyNum::Float(3.0)));
        assert_eq!(PyNum::of_value(&json!(true)), None);
        assert_eq!(PyNum::numeric(&json!(true)), Some(PyNum::Int(1)));
        assert_eq!(PyNum::Int(i128::from(u64::MAX)).int64(), None);
        assert_eq!(PyNum::Int(-7).float(), -7.0);
    }
}
