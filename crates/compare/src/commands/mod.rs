//! One module per subcommand. Each takes its parsed arguments and writers, so
//! tests and `main` drive them the same way.

pub mod beam;
pub mod bench;
pub mod diff;
pub mod dist;
pub mod report;
pub mod request;
pub mod semantics;
pub mod speculative;
pub mod ties;
pub mod trace;
pub mod translate;
