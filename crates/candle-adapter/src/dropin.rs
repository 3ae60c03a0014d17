//! A drop-in for candle's `LogitsProcessor` with transformers' semantics.
//!
//! [`HfLogitsProcessor`] has the shape of
//! `candle_transformers::generation::LogitsProcessor` — built once with a seed,
//! then `sample(&Tensor) -> candle_core::Result<u32>` per step — but draws from
//! exactly the distribution transformers' `generate` samples from, through
//! [`hf_sampling::HfSampler`]: top-k keeps ties with the k-th value, top-p and
//! min-p follow transformers' order and f32 arithmetic, the repetition penalty
//! is transformers' (every distinct id of the whole context, once). Greedy
//! parameters (`do_sample = false`) give the argmax, as transformers does.
//!
//! candle's processor never sees the context; this one keeps it: the prompt
//! given to [`HfLogitsProcessor::set_prompt`] plus every token it returned.
//!
//! Two ways to draw:
//!
//! - [`HfLogitsProcessor::new`]: the same distribution as transformers,
//!   drawn with a seeded `StdRng` through the fast sampler.
//! - [`HfLogitsProcessor::torch_seeded`]: transformers' very tokens for a
//!   `torch.manual_seed(seed)`, step after step, through
//!   [`replicas::torch::TorchGenerator`] (torch 2.15's CPU generator and
//!   `torch.multinomial` replayed; `docs/engines/torch-seeded.md`). Given the
//!   logits transformers saw, it returns the tokens `generate(do_sample=True)`
//!   returned; a port whose tokens part from transformers' under this mode
//!   parts because of its logits, not its sampler.

use candle_core::{DType, Storage, Tensor};
use hf_sampling::{GenerationParams, HfError, HfSampler, TorchSample};
use replicas::torch::TorchGenerator;

use rand::SeedableRng;
use rand::rngs::StdRng;

/// transformers' sampling behind candle's `LogitsProcessor` interface.
#[derive(Debug, Clone)]
pub struct HfLogitsProcessor {
    draw: Draw,
    context: Vec<i64>,
    prompt_len: usize,
}

/// Where the randomness comes from.
#[derive(Debug, Clone)]
enum Draw {
    Fast {
        sampler: Box<HfSampler>,
        rng: StdRng,
    },
    Torch {
        params: GenerationParams,
        generator: Box<TorchGenerator>,
    },
}

impl HfLogitsProcessor {
    /// A processor for resolved transformers parameters (see
    /// [`hf_sampling::resolve`]), seeding its `StdRng` with `seed`. Errors
    /// where transformers' processor constructors raise.
    pub fn new(seed: u64, params: &GenerationParams) -> Result<Self, HfError> {
        Ok(Self {
            draw: Draw::Fast {
                sampler: Box::new(HfSampler::new(params)?),
                rng: StdRng::seed_from_u64(seed),
            },
            context: Vec::new(),
            prompt_len: 0,
        })
    }

    /// The same processor with its sampler's passes over the vocabulary at
    /// `dispatch` (see [`hf_sampling::Dispatch`]); a torch-seeded processor
    /// is unchanged.
    #[must_use]
    pub fn with_dispatch(mut self, dispatch: hf_sampling::Dispatch) -> Self {
        if let Draw::Fast { sampler, .. } = &mut self.draw {
            sampler.set_dispatch(dispatch);
        }
        self
    }

    /// A processor that draws as transformers does after
    /// `torch.manual_seed(seed)` on CPU: the same tokens for the same logits.
    /// Slower than [`Self::new`] (torch's race draws two generator outputs
    /// per vocabulary entry). Errors where transformers' processor
    /// constructors raise.
    pub fn torch_seeded(seed: u64, params: &GenerationParams) -> Result<Self, HfError> {
        params.processor_names()?;
        Ok(Self {
            draw: Draw::Torch {
                params: params.clone(),
                generator: Box::new(TorchGenerator::manual_seed(seed)),
            },
            context: Vec::new(),
            prompt_len: 0,
        })
    }

    /// Set the prompt (the ids the repetition penalty sees before any
    /// generated token); clears generated tokens.
    pub fn set_prompt(&mut self, prompt: &[u32]) {
        self.context.clear();
        self.context.extend(prompt.iter().map(|&t| i64::from(t)));
        // Where generation starts: min_new_tokens, begin_suppress_tokens and
        // the length penalty count from here.
        self.prompt_len = prompt.len();
    }

    /// Prompt and generated ids so far.
    pub fn context(&self) -> &[i64] {
        &self.context
    }

    /// Draw the next token from a logits tensor (any float dtype, one row:
    /// shape `[V]` or `[1, V]`); the token is appended to the context.
    pub fn sample(&mut self, logits: &Tensor) -> candle_core::Result<u32> {
        let logits = if logits.dtype() == DType::F32 {
            logits.flatten_all()?
        } else {
            logits.to_dtype(DType::F32)?.flatten_all()?
        };
        let (storage, layout) = logits.storage_and_layout();
        let token = match (&*storage, layout.contiguous_offsets()) {
            (Storage::Cpu(cpu), Some((start, end))) => {
                let values: &[f32] = cpu.as_slice()?;
                self.draw(&values[start..end])?
            }
            _ => {
                drop(storage);
                let values = logits.to_device(&candle_core::Device::Cpu)?.to_vec1()?;
                self.draw(&values)?
            }
        };
        self.context.push(i64::from(token));
        Ok(token)
    }

    /// Draw from plain logits with an explicit context, which is not
    /// recorded: the same sampler and seeded RNG without a tensor.
    pub fn sample_slice(&mut self, logits: &[f32], context: &[i64]) -> candle_core::Result<u32> {
        let id = match &mut self.draw {
            Draw::Fast { sampler, rng } => sampler
                .sample(logits, context, rng)
                .map_err(candle_core::Error::wrap)?,
            Draw::Torch { params, generator } => generator
                .sample(logits, context, params)
                .map_err(candle_core::Error::wrap)?,
        };
        u32::try_from(id).map_err(candle_core::Error::wrap)
    }

    fn draw(&mut self, logits: &[f32]) -> candle_core::Result<u32> {
        let id = match &mut self.draw {
            Draw::Fast { sampler, rng } => sampler
                .sample_at(logits, &self.context, self.prompt_len, rng)
                .map_err(candle_core::Error::wrap)?,
            Draw::Torch { params, generator } => generator
                .sample(logits, &self.context, params)
                .map_err(candle_core::Error::wrap)?,
        };
        u32::try_from(id).map_err(candle_core::Error::wrap)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(f: impl FnOnce(&mut GenerationParams)) -> GenerationParams {
        let mut p = GenerationParams {
            do_sample: true,
            top_k: None,
            ..GenerationParams::default()
        };
        f(&mut p);
        p
    }

    #[test]
    fn draws_only_kept_tokens_and_tracks_context() -> candle_core::Result<()> {
        // Top-k 2 keeps ids 1 and 3 (ties with the 2nd value kept: 3.0 twice).
        let logits = Tensor::new(&[[0.0f32, 3.0, 1.0, 3.0, -2.0]], &candle_core::Device::Cpu)?;
        let mut p = HfLogitsProcessor::new(7, &params(|p| p.top_k = Some(2))).expect("valid");
        p.set_prompt(&[4]);
        for _ in 0..50 {
            let t = p.sample(&logits)?;
            assert!(t == 1 || t == 3, "{t}");
        }
        assert_eq!(p.context().len(), 51);
        Ok(())
    }

    #[test]
    fn greedy_and_errors() -> candle_core::Result<()> {
        let dev = candle_core::Device::Cpu;
        let mut g = HfLogitsProcessor::new(0, &GenerationParams::default()).expect("valid");
        let logits = Tensor::new(&[0.5f32, 2.0, 2.0], &dev)?;
        assert_eq!(g.sample(&logits)?, 1);
        let mut s = HfLogitsProcessor::new(0, &params(|_| {})).expect("valid");
        let nan = Tensor::new(&[0.5f32, f32::NAN], &dev)?;
        let err = s.sample(&nan).expect_err("NaN logit");
        assert!(err.to_string().contains("NaN"), "{err}");
        Ok(())
    }

    #[test]
    fn same_seed_same_tokens_and_f16_input() -> candle_core::Result<()> {
        let dev = candle_core::Device::Cpu;
        let v = bench_support::heavy_tailed_logits(1000, 1);
        let logits = Tensor::new(v.as_slice(), &dev)?;
        let p = params(|p| p.top_p = 0.9);
        let mut a = HfLogitsProcessor::new(3, &p).expect("valid");
        let mut b = HfLogitsProcessor::new(3, &p).expect("valid");
        for _ in 0..20 {
            assert_eq!(a.sample(&logits)?, b.sample(&logits)?);
        }
        let half = logits.to_dtype(DType::F16)?;
        let t = a.sample(&half)?;
        assert!((t as usize) < 1000);
        Ok(())
    }
}
