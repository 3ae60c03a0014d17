//! parity-core (placeholder: being written).
