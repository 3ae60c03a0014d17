//! Ollama's `options` as the Go engine's runner receives them.
//!
//! From the Ollama source at f63eea3d2 (the same in every version from
//! v0.6.2, except where noted in the crate docs):
//!
//! * api/types.go `DefaultOptions`: temperature 0.8, top_k 40, top_p 0.9,
//!   typical_p 1.0, repeat_last_n 64, repeat_penalty 1.1, presence_penalty 0,
//!   frequency_penalty 0, seed -1; `min_p` is not set there, so it is 0.
//! * api/types.go `Options.FromMap`: JSON numbers arrive as float64; an
//!   `int` option takes `int64(value)` (truncation toward zero), a float32
//!   option `float32(value)`; a value of another JSON type is an error
//!   (`option "top_k" must be of type integer`); `null` keeps the default;
//!   an unknown option is logged ("invalid option provided") and ignored —
//!   refused here, as everywhere in this project, so a misspelt name cannot
//!   silently mean the default.
//! * llm/server.go `Completion` JSON-encodes the options for the runner; Go's
//!   encoder refuses an infinite float32 ("json: unsupported value: +Inf"),
//!   so such a request fails.
//! * runner/ollamarunner/runner.go `completion` hands only temperature,
//!   top_k, top_p, min_p and seed to `sample.NewSampler`: typical_p,
//!   repeat_last_n, repeat_penalty, presence_penalty and frequency_penalty
//!   are accepted, sent, and never read by the Go engine.

use serde_json::{Map, Value};

use parity_core::Error;

use crate::layers::{Fields, Layer, Layered};
use crate::version::{Span, Version};

/// The releases the Go engine's rules are reproduced for: v0.6.2 (commit
/// 108fe0216) to v0.25.0-rc0, the last tag with the Go sampler (its code is
/// f63eea3d2's). The default is the newest.
pub const VERSIONS: Span = Span {
    oldest: Version::new(0, 6, 2, None),
    newest: Version::new(0, 25, 0, Some(0)),
    examples: ["0.17.5", "0.25.0-rc0"],
    before: "Ollama before v0.6.2 sampled with other rules (v0.6.1: min_p >= 1 kept everything; v0.6.0: a bucket sort; v0.5.13: float64 and gonum), not reproduced; see docs/engines/ollama-go.md",
    after: "the Go sampler was removed after v0.25.0-rc0 (commit 9db4bdbad; there are no v0.26 to v0.29 tags); v0.30.0 and later run every GGUF on llama-server: use the `ollama` semantics",
};

parity_core::params! {
    /// The options after `DefaultOptions` and `FromMap`, as the runner holds
    /// them (float32 and Go `int`), plus this project's `draws` and
    /// `version`: each field once, with its default and what `compare
    /// semantics` says of it.
    #[derive(Debug, Clone, PartialEq)]
    pub struct OllamaOptions {
        /// `Temperature` (float32).
        pub temperature: f32 = 0.8
            => "0 or < 0: greedy (first max); else logits / max(T, 1e-7), after top-k",
        /// `TopK` (int).
        pub top_k: i64 = 40
            => "keep exactly k (min-heap; ties by heap order); <= 0 or >= V: all, sorted by pdqsort",
        /// `TopP` (float32).
        pub top_p: f32 = 0.9
            => "keep through the first token whose f32 running sum is > p; clamped to [0, 1]; 1 disables",
        /// `MinP` (float32).
        pub min_p: f32 = 0.0 => "drop p < p_max * min_p; clamped to [0, 1]",
        /// `TypicalP`: ignored by the Go engine.
        pub typical_p: f32 = 1.0
            => "accepted and ignored (the Go sampler has no typical sampling)",
        /// `RepeatLastN`: ignored by the Go engine.
        pub repeat_last_n: i64 = 64 => "accepted and ignored",
        /// `RepeatPenalty`: ignored by the Go engine outside the releases
        /// with penalties (whose default is 1.0).
        pub repeat_penalty: f32 = 1.1 => "accepted and ignored (no penalty in the Go sampler)",
        /// `PresencePenalty`: ignored by the Go engine.
        pub presence_penalty: f32 = 0.0 => "accepted and ignored",
        /// `FrequencyPenalty`: ignored by the Go engine.
        pub frequency_penalty: f32 = 0.0 => "accepted and ignored",
        /// `Seed` (int); -1 is the unseeded global source.
        pub seed: i64 = -1
            => "!= -1: rand.NewPCG(seed, seed ^ 0x9E3779B9); -1: random global source",
        /// Not an Ollama option: replay this many seeded draws.
        pub draws: Option<usize>
            => "(not an Ollama option) replay this many successive seeded draws; needs seed",
        /// Not an Ollama option: the release whose rules and defaults apply
        /// (default v0.25.0-rc0, the f63eea3d2 code).
        pub version: Version ["\"0.25.0-rc0\""] = VERSIONS.newest
            => "(not an Ollama option) the release, 0.6.2 to 0.25.0-rc0; 0.17.5 to 0.17.8-rc1 apply penalties over the last 64 context ids",
    }
}

/// The JSON text of a float32 option, as short as reads back to it.
pub(crate) use parity_core::jsonl::f32_value as f32_json;

impl OllamaOptions {
    /// `DefaultOptions()` then `FromMap(options)`; `draws` as well.
    pub fn parse(options: &Map<String, Value>) -> Result<Self, Error> {
        Self::parse_over(None, options)
    }

    /// `DefaultOptions()` at the `version` the params name, then
    /// `FromMap(model)` (the model's Modelfile `PARAMETER`s), then
    /// `FromMap(options)` ([`crate::layers`]); `draws` and `version` are this
    /// project's own params.
    pub fn parse_over(
        model: Option<&Map<String, Value>>,
        options: &Map<String, Value>,
    ) -> Result<Self, Error> {
        let version = VERSIONS.read(options.get("version").unwrap_or(&Value::Null))?;
        let mut o = Layered::<Self>::defaults(version, Fields::GoEngine);
        if let Some(model) = model {
            o.layer(model, Layer::Model)?;
        }
        let mut own = options.clone();
        own.remove("version");
        let draws = own.remove("draws");
        o.layer(&own, Layer::Request)?;
        o.finite("its runner", "failed to marshal data: ")?;
        let mut o = o.params;
        o.version = version;
        if let Some(d) = draws {
            o.draws = parse_draws(&d)?;
        }
        Ok(o)
    }

    /// The options as JSON: what the Go sampler reads, and under `ignored`
    /// what it is sent but never reads.
    pub fn to_json(&self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("temperature".into(), f32_json(self.temperature));
        m.insert("top_k".into(), Value::from(self.top_k));
        m.insert("top_p".into(), f32_json(self.top_p));
        m.insert("min_p".into(), f32_json(self.min_p));
        m.insert("seed".into(), Value::from(self.seed));
        if let Some(n) = self.draws {
            m.insert("draws".into(), Value::from(n));
        }
        m.insert("version".into(), Value::from(self.version.to_string()));
        let penalties = [
            ("repeat_penalty", f32_json(self.repeat_penalty)),
            ("presence_penalty", f32_json(self.presence_penalty)),
            ("frequency_penalty", f32_json(self.frequency_penalty)),
        ];
        let mut ignored = Map::new();
        ignored.insert("typical_p".into(), f32_json(self.typical_p));
        ignored.insert("repeat_last_n".into(), Value::from(self.repeat_last_n));
        for (name, v) in penalties {
            if self.version.has_go_penalties() {
                m.insert(name.into(), v);
            } else {
                ignored.insert(name.into(), v);
            }
        }
        m.insert("ignored".into(), Value::Object(ignored));
        m
    }

    /// The fields the Go engine ignores that are set to something that
    /// would act in llama.cpp (a penalty, typical sampling), in words.
    pub fn ignored_active(&self) -> Vec<String> {
        let mut out = Vec::new();
        if !self.version.has_go_penalties() {
            if self.repeat_penalty != 1.0 {
                out.push(format!("repeat_penalty {}", self.repeat_penalty));
            }
            if self.presence_penalty != 0.0 {
                out.push(format!("presence_penalty {}", self.presence_penalty));
            }
            if self.frequency_penalty != 0.0 {
                out.push(format!("frequency_penalty {}", self.frequency_penalty));
            }
        }
        if self.typical_p != 1.0 && self.typical_p != 0.0 {
            out.push(format!("typical_p {}", self.typical_p));
        }
        out
    }
}

crate::layers::holds!(OllamaOptions: temperature, top_k, top_p, min_p, typical_p, repeat_last_n, repeat_penalty, presence_penalty, frequency_penalty, seed);

fn parse_draws(val: &Value) -> Result<Option<usize>, Error> {
    if val.is_null() {
        return Ok(None);
    }
    val.as_u64()
        .and_then(|n| usize::try_from(n).ok())
        .filter(|&n| n <= 1_000_000)
        .map(Some)
        .ok_or_else(|| {
            Error::new(format_args!(
                "`draws` = {val}: must be an integer from 0 to 1000000 (how many seeded draws to replay)"
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: Value) -> Result<OllamaOptions, Error> {
        OllamaOptions::parse(v.as_object().expect("object"))
    }

    #[test]
    fn defaults_are_ollamas() {
        let o = parse(json!({})).expect("defaults");
        assert_eq!(
            (o.temperature, o.top_k, o.top_p, o.min_p, o.seed),
            (0.8, 40, 0.9, 0.0, -1)
        );
        assert_eq!(o.repeat_penalty, 1.1);
    }

    #[test]
    fn ints_truncate_floats_narrow_and_types_are_checked() {
        let o = parse(json!({"top_k": 7.9, "seed": -3.5, "top_p": 0.1})).expect("ok");
        assert_eq!((o.top_k, o.seed, o.top_p), (7, -3, 0.1f32));
        assert_eq!(
            parse(json!({"top_k": "7"})).unwrap_err().to_string(),
            "`top_k` = \"7\": Ollama refuses it (option \"top_k\" must be of type integer)"
        );
        assert_eq!(
            parse(json!({"temperature": 1e39})).unwrap_err().to_string(),
            "`temperature` = 1e+39 is infinite as a float32: Ollama cannot send it to its runner (failed to marshal data: json: unsupported value: +Inf)"
        );
        // An option that never reaches the sampler: type-checked, as Ollama
        // does, and without effect.
        assert_eq!(parse(json!({"num_ctx": 4096})), parse(json!({})));
        assert_eq!(
            parse(json!({"num_ctx": "big"})).unwrap_err().to_string(),
            "`num_ctx` = \"big\": Ollama refuses it (option \"num_ctx\" must be of type integer)"
        );
        // draft_num_predict is newer than the Go engine's Ollama.
        assert!(
            parse(json!({"draft_num_predict": 4}))
                .unwrap_err()
                .to_string()
                .starts_with("unknown option `draft_num_predict`")
        );
        assert_eq!(
            parse(json!({"draws": -1})).unwrap_err().to_string(),
            "`draws` = -1: must be an integer from 0 to 1000000 (how many seeded draws to replay)"
        );
        assert_eq!(parse(json!({"seed": null})).expect("null").seed, -1);
    }

    /// api/types.go `FromMap`: a list option must be an array, of strings.
    #[test]
    fn a_model_list_option_is_checked_in_ollamas_words() {
        let model = |v: Value| {
            OllamaOptions::parse_over(v.as_object(), &Map::new())
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            model(json!({"stop": [1]})),
            "model parameter `stop` = [1]: Ollama fails every request to this model (option \"stop\" must be of an array of strings)"
        );
        assert_eq!(
            model(json!({"stop": "x"})),
            "model parameter `stop` = \"x\": Ollama fails every request to this model (option \"stop\" must be of type array)"
        );
        // An option of a newer Ollama in the model's layer is skipped, as
        // the Go engine's Ollama skips it; a name no Ollama has is refused.
        assert!(
            OllamaOptions::parse_over(json!({"draft_num_predict": 4}).as_object(), &Map::new())
                .is_ok()
        );
        assert!(
            model(json!({"temprature": 0.5})).starts_with("unknown model parameter `temprature`")
        );
    }

    /// An infinite float32 fails only when the options are sent: a model's
    /// infinite parameter the request overrides is never sent.
    #[test]
    fn an_infinite_option_fails_when_it_is_sent() {
        let model = json!({"temperature": 1e39});
        assert!(OllamaOptions::parse_over(model.as_object(), &Map::new()).is_err());
        let o = OllamaOptions::parse_over(
            model.as_object(),
            json!({"temperature": 0.5}).as_object().expect("object"),
        )
        .expect("overridden");
        assert_eq!(o.temperature, 0.5);
    }
}
