//! Running a suite: for every job (op or mix, data size, thread count) prepare each
//! module's workers, then run interleaved rounds (modules alternate, ABBA order, so
//! drift of the machine hits all of them alike), merge the samples per module and
//! turn them into results.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::sync::Arc;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

use crate::measure::checks::Mix;
use crate::measure::mode::Mode;
use crate::measure::progress;
use crate::measure::rate::rate_kept;
use crate::measure::runner::{self, CompOutcome, Outcome, Plan, ThreadWork};
use crate::measure::settings::Settings;
use crate::report::result::BenchResult;
use crate::report::result::HistBin;
use crate::report::result::Status;
use crate::stats::percentile_label;
use crate::suite::catalogue::build_worker;
use crate::suite::failure::Failure;
use crate::suite::keys::KeyStore;
use crate::suite::op::OpDef;
use crate::suite::op::Prep;
use crate::suite::support::default_size;
use crate::token::module::Module;

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

impl Job {
    fn ops(&self) -> Vec<&OpDef> {
        match &self.kind {
            JobKind::Single(o) => vec![o],
            JobKind::Mix(ops, _) => ops.iter().collect(),
        }
    }

    fn id(&self) -> String {
        match &self.kind {
            JobKind::Single(o) => o.id.clone(),
            JobKind::Mix(..) => "mix".into(),
        }
    }

    fn mechanism(&self) -> String {
        match &self.kind {
            JobKind::Single(o) => o.mechanism_name(),
            JobKind::Mix(..) => "mixed".into(),
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

/// Why `op` cannot run on `m` at `size`, if it cannot (see [`crate::suite::support`]).
fn unsupported(m: &Module, op: &OpDef, size: u64) -> Option<String> {
    crate::suite::support::unsupported(&m.caps(), op, size)
}

/// A result that was not measured.
fn not_measured(
    job: &Job,
    module: &str,
    status: Status,
    reason: String,
    s: &Settings,
    opts: &Options,
) -> BenchResult {
    BenchResult {
        op: job.id(),
        module: module.to_string(),
        mechanism: job.mechanism(),
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
        mix: match &job.kind {
            JobKind::Mix(_, m) => Some(m.spec.clone()),
            JobKind::Single(_) => None,
        },
        key: opts.key.clone(),
        error_codes: BTreeMap::new(),
        reason: Some(reason),
        percentiles: BTreeMap::new(),
        histogram: None,
        samples_ns: None,
        round_ops_per_sec: None,
        peak_rss_kib: None,
        notes: Default::default(),
    }
}

/// Build one module's per-thread workers for a job, or the result explaining why not.
fn prepare(
    m: &mut Module,
    keys: &mut KeyStore,
    job: &Job,
    s: &Settings,
    opts: &Options,
) -> Result<Vec<ThreadWork>, Box<BenchResult>> {
    let ops = job.ops();
    for op in &ops {
        let size = if matches!(job.kind, JobKind::Mix(..)) {
            default_size(op)
        } else {
            job.data_size
        };
        if let Some(why) = unsupported(m, op, size) {
            let why = if ops.len() > 1 {
                format!("{}: {why}", op.id)
            } else {
                why
            };
            return Err(Box::new(not_measured(
                job,
                &m.name,
                Status::Unsupported,
                why,
                s,
                opts,
            )));
        }
    }
    let name = m.name.clone();
    let fail = |why: String| Box::new(not_measured(job, &name, Status::Error, why, s, opts));
    // handles[thread][op]: one shared set of keys, or one set per thread.
    let mut handles = Vec::new();
    for t in 0..job.threads as usize {
        let copy = if opts.per_thread_keys { t } else { 0 };
        let mut per_op = Vec::new();
        for op in &ops {
            per_op.push(match op.key {
                Some(spec) => Some(keys.get(spec, copy).cloned().map_err(|f| {
                    fail(format!(
                        "making the {} key failed: {}",
                        spec.name(),
                        f.name()
                    ))
                })?),
                None => None,
            });
        }
        handles.push(per_op);
    }
    let sessions = m
        .sessions(job.threads as usize)
        .map_err(|e| fail(e.message))?;
    let setup = m.setup_session().handle();
    // Scaling ops: bring the token to the op's number of token objects.
    let sizes: std::collections::BTreeSet<usize> = ops
        .iter()
        .filter_map(|op| match op.kind {
            crate::suite::op::OpKind::Population(_, n) => Some(n),
            _ => None,
        })
        .collect();
    if sizes.len() > 1 {
        return Err(fail(
            "scaling ops with different object counts cannot run in one mix".into(),
        ));
    }
    if let Some(&n) = sizes.first() {
        let from = m.population.count();
        if from != n && !opts.quiet {
            eprintln!(
                "hsm-bench: {}: {} token objects -> {n} (untimed)",
                m.name, from
            );
        }
        m.population.ensure(&m.raw, setup, n).map_err(|rv| {
            fail(format!(
                "populating the token failed: {}",
                crate::token::ckr::ckr_name(rv)
            ))
        })?;
    }
    let population = crate::suite::op::PopPrep {
        population: &m.population,
        probe: &m.probe,
    };
    let schedule = match &job.kind {
        JobKind::Mix(_, mix) => {
            let w: Vec<u32> = mix.parts.iter().map(|p| p.1).collect();
            Some(w)
        }
        JobKind::Single(_) => None,
    };
    let mut works = Vec::new();
    for (t, &session) in sessions.iter().enumerate() {
        let mut comps = Vec::new();
        for (op, key) in ops.iter().zip(&handles[t]) {
            let prep = Prep {
                raw: &m.raw,
                setup,
                session,
                key: key.as_ref(),
                data_size: if schedule.is_some() {
                    default_size(op)
                } else {
                    job.data_size
                } as usize,
                thread: t,
                population: Some(population),
                store: keys.mode(),
            };
            let w = build_worker(op, &prep).map_err(|f: Failure| {
                let (status, why) = match f {
                    Failure::Unsupported(why) => (Status::Unsupported, why),
                    f => (Status::Error, format!("preparing failed: {}", f.name())),
                };
                let why = if ops.len() > 1 {
                    format!("{}: {why}", op.id)
                } else {
                    why
                };
                Box::new(not_measured(job, &name, status, why, s, opts))
            })?;
            comps.push(w);
        }
        let schedule = schedule.as_ref().map(|w| {
            Arc::new(runner::mix_schedule(
                w,
                8192,
                0x9E37_79B9 ^ ((t as u64) << 32),
            ))
        });
        works.push(ThreadWork { comps, schedule });
    }
    Ok(works)
}

/// The notes ([`crate::suite::op::Worker::notes`]) of a module's workers for a
/// job, per component: every thread's, each once.
fn worker_notes(works: &Option<Vec<ThreadWork>>) -> Vec<Vec<String>> {
    let mut per_comp: Vec<Vec<String>> = Vec::new();
    for tw in works.iter().flatten() {
        per_comp.resize(per_comp.len().max(tw.comps.len()), Vec::new());
        for (notes, comp) in per_comp.iter_mut().zip(&tw.comps) {
            for n in comp.notes() {
                if !notes.contains(&n) {
                    notes.push(n);
                }
            }
        }
    }
    per_comp
}

/// Add the components' notes to the results of a job ([`results_of`]): a
/// single op's result gets its one component's, a mix's overall result
/// every component's and each `mix/<op>` result its own.
fn add_notes(rs: &mut [BenchResult], per_comp: &[Vec<String>]) {
    for (i, notes) in per_comp.iter().enumerate() {
        for n in notes {
            if !rs[0].notes.warnings.contains(n) {
                rs[0].notes.warnings.push(n.clone());
            }
            if rs.len() > 1
                && let Some(r) = rs.get_mut(i + 1)
            {
                r.notes.warnings.push(n.clone());
            }
        }
    }
}

/// Mode of round `r` of `rounds`: iterations split (remainder to the first rounds),
/// durations divided.
fn round_mode(mode: Mode, r: u32, rounds: u32) -> Mode {
    match mode {
        Mode::Iterations(n) => {
            let (q, rem) = (n / rounds as u64, n % rounds as u64);
            Mode::Iterations(q + u64::from((r as u64) < rem))
        }
        Mode::Duration(d) => Mode::Duration(d / rounds),
    }
}

/// What a set of results was measured under.
struct Ctx<'a> {
    module: &'a str,
    job: &'a Job,
    wall: Duration,
    rounds: u32,
    s: &'a Settings,
    opts: &'a Options,
}

fn measured(id: String, mechanism: String, comp: &CompOutcome, c: &Ctx<'_>) -> BenchResult {
    let Ctx {
        module,
        job,
        wall,
        rounds,
        s,
        opts,
    } = *c;
    let n = comp.rec.count();
    let errors = comp.error_count();
    let summary = comp.rec.summary(&s.percentiles);
    let us = |ns: f64| ns / 1000.0;
    let warmup_failed = n == 0 && errors == 0 && comp.warmup_failed();
    let status = if errors > 0 || n == 0 {
        Status::Error
    } else {
        Status::Ok
    };
    let secs = wall.as_secs_f64();
    let mut r = not_measured(job, module, status, String::new(), s, opts);
    r.op = id;
    r.mechanism = mechanism;
    let first = comp.warmup_first_error.as_deref().unwrap_or("?");
    r.reason = if warmup_failed {
        Some(format!(
            "warmup failed: all {} calls failed (first: {first})",
            comp.warmup_calls
        ))
    } else {
        (n == 0 && errors == 0).then(|| "no operation completed".to_string())
    };
    // Open loop: say when the module could not keep up with the target rate
    // (operations started per second, successful or not, against the target).
    if let (Some(target), false) = (s.rate, r.op.starts_with("mix/")) {
        let (achieved, missed) = rate_kept(n + errors, secs, target);
        r.notes.rate_achieved = Some(achieved);
        if let Some(warning) = missed {
            r.notes.rate_missed = true;
            r.notes.warnings.push(warning);
        }
    }
    r.notes.warmup_errors = comp.warmup_errors;
    r.notes.warmup_first_error = comp.warmup_first_error.clone();
    if comp.warmup_errors > 0 && !warmup_failed {
        r.notes.warnings.push(format!(
            "{} of {} warmup calls failed (first: {first})",
            comp.warmup_errors, comp.warmup_calls
        ));
    }
    r.iterations = n + errors;
    r.errors = errors;
    r.error_codes = comp.errors.clone();
    r.duration_s = secs;
    r.rounds = rounds;
    if comp.round_rates.len() > 1 {
        r.round_ops_per_sec = Some(comp.round_rates.clone());
    }
    r.peak_rss_kib = comp.peak_rss_kib;
    if let Some(sm) = summary {
        r.ops_per_sec = (secs > 0.0).then(|| comp.rate(wall, job.threads as usize));
        r.mean_us = Some(us(sm.mean_ns));
        r.ci95_us = sm.ci95_ns.is_finite().then(|| us(sm.ci95_ns));
        r.stddev_us = Some(us(sm.stddev_ns));
        r.min_us = Some(us(sm.min_ns as f64));
        r.p50_us = Some(us(sm.p50_ns as f64));
        r.p90_us = Some(us(sm.p90_ns as f64));
        r.p95_us = Some(us(sm.p95_ns as f64));
        r.p99_us = Some(us(sm.p99_ns as f64));
        r.p999_us = Some(us(sm.p999_ns as f64));
        r.max_us = Some(us(sm.max_ns as f64));
        r.outliers_low = Some(sm.outliers_low);
        r.outliers_high = Some(sm.outliers_high);
        r.percentiles = sm
            .percentiles
            .iter()
            .map(|(p, v)| (percentile_label(*p), us(*v as f64)))
            .collect();
        if opts.histogram {
            r.histogram = Some(
                comp.rec
                    .bins(20)
                    .into_iter()
                    .map(|(le, count)| HistBin {
                        le_us: us(le as f64),
                        count,
                    })
                    .collect(),
            );
        }
        if opts.raw_samples {
            r.samples_ns = comp.rec.samples().map(<[u64]>::to_vec);
        }
    }
    r
}

fn results_of(
    job: &Job,
    module: &str,
    o: &Outcome,
    rounds: u32,
    s: &Settings,
    opts: &Options,
) -> Vec<BenchResult> {
    let c = Ctx {
        module,
        job,
        wall: o.wall,
        rounds,
        s,
        opts,
    };
    match &job.kind {
        JobKind::Single(op) => {
            let mut r = measured(op.id.clone(), op.mechanism_name(), &o.comps[0], &c);
            r.set_throughput(op.takes_data());
            vec![r]
        }
        JobKind::Mix(ops, _) => {
            let mut all = o.comps[0].clone();
            for x in &o.comps[1..] {
                all.merge(x);
            }
            // The mix's rate in a round is the sum of its components' rates.
            all.round_rates = (0..o.comps[0].round_rates.len())
                .map(|i| {
                    o.comps
                        .iter()
                        .map(|c| c.round_rates.get(i).copied().unwrap_or(0.0))
                        .sum()
                })
                .collect();
            let mut v = vec![measured("mix".into(), "mixed".into(), &all, &c)];
            for (op, x) in ops.iter().zip(&o.comps) {
                let mut r = measured(format!("mix/{}", op.id), op.mechanism_name(), x, &c);
                r.data_size = default_size(op);
                r.set_throughput(op.takes_data());
                v.push(r);
            }
            v
        }
    }
}

fn progress_bar(label: String, mode: Mode, threads: u32) -> ProgressBar {
    let (len, tpl) = match mode {
        Mode::Iterations(n) => (n * threads as u64, "{prefix} [{bar:28}] {pos}/{len} {msg}"),
        Mode::Duration(d) => (d.as_millis() as u64, "{prefix} [{bar:28}] {elapsed} {msg}"),
    };
    let bar = ProgressBar::new(len);
    bar.set_style(
        ProgressStyle::with_template(tpl)
            .expect("valid template")
            .progress_chars("=> "),
    );
    bar.set_prefix(label);
    bar
}

/// Run every job on every module; returns the results in job order, modules in
/// command-line order within a job.
pub fn run(
    modules: &mut [Module],
    keys: &mut [KeyStore],
    jobs: &[Job],
    s: &Settings,
    opts: &Options,
) -> Vec<BenchResult> {
    let bars = !opts.quiet && std::io::stderr().is_terminal();
    let mut out = Vec::new();
    let plan_of = |job: &Job| match &job.kind {
        JobKind::Single(op) => s.plan_for(&op.id),
        JobKind::Mix(..) => s.plan_for("mix"),
    };
    let mut suite = progress::Suite::new(
        jobs.iter()
            .map(|j| progress::planned_secs(plan_of(j).0, modules.len()))
            .collect(),
    );
    for job in jobs {
        // Ctrl-C: keep the finished jobs, drop the one under way.
        if crate::measure::interrupt::requested() {
            break;
        }
        suite.start_job();
        let label = progress::job_label(&job.id(), job.data_size, job.threads);
        let n = modules.len();
        let mut works: Vec<Option<Vec<ThreadWork>>> = Vec::with_capacity(n);
        let mut early: Vec<Option<BenchResult>> = Vec::with_capacity(n);
        for (m, k) in modules.iter_mut().zip(keys.iter_mut()) {
            match prepare(m, k, job, s, opts) {
                Ok(w) => {
                    works.push(Some(w));
                    early.push(None);
                }
                Err(r) => {
                    works.push(None);
                    early.push(Some(*r));
                }
            }
        }
        let (mode, warmup) = plan_of(job);
        let rounds = match mode {
            Mode::Iterations(i) => s.rounds.min(i.max(1) as u32),
            Mode::Duration(_) => s.rounds,
        };
        let mut outcomes: Vec<Option<Outcome>> = vec![None; n];
        // Time each module has spent on this op (warmup and rounds), against
        // --max-op-time; a module out of time skips its remaining rounds.
        let mut spent = vec![Duration::ZERO; n];
        let mut capped = vec![false; n];
        for r in 0..rounds {
            let mode = round_mode(mode, r, rounds);
            let base = Plan {
                mode,
                warmup,
                rate: s.rate,
                keep_samples: opts.raw_samples,
                // A slow op warms up no longer than it measures.
                warmup_budget: match (mode, s.max_op_time) {
                    (Mode::Duration(d), Some(m)) => Some(d.min(m)),
                    (Mode::Duration(d), None) => Some(d),
                    (Mode::Iterations(_), m) => m,
                },
                cap: None,
            };
            let order: Vec<usize> = if r % 2 == 0 {
                (0..n).collect()
            } else {
                (0..n).rev().collect()
            };
            for i in order {
                let Some(w) = works[i].as_mut() else { continue };
                // An op whose warmup failed entirely is not tried again.
                if outcomes[i]
                    .as_ref()
                    .is_some_and(|o| o.wall.is_zero() && o.comps.iter().any(|c| c.warmup_failed()))
                {
                    continue;
                }
                let started = std::time::Instant::now();
                let plan = match s.max_op_time {
                    Some(max) if spent[i] >= max => {
                        capped[i] = true;
                        continue;
                    }
                    Some(max) => Plan {
                        cap: Some(started + (max - spent[i])),
                        ..base.clone()
                    },
                    None => base.clone(),
                };
                let bar = bars.then(|| {
                    let round = if rounds > 1 {
                        format!(" r{}/{rounds}", r + 1)
                    } else {
                        String::new()
                    };
                    progress_bar(
                        format!("{} · {label} [{}]{round}", suite.heading(), modules[i].name),
                        plan.mode,
                        job.threads,
                    )
                });
                let o = runner::run(w, &plan, bar.as_ref());
                if crate::measure::interrupt::requested() {
                    if let Some(b) = bar {
                        b.finish_and_clear();
                    }
                    return out;
                }
                spent[i] += started.elapsed();
                capped[i] |= o.cut_short;
                if let Some(b) = bar {
                    b.finish_and_clear();
                }
                match &mut outcomes[i] {
                    Some(acc) => acc.merge(&o),
                    slot => *slot = Some(o),
                }
            }
        }
        // Notes of each module's workers (every thread's, each once), per
        // component, before the workers go.
        let notes: Vec<Vec<Vec<String>>> = works.iter().map(worker_notes).collect();
        // Drop the workers (and the objects they made) before the next job.
        drop(works);
        let mut parts = Vec::with_capacity(n);
        for (i, m) in modules.iter().enumerate() {
            let rs = match (&early[i], &outcomes[i]) {
                (Some(r), _) => vec![r.clone()],
                (None, Some(o)) => {
                    let mut rs = results_of(job, &m.name, o, rounds, s, opts);
                    add_notes(&mut rs, &notes[i]);
                    if capped[i] {
                        let max = s.max_op_time.unwrap_or_default().as_secs_f64();
                        for r in &mut rs {
                            r.notes.cut_short = true;
                            r.notes.warnings.push(format!(
                                "cut short by --max-op-time {max} s: partial result of {} calls",
                                r.iterations
                            ));
                        }
                    }
                    rs
                }
                (None, None) => vec![not_measured(
                    job,
                    &m.name,
                    Status::Error,
                    "not run".into(),
                    s,
                    opts,
                )],
            };
            // The result's warnings (warmup errors, a cut-short op, a missed
            // rate) follow its summary on the progress line.
            let summary = rs[0]
                .notes
                .warnings
                .iter()
                .fold(progress::summary(&rs[0]), |l, w| {
                    format!("{l}; warning: {w}")
                });
            parts.push((m.name.clone(), summary));
            out.extend(rs);
        }
        let line = suite.finish_job(None, &label, &parts);
        if !opts.quiet {
            eprintln!("{line}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let keys: Vec<(String, u64, u32)> =
            j.iter().map(|j| (j.id(), j.data_size, j.threads)).collect();
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
