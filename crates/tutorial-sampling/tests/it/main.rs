//! Integration tests: the tutorial's sampler against transformers' recorded
//! scores, and the speculative computations against seeded simulations.

mod beam;
mod fixtures;
mod speculative;
