//! (being written: issue 28)
