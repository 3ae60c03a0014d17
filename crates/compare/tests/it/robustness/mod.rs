//! Hostile input (docs/robustness.md): every row of that table has a test
//! here, one file per topic, and the fuzz corpus is replayed through the fuzz
//! harnesses (`fuzz_corpus`). Each test checks the exit status, one answer
//! line per record, and that the message says what was wrong and where.

mod fixture_files;
mod fuzz_corpus;
mod generation_config;
mod helpers;
mod json_shape;
mod logits;
mod parameters;
mod stream;
