//! What `Sampling::GumbelSoftmax` actually samples.
//!
//! candle 0.11.1 (`candle-nn/src/sampling.rs`, `gumbel_softmax`) draws
//! `u ~ Uniform[1e-7, 0.999)` per token from the device RNG (`rand::rng()` on
//! CPU, not the processor's seed), and returns `argmax(logits + T·g)` with
//! `g = -ln(-ln u)`. Were `u` uniform on (0, 1), `g` would be standard Gumbel
//! and the result exactly `softmax(logits / T)`. The clipping bounds the noise
//! to `g ∈ [g_lo, g_hi) ≈ [-2.78, 6.91)`: the noise is a Gumbel truncated to
//! that interval, so
//! - a token whose `logit/T` is more than `g_hi − g_lo ≈ 9.69` below the top
//!   one can never be drawn (softmax gives it a small but positive mass), and
//! - the probabilities of the others are slightly different from the softmax.
//!
//! [`GumbelDistribution::new`] computes that distribution numerically:
//! `P(i) = ∫ f(g) Π_{j≠i} F(x_i + g − x_j) dg` with `x = logits / T`, `F`/`f`
//! the truncated-Gumbel CDF/density, by the midpoint rule over the one window
//! of `y = x_i + g` where a win is possible (`[x_max + g_lo, x_max + g_hi]`),
//! sharing `Σ_j ln F(y − x_j)` between tokens. The model is continuous: it
//! ignores the f32 granularity of `u` and of `logits + T·g` (ties in the
//! argmax have probability ~0), so it is an approximation at the 1e-6 level,
//! not a bit-exact mirror; frequencies are the check. One f32 effect is
//! modelled: when half an ulp of the top logit exceeds the largest noise
//! (|logits| ≳ 1e8·T), the noise cannot move any value and candle returns the
//! first index of the top logit every time (a one-hot). Between the two regimes
//! (|logits| around 1e6–1e8) the continuous model is only approximate.
//!
//! How far from softmax? The upper clip (g < 6.91, i.e. u < 0.999) removes
//! the rare large noises that let low tokens win, so the top token gains mass:
//! on [3, 2, 2, 1] at T = 1 the clipped law is [0.5356, 0.1964, 0.1964, 0.0716]
//! against softmax [0.5344, 0.1966, 0.1966, 0.0723] (TV ≈ 1.1e-3).

use serde::Serialize;

/// Number of quadrature points over the ≈9.69-wide window.
const POINTS: usize = 4096;

/// The distribution `GumbelSoftmax { temperature }` samples from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GumbelDistribution {
    /// The temperature (> 0).
    pub temperature: f64,
    /// `softmax(logits / T)` in f64: what an unclipped Gumbel-max would sample.
    #[serde(skip)]
    pub softmax: Vec<f64>,
    /// Total variation between the clipped distribution and `softmax`.
    pub tv_vs_softmax: f64,
    /// Tokens with positive probability under the clipping.
    pub support: usize,
    /// Tokens with softmax mass that the clipping makes impossible.
    pub unreachable_tokens: usize,
    /// Softmax mass of those tokens.
    pub unreachable_softmax_mass: f64,
    /// `[g_lo, g_hi)`: the range of the clipped noise.
    pub noise_range: (f64, f64),
    /// The integrated mass before renormalisation (1 up to quadrature error).
    pub quadrature_mass: f64,
}

/// f32 bounds candle passes to `rand_like(1e-7, 0.999)` (an f32 tensor).
fn bounds() -> (f64, f64) {
    (1e-7f32 as f64, 0.999f32 as f64)
}

impl GumbelDistribution {
    /// The clipped-Gumbel distribution for penalised `logits` (no NaN) and
    /// `temperature > 0`; returns it with the probabilities over the vocabulary.
    pub fn new(logits: &[f32], temperature: f64) -> (Self, Vec<f64>) {
        let (a, b) = bounds();
        let g_lo = -(-a.ln()).ln();
        let g_hi = -(-b.ln()).ln();
        let width = g_hi - g_lo;
        let norm = b - a;
        let cdf = |g: f64| -> f64 {
            if g <= g_lo {
                0.0
            } else if g >= g_hi {
                1.0
            } else {
                ((-(-g).exp()).exp() - a) / norm
            }
        };
        let pdf = |g: f64| -> f64 {
            if g <= g_lo || g >= g_hi {
                0.0
            } else {
                (-g - (-g).exp()).exp() / norm
            }
        };
        let x: Vec<f64> = logits.iter().map(|&l| l as f64 / temperature).collect();
        let softmax = softmax_f64(&x);
        let v = x.len();
        // Decided on the f32 logits, not on `x`: a tiny temperature can
        // overflow a finite logit to ±inf in `logits / T`, which candle never
        // computes (it scales the noise instead, see below).
        let top = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        if !top.is_finite() {
            // All -inf (candle's argmax picks index 0) or a +inf logit (the
            // first +inf wins whatever the noise): a one-hot.
            let idx = if top == f32::INFINITY {
                logits.iter().position(|&l| l == f32::INFINITY).unwrap_or(0)
            } else {
                0
            };
            return one_hot(temperature, softmax, idx, 0, 0.0, (g_lo, g_hi));
        }
        // candle adds the noise in f32 (`logits + T·(-minus_g)`): when half an
        // ulp of the top logit exceeds the largest possible noise, no token
        // moves, and candle's argmax (first index among the top ties) wins.
        let half_ulp = (f32::from_bits(top.abs().to_bits() + 1) - top.abs()) as f64 / 2.0;
        if half_ulp > temperature * g_lo.abs().max(g_hi) {
            let idx = logits.iter().position(|&l| l == top).unwrap_or(0);
            let unreachable_softmax_mass = 1.0 - softmax[idx];
            return one_hot(
                temperature,
                softmax,
                idx,
                v - 1,
                unreachable_softmax_mass,
                (g_lo, g_hi),
            );
        }
        let mut probs = vec![0f64; v];
        // Work relative to the maximum so that huge logits keep their precision.
        let x_max = x.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let x: Vec<f64> = x.iter().map(|&xi| xi - x_max).collect();
        let x_max = 0.0;
        // Distinct reachable values with multiplicities (ties share a value).
        let mut values: Vec<f64> = x.iter().copied().filter(|&xi| xi > x_max - width).collect();
        values.sort_by(|p, q| q.total_cmp(p));
        let mut uniq: Vec<(f64, f64)> = Vec::new();
        for xi in values {
            match uniq.last_mut() {
                Some((u, c)) if *u == xi => *c += 1.0,
                _ => uniq.push((xi, 1.0)),
            }
        }
        let h = width / POINTS as f64;
        let ys: Vec<f64> = (0..POINTS)
            .map(|m| x_max + g_lo + (m as f64 + 0.5) * h)
            .collect();
        // s[m] = Σ_j ln F(y_m − x_j) over every reachable token (others have F = 1).
        let s: Vec<f64> = ys
            .iter()
            .map(|&y| {
                let mut acc = 0f64;
                for &(xj, c) in &uniq {
                    let f = cdf(y - xj);
                    if f < 1.0 {
                        acc += c * f.ln();
                    }
                }
                acc
            })
            .collect();
        let mut p_uniq = vec![0f64; uniq.len()];
        for (u, &(xi, _)) in uniq.iter().enumerate() {
            let mut acc = 0f64;
            for (m, &y) in ys.iter().enumerate() {
                let g = y - xi;
                if g <= g_lo || g >= g_hi {
                    continue;
                }
                let f = cdf(g);
                acc += pdf(g) * (s[m] - f.ln()).exp();
            }
            p_uniq[u] = acc * h;
        }
        let mass: f64 = uniq.iter().zip(&p_uniq).map(|((_, c), p)| c * p).sum();
        let mut support = 0;
        let mut unreachable_tokens = 0;
        let mut unreachable_softmax_mass = 0.0;
        for i in 0..v {
            if x[i] > x_max - width {
                let u = uniq.partition_point(|&(xu, _)| xu > x[i]);
                probs[i] = p_uniq[u] / mass;
                if probs[i] > 0.0 {
                    support += 1;
                }
            } else if softmax[i] > 0.0 {
                unreachable_tokens += 1;
                unreachable_softmax_mass += softmax[i];
            }
        }
        (
            GumbelDistribution {
                temperature,
                tv_vs_softmax: total_variation(&probs, &softmax),
                softmax,
                support,
                unreachable_tokens,
                unreachable_softmax_mass,
                noise_range: (g_lo, g_hi),
                quadrature_mass: mass,
            },
            probs,
        )
    }
}

/// The distribution when candle's draw is deterministic: all mass on `idx`.
fn one_hot(
    temperature: f64,
    softmax: Vec<f64>,
    idx: usize,
    unreachable_tokens: usize,
    unreachable_softmax_mass: f64,
    noise_range: (f64, f64),
) -> (GumbelDistribution, Vec<f64>) {
    let mut probs = vec![0f64; softmax.len()];
    probs[idx] = 1.0;
    (
        GumbelDistribution {
            temperature,
            tv_vs_softmax: total_variation(&probs, &softmax),
            softmax,
            support: 1,
            unreachable_tokens,
            unreachable_softmax_mass,
            noise_range,
            quadrature_mass: 1.0,
        },
        probs,
    )
}

/// ½ Σ |p − q|.
fn total_variation(p: &[f64], q: &[f64]) -> f64 {
    0.5 * p.iter().zip(q).map(|(a, b)| (a - b).abs()).sum::<f64>()
}

/// Softmax in f64 (-inf → 0).
pub(crate) fn softmax_f64(x: &[f64]) -> Vec<f64> {
    let m = x.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if !m.is_finite() {
        return vec![0.0; x.len()];
    }
    let e: Vec<f64> = x.iter().map(|&xi| (xi - m).exp()).collect();
    let s: f64 = e.iter().sum();
    e.into_iter().map(|ei| ei / s).collect()
}
