//! One module per subcommand. Each takes its parsed arguments and writers, so
//! tests and `main` drive them the same way.

pub mod beam;
pub mod bench;
pub mod diff;
pub mod dist;
pub mod probe;
pub mod report;
pub mod request;
pub mod semantics;
pub mod speculative;
pub mod ties;
pub mod trace;
pub mod translate;

/// `--vocab` must have one token per logit: a vocabulary of another model
/// would label every token wrongly. The error names the file and both sizes.
pub(crate) fn check_vocab(
    path: &std::path::Path,
    vocab: &parity_core::Vocab,
    logits: usize,
) -> Result<(), String> {
    if vocab.len() == logits {
        Ok(())
    } else {
        Err(format!(
            "--vocab {}: {} tokens, but there are {logits} logits (the vocabulary of another model?)",
            path.display(),
            vocab.len()
        ))
    }
}

/// A command-line argument that must be a JSON object (`--kwargs`,
/// `--port-params`): parsed, or an error naming the flag and quoting the text.
pub(crate) fn json_object_arg(
    flag: &str,
    text: &str,
) -> anyhow::Result<serde_json::Map<String, serde_json::Value>> {
    use anyhow::Context;
    serde_json::from_str(text).with_context(|| format!("{flag} is not a JSON object: {text}"))
}
