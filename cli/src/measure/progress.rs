//! Progress of a run on stderr (never stdout, silenced by `--quiet`).
//!
//! Suite level: each job (op × data size × threads) is "op i of N" with an ETA
//! estimated from the durations configured and the time the finished jobs took.
//! When a job finishes one plain line `[i/N] <op> <size> <threads>t done: ...` is
//! printed, terminal or not, so CI logs show the same progress as a terminal.
//!
//! Job level (terminal only): the bar's message is `warmup` during warmup, then the
//! live rate: operations completed since the measurement started over the time
//! elapsed since then, so a slow op (one call a second or slower) shows a true
//! rate as soon as its first call completes instead of 0 until a tick happens to
//! see one.

use std::time::{Duration, Instant};

use crate::measure::mode::Mode;
use crate::report::format::fmt_bytes_rate;
use crate::report::format::fmt_rate;
use crate::report::format::fmt_size;
use crate::report::format::fmt_us;
use crate::report::result::BenchResult;

/// Planned measuring time of a job in seconds: the configured duration for each of
/// `modules` in duration mode (rounds split it), unknown (`None`) in iteration mode.
pub fn planned_secs(mode: Mode, modules: usize) -> Option<f64> {
    match mode {
        Mode::Duration(d) => Some(d.as_secs_f64() * modules as f64),
        Mode::Iterations(_) => None,
    }
}

/// Estimated time left for the `remaining` jobs (planned seconds or unknown), from
/// the finished jobs' (planned, actual seconds).
///
/// Planned jobs are scaled by the finished planned jobs' actual ÷ planned time (the
/// setup, warmup and key generation the plan does not count); unplanned jobs
/// (iteration mode) take the mean actual time of the finished unplanned jobs, or
/// of all finished jobs. `None` while an unplanned job cannot be estimated yet.
pub fn estimate(done: &[(Option<f64>, f64)], remaining: &[Option<f64>]) -> Option<Duration> {
    let (planned, actual) = done
        .iter()
        .filter_map(|(p, a)| p.filter(|p| *p > 0.0).map(|p| (p, *a)))
        .fold((0.0, 0.0), |(p, a), (x, y)| (p + x, a + y));
    let factor = if planned > 0.0 { actual / planned } else { 1.0 };
    let mean = |it: &mut dyn Iterator<Item = f64>| {
        let (n, sum) = it.fold((0u32, 0.0), |(n, s), x| (n + 1, s + x));
        (n > 0).then(|| sum / n as f64)
    };
    let per_unplanned = mean(&mut done.iter().filter(|d| d.0.is_none()).map(|d| d.1))
        .or_else(|| mean(&mut done.iter().map(|d| d.1)));
    let mut left = 0.0;
    for r in remaining {
        left += match r {
            Some(p) => p * factor,
            None => per_unplanned?,
        };
    }
    Some(Duration::from_secs_f64(left.max(0.0)))
}

/// An ETA as `45s`, `1m20s`, `2h05m`.
pub fn fmt_eta(d: Duration) -> String {
    let s = d.as_secs_f64().round() as u64;
    if s < 60 {
        format!("{s}s")
    } else if s < 3600 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{}h{:02}m", s / 3600, (s % 3600) / 60)
    }
}

/// The job's name in progress lines: `sha256 1K 1t`, `mix 2t`.
pub fn job_label(id: &str, data_size: u64, threads: u32) -> String {
    if data_size == 0 {
        format!("{id} {threads}t")
    } else {
        format!("{id} {} {threads}t", fmt_size(data_size))
    }
}

/// One result in a progress line: `12,345 ops/s, 12.6 MB/s, p50 80.1µs, p99 95.0µs`,
/// or the status and reason when nothing was measured.
pub fn summary(r: &BenchResult) -> String {
    match r.ops_per_sec {
        Some(ops) => format!(
            "{} ops/s{}, p50 {}, p99 {}{}",
            fmt_rate(ops),
            r.bytes_per_sec
                .map(|b| format!(", {}", fmt_bytes_rate(b)))
                .unwrap_or_default(),
            fmt_us(r.p50_us.unwrap_or(f64::NAN)),
            fmt_us(r.p99_us.unwrap_or(f64::NAN)),
            if r.errors > 0 {
                format!(", {} errors", r.errors)
            } else {
                String::new()
            }
        ),
        None => format!(
            "{}{}",
            r.status.as_str(),
            r.reason
                .as_ref()
                .map(|x| format!(": {x}"))
                .unwrap_or_default()
        ),
    }
}

/// The live message of a job's bar: `warmup` until the measurement starts, then
/// the operations completed over the time measured so far.
pub fn live(measuring_for: Option<Duration>, completed: u64) -> String {
    match measuring_for {
        None => "warmup".into(),
        Some(_) if completed == 0 => "measuring, first op pending".into(),
        Some(t) => format!(
            "{} ops/s",
            fmt_rate(completed as f64 / t.as_secs_f64().max(1e-9))
        ),
    }
}

/// Suite-level progress: which job runs, how long the rest will take.
pub struct Suite {
    planned: Vec<Option<f64>>,
    done: Vec<(Option<f64>, f64)>,
    job_start: Instant,
}

impl Suite {
    /// Progress over jobs with these planned seconds (see [`planned_secs`]).
    pub fn new(planned: Vec<Option<f64>>) -> Self {
        Suite {
            planned,
            done: Vec::new(),
            job_start: Instant::now(),
        }
    }

    /// The next job starts now.
    pub fn start_job(&mut self) {
        self.job_start = Instant::now();
    }

    fn eta(&self, from: usize) -> Option<Duration> {
        estimate(&self.done, self.planned.get(from..).unwrap_or_default())
    }

    /// Heading of the running job's bar: `op 7 of 37, ETA 1m20s`.
    pub fn heading(&self) -> String {
        let i = self.done.len();
        let mut s = format!("op {} of {}", i + 1, self.planned.len());
        if let Some(eta) = self.eta(i) {
            s.push_str(&format!(", ETA {}", fmt_eta(eta)));
        }
        s
    }

    /// Record the running job as finished after `secs` (`None`: since
    /// [`start_job`](Self::start_job)); returns its line, `[7/37] <label> done: ...`.
    /// `parts` are (module, summary); the module is named when there are several.
    pub fn finish_job(
        &mut self,
        secs: Option<f64>,
        label: &str,
        parts: &[(String, String)],
    ) -> String {
        let i = self.done.len();
        let secs = secs.unwrap_or_else(|| self.job_start.elapsed().as_secs_f64());
        self.done
            .push((self.planned.get(i).copied().flatten(), secs));
        let what = match parts {
            [(_, one)] => one.clone(),
            _ => parts
                .iter()
                .map(|(m, s)| format!("{m}: {s}"))
                .collect::<Vec<_>>()
                .join("; "),
        };
        let n = self.planned.len();
        let mut line = format!("[{}/{n}] {label} done: {what}", i + 1);
        if i + 1 < n
            && let Some(eta) = self.eta(i + 1)
        {
            line.push_str(&format!(" (ETA {})", fmt_eta(eta)));
        }
        // Module names and reasons may quote what a module said.
        crate::safe_text::escape(&line).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixtures::result;
    use crate::report::fixtures::sized;

    #[test]
    fn eta_scales_plans_by_observed_overhead() {
        // Nothing finished: the plan itself.
        assert_eq!(
            estimate(&[], &[Some(2.0), Some(3.0)]),
            Some(Duration::from_secs(5))
        );
        // Jobs have taken 1.5x their plan so far.
        assert_eq!(
            estimate(&[(Some(2.0), 3.0)], &[Some(2.0), Some(4.0)]),
            Some(Duration::from_secs(9))
        );
        // Iteration mode: unknown until one job finished, then its mean.
        assert_eq!(estimate(&[], &[None]), None);
        assert_eq!(
            estimate(&[(None, 1.0), (None, 3.0)], &[None, None, None]),
            Some(Duration::from_secs(6))
        );
        assert_eq!(estimate(&[(None, 1.0)], &[]), Some(Duration::ZERO));
    }

    #[test]
    fn etas_read_naturally() {
        assert_eq!(fmt_eta(Duration::from_secs(45)), "45s");
        assert_eq!(fmt_eta(Duration::from_secs(80)), "1m20s");
        assert_eq!(fmt_eta(Duration::from_secs(7500)), "2h05m");
        assert_eq!(
            planned_secs(Mode::Duration(Duration::from_secs(2)), 3),
            Some(6.0)
        );
        assert_eq!(planned_secs(Mode::Iterations(10), 1), None);
    }

    #[test]
    fn live_rate_counts_from_the_measurement_start_and_labels_warmup() {
        assert_eq!(live(None, 0), "warmup");
        assert_eq!(
            live(Some(Duration::from_millis(300)), 0),
            "measuring, first op pending"
        );
        // A slow op: one call done 1.5 s in is 0.67 ops/s, not 0.
        assert_eq!(live(Some(Duration::from_millis(1500)), 1), "0.67 ops/s");
        assert_eq!(live(Some(Duration::from_secs(2)), 5000), "2,500 ops/s");
    }

    #[test]
    fn done_lines_number_jobs_and_show_throughput_only_with_data() {
        let sha = sized(1000.0, 1024);
        let sign = result("m", "p256-sign", 500.0, 0.01);
        assert_eq!(
            summary(&sha),
            "1,000 ops/s, 1.02 MB/s, p50 1.000ms, p99 1.500ms"
        );
        assert_eq!(summary(&sign), "500.0 ops/s, p50 2.000ms, p99 3.000ms");
        let mut s = Suite::new(vec![Some(1.0), Some(1.0), Some(1.0)]);
        assert_eq!(s.heading(), "op 1 of 3, ETA 3s");
        s.start_job();
        let l = s.finish_job(Some(2.0), "sha256 1K 1t", &[("m".into(), summary(&sha))]);
        assert_eq!(
            l,
            "[1/3] sha256 1K 1t done: 1,000 ops/s, 1.02 MB/s, p50 1.000ms, p99 1.500ms (ETA 4s)"
        );
        assert_eq!(s.heading(), "op 2 of 3, ETA 4s");
        let two = [("a".to_string(), "x".to_string()), ("b".into(), "y".into())];
        assert_eq!(
            s.finish_job(Some(2.0), "mix 1t", &two),
            "[2/3] mix 1t done: a: x; b: y (ETA 2s)"
        );
        assert_eq!(
            s.finish_job(Some(2.0), "l 1t", &two[..1]),
            "[3/3] l 1t done: x"
        );
        assert_eq!(job_label("mix", 0, 2), "mix 2t");
        assert_eq!(job_label("sha256", 1024, 1), "sha256 1K 1t");
    }
}
