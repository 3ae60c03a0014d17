//! candle-adapter (placeholder: being written).
