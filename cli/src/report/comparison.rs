//! The model of `hsm-bench compare`'s output (schema `hsm-bench-compare/1`):
//! compared entries and their class. `judge/compare.rs` fills it in; the
//! verdict pages and the HTML charts render it.

use serde::Serialize;

/// Classification of one difference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Class {
    /// Better by more than the threshold and the noise.
    Improved,
    /// Worse by more than the threshold and the noise (or newly failing).
    Regressed,
    /// Within the threshold or the noise.
    Unchanged,
}

impl Class {
    pub fn mark(&self) -> &'static str {
        match self {
            Class::Improved => "improved",
            Class::Regressed => "REGRESSED",
            Class::Unchanged => "unchanged",
        }
    }
}

/// One compared figure.
#[derive(Debug, Clone, Serialize)]
pub struct Entry {
    /// Module (in ratio mode: the numerator module).
    pub module: String,
    /// Op id.
    pub op: String,
    /// Data size.
    pub data_size: u64,
    /// Threads.
    pub threads: u32,
    /// Current figure (ops/s, or ratio).
    pub current: Option<f64>,
    /// Baseline figure.
    pub baseline: Option<f64>,
    /// Change of the figure, percent (positive is better).
    pub delta_pct: Option<f64>,
    /// Noise of the difference, percent (95% CIs of both sides combined).
    pub noise_pct: f64,
    /// Current p95, µs (ops/s mode).
    pub p95_current_us: Option<f64>,
    /// Baseline p95, µs.
    pub p95_baseline_us: Option<f64>,
    /// Change of p95, percent (positive is slower).
    pub p95_delta_pct: Option<f64>,
    /// Class of the p95 change (informational; the verdict uses the figure).
    pub p95_class: Option<Class>,
    /// Current throughput, bytes/s (ops/s mode, ops with a data size).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes_per_sec_current: Option<f64>,
    /// Baseline throughput, bytes/s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes_per_sec_baseline: Option<f64>,
    /// Current ÷ baseline throughput (when both are known).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes_per_sec_ratio: Option<f64>,
    /// Verdict.
    pub class: Class,
    /// Explanation when statuses differ.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// A full comparison.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// `hsm-bench-compare/1`.
    pub schema: &'static str,
    /// What was compared: "ops_per_sec" or "ratio to <module>".
    pub figure: String,
    /// Threshold, percent.
    pub threshold_pct: f64,
    /// Current run timestamp.
    pub current: String,
    /// Baseline run timestamp.
    pub baseline: String,
    /// Compared entries.
    pub entries: Vec<Entry>,
    /// Results only in the baseline.
    pub missing: Vec<String>,
    /// Results only in the current run.
    pub added: Vec<String>,
    /// Matched results measured differently (make the comparison inconclusive).
    pub mismatches: Vec<String>,
    /// Metadata differences worth knowing (CPU, module build...), not fatal.
    pub warnings: Vec<String>,
}
