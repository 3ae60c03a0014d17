//! The side-by-side cases: transformers generate kwargs that our sampler runs
//! exactly, and that the benchmarked engine's literal port reads as a porter
//! would (how it reads each is in that engine's `bench` module).

use hf_sampling::GenerationParams;
use serde_json::{Map, Value, json};

/// One side-by-side benchmark case.
#[derive(Debug, Clone)]
pub struct BenchCase {
    /// Short id (`t07`, `k40`, `p09`, `k40p09`, `minp005`, `rep13_ctx1k`).
    pub id: &'static str,
    /// The generate kwargs (`top_k` 0 where the case has no top-k, so that
    /// transformers' default 50 stays off).
    pub kwargs: Map<String, Value>,
    /// The same, resolved: the parameters of `hf_sampling::HfSampler`.
    pub ours: GenerationParams,
    /// Whether the case penalises a 1,000-id context ([`crate::bench_context`])
    /// with 1.3.
    pub penalty: bool,
}

/// The cases shared by the criterion benches and `compare bench`: a
/// temperature, top-k, top-p, both, min-p, and a repetition penalty over a
/// 1k-token context.
pub fn bench_cases() -> Vec<BenchCase> {
    let case = |id: &'static str, extra: Value, penalty| {
        let mut kwargs = Map::new();
        kwargs.insert("do_sample".into(), json!(true));
        kwargs.insert("top_k".into(), json!(0));
        if let Value::Object(extra) = extra {
            kwargs.extend(extra);
        }
        // The kwargs are fixed and valid: resolving them cannot fail.
        let ours = hf_sampling::resolve(&kwargs, None).unwrap_or_default();
        BenchCase {
            id,
            kwargs,
            ours,
            penalty,
        }
    };
    vec![
        case("t07", json!({"temperature": 0.7}), false),
        case("k40", json!({"top_k": 40}), false),
        case("p09", json!({"top_p": 0.9}), false),
        case("k40p09", json!({"top_k": 40, "top_p": 0.9}), false),
        case("minp005", json!({"min_p": 0.05}), false),
        case("rep13_ctx1k", json!({"repetition_penalty": 1.3}), true),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cases_resolve_to_the_settings_they_name() {
        let cases = bench_cases();
        let by = |id: &str| {
            cases
                .iter()
                .find(|c| c.id == id)
                .expect("case")
                .ours
                .clone()
        };
        assert_eq!(by("t07").temperature, 0.7);
        assert_eq!(
            by("t07").top_k,
            None,
            "top_k 0 keeps transformers' default 50 off"
        );
        assert_eq!(by("k40").top_k, Some(40));
        assert_eq!((by("k40p09").top_k, by("k40p09").top_p), (Some(40), 0.9));
        assert_eq!(by("minp005").min_p, Some(0.05));
        assert_eq!(by("rep13_ctx1k").repetition_penalty, 1.3);
        assert!(cases.iter().all(|c| c.ours.do_sample));
    }
}
