//! transformers' `_sample` step with torch's CPU generator: the very token
//! `generate(do_sample=True)` draws for a `torch.manual_seed`.
//!
//! The generator, its softmax and `torch.multinomial(probs, 1)` are torch's
//! and live in [`replicas::torch`]; what is transformers' is the step
//! (`transformers/generation/utils.py`, `_sample`, 5.23.0):
//! `probs = softmax(next_token_scores, dim=-1)`, then
//! `torch.multinomial(probs, num_samples=1)` from the global generator, once
//! per step, with nothing else drawing from it on CPU; greedy steps
//! (`do_sample=False`) take `argmax` and draw nothing.
//! `docs/engines/torch-seeded.md` has the evidence and the figures.

use replicas::torch::{MultinomialError, TorchGenerator};

use crate::{GenerationParams, HfError, process};

/// Why a [`TorchSample::sample`] step refused: the processor chain, or
/// `torch.multinomial`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TorchSampleError {
    /// The processor chain refused (invalid parameters, NaN logits, nothing
    /// left to sample from, ...): exactly [`crate::process`]'s errors.
    #[error(transparent)]
    Hf(#[from] HfError),
    /// `torch.multinomial` refused the probabilities.
    #[error(transparent)]
    Multinomial(#[from] MultinomialError),
}

/// transformers' `_sample` step on torch's generator.
pub trait TorchSample {
    /// One step of transformers' `_sample`: run the processors on `logits`
    /// with the context `input_ids` (as [`crate::process`]); when sampling,
    /// `torch.multinomial(softmax(scores), 1)` from this generator, with the
    /// softmax of the generator's [`replicas::torch::CpuCapability`]; when
    /// not, the greedy token, drawing nothing. Append the token to the
    /// context and call again for the next step: the generator carries on as
    /// torch's does.
    fn sample(
        &mut self,
        logits: &[f32],
        input_ids: &[i64],
        params: &GenerationParams,
    ) -> Result<usize, TorchSampleError>;
}

impl TorchSample for TorchGenerator {
    fn sample(
        &mut self,
        logits: &[f32],
        input_ids: &[i64],
        params: &GenerationParams,
    ) -> Result<usize, TorchSampleError> {
        let out = process(logits, input_ids, params)?;
        match out.greedy {
            Some(token) => Ok(token),
            None => Ok(self.multinomial(&self.capability().softmax(&out.scores))?),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn greedy_steps_draw_nothing() {
        let mut g = TorchGenerator::manual_seed(3);
        let fresh = TorchGenerator::manual_seed(3).random();
        let token = g
            .sample(&[0.0, 2.0, 1.0], &[], &GenerationParams::default())
            .expect("valid");
        assert_eq!(token, 1);
        assert_eq!(g.random(), fresh);
    }
}
