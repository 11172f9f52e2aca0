//! One module's side of a suite, run in that module's worker process
//! (`commands/run_worker.rs`): prepare a job's per-thread workers, run the
//! rounds the scheduler asks for, merge them, and turn them into results.
//! The scheduling process (`bench.rs`) never loads the module.

use std::sync::Arc;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

use crate::measure::job::{Job, JobKind, Options, not_measured, round_mode, rounds_of};
use crate::measure::mode::Mode;
use crate::measure::rate::rate_kept;
use crate::measure::runner::{self, CompOutcome, Outcome, Plan, ThreadWork};
use crate::measure::settings::Settings;
use crate::report::result::BenchResult;
use crate::report::result::HistBin;
use crate::report::result::Status;
use crate::suite::catalogue::build_worker;
use crate::suite::failure::Failure;
use crate::suite::keys::KeyStore;
use crate::suite::op::Prep;
use crate::suite::support::default_size;
use crate::token::module::Module;

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
        if let Some(why) = crate::suite::support::unsupported(&m.caps(), op, size) {
            let why = if ops.len() > 1 {
                format!("{}: {why}", op.id)
            } else {
                why
            };
            return Err(Box::new(not_measured(
                &job.info(),
                &m.name,
                Status::Unsupported,
                why,
                s,
                opts,
            )));
        }
    }
    let name = m.name.clone();
    let fail = |why: String| {
        Box::new(not_measured(
            &job.info(),
            &name,
            Status::Error,
            why,
            s,
            opts,
        ))
    };
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
                Box::new(not_measured(&job.info(), &name, status, why, s, opts))
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

/// What a set of results was measured under.
struct Ctx<'a> {
    module: &'a str,
    job: &'a Job,
    wall: Duration,
    windows: &'a [[u64; 2]],
    rounds: u32,
    s: &'a Settings,
    opts: &'a Options,
}

fn measured(id: String, mechanism: String, comp: &CompOutcome, c: &Ctx<'_>) -> BenchResult {
    let Ctx {
        module,
        job,
        wall,
        windows,
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
    let mut r = not_measured(&job.info(), module, status, String::new(), s, opts);
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
    if !windows.is_empty() {
        r.windows_unix_ns = Some(windows.to_vec());
    }
    if let Some(sm) = summary {
        r.latency_hdr = Some(comp.rec.to_hdr());
        r.ops_per_sec = (secs > 0.0).then(|| comp.rate(wall, job.threads as usize));
        r.set_latency(&sm);
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
        windows: &o.windows,
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

/// The job under way on the module.
struct Current {
    job: usize,
    works: Option<Vec<ThreadWork>>,
    early: Option<BenchResult>,
    outcome: Option<Outcome>,
}

/// One module with its keys, the suite's jobs, and the job under way.
pub struct ModuleBench {
    /// The module, open and logged in.
    pub module: Module,
    /// Its keys (made on first use).
    pub keys: KeyStore,
    settings: Settings,
    opts: Options,
    jobs: Vec<Job>,
    current: Option<Current>,
}

/// What one round did.
pub struct RoundDone {
    /// Stopped at the op's time limit.
    pub cut_short: bool,
    /// Every warmup call failed: later rounds are not worth running.
    pub skip_rest: bool,
    /// The results of the rounds run so far, merged.
    pub results: Vec<BenchResult>,
}

impl ModuleBench {
    /// A module ready for a suite.
    pub fn new(module: Module, keys: KeyStore, settings: Settings, opts: Options) -> Self {
        ModuleBench {
            module,
            keys,
            settings,
            opts,
            jobs: Vec::new(),
            current: None,
        }
    }

    /// The suite's jobs (the same list in every module's worker).
    pub fn set_jobs(&mut self, jobs: Vec<Job>, key: String) {
        self.jobs = jobs;
        self.opts.key = key;
    }

    /// The jobs, as the scheduler sees them.
    pub fn job_infos(&self) -> Vec<crate::measure::job::JobInfo> {
        self.jobs.iter().map(Job::info).collect()
    }

    /// Prepare job `j` (the previous job's workers and objects go first);
    /// the result that says why it cannot run, if it cannot.
    pub fn prepare(&mut self, j: usize) -> Option<BenchResult> {
        self.current = None;
        let job = self.jobs.get(j)?;
        let (works, early) = match prepare(
            &mut self.module,
            &mut self.keys,
            job,
            &self.settings,
            &self.opts,
        ) {
            Ok(w) => (Some(w), None),
            Err(r) => (None, Some(*r)),
        };
        self.current = Some(Current {
            job: j,
            works,
            early: early.clone(),
            outcome: None,
        });
        early
    }

    /// Run round `r` of the prepared job: at most `remaining` long (the
    /// op's time limit less what it has spent), with a progress bar
    /// labelled `bar` when given.
    /// With a `gate`, the warm threads wait for it before measuring (the
    /// other processes of `--processes`).
    pub fn round(
        &mut self,
        r: u32,
        remaining: Option<Duration>,
        bar: Option<String>,
        gate: runner::Gate<'_>,
    ) -> RoundDone {
        let s = &self.settings;
        let Some(cur) = self.current.as_mut() else {
            return RoundDone {
                cut_short: false,
                skip_rest: true,
                results: Vec::new(),
            };
        };
        let job = &self.jobs[cur.job];
        let (mode, warmup) = s.plan_for(&job.info().id);
        let rounds = rounds_of(mode, s);
        if let Some(w) = cur.works.as_mut() {
            let mode = round_mode(mode, r, rounds);
            let plan = Plan {
                mode,
                warmup,
                rate: s.rate,
                keep_samples: self.opts.raw_samples,
                // A slow op warms up no longer than it measures.
                warmup_budget: match (mode, remaining) {
                    (Mode::Duration(d), Some(m)) => Some(d.min(m)),
                    (Mode::Duration(d), None) => Some(d),
                    (Mode::Iterations(_), m) => m,
                },
                cap: remaining.map(|d| Instant::now() + d),
            };
            let bar = bar.map(|label| progress_bar(label, plan.mode, job.threads));
            let o = runner::run(w, &plan, bar.as_ref(), gate);
            if let Some(b) = bar {
                b.finish_and_clear();
            }
            match &mut cur.outcome {
                Some(acc) => acc.merge(&o),
                slot => *slot = Some(o),
            }
        }
        let outcome = cur.outcome.as_ref();
        RoundDone {
            cut_short: outcome.is_some_and(|o| o.cut_short),
            skip_rest: cur.works.is_none()
                || outcome.is_some_and(|o| {
                    o.wall.is_zero() && o.comps.iter().any(CompOutcome::warmup_failed)
                }),
            results: self.results(),
        }
    }

    /// The results of the job so far: why it did not run, or its rounds merged.
    fn results(&self) -> Vec<BenchResult> {
        let Some(cur) = &self.current else {
            return Vec::new();
        };
        let job = &self.jobs[cur.job];
        let (s, opts, name) = (&self.settings, &self.opts, &self.module.name);
        match (&cur.early, &cur.outcome) {
            (Some(r), _) => vec![r.clone()],
            (None, Some(o)) => {
                let rounds = rounds_of(s.plan_for(&job.info().id).0, s);
                let mut rs = results_of(job, name, o, rounds, s, opts);
                add_notes(&mut rs, &worker_notes(&cur.works));
                rs
            }
            (None, None) => vec![not_measured(
                &job.info(),
                name,
                Status::Error,
                "not run".into(),
                s,
                opts,
            )],
        }
    }

    /// The module and its keys, to be dropped in that order's reverse: the
    /// keys (destroying token keys) before the module (`C_Finalize`).
    pub fn into_parts(self) -> (Module, KeyStore) {
        (self.module, self.keys)
    }

    /// End the job: its results; its workers (and the objects they made) go.
    pub fn end_job(&mut self) -> Vec<BenchResult> {
        let rs = self.results();
        self.current = None;
        rs
    }
}
