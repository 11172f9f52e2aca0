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

use crate::measure::ipc::{FromWorker, Opened, Share, ToWorker};
use crate::measure::job::{JobInfo, Options, not_measured, plan_of, rounds_of};
use crate::measure::progress;
use crate::measure::remote::{Lost, Remote, fmt_secs};
use crate::measure::settings::Settings;
use crate::report::merge::combine;
use crate::report::result::Status;
use crate::report::result::{BenchResult, PartRow};

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

/// How to start one of a module's worker processes.
pub struct Spawn<'a> {
    /// Where sockets are made.
    pub dir: &'a Path,
    /// The module's index on the command line.
    pub index: usize,
    /// Which of its processes (0: the first).
    pub replica: usize,
    /// The module's name.
    pub name: &'a str,
    /// The worker makes the temporary token the scheduler prepared.
    pub temporary: bool,
    /// The module's own environment variables (`,env=`).
    pub env: &'a [(String, String)],
    /// The token the module's first process made, to log in to (the
    /// module's other processes, and a first one restarted); `None`: open
    /// the module as always (and make its temporary token).
    pub share: Option<&'a Share>,
}

/// Start a module's worker and wait until it has opened the module.
pub fn start_worker(w: &Spawn<'_>, limit: Duration) -> Result<(Remote, Opened), StartError> {
    let temporary = w.temporary && w.share.is_none();
    let mut r = Remote::spawn(w.dir, w.index, w.replica, w.name, temporary, w.env)
        .map_err(StartError::Lost)?;
    r.tell(&ToWorker::Join(w.share.cloned()));
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
    /// Per module: its own environment variables.
    pub env: &'a [Vec<(String, String)>],
    /// Per module: the token its first process made, which a restarted
    /// process logs in to (with several processes: `None` with one, whose
    /// restart makes a new temporary token).
    pub shares: &'a [Option<Share>],
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
    /// Per process: the results of its rounds so far.
    results: Vec<Vec<BenchResult>>,
    /// Which process was lost, and how.
    lost: Option<(usize, Lost)>,
}

/// The scheduler's jobs: each of the workers' jobs (op, data size,
/// threads) once per process count of `--processes`.
pub fn sweep(jobs: &[JobInfo], s: &Settings) -> Vec<(usize, u32)> {
    (0..jobs.len())
        .flat_map(|j| s.processes.iter().map(move |&p| (j, p)))
        .collect()
}

/// Run every job on every module; `finished` gets the results so far after
/// each job. `remotes[i]` are module i's worker processes (as many as the
/// largest `--processes`). Returns the results in job order, modules in
/// command-line order within a job.
pub fn run(
    remotes: &mut [Vec<Remote>],
    restart: &Restart<'_>,
    s: &Settings,
    opts: &Options,
    mut finished: impl FnMut(&[BenchResult]),
) -> Vec<BenchResult> {
    let jobs = restart.jobs;
    let plan = sweep(jobs, s);
    let bars = !opts.quiet && std::io::stderr().is_terminal();
    let mut out = Vec::new();
    let n = remotes.len();
    let mut suite = progress::Suite::new(
        plan.iter()
            .map(|&(j, _)| progress::planned_secs(plan_of(&jobs[j], s).0, n))
            .collect(),
    );
    // Per module and process: why it cannot be restarted (then it is not
    // tried again).
    let mut unavailable: Vec<Vec<Option<String>>> =
        remotes.iter().map(|g| vec![None; g.len()]).collect();
    for &(j, procs) in &plan {
        if crate::measure::interrupt::requested() {
            break;
        }
        let job = &jobs[j];
        let p = procs as usize;
        suite.start_job();
        let mut label = progress::job_label(&job.id, job.data_size, job.threads);
        if procs > 1 {
            label.push_str(&format!(" {procs}p"));
        }
        let (mode, _) = plan_of(job, s);
        let rounds = rounds_of(mode, s);
        let (limit, given) = s.op_time_limit(mode);
        let mut st: Vec<Progress> = (0..n)
            .map(|_| Progress {
                results: vec![Vec::new(); p],
                ..Progress::default()
            })
            .collect();
        for i in 0..n {
            for k in 0..p {
                if let Some(why) = revive(&mut remotes[i][k], i, k, restart, &mut unavailable[i][k])
                {
                    st[i].lost = Some((k, Lost::Died(why)));
                    break;
                }
                // Preparing (keys, sessions) is not measured and does not
                // count against the op's time, but is bounded by it.
                let phase = format!("preparing {label} (keys, sessions, inputs)");
                let r = &mut remotes[i][k];
                match r.ask(&ToWorker::Prepare { job: j }, &phase, limit + grace(limit)) {
                    Ok(FromWorker::Prepared(None)) => {}
                    Ok(FromWorker::Prepared(Some(r))) => {
                        st[i].results[k] = vec![*r];
                        st[i].skip = true;
                    }
                    Ok(other) => st[i].lost = Some((k, r.unexpected(&other))),
                    Err(Lost::Interrupted) => return stop(remotes, None, out),
                    Err(l) => st[i].lost = Some((k, l)),
                }
                if st[i].lost.is_some() {
                    break;
                }
            }
        }
        for r in 0..rounds {
            let order: Vec<usize> = if r % 2 == 0 {
                (0..n).collect()
            } else {
                (0..n).rev().collect()
            };
            for i in order {
                let pr = &mut st[i];
                if pr.skip || pr.lost.is_some() {
                    continue;
                }
                if pr.spent >= limit {
                    pr.capped = true;
                    continue;
                }
                let remaining = limit - pr.spent;
                let round = if rounds > 1 {
                    format!(" r{}/{rounds}", r + 1)
                } else {
                    String::new()
                };
                let bar = bars.then(|| {
                    format!(
                        "{} · {label} [{}]{round}",
                        suite.heading(),
                        remotes[i][0].name
                    )
                });
                let phase = format!(
                    "measuring {label}{round} (in its timed calls: {})",
                    job.calls
                );
                let msg = |k: usize| ToWorker::Round {
                    round: r,
                    gate: p > 1,
                    remaining_ms: Some(remaining.as_millis() as u64),
                    // One bar per module: the first process's.
                    bar: bar.clone().filter(|_| k == 0),
                };
                let t0 = Instant::now();
                let group = &mut remotes[i][..p];
                match together(group, &msg, &phase, remaining + grace(limit)) {
                    Ok(done) => {
                        for (k, (cut_short, skip_rest, results)) in done.into_iter().enumerate() {
                            pr.results[k] = results;
                            pr.capped |= cut_short;
                            pr.skip |= skip_rest;
                        }
                    }
                    Err((_, Lost::Interrupted)) => return stop(remotes, Some(i), out),
                    Err(l) => pr.lost = Some(l),
                }
                pr.spent += t0.elapsed();
            }
        }
        let mut parts = Vec::with_capacity(n);
        for (i, pr) in st.into_iter().enumerate() {
            let name = remotes[i][0].name.clone();
            let by = limit_name(limit, given);
            let mut ended: Vec<Vec<BenchResult>> = Vec::with_capacity(p);
            let mut lost = pr.lost;
            if lost.is_none() {
                for k in 0..p {
                    let r = &mut remotes[i][k];
                    match r.ask(&ToWorker::EndJob, "ending the op", step_limit(s)) {
                        Ok(FromWorker::Results(rs)) if !rs.is_empty() => ended.push(rs),
                        Ok(other) => {
                            lost = Some((k, r.unexpected(&other)));
                            break;
                        }
                        Err(Lost::Interrupted) => return stop(remotes, None, out),
                        Err(l) => {
                            lost = Some((k, l));
                            break;
                        }
                    }
                }
            }
            let rs = match lost {
                Some((k, l)) => {
                    let l = named_process(l, k, p);
                    let partial = if p == 1 {
                        pr.results.into_iter().next().unwrap_or_default()
                    } else {
                        Vec::new()
                    };
                    lost_results(job, &name, partial, &l, &by, s, opts)
                }
                None if p == 1 => ended.into_iter().next().unwrap_or_default(),
                None => merge_processes(job, &name, ended, s, opts),
            };
            let mut rs = if pr.capped { cut_short(rs, &by) } else { rs };
            for r in &mut rs {
                r.processes = procs;
            }
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

/// What a round did on one process: cut short, skip the rest, its results.
type RoundOf = (bool, bool, Vec<BenchResult>);

/// Run a round on every process of a module at once: each warms up, says
/// it is ready, and all are told to go together (one process: no gate).
/// The first process lost ends the round for the module.
fn together(
    group: &mut [Remote],
    msg: &dyn Fn(usize) -> ToWorker,
    phase: &str,
    limit: Duration,
) -> Result<Vec<RoundOf>, (usize, Lost)> {
    let deadline = Instant::now() + limit;
    let left = || deadline.saturating_duration_since(Instant::now());
    let done = |r: &mut Remote, m: FromWorker| match m {
        FromWorker::RoundDone {
            cut_short,
            skip_rest,
            results,
        } => Ok((cut_short, skip_rest, results)),
        other => Err(r.unexpected(&other)),
    };
    if group.len() == 1 {
        let r = &mut group[0];
        let m = r.ask(&msg(0), phase, limit).map_err(|l| (0, l))?;
        return done(r, m).map(|d| vec![d]).map_err(|l| (0, l));
    }
    for (k, r) in group.iter_mut().enumerate() {
        r.phase = phase.to_string();
        r.tell(&msg(k));
    }
    // Warm: each says Ready (or, with nothing to measure, is done already).
    let mut early: Vec<Option<RoundOf>> = vec![None; group.len()];
    let mut lost = None;
    for (k, r) in group.iter_mut().enumerate() {
        match r.answer(left()) {
            Ok(FromWorker::Ready) => {}
            Ok(m) => match done(r, m) {
                Ok(d) => early[k] = Some(d),
                Err(l) => {
                    lost = Some((k, l));
                    break;
                }
            },
            Err(l) => {
                lost = Some((k, l));
                break;
            }
        }
    }
    // Go: also after a loss, so no process waits for it for ever.
    for r in group.iter_mut() {
        r.tell(&ToWorker::Go);
    }
    if let Some((lost_k, l)) = lost {
        // The others measure all the same: their answers are passed over,
        // so that the next request gets its own.
        for (k, r) in group.iter_mut().enumerate() {
            if k != lost_k && early[k].is_none() {
                while let Ok(FromWorker::Ready) = r.answer(left()) {}
            }
        }
        return Err((lost_k, l));
    }
    let mut out = Vec::with_capacity(group.len());
    let mut lost = None;
    for (k, r) in group.iter_mut().enumerate() {
        match early[k].take() {
            Some(d) => out.push(d),
            // After a loss the others' answers are still read (and passed
            // over), so that the next request gets its own.
            None => match r.answer(left()).and_then(|m| done(r, m)) {
                Ok(d) => out.push(d),
                Err(l) => {
                    lost.get_or_insert((k, l));
                }
            },
        }
    }
    match lost {
        Some(l) => Err(l),
        None => Ok(out),
    }
}

/// A loss, naming the process when the module has several.
fn named_process(l: Lost, k: usize, p: usize) -> Lost {
    if p == 1 {
        return l;
    }
    let name = |why: String| format!("process {} of {p}: {why}", k + 1);
    match l {
        Lost::Died(why) => Lost::Died(name(why)),
        Lost::Hung(why) => Lost::Hung(name(why)),
        Lost::Interrupted => Lost::Interrupted,
    }
}

/// The results of a module's processes merged (histograms added, calls
/// counted, ops/s over the union of their windows), each with its
/// processes' rows; one result per result of a process (a mix has several).
fn merge_processes(
    job: &JobInfo,
    module: &str,
    ended: Vec<Vec<BenchResult>>,
    s: &Settings,
    opts: &Options,
) -> Vec<BenchResult> {
    let count = ended.iter().map(Vec::len).min().unwrap_or(0);
    let rows: Vec<PartRow> = (0..ended.len())
        .map(|k| PartRow {
            process: Some(k as u32 + 1),
            ..PartRow::of(&ended[k][0])
        })
        .collect();
    (0..count)
        .map(|idx| {
            let parts: Vec<BenchResult> = ended.iter().map(|rs| rs[idx].clone()).collect();
            match combine(&parts, &rows, &s.percentiles) {
                Ok((mut m, rows)) => {
                    m.per_process = Some(rows);
                    m
                }
                Err(why) => not_measured(job, module, Status::Error, why, s, opts),
            }
        })
        .collect()
}

/// Start a worker again when its last one had to go; `Some(why)` when it
/// cannot be (said once per process, then kept).
fn revive(
    r: &mut Remote,
    i: usize,
    k: usize,
    restart: &Restart<'_>,
    unavailable: &mut Option<String>,
) -> Option<String> {
    if let Some(why) = unavailable {
        return Some(why.clone());
    }
    let before = r.gone()?.describe();
    let name = r.name.clone();
    let limit = restart.limit;
    let spawn = Spawn {
        dir: restart.dir,
        index: i,
        replica: k,
        name: &name,
        temporary: restart.temporary.get(i).copied().unwrap_or(false),
        env: restart.env.get(i).map(Vec::as_slice).unwrap_or_default(),
        share: restart.shares.get(i).and_then(Option::as_ref),
    };
    let again = match start_worker(&spawn, limit) {
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

/// Ctrl-C: the round under way (on module `running`, every process of it)
/// is asked to stop and dropped, with the job it belongs to; the finished
/// jobs are returned.
fn stop(
    remotes: &mut [Vec<Remote>],
    running: Option<usize>,
    out: Vec<BenchResult>,
) -> Vec<BenchResult> {
    if let Some(i) = running {
        for r in &mut remotes[i] {
            r.interrupt();
            r.tell(&ToWorker::Go);
        }
    }
    out
}
