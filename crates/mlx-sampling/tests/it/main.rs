//! mlx-sampling's integration tests: every case recorded from the real
//! mlx-lm / MLX package (fixtures/mlx/cases.jsonl), and the error messages.

mod errors;
mod explain;
mod recorded;
