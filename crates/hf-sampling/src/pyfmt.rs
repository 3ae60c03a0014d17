//! How Python prints values, so error messages quote them as transformers
//! does: [`parity_core::py`], under the names this crate's messages use.

pub(crate) use parity_core::py::{
    PyNum, repr as py_repr, str as value_str, str_repr as py_str, type_name as py_type,
};
pub(crate) use parity_core::text::python_float_repr as float_repr;
