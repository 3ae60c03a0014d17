//! The decoding-sampler spec, exactly, in `f64`.
//!
//! This crate is the reference semantics of sampling-parity: the written
//! sampling spec, restated in `docs/spec.md` at the root of the repository,
//! turned into one pure function.
//! Given logits, previously generated tokens and the parameters
//! `temperature`, `top_k`, `top_p`, `repetition_penalty` and a uniform number
//! `u`, it returns the filtered distribution and the sampled token:
//!
//! 1. **Repetition penalty** — for each *distinct* previous token `t` with
//!    `0 ≤ t < V`: `ℓ/penalty` if `ℓ > 0`, else `ℓ·penalty`. Duplicates count
//!    once; negative and out-of-range tokens are ignored.
//! 2. **Temperature** — `T == 0` is greedy: one-hot on the largest penalised
//!    logit, smallest index among ties, `top_k`/`top_p`/`u` ignored; if every
//!    logit is `-inf`, token -1 and all-zero probs. Otherwise `ℓ ← ℓ/T`.
//! 3. **Top-k** — keep the `min(k, V)` largest, ties to the smaller index;
//!    `k ≤ 0` or `k ≥ V` keeps all.
//! 4. **Top-p** — if `top_p < 1`: order the kept set by (logit descending,
//!    index ascending), softmax over it, keep through the first token whose
//!    cumulative probability is `≥ top_p`; at least one.
//! 5. **Softmax** over the kept set, maximum subtracted; 0.0 elsewhere. If
//!    every kept logit is `-inf`: token -1, all zeros.
//! 6. **Draw** — accumulate `probs` in index order; the first index whose
//!    cumulative sum is strictly greater than `u`.
//!
//! # Use
//!
//! ```
//! use spec_sampler::{sample, Input};
//!
//! let input = Input::from_json_str(
//!     r#"{"logits": [2.0, 1.0, 0.0, -1.0], "temperature": 1.0, "top_k": 2, "top_p": 1.0,
//!         "repetition_penalty": 1.0, "previous_tokens": [], "u": 0.3}"#,
//! )?;
//! let output = sample(&input);
//! assert_eq!(
//!     output.to_json_line(),
//!     r#"{"token_id":0,"probs":[0.7310585786300049,0.2689414213699951,0.0,0.0]}"#
//! );
//! # Ok::<(), spec_sampler::InputError>(())
//! ```
//!
//! [`distribution`] gives steps 1–5 alone, as the workspace's one
//! [`parity_core::Distribution`] (probabilities and the tokens with positive
//! probability), so other code can compare distributions without a draw; [`Params`] and
//! [`Input::from_json_parts`] build inputs from logits held elsewhere.
//!
//! # The `spec-sampler` binary
//!
//! Streams standard input: each non-blank line is one input object and gets
//! exactly one output line, the result or `{"error": "..."}` (the message is
//! also written to standard error with its line number). Exit status 0 when
//! every line was valid, 1 when any was not, 2 on an I/O or usage error; a
//! closed standard output ends the run quietly. A line that is not UTF-8 is an
//! invalid line (status 1), not an I/O failure. So is a line longer than
//! 64 MiB, which is skipped without being buffered (parsing holds ~20 bytes
//! per input byte, so a 100 MB line would need ~2 GB). `examples/spec-examples.jsonl`
//! holds the spec's three examples (worked out in `docs/spec.md`).
//!
//! # Validation
//!
//! Input is validated once, when it becomes an [`Input`]; the math cannot
//! fail or panic. Rejected, with an [`InputError`] naming the field (and
//! index) and quoting the value: invalid JSON or invalid UTF-8; a non-object;
//! any missing field; wrong JSON types; an empty `logits`; a logit that is
//! NaN, `+inf`, or any string other than exactly `"-inf"` (`"inf"`, `"+inf"`,
//! `"nan"`, `"-Infinity"`, ...); `temperature` negative or non-finite;
//! `top_p ≤ 0`, `> 1` or non-finite; `repetition_penalty ≤ 0` or
//! non-finite; `u` outside `[0, 1)`; a non-integral `top_k` or
//! `previous_tokens` entry.
//!
//! Accepted although outside the spec's stated ranges, because the rules are
//! well defined for them: `temperature > 100`, any integer `top_k` (10^9,
//! beyond `i64`: saturated), `repetition_penalty` in `(0, 1)` or above 100,
//! any integer previous token. Integral floats (`top_k: 2.0`,
//! `previous_tokens: [1e0]`) are accepted as the integers they denote.
//! Unknown fields are ignored, so richer records can be fed as they are.
//!
//! # Numerical choices
//!
//! - `ℓ/T` is never rounded to `f64`: for `T > 0` it has the same order as
//!   `ℓ`, so filtering orders by `ℓ`, and softmax weights are
//!   `exp((ℓ - max)/T)`. This is exact to a few ulps where computing `ℓ/T`
//!   first is not (`ℓ = 1e6, T = 1e-3`: an ulp of `1e9` is `1.2e-7`), and it
//!   cannot overflow: a tiny `T` sends every non-maximal weight to 0 and the
//!   tied maxima share the mass, which is the limit of the exact math.
//! - Softmax sums use compensated (Neumaier) summation, so probabilities
//!   are within a few ulps of exact even for V = 1000 with extreme logits.
//! - The top-p cut and the draw compare a cumulative sum of the `f64`
//!   probabilities, accumulated left to right, as the spec describes: four
//!   equal logits give probabilities 0.25 exactly, so `top_p = 0.5` keeps two
//!   and `u = 0.25` draws token 1.
//! - If rounding leaves the total of the probs at or below `u`, the draw
//!   returns the last token with positive probability: -1 only when no token
//!   has mass.
//! - A penalised logit that overflows `f64` (only possible with a penalty
//!   far outside the spec's range, below ~1e-300 or above ~1e300) becomes
//!   `±inf`: `+inf` entries share the mass equally, `-inf` ones get none.
//! - `-inf` logits are ordinary members of the kept sets with probability 0:
//!   top-k keeps them (smallest indices first) when fewer than `k` logits are
//!   finite; top-p never needs them; if only `-inf` remain the answer is -1.
//! - `-0.0` and `0.0` are the same logit (a tie, broken by index).
//!
//! # What this crate does not do
//!
//! It does not model any inference framework: no Hugging Face processor
//! order, no candle, no `f32`, no random number generator (the draw is the
//! given `u`). It does not compare distributions or read fixtures; those live
//! in `parity-core` and `compare`. It does not guess at malformed input:
//! anything outside the rules above is an error, not a repair.

#![deny(missing_docs)]

mod error;
mod input;
mod sampler;
mod semantics;

pub use error::InputError;
pub use input::{Input, Params, RepetitionPenalty, Temperature, TopK, TopP, U};
pub use sampler::{Output, distribution, draw, sample};
pub use semantics::Spec;
