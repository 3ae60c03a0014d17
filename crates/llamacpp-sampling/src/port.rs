//! llama.cpp as a trace port (`compare trace --port llama.cpp`): the logits
//! llama.cpp gave along a trace's contexts, recorded beside it as
//! `NAME.llamacpp.safetensors` by scripts/reference/trace_llamacpp.py
//! (llama-cpp-python 0.3.36, llama.cpp 0c1e57098). The file must come from
//! the trace's model (sha256, vocabulary) and its generation (`input_ids`).

use std::path::Path;

use parity_core::Error;
use parity_core::trace::{Port, TensorFile, Trace, beside, read_bounded};

/// The format tag of llama.cpp's logits beside a trace.
pub const LLAMACPP_FORMAT: &str = "sampling-parity-trace-llamacpp/1";

/// The recorded llama.cpp port; see the module doc.
#[derive(Debug, Clone, Copy, Default)]
pub struct LlamaCppPort;

impl Port for LlamaCppPort {
    fn name(&self) -> &'static str {
        "llama.cpp"
    }

    fn semantics(&self) -> &'static str {
        "llama.cpp"
    }

    fn logits(
        &self,
        trace: &Trace,
        steps: usize,
        _model: Option<&Path>,
        _progress: &mut dyn FnMut(&str),
    ) -> Result<Vec<Vec<f32>>, Error> {
        let path = beside(&trace.path, "llamacpp");
        let t = trace.path.display();
        if !path.is_file() {
            return Err(Error::new(format_args!(
                "{t}: no llama.cpp logits for this trace (expected {}; record them with scripts/reference/trace_llamacpp.py)",
                path.display()
            )));
        }
        let data = read_bounded(&path, "llama.cpp logits")?;
        let f = TensorFile::parse(&path, &data, LLAMACPP_FORMAT)?;
        let p = path.display();
        let sha = f.text("gguf_sha256")?;
        if sha != trace.gguf_sha256 {
            return Err(Error::new(format_args!(
                "{p}: recorded from a model with sha256 {sha}, but the trace {t} is from {} (a trace from another model)",
                trace.gguf_sha256
            )));
        }
        let vocab = f.number("vocab_size")?;
        if vocab != trace.vocab_size {
            return Err(Error::new(format_args!(
                "{p}: vocab_size {vocab}, but the trace {t} has {} (a trace from another model)",
                trace.vocab_size
            )));
        }
        if f.i64s("input_ids")? != trace.input_ids {
            return Err(Error::new(format_args!(
                "{p}: input_ids differ from the trace's {t}: recorded along another generation"
            )));
        }
        let mut logits = f.logits(trace.steps(), trace.vocab_size)?;
        logits.truncate(steps);
        Ok(logits)
    }
}
