//! What a result's numbers do not say on their own: warmup calls that failed,
//! a measurement cut short by `--max-op-time` or Ctrl-C, an open-loop target
//! rate that the module could not keep up with. Kept in every result (JSON,
//! flattened into the result object) and shown as `warning:` lines in text.

use serde::{Deserialize, Serialize};

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// Honesty notes of one result (all absent from JSON when there is nothing to say).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunNotes {
    /// Warmup calls that failed (not part of `errors`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub warmup_errors: u64,
    /// The `CKR_*` name (or check failure) of the first failed warmup call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup_first_error: Option<String>,
    /// The measurement ended before its iterations or duration were done
    /// (`--max-op-time` or an interruption): a partial result.
    #[serde(default, skip_serializing_if = "is_false")]
    pub cut_short: bool,
    /// Open loop: the achieved rate stayed more than 5 % below `rate_target`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub rate_missed: bool,
    /// Open loop: operations started per second (successful or not), all threads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_achieved: Option<f64>,
    /// Human-readable warnings, one line each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}
