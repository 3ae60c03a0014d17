//! Hostile input (docs/robustness.md): every row of that table has a test here.
