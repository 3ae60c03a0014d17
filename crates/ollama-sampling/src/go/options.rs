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

use crate::api::{self, Read, Release};

/// An Ollama release, as `0.17.5`, `v0.17.5` or `0.17.8-rc1` (this
/// project's `version` param): which rules and defaults apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct OllamaVersion(Release);

impl OllamaVersion {
    /// v0.25.0-rc0: the last tag with the Go sampler (its code is f63eea3d2's).
    pub const NEWEST: Self = Self(Release::new(0, 25, 0, Some(0)));
    /// v0.6.2: the first release whose sampler is reproduced.
    pub const OLDEST: Self = Self(Release::new(0, 6, 2, None));
    /// v0.17.5: the first release with token-history penalties (86513cb69).
    pub const PENALTIES_FROM: Self = Self(Release::new(0, 17, 5, None));
    /// v0.17.8-rc1: the last one with them (54e05172a reverted them in rc2).
    pub const PENALTIES_TO: Self = Self(Release::new(0, 17, 8, Some(1)));

    /// Parses `0.17.5`, `v0.17.5`, `0.17.8-rc1`; the error quotes the text.
    pub fn parse(text: &str) -> Result<Self, Error> {
        let v = Self(Release::parse(text).ok_or_else(|| {
            Error::new(format_args!(
                "`version` = {text:?}: expected an Ollama release such as \"0.17.5\" or \"0.25.0-rc0\""
            ))
        })?);
        if v < Self::OLDEST {
            return Err(Error::new(format_args!(
                "`version` = {text:?}: Ollama before v0.6.2 sampled with other rules (v0.6.1: min_p >= 1 kept everything; v0.6.0: a bucket sort; v0.5.13: float64 and gonum), not reproduced; see docs/engines/ollama-go.md"
            )));
        }
        if v > Self::NEWEST {
            return Err(Error::new(format_args!(
                "`version` = {text:?}: the Go sampler was removed after v0.25.0-rc0 (commit 9db4bdbad; there are no v0.26 to v0.29 tags); v0.30.0 and later run every GGUF on llama-server: use the `ollama` semantics"
            )));
        }
        Ok(v)
    }

    /// Whether this release applies repeat, presence and frequency
    /// penalties over the last 64 tokens (v0.17.5 – v0.17.8-rc1).
    pub fn has_penalties(self) -> bool {
        (Self::PENALTIES_FROM..=Self::PENALTIES_TO).contains(&self)
    }
}

impl std::fmt::Display for OllamaVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

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
        pub version: OllamaVersion ["\"0.25.0-rc0\""] = OllamaVersion::NEWEST
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

    /// `DefaultOptions()`, then `FromMap(model)` (the model's Modelfile
    /// `PARAMETER`s: a non-sampling option such as `stop` is type-checked
    /// and skipped, an unknown one skipped as Ollama skips it), then
    /// `FromMap(options)` (this project's params: unknown names refused).
    pub fn parse_over(
        model: Option<&Map<String, Value>>,
        options: &Map<String, Value>,
    ) -> Result<Self, Error> {
        let mut o = Self::default();
        if let Some(v) = options.get("version").filter(|v| !v.is_null()) {
            let text = v.as_str().ok_or_else(|| {
                Error::new(format_args!(
                    "`version` = {v}: expected a string such as \"0.17.5\""
                ))
            })?;
            o.version = OllamaVersion::parse(text)?;
            if o.version.has_penalties() {
                // 86513cb69 lowered DefaultOptions' RepeatPenalty to 1.0
                o.repeat_penalty = 1.0;
            }
        }
        if let Some(model) = model {
            o.apply(model, false)
                .map_err(|e| Error::new(format_args!("the model's parameters: {e}")))?;
        }
        o.apply(options, true)?;
        Ok(o)
    }

    /// `FromMap` over `map`; `strict` refuses names that are not sampling
    /// options (and reads `draws`).
    fn apply(&mut self, map: &Map<String, Value>, strict: bool) -> Result<(), Error> {
        let o = self;
        for (key, val) in map {
            if key == "draws" && strict {
                o.draws = parse_draws(val)?;
                continue;
            }
            if key == "version" && strict {
                continue; // read first, in parse_over
            }
            let option = api::option(key).filter(|f| f.since_go_engine);
            let Some(option) = option.filter(|f| api::is_sampling(f.name)) else {
                if !strict {
                    if option.is_some() {
                        check_other(key, val)?;
                    }
                    continue;
                }
                return Err(Error::new(if option.is_some() {
                    format!(
                        "option `{key}` does not shape the next-token distribution (it is an Ollama option, but not a sampling one); sampling options: {}",
                        Self::FIELDS.join(", ")
                    )
                } else {
                    format!(
                        "unknown option `{key}` = {val} (Ollama would log \"invalid option provided\" and ignore it); sampling options: {}",
                        Self::FIELDS.join(", ")
                    )
                }));
            };
            if val.is_null() {
                continue;
            }
            match api::read(option.kind, val).map_err(|what| refused(key, val, what))? {
                Read::Int(v) => match key.as_str() {
                    "top_k" => o.top_k = v,
                    "repeat_last_n" => o.repeat_last_n = v,
                    _ => o.seed = v,
                },
                Read::Float(v) => {
                    if !v.is_finite() {
                        return Err(Error::new(format_args!(
                            "`{key}` = {val} is infinite as a float32: Ollama cannot send it to its runner (failed to marshal data: json: unsupported value: {})",
                            if v > 0.0 { "+Inf" } else { "-Inf" }
                        )));
                    }
                    match key.as_str() {
                        "temperature" => o.temperature = v,
                        "top_p" => o.top_p = v,
                        "min_p" => o.min_p = v,
                        "typical_p" => o.typical_p = v,
                        "repeat_penalty" => o.repeat_penalty = v,
                        "presence_penalty" => o.presence_penalty = v,
                        _ => o.frequency_penalty = v,
                    }
                }
                Read::Checked => {}
            }
        }
        Ok(())
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
            if self.version.has_penalties() {
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
        if !self.version.has_penalties() {
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

/// Ollama's 400 for a value `FromMap` refuses: `option "key" must be {what}`.
fn refused(key: &str, val: &Value, what: &str) -> Error {
    Error::new(format_args!(
        "`{key}` = {val}: Ollama refuses it (option \"{key}\" must be {what})"
    ))
}

/// Whether `key` is an option of the Go engine's Ollama that never reaches
/// a sampler.
pub(crate) fn is_other(key: &str) -> bool {
    api::option(key).is_some_and(|f| f.since_go_engine && !api::is_sampling(f.name))
}

/// `FromMap`'s type check of an option that never reaches a sampler.
pub(crate) fn check_other(key: &str, val: &Value) -> Result<(), Error> {
    match api::option(key) {
        Some(f) if !val.is_null() => api::read(f.kind, val)
            .map(|_| ())
            .map_err(|what| refused(key, val, what)),
        _ => Ok(()),
    }
}

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
        assert!(
            parse(json!({"num_ctx": 4096}))
                .unwrap_err()
                .to_string()
                .contains("not a sampling one")
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
            "the model's parameters: `stop` = [1]: Ollama refuses it (option \"stop\" must be of an array of strings)"
        );
        assert_eq!(
            model(json!({"stop": "x"})),
            "the model's parameters: `stop` = \"x\": Ollama refuses it (option \"stop\" must be of type array)"
        );
    }
}
