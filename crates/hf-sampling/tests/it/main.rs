//! Integration tests for hf-sampling: parity with recorded transformers outputs,
//! parameter resolution, drawing.

mod beam;
mod crosscheck;
mod draw;
mod fast;
mod fixtures;
mod genconfig;
mod processors;
mod request_serve;
mod resolve;
mod torch_seeded;

/// A recorded JSON array of f32 values (numbers, or the strings `"-inf"`
/// and `"inf"`, as the recorders write infinities).
fn f32s(v: &serde_json::Value) -> Vec<f32> {
    use serde_json::Value;
    v.as_array()
        .expect("array")
        .iter()
        .map(|x| match x {
            Value::String(s) if s == "-inf" => f32::NEG_INFINITY,
            Value::String(s) if s == "inf" => f32::INFINITY,
            other => other.as_f64().expect("number") as f32,
        })
        .collect()
}
