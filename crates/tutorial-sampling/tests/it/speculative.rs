//! The closed-form first-token distributions against seeded simulations of
//! each verifier, step by step as its source does it (chi-square), and on
//! real SmolLM2 distributions recorded from transformers.

use parity_core::fixture::{Fixture, bundled_dir};
use parity_core::metrics::softmax_f64;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use statrs::distribution::{ChiSquared, ContinuousCDF};
use tutorial_sampling::speculative::{
    Algorithm, Proposal, first_token, perturbed, speculative, standard_rows,
};

/// Inverse-CDF sampling from unnormalised non-negative weights.
struct Cdf(Vec<f64>);

impl Cdf {
    fn new(weights: &[f64]) -> Self {
        let mut acc = 0.0;
        Self(
            weights
                .iter()
                .map(|w| {
                    acc += w;
                    acc
                })
                .collect(),
        )
    }

    fn total(&self) -> f64 {
        self.0.last().copied().unwrap_or(0.0)
    }

    /// The first index whose cumulative weight exceeds u · total (never a
    /// zero-weight index).
    fn draw(&self, rng: &mut StdRng) -> usize {
        let u = rng.random::<f64>() * self.total();
        self.0.partition_point(|&c| c <= u).min(self.0.len() - 1)
    }
}

/// A verifier's inputs, with the samplers it needs built once.
struct Sim<'a> {
    alg: Algorithm,
    p: &'a [f64],
    q: &'a [f64],
    proposal: &'a Proposal,
    p_cdf: Cdf,
    q_cdf: Cdf,
    residual: Cdf,
    from: Option<Cdf>,
    /// `torch.argmax(q)`: the first index of the largest value.
    argmax: usize,
}

impl<'a> Sim<'a> {
    fn new(alg: Algorithm, p: &'a [f64], q: &'a [f64], proposal: &'a Proposal) -> Self {
        let residual: Vec<f64> = p.iter().zip(q).map(|(a, b)| (a - b).max(0.0)).collect();
        Self {
            alg,
            p,
            q,
            proposal,
            p_cdf: Cdf::new(p),
            q_cdf: Cdf::new(q),
            residual: Cdf::new(&residual),
            from: match proposal {
                Proposal::From(d) => Some(Cdf::new(d)),
                _ => None,
            },
            argmax: (0..q.len()).fold(0, |b, i| if q[i] > q[b] { i } else { b }),
        }
    }

    /// One verification of the first candidate, as the engine's source does
    /// it; `None` where the engine raises (transformers' 0/0 residual).
    fn run(&self, rng: &mut StdRng) -> Option<usize> {
        let (p, q) = (self.p, self.q);
        let x = match (self.proposal, &self.from) {
            (Proposal::Draft, _) => self.q_cdf.draw(rng),
            (Proposal::Greedy, _) => self.argmax,
            (Proposal::Token(t), _) => *t,
            (Proposal::From(_), Some(cdf)) => cdf.draw(rng),
            (Proposal::From(_), None) => unreachable!("built in new"),
        };
        let u: f64 = rng.random();
        let has_residual = self.residual.total() > 0.0;
        match self.alg {
            Algorithm::Textbook | Algorithm::Transformers => {
                // `r_i <= p_i / q_i` with IEEE division.
                if u <= p[x] / q[x] {
                    return Some(x);
                }
                has_residual.then(|| self.residual.draw(rng))
            }
            Algorithm::Tutorial => {
                let ratio = p[x] / q[x];
                // Python: min(1.0, ratio) keeps 1.0 unless ratio < 1.0 (NaN is not).
                let accept = if ratio < 1.0 { ratio } else { 1.0 };
                if u < accept {
                    return Some(x);
                }
                Some(if has_residual {
                    self.residual.draw(rng)
                } else {
                    self.p_cdf.draw(rng)
                })
            }
            Algorithm::VllmProbabilistic | Algorithm::VllmGreedy => {
                let greedy = self.alg == Algorithm::VllmGreedy;
                let draft_prob = if greedy { 1.0 } else { q[x] };
                if draft_prob > 0.0 && p[x] / draft_prob >= u {
                    return Some(x);
                }
                // The exponential race of sample_recovered_tokens_kernel,
                // first index on ties.
                let mut best = (f64::NEG_INFINITY, 0);
                for v in 0..p.len() {
                    let prob = if greedy {
                        if v == x { 0.0 } else { p[v] }
                    } else {
                        (p[v] - q[v]).max(0.0)
                    };
                    let e = -(1.0 - rng.random::<f64>()).ln();
                    let score = prob / e;
                    if score > best.0 {
                        best = (score, v);
                    }
                }
                Some(best.1)
            }
        }
    }
}

/// Pearson chi-square p-value of counts (last cell: "raised") against
/// expected probabilities; cells expected below 5 draws are pooled. A draw
/// where the expectation is 0 gives 0.
fn chi_square(counts: &[u64], expected: &[f64], n: u64) -> f64 {
    let n = n as f64;
    let (mut stat, mut cells) = (0.0, 0usize);
    let (mut pooled_o, mut pooled_e) = (0.0, 0.0);
    for (&o, &e) in counts.iter().zip(expected) {
        let (o, e) = (o as f64, e * n);
        if e == 0.0 {
            if o > 0.0 {
                return 0.0;
            }
            continue;
        }
        if e < 5.0 {
            pooled_o += o;
            pooled_e += e;
            continue;
        }
        stat += (o - e).powi(2) / e;
        cells += 1;
    }
    if pooled_e > 0.0 {
        stat += (pooled_o - pooled_e).powi(2) / pooled_e;
        cells += 1;
    }
    if cells < 2 {
        return 1.0;
    }
    ChiSquared::new((cells - 1) as f64)
        .expect("dof >= 1")
        .sf(stat)
}

/// Counts of `n` simulated first tokens, plus a last cell for raises.
fn counts(
    alg: Algorithm,
    p: &[f64],
    q: &[f64],
    proposal: &Proposal,
    n: u64,
    seed: u64,
) -> Vec<u64> {
    let mut rng = StdRng::seed_from_u64(seed);
    let sim = Sim::new(alg, p, q, proposal);
    let mut c = vec![0u64; p.len() + 1];
    for _ in 0..n {
        match sim.run(&mut rng) {
            Some(t) => c[t] += 1,
            None => c[p.len()] += 1,
        }
    }
    c
}

// Zeros on purpose: q has mass where p has none (id 4) and none where p has
// some (id 5), so every engine's q = 0 and p = 0 conventions are exercised.
const P: [f64; 6] = [0.30, 0.25, 0.20, 0.15, 0.0, 0.10];
const Q: [f64; 6] = [0.10, 0.35, 0.20, 0.05, 0.30, 0.0];

fn cases() -> Vec<(Algorithm, Proposal)> {
    let mut out = Vec::new();
    for alg in Algorithm::ALL {
        for proposal in [
            Proposal::Draft,
            Proposal::Greedy,
            Proposal::Token(4),
            Proposal::Token(5),
            Proposal::From(vec![0.2, 0.2, 0.1, 0.1, 0.2, 0.2]),
        ] {
            out.push((alg, proposal));
        }
    }
    out
}

#[test]
fn every_computed_distribution_matches_a_seeded_simulation() {
    let n = 100_000;
    for (i, (alg, proposal)) in cases().into_iter().enumerate() {
        let f = first_token(alg, &P, &Q, &proposal).expect("valid");
        let mut expected = f.probs.clone();
        expected.push(f.undefined);
        let c = counts(alg, &P, &Q, &proposal, n, 1000 + i as u64);
        let pv = chi_square(&c, &expected, n);
        assert!(
            pv > 1e-4,
            "{alg:?} {proposal:?}: p-value {pv:e}\n counts {c:?}\n expected {expected:?}"
        );
    }
}

#[test]
fn the_simulation_has_the_power_to_see_the_inexact_ones() {
    // Against the target instead of the computed distribution, the same
    // simulations reject every case whose computed TV is above 0.01.
    let n = 100_000;
    let mut target = P.to_vec();
    target.push(0.0);
    let mut seen = 0;
    for (i, (alg, proposal)) in cases().into_iter().enumerate() {
        let f = first_token(alg, &P, &Q, &proposal).expect("valid");
        let c = counts(alg, &P, &Q, &proposal, n, 1000 + i as u64);
        let pv = chi_square(&c, &target, n);
        if f.tv > 0.01 {
            assert!(
                pv < 1e-9,
                "{alg:?} {proposal:?}: TV {} but p-value {pv:e}",
                f.tv
            );
            seen += 1;
        } else {
            assert!(f.tv <= 1e-12, "{alg:?} {proposal:?}: TV {}", f.tv);
            assert!(pv > 1e-4, "{alg:?} {proposal:?}: exact but p-value {pv:e}");
        }
    }
    assert!(seen >= 10, "only {seen} inexact cases");
}

#[test]
fn candidates_drawn_from_q_are_exact_for_every_engine() {
    for alg in Algorithm::ALL {
        let f = first_token(alg, &P, &Q, &Proposal::Draft).expect("valid");
        // vLLM probabilistic rejects x = 4? No: q(4) = 0.3 > 0 and p(4) = 0, a = 0,
        // and the residual (p - q)+ = [0.2, 0, 0, 0.1, 0, 0.1] catches it.
        assert!(f.tv <= 1e-15, "{alg:?}: TV {}", f.tv);
        assert_eq!(f.undefined, 0.0);
    }
    // Σ min(p, q) = 0.10 + 0.25 + 0.20 + 0.05 + 0 + 0 = 0.60
    let s = speculative(&P, &Q, 4).expect("valid");
    assert!((s.acceptance_rate - 0.60).abs() < 1e-15);
}

/// Target: transformers' recorded `t07` scores on `write_k60` (temperature
/// 0.7, no top-k); drafts: the same logits under `k40p09` (a truncated
/// draft, as recorded by transformers), and the raw logits perturbed by
/// ±1.5 then scaled by 0.7 (a weaker draft).
fn smollm2_pairs() -> Vec<(&'static str, Vec<f64>, Vec<f64>)> {
    let fx = Fixture::load(
        &bundled_dir()
            .expect("bundled fixtures")
            .join("smollm2/write_k60.safetensors"),
    )
    .expect("fixture loads");
    let scores = |name: &str| {
        softmax_f64(
            &fx.setting(name)
                .unwrap_or_else(|| panic!("setting {name}"))
                .scores,
        )
    };
    let target = scores("t07");
    let weak: Vec<f32> = perturbed(&fx.logits, 1.5, 7)
        .into_iter()
        .map(|x| x / 0.7)
        .collect();
    vec![
        ("k40p09 draft", target.clone(), scores("k40p09")),
        ("perturbed draft", target, softmax_f64(&weak)),
    ]
}

#[test]
fn smollm2_pairs_exact_where_the_theory_says_and_measured_elsewhere() {
    for (name, p, q) in smollm2_pairs() {
        let s = speculative(&p, &q, 4).expect("valid pair");
        assert!(
            s.acceptance_rate > 0.05 && s.acceptance_rate < 1.0,
            "{name}: {}",
            s.acceptance_rate
        );
        for row in &s.rows {
            let f = &row.first;
            let exact_by_theory = row.proposal == Proposal::Draft
                || f.algorithm == tutorial_sampling::speculative::Algorithm::VllmGreedy;
            println!(
                "{name}: {:<18} {:<13} TV {:.3e} alpha {:.4} accepted {:.3} emitted {:.3}",
                f.algorithm.name(),
                row.proposal.describe(),
                f.tv,
                f.acceptance,
                row.expected_accepted,
                row.expected_emitted
            );
            if exact_by_theory {
                assert!(f.tv <= 1e-12, "{name} {:?}: TV {:e}", f.algorithm, f.tv);
            } else {
                // Greedy candidates: the argmax is over-represented.
                assert!(f.tv > 1e-3, "{name} {:?}: TV {:e}", f.algorithm, f.tv);
            }
            if row.proposal == Proposal::Draft {
                assert!((f.acceptance - s.acceptance_rate).abs() < 1e-12);
            }
        }
    }
    assert_eq!(standard_rows().len(), 7);
}

#[test]
fn smollm2_simulation_agrees_with_the_computation() {
    // vLLM's exponential race costs 49,152 exponentials per draw; it is
    // checked on the small case above.
    let n = 100_000;
    for (pair, (_, p, q)) in smollm2_pairs().into_iter().enumerate() {
        for (i, (alg, proposal)) in [
            (Algorithm::Textbook, Proposal::Draft),
            (Algorithm::Tutorial, Proposal::Greedy),
            (Algorithm::Transformers, Proposal::Greedy),
        ]
        .into_iter()
        .enumerate()
        {
            let f = first_token(alg, &p, &q, &proposal).expect("valid");
            let mut expected = f.probs.clone();
            expected.push(f.undefined);
            let c = counts(alg, &p, &q, &proposal, n, 77 + (pair * 10 + i) as u64);
            let pv = chi_square(&c, &expected, n);
            assert!(pv > 1e-4, "{alg:?} {proposal:?}: p-value {pv:e}");
        }
    }
}

/// Counts of the first token emitted by transformers' own
/// `_speculative_sampling` (`scripts/reference/speculative_reference.py`,
/// 20,000 calls per case under a fixed torch seed) against the closed form:
/// five cases on a 6-token pair, and SmolLM2's recorded `t07` target with the
/// `k40p09` draft, candidates sampled and greedy.
#[test]
fn real_transformers_counts_fit_the_computed_distribution() {
    use serde_json::Value;
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/speculative/transformers_counts.jsonl");
    let text = std::fs::read_to_string(&path).expect("fixture readable");
    let mut lines = text.lines();
    let header: Value = serde_json::from_str(lines.next().expect("header")).expect("json");
    assert_eq!(header["transformers_version"], "5.23.0");
    let floats = |v: &Value| -> Vec<f64> {
        v.as_array()
            .expect("array")
            .iter()
            .map(|x| x.as_f64().expect("number"))
            .collect()
    };
    let mut cases = 0;
    for line in lines {
        let r: Value = serde_json::from_str(line).expect("json line");
        let (p, q) = match r.get("fixture") {
            Some(spec) => {
                let file = spec["fixture"].as_str().expect("file");
                let fx = Fixture::load(&bundled_dir().expect("bundled fixtures").join(file))
                    .expect("fixture loads");
                let scores = |key: &str| {
                    let name = spec[key].as_str().expect("setting");
                    softmax_f64(&fx.setting(name).expect("setting recorded").scores)
                };
                (scores("target"), scores("draft"))
            }
            None => (floats(&r["target"]), floats(&r["draft"])),
        };
        let proposal = match &r["proposal"] {
            Value::String(s) if s == "draft" => Proposal::Draft,
            Value::String(s) if s == "greedy" => Proposal::Greedy,
            t => Proposal::Token(t.as_u64().expect("token id") as usize),
        };
        let mut counts = vec![0u64; p.len() + 1];
        for (id, n) in r["counts"].as_object().expect("sparse counts") {
            counts[id.parse::<usize>().expect("token id")] = n.as_u64().expect("count");
        }
        counts[p.len()] = r["raised"].as_u64().expect("raised");
        let n = r["draws"].as_u64().expect("draws");
        assert_eq!(counts.iter().sum::<u64>(), n);
        let f = first_token(Algorithm::Transformers, &p, &q, &proposal).expect("valid");
        let mut expected = f.probs.clone();
        expected.push(f.undefined);
        let pv = chi_square(&counts, &expected, n);
        assert!(pv > 1e-3, "{}: p-value {pv:e}", r["name"]);
        // And the distance the counts show from the target agrees in size
        // with the computed TV (0 for sampled candidates, 0.40 for greedy
        // ones on SmolLM2).
        let observed_tv = 0.5
            * counts
                .iter()
                .zip(p.iter().chain([&0.0]))
                .map(|(&c, &t)| (c as f64 / n as f64 - t).abs())
                .sum::<f64>();
        println!(
            "{}: computed TV {:.4}, observed TV {:.4}, p-value {pv:.3}",
            r["name"], f.tv, observed_tv
        );
        cases += 1;
    }
    assert_eq!(cases, 7);
}
