//! Helpers every test module shares: running the built `compare` binary and
//! reading what it wrote.

use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

/// The `compare` binary under test.
pub const COMPARE: &str = env!("CARGO_BIN_EXE_compare");

/// `compare ARGS...` with stdin, stdout and stderr piped.
fn spawn(args: &[&str]) -> Child {
    Command::new(COMPARE)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("compare runs")
}

/// Runs `compare` on a small `stdin`, which must be written whole.
pub fn compare(args: &[&str], stdin: &str) -> Output {
    let mut child = spawn(args);
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.as_bytes())
        .expect("write stdin");
    child.wait_with_output().expect("compare finishes")
}

/// Runs `compare` with `stdin` written from another thread (so a large input
/// and a large output cannot deadlock on the pipes).
pub fn run(args: &[&str], stdin: Vec<u8>) -> Output {
    let mut child = spawn(args);
    let mut pipe = child.stdin.take().expect("stdin");
    let writer = std::thread::spawn(move || {
        // The child may stop reading early (usage error): not a test failure.
        let _ = pipe.write_all(&stdin);
    });
    let out = child.wait_with_output().expect("compare finishes");
    writer.join().expect("stdin writer");
    out
}

/// Spawns compare with a standard output whose reading end is already closed,
/// so its first write fails with EPIPE.
pub fn with_closed_stdout(args: &[&str], stdin: &[u8]) -> Output {
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    let mut child = Command::new(COMPARE)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(writer)
        .stderr(Stdio::piped())
        .spawn()
        .expect("compare starts");
    let mut pipe = child.stdin.take().expect("stdin");
    let input = stdin.to_vec();
    let feeder = std::thread::spawn(move || {
        let _ = pipe.write_all(&input);
    });
    let out = child.wait_with_output().expect("compare finishes");
    feeder.join().expect("feeder");
    out
}

/// `compare COMMAND ARGS...` must be a usage error: exit 2, nothing on
/// stdout, `expected` in the message.
pub fn usage_error(command: &str, args: &[&str], expected: &str) {
    let mut all = vec![command];
    all.extend_from_slice(args);
    let out = compare(&all, "");
    assert_eq!(
        out.status.code(),
        Some(2),
        "{args:?}: {}",
        text(&out.stderr)
    );
    assert!(out.stdout.is_empty(), "{args:?}");
    let err = text(&out.stderr);
    assert!(err.contains(expected), "{args:?}: {err}");
}

/// Output as text; it must be UTF-8.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).expect("utf-8 output")
}

/// Output as text, invalid UTF-8 replaced: the hostile-input tests read
/// whatever comes back rather than fail on its encoding.
pub fn text_lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A bundled fixture file, as an absolute path.
pub fn fixture(name: &str) -> String {
    format!(
        "{}/../../fixtures/{name}.safetensors",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// The repository root as the tests spell it, and as it is on disk.
fn repo_roots() -> [String; 2] {
    let spelled = format!("{}/../..", env!("CARGO_MANIFEST_DIR"));
    let canonical = Path::new(&spelled)
        .canonicalize()
        .expect("repository root")
        .display()
        .to_string();
    [spelled, canonical]
}

/// Runs `compare ARGS` on `stdin`; returns the command line and its exit
/// code, stdout and stderr as one text, with the repository root written
/// `[REPO]` (so a checkout elsewhere gives the same text).
pub fn run_for_snapshot(args: &[&str], stdin: &str) -> (String, String) {
    let out = compare(args, stdin);
    let mut got = format!(
        "exit code: {}\n----- stdout -----\n{}----- stderr -----\n{}",
        out.status
            .code()
            .map_or_else(|| "none (signal)".to_string(), |c| c.to_string()),
        text(&out.stdout),
        text(&out.stderr),
    );
    let mut command = format!("compare {}", args.join(" "));
    for root in repo_roots() {
        got = got.replace(&root, "[REPO]");
        command = command.replace(&root, "[REPO]");
    }
    (command, got)
}

/// `snapshot!(NAME, ARGS, STDIN)`: runs `compare ARGS` on `STDIN` and checks
/// its exit code, stdout and stderr against `snapshots/NAME.snap` (insta),
/// the command line in the snapshot's header.
macro_rules! snapshot {
    ($name:expr, $args:expr, $stdin:expr $(,)?) => {{
        let (command, got) = $crate::helpers::run_for_snapshot($args, $stdin);
        let mut settings = insta::Settings::clone_current();
        settings.set_prepend_module_to_snapshot(false);
        settings.set_omit_expression(true);
        settings.set_description(command);
        settings.bind(|| insta::assert_snapshot!($name, got));
    }};
}
pub(crate) use snapshot;
