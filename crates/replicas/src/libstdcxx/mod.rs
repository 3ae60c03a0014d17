//! libstdc++'s algorithms and random distributions, as GCC 12 ships them
//! (`bits/stl_algo.h`, `bits/stl_heap.h`, `bits/random.tcc`; unchanged for
//! many releases), **hand-written** because exactness needs them: the order
//! of tied values after `std::sort`, and the index a
//! `std::discrete_distribution` draws, are what the engines built on them
//! (llama.cpp, torch's CPU `sort`/`topk`, MLX's CPU `argpartition`, ONNX
//! Runtime GenAI) produce, and a replay must produce the same.
//!
//! - [`algo`]: `std::sort`, `std::nth_element`, `std::partial_sort`;
//! - [`random`]: `std::generate_canonical<double, 53>` and
//!   `std::discrete_distribution<int>` on a `std::mt19937`
//!   ([`crate::mt19937::Mt19937`]).
//!
//! Both are re-exported here, so `replicas::libstdcxx::sort` and
//! `replicas::libstdcxx::DiscreteDistribution` name them.

pub mod algo;
pub mod random;

pub use algo::*;
pub use random::*;
