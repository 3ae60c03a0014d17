//! The context seen so far, kept incrementally for the repetition penalty.

/// The context seen so far, kept incrementally: a copy of the ids (to check
/// that a new context extends the old one) and a bitset of distinct ids < V.
#[derive(Debug, Default, Clone)]
pub(super) struct Context {
    ids: Vec<i64>,
    bits: Vec<u64>,
    pub(super) seen: Vec<u32>,
    vocab: usize,
}

impl Context {
    /// Bring the set up to `ctx`; `Err(())` on a negative id.
    pub(super) fn update(&mut self, ctx: &[i64], vocab: usize) -> Result<(), ()> {
        let extends = vocab == self.vocab
            && ctx.len() >= self.ids.len()
            && ctx[..self.ids.len()] == self.ids[..];
        if !extends {
            self.ids.clear();
            self.seen.clear();
            self.bits.clear();
            self.bits.resize(vocab.div_ceil(64), 0);
            self.vocab = vocab;
        }
        let start = self.ids.len();
        for &id in &ctx[start..] {
            if id < 0 {
                // Leave the set consistent with `ids` so the next call rebuilds.
                self.vocab = usize::MAX;
                return Err(());
            }
            self.ids.push(id);
            if let Ok(i) = usize::try_from(id)
                && i < vocab
            {
                let (w, b) = (i / 64, i % 64);
                if self.bits[w] & (1 << b) == 0 {
                    self.bits[w] |= 1 << b;
                    self.seen.push(i as u32);
                }
            }
        }
        Ok(())
    }
}
