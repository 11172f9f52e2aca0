//! How long each thread measures: a number of operations or a duration.

use std::time::Duration;

/// How long each thread measures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Mode {
    /// This many operations per thread.
    Iterations(u64),
    /// Until this much time has passed.
    Duration(Duration),
}
