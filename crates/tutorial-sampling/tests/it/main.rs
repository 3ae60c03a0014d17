//! Integration tests: the tutorial's sampler against transformers' recorded
//! scores, and the speculative computations against seeded simulations.

mod fixtures;
mod speculative;
