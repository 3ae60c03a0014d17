//! The record every semantics reads, and the logits in it.
//!
//! One JSON object per line (`compare dist`, `compare diff`):
//!
//! ```json
//! {"logits": [3, 2, "-inf"], "input_ids": [1, 2], "prompt_len": 1, "params": {"top_k": 2}}
//! ```
//!
//! `logits`, `input_ids` and `prompt_len` mean the same for every semantics
//! and are parsed here, once; `params` is the semantics' own business
//! ([`crate::semantics::Semantics::parse_params`]). Unknown top-level fields
//! are refused, so a misspelt `input_ids` cannot silently mean "no context".
//!
//! Python's `json.dumps` writes `-Infinity`, `Infinity` and `NaN`, which are
//! not JSON. Outside strings they are read as the strings `"-inf"`, `"inf"`
//! and `"nan"` ([`python_floats`]), so `-Infinity` is accepted wherever
//! `"-inf"` is; a logit of `Infinity` or `NaN` is refused with its index,
//! quoted as `"inf"` or `"nan"` (fixtures refuse them too), and a parameter
//! reads them as its semantics reads those strings.

use std::borrow::Cow;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, SeqAccess, Visitor};
use serde_json::{Map, Value};

use crate::semantics::Error;

/// One step's logits as the record wrote them: finite numbers or `-inf`, in
/// f64 (a JSON number's own precision). Engines that compute in f32 read
/// them with [`Logits::to_f32`], which refuses values f32 cannot hold.
#[derive(Debug, Clone, PartialEq)]
pub struct Logits(Vec<f64>);

impl Logits {
    /// f32 logits (a fixture's), widened exactly.
    pub fn from_f32(values: &[f32]) -> Self {
        Self(values.iter().map(|&x| f64::from(x)).collect())
    }

    /// The values, in f64.
    pub fn as_f64(&self) -> &[f64] {
        &self.0
    }

    /// Vocabulary size.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// No logits at all.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The logits as f32, as transformers and candle hold them: `-inf`, or
    /// finite values that fit in f32. Errors name the index and quote the value.
    pub fn to_f32(&self) -> Result<Vec<f32>, Error> {
        // One plain pass (it vectorises), the error path only when it fails.
        let fits = |x: f64| (x as f32).is_finite() || x == f64::NEG_INFINITY;
        if self.0.iter().all(|&x| fits(x)) {
            return Ok(self.0.iter().map(|&x| x as f32).collect());
        }
        self.0
            .iter()
            .enumerate()
            .map(|(i, &x)| {
                let y = x as f32;
                if fits(x) {
                    Ok(y)
                } else if x.is_nan() {
                    Err(Error::new(format_args!(
                        "`logits[{i}]` is NaN: a logit is a number (-inf masks a token)"
                    )))
                } else if x == f64::INFINITY {
                    Err(Error::new(format_args!(
                        "`logits[{i}]` is +inf: only -inf (a masked token) is allowed"
                    )))
                } else {
                    Err(Error::new(format_args!(
                        "`logits[{i}]` = {x:e} does not fit in float32"
                    )))
                }
            })
            .collect()
    }
}

/// One `compare dist` record: the logits, the context and the semantics'
/// own parameters. Unknown top-level fields are refused so a misspelt
/// `input_ids` cannot silently mean "no context".
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Record {
    /// Logits: numbers or the string `"-inf"`.
    pub logits: RawLogits,
    /// The context (prompt and generated tokens so far).
    #[serde(default)]
    pub input_ids: Vec<Value>,
    /// How many of `input_ids` are prompt; absent: all of them.
    #[serde(default)]
    pub prompt_len: Option<Value>,
    /// The semantics' parameters.
    #[serde(default)]
    pub params: Map<String, Value>,
    /// The user's own probabilities for these logits (`compare check`
    /// only; [`Record::parse`] refuses them).
    #[serde(default)]
    pub probs: Option<RawLogits>,
    /// The same as natural logarithms (`-inf` for a token never drawn).
    #[serde(default)]
    pub logprobs: Option<RawLogits>,
}

/// What a record is, for messages about input that is not one.
pub const RECORD_SHAPE: &str = "a record is one JSON object per line, such as \
     {\"logits\": [3, 2, \"-inf\"], \"params\": {\"top_k\": 2}} (fields: logits, params, \
     input_ids, prompt_len)";

impl Record {
    /// Parses one line (Python's `-Infinity`, `Infinity` and `NaN` read as
    /// [`python_floats`] says).
    /// A bare JSON array (`[[3, 2, 1], [1, 2, 0]]`, a torch dump) is
    /// refused with what a record is: serde would otherwise read it by
    /// position as `[logits, input_ids, ...]`.
    pub fn parse(line: &[u8]) -> Result<Self, String> {
        let record = Self::parse_with_probs(line)?;
        for (field, value) in [("probs", &record.probs), ("logprobs", &record.logprobs)] {
            if value.is_some() {
                return Err(format!(
                    "invalid record: `{field}` is read by `compare check` (your own \
                     probabilities against a semantics); this command computes them"
                ));
            }
        }
        Ok(record)
    }

    /// [`Record::parse`], also reading `probs` or `logprobs` (`compare check`).
    pub fn parse_with_probs(line: &[u8]) -> Result<Self, String> {
        // Anything else that is not an object serde refuses itself.
        if line.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[') {
            return Err(format!(
                "invalid record: a bare JSON array, not a record; {RECORD_SHAPE}"
            ));
        }
        serde_json::from_slice(&python_floats(line)).map_err(|e| format!("invalid record: {e}"))
    }

    /// The context as integers, naming the first entry that is not one.
    pub fn input_ids(&self) -> Result<Vec<i64>, String> {
        self.input_ids
            .iter()
            .enumerate()
            .map(|(i, v)| {
                v.as_i64()
                    .ok_or_else(|| format!("`input_ids[{i}]` must be an integer, got {v}"))
            })
            .collect()
    }

    /// `prompt_len` as a count, naming the value when it is not one.
    pub fn prompt_len(&self) -> Result<Option<usize>, String> {
        match &self.prompt_len {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v
                .as_u64()
                .and_then(|n| usize::try_from(n).ok())
                .map(Some)
                .ok_or_else(|| format!("`prompt_len` must be a non-negative integer, got {v}")),
        }
    }
}

/// `line` with the tokens Python's `json.dumps` writes for non-finite floats
/// (`-Infinity`, `Infinity`, `NaN`), outside strings, replaced by the strings
/// `"-inf"`, `"inf"` and `"nan"`. Borrowed when there are none. Text that is
/// not JSON stays not JSON (serde_json then says where).
pub fn python_floats(line: &[u8]) -> Cow<'_, [u8]> {
    const TOKENS: [(&[u8], &[u8]); 3] = [
        (b"-Infinity", b"\"-inf\""),
        (b"Infinity", b"\"inf\""),
        (b"NaN", b"\"nan\""),
    ];
    let mut out: Option<Vec<u8>> = None;
    let (mut in_string, mut escaped) = (false, false);
    let mut i = 0;
    while i < line.len() {
        let b = line[i];
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
        } else if b == b'"' {
            in_string = true;
        } else if let Some((token, text)) = TOKENS.iter().find(|(t, _)| line[i..].starts_with(t)) {
            let out = out.get_or_insert_with(|| line[..i].to_vec());
            out.extend_from_slice(text);
            i += token.len();
            continue;
        }
        if let Some(out) = &mut out {
            out.push(b);
        }
        i += 1;
    }
    match out {
        Some(v) => Cow::Owned(v),
        None => Cow::Borrowed(line),
    }
}

/// Logits as written in the record, before any semantics decides which
/// precision they are read in.
#[derive(Debug, Default)]
pub struct RawLogits(Vec<RawLogit>);

/// One logit as written: a number, or a string (only `"-inf"` is valid).
#[derive(Debug, Clone, PartialEq)]
pub enum RawLogit {
    /// A JSON number.
    Number(f64),
    /// A JSON string.
    Text(String),
    /// Any other JSON value, described.
    Other(&'static str),
}

impl RawLogits {
    /// The logits as written: any JSON number, or `"-inf"`. Errors name the
    /// index and quote the value; an empty array is an error too.
    pub fn to_logits(&self) -> Result<Logits, String> {
        self.convert("logits", |_, x| Ok(x)).map(Logits)
    }

    /// The numbers of field `field` (`probs`, `logprobs`): any JSON number
    /// or `"-inf"`, named by field and index otherwise.
    pub fn to_f64(&self, field: &str) -> Result<Vec<f64>, String> {
        self.convert(field, |_, x| Ok(x))
    }

    /// Numbers through `number(index, value)`, `"-inf"` to -inf, anything
    /// else an error naming its index; an empty array is an error too.
    fn convert<T: From<f32>>(
        &self,
        field: &str,
        number: impl Fn(usize, f64) -> Result<T, String>,
    ) -> Result<Vec<T>, String> {
        if self.0.is_empty() {
            return Err(format!("`{field}` must not be empty"));
        }
        self.0
            .iter()
            .enumerate()
            .map(|(i, raw)| match raw {
                RawLogit::Number(x) => number(i, *x),
                RawLogit::Text(s) if s == "-inf" => Ok(T::from(f32::NEG_INFINITY)),
                RawLogit::Text(s) => Err(not_a_number(field, i, &format!("{s:?}"))),
                RawLogit::Other(what) => Err(not_a_number(field, i, what)),
            })
            .collect()
    }
}

/// The error for an entry that is neither a number nor `"-inf"`.
fn not_a_number(field: &str, index: usize, got: &str) -> String {
    format!("`{field}[{index}]` must be a finite number or the string \"-inf\", got {got}")
}

impl Logits {
    /// Logits from numbers a program holds (a NumPy array, a binary file's
    /// row): finite or `-inf`; NaN and `+inf` are refused with their index,
    /// in the words the JSON reader uses.
    pub fn from_f64(values: Vec<f64>) -> Result<Self, String> {
        if values.is_empty() {
            return Err("`logits` must not be empty".into());
        }
        if let Some(i) = values
            .iter()
            .position(|x| x.is_nan() || *x == f64::INFINITY)
        {
            let got = if values[i].is_nan() { "nan" } else { "inf" };
            return Err(not_a_number("logits", i, &format!("{got:?}")));
        }
        Ok(Self(values))
    }
}

impl<'de> Deserialize<'de> for RawLogits {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Seq;
        impl<'de> Visitor<'de> for Seq {
            type Value = RawLogits;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an array of numbers or \"-inf\"")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<RawLogits, A::Error> {
                let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1 << 20));
                while let Some(x) = seq.next_element::<RawLogit>()? {
                    out.push(x);
                }
                Ok(RawLogits(out))
            }
        }
        d.deserialize_seq(Seq)
    }
}

impl<'de> Deserialize<'de> for RawLogit {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct One;
        impl<'de> Visitor<'de> for One {
            type Value = RawLogit;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a number or \"-inf\"")
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<RawLogit, E> {
                Ok(RawLogit::Number(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<RawLogit, E> {
                Ok(RawLogit::Number(v as f64))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<RawLogit, E> {
                Ok(RawLogit::Number(v as f64))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RawLogit, E> {
                Ok(RawLogit::Text(v.to_string()))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<RawLogit, E> {
                Ok(RawLogit::Other("a boolean"))
            }
            fn visit_unit<E: de::Error>(self) -> Result<RawLogit, E> {
                Ok(RawLogit::Other("null"))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<RawLogit, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(RawLogit::Other("an array"))
            }
            fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<RawLogit, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(RawLogit::Other("an object"))
            }
        }
        d.deserialize_any(One)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn logits(line: &str) -> Result<Logits, String> {
        Record::parse(line.as_bytes())?.logits.to_logits()
    }

    #[test]
    fn overflowing_and_odd_logits_name_their_index() {
        let big = logits(r#"{"logits": [0, 1e39]}"#).expect("f64 holds 1e39");
        assert_eq!(
            big.to_f32().unwrap_err().to_string(),
            "`logits[1]` = 1e39 does not fit in float32"
        );
        assert_eq!(
            logits(r#"{"logits": [0, true]}"#).unwrap_err(),
            "`logits[1]` must be a finite number or the string \"-inf\", got a boolean"
        );
        assert_eq!(
            logits(r#"{"logits": []}"#).unwrap_err(),
            "`logits` must not be empty"
        );
        let with_inf = logits(r#"{"logits": [1, "-inf"]}"#).expect("valid");
        assert_eq!(
            with_inf.to_f32().expect("fits"),
            vec![1.0, f32::NEG_INFINITY]
        );
    }

    #[test]
    fn python_json_dumps_non_finite_floats_are_read() {
        // json.dumps([1.0, float("-inf")]) == "[1.0, -Infinity]"
        let l = logits(r#"{"logits": [1.0, -Infinity], "params": {"x": "NaN -Infinity"}}"#)
            .expect("-Infinity is -inf");
        assert_eq!(l.to_f32().expect("fits"), vec![1.0, f32::NEG_INFINITY]);
        // Inside a string nothing changes (escaped quotes included).
        let r = Record::parse(br#"{"logits": [0], "params": {"x": "a\"NaN"}}"#).expect("valid");
        assert_eq!(r.params["x"], "a\"NaN");
        // +inf and NaN logits are refused with their index, as the strings are.
        assert_eq!(
            logits(r#"{"logits": [0, Infinity]}"#).unwrap_err(),
            "`logits[1]` must be a finite number or the string \"-inf\", got \"inf\""
        );
        assert_eq!(
            logits(r#"{"logits": [NaN]}"#).unwrap_err(),
            "`logits[0]` must be a finite number or the string \"-inf\", got \"nan\""
        );
        // Parameters read the strings as their semantics reads them.
        let r = Record::parse(br#"{"logits": [0], "params": {"bias": [NaN, Infinity]}}"#)
            .expect("valid");
        assert_eq!(r.params["bias"], serde_json::json!(["nan", "inf"]));
        assert!(matches!(python_floats(b"[1, 2]"), Cow::Borrowed(_)));
    }

    #[test]
    fn prompt_len_is_a_count() {
        let r = Record::parse(br#"{"logits": [0], "input_ids": [1, 2], "prompt_len": 1}"#)
            .expect("valid");
        assert_eq!(r.prompt_len(), Ok(Some(1)));
        let r = Record::parse(br#"{"logits": [0], "prompt_len": -1}"#).expect("valid JSON");
        assert_eq!(
            r.prompt_len().unwrap_err(),
            "`prompt_len` must be a non-negative integer, got -1"
        );
    }

    #[test]
    fn a_bare_array_is_not_a_record() {
        // serde would read it by position as [logits, input_ids]: a greedy record.
        for line in ["[[3,2,1],[1,2,0]]", " [[0.1, 0.2]]", "[]"] {
            let err = Record::parse(line.as_bytes()).unwrap_err();
            assert!(err.contains(RECORD_SHAPE), "{line}: {err}");
        }
        let err = Record::parse(b"[[3,2,1],[1,2,0]]").unwrap_err();
        assert!(
            err.starts_with("invalid record: a bare JSON array"),
            "{err}"
        );
    }

    #[test]
    fn probs_are_for_check_only() {
        let line = br#"{"logits": [0, 1], "probs": [0.25, 0.75]}"#;
        let err = Record::parse(line).unwrap_err();
        assert!(err.contains("`probs` is read by `compare check`"), "{err}");
        let r = Record::parse_with_probs(line).expect("check reads them");
        let probs = r.probs.expect("present").to_f64("probs").expect("numbers");
        assert_eq!(probs, vec![0.25, 0.75]);
        let r = Record::parse_with_probs(br#"{"logits": [0], "logprobs": [true]}"#).expect("JSON");
        assert_eq!(
            r.logprobs.expect("present").to_f64("logprobs").unwrap_err(),
            "`logprobs[0]` must be a finite number or the string \"-inf\", got a boolean"
        );
        assert_eq!(
            Logits::from_f64(vec![0.0, f64::NAN]).unwrap_err(),
            "`logits[1]` must be a finite number or the string \"-inf\", got \"nan\""
        );
    }

    #[test]
    fn unknown_fields_are_refused() {
        let err = Record::parse(br#"{"logits": [0], "input_id": []}"#).unwrap_err();
        assert!(err.contains("unknown field `input_id`"), "{err}");
    }
}
