//! candle's real `LogitsProcessor` over fixed logits, for side-by-side timing
//! (`compare bench`, `cargo bench -p candle-adapter`): the tensor is built
//! once; each [`CandleBench::sample`] is one real candle step, after the real
//! `candle_transformers::utils::apply_repeat_penalty` when a penalty is set.
//! Behind the `bench` feature, so that `bench-support` (the shared logits and
//! cases) needs no candle.
//!
//! candle's literal port reads `bench_support`'s cases as: `t07` `All { 0.7 }`,
//! `k40` `TopK { 40 }`, `p09` `TopP { 0.9 }`, `k40p09` `TopKThenTopP { 40, 0.9 }`,
//! `minp005` `All { 1.0 }` (candle has no min-p), `rep13_ctx1k` the real
//! `apply_repeat_penalty` then `All { 1.0 }`.

use candle_core::{Device, Tensor};
use candle_transformers::generation::LogitsProcessor;
use serde_json::{Map, Value};

use crate::params::CandleSampling;
use crate::translate::literal;

/// One real candle sampler over fixed logits.
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

    /// The processor a port writes for generate `kwargs` read literally
    /// ([`crate::translate::literal`]), with the penalty over `context` when
    /// the kwargs set one.
    pub fn literal(
        seed: u64,
        kwargs: &Map<String, Value>,
        logits: &[f32],
        context: &[u32],
    ) -> candle_core::Result<Self> {
        let params = literal(kwargs);
        let penalty = params.repeat_penalty.map(|rp| (rp.penalty as f32, context));
        Self::new(seed, &params.sampling, logits, penalty)
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
