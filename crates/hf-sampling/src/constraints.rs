//! The generate kwargs beyond the sampling ones: token constraints (n-gram
//! bans, bad words, suppressed and forced tokens, sequence bias), length rules
//! (min length, min new tokens, the exponential length penalty) and score
//! post-processing (`remove_invalid_values`, `renormalize_logits`), plus
//! `top_h`.
//!
//! # Reference
//!
//! transformers **5.23.0**, for a decoder-only model and a batch of one:
//! - `generation/utils.py`: `_get_logits_processor` (which processor exists
//!   for which value, and the order), `_prepare_generated_length`
//!   (`max_length = max_new_tokens + prompt length`, default 20 + prompt
//!   length; `min_length = min_new_tokens + prompt length` when
//!   `min_new_tokens` is set), `_prepare_special_tokens` (`eos_token_id` as a
//!   1-D tensor);
//! - `generation/configuration_utils.py`: `GenerationConfig.validate` (a
//!   forced token that is also suppressed raises);
//! - `generation/logits_process.py`: `SequenceBiasLogitsProcessor`,
//!   `NoRepeatNGramLogitsProcessor`, `NoBadWordsLogitsProcessor`,
//!   `MinLengthLogitsProcessor`, `MinNewTokensLengthLogitsProcessor`,
//!   `ForcedBOSTokenLogitsProcessor`, `ForcedEOSTokenLogitsProcessor`,
//!   `InfNanRemoveLogitsProcessor`, `ExponentialDecayLengthPenalty`,
//!   `SuppressTokensLogitsProcessor`, `SuppressTokensAtBeginLogitsProcessor`,
//!   `TopHLogitsWarper`, `LogitNormalization`.
//!
//! 4.57.6 and 5.0.0 differ in two checks only (a sequence bias on id 0
//! raises, a forced token also suppressed is accepted), carried by
//! [`crate::TransformersVersion`] and cited in [`crate::version`].
//!
//! "Prompt length" is `input_ids_seq_length`: the context length when
//! `generate` started (the record's `prompt_len`); "current length" is the
//! length of the context the step sees.

use serde_json::Value;

use crate::error::HfError;
use parity_core::py::{self, PyNum};
use parity_core::text::python_float_repr as float_repr;
use replicas::torch;

/// Values of the generate kwargs beyond the sampling ones, as resolved
/// (kwargs > `generation_config.json` > defaults). Validation happens where
/// transformers does it: when the processors are built
/// ([`crate::GenerationParams::processor_names`], [`crate::process_at`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Constraints {
    /// `eos_token_id` (an int or a list); `None` when unset. Min-length rules,
    /// the length penalty and the bad-words eos filter need it.
    pub eos_token_id: Option<Vec<i64>>,
    /// Whether `pad_token_id` is set (kwargs or config). Without it generate
    /// takes the pad token from `eos_token_id[0]`, which fails on `[]`.
    pub pad_token_id_set: bool,
    /// `max_length` as set (kwargs or config); `None` = transformers' default
    /// of 20 new tokens. (A Python number: transformers compares lengths
    /// with it, so a float works there too.)
    pub max_length: Option<PyNum>,
    /// `max_new_tokens`; takes precedence over `max_length`.
    pub max_new_tokens: Option<PyNum>,
    /// `min_length` (default 0) as the JSON number given (an int or a float).
    pub min_length: Option<PyNum>,
    /// `min_new_tokens` as the JSON number given.
    pub min_new_tokens: Option<PyNum>,
    /// `no_repeat_ngram_size` as the JSON number given (0 or less: off).
    pub no_repeat_ngram_size: Option<PyNum>,
    /// `bad_words_ids` as given (validated when the processor is built).
    pub bad_words_ids: Option<Value>,
    /// `sequence_bias` as given (validated when the processor is built).
    pub sequence_bias: Option<Value>,
    /// `forced_bos_token_id`.
    pub forced_bos_token_id: Option<i64>,
    /// `forced_eos_token_id` (an int or a list).
    pub forced_eos_token_id: Option<Vec<i64>>,
    /// `remove_invalid_values is True`.
    pub remove_invalid_values: bool,
    /// `exponential_decay_length_penalty` `(start_index, decay_factor)`.
    pub exponential_decay_length_penalty: Option<(f64, f64)>,
    /// `suppress_tokens`.
    pub suppress_tokens: Option<Vec<i64>>,
    /// `begin_suppress_tokens`.
    pub begin_suppress_tokens: Option<Vec<i64>>,
    /// `renormalize_logits is True`.
    pub renormalize_logits: bool,
    /// `top_h` (only read when sampling).
    pub top_h: Option<f64>,
}

/// The keys [`Constraints`] reads.
pub(crate) const KEYS: &[&str] = &[
    "eos_token_id",
    "max_length",
    "max_new_tokens",
    "min_length",
    "min_new_tokens",
    "no_repeat_ngram_size",
    "bad_words_ids",
    "sequence_bias",
    "forced_bos_token_id",
    "forced_eos_token_id",
    "remove_invalid_values",
    "exponential_decay_length_penalty",
    "suppress_tokens",
    "begin_suppress_tokens",
    "renormalize_logits",
    "top_h",
];

fn wrong(key: &str, expected: &'static str, v: &Value) -> HfError {
    HfError::WrongType {
        key: key.into(),
        expected,
        value: v.to_string(),
    }
}

fn invalid(key: &str, message: String) -> HfError {
    HfError::Invalid {
        key: key.into(),
        message,
    }
}

/// A JSON integer (not a bool: the list checks use `isinstance(.., int)`
/// on values that JSON keeps apart), within i64.
fn python_int(v: &Value) -> Option<i64> {
    PyNum::of_value(v).and_then(PyNum::int64)
}

/// An int id (JSON integer or bool, as Python's `int`).
fn int(v: &Value) -> Option<i64> {
    match v {
        Value::Bool(b) => Some(i64::from(*b)),
        Value::Number(n) => PyNum::of(n).int64(),
        _ => None,
    }
}

/// An int or a list of ints (`eos_token_id`, `forced_eos_token_id`).
fn ids(key: &str, v: &Value) -> Result<Vec<i64>, HfError> {
    match v {
        Value::Array(a) => a
            .iter()
            .map(|x| int(x).ok_or_else(|| wrong(key, "an integer or a list of integers", v)))
            .collect(),
        _ => int(v)
            .map(|i| vec![i])
            .ok_or_else(|| wrong(key, "an integer or a list of integers", v)),
    }
}

fn id_list(key: &str, v: &Value) -> Result<Vec<i64>, HfError> {
    match v {
        Value::Array(a) => a
            .iter()
            .map(|x| int(x).ok_or_else(|| wrong(key, "a list of integers", v)))
            .collect(),
        _ => Err(wrong(key, "a list of integers", v)),
    }
}

fn number(key: &str, v: &Value) -> Result<PyNum, HfError> {
    match v {
        Value::Number(n) => Ok(PyNum::of(n)),
        Value::Bool(b) => Ok(PyNum::Int(i128::from(*b))),
        _ => Err(wrong(key, "a number", v)),
    }
}

impl Constraints {
    /// Read the keys from `get` (kwargs > config; `None` = unset, `Some(Null)`
    /// = set to `None`). Only JSON types are checked here.
    pub(crate) fn parse<'a>(
        get: impl Fn(&str) -> Option<&'a Value>,
        do_sample: bool,
    ) -> Result<Self, HfError> {
        let set = |key: &str| get(key).filter(|v| !v.is_null());
        let mut c = Constraints::default();
        if let Some(v) = set("eos_token_id") {
            c.eos_token_id = Some(ids("eos_token_id", v)?);
        }
        c.pad_token_id_set = set("pad_token_id").is_some();
        for (key, slot) in [
            ("max_length", &mut c.max_length),
            ("max_new_tokens", &mut c.max_new_tokens),
        ] {
            if let Some(v) = set(key) {
                *slot = Some(number(key, v)?);
            }
        }
        if let Some(v) = set("forced_bos_token_id") {
            c.forced_bos_token_id =
                Some(int(v).ok_or_else(|| wrong("forced_bos_token_id", "an integer", v))?);
        }
        for (key, slot) in [
            ("min_length", &mut c.min_length),
            ("min_new_tokens", &mut c.min_new_tokens),
            ("no_repeat_ngram_size", &mut c.no_repeat_ngram_size),
        ] {
            if let Some(v) = set(key) {
                *slot = Some(number(key, v)?);
            }
        }
        c.bad_words_ids = set("bad_words_ids").cloned();
        c.sequence_bias = set("sequence_bias").cloned();
        if let Some(v) = set("forced_eos_token_id") {
            c.forced_eos_token_id = Some(ids("forced_eos_token_id", v)?);
        }
        for (key, slot) in [
            ("suppress_tokens", &mut c.suppress_tokens),
            ("begin_suppress_tokens", &mut c.begin_suppress_tokens),
        ] {
            if let Some(v) = set(key) {
                *slot = Some(id_list(key, v)?);
            }
        }
        // `is True`: only the boolean (1 is not True).
        c.remove_invalid_values = set("remove_invalid_values") == Some(&Value::Bool(true));
        c.renormalize_logits = set("renormalize_logits") == Some(&Value::Bool(true));
        if let Some(v) = set("exponential_decay_length_penalty") {
            let pair = match v {
                Value::Array(a) if a.len() == 2 => PyNum::of_value(&a[0])
                    .zip(PyNum::of_value(&a[1]))
                    .map(|(start, factor)| (start.float(), factor.float())),
                _ => None,
            };
            c.exponential_decay_length_penalty = Some(pair.ok_or_else(|| {
                wrong(
                    "exponential_decay_length_penalty",
                    "a pair [start_index, decay_factor]",
                    v,
                )
            })?);
        }
        if do_sample && let Some(v) = set("top_h") {
            c.top_h = Some(
                PyNum::of_value(v)
                    .map(PyNum::float)
                    .ok_or_else(|| wrong("top_h", "a number", v))?,
            );
        }
        Ok(c)
    }

    /// `max_length` after `_prepare_generated_length` for a prompt of
    /// `prompt_len` tokens. (transformers also caps the default at the
    /// model's `max_position_embeddings`, which a record does not carry.)
    pub(crate) fn max_length_at(&self, prompt_len: usize) -> f64 {
        let n = prompt_len as f64;
        match (self.max_new_tokens, self.max_length) {
            (Some(m), _) => m.float() + n,
            (None, Some(m)) => m.float(),
            (None, None) => 20.0 + n,
        }
    }

    /// [`Self::max_length_at`] as Python prints it (a float stays a float).
    pub(crate) fn max_length_repr(&self, prompt_len: usize) -> String {
        let float = match (&self.max_new_tokens, &self.max_length) {
            (Some(m), _) | (None, Some(m)) => m.is_float(),
            (None, None) => false,
        };
        let x = self.max_length_at(prompt_len);
        if float {
            float_repr(x)
        } else {
            format!("{x:.0}")
        }
    }
}

/// `SequenceBiasLogitsProcessor._validate_arguments` for the list form (JSON
/// has no tuple keys), then the list → dict conversion: the first occurrence
/// of a sequence fixes its position, the last one its bias. Token ids below
/// `smallest` are refused: 0 under 5.23.0 (`token_id >= 0`), 1 under 4.57.6
/// and 5.0.0 (`token_id > 0`, [`crate::TransformersVersion::sequence_bias_smallest_id`]).
pub(crate) fn sequence_bias_arg(v: &Value, smallest: i64) -> Result<Vec<(Vec<i64>, f32)>, HfError> {
    let key = "sequence_bias";
    let Value::Array(items) = v else {
        return Err(invalid(
            key,
            format!(
                "`sequence_bias` has to be a non-empty dictionary, or non-empty list of lists but is {}.",
                py::repr(v)
            ),
        ));
    };
    if items.is_empty() {
        return Err(invalid(
            key,
            "`sequence_bias` has to be a non-empty dictionary, or non-empty list of lists but is [].".into(),
        ));
    }
    let bad = || {
        invalid(
            key,
            format!(
                "Each element in `sequence_bias` has to be a non-empty list of lists of positive \
                 integers and float, but is {}.",
                py::repr(v)
            ),
        )
    };
    let mut out: Vec<(Vec<i64>, f32)> = Vec::new();
    for item in items {
        // `sequence[0]` must be a list of ints >= `smallest`, `sequence[1]` a float.
        let Value::Array(pair) = item else {
            return Err(bad());
        };
        let (Some(Value::Array(seq)), Some(Value::Number(b))) = (pair.first(), pair.get(1)) else {
            return Err(bad());
        };
        let PyNum::Float(bias) = PyNum::of(b) else {
            return Err(bad());
        };
        let seq: Vec<i64> = seq
            .iter()
            .map(|x| python_int(x).filter(|&i| i >= smallest))
            .collect::<Option<_>>()
            .ok_or_else(bad)?;
        let bias = bias as f32;
        match out.iter_mut().find(|(s, _)| *s == seq) {
            Some(slot) => slot.1 = bias,
            None => out.push((seq, bias)),
        }
    }
    Ok(out)
}

/// `NoBadWordsLogitsProcessor._validate_arguments`, then the eos filter
/// (single-token words equal to an eos id are dropped). An empty result is
/// allowed: transformers then biases nothing.
pub(crate) fn bad_words_arg(v: &Value, eos: Option<&[i64]>) -> Result<Vec<Vec<i64>>, HfError> {
    let key = "bad_words_ids";
    let words = match v {
        Value::Array(a) if !a.is_empty() => a,
        _ => {
            return Err(invalid(
                key,
                format!(
                    "`bad_words_ids` has to be a non-empty list, but is {}.",
                    py::repr(v)
                ),
            ));
        }
    };
    if words.iter().any(|w| !w.is_array()) {
        return Err(invalid(
            key,
            format!(
                "`bad_words_ids` has to be a list of lists, but is {}.",
                py::repr(v)
            ),
        ));
    }
    let mut out = Vec::new();
    for w in words {
        let ids: Option<Vec<i64>> = w
            .as_array()
            .into_iter()
            .flatten()
            .map(|x| python_int(x).filter(|&i| i >= 0))
            .collect();
        let Some(ids) = ids else {
            return Err(invalid(
                key,
                format!(
                    "Each list in `bad_words_ids` has to be a list of positive integers, but is {}.",
                    py::repr(v)
                ),
            ));
        };
        if let Some(eos) = eos
            && ids.len() == 1
            && eos.contains(&ids[0])
        {
            continue;
        }
        out.push(ids);
    }
    Ok(out)
}

// ---------------------------------------------------------------------------
// The processors' arithmetic (batch of one, f32).
// ---------------------------------------------------------------------------

/// `SequenceBiasLogitsProcessor.__call__` (and `NoBadWordsLogitsProcessor`,
/// whose biases are `-inf`): `bias = zeros + length_1_bias`, then for each
/// multi-token sequence whose prefix ends the context, `index_add_` of its bias
/// at its last token (groups by prefix length, in first-seen order), then
/// `scores + bias` in f32. Errors for ids `>= V` (checked at the first call).
pub(crate) fn sequence_bias(
    scores: &mut [f32],
    input_ids: &[i64],
    biases: &[(Vec<i64>, f32)],
) -> Result<(), HfError> {
    let v = scores.len();
    let oob: Vec<i64> = biases
        .iter()
        .flat_map(|(s, _)| s.iter().copied())
        .filter(|&id| usize::try_from(id).map_or(true, |i| i >= v))
        .collect();
    if !oob.is_empty() {
        let list = oob
            .iter()
            .map(i64::to_string)
            .collect::<Vec<_>>()
            .join(", ");
        return Err(invalid(
            "sequence_bias",
            format!(
                "The model vocabulary size is {v}, but the following tokens were being biased: [{list}]"
            ),
        ));
    }
    let mut bias = vec![0.0f32; v];
    for (seq, b) in biases {
        if seq.len() == 1 {
            bias[seq[0] as usize] = *b;
        }
    }
    // Groups by prefix length, in the order each length first appears.
    let mut lengths: Vec<usize> = Vec::new();
    for (seq, _) in biases {
        if seq.len() > 1 && !lengths.contains(&(seq.len() - 1)) {
            lengths.push(seq.len() - 1);
        }
    }
    for len in lengths {
        if len > input_ids.len() {
            continue;
        }
        let tail = &input_ids[input_ids.len() - len..];
        for (seq, b) in biases.iter().filter(|(s, _)| s.len() == len + 1) {
            let add = if seq[..len] == *tail { *b } else { 0.0 };
            bias[seq[len] as usize] += add;
        }
    }
    for (s, b) in scores.iter_mut().zip(&bias) {
        *s += *b;
    }
    Ok(())
}

/// The ids `NoRepeatNGramLogitsProcessor` bans: for every window of `n`
/// tokens whose first `n - 1` equal the last `n - 1` tokens of the context,
/// its last token (ids `>= V` dropped). Nothing before the context has `n`
/// tokens.
pub(crate) fn banned_ngram_tokens(input_ids: &[i64], n: usize, v: usize, out: &mut Vec<usize>) {
    out.clear();
    let len = input_ids.len();
    if n == 0 || len < n {
        return;
    }
    let prefix = &input_ids[len + 1 - n..];
    for w in input_ids.windows(n) {
        if w[..n - 1] == *prefix
            && let Ok(i) = usize::try_from(w[n - 1])
            && i < v
        {
            out.push(i);
        }
    }
}

/// `torch.where(isin(arange(V), ids), -inf, scores)`: ids outside `[0, V)`
/// match nothing.
pub(crate) fn mask_ids(scores: &mut [f32], ids: &[i64]) {
    let v = scores.len();
    for &id in ids {
        if let Ok(i) = usize::try_from(id)
            && i < v
        {
            scores[i] = f32::NEG_INFINITY;
        }
    }
}

/// `full_like(scores, -inf)` with `scores[id] = 0` for each id (Python
/// indexing: a negative id counts from the end; out of range raises).
pub(crate) fn force(scores: &mut [f32], ids: &[i64], key: &str) -> Result<(), HfError> {
    let v = scores.len();
    let mut at = Vec::with_capacity(ids.len());
    for &id in ids {
        let i = if id < 0 { id + v as i64 } else { id };
        match usize::try_from(i) {
            Ok(i) if i < v => at.push(i),
            _ => {
                return Err(invalid(
                    key,
                    format!("index {id} is out of bounds for dimension 1 with size {v}"),
                ));
            }
        }
    }
    scores.fill(f32::NEG_INFINITY);
    for i in at {
        scores[i] = 0.0;
    }
    Ok(())
}

/// `InfNanRemoveLogitsProcessor`: NaN → 0, `+inf` → f32::MAX, `-inf` → f32::MIN.
pub(crate) fn inf_nan_remove(scores: &mut [f32]) {
    for s in scores {
        if s.is_nan() {
            *s = 0.0;
        } else if *s == f32::INFINITY {
            *s = f32::MAX;
        } else if *s == f32::NEG_INFINITY {
            *s = f32::MIN;
        }
    }
}

/// `ExponentialDecayLengthPenalty.__call__` once `cur_len > start`:
/// `penalty = |s_eos| * (float)(factor^(cur_len - start) - 1)` (0 where
/// `s_eos` is not finite), then `scores + penalties` over the whole row (which
/// turns `-0.0` into `+0.0`).
pub(crate) fn exponential_decay(
    scores: &mut [f32],
    cur_len: usize,
    start: f64,
    factor: f64,
    eos: &[i64],
) {
    let cur = cur_len as f64;
    if cur <= start {
        return;
    }
    let v = scores.len();
    let k = (factor.powf(cur - start) - 1.0) as f32;
    let mut penalties = vec![0.0f32; v];
    for &id in eos {
        let i = if id < 0 { id + v as i64 } else { id };
        if let Ok(i) = usize::try_from(i)
            && i < v
        {
            let s = scores[i];
            penalties[i] = if s.is_finite() { s.abs() * k } else { 0.0 };
        }
    }
    for (s, p) in scores.iter_mut().zip(&penalties) {
        *s += *p;
    }
}

/// `LogitNormalization`: `scores.log_softmax(dim=-1)`.
pub(crate) fn log_softmax(scores: &mut [f32]) {
    let out = torch::log_softmax(scores);
    scores.copy_from_slice(&out);
}

/// `TopHLogitsWarper`: over the `min(100, V)` largest scores (descending),
/// `p = softmax`, `H = -(clamp(log p) * p).sum()`, keep while the cumulative
/// `-p log p` is `<= H * top_h` (always the first); everything else `-inf`.
/// Reductions are computed in f64 and rounded (within an ulp of torch's).
pub(crate) fn top_h(scores: &mut [f32], top_h: f64) {
    let v = scores.len();
    let n = v.min(100);
    let mut order: Vec<usize> = (0..v).collect();
    // torch.topk(sorted=True): descending; ties by index.
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
    order.truncate(n);
    let top: Vec<f32> = order.iter().map(|&i| scores[i]).collect();
    let lse = torch::logsumexp(&top);
    let logits: Vec<f32> = top.iter().map(|&x| x - lse).collect();
    let probs = torch::softmax(&logits);
    let entropy = -torch::sum(
        logits
            .iter()
            .zip(&probs)
            .map(|(&l, &p)| l.max(f32::MIN) * p),
    );
    let tau = entropy * top_h as f32;
    let terms: Vec<f32> = probs
        .iter()
        .map(|&p| -p * ((p as f64).ln() as f32))
        .collect();
    let cum = torch::cumsum(&terms);
    let mut keep = vec![false; v];
    for (j, &i) in order.iter().enumerate() {
        keep[i] = j == 0 || cum[j] <= tau;
    }
    for (s, k) in scores.iter_mut().zip(keep) {
        if !k {
            *s = f32::NEG_INFINITY;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NEG: f32 = f32::NEG_INFINITY;

    #[test]
    fn ngram_bans_the_successor_of_every_earlier_match() {
        // Context 0 1 2 0 1: bigram prefix [1] occurs at position 1 → bans 2.
        let mut out = Vec::new();
        banned_ngram_tokens(&[0, 1, 2, 0, 1], 2, 8, &mut out);
        assert_eq!(out, vec![2]);
        // Trigram prefix [0, 1] at 0 → bans 2; size 1 bans every seen id.
        banned_ngram_tokens(&[0, 1, 2, 0, 1], 3, 8, &mut out);
        assert_eq!(out, vec![2]);
        banned_ngram_tokens(&[3, 3, 9], 1, 8, &mut out);
        assert_eq!(out, vec![3, 3]);
        // Shorter context than n: nothing.
        banned_ngram_tokens(&[0, 1], 3, 8, &mut out);
        assert!(out.is_empty());
    }

    #[test]
    fn sequence_bias_adds_single_and_matching_multi_token_biases() {
        let mut s = vec![1.0f32, 2.0, 3.0];
        // [2] -1.5 always; [1, 0] +0.25 since the context ends in 1; [2, 0] not.
        let b = vec![(vec![2], -1.5), (vec![1, 0], 0.25), (vec![2, 0], 7.0)];
        sequence_bias(&mut s, &[0, 1], &b).expect("ids < V");
        assert_eq!(s, vec![1.25, 2.0, 1.5]);
        let err = sequence_bias(&mut s, &[0], &[(vec![3], 1.0)]).expect_err("3 >= V");
        assert!(err.to_string().contains("[3]"), "{err}");
    }

    #[test]
    fn decay_penalises_eos_by_its_absolute_value() {
        // start 2, cur_len 4, factor 1.5: 1.5^2 - 1 = 1.25; |-2| * 1.25 = 2.5 → 0.5.
        let mut s = vec![1.0f32, -2.0, -0.0];
        exponential_decay(&mut s, 4, 2.0, 1.5, &[1]);
        assert_eq!(s[..2], [1.0, 0.5]);
        assert!(s[2] == 0.0 && s[2].is_sign_positive(), "-0.0 + 0.0 = +0.0");
        let mut s = vec![1.0f32, NEG];
        exponential_decay(&mut s, 4, 2.0, 1.5, &[1]);
        assert_eq!(s, vec![1.0, NEG]);
    }

    #[test]
    fn force_and_remove_invalid() {
        let mut s = vec![1.0f32, 2.0, 3.0];
        force(&mut s, &[-1], "forced_bos_token_id").expect("in range");
        assert_eq!(s, vec![NEG, NEG, 0.0]);
        assert!(force(&mut s, &[3], "forced_eos_token_id").is_err());
        let mut s = vec![f32::NAN, f32::INFINITY, NEG, 1.0];
        inf_nan_remove(&mut s);
        assert_eq!(s, vec![0.0, f32::MAX, f32::MIN, 1.0]);
    }

    #[test]
    fn argument_checks_quote_python_reprs() {
        let v: Value = serde_json::json!([[1, 5], [-1]]);
        let e = bad_words_arg(&v, None).expect_err("negative id");
        assert!(e.to_string().ends_with("but is [[1, 5], [-1]]."), "{e}");
        let v: Value = serde_json::json!([[5], [6]]);
        assert_eq!(bad_words_arg(&v, Some(&[5])).expect("valid"), vec![vec![6]]);
        let v: Value = serde_json::json!([[[5], -2]]);
        assert!(sequence_bias_arg(&v, 0).is_err(), "an int bias is rejected");
    }
}
