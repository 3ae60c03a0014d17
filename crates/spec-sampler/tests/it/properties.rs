//! Property tests on random inputs, and agreement with a naive
//! re-implementation of the spec written straight from its text.

use proptest::prelude::*;
use spec_sampler::{
    Input, Params, RepetitionPenalty, Temperature, TopK, TopP, U, distribution, sample,
};

/// Logits drawn from a small grid (so ties are common), a wide range, and -inf.
fn logit() -> impl Strategy<Value = f64> {
    prop_oneof![
        4 => (-4i32..=4).prop_map(|i| f64::from(i) * 0.5),
        4 => -30.0..30.0f64,
        1 => Just(f64::NEG_INFINITY),
    ]
}

fn temperature() -> impl Strategy<Value = f64> {
    prop_oneof![1 => Just(0.0), 1 => Just(1.0), 4 => 0.05..5.0f64]
}

fn top_p() -> impl Strategy<Value = f64> {
    prop_oneof![1 => Just(1.0), 4 => 1e-6..1.0f64]
}

fn input() -> impl Strategy<Value = Input> {
    (1usize..40).prop_flat_map(|v| {
        (
            prop::collection::vec(logit(), v),
            temperature(),
            -2i64..45,
            top_p(),
            prop_oneof![Just(1.0), 0.5..3.0f64],
            prop::collection::vec(-3i64..45, 0..12),
            0.0..1.0f64,
        )
            .prop_map(|(logits, t, k, p, penalty, previous, u)| {
                let params = Params {
                    temperature: Temperature::new(t).expect("t"),
                    top_k: TopK::new(k),
                    top_p: TopP::new(p).expect("p"),
                    repetition_penalty: RepetitionPenalty::new(penalty).expect("penalty"),
                    u: U::new(u).expect("u"),
                };
                Input::from_parts(logits, previous, params).expect("valid")
            })
    })
}

/// The spec, step by step, the obvious way: ℓ/T materialised, full sorts,
/// naive sums. Fine for the moderate values generated here.
fn naive(input: &Input) -> (i64, Vec<f64>) {
    let p = input.params();
    let mut l = input.logits().to_vec();
    let v = l.len();
    let mut seen = std::collections::BTreeSet::new();
    for &t in input.previous_tokens() {
        if t >= 0 && (t as usize) < v && seen.insert(t) {
            let x = &mut l[t as usize];
            *x = if *x > 0.0 {
                *x / p.repetition_penalty.get()
            } else {
                *x * p.repetition_penalty.get()
            };
        }
    }
    let mut probs = vec![0.0; v];
    let t = p.temperature.get();
    if t == 0.0 {
        let mut best = None;
        for i in 0..v {
            if l[i] > f64::NEG_INFINITY && best.is_none_or(|b: usize| l[i] > l[b]) {
                best = Some(i);
            }
        }
        return match best {
            Some(b) => {
                probs[b] = 1.0;
                (b as i64, probs)
            }
            None => (-1, probs),
        };
    }
    let s: Vec<f64> = l.iter().map(|x| x / t).collect();
    let order = |set: &mut Vec<usize>| {
        set.sort_by(|&a, &b| s[b].partial_cmp(&s[a]).expect("no NaN").then(a.cmp(&b)))
    };
    let mut kept: Vec<usize> = (0..v).collect();
    let k = p.top_k.get();
    if k > 0 && (k as usize) < v {
        order(&mut kept);
        kept.truncate(k as usize);
    }
    if p.top_p.get() < 1.0 {
        order(&mut kept);
        let m = s[kept[0]];
        if m > f64::NEG_INFINITY {
            let w: Vec<f64> = kept.iter().map(|&i| (s[i] - m).exp()).collect();
            let total: f64 = w.iter().sum();
            let mut cum = 0.0;
            for (j, x) in w.iter().enumerate() {
                cum += x / total;
                if cum >= p.top_p.get() {
                    kept.truncate(j + 1);
                    break;
                }
            }
        }
    }
    let m = kept.iter().map(|&i| s[i]).fold(f64::NEG_INFINITY, f64::max);
    if m == f64::NEG_INFINITY {
        return (-1, probs);
    }
    let total: f64 = kept.iter().map(|&i| (s[i] - m).exp()).sum();
    for &i in &kept {
        probs[i] = (s[i] - m).exp() / total;
    }
    let mut cum = 0.0;
    for (i, &q) in probs.iter().enumerate() {
        cum += q;
        if cum > p.u.get() {
            return (i as i64, probs);
        }
    }
    let last = probs
        .iter()
        .rposition(|&q| q > 0.0)
        .map_or(-1, |i| i as i64);
    (last, probs)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn output_is_a_distribution(input in input()) {
        let out = sample(&input);
        prop_assert_eq!(out.probs.len(), input.logits().len());
        prop_assert!(out.probs.iter().all(|p| (0.0..=1.0).contains(p)));
        if out.token_id == -1 {
            prop_assert!(out.probs.iter().all(|&p| p == 0.0));
        } else {
            let sum: f64 = out.probs.iter().sum();
            prop_assert!((sum - 1.0).abs() <= 1e-12, "sum {}", sum);
            prop_assert!(out.probs[out.token_id as usize] > 0.0);
        }
    }

    #[test]
    fn minus_one_only_when_everything_is_neg_inf(input in input()) {
        let out = sample(&input);
        let all_neg_inf = input.logits().iter().all(|&l| l == f64::NEG_INFINITY);
        prop_assert_eq!(out.token_id == -1, all_neg_inf);
    }

    #[test]
    fn zero_outside_the_kept_set(input in input()) {
        let dist = distribution(&input);
        prop_assert!(!dist.kept().is_empty() || dist.probs().iter().all(|&p| p == 0.0));
        prop_assert!(dist.kept().windows(2).all(|w| w[0] < w[1]));
        for (i, &p) in dist.probs().iter().enumerate() {
            if dist.kept().binary_search(&i).is_err() {
                prop_assert_eq!(p, 0.0, "token {} not kept", i);
            }
        }
        let k = input.params().top_k.effective(input.logits().len());
        if let Some(k) = k {
            prop_assert!(dist.kept().len() <= k);
        }
    }

    #[test]
    fn deterministic(input in input()) {
        let a = sample(&input);
        let b = sample(&input.clone());
        prop_assert_eq!(a.token_id, b.token_id);
        prop_assert!(a.probs.iter().zip(&b.probs).all(|(x, y)| x.to_bits() == y.to_bits()));
        prop_assert_eq!(a.to_json_line(), b.to_json_line());
    }

    #[test]
    fn greedy_is_the_first_argmax(input in input()) {
        // Same logits and tokens, temperature forced to 0.
        let mut params = *input.params();
        params.temperature = Temperature::new(0.0).expect("zero");
        let input = Input::from_parts(input.logits().to_vec(), input.previous_tokens().to_vec(), params)
            .expect("valid logits");
        let out = sample(&input);
        let nonzero: Vec<usize> = (0..out.probs.len()).filter(|&i| out.probs[i] != 0.0).collect();
        prop_assert!(nonzero.len() <= 1);
        match nonzero.first() {
            Some(&i) => {
                prop_assert_eq!(out.probs[i], 1.0);
                prop_assert_eq!(out.token_id, i as i64);
            }
            None => prop_assert_eq!(out.token_id, -1),
        }
    }

    #[test]
    fn agrees_with_the_naive_reading(input in input()) {
        let out = sample(&input);
        let (token, probs) = naive(&input);
        let close = out.probs.iter().zip(&probs).all(|(a, b)| (a - b).abs() <= 1e-12);
        prop_assert!(close, "\n  ours:  {:?}\n  naive: {:?}", out.probs, probs);
        prop_assert_eq!(out.token_id, token);
    }

    #[test]
    fn json_round_trip_preserves_the_answer(input in input()) {
        let text = serde_json::to_string(&input).expect("serialises");
        let again = Input::from_json_str(&text).expect("re-reads");
        prop_assert_eq!(&again, &input);
        let out = sample(&input);
        let line: spec_sampler::Output = serde_json::from_str(&out.to_json_line()).expect("output re-reads");
        prop_assert_eq!(line, out);
    }
}
