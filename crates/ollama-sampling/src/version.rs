//! An Ollama release, the one version type of every Ollama engine's
//! `version` param, and what `DefaultOptions()` is at it.
//!
//! Each engine covers its own span of releases ([`Span`], declared in the
//! engine's module with its reasons for the ends); the rules that change
//! with the release are here, once:
//!
//! * `DefaultOptions().RepeatPenalty` (api/types.go): 1.1 from v0.6.2,
//!   except v0.17.5 – v0.17.8-rc1, where commit 86513cb69 lowered it to 1.0
//!   (54e05172a restored 1.1 in rc2); 1.0 again from v0.32.10-rc0 (commit
//!   6a261db7d, "api: stop applying repeat_penalty 1.1 to models that don't
//!   set one"). Every other default is the same at every release covered.
//! * The Go engine's token-history penalties (v0.17.5 – v0.17.8-rc1).

use serde_json::Value;

use parity_core::Error;

/// An Ollama release, `0.17.5` or `0.17.8-rc1` (an rc sorts before its
/// release).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version {
    major: u32,
    minor: u32,
    patch: u32,
    /// `u32::MAX` for a release, the rc number otherwise (so rc < release).
    rc: u32,
}

impl Version {
    /// v0.17.5: the first release with the Go engine's token-history
    /// penalties (86513cb69).
    pub const PENALTIES_FROM: Self = Self::new(0, 17, 5, None);
    /// v0.17.8-rc1: the last one with them (54e05172a reverted them in rc2).
    pub const PENALTIES_TO: Self = Self::new(0, 17, 8, Some(1));
    /// v0.32.10-rc0: the first release whose default `repeat_penalty` is
    /// 1.0 for good (commit 6a261db7d).
    pub const REPEAT_PENALTY_1_0: Self = Self::new(0, 32, 10, Some(0));

    /// `major.minor.patch`, with `-rc{rc}` when `rc` is given.
    pub const fn new(major: u32, minor: u32, patch: u32, rc: Option<u32>) -> Self {
        Self {
            major,
            minor,
            patch,
            rc: match rc {
                Some(r) => r,
                None => u32::MAX,
            },
        }
    }

    /// Reads `0.17.5`, `v0.17.5` or `0.17.8-rc1`; `None` for anything else.
    pub fn parse(text: &str) -> Option<Self> {
        let t = text.strip_prefix('v').unwrap_or(text);
        let (nums, rc) = match t.split_once("-rc") {
            Some((n, r)) => (n, Some(r.parse::<u32>().ok().filter(|&r| r != u32::MAX)?)),
            None => (t, None),
        };
        let parts: Vec<u32> = nums
            .split('.')
            .map(|p| p.parse::<u32>().ok())
            .collect::<Option<_>>()?;
        let [major, minor, patch] = parts[..] else {
            return None;
        };
        Some(Self::new(major, minor, patch, rc))
    }

    /// Whether the Go engine applies repeat, presence and frequency
    /// penalties over the last 64 tokens at this release (v0.17.5 –
    /// v0.17.8-rc1).
    pub fn has_go_penalties(self) -> bool {
        (Self::PENALTIES_FROM..=Self::PENALTIES_TO).contains(&self)
    }

    /// `DefaultOptions().RepeatPenalty` at this release.
    pub fn default_repeat_penalty(self) -> f32 {
        if self.has_go_penalties() || self >= Self::REPEAT_PENALTY_1_0 {
            1.0
        } else {
            1.1
        }
    }
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)?;
        if self.rc != u32::MAX {
            write!(f, "-rc{}", self.rc)?;
        }
        Ok(())
    }
}

/// The releases one engine covers, with the words for a release outside
/// them.
#[derive(Debug, Clone, Copy)]
pub struct Span {
    /// The oldest release covered.
    pub oldest: Version,
    /// The newest release covered, and the default.
    pub newest: Version,
    /// Two releases to name in an example, e.g. `"0.17.5"`.
    pub examples: [&'static str; 2],
    /// Why a release before `oldest` is not covered.
    pub before: &'static str,
    /// Why a release after `newest` is not covered.
    pub after: &'static str,
}

impl Span {
    /// The `version` param's text as a release in this span; the error
    /// quotes the text and says why.
    pub fn parse(&self, text: &str) -> Result<Version, Error> {
        let [a, b] = self.examples;
        let v = Version::parse(text).ok_or_else(|| {
            Error::new(format_args!(
                "`version` = {text:?}: expected an Ollama release such as {a:?} or {b:?}"
            ))
        })?;
        if v < self.oldest {
            return Err(Error::new(format_args!(
                "`version` = {text:?}: {}",
                self.before
            )));
        }
        if v > self.newest {
            return Err(Error::new(format_args!(
                "`version` = {text:?}: {}",
                self.after
            )));
        }
        Ok(v)
    }

    /// The `version` param's JSON value (`null`: the newest).
    pub fn read(&self, value: &Value) -> Result<Version, Error> {
        match value {
            Value::Null => Ok(self.newest),
            Value::String(s) => self.parse(s),
            other => Err(Error::new(format_args!(
                "`version` = {other}: expected a string such as {:?}",
                self.examples[0]
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_order_rcs_first() {
        let r = |t: &str| Version::parse(t);
        assert_eq!(r("v0.17.5"), Some(Version::new(0, 17, 5, None)));
        assert!(r("0.17.8-rc1") < r("0.17.8"));
        assert_eq!(
            r("0.33.0-rc2").map(|v| v.to_string()),
            Some("0.33.0-rc2".into())
        );
        for bad in ["0.32", "0.32.x", "0.32.1-rc", "0.32.1-rc4294967295", ""] {
            assert_eq!(r(bad), None, "{bad}");
        }
    }

    /// api/types.go `DefaultOptions` at each release: 86513cb69 (v0.17.5),
    /// 54e05172a (v0.17.8-rc2), 6a261db7d (v0.32.10-rc0).
    #[test]
    fn the_default_repeat_penalty_follows_the_release() {
        let rp = |t: &str| Version::parse(t).map(Version::default_repeat_penalty);
        assert_eq!(rp("0.6.2"), Some(1.1));
        assert_eq!(rp("0.17.5"), Some(1.0));
        assert_eq!(rp("0.17.8-rc1"), Some(1.0));
        assert_eq!(rp("0.17.8-rc2"), Some(1.1));
        assert_eq!(rp("0.32.9"), Some(1.1));
        assert_eq!(rp("0.32.10-rc0"), Some(1.0));
        assert_eq!(rp("0.33.0-rc2"), Some(1.0));
    }
}
