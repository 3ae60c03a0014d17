//! Text that reaches a terminal: one escaping rule for every binary.
//!
//! Fixture metadata, record keys and token strings come from files a user
//! hands us. Printed raw, a newline in them could forge report lines and an
//! escape sequence could drive the terminal, so control characters are
//! written as Rust escapes (`\n`, `\u{1b}`). Whitespace other than the plain
//! space and the invisible format characters (zero-width and bidirectional
//! marks, which can reorder what a terminal shows) are escaped too
//! (`\u{a0}`, `\u{202e}`): a token that is a no-break space must not look
//! like one that is a space. JSON output needs none of this: serde_json
//! escapes its strings itself.

use std::borrow::Cow;

/// Whether `c` is written as an escape.
fn needs_escape(c: char) -> bool {
    c.is_control()
        || (c.is_whitespace() && c != ' ')
        || matches!(
            c,
            '\u{ad}' | '\u{61c}' | '\u{180e}' | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}'
                | '\u{2060}'..='\u{2064}' | '\u{2066}'..='\u{2069}' | '\u{feff}'
        )
}

/// `s` with every character `escape` picks written as a Rust escape.
fn escape_with(s: &str, escape: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !s.chars().any(&escape) {
        return s.into();
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if escape(c) {
            // \n, \t, \r, \", \\ and \u{..} for the rest.
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out.into()
}

/// `s` with control characters, whitespace other than the space, and
/// invisible format characters escaped; borrowed when there are none.
pub fn one_line(s: &str) -> Cow<'_, str> {
    escape_with(s, needs_escape)
}

/// `s` in double quotes, escaped as [`one_line`] and with `"` and `\`
/// escaped too, so the quotes delimit it: `" the"`, `"\n"`, `"\""`.
pub fn quoted(s: &str) -> String {
    format!(
        "\"{}\"",
        escape_with(s, |c| needs_escape(c) || c == '"' || c == '\\')
    )
}

/// `repr(float(x))` in Python, which engines written in Python (transformers,
/// vLLM) quote in their messages: shortest round-trip digits, positional for
/// exponents in [-4, 16), scientific (`1e-05`, `1.5e+16`) otherwise.
pub fn python_float_repr(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.into();
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0.0" } else { "0.0" }.into();
    }
    // Rust's `{:e}` gives the shortest round-trip digits, like Python's repr.
    let sci = format!("{:e}", x.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let sign = if x < 0.0 { "-" } else { "" };
    if (-4..16).contains(&exp) {
        let n = digits.len() as i32;
        let body = if exp < 0 {
            format!("0.{}{}", "0".repeat((-exp - 1) as usize), digits)
        } else if exp + 1 >= n {
            format!("{}{}.0", digits, "0".repeat((exp + 1 - n) as usize))
        } else {
            let (a, b) = digits.split_at((exp + 1) as usize);
            format!("{a}.{b}")
        };
        format!("{sign}{body}")
    } else {
        let (first, rest) = digits.split_at(1);
        let mant = if rest.is_empty() {
            first.to_string()
        } else {
            format!("{first}.{rest}")
        };
        let esign = if exp < 0 { '-' } else { '+' };
        format!("{sign}{mant}e{esign}{:02}", exp.abs())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_python_repr() {
        // Expected strings are Python 3 `repr(float)` outputs.
        for (x, s) in [
            (0.7, "0.7"),
            (1.0, "1.0"),
            (-0.5, "-0.5"),
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (100.0, "100.0"),
            (1e-4, "0.0001"),
            (1e-5, "1e-05"),
            (1.5e-7, "1.5e-07"),
            (1e15, "1000000000000000.0"),
            (1e16, "1e+16"),
            (123.456, "123.456"),
            (0.1 + 0.2, "0.30000000000000004"),
            (f64::INFINITY, "inf"),
        ] {
            assert_eq!(python_float_repr(x), s, "repr({x})");
        }
    }

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(one_line("a\nb\u{1b}[31mc"), "a\\nb\\u{1b}[31mc");
        assert!(matches!(one_line("ĠAI \"quoted\""), Cow::Borrowed(_)));
    }

    #[test]
    fn invisible_characters_are_escaped_and_visible_ones_kept() {
        // no-break space, ideographic space, right-to-left override, zero-width space
        assert_eq!(
            one_line("a\u{a0}b\u{3000}c\u{202e}d\u{200b}"),
            "a\\u{a0}b\\u{3000}c\\u{202e}d\\u{200b}"
        );
        assert_eq!(one_line("大 “x”"), "大 “x”");
    }

    #[test]
    fn quoted_escapes_its_delimiters() {
        assert_eq!(quoted(" the"), "\" the\"");
        assert_eq!(quoted("\t\"\\"), r#""\t\"\\""#);
        assert_eq!(quoted(""), "\"\"");
    }
}
