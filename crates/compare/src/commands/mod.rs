//! One module per subcommand. Each takes its parsed arguments and writers, so
//! tests and `main` drive them the same way.

pub mod bench;
pub mod diff;
pub mod dist;
pub mod report;
pub mod semantics;
pub mod ties;
pub mod trace;
pub mod translate;
