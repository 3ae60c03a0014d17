//! transformers 5.23's beam search, `generate(num_beams=…)` replayed step by
//! step, and the models its recordings were made on: a deterministic toy
//! language model and a table of a real model's log-probabilities.
//!
//! # transformers 5.23.0
//!
//! [`transformers_beam_search`] follows `GenerationMixin._beam_search` and its
//! helpers in `transformers/generation/utils.py` (`_get_top_k_continuations`,
//! `_get_running_beams_for_next_iteration`, `_update_finished_beams`,
//! `_check_early_stop_heuristic`, `_beam_search_has_unfinished_sequences`),
//! for one prompt, `do_sample=False` and no logits processor:
//!
//! - Each step takes `log_softmax` of every running beam's logits, adds the
//!   beam's running score (float32), and keeps the top `2·num_beams`
//!   candidates over all beams (`max(2, 1 + number of eos ids) · num_beams`).
//!   Before the first step only beam 0 has score 0, the others `-1e9`.
//! - A candidate *hits the stopping criteria* when its token is an eos id or
//!   it reaches `max_length = prompt + max_new_tokens`. The next running beams
//!   are the best `num_beams` candidates after adding `-1e9` to those that hit.
//! - Only the first `num_beams` candidates can finish. A finishing candidate's
//!   score is its sum of log-probabilities divided by `generated_len ^
//!   length_penalty` (float32 division by the f64 power), masked by `-1e9`
//!   when the finished set is full and `early_stopping=True`, or when the
//!   early-stop heuristic said no improvement is possible; the finished set
//!   keeps the best `num_beams` of old and new.
//! - Heuristic: the best running score divided by `len ^ length_penalty`, where
//!   `len` is the current generated length, or `max_new_tokens` when
//!   `early_stopping="never"` and `length_penalty > 0`, must beat the worst
//!   finished score (`-1e9` while any finished slot is empty).
//! - The loop ends when that heuristic fails, when `early_stopping=True` and
//!   all `num_beams` finished slots are filled, or when every candidate hit
//!   the stopping criteria. The first `num_return_sequences` finished beams
//!   are returned, cropped to the longest of them and padded with
//!   `pad_token_id` (or the first eos id when `pad_token_id` is 0 or unset,
//!   from `pad_token_id or eos_token_id[0]`).
//!
//! float32 is kept where transformers keeps it (scores, `-1e9` masks, the
//! divisions); `log_softmax` is computed in f64 and rounded to f32, which can
//! differ from torch's f32 kernel by an ulp. Where `torch.topk` meets exactly
//! tied values this replay takes the lower index first.
//!
//! # The models
//!
//! The search runs on any [`LanguageModel`] (`parity_core::beam`, where a
//! search compared with this one finds it too): log-probabilities as a
//! function of the prefix. [`TableLm`] replays recorded log-probabilities of
//! a real model (`fixtures/beam/smollm2_beams.jsonl`, SmolLM2 through
//! transformers, recorded by `scripts/reference/beam_smollm2_reference.py`).
//!
//! [`ToyLm`] hashes the whole prefix with SplitMix64 and maps each token to a
//! float32 logit; `scripts/reference/beam_reference.py` implements the same
//! function in Python inside a `PreTrainedModel`, and the recorded logits of
//! every prompt are checked bit for bit by the tests.

use parity_core::beam::checked_log_probs;
pub use parity_core::beam::{BeamError, LanguageModel};

/// Recorded log-probabilities: for every prefix a real model was run on, its
/// largest log-probabilities (the rest are treated as `-inf`). Beam search
/// only keeps candidates among each beam's top `2·num_beams`, so a table
/// with at least that many entries per prefix replays the search exactly; a
/// prefix the table lacks is an error (the replay went somewhere the real run
/// did not).
#[derive(Debug, Clone, PartialEq)]
pub struct TableLm {
    prompt: Vec<i64>,
    vocab: usize,
    rows: std::collections::HashMap<Vec<i64>, Vec<(usize, f32)>>,
}

impl TableLm {
    /// A table for `prompt` over `vocab` tokens; each row is the generated
    /// suffix after the prompt and its (token, log-probability) entries.
    pub fn new(
        prompt: Vec<i64>,
        vocab: usize,
        rows: impl IntoIterator<Item = (Vec<i64>, Vec<(usize, f32)>)>,
    ) -> Result<Self, BeamError> {
        let rows: std::collections::HashMap<_, _> = rows.into_iter().collect();
        for entries in rows.values() {
            if let Some(&(token, _)) = entries.iter().find(|(t, _)| *t >= vocab) {
                return Err(BeamError::Model(format!(
                    "table token {token} is outside the vocabulary of {vocab}"
                )));
            }
        }
        Ok(Self {
            prompt,
            vocab,
            rows,
        })
    }
}

impl LanguageModel for TableLm {
    fn vocab_size(&self) -> usize {
        self.vocab
    }

    fn log_probs(&self, ids: &[i64]) -> Result<Vec<f32>, BeamError> {
        let generated = ids.strip_prefix(self.prompt.as_slice()).ok_or_else(|| {
            BeamError::Model("the sequence does not start with the table's prompt".into())
        })?;
        let entries = self.rows.get(generated).ok_or_else(|| {
            BeamError::Model(format!(
                "no recorded log-probabilities after generated tokens {generated:?}"
            ))
        })?;
        let mut out = vec![f32::NEG_INFINITY; self.vocab];
        for &(t, lp) in entries {
            out[t] = lp;
        }
        Ok(out)
    }
}

/// The toy model of `scripts/reference/beam_reference.py`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ToyLm {
    /// Hash seed.
    pub seed: u64,
    /// Vocabulary size.
    pub vocab: usize,
    /// The eos token, whose logit grows by `eos_slope` per token of prefix.
    pub eos: usize,
    /// Added to the eos logit per prefix token.
    pub eos_slope: f64,
}

/// One SplitMix64 step (Steele, Lea & Flood 2014).
fn splitmix(x: u64) -> u64 {
    let x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let z = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    let z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl LanguageModel for ToyLm {
    fn vocab_size(&self) -> usize {
        self.vocab
    }

    fn log_probs(&self, ids: &[i64]) -> Result<Vec<f32>, BeamError> {
        log_softmax(&self.logits(ids)?, ids.len())
    }
}

impl ToyLm {
    /// The toy model's logits after `ids` (prompt included).
    pub fn logits(&self, ids: &[i64]) -> Result<Vec<f32>, BeamError> {
        let mut h = splitmix(self.seed);
        for &t in ids {
            let t = u64::try_from(t).map_err(|_| BeamError::NegativeId(t))?;
            h = splitmix(h ^ t);
        }
        Ok((0..self.vocab)
            .map(|v| {
                let z = splitmix(h.wrapping_add(v as u64));
                let mut x = (z >> 40) as f64 / f64::from(1u32 << 24) * 8.0 - 4.0;
                if v == self.eos {
                    x += self.eos_slope * ids.len() as f64;
                }
                x as f32
            })
            .collect())
    }
}

/// transformers' `early_stopping`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EarlyStopping {
    /// `False` (the default): stop when the heuristic says the best running
    /// beam cannot beat the worst finished one at its current length.
    Heuristic,
    /// `True`: stop as soon as `num_beams` beams are finished.
    Full,
    /// `"never"`: the heuristic with the longest possible length when
    /// `length_penalty > 0`.
    Never,
}

/// The generate kwargs that shape beam search.
#[derive(Debug, Clone, PartialEq)]
pub struct BeamConfig {
    /// `num_beams`.
    pub num_beams: usize,
    /// `length_penalty` (default 1.0).
    pub length_penalty: f64,
    /// `early_stopping` (default False).
    pub early_stopping: EarlyStopping,
    /// `num_return_sequences` (default 1).
    pub num_return_sequences: usize,
    /// `max_new_tokens`.
    pub max_new_tokens: usize,
    /// eos ids (the model's `generation_config.eos_token_id`).
    pub eos_token_ids: Vec<i64>,
    /// `pad_token_id`.
    pub pad_token_id: Option<i64>,
}

/// What `generate(..., return_dict_in_generate=True, output_scores=True)`
/// returns for one prompt.
#[derive(Debug, Clone, PartialEq)]
pub struct BeamOutput {
    /// `sequences`: prompt + generated tokens, padded to the longest.
    pub sequences: Vec<Vec<i64>>,
    /// `sequences_scores`: length-penalised sums of log-probabilities.
    pub scores: Vec<f32>,
    /// Generated length of each returned sequence (before padding).
    pub lengths: Vec<usize>,
    /// How many steps the loop ran.
    pub steps: usize,
}

const MASK: f32 = -1.0e9;

/// `log_softmax` of one row of logits (computed in f64, rounded to f32);
/// `len` is the prefix length, for the error message.
pub fn log_softmax(logits: &[f32], len: usize) -> Result<Vec<f32>, BeamError> {
    if let Some((index, &value)) = logits
        .iter()
        .enumerate()
        .find(|&(_, x)| x.is_nan() || *x == f32::INFINITY)
    {
        return Err(BeamError::BadLogit { index, value, len });
    }
    let max = f64::from(logits.iter().copied().fold(f32::NEG_INFINITY, f32::max));
    let sum: f64 = logits.iter().map(|&x| (f64::from(x) - max).exp()).sum();
    let log_sum = sum.ln();
    Ok(logits
        .iter()
        .map(|&x| (f64::from(x) - max - log_sum) as f32)
        .collect())
}

/// Indices of the `k` largest values, descending, lower index first among
/// exact ties (`torch.topk` as this replay takes it).
pub fn topk(values: &[f32], k: usize) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..values.len()).collect();
    idx.sort_by(|&a, &b| values[b].total_cmp(&values[a]));
    idx.truncate(k);
    idx
}

/// `(n as f64).powf(p)` rounded to f32: a Python `int ** float` used to
/// divide a float32 tensor.
fn penalty(n: usize, p: f64) -> f32 {
    (n as f64).powf(p) as f32
}

/// transformers 5.23's beam search for one prompt.
pub fn transformers_beam_search(
    lm: &dyn LanguageModel,
    prompt: &[i64],
    config: &BeamConfig,
) -> Result<BeamOutput, BeamError> {
    let nb = config.num_beams;
    if nb == 0 {
        return Err(BeamError::ZeroBeams);
    }
    if config.num_return_sequences > nb {
        return Err(BeamError::TooManyReturnSequences {
            requested: config.num_return_sequences,
            num_beams: nb,
        });
    }
    if config.max_new_tokens == 0 {
        return Err(BeamError::ZeroNewTokens);
    }
    if prompt.is_empty() {
        return Err(BeamError::EmptyPrompt);
    }
    let v = lm.vocab_size();
    let eos = &config.eos_token_ids;
    let keep = 2usize.max(1 + eos.len()) * nb;
    let prompt_len = prompt.len();
    let max_length = prompt_len + config.max_new_tokens;
    let lp = config.length_penalty;
    let fill = match (eos.first(), config.pad_token_id) {
        (None, _) => -1,
        (Some(_), Some(pad)) if pad != 0 => pad,
        (Some(&e), _) => e,
    };
    let mut row = vec![fill; max_length];
    row[..prompt_len].copy_from_slice(prompt);

    let mut running: Vec<Vec<i64>> = vec![row.clone(); nb];
    let mut running_scores = vec![MASK; nb];
    running_scores[0] = 0.0;
    let mut finished: Vec<Vec<i64>> = vec![row; nb];
    let mut finished_scores = vec![MASK; nb];
    let mut finished_len = vec![0usize; nb];
    let mut is_finished = vec![false; nb];
    let mut unsatisfied = true;
    let mut cur_len = prompt_len;
    let mut steps = 0;

    loop {
        steps += 1;
        let mut acc = Vec::with_capacity(nb * v);
        for (beam, score) in running.iter().zip(&running_scores) {
            let lp_row = checked_log_probs(lm, &beam[..cur_len])?;
            acc.extend(lp_row.iter().map(|x| x + score));
        }
        let top = topk(&acc, keep);
        let top_scores: Vec<f32> = top.iter().map(|&i| acc[i]).collect();
        let top_seqs: Vec<Vec<i64>> = top
            .iter()
            .map(|&i| {
                let mut s = running[i / v].clone();
                s[cur_len] = (i % v) as i64;
                s
            })
            .collect();
        let hits: Vec<bool> = top_seqs
            .iter()
            .map(|s| eos.contains(&s[cur_len]) || cur_len + 1 >= max_length)
            .collect();

        // e. the next running beams
        let masked: Vec<f32> = top_scores
            .iter()
            .zip(&hits)
            .map(|(&s, &h)| if h { s + MASK } else { s })
            .collect();
        let next = topk(&masked, nb);
        running = next.iter().map(|&j| top_seqs[j].clone()).collect();
        running_scores = next.iter().map(|&j| masked[j]).collect();

        // f. the finished beams
        let generated = cur_len + 1 - prompt_len;
        let full = config.early_stopping == EarlyStopping::Full && is_finished.iter().all(|&f| f);
        let denom = penalty(generated, lp);
        let mut candidates = Vec::with_capacity(keep);
        for (j, &s) in top_scores.iter().enumerate() {
            let did = hits[j] && j < nb;
            let mut t = s / denom;
            if full {
                t += MASK;
            }
            if !unsatisfied {
                t += MASK;
            }
            if !did {
                t += MASK;
            }
            candidates.push((t, did));
        }
        let merged: Vec<f32> = finished_scores
            .iter()
            .copied()
            .chain(candidates.iter().map(|c| c.0))
            .collect();
        let best = topk(&merged, nb);
        let (mut seqs, mut scores, mut lens, mut fin) = (vec![], vec![], vec![], vec![]);
        for &m in &best {
            if m < nb {
                seqs.push(finished[m].clone());
                lens.push(finished_len[m]);
                fin.push(is_finished[m]);
            } else {
                seqs.push(top_seqs[m - nb].clone());
                lens.push(generated);
                fin.push(candidates[m - nb].1);
            }
            scores.push(merged[m]);
        }
        (finished, finished_scores, finished_len, is_finished) = (seqs, scores, lens, fin);

        // g. stopping
        cur_len += 1;
        let best_len = if config.early_stopping == EarlyStopping::Never && lp > 0.0 {
            max_length - prompt_len
        } else {
            cur_len - prompt_len
        };
        let best_possible = running_scores[0] / penalty(best_len, lp);
        let min_finished = finished_scores
            .iter()
            .copied()
            .fold(f32::INFINITY, f32::min);
        unsatisfied = unsatisfied
            && is_finished
                .iter()
                .any(|&f| best_possible > if f { min_finished } else { MASK });
        let open =
            !(is_finished.iter().all(|&f| f) && config.early_stopping == EarlyStopping::Full);
        let valid = !hits.iter().all(|&h| h);
        if !(unsatisfied && open && valid) {
            break;
        }
    }

    let r = config.num_return_sequences;
    let out_len = prompt_len + finished_len[..r].iter().copied().max().unwrap_or(0);
    Ok(BeamOutput {
        sequences: finished[..r]
            .iter()
            .map(|s| s[..out_len].to_vec())
            .collect(),
        scores: finished_scores[..r].to_vec(),
        lengths: finished_len[..r].to_vec(),
        steps,
    })
}

impl BeamConfig {
    /// From generate kwargs (`num_beams`, `max_new_tokens` required;
    /// `length_penalty`, `early_stopping`, `num_return_sequences`,
    /// `do_sample: false` optional) and the model's eos and pad ids. Other
    /// kwargs are refused, naming the field; `num_beams = 1` too (transformers
    /// then runs greedy decoding, not beam search).
    pub fn from_kwargs(
        kwargs: &serde_json::Map<String, serde_json::Value>,
        eos_token_ids: Vec<i64>,
        pad_token_id: Option<i64>,
    ) -> Result<Self, BeamError> {
        use serde_json::Value;
        let bad = |field: &str, v: &Value, want: &str| {
            BeamError::Model(format!("`{field}` must be {want}, got {v}"))
        };
        let count = |field: &str, v: &Value| {
            v.as_u64()
                .and_then(|n| usize::try_from(n).ok())
                .ok_or_else(|| bad(field, v, "a non-negative integer"))
        };
        let mut config = Self {
            num_beams: 0,
            length_penalty: 1.0,
            early_stopping: EarlyStopping::Heuristic,
            num_return_sequences: 1,
            max_new_tokens: 0,
            eos_token_ids,
            pad_token_id,
        };
        let (mut beams, mut new_tokens) = (None, None);
        for (key, v) in kwargs {
            match key.as_str() {
                "num_beams" => beams = Some(count(key, v)?),
                "max_new_tokens" => new_tokens = Some(count(key, v)?),
                "num_return_sequences" => config.num_return_sequences = count(key, v)?,
                "length_penalty" => {
                    config.length_penalty = parity_core::py::PyNum::of_value(v)
                        .map(parity_core::py::PyNum::float)
                        .ok_or_else(|| bad(key, v, "a number"))?
                }
                "early_stopping" => {
                    config.early_stopping = match v {
                        Value::Bool(false) => EarlyStopping::Heuristic,
                        Value::Bool(true) => EarlyStopping::Full,
                        Value::String(s) if s == "never" => EarlyStopping::Never,
                        _ => return Err(bad(key, v, "true, false or \"never\"")),
                    }
                }
                "do_sample" if v == &Value::Bool(false) => {}
                other => {
                    return Err(BeamError::Model(format!(
                        "`{other}` = {v} is not modelled (deterministic beam search takes num_beams, \
                         max_new_tokens, length_penalty, early_stopping, num_return_sequences)"
                    )));
                }
            }
        }
        config.num_beams =
            beams.ok_or_else(|| BeamError::Model("`num_beams` is required".into()))?;
        if config.num_beams == 1 {
            return Err(BeamError::Model(
                "`num_beams` = 1: transformers runs greedy decoding, not beam search".into(),
            ));
        }
        config.max_new_tokens =
            new_tokens.ok_or_else(|| BeamError::Model("`max_new_tokens` is required".into()))?;
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Log-probability 0 for token min(len, 4), -10 elsewhere, over 5
    /// tokens (the tutorial's own test model).
    struct Staircase;

    impl LanguageModel for Staircase {
        fn vocab_size(&self) -> usize {
            5
        }
        fn log_probs(&self, ids: &[i64]) -> Result<Vec<f32>, BeamError> {
            let mut l = vec![-10.0; 5];
            l[ids.len().min(4)] = 0.0;
            log_softmax(&l, ids.len())
        }
    }

    #[test]
    fn toy_model_is_the_python_function() {
        // splitmix(0) is SplitMix64's first output for seed 0.
        assert_eq!(splitmix(0), 0xE220_A839_7B1D_CDAF);
        let lm = ToyLm {
            seed: 1,
            vocab: 10,
            eos: 2,
            eos_slope: 0.5,
        };
        // First values recorded by beam_reference.py for prompt [7, 4].
        let l = lm.logits(&[7, 4]).expect("valid");
        assert_eq!(
            l[0].to_bits(),
            (-0.052_083_492_279_052_734_f64 as f32).to_bits()
        );
        assert_eq!(
            l[8].to_bits(),
            (3.974_091_529_846_191_4_f64 as f32).to_bits()
        );
    }

    #[test]
    fn refusals() {
        let cfg = BeamConfig {
            num_beams: 0,
            length_penalty: 1.0,
            early_stopping: EarlyStopping::Heuristic,
            num_return_sequences: 1,
            max_new_tokens: 3,
            eos_token_ids: vec![4],
            pad_token_id: None,
        };
        assert_eq!(
            transformers_beam_search(&Staircase, &[0], &cfg),
            Err(BeamError::ZeroBeams)
        );
        let cfg = BeamConfig {
            num_beams: 2,
            num_return_sequences: 3,
            ..cfg
        };
        assert_eq!(
            transformers_beam_search(&Staircase, &[0], &cfg)
                .unwrap_err()
                .to_string(),
            "`num_return_sequences` = 3 is more than `num_beams` = 2 (transformers raises)"
        );
    }

    #[test]
    fn kwargs_parse_and_refuse() {
        let map = |s: &str| -> serde_json::Map<String, serde_json::Value> {
            serde_json::from_str(s).expect("object")
        };
        let c = BeamConfig::from_kwargs(
            &map(r#"{"num_beams": 3, "max_new_tokens": 5, "early_stopping": "never"}"#),
            vec![2],
            Some(1),
        )
        .expect("valid");
        assert_eq!((c.num_beams, c.early_stopping), (3, EarlyStopping::Never));
        let e = BeamConfig::from_kwargs(
            &map(r#"{"num_beams": 0, "max_new_tokens": 5}"#),
            vec![],
            None,
        );
        let e = e.and_then(|c| transformers_beam_search(&Staircase, &[0], &c));
        assert_eq!(e, Err(BeamError::ZeroBeams));
        let e = BeamConfig::from_kwargs(&map(r#"{"num_beams": 2, "top_k": 5}"#), vec![], None);
        assert!(
            e.unwrap_err()
                .to_string()
                .starts_with("model: `top_k` = 5 is not modelled")
        );
    }
}
