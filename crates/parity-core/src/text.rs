//! Text that reaches a terminal: one escaping rule for every binary.
//!
//! Fixture metadata, record keys and token strings come from files a user
//! hands us. Printed raw, a newline in them could forge report lines and an
//! escape sequence could drive the terminal, so control characters are
//! written as Rust escapes (`\n`, `\u{1b}`). JSON output needs none of this:
//! serde_json escapes its strings itself.

use std::borrow::Cow;

/// `s` with control characters escaped; borrowed when there are none.
pub fn one_line(s: &str) -> Cow<'_, str> {
    if s.chars().any(char::is_control) {
        s.chars()
            .flat_map(|c| {
                let escaped: Vec<char> = if c.is_control() {
                    c.escape_default().collect()
                } else {
                    vec![c]
                };
                escaped
            })
            .collect::<String>()
            .into()
    } else {
        s.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(one_line("a\nb\u{1b}[31mc"), "a\\nb\\u{1b}[31mc");
        assert!(matches!(one_line("ĠAI \"quoted\""), Cow::Borrowed(_)));
    }
}
