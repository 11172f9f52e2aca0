//! The units of a suite: jobs (op or mix × data size × thread count), the
//! description of a job that crosses the process boundary to a module's
//! worker ([`JobInfo`]), the result of a job that was not measured, and the
//! split of a job into rounds.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::measure::checks::Mix;
use crate::measure::mode::Mode;
use crate::measure::settings::Settings;
use crate::report::result::BenchResult;
use crate::report::result::Status;
use crate::suite::op::OpDef;
use crate::suite::support::default_size;

/// Output options that affect what is recorded.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Keep histogram bins in results.
    pub histogram: bool,
    /// Keep raw samples in results.
    pub raw_samples: bool,
    /// No progress bars or per-job lines.
    pub quiet: bool,
    /// Key description recorded in results.
    pub key: String,
    /// Give every thread its own keys instead of sharing one set.
    pub per_thread_keys: bool,
}

/// What a job runs.
#[derive(Debug, Clone)]
pub enum JobKind {
    /// One op.
    Single(OpDef),
    /// A weighted mix.
    Mix(Vec<OpDef>, Mix),
}

/// One unit of the suite.
#[derive(Debug, Clone)]
pub struct Job {
    /// Op or mix.
    pub kind: JobKind,
    /// Input size (for mixes: ignored, each op uses its default).
    pub data_size: u64,
    /// Threads.
    pub threads: u32,
}

/// What the process that schedules a job knows of it (it never sees the
/// op definitions a module's worker builds).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobInfo {
    /// Op id, or `mix`.
    pub id: String,
    /// `CKM_*` name, or `mixed`.
    pub mechanism: String,
    /// Input size.
    pub data_size: u64,
    /// Threads.
    pub threads: u32,
    /// The mix's spec, for a mix.
    pub mix: Option<String>,
    /// The PKCS#11 calls of its timed region.
    pub calls: String,
}

impl Job {
    /// The ops the job runs (one, or a mix's components).
    pub fn ops(&self) -> Vec<&OpDef> {
        match &self.kind {
            JobKind::Single(o) => vec![o],
            JobKind::Mix(ops, _) => ops.iter().collect(),
        }
    }

    /// Its description for the scheduling process.
    pub fn info(&self) -> JobInfo {
        match &self.kind {
            JobKind::Single(o) => JobInfo {
                id: o.id.clone(),
                mechanism: o.mechanism_name(),
                data_size: self.data_size,
                threads: self.threads,
                mix: None,
                calls: o.timed_calls().into(),
            },
            JobKind::Mix(ops, m) => JobInfo {
                id: "mix".into(),
                mechanism: "mixed".into(),
                data_size: self.data_size,
                threads: self.threads,
                mix: Some(m.spec.clone()),
                calls: {
                    let mut calls: Vec<&str> = ops.iter().map(OpDef::timed_calls).collect();
                    calls.dedup();
                    calls.join("; ")
                },
            },
        }
    }
}

/// The jobs for `ops` (or a mix), sweeping data sizes and thread counts, op-major.
pub fn jobs(ops: &[OpDef], mix: Option<(Vec<OpDef>, Mix)>, s: &Settings) -> Vec<Job> {
    let mut v = Vec::new();
    if let Some((mops, m)) = mix {
        for &t in &s.threads {
            v.push(Job {
                kind: JobKind::Mix(mops.clone(), m.clone()),
                data_size: 0,
                threads: t,
            });
        }
        return v;
    }
    for op in ops {
        let sizes = match (&s.data_sizes, op.takes_data()) {
            (Some(sizes), true) => sizes.clone(),
            _ => vec![default_size(op)],
        };
        for size in sizes {
            for &t in &s.threads {
                v.push(Job {
                    kind: JobKind::Single(op.clone()),
                    data_size: size,
                    threads: t,
                });
            }
        }
    }
    v
}

/// The mode and warmup of a job (`bench-profiles` overrides per op).
pub fn plan_of(job: &JobInfo, s: &Settings) -> (Mode, u64) {
    s.plan_for(&job.id)
}

/// Mode of round `r` of `rounds`: iterations split (remainder to the first rounds),
/// durations divided.
pub fn round_mode(mode: Mode, r: u32, rounds: u32) -> Mode {
    match mode {
        Mode::Iterations(n) => {
            let (q, rem) = (n / rounds as u64, n % rounds as u64);
            Mode::Iterations(q + u64::from((r as u64) < rem))
        }
        Mode::Duration(d) => Mode::Duration(d / rounds),
    }
}

/// The rounds a job runs in: `--rounds`, but no more than its iterations.
pub fn rounds_of(mode: Mode, s: &Settings) -> u32 {
    match mode {
        Mode::Iterations(i) => s.rounds.min(i.max(1) as u32),
        Mode::Duration(_) => s.rounds,
    }
}

/// A result that was not measured.
pub fn not_measured(
    job: &JobInfo,
    module: &str,
    status: Status,
    reason: String,
    s: &Settings,
    opts: &Options,
) -> BenchResult {
    BenchResult {
        op: job.id.clone(),
        module: module.to_string(),
        mechanism: job.mechanism.clone(),
        data_size: job.data_size,
        threads: job.threads,
        iterations: 0,
        errors: 0,
        status,
        ops_per_sec: None,
        bytes_per_sec: None,
        mean_us: None,
        ci95_us: None,
        stddev_us: None,
        min_us: None,
        p50_us: None,
        p90_us: None,
        p95_us: None,
        p99_us: None,
        p999_us: None,
        max_us: None,
        outliers_low: None,
        outliers_high: None,
        duration_s: 0.0,
        rounds: 0,
        mode: if s.rate.is_some() {
            "open".into()
        } else {
            "closed".into()
        },
        rate_target: s.rate,
        mix: job.mix.clone(),
        key: opts.key.clone(),
        error_codes: BTreeMap::new(),
        reason: Some(reason),
        percentiles: BTreeMap::new(),
        histogram: None,
        samples_ns: None,
        round_ops_per_sec: None,
        peak_rss_kib: None,
        processes: 1,
        latency_hdr: None,
        windows_unix_ns: None,
        per_process: None,
        hosts: None,
        throughput_basis: None,
        notes: Default::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn rounds_split_iterations_exactly() {
        let total: u64 = (0..3)
            .map(|r| match round_mode(Mode::Iterations(10), r, 3) {
                Mode::Iterations(i) => i,
                _ => 0,
            })
            .sum();
        assert_eq!(total, 10);
        assert_eq!(
            round_mode(Mode::Duration(Duration::from_secs(3)), 0, 3),
            Mode::Duration(Duration::from_secs(1))
        );
    }

    #[test]
    fn jobs_sweep_sizes_only_for_data_ops_and_threads_inside() {
        let all = crate::suite::catalogue::catalogue();
        let ops: Vec<OpDef> =
            crate::suite::catalogue::select(&all, &["sha256".into(), "p256-sign".into()])
                .unwrap()
                .into_iter()
                .cloned()
                .collect();
        let s = Settings::resolve(&crate::measure::settings::Flags {
            ops: vec!["sha256".into()],
            data_sizes: Some("64,1K".into()),
            threads: vec![1, 2],
            ..Default::default()
        })
        .unwrap();
        let j = jobs(&ops, None, &s);
        let keys: Vec<(String, u64, u32)> = j
            .iter()
            .map(|j| (j.info().id, j.data_size, j.threads))
            .collect();
        assert_eq!(
            keys,
            vec![
                ("p256-sign".into(), 32, 1),
                ("p256-sign".into(), 32, 2),
                ("sha256".into(), 64, 1),
                ("sha256".into(), 64, 2),
                ("sha256".into(), 1024, 1),
                ("sha256".into(), 1024, 2),
            ]
        );
    }
}
