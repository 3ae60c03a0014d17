//! The cells every test runs on, and the logits the candidates run on.
//!
//! With the whole vocabulary (the raw list has `n_vocab` entries) a cell is
//! a token and the candidates run on the rebuilt logits as they are. With a
//! truncated list (the top K of an unknown or larger vocabulary) the cells
//! are the K listed tokens plus **one tail cell** holding every token the
//! list does not name: a draw or a post-sampling entry outside the list
//! lands there. The tail's mass τ is known, its shape is not, so each
//! candidate runs under the two extreme tails a list allows (every tail
//! token is at most as likely as the least likely listed one, `p_min`):
//!
//! - **concentrated**: ⌈τ / p_min⌉ tokens at `p_min` (the last one with the
//!   rest), the fewest tokens the tail can be;
//! - **spread**: τ spread evenly over the `n_vocab − K` unlisted tokens
//!   (only when the vocabulary size is known).
//!
//! A candidate's distribution over the cells is its probabilities on the
//! listed tokens and the sum of the rest on the tail cell. Where the two
//! tails give different cells the list is too short to fix that candidate
//! (e.g. any top-k ≥ K looks the same on K entries under one tail and not
//! the other); the verdicts say so.

use std::collections::HashMap;

use parity_core::{Error, Logits};

/// A tail concentrated in more tokens than this is not built (the spread
/// tail covers that case).
const MAX_CONCENTRATED: usize = 1 << 20;

/// Cells and the tail configurations the candidates run under.
pub(crate) struct Cells {
    /// Space index -> cell, for the listed tokens (with a tail).
    known: Option<HashMap<usize, usize>>,
    /// Listed tokens (all tokens without a tail).
    pub n_known: usize,
    /// `(name, logits)` per tail configuration: one without a tail.
    pub configs: Vec<(&'static str, Logits)>,
    /// The context ids in the candidates' index space (listed tokens only
    /// with a tail: a prompt token outside the list cannot be penalised
    /// where it is not known).
    pub context: Vec<i64>,
    /// Why a tail configuration could not be built, if so.
    pub note: Option<String>,
}

impl Cells {
    /// Without a tail: every space index is a cell, the logits as given.
    pub fn whole(logits: Logits, context: Vec<i64>) -> Self {
        Self {
            known: None,
            n_known: logits.len(),
            configs: vec![("", logits)],
            context,
            note: None,
        }
    }

    /// With a tail: `listed` are the space indices and logits (log p + the
    /// offset; `-inf` for p = 0) of the raw list, in its order.
    pub fn truncated(
        listed: &[(usize, f32)],
        tail_mass: f64,
        offset: f64,
        n_vocab: Option<usize>,
        context: &[i64],
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
        let p_min = listed
            .iter()
            .filter(|(_, l)| l.is_finite())
            .map(|&(_, l)| (f64::from(l) - offset).exp())
            .fold(f64::INFINITY, f64::min);
        let logit = |p: f64| (p.ln() + offset) as f32;
        let mut configs = Vec::new();
        let mut note = None;
        if tail_mass > 0.0 && p_min.is_finite() && p_min > 0.0 {
            // (The ratio's last bits are f32 noise from the logits.)
            let m = (tail_mass / p_min * (1.0 - 1e-6)).ceil().max(1.0);
            if m <= MAX_CONCENTRATED as f64 {
                let m = m as usize;
                let mut l = base.clone();
                let last = tail_mass - (m - 1) as f64 * p_min;
                l.extend(std::iter::repeat_n(logit(p_min), m - 1));
                l.push(logit(last.max(f64::MIN_POSITIVE)));
                configs.push(("concentrated tail", Logits::from_f32(&l)));
            }
            match n_vocab {
                Some(v) if v > n_known => {
                    let rest = v - n_known;
                    let mut l = base.clone();
                    l.extend(std::iter::repeat_n(logit(tail_mass / rest as f64), rest));
                    configs.push(("spread tail", Logits::from_f32(&l)));
                }
                _ => {
                    note = Some(
                        "the vocabulary size is unknown: only the concentrated tail is tried"
                            .to_string(),
                    );
                }
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
            configs,
            context,
            note,
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
        let cells = Cells::truncated(&listed, 0.2, 0.0, Some(10), &[7, 3, 4]).expect("cells");
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
        // Without the vocabulary size only the concentrated tail is tried.
        let cells = Cells::truncated(&listed, 0.2, 0.0, None, &[]).expect("cells");
        assert_eq!(cells.configs.len(), 1);
        assert!(cells.note.is_some());
        assert!(Cells::truncated(&[(1, 0.0), (1, -1.0)], 0.0, 0.0, None, &[]).is_err());
    }
}
