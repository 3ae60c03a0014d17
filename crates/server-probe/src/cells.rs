//! The cells every test runs on, and the logits the candidates run on.
//!
//! With the whole vocabulary (the raw list has `n_vocab` entries) a cell is
//! a token and the candidates run on the rebuilt logits as they are. With a
//! truncated list (the top K of an unknown or larger vocabulary) the cells
//! are the listed tokens plus **one tail cell** holding every token nothing
//! names: a draw or a post-sampling entry outside them lands there. The
//! listed tokens are the raw top K, plus the tokens whose raw log-probability
//! the server returned with a draw (where its dialect says so: `dialect::DrawLogprob`), which
//! are known exactly wherever they rank. The tail's mass τ is known, its
//! shape is not: every unnamed token is at most as likely as the least
//! likely of the top K (`p_cap`), and there are at most `n_vocab` minus the
//! named ones. So each candidate runs under a family of tails that spans
//! what a list allows:
//!
//! - **concentrated**: ⌈τ / p_cap⌉ tokens at `p_cap` (the last one with the
//!   rest), the fewest tokens the tail can be;
//! - between them, `m` tokens of τ / m each, for `m` on a geometric grid;
//! - **spread**: τ spread evenly over every unnamed token (only when the
//!   vocabulary size is known).
//!
//! A real tail lies between the extremes, not at one: under a temperature
//! T < 1 the unnamed tokens keep Σ p^(1/T) of mass, which is largest when
//! concentrated and smallest when spread, and the equal-token tails reach
//! every value between, so a test at the extremes alone can miss the real
//! one (the concentrated tail alone, all the probe tried without the
//! vocabulary's size, left a server's own sampler (mlx_lm.server 0.32.2,
//! `fixtures/server-probe/mlx.json`) at p 5e-3 on its T
//! 0.7 draws). A candidate is ruled out only when it is under every tail of
//! the family.
//!
//! A candidate's distribution over the cells is its probabilities on the
//! listed tokens and the sum of the rest on the tail cell. Where the tails
//! give different cells the list is too short to fix that candidate (e.g.
//! any top-k ≥ K looks the same on K entries under one tail and not
//! another); the verdicts say so.

use std::collections::HashMap;

use parity_core::{Error, Logits};

/// A tail concentrated in more tokens than this is not built (the spread
/// tail covers that case).
const MAX_CONCENTRATED: usize = 1 << 20;

/// Where the vocabulary size is unknown (a server that does not say it), the
/// spread tail is this many tokens: Gemma 3's 262,144, the largest
/// vocabulary of the models these engines serve. A larger assumed
/// vocabulary only adds tails of smaller tokens, so it can only keep a
/// candidate from being ruled out, never rule one out.
pub const ASSUMED_VOCAB: usize = 262_144;

/// Cells and the tail configurations the candidates run under.
pub(crate) struct Cells {
    /// Space index -> cell, for the listed tokens (with a tail).
    known: Option<HashMap<usize, usize>>,
    /// Listed tokens (all tokens without a tail) ...
    pub n_known: usize,
    /// ... of which the first this many are the raw top list (the rest were
    /// named by draws).
    pub n_top: usize,
    /// `(name, logits)` per tail configuration: one without a tail.
    pub configs: Vec<(&'static str, Logits)>,
    /// The context ids in the candidates' index space (listed tokens only
    /// with a tail: a prompt token outside the list cannot be penalised
    /// where it is not known).
    pub context: Vec<i64>,
    /// What the list could not support (a tail configuration not built, a
    /// draw's log-probability not used).
    pub notes: Vec<String>,
}

impl Cells {
    /// Without a tail: every space index is a cell, the logits as given.
    pub fn whole(logits: Logits, context: Vec<i64>) -> Self {
        Self {
            known: None,
            n_known: logits.len(),
            n_top: logits.len(),
            configs: vec![("", logits)],
            context,
            notes: Vec::new(),
        }
    }

    /// With a tail: `listed` are the space indices and logits (log p + the
    /// offset; `-inf` for p = 0) of the raw top list, in its order, its
    /// first `n_top` entries the raw top K (whose least likely bounds every
    /// unnamed token) and the rest the tokens the draws named; `tail_mass`
    /// the raw mass none of them holds. `shapes`: equal-token tails tried
    /// between the two extremes.
    pub fn truncated(
        listed: &[(usize, f32)],
        n_top: usize,
        tail_mass: f64,
        offset: f64,
        n_vocab: Option<usize>,
        context: &[i64],
        shapes: usize,
    ) -> Result<Self, Error> {
        let mut known = HashMap::new();
        let mut base = Vec::new();
        for &(idx, l) in listed {
            if known.contains_key(&idx) {
                return Err(Error::new(format_args!(
                    "the raw top list names token index {idx} twice"
                )));
            }
            known.insert(idx, base.len());
            base.push(l);
        }
        let n_known = base.len();
        let p_cap = listed[..n_top.min(listed.len())]
            .iter()
            .filter(|(_, l)| l.is_finite())
            .map(|&(_, l)| (f64::from(l) - offset).exp())
            .fold(f64::INFINITY, f64::min);
        let logit = |p: f64| (p.ln() + offset) as f32;
        let mut configs = Vec::new();
        let mut notes = Vec::new();
        if tail_mass > 0.0 && p_cap.is_finite() && p_cap > 0.0 {
            // (The ratio's last bits are f32 noise from the logits.)
            let m = (tail_mass / p_cap * (1.0 - 1e-6)).ceil().max(1.0);
            let fewest = m as usize;
            if m <= MAX_CONCENTRATED as f64 {
                let mut l = base.clone();
                let last = tail_mass - (fewest - 1) as f64 * p_cap;
                l.extend(std::iter::repeat_n(logit(p_cap), fewest - 1));
                l.push(logit(last.max(f64::MIN_POSITIVE)));
                configs.push(("concentrated tail", Logits::from_f32(&l)));
            }
            if n_vocab.is_none() {
                notes.push(format!(
                    "the vocabulary size is unknown (give --vocab FILE): tails of up to {ASSUMED_VOCAB} tokens are tried"
                ));
            }
            let v = n_vocab.unwrap_or(ASSUMED_VOCAB);
            if v > n_known {
                let most = v - n_known;
                let even = |m: usize| {
                    let mut l = base.clone();
                    l.extend(std::iter::repeat_n(logit(tail_mass / m as f64), m));
                    Logits::from_f32(&l)
                };
                if most > fewest {
                    let ratio = (most as f64 / fewest as f64).ln();
                    let mut last = fewest;
                    for j in 1..=shapes {
                        let m = (fewest as f64 * (ratio * j as f64 / (shapes + 1) as f64).exp())
                            .round() as usize;
                        if m > last && m < most {
                            configs.push(("equal-token tail", even(m)));
                            last = m;
                        }
                    }
                }
                configs.push(("spread tail", even(most)));
            }
        }
        if configs.is_empty() {
            configs.push(("no tail mass", Logits::from_f32(&base)));
        }
        let context = context
            .iter()
            .filter_map(|&i| usize::try_from(i).ok().and_then(|i| known.get(&i)))
            .map(|&c| c as i64)
            .collect();
        Ok(Self {
            known: Some(known),
            n_known,
            n_top: n_top.min(n_known),
            configs,
            context,
            notes,
        })
    }

    /// Whether there is a tail cell.
    pub fn has_tail(&self) -> bool {
        self.known.is_some()
    }

    /// Cells in all.
    pub fn len(&self) -> usize {
        self.n_known + usize::from(self.has_tail())
    }

    /// The cell of a space index.
    pub fn cell(&self, idx: usize) -> usize {
        match &self.known {
            None => idx,
            Some(k) => k.get(&idx).copied().unwrap_or(self.n_known),
        }
    }

    /// Cells fixed before any draw, from cells (or counts over them): the
    /// raw top list's tokens and one cell for the rest, the tokens draws
    /// named included; `None` when no draw named a token (the cells are
    /// fixed already).
    pub fn coarse<T: Copy + std::iter::Sum<T>>(&self, fine: &[T]) -> Option<Vec<T>> {
        if !self.has_tail() || self.n_top >= self.n_known {
            return None;
        }
        let mut out = fine[..self.n_top].to_vec();
        out.push(fine[self.n_top..].iter().copied().sum());
        Some(out)
    }

    /// A candidate's probabilities (over one configuration's tokens) as cells.
    pub fn project(&self, probs: &[f64]) -> Vec<f64> {
        if !self.has_tail() {
            return probs.to_vec();
        }
        let mut out = probs[..self.n_known.min(probs.len())].to_vec();
        out.resize(self.n_known, 0.0);
        out.push(probs.iter().skip(self.n_known).sum());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_truncated_list_gets_a_tail_cell_and_two_extreme_tails() {
        // Listed p = 0.5, 0.2, 0.1 at space indices 4, 0, 7; τ = 0.2.
        let listed: Vec<(usize, f32)> = [(4, 0.5f64), (0, 0.2), (7, 0.1)]
            .iter()
            .map(|&(i, p)| (i, p.ln() as f32))
            .collect();
        let cells = Cells::truncated(&listed, 3, 0.2, 0.0, Some(10), &[7, 3, 4], 0).expect("cells");
        assert!(cells.has_tail());
        assert_eq!(cells.len(), 4);
        // Concentrated: 0.2 / 0.1 = 2 tokens of 0.1; spread: 7 of 0.2/7.
        assert_eq!(cells.configs.len(), 2);
        assert_eq!(cells.configs[0].1.len(), 3 + 2);
        assert_eq!(cells.configs[1].1.len(), 3 + 7);
        // Unlisted indices fall in the tail cell; the context keeps the listed.
        assert_eq!(cells.cell(4), 0);
        assert_eq!(cells.cell(3), 3);
        assert_eq!(cells.context, vec![2, 0]);
        assert_eq!(
            cells.project(&[0.5, 0.2, 0.1, 0.1, 0.1]),
            vec![0.5, 0.2, 0.1, 0.2]
        );
        // Without the vocabulary size the spread tail assumes the largest
        // vocabulary, and says so.
        let cells = Cells::truncated(&listed, 3, 0.2, 0.0, None, &[], 0).expect("cells");
        assert_eq!(cells.configs.len(), 2);
        assert_eq!(cells.configs[1].1.len(), ASSUMED_VOCAB);
        assert_eq!(cells.notes.len(), 1);
        assert!(Cells::truncated(&[(1, 0.0), (1, -1.0)], 2, 0.0, 0.0, None, &[], 0).is_err());
    }

    #[test]
    fn tails_lie_between_the_extremes_and_named_tokens_do_not_bound_them() {
        // The top list: p = 0.5, 0.2 at indices 0, 1; a draw named index 5
        // at p = 0.01; τ = 0.29 over a vocabulary of 1000.
        let listed: Vec<(usize, f32)> = [(0, 0.5f64), (1, 0.2), (5, 0.01)]
            .iter()
            .map(|&(i, p)| (i, p.ln() as f32))
            .collect();
        let cells = Cells::truncated(&listed, 2, 0.29, 0.0, Some(1000), &[], 6).expect("cells");
        // Every unnamed token is at most 0.2 (the top list's least likely),
        // not 0.01: the fewest is ⌈0.29 / 0.2⌉ = 2.
        let sizes: Vec<usize> = cells.configs.iter().map(|(_, l)| l.len() - 3).collect();
        // From 2 to all 997 unnamed tokens, geometric in 8 steps.
        let grid: Vec<usize> = (0..8)
            .map(|j| (2.0 * (997.0f64 / 2.0).powf(f64::from(j) / 7.0)).round() as usize)
            .collect();
        assert_eq!(sizes, grid);
        assert_eq!(cells.configs[3].0, "equal-token tail");
        // The named token has its own cell.
        assert_eq!(cells.len(), 4);
        assert_eq!(cells.cell(5), 2);
        assert_eq!(cells.cell(6), 3);
    }
}
