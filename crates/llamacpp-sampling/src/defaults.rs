//! What llama-server samples an absent field with: its built-in default, the
//! model file's `general.sampling.*` metadata, and the operator's flags, in
//! the order llama.cpp 0c1e57098 layers them.
//!
//! * Built-in: `common_params_sampling` (common/common.h), [`ServerParams::default`].
//! * Operator flags: common/arg.cpp parses `--temp`, `--top-k`, … into
//!   `params.sampling` and sets a bit of `user_sampling_config` for the
//!   twelve fields a model may also set (lines 1990–2242). Values are read
//!   with `std::stof` (a float prefix; trailing text is ignored) and
//!   `std::stoi` (out of `int` range is an error); `--temp` is clamped to
//!   ≥ 0, `--repeat-last-n` < 0 and a non-finite or ≤ 0 `--repeat-penalty`
//!   stop the server. A flag given twice keeps its last value; `--top_k` is
//!   `--top-k` (a `--` argument's `_` become `-`, line 824). `--sampler-seq`
//!   does **not** set the `SAMPLERS` bit, so a model's
//!   `general.sampling.sequence` replaces it; `--samplers` does set it.
//!   `-bs`/`--backend-sampling` (no value, lines 2306–2311) turns
//!   `backend_sampling` on for every request that leaves it out.
//! * The model file: common/common.cpp `common_init_sampler_from_model`
//!   (lines 1118–1176) reads, for every field whose bit is unset,
//!   `general.sampling.{sequence, top_k, top_p, min_p, xtc_probability,
//!   xtc_threshold, temp, penalty_last_n, penalty_repeat, mirostat,
//!   mirostat_tau, mirostat_eta}` (src/llama-arch.cpp lines 171–182). It
//!   reads each as the **text** `gguf_kv_to_str` makes of it
//!   (src/llama-impl.cpp: `std::to_string`, so a float has six decimals and
//!   `0.1234567` becomes `0.123457`; a string is itself; a bool is
//!   `true`/`false`, which no number parse takes; arrays are not kept,
//!   src/llama-model.cpp line 1303), cut to the buffer (63 bytes for an int,
//!   127 for a float, 511 for the sequence), then `strtol`/`strtof`: a key of
//!   any type whose text starts with a number sets the field, others are
//!   ignored. No clamp applies (a model's negative temperature stays).
//!   tools/server/server-context.cpp line 1368 copies the result back
//!   (`params = params_base`), so both `/props` and every request start
//!   from it (`eval_llama_cmpl_schema`, tools/server/server-schema.cpp
//!   line 527); a request field then replaces the default.
//!
//! Not read here: `/etc/llama.cpp/config.ini` and the user-level
//! `config.ini` (common/arg.cpp `common_params_apply_system_config`), the
//! `LLAMA_ARG_*` environment variables and `--models-preset` files; flags
//! that do not shape the distribution reproduced (mirostat, DRY, grammars)
//! are refused.

use std::collections::BTreeMap;

use parity_core::gguf::{GgufMetadata, GgufValue};
use parity_core::{Error, FieldSource};

use crate::params::{SamplerType, ServerParams};

/// The `general.sampling.*` keys llama.cpp reads (src/llama-arch.cpp).
pub const GGUF_SAMPLING_KEYS: &[&str] = &[
    "general.sampling.sequence",
    "general.sampling.top_k",
    "general.sampling.top_p",
    "general.sampling.min_p",
    "general.sampling.xtc_probability",
    "general.sampling.xtc_threshold",
    "general.sampling.temp",
    "general.sampling.penalty_last_n",
    "general.sampling.penalty_repeat",
    "general.sampling.mirostat",
    "general.sampling.mirostat_tau",
    "general.sampling.mirostat_eta",
];

/// The server's defaults for absent request fields, with where each came from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServerDefaults {
    pub(crate) params: ServerParams,
    /// Request field name → where its default came from (only the fields
    /// that are not the built-in default are listed).
    sources: BTreeMap<&'static str, FieldSource>,
    /// `general.sampling.*` keys the file has, as llama.cpp read them.
    pub(crate) notes: Vec<String>,
}

/// One of the twelve fields a model may set, and its request field name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Field {
    Samplers,
    TopK,
    TopP,
    MinP,
    XtcProbability,
    XtcThreshold,
    Temp,
    PenaltyLastN,
    PenaltyRepeat,
    Mirostat,
    MirostatTau,
    MirostatEta,
}

impl Field {
    /// Every field, in llama.cpp's order of reading them
    /// (`common_init_sampler_from_model`).
    const ALL: [Field; 12] = [
        Field::Samplers,
        Field::TopK,
        Field::TopP,
        Field::MinP,
        Field::XtcProbability,
        Field::XtcThreshold,
        Field::Temp,
        Field::PenaltyLastN,
        Field::PenaltyRepeat,
        Field::Mirostat,
        Field::MirostatTau,
        Field::MirostatEta,
    ];

    fn request_name(self) -> &'static str {
        match self {
            Field::Samplers => "samplers",
            Field::TopK => "top_k",
            Field::TopP => "top_p",
            Field::MinP => "min_p",
            Field::XtcProbability => "xtc_probability",
            Field::XtcThreshold => "xtc_threshold",
            Field::Temp => "temperature",
            Field::PenaltyLastN => "repeat_last_n",
            Field::PenaltyRepeat => "repeat_penalty",
            Field::Mirostat => "mirostat",
            Field::MirostatTau => "mirostat_tau",
            Field::MirostatEta => "mirostat_eta",
        }
    }

    fn gguf_key(self) -> &'static str {
        GGUF_SAMPLING_KEYS[self as usize]
    }
}

/// The sampling flags modelled, with what each sets.
const FLAGS: &[&str] = &[
    "--temp",
    "--temperature",
    "--top-k",
    "--top-p",
    "--min-p",
    "--xtc-probability",
    "--xtc-threshold",
    "--typical",
    "--typical-p",
    "--top-nsigma",
    "--top-n-sigma",
    "--repeat-last-n",
    "--repeat-penalty",
    "--presence-penalty",
    "--frequency-penalty",
    "--dynatemp-range",
    "--dynatemp-exp",
    "--samplers",
    "--sampler-seq",
    "--sampling-seq",
    "-s",
    "--seed",
    "-bs",
    "--backend-sampling",
];

impl ServerDefaults {
    /// The defaults of a llama-server started with `flags` (its command-line
    /// arguments, whitespace-separated, sampling flags only) on a model whose
    /// metadata is `gguf`.
    pub fn new(gguf: Option<&GgufMetadata>, flags: Option<&str>) -> Result<Self, Error> {
        let mut d = Self::default();
        let mut user: Vec<Field> = Vec::new();
        if let Some(flags) = flags {
            d.apply_flags(flags, &mut user)?;
        }
        if let Some(m) = gguf {
            d.apply_gguf(m, &user);
        }
        Ok(d)
    }

    /// Where the default of request field `name` came from.
    pub fn source(&self, name: &str) -> FieldSource {
        self.sources
            .get(name)
            .copied()
            .unwrap_or(FieldSource::EngineDefault)
    }

    /// The fields whose default is not built in, with their source.
    pub fn layered(&self) -> impl Iterator<Item = (&'static str, FieldSource)> + '_ {
        self.sources.iter().map(|(k, v)| (*k, *v))
    }

    fn apply_flags(&mut self, flags: &str, user: &mut Vec<Field>) -> Result<(), Error> {
        let mut args = flags.split_whitespace();
        while let Some(raw) = args.next() {
            let flag = if raw.starts_with("--") {
                raw.replace('_', "-")
            } else {
                raw.to_string()
            };
            if !FLAGS.contains(&flag.as_str()) {
                return Err(Error::new(format_args!(
                    "--server-args: `{raw}` is not modelled (only llama-server's sampling flags that shape the distribution reproduced are: {}; mirostat, DRY and grammars replace or need what is not reproduced, and other flags do not change sampling, so leave them out)",
                    FLAGS.join(" ")
                )));
            }
            if matches!(flag.as_str(), "-bs" | "--backend-sampling") {
                // common/arg.cpp lines 2306-2311 (2309-2314 at b11434): no
                // value, sets the default of the request's `backend_sampling`
                self.params.backend_sampling = true;
                self.sources
                    .insert("backend_sampling", FieldSource::OperatorFlag);
                continue;
            }
            let Some(value) = args.next() else {
                return Err(Error::new(format_args!(
                    "--server-args: `{raw}` needs a value (llama-server: expected value for argument)"
                )));
            };
            let bad = |why: &str| {
                Error::new(format_args!(
                    "--server-args: `{raw} {value}`: llama-server refuses to start ({why})"
                ))
            };
            let float = || stof(value).ok_or_else(|| bad("std::stof: no number"));
            let mut set = |field: Field, me: &mut Self| {
                user.push(field);
                me.sources
                    .insert(field.request_name(), FieldSource::OperatorFlag);
            };
            let p = &mut self.params;
            match flag.as_str() {
                "--temp" | "--temperature" => {
                    p.temp = float()?.max(0.0);
                    set(Field::Temp, self);
                }
                "--top-k" => {
                    p.top_k = stoi(value).ok_or_else(|| bad("std::stoi: not an int"))?;
                    set(Field::TopK, self);
                }
                "--top-p" => {
                    p.top_p = float()?;
                    set(Field::TopP, self);
                }
                "--min-p" => {
                    p.min_p = float()?;
                    set(Field::MinP, self);
                }
                "--xtc-probability" => {
                    p.xtc_probability = float()?;
                    set(Field::XtcProbability, self);
                }
                "--xtc-threshold" => {
                    p.xtc_threshold = float()?;
                    set(Field::XtcThreshold, self);
                }
                "--repeat-last-n" => {
                    let n = stoi(value).ok_or_else(|| bad("std::stoi: not an int"))?;
                    if n < 0 {
                        return Err(bad("invalid repeat-last-n"));
                    }
                    p.penalty_last_n = n;
                    set(Field::PenaltyLastN, self);
                }
                "--repeat-penalty" => {
                    let x = float()?;
                    if !x.is_finite() || x <= 0.0 || !(1.0 / x).is_finite() {
                        return Err(bad("repeat-penalty must be finite and greater than 0"));
                    }
                    p.penalty_repeat = x;
                    set(Field::PenaltyRepeat, self);
                }
                "--samplers" => {
                    p.samplers = value
                        .split(';')
                        .filter_map(SamplerType::from_name)
                        .collect();
                    set(Field::Samplers, self);
                }
                other => {
                    // Flags without a user_sampling_config bit: no model key
                    // competes with them (or, for --sampler-seq, the model's
                    // sequence replaces them).
                    match other {
                        "--typical" | "--typical-p" => p.typ_p = float()?,
                        "--top-nsigma" | "--top-n-sigma" => p.top_n_sigma = float()?,
                        "--dynatemp-range" => p.dynatemp_range = float()?,
                        "--dynatemp-exp" => p.dynatemp_exponent = float()?,
                        "--presence-penalty" | "--frequency-penalty" => {
                            let v = float()?;
                            if !v.is_finite() {
                                return Err(bad("the penalty must be finite"));
                            }
                            if other == "--presence-penalty" {
                                p.penalty_present = v;
                            } else {
                                p.penalty_freq = v;
                            }
                        }
                        "--sampler-seq" | "--sampling-seq" => {
                            p.samplers = value.chars().filter_map(SamplerType::from_char).collect();
                        }
                        _ => {
                            // -s / --seed: std::stoul
                            let s = value.trim_start();
                            let n: u64 = s
                                .parse()
                                .map_err(|_| bad("std::stoul: not an unsigned integer"))?;
                            p.seed = n as u32;
                        }
                    }
                    let name = match other {
                        "--typical" | "--typical-p" => "typical_p",
                        "--top-nsigma" | "--top-n-sigma" => "top_n_sigma",
                        "--dynatemp-range" => "dynatemp_range",
                        "--dynatemp-exp" => "dynatemp_exponent",
                        "--presence-penalty" => "presence_penalty",
                        "--frequency-penalty" => "frequency_penalty",
                        "--sampler-seq" | "--sampling-seq" => "samplers",
                        _ => "seed",
                    };
                    self.sources.insert(name, FieldSource::OperatorFlag);
                }
            }
        }
        Ok(())
    }

    fn apply_gguf(&mut self, m: &GgufMetadata, user: &[Field]) {
        use Field::*;
        for field in Field::ALL {
            let key = field.gguf_key();
            let Some(value) = m.get(key) else { continue };
            let Some(text) = kv_to_str(value) else {
                self.notes
                    .push(format!("{key} is an array: llama.cpp does not read it"));
                continue;
            };
            if user.contains(&field) {
                self.notes
                    .push(format!("{key} = {text} is replaced by the operator's flag"));
                continue;
            }
            let buf = match field {
                Samplers => 511,
                TopK | PenaltyLastN | Mirostat => 63,
                _ => 127,
            };
            let text = cut(&text, buf);
            let p = &mut self.params;
            let applied = match field {
                Samplers => {
                    // string_split on ';' never returns an empty list, so
                    // the sequence always replaces the default.
                    p.samplers = text.split(';').filter_map(SamplerType::from_name).collect();
                    true
                }
                TopK | PenaltyLastN | Mirostat => match strtol(text) {
                    Some(v) => {
                        match field {
                            TopK => p.top_k = v,
                            PenaltyLastN => p.penalty_last_n = v,
                            _ => p.mirostat = v,
                        }
                        true
                    }
                    None => false,
                },
                _ => match stof(text) {
                    Some(v) => {
                        match field {
                            TopP => p.top_p = v,
                            MinP => p.min_p = v,
                            XtcProbability => p.xtc_probability = v,
                            XtcThreshold => p.xtc_threshold = v,
                            Temp => p.temp = v,
                            PenaltyRepeat => p.penalty_repeat = v,
                            // mirostat_tau/eta only act under mirostat,
                            // which is refused.
                            _ => {}
                        }
                        true
                    }
                    None => false,
                },
            };
            if applied {
                self.sources
                    .insert(field.request_name(), FieldSource::ModelFile);
                self.notes
                    .push(format!("{key} = {text} (from the model file)"));
            } else {
                self.notes.push(format!(
                    "{key} = {text:?} does not start with a number: llama.cpp ignores it"
                ));
            }
        }
    }
}

/// `gguf_kv_to_str` for a value llama.cpp keeps (`None`: an array).
fn kv_to_str(v: &GgufValue) -> Option<String> {
    Some(match v {
        GgufValue::Uint(_, u) => u.to_string(),
        GgufValue::Int(_, i) => i.to_string(),
        GgufValue::F32(x) => c_fixed6(f64::from(*x)),
        GgufValue::F64(x) => c_fixed6(*x),
        GgufValue::Bool(b) => b.to_string(),
        GgufValue::String(s) => s.clone(),
        GgufValue::Array(..) => return None,
    })
}

/// C's `%f` (`std::to_string` of a float or double): six decimals, `inf`,
/// `nan` with its sign.
fn c_fixed6(x: f64) -> String {
    if x.is_nan() {
        return if x.is_sign_negative() { "-nan" } else { "nan" }.into();
    }
    if x.is_infinite() {
        return if x < 0.0 { "-inf" } else { "inf" }.into();
    }
    format!("{x:.6}")
}

/// `snprintf(buf, n + 1, "%s", s)`: the first `n` bytes.
fn cut(s: &str, n: usize) -> &str {
    if s.len() <= n {
        return s;
    }
    let mut end = n;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// `strtol(s, &end, 10)` assigned to an `int32_t`, when it read a number:
/// leading whitespace, a sign, decimal digits; saturated at the `long`
/// range, then the low 32 bits (x86-64).
fn strtol(s: &str) -> Option<i32> {
    let t = s.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let (neg, digits) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let n = digits.bytes().take_while(u8::is_ascii_digit).count();
    if n == 0 {
        return None;
    }
    let mut v: i128 = 0;
    for b in digits[..n].bytes() {
        v = (v * 10 + i128::from(b - b'0')).min(i128::from(i64::MAX) + 1);
    }
    let v = if neg { -v } else { v };
    let long = v.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64;
    Some(long as i32)
}

/// `std::stoi`: `strtol` that must read a number and fit an `int`.
fn stoi(s: &str) -> Option<i32> {
    let t = s.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let end = t
        .char_indices()
        .take_while(|(i, c)| c.is_ascii_digit() || (*i == 0 && (*c == '-' || *c == '+')))
        .count();
    t[..end].parse::<i32>().ok()
}

/// `strtof`'s value when it reads a number from the start of `s` (decimal
/// floats, `inf`, `infinity`, `nan`; hexadecimal floats are read as their
/// leading `0`, which is not what glibc does, and no model file writes one).
fn stof(s: &str) -> Option<f32> {
    let t = s.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let b = t.as_bytes();
    let mut i = 0;
    if matches!(b.first(), Some(b'+' | b'-')) {
        i = 1;
    }
    let rest = t[i..].to_ascii_lowercase();
    for word in ["infinity", "inf", "nan"] {
        if rest.starts_with(word) {
            let v = if word == "nan" {
                f32::NAN
            } else {
                f32::INFINITY
            };
            return Some(if b.first() == Some(&b'-') { -v } else { v });
        }
    }
    let digits = |i: &mut usize| {
        let s = *i;
        while b.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i - s
    };
    let mut n = digits(&mut i);
    if b.get(i) == Some(&b'.') {
        i += 1;
        n += digits(&mut i);
    }
    if n == 0 {
        return None;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        let mut j = i + 1;
        if matches!(b.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        if digits(&mut j) > 0 {
            i = j;
        }
    }
    // Rust's parse is correctly rounded, as glibc's strtof is.
    t[..i].parse::<f32>().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_number_reading() {
        assert_eq!(strtol("20.000000"), Some(20));
        assert_eq!(strtol("  -3x"), Some(-3));
        assert_eq!(strtol("true"), None);
        assert_eq!(strtol("4294967299"), Some(3));
        assert_eq!(stof("0.950000"), Some(0.95));
        assert_eq!(stof("1e-3abc"), Some(0.001));
        assert_eq!(stof("5."), Some(5.0));
        assert_eq!(stof("1e"), Some(1.0));
        assert_eq!(stof("false"), None);
        assert_eq!(stoi("25"), Some(25));
        assert_eq!(stoi("99999999999"), None);
        assert_eq!(c_fixed6(f64::from(0.123_456_79_f32)), "0.123457");
    }
}
