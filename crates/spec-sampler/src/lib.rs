//! spec-sampler (placeholder: being written).
