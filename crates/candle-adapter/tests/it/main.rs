//! Integration tests: the real candle LogitsProcessor against its mirror, on
//! the bundled fixtures (real SmolLM2 logits and hand-built edge cases).

mod common;
mod errors;
mod gumbel;
mod k40p09;
mod params;
mod penalty;
mod shared;
mod ties;
mod torch_seeded;
mod translate;
mod variants;
