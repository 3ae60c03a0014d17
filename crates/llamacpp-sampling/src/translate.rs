//! transformers generate kwargs → the llama-server request (and llama-cli
//! flags) whose chain gives transformers' distribution.
//!
//! llama.cpp can be made to match transformers because its chain is
//! configurable (llama.cpp 0c1e57098, common/sampling.cpp
//! `common_sampler_init` builds the samplers in the order of the `samplers`
//! field): penalties, then temperature *first* (its default places it last,
//! after top-p/min-p/typical), then top_k, top_p, min_p and typical as
//! transformers orders its warpers; every filter sent explicitly, since
//! llama-server's defaults (top_k 40, top_p 0.95, min_p 0.05) are not
//! transformers' (top_k 50, nothing else); and the penalty window widened to
//! the whole context (`repeat_last_n` at least the context size: a negative
//! value is an error in this version, not "everything"). What stays
//! different: top-k keeps exactly k where transformers keeps every token
//! tied with the k-th, and top-p/min-p decide a token lying on the
//! threshold within float rounding in their own arithmetic. Samplers
//! llama.cpp does not have (epsilon, eta, n-gram bans, bad words, sequence
//! bias) cannot be matched.
//!
//! The llama-cli flags are those of common/arg.cpp at the same commit
//! (`--samplers` takes names separated by `;`).

use serde_json::{Map, Value, json};

/// The recipe, in words (a report's `fix` text).
pub const RECIPE: &str = "order the chain like transformers (penalties, temperature, top_k, top_p, min_p, typical), send every filter explicitly with transformers' defaults, and widen the penalty window to the whole context; exact except where top_k cuts a tie or top_p/min_p sit on a float rounding boundary";

/// Kwargs that llama.cpp has no sampler for, when transformers acts on them
/// ([`hf_sampling::Acting`]; both the literal port and the matching request
/// stop there), in the order they are listed.
pub fn unmatched(kwargs: &Map<String, Value>) -> Vec<String> {
    hf_sampling::Acting::of(kwargs).blocked(
        hf_sampling::NOT_IN_SAMPLER_CHAINS,
        "llama.cpp has no such sampler",
    )
}

/// What transformers runs these kwargs with ([`hf_sampling::resolve_sampling`]:
/// an unset or `null` kwarg is its default, top-k off is `None`), or its
/// refusal as the reason nothing matches. Every llama.cpp-chain port (the
/// matching llama-server request, llama-cpp-python's call, Ollama's
/// options) starts here.
pub fn resolved(kwargs: &Map<String, Value>) -> Result<hf_sampling::GenerationParams, Vec<String>> {
    hf_sampling::resolve_sampling(kwargs)
        .map_err(|e| vec![format!("transformers refuses these kwargs: {e}")])
}

/// The filters a llama.cpp chain needs to run transformers' `hf`: while
/// sampling, temperature, `top_k` (0 when off), top_p, min_p and typical_p
/// with transformers' values; greedy, temperature 0 (the chain's greedy).
pub fn filters(hf: &hf_sampling::GenerationParams) -> Map<String, Value> {
    let mut m = Map::new();
    if hf.do_sample {
        m.insert("temperature".into(), json!(hf.temperature));
        m.insert("top_k".into(), json!(hf.top_k.unwrap_or(0)));
        m.insert("top_p".into(), json!(hf.top_p));
        m.insert("min_p".into(), json!(hf.min_p.unwrap_or(0.0)));
        m.insert("typical_p".into(), json!(hf.typical_p));
    } else {
        m.insert("temperature".into(), json!(0.0));
    }
    m
}

/// Why a chain that applies the temperature after top-p, min-p and typical-p
/// (llama.cpp's default order) cannot run transformers' `hf`, which tempers
/// first: `None` when the order does not matter (greedy, T 1, or none of
/// those filters active). `who` says whose chain cannot be reordered.
pub fn temperature_last(hf: &hf_sampling::GenerationParams, who: &str) -> Option<String> {
    let active = hf.top_p < 1.0 || hf.min_p.unwrap_or(0.0) > 0.0 || hf.typical_p < 1.0;
    (hf.do_sample && hf.temperature != 1.0 && active).then(|| {
        format!(
            "temperature {} with top_p/min_p/typical_p: {who}",
            hf.temperature
        )
    })
}

/// The llama-server request that reproduces transformers for these
/// *resolved* kwargs (every sampling key present, `top_k` 0 when off), with
/// the penalty over the last `repeat_last_n` ids — at least the context
/// length for an exact match. `Err`: what cannot be matched.
pub fn matching_request(
    kwargs: &Map<String, Value>,
    repeat_last_n: usize,
) -> Result<Map<String, Value>, Vec<String>> {
    let blocked = unmatched(kwargs);
    if !blocked.is_empty() {
        return Err(blocked);
    }
    let hf = resolved(kwargs)?;
    let mut m = filters(&hf);
    m.insert(
        "samplers".into(),
        json!([
            "penalties",
            "temperature",
            "top_k",
            "top_p",
            "min_p",
            "typ_p"
        ]),
    );
    if !hf.do_sample {
        // The chain runs the filters before its greedy pick: all off.
        m.insert("top_k".into(), json!(0));
        m.insert("top_p".into(), json!(1.0));
        m.insert("min_p".into(), json!(0.0));
    }
    m.insert("repeat_penalty".into(), json!(hf.repetition_penalty));
    m.insert("repeat_last_n".into(), json!(repeat_last_n.max(1)));
    Ok(m)
}

/// The llama-cli flags for a request of [`matching_request`]'s fields.
pub fn cli_flags(request: &Map<String, Value>) -> Vec<String> {
    const FLAGS: &[(&str, &str)] = &[
        ("temperature", "--temp"),
        ("top_k", "--top-k"),
        ("top_p", "--top-p"),
        ("min_p", "--min-p"),
        ("typical_p", "--typical"),
        ("repeat_penalty", "--repeat-penalty"),
        ("repeat_last_n", "--repeat-last-n"),
    ];
    let mut out = Vec::new();
    if let Some(Value::Array(names)) = request.get("samplers") {
        let names: Vec<&str> = names.iter().filter_map(Value::as_str).collect();
        out.push("--samplers".to_string());
        out.push(format!("'{}'", names.join(";")));
    }
    for (field, flag) in FLAGS {
        if let Some(v) = request.get(*field) {
            out.push((*flag).to_string());
            out.push(v.to_string());
        }
    }
    out
}

/// `compare translate --to llama.cpp`: the matching request for these
/// resolved kwargs, its llama-cli flags and why it matches, or what cannot
/// be matched. The request is the translation's params, so `compare` proves
/// it on the bundled fixtures before calling it exact.
pub fn translation(
    kwargs: &Map<String, Value>,
    options: &parity_core::TranslateOptions,
) -> parity_core::Translation {
    use parity_core::TranslationLine::{Plain, Wrapped};
    match matching_request(kwargs, options.context_len) {
        Ok(request) => {
            let flags = cli_flags(&request);
            let mut json = Map::new();
            json.insert(
                "llama_server_request".into(),
                Value::Object(request.clone()),
            );
            json.insert("llama_cli_flags".into(), json!(flags));
            json.insert("unmatched".into(), json!([]));
            json.insert("recipe".into(), json!(RECIPE));
            parity_core::Translation {
                lines: vec![
                    Wrapped {
                        label: "llama-server request: ".into(),
                        // Spaces after commas let the JSON wrap; it stays valid JSON.
                        text: Value::Object(request.clone())
                            .to_string()
                            .replace(',', ", "),
                    },
                    Wrapped {
                        label: "llama-cli flags: ".into(),
                        text: flags.join(" "),
                    },
                    Plain(format!(
                        "  (repeat_last_n {} must be at least your context length: --context-len)",
                        options.context_len
                    )),
                    Wrapped {
                        label: "why: ".into(),
                        text: RECIPE.into(),
                    },
                ],
                json,
                params: Some(request),
            }
        }
        Err(unmatched) => {
            let mut json = Map::new();
            json.insert("llama_server_request".into(), Value::Null);
            json.insert("llama_cli_flags".into(), Value::Null);
            json.insert("unmatched".into(), json!(unmatched));
            json.insert("recipe".into(), json!(RECIPE));
            parity_core::Translation::cannot(
                "llama.cpp cannot reproduce these kwargs:".into(),
                &unmatched,
                json,
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().cloned().expect("object")
    }

    #[test]
    fn sampling_kwargs_become_transformers_order_and_defaults() {
        let kw = map(
            json!({"do_sample": true, "temperature": 0.7, "top_k": 50, "top_p": 0.9,
                            "repetition_penalty": 1.3}),
        );
        let r = matching_request(&kw, 4096).expect("matchable");
        assert_eq!(
            Value::Object(r.clone()),
            json!({"samplers": ["penalties", "temperature", "top_k", "top_p", "min_p", "typ_p"],
                   "temperature": 0.7, "top_k": 50, "top_p": 0.9, "min_p": 0.0,
                   "typical_p": 1.0, "repeat_penalty": 1.3, "repeat_last_n": 4096})
        );
        assert_eq!(
            cli_flags(&r).join(" "),
            "--samplers 'penalties;temperature;top_k;top_p;min_p;typ_p' --temp 0.7 --top-k 50 \
             --top-p 0.9 --min-p 0.0 --typical 1.0 --repeat-penalty 1.3 --repeat-last-n 4096"
        );
    }

    #[test]
    fn what_llama_cpp_lacks_is_named() {
        let kw = map(json!({"do_sample": true, "eta_cutoff": 0.001, "no_repeat_ngram_size": 3}));
        let e = matching_request(&kw, 10).unwrap_err();
        assert_eq!(e.len(), 2);
        assert!(e[0].starts_with("eta_cutoff = 0.001"), "{e:?}");
        // transformers 5.23.0 `generation/utils.py` adds `EtaLogitsWarper`
        // only while sampling (line 1597) and `NoRepeatNGramLogitsProcessor`
        // only for a size above 0 (line 1482): these used to block.
        let kw = map(json!({"do_sample": false, "eta_cutoff": 0.001, "no_repeat_ngram_size": -2}));
        assert!(matching_request(&kw, 10).is_ok());
        assert!(crate::request_for_generate(&kw).is_some());
        // Greedy: temperature 0 and no filters.
        let r = matching_request(&map(json!({"do_sample": false})), 10).expect("greedy");
        assert_eq!(
            (r["temperature"].as_f64(), r["top_k"].as_i64()),
            (Some(0.0), Some(0))
        );
    }

    #[test]
    fn the_request_spells_out_what_transformers_resolves() {
        // `top_k: null` is transformers' top-k off (generation/utils.py adds
        // TopKLogitsWarper only for a top_k that is not None and != 0), not
        // its default 50: llama.cpp's off is 0. An unset top_k is the 50.
        let top_k = |kw: Value| matching_request(&map(kw), 10).expect("matchable")["top_k"].clone();
        assert_eq!(top_k(json!({"do_sample": true, "top_k": null})), json!(0));
        assert_eq!(top_k(json!({"do_sample": true, "top_k": 0})), json!(0));
        assert_eq!(top_k(json!({"do_sample": true})), json!(50));
        // A null temperature is transformers' default 1.0.
        let r = matching_request(&map(json!({"do_sample": true, "temperature": null})), 10)
            .expect("matchable");
        assert_eq!(r["temperature"], json!(1.0));
    }
}
