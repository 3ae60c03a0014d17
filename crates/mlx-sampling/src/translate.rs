//! `compare translate --to mlx-lm` / `--to ollama-mlx` (whose module, in
//! ollama-sampling, calls these): the setup of each engine that reproduces
//! transformers' `generate(**kwargs)` (resolved kwargs: every value
//! transformers runs with is present), or why none exists.

use parity_core::TranslationLine::{Plain, Wrapped};
use parity_core::{Fix, Translation};
use serde_json::{Map, Value, json};

/// Kwargs neither engine has a counterpart for, when transformers acts on
/// them ([`hf_sampling::Acting`]: e.g. `typical_p` only below 1 and only
/// while sampling).
pub fn unmatched(kwargs: &Map<String, Value>, engine: &str) -> Vec<String> {
    let acting = hf_sampling::Acting::of(kwargs);
    let why = format!("{engine} has no such sampler");
    let mut blocked = acting.blocked(hf_sampling::NOT_IN_SAMPLER_CHAINS, &why);
    // Neither has a typical-p sampler either.
    blocked.extend(acting.blocked(&["typical_p"], &why));
    blocked
}

/// Whether the kwargs switch on a warper neither engine has (typical,
/// epsilon or eta: [`hf_sampling::Acting`]).
pub fn missing_warper(kwargs: &Map<String, Value>) -> bool {
    let acting = hf_sampling::Acting::of(kwargs);
    ["typical_p", "epsilon_cutoff", "eta_cutoff"]
        .iter()
        .any(|k| acting.acts(k))
}

/// A translation from a fix (the engine's params) or the reasons there is none.
pub fn translation(
    engine: &str,
    label: &str,
    recipe: &str,
    fix: Result<Fix, Vec<String>>,
    extra: impl Fn(&Map<String, Value>) -> Option<(String, String)>,
) -> Translation {
    match fix {
        Ok(fix) => {
            let mut json = Map::new();
            json.insert(label.replace(' ', "_"), Value::Object(fix.params.clone()));
            json.insert("unmatched".into(), json!([]));
            json.insert("recipe".into(), json!(recipe));
            let mut lines = vec![Wrapped {
                label: format!("{label}: "),
                text: Value::Object(fix.params.clone())
                    .to_string()
                    .replace(',', ", "),
            }];
            if let Some((l, text)) = extra(&fix.params) {
                json.insert(l.replace(' ', "_"), json!(text));
                lines.push(Wrapped {
                    label: format!("{l}: "),
                    text,
                });
            }
            lines.push(Wrapped {
                label: "why: ".into(),
                text: format!("{recipe} ({})", fix.text),
            });
            Translation {
                lines,
                json,
                params: Some(fix.params),
            }
        }
        Err(unmatched) => {
            let mut json = Map::new();
            json.insert(label.replace(' ', "_"), Value::Null);
            json.insert("unmatched".into(), json!(unmatched));
            json.insert("recipe".into(), json!(recipe));
            let mut lines = vec![Plain(format!("{engine} cannot reproduce these kwargs:"))];
            lines.extend(unmatched.iter().map(|u| Plain(format!("  {u}"))));
            Translation {
                lines,
                json,
                params: None,
            }
        }
    }
}

/// The Python calls for an mlx-lm request of these fields.
pub(crate) fn mlx_python(p: &Map<String, Value>) -> Option<(String, String)> {
    let g = |k: &str| p.get(k).map(Value::to_string);
    let mut sampler = vec![format!("temp={}", g("temperature").unwrap_or("0.0".into()))];
    for k in ["top_p", "min_p", "top_k"] {
        if let Some(v) = g(k) {
            sampler.push(format!("{k}={v}"));
        }
    }
    let mut text = format!("make_sampler({})", sampler.join(", "));
    if let Some(r) = g("repetition_penalty") {
        let size = g("repetition_context_size").unwrap_or("20".into());
        text.push_str(&format!(
            "; make_logits_processors(repetition_penalty={r}, repetition_context_size={size})"
        ));
    }
    Some(("mlx_lm python".into(), text))
}
