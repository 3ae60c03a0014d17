//! libstdc++'s `std::generate_canonical<double, 53>` and
//! `std::discrete_distribution<int>`, hand-written because exactness needs
//! them: two engines draw their token with them from a `std::mt19937`
//! ([`Mt19937`]), llama.cpp's `dist` sampler (the uniform
//! double) and ONNX Runtime GenAI's CPU sampler (`SampleCategoricalToken`
//! in src/sampling_distribution.h builds a `std::discrete_distribution<int>`
//! from the kept probabilities), and a replayed draw must pick the token the
//! engine picked.
//!
//! From GCC 12's bits/random.tcc (unchanged for many releases):
//!
//! * `generate_canonical<double, 53>` calls the engine `k = ceil(53 / 32)`
//!   = 2 times and returns `sum / 2^64` with `sum = x0 + x1 · 2^32`
//!   accumulated in double, replaced by `nextafter(1, 0)` if it rounds to 1.
//! * `discrete_distribution::param_type::_M_initialize`: with fewer than two
//!   weights nothing is stored (and `operator()` returns 0 **without
//!   drawing**); otherwise the weights (as doubles) are divided by their
//!   `std::accumulate` sum, `_M_cp` holds their `std::partial_sum`, and its
//!   last entry is set to exactly 1.
//! * `operator()` draws one `generate_canonical<double, 53>` number `p` and
//!   returns the index `std::lower_bound(_M_cp.begin(), _M_cp.end(), p)`
//!   points at (random.tcc:2714-2718).

use crate::mt19937::Mt19937;

/// `std::generate_canonical<double, 53>(rng)`: two outputs, low word first.
pub fn canonical_f64(rng: &mut Mt19937) -> f64 {
    let x0 = f64::from(rng.next_u32());
    let x1 = f64::from(rng.next_u32());
    // sum = 0 + x0 * 1; sum += x1 * 2^32 (rounded once, in double).
    let sum = x0 + x1 * 4_294_967_296.0;
    let r = sum / 18_446_744_073_709_551_616.0;
    if r >= 1.0 { 1.0f64.next_down() } else { r }
}

/// `std::discrete_distribution<int>` over some weights, as libstdc++ sets
/// it up.
#[derive(Debug, Clone, PartialEq)]
pub struct DiscreteDistribution {
    /// `_M_cp`: the cumulative normalised weights, the last set to 1; empty
    /// for fewer than two weights.
    cp: Vec<f64>,
}

impl DiscreteDistribution {
    /// `std::discrete_distribution<int>(weights.begin(), weights.end())`.
    pub fn new(weights: impl IntoIterator<Item = f64>) -> Self {
        let prob: Vec<f64> = weights.into_iter().collect();
        if prob.len() < 2 {
            return Self { cp: Vec::new() };
        }
        let sum: f64 = prob.iter().fold(0.0, |acc, &w| acc + w);
        let mut cp = Vec::with_capacity(prob.len());
        let mut run = 0.0;
        for (i, &w) in prob.iter().enumerate() {
            let p = w / sum;
            run = if i == 0 { p } else { run + p };
            cp.push(run);
        }
        let last = cp.len() - 1;
        cp[last] = 1.0;
        Self { cp }
    }

    /// `operator()(rng)`: the index drawn (no draw with fewer than two
    /// weights).
    pub fn sample(&self, rng: &mut Mt19937) -> usize {
        if self.cp.is_empty() {
            return 0;
        }
        let p = canonical_f64(rng);
        self.index_of(p)
    }

    /// The index `operator()` returns for the uniform number `p`: the first
    /// entry not less than `p`. libstdc++ searches all of `_M_cp`; this
    /// searches all but the last, which gives the same index: `_M_cp` is
    /// partitioned by `*it < p` (the finite sums rise, a NaN and the last
    /// entry, 1 > p, are never below `p`), so both searches end at the same
    /// boundary, or at the last entry when every other is below `p`.
    pub fn index_of(&self, p: f64) -> usize {
        if self.cp.is_empty() {
            return 0;
        }
        let search = &self.cp[..self.cp.len() - 1];
        // std::lower_bound: binary search on `*it < p`, literally, so NaN
        // entries behave as in C++.
        let (mut first, mut len) = (0usize, search.len());
        while len > 0 {
            let half = len / 2;
            let mid = first + half;
            if search[mid] < p {
                first = mid + 1;
                len = len - half - 1;
            } else {
                len = half;
            }
        }
        first
    }

    /// Each index's probability: the share of `[0, 1)` for which
    /// [`Self::index_of`] returns it, `min(cp[i], 1) - min(cp[i-1], 1)`
    /// (`cp[-1] = 0`). The double partial sums can pass 1 by rounding before
    /// the last entry, which libstdc++ then sets to exactly 1 (GCC 12
    /// bits/random.tcc:2679-2682, `partial_sum` then `_M_cp[size-1] = 1.0`):
    /// the index whose sum first reaches 1 gets `1 - cp[i-1]`, the indices
    /// after it none, since `generate_canonical` is below 1
    /// (random.tcc:2714-2718, `lower_bound` of it in `_M_cp`). `None` when a
    /// cumulative weight is NaN or one but the last decreases (a negative
    /// weight: the shares are not a distribution). One index and no weights:
    /// `[1]`.
    pub fn probabilities(&self, n: usize) -> Option<Vec<f64>> {
        if self.cp.is_empty() {
            let mut one = vec![0.0; n.max(1)];
            one[0] = 1.0;
            return Some(one);
        }
        let last = self.cp.len() - 1;
        let mut out = Vec::with_capacity(self.cp.len());
        let mut prev = 0.0f64;
        for (i, &c) in self.cp.iter().enumerate() {
            // Only the forced last entry may be below its predecessor.
            if c.is_nan() || (c < prev && i != last) {
                return None;
            }
            out.push(c.min(1.0) - prev.min(1.0));
            prev = c;
        }
        Some(out)
    }

    /// Whether every cumulative weight but the last is NaN: C++'s
    /// `lower_bound` then always returns index 0 (every `NaN < p` is false).
    pub fn all_nan(&self) -> bool {
        !self.cp.is_empty() && self.cp[..self.cp.len() - 1].iter().all(|c| c.is_nan())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_double_uses_two_outputs_low_word_first() {
        // (3499211612 + 581869302 * 2^32) / 2^64 = 0.13547700413...
        let mut rng = Mt19937::new(5489);
        let u = canonical_f64(&mut rng);
        let expect =
            (3_499_211_612.0 + 581_869_302.0 * 4_294_967_296.0) / 18_446_744_073_709_551_616.0;
        assert_eq!(u, expect);
        assert_eq!(rng.next_u32(), 3_890_346_734);
    }

    #[test]
    fn fewer_than_two_weights_draw_nothing() {
        let d = DiscreteDistribution::new([0.25]);
        let mut rng = Mt19937::new(1);
        assert_eq!(d.sample(&mut rng), 0);
        // the generator was not advanced
        assert_eq!(rng.next_u32(), Mt19937::new(1).next_u32());
    }

    #[test]
    fn lower_bound_picks_the_first_cumulative_weight_not_below_p() {
        let d = DiscreteDistribution::new([1.0, 1.0, 2.0]);
        assert_eq!(d.index_of(0.0), 0);
        assert_eq!(d.index_of(0.25), 0);
        assert_eq!(d.index_of(0.250_000_000_1), 1);
        assert_eq!(d.index_of(0.5), 1);
        assert_eq!(d.index_of(0.75), 2);
        assert_eq!(d.probabilities(3).unwrap(), vec![0.25, 0.25, 0.5]);
        let nan = DiscreteDistribution::new([f64::NAN, f64::NAN, 1.0]);
        assert!(nan.all_nan());
        assert_eq!(nan.index_of(0.9), 0);
        assert!(nan.probabilities(3).is_none());
    }

    #[test]
    fn partial_sums_past_one_give_the_forced_last_entry_nothing() {
        // Nine equal weights then a zero: the double partial sums of 1/9
        // reach 1.0000000000000002 at the ninth, and libstdc++ sets the last
        // entry to exactly 1, below it.
        let w = [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0];
        let d = DiscreteDistribution::new(w);
        let ninth = (0..9).fold(0.0f64, |acc, _| acc + 1.0 / 9.0);
        assert!(ninth > 1.0, "{ninth}");
        let shares = d.probabilities(w.len()).expect("a distribution");
        assert_eq!(shares.len(), 10);
        assert_eq!(shares[9], 0.0);
        let eighth = (0..8).fold(0.0f64, |acc, _| acc + 1.0 / 9.0);
        assert_eq!(shares[8], 1.0 - eighth);
        assert_eq!(shares.iter().sum::<f64>(), 1.0);
        // what lower_bound does: nothing below 1 reaches the last entry, and
        // the ninth takes everything above the eighth partial sum
        assert_eq!(d.index_of(1.0f64.next_down()), 8);
        assert_eq!(d.index_of(eighth.next_up()), 8);
        assert_eq!(d.index_of(eighth), 7);
        // a weight pushing the sum past 1 before zeros: those zeros get 0 too
        let d = DiscreteDistribution::new([1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0]);
        let shares = d.probabilities(11).expect("a distribution");
        assert_eq!(&shares[9..], &[0.0, 0.0]);
        assert_eq!(d.index_of(1.0f64.next_down()), 8);
        // a negative weight is not a distribution
        assert!(
            DiscreteDistribution::new([1.0, -0.5, 1.0])
                .probabilities(3)
                .is_none()
        );
    }
}
