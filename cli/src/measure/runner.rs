//! Running one measurement: warmup, then a fixed number of iterations or a fixed
//! duration, on n threads released together by a barrier; closed loop by default,
//! open loop with `--rate` (latency counted from each operation's intended start, so
//! a stalled module cannot hide its backlog); an optional weighted op mix.
//!
//! Only the worker's `call` is inside the timed region. Choosing the next mix
//! component, preparing inputs, checking results, recording and progress updates
//! all happen outside it.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier, OnceLock};
use std::time::{Duration, Instant};

use indicatif::ProgressBar;

use crate::measure::mode::Mode;
use crate::stats::Recorder;
use crate::suite::op::Worker;

/// Settings of one measurement.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Iterations or duration (per thread).
    pub mode: Mode,
    /// Unrecorded operations per thread before the measured window.
    pub warmup: u64,
    /// Open-loop target rate in operations per second over all threads.
    pub rate: Option<f64>,
    /// Keep every sample.
    pub keep_samples: bool,
    /// Longest time the warmup may take (each thread stops warming up then).
    pub warmup_budget: Option<Duration>,
    /// Hard end of this op on this module (`--max-op-time`): warmup and
    /// measurement stop there, and the outcome is marked cut short.
    pub cap: Option<Instant>,
}

/// One thread's work.
pub struct ThreadWork {
    /// The operations (one, or the components of a mix).
    pub comps: Vec<Box<dyn Worker>>,
    /// Mix schedule: indices into `comps`, cycled (None for a single op).
    pub schedule: Option<Arc<Vec<u8>>>,
}

/// Results of one component.
#[derive(Debug, Clone)]
pub struct CompOutcome {
    /// Latencies of successful operations.
    pub rec: Recorder,
    /// Failed operations by error name.
    pub errors: BTreeMap<String, u64>,
    /// Successful ops/s of each measurement merged into this one (one per round).
    pub round_rates: Vec<f64>,
    /// Report ops/s as threads ÷ mean latency rather than operations over
    /// the wall clock: the op has untimed work around every call (probe
    /// processes, objects made or destroyed) that the wall clock would count.
    pub rate_from_latency: bool,
    /// Peak resident memory reported by the worker (cold-start probes).
    pub peak_rss_kib: Option<u64>,
    /// Warmup calls made.
    pub warmup_calls: u64,
    /// Warmup calls that failed.
    pub warmup_errors: u64,
    /// Name of the first failed warmup call's error.
    pub warmup_first_error: Option<String>,
}

impl CompOutcome {
    fn new(keep: bool, cap: usize) -> Self {
        CompOutcome {
            rec: Recorder::new(keep, cap),
            errors: BTreeMap::new(),
            round_rates: Vec::new(),
            rate_from_latency: false,
            peak_rss_kib: None,
            warmup_calls: 0,
            warmup_errors: 0,
            warmup_first_error: None,
        }
    }

    /// Add another outcome of the same component.
    pub fn merge(&mut self, o: &CompOutcome) {
        self.rec.merge(&o.rec);
        for (k, v) in &o.errors {
            *self.errors.entry(k.clone()).or_default() += v;
        }
        self.round_rates.extend_from_slice(&o.round_rates);
        self.rate_from_latency |= o.rate_from_latency;
        self.peak_rss_kib = self.peak_rss_kib.max(o.peak_rss_kib);
        self.warmup_calls += o.warmup_calls;
        self.warmup_errors += o.warmup_errors;
        if self.warmup_first_error.is_none() {
            self.warmup_first_error = o.warmup_first_error.clone();
        }
    }

    /// Every warmup call failed (and there was at least one): the op is broken
    /// and was not measured.
    pub fn warmup_failed(&self) -> bool {
        self.warmup_calls > 0 && self.warmup_errors == self.warmup_calls
    }

    /// Successful operations per second over `wall`, or `threads` ÷ mean
    /// latency for ops with untimed work around each call.
    pub fn rate(&self, wall: Duration, threads: usize) -> f64 {
        if self.rate_from_latency {
            return match self.rec.summary(&[]) {
                Some(s) if s.mean_ns > 0.0 => threads as f64 * 1e9 / s.mean_ns,
                _ => 0.0,
            };
        }
        self.rec.count() as f64 / wall.as_secs_f64()
    }

    /// Number of failed operations.
    pub fn error_count(&self) -> u64 {
        self.errors.values().sum()
    }
}

/// Results of one measurement.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Per component.
    pub comps: Vec<CompOutcome>,
    /// Wall clock of the measured window: first thread start to last thread end.
    pub wall: Duration,
    /// A thread stopped at `Plan::cap` before its iterations or duration were done.
    pub cut_short: bool,
    /// The measured window of each round, `[start, end]` in ns since the
    /// Unix epoch (what merging processes and hosts takes the union of).
    pub windows: Vec<[u64; 2]>,
}

impl Outcome {
    /// Add a later round of the same measurement (wall clocks add up).
    pub fn merge(&mut self, o: &Outcome) {
        for (a, b) in self.comps.iter_mut().zip(&o.comps) {
            a.merge(b);
        }
        self.wall += o.wall;
        self.cut_short |= o.cut_short;
        self.windows.extend_from_slice(&o.windows);
    }
}

/// A counter on its own cache line, so that threads do not slow each other down.
#[repr(align(128))]
#[derive(Default)]
struct Counter(AtomicU64);

/// Stop a thread early when its first attempts all fail (a broken op would otherwise
/// spin through a whole `--duration` producing errors).
const GIVE_UP_AFTER: u64 = 50;

/// Sleep most of the way to `t`, then spin.
#[inline]
fn wait_until(t: Instant) {
    loop {
        let now = Instant::now();
        if now >= t {
            return;
        }
        let left = t - now;
        if left > Duration::from_micros(300) {
            std::thread::sleep(left - Duration::from_micros(200));
        } else {
            std::hint::spin_loop();
        }
    }
}

struct ThreadResult {
    comps: Vec<CompOutcome>,
    start: Option<Instant>,
    end: Option<Instant>,
    cut_short: bool,
}

/// What the threads of a round wait for once warm, besides each other: the
/// scheduler's go, when several processes measure together
/// (`--processes`). Called by one thread while the others wait.
pub type Gate<'a> = Option<&'a (dyn Fn() + Sync)>;

fn run_thread(
    work: &mut ThreadWork,
    plan: &Plan,
    threads: usize,
    barrier: &Barrier,
    counter: &Counter,
    measuring: &OnceLock<Instant>,
    gate: Gate<'_>,
) -> ThreadResult {
    let n = work.comps.len();
    let pick = |i: u64| -> usize {
        match &work.schedule {
            Some(s) => s[(i % s.len() as u64) as usize] as usize,
            None => 0,
        }
    };
    // Warmup: same path, nothing recorded but failures (counted, first one named).
    let mut warm: Vec<(u64, u64, Option<String>)> = vec![(0, 0, None); n];
    let warm_end = plan.warmup_budget.map(|b| Instant::now() + b);
    let stop = |t: Instant, end: Option<Instant>| end.is_some_and(|e| t >= e);
    for i in 0..plan.warmup {
        let now = Instant::now();
        if stop(now, warm_end) || stop(now, plan.cap) || crate::measure::interrupt::requested() {
            break;
        }
        let c = pick(i);
        let w = &mut work.comps[c];
        w.before();
        let rv = w.call();
        let e = &mut warm[c];
        e.0 += 1;
        if let Err(f) = w.check(rv) {
            e.1 += 1;
            e.2.get_or_insert_with(|| f.name());
        }
    }
    let (calls, failed) = warm.iter().fold((0, 0), |(c, f), w| (c + w.0, f + w.1));
    let cap = match plan.mode {
        Mode::Iterations(k) if plan.keep_samples => k as usize / n.max(1) + 1,
        _ if plan.keep_samples => 4096,
        _ => 0,
    };
    let mut comps: Vec<CompOutcome> = (0..n)
        .map(|_| CompOutcome::new(plan.keep_samples, cap))
        .collect();
    for (c, (calls, errors, first)) in comps.iter_mut().zip(warm) {
        (c.warmup_calls, c.warmup_errors, c.warmup_first_error) = (calls, errors, first);
    }
    let interval = plan
        .rate
        .map(|r| Duration::from_secs_f64(threads as f64 / r));

    let warm = barrier.wait();
    if let Some(gate) = gate {
        // Every thread of this process is warm: one says so and waits for
        // the other processes' (the scheduler's go), the rest wait for it.
        if warm.is_leader() {
            gate();
        }
        barrier.wait();
    }
    if calls > 0 && failed == calls {
        // Every warmup call failed: report that instead of measuring errors.
        return ThreadResult {
            comps,
            start: None,
            end: None,
            cut_short: false,
        };
    }
    let start = Instant::now();
    // Warmup is over: the progress display switches from "warmup" to the rate.
    measuring.get_or_init(|| start);
    let deadline = match plan.mode {
        Mode::Duration(d) => Some(start + d),
        Mode::Iterations(_) => None,
    };
    let limit = match plan.mode {
        Mode::Iterations(k) => k,
        Mode::Duration(_) => u64::MAX,
    };
    let (mut ok, mut end, mut cut_short) = (0u64, None, false);
    let mut i = 0u64;
    while i < limit {
        if stop(Instant::now(), plan.cap) || crate::measure::interrupt::requested() {
            cut_short = true;
            break;
        }
        let c = pick(i);
        let w = &mut work.comps[c];
        w.before();
        // Open loop: the operation is due at `due`; latency counts from then.
        let due = interval.map(|iv| start + iv.mul_f64(i as f64));
        if let Some(due) = due {
            if deadline.is_some_and(|d| due >= d) {
                break;
            }
            if stop(due, plan.cap) {
                cut_short = true;
                break;
            }
            wait_until(due);
        }
        let t0 = Instant::now();
        let rv = w.call();
        let t1 = Instant::now();
        let began = due.unwrap_or(t0);
        match w.check(rv) {
            Ok(()) => {
                let ns = w.measured_ns().unwrap_or((t1 - began).as_nanos() as u64);
                comps[c].rec.record(ns);
                ok += 1;
            }
            Err(f) => *comps[c].errors.entry(f.name()).or_default() += 1,
        }
        end = Some(t1);
        i += 1;
        counter.0.store(i, Ordering::Relaxed);
        if ok == 0 && i >= GIVE_UP_AFTER {
            break;
        }
        if deadline.is_some_and(|d| t1 >= d) {
            break;
        }
    }
    for (outcome, w) in comps.iter_mut().zip(&work.comps) {
        outcome.peak_rss_kib = w.peak_rss_kib();
        outcome.rate_from_latency = w.rate_from_latency();
    }
    ThreadResult {
        comps,
        start: Some(start),
        end,
        cut_short,
    }
}

/// Run one measurement over `work.len()` threads (one entry per thread);
/// with a `gate`, the warm threads start measuring when it returns.
pub fn run(
    work: &mut [ThreadWork],
    plan: &Plan,
    bar: Option<&ProgressBar>,
    gate: Gate<'_>,
) -> Outcome {
    let threads = work.len();
    let ncomp = work.first().map(|w| w.comps.len()).unwrap_or(0);
    let barrier = Barrier::new(threads);
    let counters: Vec<Counter> = (0..threads).map(|_| Counter::default()).collect();
    let done = AtomicBool::new(false);
    let measuring = OnceLock::new();
    let results: Vec<ThreadResult> = std::thread::scope(|scope| {
        let handles: Vec<_> = work
            .iter_mut()
            .zip(&counters)
            .map(|(w, c)| {
                let (barrier, plan, measuring) = (&barrier, plan, &measuring);
                scope.spawn(move || run_thread(w, plan, threads, barrier, c, measuring, gate))
            })
            .collect();
        if let Some(bar) = bar {
            let (counters, done, measuring) = (&counters, &done, &measuring);
            scope.spawn(move || tick(bar, counters, done, plan, measuring));
        }
        let r = handles
            .into_iter()
            .map(|h| h.join().expect("benchmark thread panicked"))
            .collect();
        done.store(true, Ordering::Relaxed);
        r
    });
    let start = results.iter().filter_map(|r| r.start).min();
    let end = results.iter().filter_map(|r| r.end).max();
    let wall = match (start, end) {
        (Some(s), Some(e)) if e > s => e - s,
        _ => Duration::ZERO,
    };
    let mut comps: Vec<CompOutcome> = (0..ncomp)
        .map(|_| CompOutcome::new(plan.keep_samples, 0))
        .collect();
    for r in &results {
        for (a, b) in comps.iter_mut().zip(&r.comps) {
            a.merge(b);
        }
    }
    if wall > Duration::ZERO {
        for c in &mut comps {
            c.round_rates = vec![c.rate(wall, threads)];
        }
    }
    let windows = match (start, end) {
        (Some(s), Some(e)) if e > s => vec![[unix_ns(s), unix_ns(e)]],
        _ => Vec::new(),
    };
    Outcome {
        comps,
        wall,
        cut_short: results.iter().any(|r| r.cut_short),
        windows,
    }
}

/// An instant as nanoseconds since the Unix epoch (the system clock now,
/// less the monotonic time since `t`), comparable between processes and,
/// with synchronised clocks, hosts.
pub fn unix_ns(t: Instant) -> u64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    now.saturating_sub(t.elapsed()).as_nanos() as u64
}

/// Progress ticker: reads the per-thread counters ten times a second, outside every
/// timed region; shows `warmup` until the measurement starts, then the operations
/// completed over the time measured so far (see [`crate::measure::progress::live`]).
fn tick(
    bar: &ProgressBar,
    counters: &[Counter],
    done: &AtomicBool,
    plan: &Plan,
    measuring: &OnceLock<Instant>,
) {
    while !done.load(Ordering::Relaxed) {
        let total: u64 = counters.iter().map(|c| c.0.load(Ordering::Relaxed)).sum();
        let elapsed = measuring.get().map(Instant::elapsed);
        match plan.mode {
            Mode::Iterations(_) => bar.set_position(total),
            Mode::Duration(_) => bar.set_position(elapsed.unwrap_or_default().as_millis() as u64),
        }
        bar.set_message(crate::measure::progress::live(elapsed, total));
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A mix schedule of `len` entries drawn with the given weights.
pub fn mix_schedule(weights: &[u32], len: usize, seed: u64) -> Vec<u8> {
    let total: u64 = weights.iter().map(|&w| w as u64).sum();
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            // xorshift64*: cheap, and only ever run before the measurement.
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            let r = x.wrapping_mul(0x2545_F491_4F6C_DD1D) % total.max(1);
            let mut acc = 0u64;
            weights
                .iter()
                .position(|&w| {
                    acc += w as u64;
                    r < acc
                })
                .unwrap_or(0) as u8
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::failure::Failure;
    use cryptoki_sys::{CK_RV, CKR_OK, CKR_SIGNATURE_INVALID};

    /// A plan with no warmup, rate, samples or limits.
    fn plan(mode: Mode) -> Plan {
        Plan {
            mode,
            warmup: 0,
            rate: None,
            keep_samples: false,
            warmup_budget: None,
            cap: None,
        }
    }

    /// A fake op that spins for a fixed time and fails every `fail_every` calls.
    struct Spin {
        ns: u64,
        calls: u64,
        fail_every: u64,
    }

    impl Worker for Spin {
        fn call(&mut self) -> CK_RV {
            let t = Instant::now();
            while t.elapsed().as_nanos() < self.ns as u128 {
                std::hint::spin_loop();
            }
            self.calls += 1;
            if self.fail_every > 0 && self.calls.is_multiple_of(self.fail_every) {
                CKR_SIGNATURE_INVALID
            } else {
                CKR_OK
            }
        }
        fn check(&mut self, rv: CK_RV) -> Result<(), Failure> {
            crate::suite::failure::ck(rv)
        }
    }

    fn work(ns: u64, fail_every: u64) -> ThreadWork {
        ThreadWork {
            comps: vec![Box::new(Spin {
                ns,
                calls: 0,
                fail_every,
            })],
            schedule: None,
        }
    }

    #[test]
    fn iterations_are_counted_and_latency_measured() {
        let mut w = vec![work(20_000, 0)];
        let plan = Plan {
            mode: Mode::Iterations(200),
            warmup: 5,
            rate: None,
            keep_samples: true,
            warmup_budget: None,
            cap: None,
        };
        let o = run(&mut w, &plan, None, None);
        let s = o.comps[0].rec.summary(&[]).unwrap();
        assert_eq!(s.count, 200);
        assert!(s.min_ns >= 20_000, "a 20 µs op measured {} ns", s.min_ns);
        assert!(s.p50_ns < 200_000, "p50 {} ns", s.p50_ns);
        assert!(o.wall >= Duration::from_micros(200 * 20));
        assert_eq!(o.comps[0].rec.samples().unwrap().len(), 200);
    }

    #[test]
    fn errors_are_counted_by_name_and_not_recorded() {
        let mut w = vec![work(0, 4)];
        let plan = plan(Mode::Iterations(100));
        let o = run(&mut w, &plan, None, None);
        assert_eq!(o.comps[0].errors.get("CKR_SIGNATURE_INVALID"), Some(&25));
        assert_eq!(o.comps[0].rec.count(), 75);
    }

    #[test]
    fn threads_each_run_their_iterations() {
        let mut w = vec![work(1_000, 0), work(1_000, 0)];
        let plan = plan(Mode::Iterations(50));
        let o = run(&mut w, &plan, None, None);
        assert_eq!(o.comps[0].rec.count(), 100);
    }

    #[test]
    fn duration_mode_stops_on_time() {
        let mut w = vec![work(10_000, 0)];
        let plan = plan(Mode::Duration(Duration::from_millis(100)));
        let t = Instant::now();
        let o = run(&mut w, &plan, None, None);
        // Unbounded if duration mode did not stop; generous for a busy machine.
        assert!(t.elapsed() < Duration::from_secs(5));
        assert!(o.wall >= Duration::from_millis(100));
        assert!(o.comps[0].rec.count() > 10);
    }

    #[test]
    fn open_loop_rate_is_respected() {
        // 100 calls of 1 µs offered at 500/s: all are made, and the last
        // starts no earlier than 99 intervals after the first, however idle
        // or busy the machine (load can only make the run longer).
        let mut w = vec![work(1_000, 0)];
        let plan = Plan {
            mode: Mode::Iterations(100),
            warmup: 0,
            rate: Some(500.0),
            keep_samples: false,
            warmup_budget: None,
            cap: None,
        };
        let started = std::time::Instant::now();
        let o = run(&mut w, &plan, None, None);
        let took = started.elapsed();
        assert_eq!(o.comps[0].rec.count(), 100);
        assert!(
            took >= Duration::from_micros(99 * 2_000),
            "100 calls at 500/s took only {took:?}"
        );
    }

    #[test]
    fn open_loop_counts_backlog_from_intended_start() {
        // 2 ms operations offered at 1000/s: the queue grows, and latency measured
        // from the intended start must grow far beyond the 2 ms service time.
        let mut w = vec![work(2_000_000, 0)];
        let plan = Plan {
            mode: Mode::Iterations(50),
            warmup: 0,
            rate: Some(1000.0),
            keep_samples: false,
            warmup_budget: None,
            cap: None,
        };
        let o = run(&mut w, &plan, None, None);
        let s = o.comps[0].rec.summary(&[]).unwrap();
        assert!(
            s.max_ns > 40_000_000,
            "max {} ns should include ~50 ms of backlog",
            s.max_ns
        );
    }

    #[test]
    fn warmup_failures_are_counted_and_a_failing_warmup_skips_measuring() {
        let plan = Plan {
            mode: Mode::Iterations(40),
            warmup: 10,
            rate: None,
            keep_samples: false,
            warmup_budget: None,
            cap: None,
        };
        let o = run(&mut [work(0, 5)], &plan, None, None);
        let c = &o.comps[0];
        assert_eq!((c.warmup_calls, c.warmup_errors), (10, 2));
        assert_eq!(
            c.warmup_first_error.as_deref(),
            Some("CKR_SIGNATURE_INVALID")
        );
        assert!(!c.warmup_failed());
        assert_eq!(c.rec.count() + c.error_count(), 40);
        let o = run(&mut [work(0, 1)], &plan, None, None);
        let c = &o.comps[0];
        assert!(c.warmup_failed());
        assert_eq!(c.rec.count() + c.error_count(), 0, "not measured");
        assert_eq!(o.wall, Duration::ZERO);
    }

    #[test]
    fn the_cap_ends_warmup_and_measurement_with_a_partial_result() {
        // 20 ms ops: 50 warmup calls and 1000 iterations would take 21 s.
        let plan = Plan {
            mode: Mode::Iterations(1000),
            warmup: 50,
            rate: None,
            keep_samples: false,
            warmup_budget: Some(Duration::from_millis(50)),
            cap: Some(Instant::now() + Duration::from_millis(200)),
        };
        let t = Instant::now();
        let o = run(&mut [work(20_000_000, 0)], &plan, None, None);
        // 21 s without the cap; generous for a busy machine.
        assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
        assert!(o.cut_short);
        let c = &o.comps[0];
        assert!(c.warmup_calls <= 4, "warmup bounded: {}", c.warmup_calls);
        assert!((1..1000).contains(&c.rec.count()), "{}", c.rec.count());
        // Without a cap the same plan is not cut short.
        let plan = Plan {
            mode: Mode::Iterations(3),
            cap: None,
            ..plan
        };
        assert!(!run(&mut [work(1_000, 0)], &plan, None, None).cut_short);
    }

    #[test]
    fn the_gate_is_passed_once_by_warm_threads_before_measuring() {
        let calls = AtomicU64::new(0);
        let gate = || {
            calls.fetch_add(1, Ordering::SeqCst);
        };
        let mut w = vec![work(1_000, 0), work(1_000, 0), work(1_000, 0)];
        let o = run(&mut w, &plan(Mode::Iterations(20)), None, Some(&gate));
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        assert_eq!(o.comps[0].rec.count(), 60);
        assert_eq!(o.windows.len(), 1);
        assert!(o.windows[0][0] < o.windows[0][1]);
    }

    #[test]
    fn a_broken_op_gives_up_early() {
        let mut w = vec![work(0, 1)];
        let plan = plan(Mode::Duration(Duration::from_secs(30)));
        let t = Instant::now();
        let o = run(&mut w, &plan, None, None);
        assert!(t.elapsed() < Duration::from_secs(5));
        assert_eq!(o.comps[0].error_count(), GIVE_UP_AFTER);
    }

    #[test]
    fn mix_schedule_follows_weights() {
        let s = mix_schedule(&[80, 15, 5], 100_000, 42);
        let count = |k: u8| s.iter().filter(|&&x| x == k).count() as f64 / 1000.0;
        assert!((count(0) - 80.0).abs() < 1.5, "{}", count(0));
        assert!((count(1) - 15.0).abs() < 1.5, "{}", count(1));
        assert!((count(2) - 5.0).abs() < 1.0, "{}", count(2));
    }

    #[test]
    fn mixed_components_are_recorded_separately() {
        let mut w = vec![ThreadWork {
            comps: vec![
                Box::new(Spin {
                    ns: 1_000,
                    calls: 0,
                    fail_every: 0,
                }),
                Box::new(Spin {
                    ns: 50_000,
                    calls: 0,
                    fail_every: 0,
                }),
            ],
            schedule: Some(Arc::new(mix_schedule(&[90, 10], 1000, 7))),
        }];
        let plan = plan(Mode::Iterations(300));
        let o = run(&mut w, &plan, None, None);
        let (a, b) = (o.comps[0].rec.count(), o.comps[1].rec.count());
        assert_eq!(a + b, 300);
        assert!(a > b * 4);
        let (sa, sb) = (
            o.comps[0].rec.summary(&[]).unwrap(),
            o.comps[1].rec.summary(&[]).unwrap(),
        );
        assert!(sb.p50_ns > sa.p50_ns * 5);
    }
}
