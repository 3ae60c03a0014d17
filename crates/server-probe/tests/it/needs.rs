//! The real components a test needs, looked for when the tests run, not when
//! they are built: a model fetched or a server built after the first `cargo
//! build` is found by the next `cargo test` (issue #39; a build script decided
//! this once and never looked again).
//!
//! Shared by server-probe's tests/it and compare's tests/live (both crates sit
//! at crates/NAME, so the repository root is `../..` from either).
//!
//! A test whose component is missing is listed as ignored, its kind naming
//! what it needs (`test [needs llama-server] name ... ignored`), with one note
//! on stderr saying what is missing and which script makes it. With `CI` set
//! (non-empty) the test runs and fails with that reason, as CI must (.ci/run
//! builds the server and fetches the model).

use std::path::{Path, PathBuf};
use std::process::Command;

use libtest_mimic::{Failed, Trial};

/// What a test needs, and how to get it.
pub enum Needed {
    /// A file under the repository root, and the script that makes it.
    /// The file (absolute), as the message names it (from the repository
    /// root), and the command that makes it.
    File(PathBuf, &'static str, &'static str),
    /// A program that runs with `--version` (any of these names, on the
    /// PATH), and the command that installs it.
    Program(&'static [&'static str], &'static str),
}

impl Needed {
    /// `path` under the repository root, made by `how`.
    pub fn file(path: &'static str, how: &'static str) -> Self {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        Self::File(root.join(path), path, how)
    }

    /// Why it is missing, or `None` when it is here.
    fn missing(&self) -> Option<String> {
        match self {
            Self::File(path, shown, how) => {
                (!path.is_file()).then(|| format!("{shown} is missing ({how} makes it)"))
            }
            Self::Program(names, how) => {
                let runs = |name: &&str| {
                    Command::new(name)
                        .arg("--version")
                        .output()
                        .is_ok_and(|o| o.status.success())
                };
                (!names.iter().any(runs))
                    .then(|| format!("no {} on the PATH ({how})", names.join(" or ")))
            }
        }
    }
}

/// Whether `CI` is set to something (an empty `CI=` is unset).
pub fn ci() -> bool {
    std::env::var_os("CI").is_some_and(|v| !v.is_empty())
}

/// `test` as a trial that passes when it returns and fails when it panics.
pub fn plain(name: &str, test: fn()) -> Trial {
    Trial::test(name, move || {
        test();
        Ok(())
    })
}

/// `test` as a trial that needs every file of `needs`: run when they are all
/// here; otherwise ignored with the kind `label` (a note on stderr says
/// why), or, with `CI` set, failed with the reason.
pub fn trial(name: &str, label: &str, needs: &[Needed], test: fn()) -> Trial {
    let missing: Vec<String> = needs.iter().filter_map(Needed::missing).collect();
    if missing.is_empty() {
        return plain(name, test);
    }
    let why = missing.join("; ");
    if ci() {
        return Trial::test(name, move || {
            Err(Failed::from(format!("CI is set and {why}")))
        });
    }
    eprintln!("note: {name} is ignored: {why}");
    // Run anyway (`--include-ignored`), it fails with the reason.
    Trial::test(name, move || Err(Failed::from(why)))
        .with_ignored_flag(true)
        .with_kind(label)
}

/// The rule itself: a missing file is named with the script that makes it,
/// a file that is here is not, nor is a program that runs.
pub fn missing_components_are_named_with_how_to_get_them() {
    let gone = Needed::file("no/such/model.gguf", "scripts/x.sh")
        .missing()
        .expect("a missing file");
    assert!(
        gone.ends_with("no/such/model.gguf is missing (scripts/x.sh makes it)"),
        "{gone}"
    );
    assert_eq!(Needed::file("Cargo.toml", "-").missing(), None);
    let none = Needed::Program(&["no-such-program-39"], "apt-get install it").missing();
    assert_eq!(
        none.as_deref(),
        Some("no no-such-program-39 on the PATH (apt-get install it)")
    );
    assert_eq!(Needed::Program(&["cargo"], "-").missing(), None);
}
