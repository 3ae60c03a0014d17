//! What a run tells people beside its output: a transient status line while
//! something slow runs, on a terminal only, and notes (a setting a fixture
//! does not record, transformers' own warning), always. The binary decides
//! where both go (standard error) and whether it is a terminal; the library
//! never writes to a stream it did not get.

use std::io::Write;
use std::time::{Duration, Instant};

/// The one progress reporter; see the module doc.
pub struct Progress {
    sink: Box<dyn Write>,
    terminal: bool,
    /// Whether a status line is on screen (to be cleared before a note).
    shown: bool,
    last: Option<Instant>,
}

impl Progress {
    /// Reports to `sink`; status lines only when `terminal` (a pipe or a CI
    /// log gets the notes alone, never a `\r`).
    pub fn new(sink: Box<dyn Write>, terminal: bool) -> Self {
        Self {
            sink,
            terminal,
            shown: false,
            last: None,
        }
    }

    /// Reports nothing (tests, and callers that only want the result).
    pub fn hidden() -> Self {
        Self::new(Box::new(std::io::sink()), false)
    }

    /// Replaces the status line with `what` (at most ten times a second).
    pub fn say(&mut self, what: &str) {
        if !self.terminal {
            return;
        }
        let now = Instant::now();
        if self
            .last
            .is_some_and(|l| now.duration_since(l) < Duration::from_millis(100))
        {
            return;
        }
        self.last = Some(now);
        // Best effort: a status line that cannot be written is not an error.
        let _ = write!(self.sink, "\r\x1b[2K{what}");
        let _ = self.sink.flush();
        self.shown = true;
    }

    /// Clears the status line.
    pub fn done(&mut self) {
        if self.shown {
            let _ = write!(self.sink, "\r\x1b[2K");
            let _ = self.sink.flush();
            self.shown = false;
        }
        self.last = None;
    }

    /// A note on a line of its own (the status line cleared first).
    pub fn note(&mut self, text: &str) {
        self.done();
        let _ = writeln!(self.sink, "{text}");
    }

    /// The writer notes go to, for a block written in pieces (the status
    /// line cleared first).
    pub fn notes(&mut self) -> &mut dyn Write {
        self.done();
        &mut *self.sink
    }
}
