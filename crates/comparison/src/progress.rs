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

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::rc::Rc;

    /// A sink the test can read back.
    #[derive(Clone, Default)]
    struct Shared(Rc<RefCell<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.borrow_mut().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Shared {
        fn text(&self) -> String {
            String::from_utf8(self.0.borrow().clone()).expect("utf-8")
        }
    }

    const CLEAR: &str = "\r\x1b[2K";

    #[test]
    fn a_pipe_gets_the_notes_alone() {
        let sink = Shared::default();
        let mut p = Progress::new(Box::new(sink.clone()), false);
        p.say("working");
        p.done();
        p.note("note: one");
        let _ = write!(p.notes(), "two");
        assert_eq!(sink.text(), "note: one\ntwo");
    }

    #[test]
    fn a_terminal_gets_the_status_line_cleared_before_a_note() {
        let sink = Shared::default();
        let mut p = Progress::new(Box::new(sink.clone()), true);
        p.say("working");
        // Within 100 ms of the last: skipped. The last line is dated an hour
        // ahead, so the test does not race the clock on a loaded machine.
        p.last = Some(Instant::now() + Duration::from_secs(3600));
        p.say("still working");
        p.note("note");
        // No status line on screen: nothing to clear.
        p.done();
        p.note("again");
        assert_eq!(sink.text(), format!("{CLEAR}working{CLEAR}note\nagain\n"));
    }

    #[test]
    fn done_lets_the_next_status_line_through_at_once() {
        let sink = Shared::default();
        let mut p = Progress::new(Box::new(sink.clone()), true);
        p.say("a");
        p.done();
        p.say("b");
        let _ = p.notes();
        assert_eq!(sink.text(), format!("{CLEAR}a{CLEAR}{CLEAR}b{CLEAR}"));
    }

    #[test]
    fn a_status_line_is_replaced_after_a_tenth_of_a_second() {
        let sink = Shared::default();
        let mut p = Progress::new(Box::new(sink.clone()), true);
        p.say("a");
        std::thread::sleep(Duration::from_millis(120));
        p.say("b");
        assert_eq!(sink.text(), format!("{CLEAR}a{CLEAR}b"));
    }
}
