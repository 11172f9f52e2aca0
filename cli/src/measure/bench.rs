//! Running a suite from the scheduling process, which never loads a module:
//! every module runs in a worker process of its own (`remote.rs`), and for
//! every job (op or mix, data size, thread count) this file has each worker
//! prepare it, then runs interleaved rounds (modules alternate, ABBA order,
//! so drift of the machine hits all of them alike), gathers each module's
//! results and hands the finished job to the caller, which writes it out.
//!
//! A worker that dies (a signal, an abort, an exit) or does not answer
//! within the op's time limit (`--max-op-time`, or its default) costs that
//! module that job: its result is an error naming the signal or the hang
//! and what the worker was doing, with the figures of the rounds it had
//! finished; the worker is started afresh for the next job, and the other
//! modules are not touched.

use std::io::IsTerminal;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::measure::ipc::{FromWorker, Opened, ToWorker};
use crate::measure::job::{JobInfo, Options, not_measured, plan_of, rounds_of};
use crate::measure::progress;
use crate::measure::remote::{Lost, Remote, fmt_secs};
use crate::measure::settings::Settings;
use crate::report::result::BenchResult;
use crate::report::result::Status;

/// How long a module may take to open (load, `C_Initialize`, token, login)
/// or to finish (destroy its keys, `C_Finalize`), unless `--max-op-time`
/// says otherwise ([`step_limit`]).
pub const OPEN_TIMEOUT: Duration = Duration::from_secs(120);

/// The limit of a step outside the ops (opening, finishing a module).
pub fn step_limit(s: &Settings) -> Duration {
    s.max_op_time.unwrap_or(OPEN_TIMEOUT)
}

/// Time a worker gets beyond the op's limit to answer (a call in flight
/// when the limit passes is waited for this long).
fn grace(limit: Duration) -> Duration {
    (limit / 10).max(Duration::from_secs(2))
}

/// Why a module could not be started.
pub enum StartError {
    /// The worker said so (message, exit code), as `run` would have.
    Refused(String, i32),
    /// The worker died or hung.
    Lost(Lost),
}

/// Start module `index`'s worker and wait until it has opened the module.
pub fn start_worker(
    dir: &Path,
    index: usize,
    name: &str,
    temporary: bool,
    limit: Duration,
) -> Result<(Remote, Opened), StartError> {
    let mut r = Remote::spawn(dir, index, name, temporary).map_err(StartError::Lost)?;
    match r.answer(limit) {
        Ok(FromWorker::Opened(o)) => Ok((r, *o)),
        Ok(FromWorker::Failed { message, code }) => Err(StartError::Refused(message, code)),
        Ok(other) => Err(StartError::Lost(r.unexpected(&other))),
        Err(l) => Err(StartError::Lost(l)),
    }
}

/// Tell a worker the suite's ops; its job list.
pub fn set_ops(
    r: &mut Remote,
    ids: &[String],
    key: &str,
    limit: Duration,
) -> Result<Vec<JobInfo>, Lost> {
    let msg = ToWorker::Ops {
        ids: ids.to_vec(),
        key: key.to_string(),
    };
    match r.ask(&msg, "building its op list", limit)? {
        FromWorker::Jobs(j) => Ok(j),
        other => Err(r.unexpected(&other)),
    }
}

/// What a worker that had to go is restarted with.
pub struct Restart<'a> {
    /// Where sockets are made.
    pub dir: &'a Path,
    /// Per module: its temporary-token flag.
    pub temporary: &'a [bool],
    /// The suite's op ids.
    pub ids: &'a [String],
    /// The keys' description.
    pub key: &'a str,
    /// The job list every worker must have.
    pub jobs: &'a [JobInfo],
    /// The limit of opening a module ([`step_limit`]).
    pub limit: Duration,
}

/// Per module, what a job has come to so far.
#[derive(Default)]
struct Progress {
    spent: Duration,
    capped: bool,
    skip: bool,
    results: Vec<BenchResult>,
    lost: Option<Lost>,
}

/// Run every job on every module; `finished` gets the results so far after
/// each job. Returns the results in job order, modules in command-line
/// order within a job, and per module the failures outside any job (a
/// worker that could not be restarted).
pub fn run(
    remotes: &mut [Remote],
    restart: &Restart<'_>,
    s: &Settings,
    opts: &Options,
    mut finished: impl FnMut(&[BenchResult]),
) -> Vec<BenchResult> {
    let jobs = restart.jobs;
    let bars = !opts.quiet && std::io::stderr().is_terminal();
    let mut out = Vec::new();
    let n = remotes.len();
    let mut suite = progress::Suite::new(
        jobs.iter()
            .map(|j| progress::planned_secs(plan_of(j, s).0, n))
            .collect(),
    );
    // Per module: why it cannot be restarted (then it is not tried again).
    let mut unavailable: Vec<Option<String>> = vec![None; n];
    for (j, job) in jobs.iter().enumerate() {
        if crate::measure::interrupt::requested() {
            break;
        }
        suite.start_job();
        let label = progress::job_label(&job.id, job.data_size, job.threads);
        let (mode, _) = plan_of(job, s);
        let rounds = rounds_of(mode, s);
        let (limit, given) = s.op_time_limit(mode);
        let mut st: Vec<Progress> = (0..n).map(|_| Progress::default()).collect();
        for i in 0..n {
            if let Some(why) = revive(&mut remotes[i], i, restart, &mut unavailable[i]) {
                st[i].lost = Some(Lost::Died(why));
                continue;
            }
            // Preparing (keys, sessions) is not measured and does not count
            // against the op's time, but is bounded by it.
            let phase = format!("preparing {label} (keys, sessions, inputs)");
            match remotes[i].ask(&ToWorker::Prepare { job: j }, &phase, limit + grace(limit)) {
                Ok(FromWorker::Prepared(None)) => {}
                Ok(FromWorker::Prepared(Some(r))) => {
                    st[i].results = vec![*r];
                    st[i].skip = true;
                }
                Ok(other) => st[i].lost = Some(remotes[i].unexpected(&other)),
                Err(Lost::Interrupted) => return stop(remotes, None, out),
                Err(l) => st[i].lost = Some(l),
            }
        }
        for r in 0..rounds {
            let order: Vec<usize> = if r % 2 == 0 {
                (0..n).collect()
            } else {
                (0..n).rev().collect()
            };
            for i in order {
                let p = &mut st[i];
                if p.skip || p.lost.is_some() {
                    continue;
                }
                if p.spent >= limit {
                    p.capped = true;
                    continue;
                }
                let remaining = limit - p.spent;
                let round = if rounds > 1 {
                    format!(" r{}/{rounds}", r + 1)
                } else {
                    String::new()
                };
                let bar = bars
                    .then(|| format!("{} · {label} [{}]{round}", suite.heading(), remotes[i].name));
                let msg = ToWorker::Round {
                    round: r,
                    remaining_ms: Some(remaining.as_millis() as u64),
                    bar,
                };
                let phase = format!(
                    "measuring {label}{round} (in its timed calls: {})",
                    job.calls
                );
                let t0 = Instant::now();
                match remotes[i].ask(&msg, &phase, remaining + grace(limit)) {
                    Ok(FromWorker::RoundDone {
                        cut_short,
                        skip_rest,
                        results,
                    }) => {
                        p.results = results;
                        p.capped |= cut_short;
                        p.skip |= skip_rest;
                    }
                    Ok(other) => p.lost = Some(remotes[i].unexpected(&other)),
                    Err(Lost::Interrupted) => return stop(remotes, Some(i), out),
                    Err(l) => p.lost = Some(l),
                }
                p.spent += t0.elapsed();
            }
        }
        let mut parts = Vec::with_capacity(n);
        for (i, p) in st.into_iter().enumerate() {
            let name = remotes[i].name.clone();
            let by = limit_name(limit, given);
            let rs = match &p.lost {
                Some(l) => lost_results(job, &name, p.results, l, &by, s, opts),
                None => match remotes[i].ask(&ToWorker::EndJob, "ending the op", step_limit(s)) {
                    Ok(FromWorker::Results(rs)) if !rs.is_empty() => rs,
                    Ok(other) => {
                        let l = remotes[i].unexpected(&other);
                        lost_results(job, &name, p.results, &l, &by, s, opts)
                    }
                    Err(Lost::Interrupted) => return stop(remotes, None, out),
                    Err(l) => lost_results(job, &name, p.results, &l, &by, s, opts),
                },
            };
            let rs = if p.capped { cut_short(rs, &by) } else { rs };
            // The result's warnings (warmup errors, a cut-short op, a missed
            // rate) follow its summary on the progress line.
            let summary = rs[0]
                .notes
                .warnings
                .iter()
                .fold(progress::summary(&rs[0]), |l, w| {
                    format!("{l}; warning: {w}")
                });
            parts.push((name, summary));
            out.extend(rs);
        }
        let line = suite.finish_job(None, &label, &parts);
        if !opts.quiet {
            eprintln!("{line}");
        }
        finished(&out);
    }
    out
}

/// Start a worker again when its last one had to go; `Some(why)` when it
/// cannot be (said once per module, then kept).
fn revive(
    r: &mut Remote,
    i: usize,
    restart: &Restart<'_>,
    unavailable: &mut Option<String>,
) -> Option<String> {
    if let Some(why) = unavailable {
        return Some(why.clone());
    }
    let before = r.gone()?.describe();
    let name = r.name.clone();
    let temporary = restart.temporary.get(i).copied().unwrap_or(false);
    let limit = restart.limit;
    let again = match start_worker(restart.dir, i, &name, temporary, limit) {
        Ok((mut fresh, _)) => match set_ops(&mut fresh, restart.ids, restart.key, limit) {
            Ok(jobs) if jobs == restart.jobs => Ok(fresh),
            Ok(_) => Err("its restarted worker built another job list".to_string()),
            Err(l) => Err(l.describe()),
        },
        Err(StartError::Refused(m, _)) => Err(m),
        Err(StartError::Lost(l)) => Err(l.describe()),
    };
    match again {
        Ok(fresh) => {
            *r = fresh;
            None
        }
        Err(why) => {
            let why = format!(
                "module unavailable: its worker had to go earlier ({before}) and could not be restarted: {why}"
            );
            *unavailable = Some(why.clone());
            Some(why)
        }
    }
}

/// The results of a job whose worker died or hung: the figures of the
/// rounds it finished, if any, as an error with the reason.
fn lost_results(
    job: &JobInfo,
    module: &str,
    partial: Vec<BenchResult>,
    l: &Lost,
    by: &str,
    s: &Settings,
    opts: &Options,
) -> Vec<BenchResult> {
    let hung = matches!(l, Lost::Hung(_));
    let why = if hung {
        format!("{} (the op's time limit: {by})", l.describe())
    } else {
        l.describe()
    };
    if partial.is_empty() || partial.iter().all(|r| r.iterations == 0) {
        let mut r = not_measured(job, module, Status::Error, why, s, opts);
        r.notes.cut_short = hung;
        return vec![r];
    }
    partial
        .into_iter()
        .map(|mut r| {
            r.status = Status::Error;
            r.notes.cut_short = true;
            r.reason = Some(format!(
                "{why}; the figures are those of the rounds it finished"
            ));
            r
        })
        .collect()
}

/// The op's time limit, named.
fn limit_name(limit: Duration, given: bool) -> String {
    if given {
        format!("--max-op-time {}", limit.as_secs_f64())
    } else {
        format!(
            "the default op time limit ({}; set --max-op-time)",
            fmt_secs(limit)
        )
    }
}

/// Mark results cut short by the op's time limit (`by`).
fn cut_short(mut rs: Vec<BenchResult>, by: &str) -> Vec<BenchResult> {
    for r in &mut rs {
        r.notes.cut_short = true;
        r.notes.warnings.push(format!(
            "cut short by {by}: partial result of {} calls",
            r.iterations
        ));
    }
    rs
}

/// Ctrl-C: the round under way (on module `running`) is asked to stop and
/// dropped, with the job it belongs to; the finished jobs are returned.
fn stop(remotes: &mut [Remote], running: Option<usize>, out: Vec<BenchResult>) -> Vec<BenchResult> {
    if let Some(i) = running {
        remotes[i].interrupt();
    }
    out
}
