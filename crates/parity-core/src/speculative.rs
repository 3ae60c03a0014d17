//! Speculative decoding's table as `compare speculative` prints it: for one
//! target/draft pair, what each verifier emits first ([`Table`]), computed by
//! an engine's crate behind [`SpeculativeTable`] and handed to the comparison
//! library in the registry's engines.

/// A first-token distribution this close to the target (TV) is exact: the
/// computation is f64 and sums over up to ~10^5 tokens.
pub const EXACT_TV: f64 = 1e-12;

/// One verifier and proposal on one target/draft pair.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The verification rule's short name.
    pub algorithm: &'static str,
    /// How the candidate was drawn, in words (e.g. `x ~ q`).
    pub candidates: String,
    /// Where this configuration occurs in the real engine, in words.
    pub setting: &'static str,
    /// Total variation of the first emitted token to the target.
    pub tv: f64,
    /// Probability that a rejection meets an empty residual the rule has no
    /// answer for.
    pub undefined: f64,
    /// Probability that the candidate is accepted (`α`).
    pub acceptance: f64,
    /// Expected accepted draft tokens per step for K.
    pub expected_accepted: f64,
    /// Expected tokens emitted per step for K.
    pub expected_emitted: f64,
    /// Why the first token misses the target, in words; `None` when it is
    /// exact (TV <= [`EXACT_TV`]).
    pub reason: Option<String>,
}

/// Every row for one target/draft pair.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    /// The vocabulary size.
    pub vocab: usize,
    /// `Σ_x min(p(x), q(x))`: the textbook acceptance rate with `x ~ q`.
    pub acceptance_rate: f64,
    /// One row per verifier and proposal, in the legend's order.
    pub rows: Vec<Row>,
}

/// Where a row's configuration occurs, for the table's legend.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Occurrence {
    /// The verification rule's short name.
    pub algorithm: &'static str,
    /// How the candidate was drawn, in words.
    pub candidates: String,
    /// Where it occurs, in words.
    pub setting: &'static str,
}

/// The speculative-decoding verifiers `compare speculative` tables.
pub trait SpeculativeTable: Send + Sync {
    /// Every row for target `target` and draft `draft` (probabilities over
    /// one vocabulary) with `k` draft tokens per step.
    fn table(
        &self,
        target: &[f64],
        draft: &[f64],
        k: usize,
    ) -> Result<Table, Box<dyn std::error::Error + Send + Sync>>;
    /// Where each row occurs, in the rows' order.
    fn legend(&self) -> Vec<Occurrence>;
    /// `logits` deterministically perturbed by at most `scale` (seeded by
    /// `seed`), for a weaker draft.
    fn perturbed(&self, logits: &[f32], scale: f32, seed: u64) -> Vec<f32>;
}
