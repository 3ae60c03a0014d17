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
//! It does not replay transformers' tokens for a seed (torch's generator is
//! not reproduced; see `hf_sampling`'s crate docs): same distribution, own
//! `StdRng` stream.

use candle_core::{DType, Device, Storage, Tensor};
use candle_transformers::generation::LogitsProcessor;
use hf_sampling::{GenerationParams, HfError, HfSampler};

use crate::CandleSampling;
use rand::SeedableRng;
use rand::rngs::StdRng;

/// transformers' sampling behind candle's `LogitsProcessor` interface.
#[derive(Debug, Clone)]
pub struct HfLogitsProcessor {
    sampler: HfSampler,
    rng: StdRng,
    context: Vec<i64>,
}

impl HfLogitsProcessor {
    /// A processor for resolved transformers parameters (see
    /// [`hf_sampling::resolve`]), seeding its `StdRng` with `seed`. Errors
    /// where transformers' processor constructors raise.
    pub fn new(seed: u64, params: &GenerationParams) -> Result<Self, HfError> {
        Ok(Self {
            sampler: HfSampler::new(params)?,
            rng: StdRng::seed_from_u64(seed),
            context: Vec::new(),
        })
    }

    /// Set the prompt (the ids the repetition penalty sees before any
    /// generated token); clears generated tokens.
    pub fn set_prompt(&mut self, prompt: &[u32]) {
        self.context.clear();
        self.context.extend(prompt.iter().map(|&t| i64::from(t)));
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
    pub fn sample_slice(&mut self, logits: &[f32], context: &[i64]) -> Result<u32, HfError> {
        let id = self.sampler.sample(logits, context, &mut self.rng)?;
        Ok(u32::try_from(id).unwrap_or(u32::MAX))
    }

    fn draw(&mut self, logits: &[f32]) -> candle_core::Result<u32> {
        let id = self
            .sampler
            .sample(logits, &self.context, &mut self.rng)
            .map_err(candle_core::Error::wrap)?;
        u32::try_from(id).map_err(candle_core::Error::wrap)
    }
}

/// candle's real `LogitsProcessor` over fixed logits, for side-by-side timing
/// (`compare bench`): the tensor is built once; each [`CandleBench::sample`]
/// is one real candle step, after the real
/// `candle_transformers::utils::apply_repeat_penalty` when a penalty is set.
pub struct CandleBench {
    lp: LogitsProcessor,
    tensor: Tensor,
    penalty: Option<(f32, Vec<u32>)>,
}

impl CandleBench {
    /// candle's processor for `sampling`, seeded, on a CPU tensor of `logits`.
    pub fn new(
        seed: u64,
        sampling: &CandleSampling,
        logits: &[f32],
        penalty: Option<(f32, &[u32])>,
    ) -> candle_core::Result<Self> {
        Ok(Self {
            lp: LogitsProcessor::from_sampling(seed, sampling.to_candle()),
            tensor: Tensor::new(logits, &Device::Cpu)?,
            penalty: penalty.map(|(p, ctx)| (p, ctx.to_vec())),
        })
    }

    /// One candle sampling step on the stored logits.
    pub fn sample(&mut self) -> candle_core::Result<u32> {
        match &self.penalty {
            Some((p, ctx)) => {
                let t = candle_transformers::utils::apply_repeat_penalty(&self.tensor, *p, ctx)?;
                self.lp.sample(&t)
            }
            None => self.lp.sample(&self.tensor),
        }
    }
}

/// One side-by-side benchmark case: transformers parameters for our sampler
/// and the candle `Sampling` a port would use for them.
#[derive(Debug, Clone)]
pub struct BenchCase {
    /// Short id (`t07`, `k40`, `p09`, `k40p09`, `minp005`, `rep13_ctx1k`).
    pub id: &'static str,
    /// Parameters of `hf_sampling::HfSampler`.
    pub ours: GenerationParams,
    /// candle's counterpart (`All` where candle has none, e.g. min-p).
    pub candle: CandleSampling,
    /// Whether the case penalises a 1,000-id context ([`bench_context`]),
    /// candle through the real `apply_repeat_penalty` with 1.3.
    pub penalty: bool,
}

/// The cases shared by `cargo bench -p candle-adapter` and `compare bench`.
pub fn bench_cases() -> Vec<BenchCase> {
    let ours = |f: &dyn Fn(&mut GenerationParams)| {
        let mut p = GenerationParams {
            do_sample: true,
            top_k: None,
            ..GenerationParams::default()
        };
        f(&mut p);
        p
    };
    let all = |temperature| CandleSampling::All { temperature };
    let case = |id, ours, candle, penalty| BenchCase {
        id,
        ours,
        candle,
        penalty,
    };
    vec![
        case("t07", ours(&|p| p.temperature = 0.7), all(0.7), false),
        case(
            "k40",
            ours(&|p| p.top_k = Some(40)),
            CandleSampling::TopK {
                k: 40,
                temperature: 1.0,
            },
            false,
        ),
        case(
            "p09",
            ours(&|p| p.top_p = 0.9),
            CandleSampling::TopP {
                p: 0.9,
                temperature: 1.0,
            },
            false,
        ),
        case(
            "k40p09",
            ours(&|p| {
                p.top_k = Some(40);
                p.top_p = 0.9;
            }),
            CandleSampling::TopKThenTopP {
                k: 40,
                p: 0.9,
                temperature: 1.0,
            },
            false,
        ),
        case("minp005", ours(&|p| p.min_p = Some(0.05)), all(1.0), false),
        case(
            "rep13_ctx1k",
            ours(&|p| p.repetition_penalty = 1.3),
            all(1.0),
            true,
        ),
    ]
}

/// The 1,000-id context of the penalty case, spread over a vocabulary of `v`.
pub fn bench_context(v: usize) -> Vec<i64> {
    (0..1000).map(|i| (i * 7919 % v) as i64).collect()
}

/// One plain pass for the first argmax, vectorised (an 8-lane max, then the
/// first index holding it): the floor any sampler pays to read the logits.
pub fn argmax_floor(y: &[f32]) -> usize {
    let mut m = [f32::NEG_INFINITY; 8];
    let chunks = y.chunks_exact(8);
    let rest = chunks.remainder();
    for c in chunks {
        for (lane, &x) in m.iter_mut().zip(c) {
            *lane = if x > *lane { x } else { *lane };
        }
    }
    let best = m
        .iter()
        .chain(rest)
        .fold(f32::NEG_INFINITY, |a, &b| a.max(b));
    y.iter().position(|&x| x == best).unwrap_or(0)
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
        let v = hf_sampling::heavy_tailed_logits(1000, 1);
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
