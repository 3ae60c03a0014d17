//! Edge cases of the spec (ties, `-inf`, boundaries, out-of-range values),
//! each with its expectation worked out by hand.
//! Tolerance is 1e-15 unless stated: the hand values are correctly rounded
//! f64s and the implementation is within an ulp or two of them.

use serde_json::json;
use spec_sampler::{Input, Params, distribution, draw, sample};

use crate::{assert_close, line, run};

const TOL: f64 = 1e-15;

#[test]
fn top_k_ties_go_to_the_smaller_index() {
    // [3, 2, 2, 1], k = 2: 3 (index 0), then the tie 2/2 goes to index 1.
    // e^3/(e^3+e^2) = 1/(1+e^-1) = 0.7310585786300049; e^2/(e^3+e^2) = 0.2689414213699951.
    let out = line(json!([3.0, 2.0, 2.0, 1.0])).top_k(2).u(0.5).run();
    assert_close(
        &out.probs,
        &[0.7310585786300049, 0.2689414213699951, 0.0, 0.0],
        TOL,
    );
    // cumulative 0.731 > 0.5 → token 0
    assert_eq!(out.token_id, 0);
}

#[test]
fn top_k_tie_across_the_cut_with_later_larger_value() {
    // [1, 5, 1, 1], k = 2: 5 (index 1), then the first of the 1s (index 0).
    // e^1/(e^5+e^1) = 1/(1+e^4) = 0.017986209962091555; e^5/(e^5+e^1) = 0.9820137900379085.
    let out = line(json!([1.0, 5.0, 1.0, 1.0])).top_k(2).run();
    assert_close(
        &out.probs,
        &[0.017986209962091555, 0.9820137900379085, 0.0, 0.0],
        TOL,
    );
    // cumulative 0.018 > 0.0 → token 0
    assert_eq!(out.token_id, 0);
}

#[test]
fn top_p_exactly_reached() {
    // Four equal logits: softmax 1/4 each (exact in f64). Cumulative 0.25 < 0.5,
    // 0.5 ≥ 0.5 → keep indices 0 and 1, renormalised 1/2 each.
    let out = line(json!([0.0, 0.0, 0.0, 0.0])).top_p(0.5).u(0.6).run();
    assert_eq!(out.probs, vec![0.5, 0.5, 0.0, 0.0]);
    // cumulative 0.5 ≤ 0.6, 1.0 > 0.6 → token 1
    assert_eq!(out.token_id, 1);
}

#[test]
fn u_exactly_on_a_cumulative_boundary() {
    // Four equal logits: 1/4 each. Cumulative 0.25 is not > 0.25; 0.5 is → token 1.
    let out = line(json!([7.0, 7.0, 7.0, 7.0])).u(0.25).run();
    assert_eq!(out.probs, vec![0.25; 4]);
    assert_eq!(out.token_id, 1);
    // And u = 0.5 → cumulative 0.5 not > 0.5, 0.75 is → token 2.
    let out = line(json!([7.0, 7.0, 7.0, 7.0])).u(0.5).run();
    assert_eq!(out.token_id, 2);
}

#[test]
fn greedy_ties_take_the_smallest_index() {
    // max 3 at indices 1 and 2 → 1; one-hot; u = 0.999 ignored.
    let out = line(json!([1.0, 3.0, 3.0, 2.0]))
        .temperature(0.0)
        .u(0.999)
        .run();
    assert_eq!(out.token_id, 1);
    assert_eq!(out.probs, vec![0.0, 1.0, 0.0, 0.0]);
}

#[test]
fn greedy_ignores_top_k_and_top_p() {
    // top_k = 1 and top_p tiny change nothing under T = 0: argmax of [0, 2, 1] is 1.
    let out = line(json!([0.0, 2.0, 1.0]))
        .temperature(0.0)
        .top_k(1)
        .top_p(1e-9)
        .run();
    assert_eq!(out.token_id, 1);
    assert_eq!(out.probs, vec![0.0, 1.0, 0.0]);
}

#[test]
fn greedy_with_some_neg_inf() {
    // max of [-inf, -5, -inf, -1e6] is -5 at index 1.
    let out = line(json!(["-inf", -5.0, "-inf", -1e6]))
        .temperature(0.0)
        .u(0.5)
        .run();
    assert_eq!(out.token_id, 1);
    assert_eq!(out.probs, vec![0.0, 1.0, 0.0, 0.0]);
    // Only the last is finite → 2.
    let out = line(json!(["-inf", "-inf", -1e6]))
        .temperature(0.0)
        .u(0.5)
        .run();
    assert_eq!(out.token_id, 2);
    assert_eq!(out.probs, vec![0.0, 0.0, 1.0]);
}

#[test]
fn all_neg_inf_with_temperature_zero() {
    let out = line(json!(["-inf", "-inf", "-inf"]))
        .temperature(0.0)
        .u(0.5)
        .run();
    assert_eq!(out.token_id, -1);
    assert_eq!(out.probs, vec![0.0; 3]);
}

#[test]
fn all_neg_inf_with_positive_temperature() {
    // Whatever the filters, nothing has mass → -1 and zeros.
    for (top_k, top_p) in [(0, 1.0), (1, 1.0), (2, 0.5), (5, 1e-9)] {
        let out = line(json!(["-inf", "-inf", "-inf"]))
            .temperature(0.7)
            .top_k(top_k)
            .top_p(top_p)
            .repetition_penalty(2.0)
            .previous_tokens(&[0, 1])
            .run();
        assert_eq!(out.token_id, -1, "top_k {top_k} top_p {top_p}");
        assert_eq!(out.probs, vec![0.0; 3]);
    }
}

#[test]
fn penalty_on_zero_negative_and_positive_logits() {
    // [0, -1, 1, 0.5], penalty 2 on 0, 1, 2: 0·2 = 0, -1·2 = -2, 1/2 = 0.5, 0.5 untouched.
    // Softmax of [0, -2, 0.5, 0.5]: S = 1 + e^-2 + 2e^0.5 = 4.432777824636869;
    // 1/S = 0.2255921770863667, e^-2/S = 0.030530581181947528, e^0.5/S = 0.37193862086584284.
    let out = line(json!([0.0, -1.0, 1.0, 0.5]))
        .repetition_penalty(2.0)
        .previous_tokens(&[0, 1, 2])
        .u(0.25)
        .run();
    assert_close(
        &out.probs,
        &[
            0.2255921770863667,
            0.030530581181947528,
            0.37193862086584284,
            0.37193862086584284,
        ],
        TOL,
    );
    // cumulative 0.2256 ≤ 0.25, 0.2561 > 0.25 → token 1
    assert_eq!(out.token_id, 1);
}

#[test]
fn penalty_direction_seen_through_greedy() {
    // positive: [1.0, 0.9], penalise 0: 1.0/2 = 0.5 < 0.9 → 1
    let out = line(json!([1.0, 0.9]))
        .temperature(0.0)
        .repetition_penalty(2.0)
        .previous_tokens(&[0])
        .run();
    assert_eq!(out.token_id, 1);
    // negative: [-1.0, -1.5], penalise 0: -1·2 = -2 < -1.5 → 1
    let out = line(json!([-1.0, -1.5]))
        .temperature(0.0)
        .repetition_penalty(2.0)
        .previous_tokens(&[0])
        .run();
    assert_eq!(out.token_id, 1);
    // zero: [0.0, -0.1], penalise 0 by 100: 0·100 = 0 > -0.1 → still 0
    let out = line(json!([0.0, -0.1]))
        .temperature(0.0)
        .repetition_penalty(100.0)
        .previous_tokens(&[0])
        .run();
    assert_eq!(out.token_id, 0);
}

#[test]
fn duplicate_and_out_of_range_previous_tokens() {
    // [2, 2], previous [0, 0, 0, 5, -1, 10^6], penalty 2: only token 0, once: 2/2 = 1
    // (three applications would give 0.25). Softmax of [1, 2]:
    // e/(e+e^2) = 1/(1+e) = 0.2689414213699951; 0.7310585786300049.
    let out = line(json!([2.0, 2.0]))
        .repetition_penalty(2.0)
        .previous_tokens(&[0, 0, 0, 5, -1, 1_000_000])
        .u(0.5)
        .run();
    assert_close(&out.probs, &[0.2689414213699951, 0.7310585786300049], TOL);
    // cumulative 0.269 ≤ 0.5, 1.0 > 0.5 → token 1
    assert_eq!(out.token_id, 1);
}

#[test]
fn huge_previous_tokens_are_ignored() {
    // Beyond i64 and as integral floats: all out of range, no effect.
    let value = json!({
        "logits": [2.0, 2.0], "temperature": 1.0, "top_k": 0, "top_p": 1.0,
        "repetition_penalty": 2.0, "previous_tokens": [18446744073709551615u64, -9223372036854775808i64, 1e300, 2.0],
        "u": 0.5
    });
    // 2.0 means token 2: out of range for V = 2. Equal logits → 1/2 each.
    let out = run(&value);
    assert_eq!(out.probs, vec![0.5, 0.5]);
    assert_eq!(out.token_id, 1);
}

#[test]
fn top_k_values_that_keep_everything() {
    // k = -1, 0, V = 4, 10^6: no cut. Softmax of [2, 1, 0, -1]:
    // S = e^2+e+1+e^-1 = 11.475217368561138 → e^2/S = 0.6439142598879724,
    // e/S = 0.23688281808991013, 1/S = 0.08714431874203257, e^-1/S = 0.03205860328008499.
    let expected = [
        0.6439142598879724,
        0.23688281808991013,
        0.08714431874203257,
        0.03205860328008499,
    ];
    for k in [-1, 0, 4, 1_000_000, i64::MAX] {
        let out = line(json!([2.0, 1.0, 0.0, -1.0])).top_k(k).u(0.9).run();
        assert_close(&out.probs, &expected, TOL);
        // cumulative 0.644, 0.881, 0.968 > 0.9 → token 2
        assert_eq!(out.token_id, 2, "k = {k}");
    }
}

#[test]
fn top_k_one_below_vocab_cuts() {
    // k = V - 1 = 3 drops the smallest: softmax of [2, 1, 0]:
    // S = e^2+e+1 = 11.107337927389695 → 0.6652409557748218, 0.24472847105479764, 0.09003057317038046
    let out = line(json!([2.0, 1.0, 0.0, -1.0])).top_k(3).u(0.99).run();
    assert_close(
        &out.probs,
        &[
            0.6652409557748218,
            0.24472847105479764,
            0.09003057317038046,
            0.0,
        ],
        TOL,
    );
    assert_eq!(out.token_id, 2);
}

#[test]
fn vocabulary_of_one() {
    // One finite logit: the softmax (or one-hot) of a single entry is [1.0],
    // and cumulative 1.0 > u = 0.999 → token 0. A lone -inf has no mass → -1.
    for t in [0.0, 1.0, 100.0] {
        let out = line(json!([5.0]))
            .temperature(t)
            .top_k(1)
            .top_p(0.1)
            .repetition_penalty(3.0)
            .previous_tokens(&[0])
            .u(0.999)
            .run();
        assert_eq!(out.token_id, 0);
        assert_eq!(out.probs, vec![1.0]);
    }
    let out = line(json!(["-inf"]))
        .top_k(1)
        .top_p(0.1)
        .repetition_penalty(3.0)
        .previous_tokens(&[0])
        .u(0.999)
        .run();
    assert_eq!(out.token_id, -1);
    assert_eq!(out.probs, vec![0.0]);
}

#[test]
fn tiny_top_p_keeps_exactly_one() {
    // [1, 2, 3]: the first in (logit desc) order is index 2, whose probability
    // 0.665 ≥ 1e-9 → only index 2 remains, renormalised to 1.
    let out = line(json!([1.0, 2.0, 3.0])).top_p(1e-9).u(0.999).run();
    assert_eq!(out.probs, vec![0.0, 0.0, 1.0]);
    assert_eq!(out.token_id, 2);
}

#[test]
fn top_p_is_measured_on_the_set_top_k_left() {
    // [3, 2, 1, 0], k = 2, top_p = 0.7. After top-k, {0, 1} renormalised:
    // p0 = 1/(1+e^-1) = 0.731 ≥ 0.7 → keep only 0. (Measured on all four,
    // p0 = e^3/(e^3+e^2+e+1) = 0.644 < 0.7 would keep two.)
    let out = line(json!([3.0, 2.0, 1.0, 0.0]))
        .top_k(2)
        .top_p(0.7)
        .u(0.9)
        .run();
    assert_eq!(out.probs, vec![1.0, 0.0, 0.0, 0.0]);
    assert_eq!(out.token_id, 0);
}

#[test]
fn top_p_sorts_by_logit_but_draw_accumulates_by_index() {
    // [1, 3, 2], top_p = 0.9. Order 1, 2, 0; softmax of [3, 2, 1]:
    // 0.6652409557748218, 0.24472847105479764 → cumulative 0.90997 ≥ 0.9 → keep {1, 2}.
    // Final softmax of [3, 2] on indices 1, 2: 1/(1+e^-1) = 0.7310585786300049, 0.2689414213699951.
    // Draw in index order: index 1 cumulative 0.731 ≤ 0.8, index 2 1.0 > 0.8 → token 2.
    let out = line(json!([1.0, 3.0, 2.0])).top_p(0.9).u(0.8).run();
    assert_close(
        &out.probs,
        &[0.0, 0.7310585786300049, 0.2689414213699951],
        TOL,
    );
    assert_eq!(out.token_id, 2);
}

#[test]
fn temperature_scales_before_filtering() {
    // [2, 1] at T = 2 → [1, 0.5]: 1/(1+e^-0.5) = 0.6224593312018546, 0.37754066879814546.
    let out = line(json!([2.0, 1.0])).temperature(2.0).u(0.7).run();
    assert_close(&out.probs, &[0.6224593312018546, 0.37754066879814546], TOL);
    assert_eq!(out.token_id, 1);
    // T = 150 (above the spec's 100, accepted): [2/150, 1/150],
    // 1/(1+e^(-1/150)) = 0.5016666604938546, e^(-1/150)/(1+e^(-1/150)) = 0.4983333395061454.
    let out = line(json!([2.0, 1.0])).temperature(150.0).run();
    assert_close(&out.probs, &[0.5016666604938546, 0.4983333395061454], TOL);
}

#[test]
fn top_k_keeps_neg_inf_entries_when_too_few_are_finite() {
    // [-inf, 1, -inf], k = 2: 1 (index 1), then the -inf tie goes to index 0.
    // They carry no mass: probs [0, 1, 0].
    let input = line(json!(["-inf", 1.0, "-inf"])).top_k(2).input();
    // The distribution lists the tokens with mass (parity_core's kept set);
    // the spec's own kept set {0, 1} is checked in src/sampler.rs.
    let dist = distribution(&input);
    assert_eq!(dist.kept(), &[1]);
    assert_eq!(dist.probs(), &[0.0, 1.0, 0.0]);
    assert_eq!(sample(&input).token_id, 1);
}

#[test]
fn top_p_close_to_one_with_neg_inf_entries() {
    // [0, 0, -inf, 0], top_p = 0.9999999999999999: cumulative 1/3, 2/3,
    // 0.9999999999999999 or 1.0 — either way the three finite tokens stay, 1/3 each
    // (1/3 = 0.3333333333333333). u = 0.9999999999999999 may exceed the f64 total:
    // then the last token with mass (index 3) is drawn, never -1 or the -inf index 2.
    let out = line(json!([0.0, 0.0, "-inf", 0.0]))
        .top_p(0.9999999999999999)
        .u(0.9999999999999999)
        .run();
    assert_close(
        &out.probs,
        &[
            0.3333333333333333,
            0.3333333333333333,
            0.0,
            0.3333333333333333,
        ],
        TOL,
    );
    assert_eq!(out.token_id, 3);
}

#[test]
fn draw_never_returns_minus_one_when_rounding_leaves_the_sum_below_u() {
    // Ten equal logits: 1/10 = 0.1 each; summed left to right in f64 they reach
    // 0.9999999999999999, which is not > u = 0.9999999999999999. The last token
    // with mass, 9, is drawn.
    let out = line(json!(vec![0.0; 10])).u(0.9999999999999999).run();
    assert_eq!(out.probs, vec![0.1; 10]);
    assert_eq!(out.token_id, 9);
}

#[test]
fn extreme_logits_with_tiny_temperature_stay_exact() {
    // [1e6, 999999.999, -1e6] at T = 1e-3. Exactly, in decimal from the f64 inputs:
    // d = (999999.998999999952502548694610595703125 - 1e6) / 0.001000000000000000020816681711721685
    //   = -1.0000000474974512845727;  p0 = 1/(1+e^d) = 0.73105858796857049787,
    //   p1 = 0.26894141203142950213, p2 = e^(-2e9) = 0.
    // Computing ℓ/T first rounds 1e9 to an ulp of 1.2e-7 and is off by 1.4e-8.
    let out = line(json!([1e6, 999999.999, -1e6]))
        .temperature(1e-3)
        .u(0.7310585)
        .run();
    assert_close(
        &out.probs,
        &[0.7310585879685705, 0.2689414120314295, 0.0],
        1e-15,
    );
    // cumulative 0.7310585879 > 0.7310585 → token 0
    assert_eq!(out.token_id, 0);
}

#[test]
fn extreme_logits_with_large_temperature() {
    // [1e6, -1e6] at T = 100: exponents 0 and -2e4 → [1, 0] (e^-20000 underflows; exact value < 1e-8000).
    let out = line(json!([1e6, -1e6])).temperature(100.0).u(0.5).run();
    assert_eq!(out.probs, vec![1.0, 0.0]);
    // [1e6, 1e6 - 100] at T = 100: 1/(1+e^-1) = 0.7310585786300049.
    let out = line(json!([1e6, 999900.0])).temperature(100.0).u(0.5).run();
    assert_close(&out.probs, &[0.7310585786300049, 0.2689414213699951], TOL);
}

#[test]
fn temperature_so_small_that_division_would_overflow() {
    // [1, 1, 0.5] at T = 1e-300: ℓ/T would be inf, inf, 5e299. Exactly, the two
    // equal maxima share the mass and the smaller logit gets e^(-5e299) = 0.
    let out = line(json!([1.0, 1.0, 0.5]))
        .temperature(1e-300)
        .u(0.5)
        .run();
    assert_eq!(out.probs, vec![0.5, 0.5, 0.0]);
    assert_eq!(out.token_id, 1);
    // Top-k still sees 2 > 1 even though both would overflow: [1, 2] at a
    // subnormal T, k = 1 keeps index 1.
    let out = line(json!([1.0, 2.0]))
        .temperature(1e-320)
        .top_k(1)
        .u(0.5)
        .run();
    assert_eq!(out.probs, vec![0.0, 1.0]);
    assert_eq!(out.token_id, 1);
}

#[test]
fn penalty_below_one_that_overflows_to_infinity() {
    // penalty 1e-309 (subnormal, accepted: > 0): 1/1e-309 = inf for tokens 0, 1.
    // The +inf entries are the joint maxima and share the mass; greedy takes index 0.
    let out = line(json!([1.0, 1.0, 2.0]))
        .repetition_penalty(1e-309)
        .previous_tokens(&[0, 1])
        .u(0.5)
        .run();
    assert_eq!(out.probs, vec![0.5, 0.5, 0.0]);
    assert_eq!(out.token_id, 1);
    let out = line(json!([1.0, 1.0, 2.0]))
        .temperature(0.0)
        .repetition_penalty(1e-309)
        .previous_tokens(&[0, 1])
        .u(0.5)
        .run();
    assert_eq!(out.token_id, 0);
}

#[test]
fn distribution_matches_sample_and_exposes_the_kept_set() {
    // [3, 2, 1, 0], k = 3, top_p = 0.9: top-k keeps {0, 1, 2}; softmax of [3, 2, 1]
    // cumulative 0.665, 0.910 ≥ 0.9 → kept {0, 1}.
    let input = line(json!([3.0, 2.0, 1.0, 0.0]))
        .top_k(3)
        .top_p(0.9)
        .u(0.2)
        .input();
    let dist = distribution(&input);
    assert_eq!(dist.kept(), &[0, 1]);
    let out = sample(&input);
    assert_eq!(out.probs, dist.probs());
    assert_eq!(out.token_id, draw(dist.probs(), input.params().u.get()));
}

#[test]
fn params_and_parts_build_the_same_input_as_the_spec_line() {
    // The `compare dist --semantics spec` record shape.
    let record = json!({
        "logits": [2.0, "-inf", 0.5],
        "input_ids": [0, 2, 2],
        "params": {"temperature": 0.8, "top_k": 2, "top_p": 0.95, "repetition_penalty": 1.3, "u": 0.4}
    });
    let params = Params::from_json(&record["params"]).expect("valid params");
    let from_json =
        Input::from_json_parts(&record["logits"], vec![0, 2, 2], params).expect("valid");
    let from_vec =
        Input::from_parts(vec![2.0, f64::NEG_INFINITY, 0.5], vec![0, 2, 2], params).expect("valid");
    let from_line = line(json!([2.0, "-inf", 0.5]))
        .temperature(0.8)
        .top_k(2)
        .top_p(0.95)
        .repetition_penalty(1.3)
        .previous_tokens(&[0, 2, 2])
        .u(0.4)
        .input();
    assert_eq!(from_json, from_line);
    assert_eq!(from_vec, from_line);
    assert_eq!(sample(&from_json), sample(&from_line));
}
