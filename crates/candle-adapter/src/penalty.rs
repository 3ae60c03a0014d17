//! Repeat-penalty windows through the real `apply_repeat_penalty`.
//!
//! candle 0.11.1 (`candle-transformers/src/utils.rs`): for every id of the
//! context, once (a `HashSet` skips repeats), `if logit >= 0 { logit /= penalty }
//! else { logit *= penalty }`; ids ≥ V are skipped (`get_mut` returns `None`).
//! Which ids form the context is the caller's choice: transformers penalises
//! every input id (prompt included); candle's llama example passes the last 128
//! tokens, phi and quantized the last 64 (quantized: generated tokens only).

use candle_core::{Device, Tensor};
use serde::Serialize;

use crate::error::AdapterError;
use crate::params::Window;

/// What one window penalises.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PenaltyWindow {
    /// `null` = the whole input_ids, else the last n.
    pub last_n: Option<usize>,
    /// Number of input ids in the window.
    pub window_len: usize,
    /// Distinct in-vocabulary ids in the window, ascending: the logits
    /// `apply_repeat_penalty` touches.
    pub penalised: Vec<u32>,
    /// Of those, the ids whose logit actually changed (a logit of 0 or ±inf
    /// stays the same).
    pub changed: Vec<u32>,
    /// Ids in the window that are ≥ V (candle skips them silently).
    pub out_of_vocab: Vec<u32>,
    /// Ids penalised by the whole input_ids but not by this window.
    pub missed_vs_whole: Vec<u32>,
}

pub(crate) fn token_ids(input_ids: &[i64]) -> Result<Vec<u32>, AdapterError> {
    input_ids
        .iter()
        .enumerate()
        .map(|(index, &value)| {
            u32::try_from(value).map_err(|_| AdapterError::TokenId { index, value })
        })
        .collect()
}

pub(crate) fn check_logits(logits: &[f32]) -> Result<(), AdapterError> {
    if logits.is_empty() {
        return Err(AdapterError::EmptyLogits);
    }
    if let Some(index) = logits.iter().position(|l| l.is_nan()) {
        return Err(AdapterError::NanLogit { index });
    }
    Ok(())
}

/// The real `candle_transformers::utils::apply_repeat_penalty(logits, penalty as
/// f32, context)` on a CPU tensor.
pub fn apply_repeat_penalty(
    logits: &[f32],
    penalty: f64,
    context: &[i64],
) -> Result<Vec<f32>, AdapterError> {
    check_logits(logits)?;
    let ids = token_ids(context)?;
    let t = Tensor::from_slice(logits, logits.len(), &Device::Cpu)?;
    let out = candle_transformers::utils::apply_repeat_penalty(&t, penalty as f32, &ids)?;
    Ok(out.to_vec1::<f32>()?)
}

/// For each window (`None` = whole input_ids, `Some(n)` = last n), the ids the
/// real `apply_repeat_penalty` penalises and changes on these logits.
pub fn penalty_windows(
    logits: &[f32],
    input_ids: &[i64],
    penalty: f64,
    windows: &[Option<usize>],
) -> Result<Vec<PenaltyWindow>, AdapterError> {
    check_logits(logits)?;
    token_ids(input_ids)?;
    let v = logits.len();
    let distinct = |ids: &[i64]| -> (Vec<u32>, Vec<u32>) {
        let mut set: Vec<u32> = ids.iter().map(|&i| i as u32).collect();
        set.sort_unstable();
        set.dedup();
        set.into_iter().partition(|&i| (i as usize) < v)
    };
    let (whole, _) = distinct(input_ids);
    windows
        .iter()
        .map(|&last_n| {
            let window = last_n.map_or(Window::Whole, Window::LastN);
            let ids = window.apply(input_ids);
            let (penalised, out_of_vocab) = distinct(ids);
            let after = apply_repeat_penalty(logits, penalty, ids)?;
            let changed = penalised
                .iter()
                .copied()
                .filter(|&i| after[i as usize].to_bits() != logits[i as usize].to_bits())
                .collect();
            let missed_vs_whole = whole
                .iter()
                .copied()
                .filter(|i| penalised.binary_search(i).is_err())
                .collect();
            Ok(PenaltyWindow {
                last_n,
                window_len: ids.len(),
                penalised,
                changed,
                out_of_vocab,
                missed_vs_whole,
            })
        })
        .collect()
}
