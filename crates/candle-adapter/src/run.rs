//! The real `LogitsProcessor` next to its mirror: real draws, replay, verification.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use candle_core::{Device, Tensor};
use candle_transformers::generation::LogitsProcessor;
use rand::SeedableRng;
use rand::distr::Distribution;
use rand::distr::weighted::WeightedIndex;
use rand::rngs::StdRng;
use serde::Serialize;

use crate::closure::HfTopK;
use crate::error::AdapterError;
use crate::gumbel::GumbelDistribution;
use crate::mirror::{
    Draw, Mirrored, candle_argmax, candle_prs, kept_of, truncate, weights_to_probs,
};
use crate::params::{CandleParams, CandleSampling};
use crate::penalty::{check_logits, token_ids};
use crate::stats::{Frequencies, counts, frequencies};

/// The logits tensor as `LogitsProcessor::sample` receives it, with the
/// optional closure: everything a real draw needs, built once.
struct Real {
    sampling: CandleSampling,
    tensor: Tensor,
    penalised: Vec<f32>,
    closure: Option<HfTopK>,
}

impl Real {
    fn new(logits: &[f32], input_ids: &[i64], params: &CandleParams) -> Result<Self, AdapterError> {
        check_logits(logits)?;
        let mut tensor = Tensor::from_slice(logits, logits.len(), &Device::Cpu)?;
        if let Some(rp) = params.repeat_penalty {
            let ids = token_ids(rp.window.apply(input_ids))?;
            tensor =
                candle_transformers::utils::apply_repeat_penalty(&tensor, rp.penalty as f32, &ids)?;
        }
        let penalised = tensor.to_vec1::<f32>()?;
        let closure = match (params.hf_top_k, params.sampling.temperature()) {
            (Some(k), Some(t)) => Some(HfTopK::new(&penalised, k, t)),
            _ => None,
        };
        Ok(Real {
            sampling: params.sampling.clone(),
            tensor,
            penalised,
            closure,
        })
    }

    /// `n` draws of a fresh `LogitsProcessor::from_sampling(seed, ..)`.
    fn draws(&self, seed: u64, n: usize) -> Result<Vec<u32>, AdapterError> {
        let mut lp = LogitsProcessor::from_sampling(seed, self.sampling.to_candle());
        (0..n).map(|_| self.sample(&mut lp)).collect()
    }

    fn sample(&self, lp: &mut LogitsProcessor) -> Result<u32, AdapterError> {
        Ok(match &self.closure {
            Some(c) => lp.sample_f(&self.tensor, |prs| c.apply(prs))?,
            None => lp.sample(&self.tensor)?,
        })
    }
}

/// `n` draws from the real `LogitsProcessor::from_sampling(seed, sampling)` on
/// these logits (after the real `apply_repeat_penalty` and with the optional
/// closure via `sample_f`), without building the mirror. candle's errors come
/// back as [`AdapterError::Candle`] (e.g. temperature 0).
pub fn real_draws(
    logits: &[f32],
    input_ids: &[i64],
    params: &CandleParams,
    seed: u64,
    n: usize,
) -> Result<Vec<u32>, AdapterError> {
    Real::new(logits, input_ids, params)?.draws(seed, n)
}

/// One stream's replay summary and real tokens.
type StreamDraws = (Option<Replay>, Vec<u32>);

/// The first draw where the real processor and the replay differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Disagreement {
    /// The seed of the stream (the processor's and the replay's).
    pub seed: u64,
    /// 0-based draw index within that stream.
    pub draw: usize,
    /// Token from the real `LogitsProcessor`.
    pub real: u32,
    /// Token from `StdRng::seed_from_u64(seed)` + `WeightedIndex` over the mirror.
    pub mirror: u32,
}

/// Result of replaying real draws.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Replay {
    /// Draws compared.
    pub checked: usize,
    /// Draws where both picked the same token.
    pub agreed: usize,
    /// The first disagreement, if any.
    pub first_disagreement: Option<Disagreement>,
}

/// Options for [`CandleRun::verify`].
#[derive(Debug, Clone, Copy)]
pub struct VerifyOptions<'a> {
    /// Seed of the first stream; stream s uses `seed + s`.
    pub seed: u64,
    /// Total number of real draws.
    pub draws: usize,
    /// Independent streams (one processor each), run on that many threads.
    pub streams: usize,
    /// Another semantics' kept set (token ids, any order): the share of real
    /// draws outside it is reported.
    pub other_kept: Option<&'a [usize]>,
    /// Another distribution (length V) to test the real draws against, e.g.
    /// transformers' probabilities; the mirror is always tested.
    pub reference: Option<&'a [f64]>,
    /// `None` (default): every draw is a real candle draw. `Some(n)`: only the
    /// first n draws of each stream are real (and replayed, so each is an
    /// exact check); the rest of the stream continues with the replay alone
    /// (`StdRng` + `WeightedIndex` over the mirror: the draws candle makes if
    /// the replay keeps agreeing). A speed/strength trade-off for weighted
    /// variants whose real draws are slow (TopP sorts V indices per draw);
    /// ignored for `GumbelSoftmax`, which cannot be replayed.
    pub real_per_stream: Option<usize>,
}

impl Default for VerifyOptions<'_> {
    fn default() -> Self {
        VerifyOptions {
            seed: 299_792_458,
            draws: 2000,
            streams: 1,
            other_kept: None,
            reference: None,
            real_per_stream: None,
        }
    }
}

/// What N real draws say about the mirror.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verification {
    /// The candle `Sampling`, as text.
    pub sampling: String,
    /// Number of draws in the frequencies.
    pub draws: usize,
    /// Of those, real candle draws (the rest are replay continuations, see
    /// [`VerifyOptions::real_per_stream`]).
    pub real_draws: usize,
    /// Streams (seeds `seed .. seed + streams`).
    pub streams: usize,
    /// First seed.
    pub seed: u64,
    /// Size of the mirrored kept set.
    pub mirror_kept: usize,
    /// Replay of every real draw (`None` for `GumbelSoftmax`, which uses
    /// candle's device RNG).
    pub replay: Option<Replay>,
    /// Real draws against the mirrored distribution.
    pub vs_mirror: Frequencies,
    /// Real draws against [`VerifyOptions::reference`], if given.
    pub vs_reference: Option<Frequencies>,
    /// Share of real draws outside the mirrored kept set (must be 0).
    pub outside_mirror_kept: f64,
    /// Share of real draws outside [`VerifyOptions::other_kept`], if given.
    pub outside_other_kept: Option<f64>,
    /// Wall-clock seconds per draw (all streams together, threads in parallel).
    pub secs_per_real_draw: f64,
    /// How often each token id was drawn (length V).
    #[serde(skip)]
    pub counts: Vec<u64>,
}

/// The real processor and its mirror on one (logits, input_ids, params),
/// built once so that many draws are cheap: the logits tensor, the penalty,
/// the closure and the mirror's `WeightedIndex` are reused across draws.
pub struct CandleRun {
    real: Real,
    mirrored: Mirrored,
    index: Option<WeightedIndex<f32>>,
}

impl CandleRun {
    /// Build the real side and the mirror. Errors are candle's own where candle
    /// would fail at draw time (e.g. temperature 0, k = 0).
    pub fn new(
        logits: &[f32],
        input_ids: &[i64],
        params: &CandleParams,
    ) -> Result<Self, AdapterError> {
        let real = Real::new(logits, input_ids, params)?;
        let v = logits.len();
        let one_hot = |token: u32| {
            let mut probs = vec![0f64; v];
            probs[token as usize] = 1.0;
            probs
        };
        let (probs, draw, index) = match real.sampling {
            CandleSampling::ArgMax {} => {
                let token = candle_argmax(&real.tensor)?;
                (one_hot(token), Draw::ArgMax { token }, None)
            }
            CandleSampling::GumbelSoftmax { temperature } if temperature <= 0.0 => {
                let token = candle_argmax(&real.tensor)?;
                (one_hot(token), Draw::ArgMax { token }, None)
            }
            CandleSampling::GumbelSoftmax { temperature } => {
                let (g, probs) = GumbelDistribution::new(&real.penalised, temperature);
                (probs, Draw::Gumbel(g), None)
            }
            ref s => {
                let t = s.temperature().unwrap_or(1.0);
                let prs = candle_prs(&real.tensor, t, real.closure.as_ref())?;
                let (candidates, weights, path) = truncate(s, prs);
                let index = WeightedIndex::new(&weights)?;
                let probs = weights_to_probs(v, &candidates, &weights);
                (
                    probs,
                    Draw::Weighted {
                        candidates,
                        weights,
                        path,
                    },
                    Some(index),
                )
            }
        };
        let kept = kept_of(&probs);
        let mirrored = Mirrored {
            vocab: v,
            probs,
            kept,
            draw,
            penalised_logits: real.penalised.clone(),
        };
        Ok(CandleRun {
            real,
            mirrored,
            index,
        })
    }

    /// The mirrored distribution.
    pub fn mirrored(&self) -> &Mirrored {
        &self.mirrored
    }

    /// The transformers top-k closure in use, if any.
    pub fn closure(&self) -> Option<&HfTopK> {
        self.real.closure.as_ref()
    }

    /// `n` draws of the real `LogitsProcessor::from_sampling(seed, ..)`.
    pub fn real_draws(&self, seed: u64, n: usize) -> Result<Vec<u32>, AdapterError> {
        self.real.draws(seed, n)
    }

    /// `n` draws of the replay alone: `StdRng::seed_from_u64(seed)` and a
    /// `WeightedIndex` over the mirrored candidates (for an argmax, the token).
    /// `None` for `GumbelSoftmax` with T > 0.
    pub fn replay_draws(&self, seed: u64, n: usize) -> Option<Vec<u32>> {
        match (&self.mirrored.draw, &self.index) {
            (Draw::ArgMax { token }, _) => Some(vec![*token; n]),
            (Draw::Weighted { candidates, .. }, Some(index)) => {
                let mut rng = StdRng::seed_from_u64(seed);
                Some((0..n).map(|_| candidates[index.sample(&mut rng)]).collect())
            }
            _ => None,
        }
    }

    /// `n` real draws from seed `seed`, each compared with the replay.
    /// Returns the replay summary (`None` for Gumbel) and the real tokens.
    pub fn replay(&self, seed: u64, n: usize) -> Result<(Option<Replay>, Vec<u32>), AdapterError> {
        self.replay_limited(seed, n, None)
    }

    fn replay_limited(
        &self,
        seed: u64,
        n: usize,
        real_limit: Option<usize>,
    ) -> Result<StreamDraws, AdapterError> {
        let mirror = self.replay_draws(seed, n);
        let n_real = match (&mirror, real_limit) {
            (Some(_), Some(limit)) => n.min(limit),
            _ => n,
        };
        let mut real = self.real_draws(seed, n_real)?;
        let replay = mirror.map(|mirror| {
            let mut agreed = 0;
            let mut first = None;
            for (draw, (&r, &m)) in real.iter().zip(&mirror).enumerate() {
                if r == m {
                    agreed += 1;
                } else if first.is_none() {
                    first = Some(Disagreement {
                        seed,
                        draw,
                        real: r,
                        mirror: m,
                    });
                }
            }
            real.extend_from_slice(&mirror[n_real..]);
            Replay {
                checked: n_real,
                agreed,
                first_disagreement: first,
            }
        });
        Ok((replay, real))
    }

    /// Real draws replayed and tested: see [`Verification`].
    pub fn verify(&self, opts: &VerifyOptions<'_>) -> Result<Verification, AdapterError> {
        self.check_reference(opts)?;
        let drawn = self.draw_streams(opts)?;
        Ok(self.summarise(&drawn, opts))
    }

    /// [`CandleRun::verify`], drawing each real stream once per process: a
    /// call whose real processor sees what an earlier call's saw (the same
    /// logits tensor, bit for bit, the same `Sampling`, closure, seeds,
    /// stream count and draw counts) reuses that call's real draws and their
    /// replay, which the same calls of the real `LogitsProcessor` would give
    /// again (it is a function of its seed and inputs). Only the figures
    /// that depend on this call's options (`other_kept`, `reference`) are
    /// computed anew. `GumbelSoftmax` with T > 0 draws from candle's device
    /// RNG, not the seed, so it is never shared; nor is
    /// [`Verification::secs_per_real_draw`] a fresh timing on reuse.
    ///
    /// Reports use this: rows whose candle setup comes out the same (the
    /// literal port and `translate`'s exact setup where they agree, two
    /// settings that map onto one `Sampling`, a penalty window that covers
    /// the whole context) draw the same real stream.
    pub fn verify_shared(&self, opts: &VerifyOptions<'_>) -> Result<Verification, AdapterError> {
        self.check_reference(opts)?;
        if !self.replayable() {
            return self.verify(opts);
        }
        let key = StreamKey::new(&self.real, opts);
        let known = shared_streams()
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, d)| Arc::clone(d));
        let drawn = match known {
            Some(d) => d,
            None => {
                let d = Arc::new(self.draw_streams(opts)?);
                let mut memo = shared_streams();
                if memo.len() >= SHARED_STREAMS {
                    memo.remove(0);
                }
                memo.push((key, Arc::clone(&d)));
                d
            }
        };
        Ok(self.summarise(&drawn, opts))
    }

    /// Whether the draws are a function of the seed (all but `GumbelSoftmax`
    /// with T > 0).
    fn replayable(&self) -> bool {
        !matches!(self.mirrored.draw, Draw::Gumbel(_))
    }

    fn check_reference(&self, opts: &VerifyOptions<'_>) -> Result<(), AdapterError> {
        let v = self.mirrored.vocab;
        match opts.reference.map(<[f64]>::len) {
            Some(len) if len != v => Err(AdapterError::Argument {
                what: "reference",
                problem: format!("has {len} entries, the logits have {v}"),
            }),
            _ => Ok(()),
        }
    }

    /// Every stream's real draws and replay, on `opts.streams` threads.
    fn draw_streams(&self, opts: &VerifyOptions<'_>) -> Result<Drawn, AdapterError> {
        let streams = opts.streams.max(1);
        let start = Instant::now();
        let results: Vec<Result<StreamDraws, AdapterError>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..streams)
                .map(|s| {
                    let n = opts.draws / streams + usize::from(s < opts.draws % streams);
                    let seed = opts.seed.wrapping_add(s as u64);
                    let limit = opts.real_per_stream;
                    scope.spawn(move || self.replay_limited(seed, n, limit))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(AdapterError::Argument {
                            what: "draw thread",
                            problem: "panicked".into(),
                        })
                    })
                })
                .collect()
        });
        let secs = start.elapsed().as_secs_f64();
        let mut tokens = Vec::with_capacity(opts.draws);
        let mut replay: Option<Replay> = None;
        for r in results {
            let (rep, real) = r?;
            tokens.extend(real);
            if let Some(rep) = rep {
                let acc = replay.get_or_insert(Replay {
                    checked: 0,
                    agreed: 0,
                    first_disagreement: None,
                });
                acc.checked += rep.checked;
                acc.agreed += rep.agreed;
                if acc.first_disagreement.is_none() {
                    acc.first_disagreement = rep.first_disagreement;
                }
            }
        }
        Ok(Drawn {
            tokens,
            replay,
            secs,
        })
    }

    /// The figures of [`Verification`] from the drawn streams.
    fn summarise(&self, drawn: &Drawn, opts: &VerifyOptions<'_>) -> Verification {
        let v = self.mirrored.vocab;
        let tokens = &drawn.tokens;
        let c = counts(v, tokens);
        let vs_mirror = frequencies(&c, &self.mirrored.probs);
        let vs_reference = opts.reference.map(|r| frequencies(&c, r));
        let outside_other_kept = opts.other_kept.map(|kept| {
            let mut mask = vec![false; v];
            for &i in kept {
                if let Some(m) = mask.get_mut(i) {
                    *m = true;
                }
            }
            let outside = tokens.iter().filter(|&&t| !mask[t as usize]).count();
            outside as f64 / tokens.len().max(1) as f64
        });
        Verification {
            sampling: self.real.sampling.to_string(),
            draws: tokens.len(),
            real_draws: drawn.replay.as_ref().map_or(tokens.len(), |r| r.checked),
            streams: opts.streams.max(1),
            seed: opts.seed,
            mirror_kept: self.mirrored.kept.len(),
            replay: drawn.replay.clone(),
            outside_mirror_kept: vs_mirror.outside_reference,
            vs_mirror,
            vs_reference,
            outside_other_kept,
            secs_per_real_draw: drawn.secs / opts.draws.max(1) as f64,
            counts: c,
        }
    }
}

/// Every stream of one [`CandleRun::verify`] call, merged in stream order.
struct Drawn {
    /// Real draws (then any replay continuations), stream after stream.
    tokens: Vec<u32>,
    /// The replay of the real draws, summed over streams.
    replay: Option<Replay>,
    /// Wall-clock seconds the streams took.
    secs: f64,
}

/// Everything the real draws of [`CandleRun::draw_streams`] depend on: the
/// tensor `LogitsProcessor::sample` receives (as bits), the `Sampling`
/// (its `Debug` text, which writes every f64 exactly), the closure, and how
/// the draws are split into seeded streams.
#[derive(PartialEq)]
struct StreamKey {
    logits: Vec<u32>,
    sampling: String,
    closure: Option<HfTopK>,
    seed: u64,
    draws: usize,
    streams: usize,
    real_per_stream: Option<usize>,
}

impl StreamKey {
    fn new(real: &Real, opts: &VerifyOptions<'_>) -> Self {
        StreamKey {
            logits: real.penalised.iter().map(|x| x.to_bits()).collect(),
            sampling: format!("{:?}", real.sampling.to_candle()),
            closure: real.closure.clone(),
            seed: opts.seed,
            draws: opts.draws,
            streams: opts.streams.max(1),
            real_per_stream: opts.real_per_stream,
        }
    }
}

/// Streams [`CandleRun::verify_shared`] keeps (the oldest goes first): a
/// report's rows on one fixture need a few dozen at most, and a key holds
/// one vocabulary of logits.
const SHARED_STREAMS: usize = 32;

/// Forgets every stream [`CandleRun::verify_shared`] keeps, so that the next
/// calls draw anew (a benchmark timing a whole report per iteration).
pub fn forget_shared_streams() {
    shared_streams().clear();
}

/// The streams drawn so far in this process, oldest first.
fn shared_streams() -> MutexGuard<'static, Vec<(StreamKey, Arc<Drawn>)>> {
    static STREAMS: Mutex<Vec<(StreamKey, Arc<Drawn>)>> = Mutex::new(Vec::new());
    // A thread that panicked while holding the lock left the list whole
    // (entries are pushed complete), so it is still good to read.
    STREAMS.lock().unwrap_or_else(PoisonError::into_inner)
}
