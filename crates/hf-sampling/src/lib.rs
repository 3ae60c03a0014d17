//! hf-sampling (placeholder: being written).
