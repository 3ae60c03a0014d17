//! The side-by-side cases: transformers parameters for `hf_sampling::HfSampler`
//! beside the candle `Sampling` a port would use, and candle's real
//! `LogitsProcessor` over fixed logits.

use candle_adapter::CandleSampling;
use candle_core::{Device, Tensor};
use candle_transformers::generation::LogitsProcessor;
use hf_sampling::GenerationParams;

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
