//! How Python prints values, so error messages quote them as transformers does.

use serde_json::Value;

pub(crate) use parity_core::text::python_float_repr as float_repr;

/// `str(value)` / f-string formatting of the Python object json.loads makes.
pub(crate) fn value_str(v: &Value) -> String {
    match v {
        Value::Null => "None".into(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Number(n) => {
            if n.is_f64() {
                float_repr(n.as_f64().unwrap_or(f64::NAN))
            } else {
                n.to_string()
            }
        }
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_values_print_like_python_objects() {
        assert_eq!(value_str(&serde_json::json!(2)), "2");
        assert_eq!(value_str(&serde_json::json!(2.0)), "2.0");
        assert_eq!(value_str(&serde_json::json!(true)), "True");
        assert_eq!(value_str(&serde_json::json!(null)), "None");
        assert_eq!(value_str(&serde_json::json!("x")), "x");
    }
}
