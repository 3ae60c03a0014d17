//! llama-server `/completion` fields, parsed as llama-server parses them.
//!
//! Rules from tools/server/server-schema.cpp (`make_llama_cmpl_schema`,
//! `field_num::eval`) and common/common.h (`common_params_sampling`
//! defaults) at llama.cpp 0c1e57098:
//!
//! * An absent or `null` field keeps the server default.
//! * Numbers are read with nlohmann::json's `get<T>()`: any JSON number or a
//!   boolean (`true` is 1) converts with a C++ `static_cast` (integers wrap
//!   to 32 bits, floats truncate toward zero, doubles round to float); a
//!   string, array or object is a type error.
//! * Soft limits are clamped: `top_k` to ≥ 0, `top_p`, `min_p`,
//!   `xtc_probability`, `xtc_threshold` to [0, 1], `temperature` to ≥ 0,
//!   `mirostat` to [0, 2]. Hard limits are errors: `repeat_last_n`,
//!   `dry_allowed_length`, `dry_penalty_last_n`, `min_keep` below 0,
//!   `n_predict` below -1, `adaptive_decay` outside [0, 0.99].
//! * `dry_base` below 1 is replaced by the default 1.75.
//! * `samplers` is an array of names (case-insensitive; `top-k`, `topk`,
//!   `nucleus`, `temp`, `typ` … are aliases; unknown names are dropped,
//!   common/sampling.cpp `common_sampler_types_from_names`) or a string of
//!   one-letter codes (`common_sampler_types_from_chars`); any other type is
//!   ignored.
//! * `logit_bias` is an array of `[token, bias]` pairs or an object
//!   `{"token": bias}`; a bias of `false` bans the token (-inf); pairs that
//!   are not two-element arrays, biases that are neither numbers nor `false`,
//!   and token ids outside the vocabulary are skipped silently.
//! * `seed` is read as uint32; -1 (4294967295) is `LLAMA_DEFAULT_SEED`, a
//!   fresh random seed per request.
//! * `draws` (not a server field) is how many seeded draws to replay; with
//!   a `seed` and no `draws` it is 1, the one token llama-server samples per
//!   step with that seed.
//!
//! llama-server ignores fields it does not know; this semantics refuses
//! them instead, so that a misspelt name cannot silently run the default.
//! Features that need the model (DRY's sequence breakers, `ignore_eos`,
//! string keys in `logit_bias`, grammars, `infill`) and the samplers that
//! replace `dist` (mirostat, `adaptive_p`) are refused with a message saying
//! so.

use serde_json::{Map, Value};

use parity_core::Error;

/// A sampler type of the `samplers` field (`common_sampler_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SamplerType {
    Dry,
    TopK,
    TopP,
    MinP,
    TypicalP,
    Temperature,
    Xtc,
    Infill,
    Penalties,
    TopNSigma,
    AdaptiveP,
}

impl SamplerType {
    pub(crate) fn from_name(name: &str) -> Option<Self> {
        use SamplerType::*;
        Some(match name.to_ascii_lowercase().as_str() {
            "dry" => Dry,
            "top_k" | "top-k" | "topk" => TopK,
            "top_p" | "top-p" | "topp" | "nucleus" => TopP,
            "top_n_sigma" | "top-n-sigma" | "topnsigma" => TopNSigma,
            "typ_p" | "typ-p" | "typp" | "typ" => TypicalP,
            "min_p" | "min-p" | "minp" => MinP,
            "temperature" | "temp" => Temperature,
            "xtc" => Xtc,
            "infill" => Infill,
            "penalties" => Penalties,
            "adaptive_p" | "adaptive-p" | "adaptivep" => AdaptiveP,
            _ => return None,
        })
    }

    pub(crate) fn from_char(c: char) -> Option<Self> {
        use SamplerType::*;
        Some(match c {
            'd' => Dry,
            'k' => TopK,
            'y' => TypicalP,
            'p' => TopP,
            's' => TopNSigma,
            'm' => MinP,
            't' => Temperature,
            'x' => Xtc,
            'i' => Infill,
            'e' => Penalties,
            'a' => AdaptiveP,
            _ => return None,
        })
    }

    /// The canonical name (`common_sampler_type_to_str`).
    pub(crate) fn name(self) -> &'static str {
        use SamplerType::*;
        match self {
            Dry => "dry",
            TopK => "top_k",
            TopP => "top_p",
            MinP => "min_p",
            TypicalP => "typ_p",
            Temperature => "temperature",
            Xtc => "xtc",
            Infill => "infill",
            Penalties => "penalties",
            TopNSigma => "top_n_sigma",
            AdaptiveP => "adaptive_p",
        }
    }
}

/// The most draws one request may ask to replay.
pub(crate) const MAX_DRAWS: u64 = 10_000_000;

/// `LLAMA_DEFAULT_SEED`.
pub(crate) const DEFAULT_SEED: u32 = u32::MAX;

/// The sampling parameters of one request after llama-server parsed it
/// (`common_params_sampling`), plus the number of draws to replay.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerParams {
    pub(crate) temp: f32,
    pub(crate) dynatemp_range: f32,
    pub(crate) dynatemp_exponent: f32,
    pub(crate) top_k: i32,
    pub(crate) top_p: f32,
    pub(crate) min_p: f32,
    pub(crate) top_n_sigma: f32,
    pub(crate) xtc_probability: f32,
    pub(crate) xtc_threshold: f32,
    pub(crate) typ_p: f32,
    pub(crate) penalty_last_n: i32,
    pub(crate) penalty_repeat: f32,
    pub(crate) penalty_freq: f32,
    pub(crate) penalty_present: f32,
    pub(crate) dry_multiplier: f32,
    pub(crate) dry_base: f32,
    pub(crate) dry_penalty_last_n: i32,
    pub(crate) mirostat: i32,
    pub(crate) min_keep: i32,
    pub(crate) seed: u32,
    pub(crate) samplers: Vec<SamplerType>,
    /// `(token, bias)` before the vocabulary check.
    pub(crate) logit_bias: Vec<(i32, f32)>,
    pub(crate) draws: Option<usize>,
}

impl ServerParams {
    /// The parameters that shape the distribution, as llama-server's
    /// `/completion` fields.
    /// Floats are written as their shortest float32 text (`0.7`, not the
    /// widened `0.699999988079071`), which reads back to the same float.
    pub fn describe(&self) -> Map<String, Value> {
        let samplers: Vec<&str> = self.samplers.iter().map(|s| s.name()).collect();
        let f = |x: f32| -> Value {
            x.to_string()
                .parse::<f64>()
                .ok()
                .and_then(serde_json::Number::from_f64)
                .map_or(Value::Null, Value::Number)
        };
        [
            ("temperature", f(self.temp)),
            ("dynatemp_range", f(self.dynatemp_range)),
            ("top_k", Value::from(self.top_k)),
            ("top_p", f(self.top_p)),
            ("min_p", f(self.min_p)),
            ("typical_p", f(self.typ_p)),
            ("top_n_sigma", f(self.top_n_sigma)),
            ("xtc_probability", f(self.xtc_probability)),
            ("xtc_threshold", f(self.xtc_threshold)),
            ("repeat_last_n", Value::from(self.penalty_last_n)),
            ("repeat_penalty", f(self.penalty_repeat)),
            ("frequency_penalty", f(self.penalty_freq)),
            ("presence_penalty", f(self.penalty_present)),
            ("min_keep", Value::from(self.min_keep)),
            ("samplers", Value::from(samplers)),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }
}

impl Default for ServerParams {
    /// `common_params_sampling`'s defaults (common/common.h).
    fn default() -> Self {
        use SamplerType::*;
        Self {
            temp: 0.80,
            dynatemp_range: 0.0,
            dynatemp_exponent: 1.0,
            top_k: 40,
            top_p: 0.95,
            min_p: 0.05,
            top_n_sigma: -1.0,
            xtc_probability: 0.0,
            xtc_threshold: 0.10,
            typ_p: 1.0,
            penalty_last_n: 64,
            penalty_repeat: 1.0,
            penalty_freq: 0.0,
            penalty_present: 0.0,
            dry_multiplier: 0.0,
            dry_base: 1.75,
            dry_penalty_last_n: 64,
            mirostat: 0,
            min_keep: 0,
            seed: DEFAULT_SEED,
            samplers: vec![
                Penalties,
                Dry,
                TopNSigma,
                TopK,
                TypicalP,
                TopP,
                MinP,
                Xtc,
                Temperature,
            ],
            logit_bias: Vec::new(),
            draws: None,
        }
    }
}

/// A JSON value as nlohmann::json's `get<arithmetic>()` sees it.
#[derive(Debug, Clone, Copy)]
enum Num {
    Int(i64),
    Uint(u64),
    Float(f64),
    Bool(bool),
}

/// nlohmann::json's `type_name()`.
fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn num(field: &str, v: &Value) -> Result<Num, Error> {
    match v {
        Value::Bool(b) => Ok(Num::Bool(*b)),
        Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                Ok(Num::Uint(u))
            } else if let Some(i) = n.as_i64() {
                Ok(Num::Int(i))
            } else {
                Ok(Num::Float(n.as_f64().unwrap_or(f64::NAN)))
            }
        }
        other => Err(Error::new(format_args!(
            "`{field}` = {other}: llama-server refuses it (type must be number, but is {})",
            type_name(other)
        ))),
    }
}

/// `static_cast<int32_t>(double)` as x86-64 does it: truncation, and
/// INT_MIN for NaN and values out of range (the C++ conversion is undefined
/// there; `cvttsd2si` returns INT_MIN).
fn f64_to_i32(x: f64) -> i32 {
    if x > -2_147_483_649.0 && x < 2_147_483_648.0 {
        x as i32
    } else {
        i32::MIN
    }
}

fn to_i32(n: Num) -> i32 {
    match n {
        Num::Int(i) => i as i32,
        Num::Uint(u) => u as i32,
        Num::Float(f) => f64_to_i32(f),
        Num::Bool(b) => i32::from(b),
    }
}

/// `static_cast<uint32_t>`; from a double, x86-64 GCC converts through a
/// 64-bit `cvttsd2si` and keeps the low 32 bits.
fn to_u32(n: Num) -> u32 {
    match n {
        Num::Int(i) => i as u32,
        Num::Uint(u) => u as u32,
        Num::Float(f) => {
            let wide = if f > -9.223_372_036_854_776e18 && f < 9.223_372_036_854_776e18 {
                f as i64
            } else {
                i64::MIN
            };
            wide as u32
        }
        Num::Bool(b) => u32::from(b),
    }
}

fn to_f32(n: Num) -> f32 {
    match n {
        Num::Int(i) => i as f32,
        Num::Uint(u) => u as f32,
        Num::Float(f) => f as f32,
        Num::Bool(b) => f32::from(u8::from(b)),
    }
}

fn quote(v: &Value) -> String {
    v.to_string()
}

/// Fields llama-server reads that do not change the distribution; accepted
/// and checked for type only.
const IGNORED_BOOLS: &[&str] = &[
    "stream",
    "cache_prompt",
    "post_sampling_probs",
    "return_tokens",
];

/// Every field this semantics accepts.
pub(crate) const FIELDS: &[&str] = &[
    "temperature",
    "dynatemp_range",
    "dynatemp_exponent",
    "top_k",
    "top_p",
    "min_p",
    "top_n_sigma",
    "xtc_probability",
    "xtc_threshold",
    "typical_p",
    "repeat_last_n",
    "repeat_penalty",
    "frequency_penalty",
    "presence_penalty",
    "dry_multiplier",
    "dry_base",
    "dry_allowed_length",
    "dry_penalty_last_n",
    "dry_sequence_breakers",
    "mirostat",
    "mirostat_tau",
    "mirostat_eta",
    "adaptive_target",
    "adaptive_decay",
    "min_keep",
    "n_probs",
    "n_predict",
    "seed",
    "samplers",
    "logit_bias",
    "ignore_eos",
    "backend_sampling",
    "grammar",
    "json_schema",
    "stream",
    "cache_prompt",
    "post_sampling_probs",
    "return_tokens",
    "draws",
];

fn hard_limit_i32(field: &str, v: &Value, n: Num, min: i32) -> Result<i32, Error> {
    let x = to_i32(n);
    if x < min {
        return Err(Error::new(format_args!(
            "`{field}` = {}: llama-server refuses it (Value must be between {min} <= value <= {}, but got {x})",
            quote(v),
            i32::MAX
        )));
    }
    Ok(x)
}

/// Parses a llama-server `/completion` request's sampling fields.
pub(crate) fn parse(request: &Map<String, Value>) -> Result<ServerParams, Error> {
    parse_over(ServerParams::default(), request)
}

/// Parses a request's sampling fields over the server's defaults `p`
/// (`eval_llama_cmpl_schema` starts from `params_base.sampling`,
/// tools/server/server-schema.cpp line 527).
pub(crate) fn parse_over(
    mut p: ServerParams,
    request: &Map<String, Value>,
) -> Result<ServerParams, Error> {
    for (field, v) in request {
        if !FIELDS.contains(&field.as_str()) {
            return Err(Error::new(format_args!(
                "unknown field `{field}` (llama-server would ignore it; known fields: {})",
                FIELDS.join(", ")
            )));
        }
        if v.is_null() {
            continue;
        }
        let f = field.as_str();
        match f {
            "samplers" => {
                match v {
                    Value::Array(items) => {
                        let mut out = Vec::new();
                        for (i, item) in items.iter().enumerate() {
                            let Value::String(name) = item else {
                                return Err(Error::new(format_args!(
                                    "`samplers[{i}]` = {}: llama-server refuses it (type must be string, but is {})",
                                    quote(item),
                                    type_name(item)
                                )));
                            };
                            // unknown names are dropped with a warning in the server log
                            out.extend(SamplerType::from_name(name));
                        }
                        p.samplers = out;
                    }
                    Value::String(chars) => {
                        p.samplers = chars.chars().filter_map(SamplerType::from_char).collect();
                    }
                    _ => {} // neither array nor string: the handler leaves the default
                }
                continue;
            }
            "logit_bias" => {
                p.logit_bias = parse_logit_bias(v)?;
                continue;
            }
            "dry_sequence_breakers" => {
                let ok =
                    matches!(v, Value::Array(a) if !a.is_empty() && a.iter().all(Value::is_string));
                if !ok {
                    return Err(Error::new(format_args!(
                        "`dry_sequence_breakers` = {}: llama-server refuses it (must be a non-empty array of strings)",
                        quote(v)
                    )));
                }
                continue;
            }
            "grammar" | "json_schema" => {
                let empty_grammar = f == "grammar" && v.as_str().is_some_and(str::is_empty);
                if !empty_grammar {
                    return Err(Error::new(format_args!(
                        "`{f}` = {}: grammar-constrained sampling needs the model's vocabulary and is not reproduced",
                        quote(v)
                    )));
                }
                continue;
            }
            "draws" => {
                let d = v.as_u64().ok_or_else(|| {
                    Error::new(format_args!(
                        "`draws` = {}: must be a non-negative integer",
                        quote(v)
                    ))
                })?;
                if d > MAX_DRAWS {
                    return Err(Error::new(format_args!(
                        "`draws` = {d}: at most {MAX_DRAWS} draws are replayed"
                    )));
                }
                p.draws = Some(d as usize);
                continue;
            }
            _ => {}
        }
        if IGNORED_BOOLS.contains(&f) || f == "ignore_eos" || f == "backend_sampling" {
            let Value::Bool(b) = v else {
                return Err(Error::new(format_args!(
                    "`{f}` = {}: llama-server refuses it (type must be boolean, but is {})",
                    quote(v),
                    type_name(v)
                )));
            };
            if *b && f == "ignore_eos" {
                return Err(Error::new(
                    "`ignore_eos` = true bans the model's end-of-generation tokens, which need the model's vocabulary; not reproduced",
                ));
            }
            if *b && f == "backend_sampling" {
                return Err(Error::new(
                    "`backend_sampling` = true runs the chain on the compute backend; only llama.cpp's CPU samplers are reproduced",
                ));
            }
            continue;
        }
        let n = num(f, v)?;
        match f {
            "temperature" => p.temp = to_f32(n).clamp(0.0, f32::INFINITY),
            "dynatemp_range" => p.dynatemp_range = to_f32(n),
            "dynatemp_exponent" => p.dynatemp_exponent = to_f32(n),
            "top_k" => p.top_k = to_i32(n).max(0),
            "top_p" => p.top_p = to_f32(n).clamp(0.0, 1.0),
            "min_p" => p.min_p = to_f32(n).clamp(0.0, 1.0),
            "top_n_sigma" => p.top_n_sigma = to_f32(n),
            "xtc_probability" => p.xtc_probability = to_f32(n).clamp(0.0, 1.0),
            "xtc_threshold" => p.xtc_threshold = to_f32(n).clamp(0.0, 1.0),
            "typical_p" => p.typ_p = to_f32(n),
            "repeat_last_n" => p.penalty_last_n = hard_limit_i32(f, v, n, 0)?,
            "repeat_penalty" => p.penalty_repeat = to_f32(n),
            "frequency_penalty" => p.penalty_freq = to_f32(n),
            "presence_penalty" => p.penalty_present = to_f32(n),
            "dry_multiplier" => p.dry_multiplier = to_f32(n),
            "dry_base" => {
                let b = to_f32(n);
                p.dry_base = if b < 1.0 { 1.75 } else { b };
            }
            "dry_allowed_length" => {
                hard_limit_i32(f, v, n, 0)?;
            }
            "dry_penalty_last_n" => p.dry_penalty_last_n = hard_limit_i32(f, v, n, 0)?,
            "mirostat" => p.mirostat = to_i32(n).clamp(0, 2),
            "mirostat_tau" | "mirostat_eta" | "adaptive_target" | "n_probs" => {}
            "adaptive_decay" => {
                let x = to_f32(n);
                if !(0.0..=0.99f32).contains(&x) {
                    return Err(Error::new(format_args!(
                        "`adaptive_decay` = {}: llama-server refuses it (Value must be between 0.000000 <= value <= 0.990000, but got {x:.6})",
                        quote(v)
                    )));
                }
            }
            "min_keep" => p.min_keep = hard_limit_i32(f, v, n, 0)?,
            "n_predict" => {
                hard_limit_i32(f, v, n, -1)?;
            }
            "seed" => p.seed = to_u32(n),
            _ => {}
        }
    }
    // llama-server samples one token per step with the request's seed, so a
    // seeded request without `draws` replays that one draw.
    if p.draws.is_none() && p.seed != DEFAULT_SEED {
        p.draws = Some(1);
    }
    Ok(p)
}

/// `strtol(key, &end, 10)` with `*end == 0`: optional leading whitespace and
/// sign, decimal digits, nothing after; the empty string reads as 0.
/// Overflow saturates at the long range. `None` when characters are left.
fn strtol_whole(key: &str) -> Option<i64> {
    let s = key.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let (neg, digits) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        // no conversion: end stays at the start of the key, so only an
        // empty key has *end == 0
        return key.is_empty().then_some(0);
    }
    let mut v: i64 = 0;
    for b in digits.bytes() {
        let d = i64::from(b - b'0');
        v = match v.checked_mul(10).and_then(|x| {
            if neg {
                x.checked_sub(d)
            } else {
                x.checked_add(d)
            }
        }) {
            Some(x) => x,
            None => return Some(if neg { i64::MIN } else { i64::MAX }),
        };
    }
    Some(v)
}

fn parse_bias(v: &Value) -> Option<f32> {
    match v {
        Value::Number(n) => Some(n.as_f64().map_or(0.0, |f| f as f32)),
        Value::Bool(false) => Some(f32::NEG_INFINITY),
        _ => None,
    }
}

fn parse_logit_bias(v: &Value) -> Result<Vec<(i32, f32)>, Error> {
    let mut out = Vec::new();
    match v {
        Value::Array(items) => {
            for (i, el) in items.iter().enumerate() {
                let Value::Array(pair) = el else { continue };
                if pair.len() != 2 {
                    continue;
                }
                let Some(bias) = parse_bias(&pair[1]) else {
                    continue;
                };
                match &pair[0] {
                    Value::Number(n) if n.is_i64() || n.is_u64() => {
                        let tok = n
                            .as_i64()
                            .map_or_else(|| n.as_u64().map_or(0, |u| u as i32), |x| x as i32);
                        out.push((tok, bias));
                    }
                    Value::String(s) => {
                        return Err(Error::new(format_args!(
                            "`logit_bias[{i}]` names the token by its text {}: that needs the model's tokenizer; give token ids",
                            Value::String(s.clone())
                        )));
                    }
                    _ => {}
                }
            }
        }
        Value::Object(items) => {
            for (key, val) in items {
                let Some(bias) = parse_bias(val) else {
                    continue;
                };
                match strtol_whole(key) {
                    Some(tok) => out.push((tok as i32, bias)),
                    None => {
                        return Err(Error::new(format_args!(
                            "`logit_bias` key {}: not a token id, and tokenizing text needs the model's tokenizer",
                            Value::String(key.clone())
                        )));
                    }
                }
            }
        }
        _ => {}
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn req(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    #[test]
    fn defaults_are_common_params_sampling() {
        let p = parse(&Map::new()).expect("empty request");
        assert_eq!((p.temp, p.top_k, p.top_p, p.min_p), (0.8, 40, 0.95, 0.05));
        assert_eq!((p.penalty_last_n, p.penalty_repeat), (64, 1.0));
        assert_eq!(p.seed, u32::MAX);
        assert_eq!(p.samplers.len(), 9);
    }

    #[test]
    fn soft_limits_clamp_and_true_is_one() {
        let p = parse(&req(
            json!({"top_k": -5, "top_p": 1.5, "temperature": -1, "min_p": true}),
        ))
        .expect("clamped");
        assert_eq!((p.top_k, p.top_p, p.temp, p.min_p), (0, 1.0, 0.0, 1.0));
        let p = parse(&req(json!({"top_k": 2.9, "seed": -1, "mirostat": 7}))).expect("cast");
        assert_eq!((p.top_k, p.seed, p.mirostat), (2, u32::MAX, 2));
        // 2^32 + 3 wraps to 3 in int32
        let p = parse(&req(json!({"top_k": 4_294_967_299u64}))).expect("wraps");
        assert_eq!(p.top_k, 3);
    }

    #[test]
    fn hard_limits_and_types_are_errors_naming_the_field() {
        let e = parse(&req(json!({"repeat_last_n": -1})))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("`repeat_last_n` = -1: llama-server refuses it"),
            "{e}"
        );
        assert!(e.contains("0 <= value <= 2147483647, but got -1"), "{e}");
        let e = parse(&req(json!({"top_k": "40"}))).unwrap_err().to_string();
        assert_eq!(
            e,
            "`top_k` = \"40\": llama-server refuses it (type must be number, but is string)"
        );
        let e = parse(&req(json!({"top_kk": 4}))).unwrap_err().to_string();
        assert!(e.starts_with("unknown field `top_kk`"), "{e}");
        let e = parse(&req(json!({"min_keep": -2})))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("`min_keep` = -2"), "{e}");
    }

    #[test]
    fn samplers_names_aliases_and_chars() {
        let p = parse(&req(
            json!({"samplers": ["Top-K", "bogus", "nucleus", "temp"]}),
        ))
        .expect("names");
        assert_eq!(
            p.samplers,
            vec![
                SamplerType::TopK,
                SamplerType::TopP,
                SamplerType::Temperature
            ]
        );
        let p = parse(&req(json!({"samplers": "kzpt"}))).expect("chars");
        assert_eq!(
            p.samplers,
            vec![
                SamplerType::TopK,
                SamplerType::TopP,
                SamplerType::Temperature
            ]
        );
        let p = parse(&req(json!({"samplers": 5}))).expect("ignored");
        assert_eq!(p.samplers.len(), 9);
    }

    #[test]
    fn logit_bias_forms() {
        let p = parse(&req(
            json!({"logit_bias": [[1, 2.5], [2, false], [3, true], [4], 7, [5.0, 1]]}),
        ))
        .expect("array form");
        assert_eq!(p.logit_bias, vec![(1, 2.5), (2, f32::NEG_INFINITY)]);
        let p = parse(&req(json!({"logit_bias": {"3": -1, " 4": false, "": 2}}))).expect("object");
        let mut got = p.logit_bias.clone();
        got.sort_by_key(|x| x.0);
        assert_eq!(got, vec![(0, 2.0), (3, -1.0), (4, f32::NEG_INFINITY)]);
        assert!(parse(&req(json!({"logit_bias": {"hello": 1}}))).is_err());
        assert!(parse(&req(json!({"logit_bias": [["hello", 1]]}))).is_err());
    }
}
