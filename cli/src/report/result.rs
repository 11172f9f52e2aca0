//! The result model shared by every output format: `results` hold one
//! [`BenchResult`] per (module, op, data size, threads); the whole file is a
//! [`Report`] with schema `hsm-bench/1` (see
//! `cli/schema/hsm-bench-1.schema.json` and `docs/benchmarking.md`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::stats::Hdr;
use crate::sysinfo::{SystemInfo, TimerInfo};
use crate::token::info::ModuleMeta;

/// Schema id of result files.
pub const SCHEMA: &str = "hsm-bench/1";

/// Outcome of one benchmark entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Every measured call succeeded and was checked.
    Ok,
    /// The token does not list the mechanism (or key size, or data size).
    Unsupported,
    /// At least one call failed (see `error_codes`); statistics cover the successes.
    Error,
}

impl Status {
    /// Lowercase name.
    pub fn as_str(&self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Unsupported => "unsupported",
            Status::Error => "error",
        }
    }
}

/// One histogram bin.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistBin {
    /// Upper bound of the bin, µs.
    pub le_us: f64,
    /// Samples in the bin.
    pub count: u64,
}

/// One result: a (module, op, data size, threads) combination.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchResult {
    /// Op id (`mix/<op>` for a component of a mix, `mix` for the whole mix).
    pub op: String,
    /// Module name.
    pub module: String,
    /// Mechanism name (`CKM_*`).
    pub mechanism: String,
    /// Input size in bytes.
    pub data_size: u64,
    /// Threads (one session each).
    pub threads: u32,
    /// Measured calls (successful + failed).
    pub iterations: u64,
    /// Failed calls.
    pub errors: u64,
    /// ok, unsupported or error.
    pub status: Status,
    /// Successful operations per second of wall-clock time, all threads together.
    pub ops_per_sec: Option<f64>,
    /// Throughput in bytes per second (`ops_per_sec` × `data_size`), for ops that
    /// process caller-given data (digest, MAC, encrypt/decrypt, Ed25519 sign and
    /// the like); `None` (JSON `null`) for ops without a data size. Missing in
    /// files of older versions.
    #[serde(default)]
    pub bytes_per_sec: Option<f64>,
    /// Mean latency, µs.
    pub mean_us: Option<f64>,
    /// Half-width of the 95% confidence interval of the mean, µs.
    pub ci95_us: Option<f64>,
    /// Standard deviation, µs.
    pub stddev_us: Option<f64>,
    /// Minimum, µs.
    pub min_us: Option<f64>,
    /// Median, µs.
    pub p50_us: Option<f64>,
    /// 90th percentile, µs.
    pub p90_us: Option<f64>,
    /// 95th percentile, µs.
    pub p95_us: Option<f64>,
    /// 99th percentile, µs.
    pub p99_us: Option<f64>,
    /// 99.9th percentile, µs.
    pub p999_us: Option<f64>,
    /// Maximum, µs.
    pub max_us: Option<f64>,
    /// Samples below the lower Tukey fence (counted, kept).
    pub outliers_low: Option<u64>,
    /// Samples above the upper Tukey fence (counted, kept).
    pub outliers_high: Option<u64>,
    /// Measured wall-clock time, seconds (all rounds).
    pub duration_s: f64,
    /// Interleaved rounds the samples were collected in.
    pub rounds: u32,
    /// `closed` (next call when the last returns) or `open` (`--rate`).
    pub mode: String,
    /// Target rate for open-loop runs, ops/s.
    pub rate_target: Option<f64>,
    /// The mix specification for mix results.
    pub mix: Option<String>,
    /// Which key was used: `generated` (session objects shared by all threads) or
    /// `label:<label>`.
    pub key: String,
    /// Failed calls by error name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub error_codes: BTreeMap<String, u64>,
    /// Why an op is unsupported or failed before measuring.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The requested percentiles (`--percentiles`), µs, keyed `p50`, `p99.9`...
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub percentiles: BTreeMap<String, f64>,
    /// Latency histogram (with `--histogram`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub histogram: Option<Vec<HistBin>>,
    /// Every sample in ns, in per-thread recording order (with `--raw-samples`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub samples_ns: Option<Vec<u64>>,
    /// Successful ops/s of each interleaved round (with two rounds or more).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round_ops_per_sec: Option<Vec<f64>>,
    /// Peak resident memory (KiB) of the process that measured: set by the
    /// `cold-start-*` ops, whose probe loads the module in a new process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_rss_kib: Option<u64>,
    /// Worker processes that ran the op at the same time, each loading the
    /// module, on one token (`--processes`); 1 in files written before.
    #[serde(default = "one")]
    pub processes: u32,
    /// The latencies, lossless ([`Hdr`]): what `--processes` and
    /// `hsm-bench merge` merge exactly. Absent in files written before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_hdr: Option<Hdr>,
    /// The measured windows, one per round: `[start, end]`, nanoseconds
    /// since the Unix epoch (the union of several processes' or hosts').
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub windows_unix_ns: Option<Vec<[u64; 2]>>,
    /// With `--processes N` (N > 1): each process's own figures; the
    /// result's are those of all of them merged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_process: Option<Vec<PartRow>>,
    /// Written by `hsm-bench merge`: each host's figures; the result's are
    /// those of all of them merged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hosts: Option<Vec<PartRow>>,
    /// How a merged result's ops/s was found: `union window` (all
    /// successful calls over the union of the parts' measured windows) or
    /// `sum of rates` (the parts' ops/s added).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throughput_basis: Option<String>,
    /// Warmup errors, cut-short and missed-rate notes (see `crate::report::notes`).
    #[serde(flatten)]
    pub notes: crate::report::notes::RunNotes,
}

impl BenchResult {
    /// The latency fields (µs) from a summary of the samples.
    pub fn set_latency(&mut self, sm: &crate::stats::Summary) {
        let us = |ns: f64| ns / 1000.0;
        self.mean_us = Some(us(sm.mean_ns));
        self.ci95_us = sm.ci95_ns.is_finite().then(|| us(sm.ci95_ns));
        self.stddev_us = Some(us(sm.stddev_ns));
        self.min_us = Some(us(sm.min_ns as f64));
        self.p50_us = Some(us(sm.p50_ns as f64));
        self.p90_us = Some(us(sm.p90_ns as f64));
        self.p95_us = Some(us(sm.p95_ns as f64));
        self.p99_us = Some(us(sm.p99_ns as f64));
        self.p999_us = Some(us(sm.p999_ns as f64));
        self.max_us = Some(us(sm.max_ns as f64));
        self.outliers_low = Some(sm.outliers_low);
        self.outliers_high = Some(sm.outliers_high);
        self.percentiles = sm
            .percentiles
            .iter()
            .map(|(p, v)| (crate::stats::percentile_label(*p), us(*v as f64)))
            .collect();
    }
}

fn one() -> u32 {
    1
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

/// One part of a merged result: a process of `--processes`, or a host of
/// `hsm-bench merge`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartRow {
    /// The process, 1 to N (`per_process`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process: Option<u32>,
    /// The host (`hosts`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// ok, unsupported or error.
    pub status: Status,
    /// Measured calls (successful + failed).
    pub iterations: u64,
    /// Failed calls.
    pub errors: u64,
    /// Its successful calls over its own measured windows.
    pub ops_per_sec: Option<f64>,
    /// Median latency, µs.
    pub p50_us: Option<f64>,
    /// 99th percentile, µs.
    pub p99_us: Option<f64>,
}

impl PartRow {
    /// The part's figures from its result.
    pub fn of(r: &BenchResult) -> PartRow {
        PartRow {
            process: None,
            host: None,
            status: r.status,
            iterations: r.iterations,
            errors: r.errors,
            ops_per_sec: r.ops_per_sec,
            p50_us: r.p50_us,
            p99_us: r.p99_us,
        }
    }
}

impl BenchResult {
    /// Relative noise of the result as a fraction: the larger of the half-width of
    /// the mean latency's 95% CI (sampling noise) and, with two rounds or more, the
    /// half-width of the 95% CI of the per-round ops/s (drift during the run).
    pub fn rel_noise(&self) -> f64 {
        let drift = self.round_ops_per_sec.as_deref().map_or(0.0, rel_ci95);
        self.sampling_noise().max(drift)
    }

    /// Relative half-width of the mean latency's 95% CI, or 0 if unknown.
    pub fn sampling_noise(&self) -> f64 {
        match (self.ci95_us, self.mean_us) {
            (Some(c), Some(m)) if m > 0.0 && c.is_finite() => c / m,
            _ => 0.0,
        }
    }

    /// Set [`bytes_per_sec`](Self::bytes_per_sec) from ops/s and the data size;
    /// `has_data` tells whether the op processes caller-given data at all.
    pub fn set_throughput(&mut self, has_data: bool) {
        self.bytes_per_sec = throughput(self.ops_per_sec, self.data_size, has_data);
    }

    /// Key matching results across files.
    pub fn key(&self) -> (String, String, u64, u32, u32) {
        (
            self.module.clone(),
            self.op.clone(),
            self.data_size,
            self.threads,
            self.processes,
        )
    }
}

/// hsm-bench version and commit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolInfo {
    /// Crate version.
    pub version: String,
    /// `git rev-parse` at build time, or "unknown".
    pub git_commit: String,
}

impl ToolInfo {
    /// This binary.
    pub fn current() -> Self {
        ToolInfo {
            version: env!("CARGO_PKG_VERSION").to_string(),
            git_commit: env!("HSM_BENCH_GIT_COMMIT").to_string(),
        }
    }
}

/// Run metadata.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Metadata {
    /// Start of the run, RFC 3339 UTC.
    pub timestamp: String,
    /// hsm-bench version and commit.
    pub hsm_bench: ToolInfo,
    /// argv.
    pub command_line: Vec<String>,
    /// Profile name or path.
    pub profile: Option<String>,
    /// Modules, in command-line order (the first is the ratio numerator).
    pub modules: Vec<ModuleMeta>,
    /// Iterations per thread (unless duration mode).
    pub iterations: Option<u64>,
    /// Seconds per op (duration mode).
    pub duration_s: Option<f64>,
    /// Warmup calls per thread and round.
    pub warmup: u64,
    /// Thread counts swept.
    pub threads: Vec<u32>,
    /// Process counts swept (`--processes`); absent when only 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub processes: Option<Vec<u32>>,
    /// Written by `hsm-bench merge`: the files merged, one per host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged_from: Option<Vec<MergedInput>>,
    /// Data sizes swept (None: per-op defaults).
    pub data_sizes: Option<Vec<u64>>,
    /// Rounds per op (modules interleaved).
    pub rounds: u32,
    /// Open-loop rate, ops/s.
    pub rate: Option<f64>,
    /// Mix spec.
    pub mix: Option<String>,
    /// Percentiles requested.
    pub percentiles: Vec<f64>,
    /// How keys are used by threads.
    pub keys: String,
    /// Reference module for ratio comparisons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    /// `--max-op-time`, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_op_time_s: Option<f64>,
    /// The run was interrupted (Ctrl-C): only the ops finished before are in `results`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
    /// Written while the run goes on (after each finished op): `results`
    /// holds the ops finished so far, and the run had not ended.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub partial: bool,
    /// Machine.
    pub system: SystemInfo,
    /// Clock used and its measured resolution.
    pub timer: TimerInfo,
}

/// One input of `hsm-bench merge`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MergedInput {
    /// The host it was measured on (its `system.hostname`, else the file name).
    pub host: String,
    /// The file.
    pub file: String,
    /// Its run's start.
    pub timestamp: String,
}

/// Ratio of a module's ops/s to a reference module's in the same run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ratio {
    /// Module (numerator).
    pub module: String,
    /// Reference module (denominator).
    pub reference: String,
    /// Op id.
    pub op: String,
    /// Data size.
    pub data_size: u64,
    /// Threads.
    pub threads: u32,
    /// Processes (`--processes`); 1 when absent.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub processes: u32,
    /// ops/s(module) / ops/s(reference).
    pub ratio: f64,
    /// Relative noise of the ratio (from both 95% CIs), as a fraction.
    pub noise: f64,
}

/// A complete result file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// Always `hsm-bench/1`.
    pub schema: String,
    /// Run metadata.
    pub metadata: Metadata,
    /// Results.
    pub results: Vec<BenchResult>,
    /// Ratios to the reference module (with `--reference`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ratios: Option<Vec<Ratio>>,
}

/// Relative half-width of the 95% CI of the mean of `v` (0 for fewer than 2 values).
pub fn rel_ci95(v: &[f64]) -> f64 {
    if v.len() < 2 {
        return 0.0;
    }
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    if mean > 0.0 {
        crate::stats::t_critical_95(v.len() as u64 - 1) * var.sqrt() / n.sqrt() / mean
    } else {
        0.0
    }
}

/// Compute ratios of every module to `reference` for results present in both.
///
/// The noise of a ratio combines both results' sampling noise with the spread of
/// the per-round ratios: rounds interleave the modules, so drift of the machine
/// moves both and largely cancels out of the ratio.
pub fn ratios(results: &[BenchResult], reference: &str) -> Vec<Ratio> {
    let mut out = Vec::new();
    for r in results.iter().filter(|r| r.module != reference) {
        let Some(base) = results.iter().find(|b| {
            b.module == reference
                && b.op == r.op
                && b.data_size == r.data_size
                && b.threads == r.threads
                && b.processes == r.processes
        }) else {
            continue;
        };
        if let (Some(a), Some(b)) = (r.ops_per_sec, base.ops_per_sec)
            && r.status == Status::Ok
            && base.status == Status::Ok
            && b > 0.0
        {
            out.push(Ratio {
                module: r.module.clone(),
                reference: reference.to_string(),
                op: r.op.clone(),
                data_size: r.data_size,
                threads: r.threads,
                processes: r.processes,
                ratio: a / b,
                noise: {
                    let sampling =
                        (r.sampling_noise().powi(2) + base.sampling_noise().powi(2)).sqrt();
                    let per_round: Vec<f64> = match (&r.round_ops_per_sec, &base.round_ops_per_sec)
                    {
                        (Some(x), Some(y)) if x.len() == y.len() => x
                            .iter()
                            .zip(y)
                            .filter(|p| *p.1 > 0.0)
                            .map(|(p, q)| p / q)
                            .collect(),
                        _ => Vec::new(),
                    };
                    sampling.max(rel_ci95(&per_round))
                },
            });
        }
    }
    out
}

/// Bytes per second of an op doing `ops_per_sec` calls on `data_size` bytes each;
/// `None` when the op has no data size (not 0) or no rate was measured.
pub fn throughput(ops_per_sec: Option<f64>, data_size: u64, has_data: bool) -> Option<f64> {
    match ops_per_sec {
        Some(ops) if has_data && data_size > 0 && ops.is_finite() => Some(ops * data_size as f64),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn throughput_is_ops_times_size_and_absent_without_data() {
        assert_eq!(throughput(Some(1000.0), 1024, true), Some(1_024_000.0));
        assert_eq!(throughput(Some(1000.0), 32, false), None);
        assert_eq!(throughput(None, 1024, true), None);
        assert_eq!(throughput(Some(1000.0), 0, true), None);
        let mut r = crate::report::fixtures::sized(2000.0, 1 << 20);
        assert_eq!(r.bytes_per_sec, Some(2000.0 * 1_048_576.0));
        r.set_throughput(false);
        assert_eq!(r.bytes_per_sec, None);
    }

    #[test]
    fn old_files_without_throughput_still_load() {
        let mut v =
            serde_json::to_value(crate::report::fixtures::result("m", "x", 1.0, 0.0)).unwrap();
        assert!(v["bytes_per_sec"].is_null());
        v.as_object_mut().unwrap().remove("bytes_per_sec");
        let r: BenchResult = serde_json::from_value(v).unwrap();
        assert_eq!(r.bytes_per_sec, None);
    }
}
