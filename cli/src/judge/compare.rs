//! Comparing a run with a baseline: per-result Δ% of ops/s and of p95, classified
//! against a threshold and the measured noise (a difference within the confidence
//! intervals is not a regression), with the exit codes of the contract.
//!
//! Results are matched by (module, op, data size, threads). Matched results whose
//! measurement settings differ (mechanism, closed/open loop, rate, mix, key) make
//! the comparison inconclusive. In ratio mode (`--reference MODULE`) each figure is
//! a module's ops/s divided by the reference module's in the same run, which cancels
//! most of the machine's speed out of the comparison.

use std::collections::BTreeSet;

use crate::error::{EXIT_INCONCLUSIVE, EXIT_OK, EXIT_REGRESSION};
use crate::machine::MachineClass;
use crate::report::comparison::Class;
use crate::report::comparison::Comparison;
use crate::report::comparison::Entry;
use crate::report::format::fmt_rate;
use crate::report::format::fmt_size;
use crate::report::format::fmt_us;
use crate::report::result::BenchResult;
use crate::report::result::Ratio;
use crate::report::result::Report;
use crate::report::result::Status;
use crate::report::result::ratios;
use crate::report::verdict::VerdictPage;

/// Classify a change where higher is better: `delta_pct` against the threshold and
/// the noise (both in percent).
///
/// The noise is a relative error of the figures, and a relative error is a factor:
/// the true value may lie up to (1 + noise) above or below the measured one. A rise
/// is beyond the noise when the figure grew by more than that factor (Δ > noise), a
/// drop when it fell below baseline ÷ (1 + noise) (Δ < −noise ⁄ (1 + noise)). So a
/// 100× slowdown is a regression even when one stray sample made the noise ±150 %,
/// which a symmetric percentage band would have hidden. Either way the change must
/// also exceed the threshold.
pub fn classify(delta_pct: f64, noise_pct: f64, threshold_pct: f64) -> Class {
    if !delta_pct.is_finite() {
        return Class::Unchanged;
    }
    let factor = 1.0 + delta_pct / 100.0;
    let spread = 1.0 + noise_pct.max(0.0) / 100.0;
    if delta_pct < -threshold_pct && factor * spread < 1.0 {
        Class::Regressed
    } else if delta_pct > threshold_pct && factor > spread {
        Class::Improved
    } else {
        Class::Unchanged
    }
}

fn label(m: &str, op: &str, size: u64, thr: u32) -> String {
    format!("{m} {op} {} {thr}t", fmt_size(size))
}

fn pct(cur: f64, base: f64) -> f64 {
    (cur - base) / base * 100.0
}

fn settings_diff(a: &BenchResult, b: &BenchResult) -> Option<String> {
    let mut d = Vec::new();
    if a.mechanism != b.mechanism {
        d.push(format!("mechanism {} vs {}", a.mechanism, b.mechanism));
    }
    if a.mode != b.mode || a.rate_target != b.rate_target {
        d.push(format!(
            "mode {} {:?} vs {} {:?}",
            a.mode, a.rate_target, b.mode, b.rate_target
        ));
    }
    if a.mix != b.mix {
        d.push(format!("mix {:?} vs {:?}", a.mix, b.mix));
    }
    if a.key != b.key {
        d.push(format!("key {} vs {}", a.key, b.key));
    }
    (!d.is_empty()).then(|| d.join(", "))
}

fn compare_result(cur: &BenchResult, base: &BenchResult, threshold: f64) -> Entry {
    let noise = 100.0 * (cur.rel_noise().powi(2) + base.rel_noise().powi(2)).sqrt();
    let mut e = Entry {
        module: cur.module.clone(),
        op: cur.op.clone(),
        data_size: cur.data_size,
        threads: cur.threads,
        current: cur.ops_per_sec,
        baseline: base.ops_per_sec,
        delta_pct: None,
        noise_pct: noise,
        p95_current_us: cur.p95_us,
        p95_baseline_us: base.p95_us,
        p95_delta_pct: None,
        p95_class: None,
        bytes_per_sec_current: cur.bytes_per_sec,
        bytes_per_sec_baseline: base.bytes_per_sec,
        bytes_per_sec_ratio: match (cur.bytes_per_sec, base.bytes_per_sec) {
            (Some(c), Some(b)) if b > 0.0 => Some(c / b),
            _ => None,
        },
        class: Class::Unchanged,
        note: None,
    };
    match (base.status, cur.status) {
        (Status::Ok, Status::Ok) => {}
        (Status::Ok, s) => {
            e.class = Class::Regressed;
            e.note = Some(format!("was ok, now {}", s.as_str()));
            return e;
        }
        (s, Status::Ok) => {
            e.class = Class::Improved;
            e.note = Some(format!("was {}, now ok", s.as_str()));
            return e;
        }
        (a, b) => {
            e.note = Some(format!("not comparable: {} / {}", a.as_str(), b.as_str()));
            return e;
        }
    }
    if let (Some(c), Some(b)) = (cur.ops_per_sec, base.ops_per_sec)
        && b > 0.0
    {
        let d = pct(c, b);
        e.delta_pct = Some(d);
        e.class = classify(d, noise, threshold);
        if e.class == Class::Unchanged && d.abs() > threshold {
            e.note = Some("within noise".into());
        }
    }
    if let (Some(c), Some(b)) = (cur.p95_us, base.p95_us)
        && b > 0.0
    {
        e.p95_delta_pct = Some(pct(c, b));
        // Lower latency is better: classify the change of its inverse.
        e.p95_class = Some(classify(pct(b, c), noise, threshold));
    }
    e
}

fn compare_ratio(cur: &Ratio, base: &Ratio, threshold: f64) -> Entry {
    let noise = 100.0 * (cur.noise.powi(2) + base.noise.powi(2)).sqrt();
    let d = pct(cur.ratio, base.ratio);
    let class = classify(d, noise, threshold);
    Entry {
        module: cur.module.clone(),
        op: cur.op.clone(),
        data_size: cur.data_size,
        threads: cur.threads,
        current: Some(cur.ratio),
        baseline: Some(base.ratio),
        delta_pct: Some(d),
        noise_pct: noise,
        p95_current_us: None,
        p95_baseline_us: None,
        p95_delta_pct: None,
        p95_class: None,
        bytes_per_sec_current: None,
        bytes_per_sec_baseline: None,
        bytes_per_sec_ratio: None,
        class,
        note: (class == Class::Unchanged && d.abs() > threshold).then(|| "within noise".into()),
    }
}

fn metadata_warnings(cur: &Report, base: &Report) -> Vec<String> {
    let mut w = Vec::new();
    let (a, b) = (&cur.metadata, &base.metadata);
    match (&a.system.machine_class, &b.system.machine_class) {
        (Some(x), Some(y)) => {
            let d = y.differences(x);
            if !d.is_empty() {
                w.push(format!("machine class differs: {}", d.join(", ")));
            }
        }
        _ => w.push("machine class unknown (a file records none)".into()),
    }
    if a.system.cpu_model != b.system.cpu_model {
        w.push(format!(
            "CPU differs: '{}' vs '{}'",
            a.system.cpu_model, b.system.cpu_model
        ));
    }
    for m in &a.modules {
        if let Some(o) = b.modules.iter().find(|o| o.name == m.name)
            && o.sha256 != m.sha256
        {
            w.push(format!(
                "module {} is a different build (sha256 differs)",
                m.name
            ));
        }
    }
    w
}

/// Why `base` may not judge `cur`, or `None` if it may.
///
/// A baseline holds for one machine class ([`MachineClass`]): ratios and ops/s
/// measured on one class do not carry to another. In ratio mode the reference
/// module must also be the same library (description and version of `C_GetInfo`:
/// SoftHSM2 2.6 and 2.7 are different yardsticks), and every other module the same
/// build (its description, e.g. our default and pure-Rust builds); its version may
/// change, since that is what is being judged.
pub fn class_mismatch(cur: &Report, base: &Report, reference: Option<&str>) -> Option<String> {
    let mut why = machine_reasons(
        cur.metadata.system.machine_class.as_ref(),
        base.metadata.system.machine_class.as_ref(),
    );
    if let Some(reference) = reference {
        why.extend(module_reasons(cur, base, reference));
    }
    refusal(why)
}

/// [`class_mismatch`] for the machine alone, before a run: may `base` judge a
/// run on a machine of class `here`?
pub fn machine_mismatch(here: &MachineClass, base: &Report) -> Option<String> {
    refusal(machine_reasons(
        Some(here),
        base.metadata.system.machine_class.as_ref(),
    ))
}

fn machine_reasons(cur: Option<&MachineClass>, base: Option<&MachineClass>) -> Vec<String> {
    match (cur, base) {
        (Some(c), Some(b)) => {
            let d = b.differences(c);
            if d.is_empty() {
                Vec::new()
            } else {
                vec![format!(
                    "the baseline is of machine class {}, this run of {} ({})",
                    b.id,
                    c.id,
                    d.join(", ")
                )]
            }
        }
        (Some(_), None) => vec!["the baseline records no machine class".into()],
        (None, _) => vec!["the current run records no machine class".into()],
    }
}

fn module_reasons(cur: &Report, base: &Report, reference: &str) -> Vec<String> {
    let mut why = Vec::new();
    for m in &cur.metadata.modules {
        let Some(o) = base.metadata.modules.iter().find(|o| o.name == m.name) else {
            continue;
        };
        let (x, y) = (&o.library, &m.library);
        if m.name == reference && (x.description != y.description || x.version != y.version) {
            why.push(format!(
                "reference {} is '{} {}' in the baseline, '{} {}' now",
                m.name, x.description, x.version, y.description, y.version
            ));
        } else if x.description != y.description {
            why.push(format!(
                "module {} is build '{}' in the baseline, '{}' now",
                m.name, x.description, y.description
            ));
        }
    }
    why
}

fn refusal(why: Vec<String>) -> Option<String> {
    (!why.is_empty()).then(|| {
        format!(
            "{}: a baseline holds only for its own machine class and builds; record one on \
             this machine (scripts/refresh-baselines) or pass --allow-class-mismatch",
            why.join("; ")
        )
    })
}

/// Compare `cur` with `base`. With `reference`, compare ratios to that module.
pub fn compare(cur: &Report, base: &Report, threshold: f64, reference: Option<&str>) -> Comparison {
    let mut c = Comparison {
        schema: "hsm-bench-compare/1",
        figure: reference.map_or("ops_per_sec".into(), |r| format!("ratio to {r}")),
        threshold_pct: threshold,
        current: cur.metadata.timestamp.clone(),
        baseline: base.metadata.timestamp.clone(),
        entries: Vec::new(),
        missing: Vec::new(),
        added: Vec::new(),
        mismatches: Vec::new(),
        warnings: metadata_warnings(cur, base),
    };
    let key = |r: &BenchResult| r.key();
    let cur_keys: BTreeSet<_> = cur.results.iter().map(key).collect();
    let base_keys: BTreeSet<_> = base.results.iter().map(key).collect();
    for r in &base.results {
        if !cur_keys.contains(&key(r)) {
            c.missing
                .push(label(&r.module, &r.op, r.data_size, r.threads));
        }
    }
    for r in &cur.results {
        if !base_keys.contains(&key(r)) {
            c.added
                .push(label(&r.module, &r.op, r.data_size, r.threads));
        }
    }
    for r in &cur.results {
        if let Some(b) = base.results.iter().find(|b| key(b) == key(r))
            && let Some(d) = settings_diff(r, b)
        {
            c.mismatches.push(format!(
                "{}: {d}",
                label(&r.module, &r.op, r.data_size, r.threads)
            ));
        }
    }
    match reference {
        None => {
            for r in &cur.results {
                if let Some(b) = base.results.iter().find(|b| key(b) == key(r)) {
                    c.entries.push(compare_result(r, b, threshold));
                }
            }
        }
        Some(reference) => {
            let rc = ratios(&cur.results, reference);
            let rb = ratios(&base.results, reference);
            for x in &rc {
                if let Some(y) = rb.iter().find(|y| {
                    y.module == x.module
                        && y.op == x.op
                        && y.data_size == x.data_size
                        && y.threads == x.threads
                }) {
                    c.entries.push(compare_ratio(x, y, threshold));
                }
            }
        }
    }
    c
}

impl Comparison {
    /// Number of regressions.
    pub fn regressions(&self) -> usize {
        self.entries
            .iter()
            .filter(|e| e.class == Class::Regressed)
            .count()
    }

    /// Whether anything could be compared.
    pub fn conclusive(&self) -> bool {
        self.mismatches.is_empty()
            && self
                .entries
                .iter()
                .any(|e| e.delta_pct.is_some() || e.class != Class::Unchanged)
    }

    /// Exit code: 3 if inconclusive (mismatched settings, nothing comparable), 1 for
    /// regressions when `fail_on_regression`, 0 otherwise.
    pub fn exit_code(&self, fail_on_regression: bool) -> i32 {
        if !self.conclusive() {
            EXIT_INCONCLUSIVE
        } else if fail_on_regression && self.regressions() > 0 {
            EXIT_REGRESSION
        } else {
            EXIT_OK
        }
    }
}

impl VerdictPage for Comparison {
    fn heading(&self) -> (&'static str, String) {
        (
            "comparison",
            format!("current {} vs baseline {}", self.current, self.baseline),
        )
    }

    fn rows(&self) -> (Vec<String>, Vec<Vec<String>>) {
        let ratio = self.figure != "ops_per_sec";
        let fig = |v: Option<f64>| match v {
            Some(x) if ratio => format!("{x:.3}x"),
            Some(x) => fmt_rate(x),
            None => "-".into(),
        };
        let mut headers: Vec<String> = ["module", "op", "size", "thr"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let name = if ratio { "ratio" } else { "ops/s" };
        headers.extend([
            format!("{name} now"),
            format!("{name} base"),
            "Δ".into(),
            "noise".into(),
        ]);
        if !ratio {
            headers.extend(["p95 now".into(), "p95 base".into(), "Δp95".into()]);
        }
        // Throughput columns when any compared op has a data size on either side.
        let tput = self
            .entries
            .iter()
            .any(|e| e.bytes_per_sec_current.is_some() || e.bytes_per_sec_baseline.is_some());
        if tput {
            headers.extend(["MB/s now".into(), "MB/s base".into(), "MB/s ratio".into()]);
        }
        headers.push("verdict".into());
        let rows = self
            .entries
            .iter()
            .map(|e| {
                let mut r = vec![
                    e.module.clone(),
                    e.op.clone(),
                    fmt_size(e.data_size),
                    e.threads.to_string(),
                    fig(e.current),
                    fig(e.baseline),
                    e.delta_pct.map_or("-".into(), |d| format!("{d:+.1}%")),
                    format!("±{:.1}%", e.noise_pct),
                ];
                if !ratio {
                    let f = |v: Option<f64>| v.map_or("-".into(), fmt_us);
                    r.push(f(e.p95_current_us));
                    r.push(f(e.p95_baseline_us));
                    r.push(match (e.p95_delta_pct, e.p95_class) {
                        (Some(d), Some(Class::Regressed)) => format!("{d:+.1}% slower"),
                        (Some(d), _) => format!("{d:+.1}%"),
                        _ => "-".into(),
                    });
                }
                if tput {
                    let mb = |v: Option<f64>| v.map_or("-".into(), |b| format!("{:.2}", b / 1e6));
                    r.push(mb(e.bytes_per_sec_current));
                    r.push(mb(e.bytes_per_sec_baseline));
                    r.push(
                        e.bytes_per_sec_ratio
                            .map_or("-".into(), |x| format!("{x:.3}x")),
                    );
                }
                r.push(match &e.note {
                    Some(n) => format!("{} ({n})", e.class.mark()),
                    None => e.class.mark().into(),
                });
                r
            })
            .collect();
        (headers, rows)
    }

    fn summary_line(&self) -> String {
        let n = |c: Class| self.entries.iter().filter(|e| e.class == c).count();
        format!(
            "{} improved, {} regressed, {} unchanged, {} missing, {} new (threshold {}%, figure {})",
            n(Class::Improved),
            n(Class::Regressed),
            n(Class::Unchanged),
            self.missing.len(),
            self.added.len(),
            self.threshold_pct,
            self.figure
        )
    }

    fn notes(&self) -> Vec<String> {
        let mut out = Vec::new();
        out.extend(
            self.missing
                .iter()
                .map(|m| format!("missing in current run: {m}")),
        );
        out.extend(self.added.iter().map(|m| format!("not in baseline: {m}")));
        out.extend(
            self.mismatches
                .iter()
                .map(|m| format!("MISMATCHED SETTINGS (inconclusive): {m}")),
        );
        out.extend(self.warnings.iter().map(|w| format!("warning: {w}")));
        if self.mismatches.is_empty() && !self.conclusive() {
            out.push("INCONCLUSIVE: no result could be compared".into());
        }
        out
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::report::fixtures::{report, result, sized};

    #[test]
    fn classification_uses_threshold_and_noise() {
        assert_eq!(classify(-10.0, 1.0, 5.0), Class::Regressed);
        assert_eq!(classify(-4.0, 1.0, 5.0), Class::Unchanged);
        assert_eq!(classify(10.0, 1.0, 5.0), Class::Improved);
        // Inside the noise: not a regression even beyond the threshold.
        assert_eq!(classify(-10.0, 12.0, 5.0), Class::Unchanged);
        assert_eq!(classify(f64::NAN, 0.0, 5.0), Class::Unchanged);
        // Inside the threshold: unchanged even beyond the noise.
        assert_eq!(classify(-4.0, 0.0, 5.0), Class::Unchanged);
    }

    #[test]
    fn noise_is_a_factor_either_way() {
        // ±100 % noise: a halving is within it, a fall to a third is not.
        assert_eq!(classify(-50.0, 100.0, 5.0), Class::Unchanged);
        assert_eq!(classify(-67.0, 100.0, 5.0), Class::Regressed);
        // Upwards the band is the noise itself.
        assert_eq!(classify(99.0, 100.0, 5.0), Class::Unchanged);
        assert_eq!(classify(101.0, 100.0, 5.0), Class::Improved);
        // A 169× slowdown is never hidden by a noisy baseline (seen in CI: a ratio
        // from 1.014 to 0.006 with ±145 % noise).
        assert_eq!(classify(-99.4, 145.2, 5.0), Class::Regressed);
    }

    #[test]
    fn identical_runs_are_unchanged_and_exit_zero() {
        let a = report(vec![result("m", "ed25519-sign", 1000.0, 0.01)]);
        let c = compare(&a, &a, 5.0, None);
        assert_eq!(c.entries.len(), 1);
        assert_eq!(c.entries[0].class, Class::Unchanged);
        assert_eq!(c.exit_code(true), EXIT_OK);
    }

    #[test]
    fn slower_run_regresses_and_exits_one_only_when_asked() {
        let base = report(vec![result("m", "ed25519-sign", 1000.0, 0.01)]);
        let cur = report(vec![result("m", "ed25519-sign", 800.0, 0.01)]);
        let c = compare(&cur, &base, 5.0, None);
        assert_eq!(c.entries[0].class, Class::Regressed);
        assert!((c.entries[0].delta_pct.unwrap() + 20.0).abs() < 1e-9);
        assert_eq!(c.entries[0].p95_class, Some(Class::Regressed));
        assert_eq!(c.exit_code(true), EXIT_REGRESSION);
        assert_eq!(c.exit_code(false), EXIT_OK);
        let faster = compare(&base, &cur, 5.0, None);
        assert_eq!(faster.entries[0].class, Class::Improved);
        assert_eq!(faster.exit_code(true), EXIT_OK);
    }

    #[test]
    fn noisy_difference_is_not_a_regression() {
        let base = report(vec![result("m", "sha256", 1000.0, 0.15)]);
        let cur = report(vec![result("m", "sha256", 850.0, 0.15)]);
        let c = compare(&cur, &base, 5.0, None);
        assert_eq!(c.entries[0].class, Class::Unchanged);
        assert_eq!(c.entries[0].note.as_deref(), Some("within noise"));
        assert!(c.entries[0].noise_pct > 20.0);
    }

    #[test]
    fn drift_between_rounds_counts_as_noise() {
        let base = report(vec![result("m", "sha256", 1000.0, 0.001)]);
        let mut r = result("m", "sha256", 900.0, 0.001);
        // Rounds at 800, 900 and 1000 ops/s: the run itself drifted by ±10%.
        r.round_ops_per_sec = Some(vec![800.0, 900.0, 1000.0]);
        let c = compare(&report(vec![r.clone()]), &base, 5.0, None);
        assert_eq!(c.entries[0].class, Class::Unchanged, "{:?}", c.entries[0]);
        assert!(c.entries[0].noise_pct > 10.0);
        // Steady rounds: the same drop is a regression.
        r.round_ops_per_sec = Some(vec![899.0, 900.0, 901.0]);
        let c = compare(&report(vec![r]), &base, 5.0, None);
        assert_eq!(c.entries[0].class, Class::Regressed);
    }

    #[test]
    fn interleaved_rounds_cancel_drift_in_ratios() {
        // Both modules drifted by the same ±10% from round to round: the ratio did not.
        let mut a = result("dalek", "sha256", 2000.0, 0.001);
        a.round_ops_per_sec = Some(vec![1800.0, 2000.0, 2200.0]);
        let mut b = result("softhsm", "sha256", 1000.0, 0.001);
        b.round_ops_per_sec = Some(vec![900.0, 1000.0, 1100.0]);
        let r = crate::report::result::ratios(&[a.clone(), b.clone()], "softhsm");
        assert!((r[0].ratio - 2.0).abs() < 1e-9);
        assert!(r[0].noise < 0.01, "{}", r[0].noise);
        assert!(a.rel_noise() > 0.1);
    }

    #[test]
    fn new_failure_is_a_regression() {
        let base = report(vec![result("m", "sha256", 1000.0, 0.01)]);
        let mut r = result("m", "sha256", 1000.0, 0.01);
        r.status = Status::Error;
        r.errors = 3;
        let c = compare(&report(vec![r]), &base, 5.0, None);
        assert_eq!(c.entries[0].class, Class::Regressed);
        assert_eq!(c.exit_code(true), EXIT_REGRESSION);
    }

    #[test]
    fn mismatched_settings_are_inconclusive() {
        let base = report(vec![result("m", "sha256", 1000.0, 0.01)]);
        let mut r = result("m", "sha256", 1000.0, 0.01);
        r.mechanism = "CKM_SHA512".into();
        let c = compare(&report(vec![r]), &base, 5.0, None);
        assert_eq!(c.mismatches.len(), 1);
        assert_eq!(c.exit_code(false), EXIT_INCONCLUSIVE);
        let mut r = result("m", "sha256", 1000.0, 0.01);
        r.mode = "open".into();
        r.rate_target = Some(100.0);
        assert_eq!(
            compare(&report(vec![r]), &base, 5.0, None).exit_code(true),
            EXIT_INCONCLUSIVE
        );
    }

    #[test]
    fn missing_and_added_are_reported_and_nothing_matched_is_inconclusive() {
        let base = report(vec![
            result("m", "sha256", 1000.0, 0.01),
            result("m", "sha384", 900.0, 0.01),
        ]);
        let cur = report(vec![
            result("m", "sha256", 1000.0, 0.01),
            result("m", "sha512", 900.0, 0.01),
        ]);
        let c = compare(&cur, &base, 5.0, None);
        assert_eq!(c.missing, vec!["m sha384 32B 1t"]);
        assert_eq!(c.added, vec!["m sha512 32B 1t"]);
        assert_eq!(c.exit_code(true), EXIT_OK);
        let other = report(vec![result("x", "sha256", 1000.0, 0.01)]);
        assert_eq!(
            compare(&other, &base, 5.0, None).exit_code(false),
            EXIT_INCONCLUSIVE
        );
    }

    #[test]
    fn ratio_mode_cancels_machine_speed() {
        // The whole machine got 2x slower, but our module kept its ratio: unchanged.
        let base = report(vec![
            result("dalek", "sha256", 2000.0, 0.01),
            result("softhsm", "sha256", 1000.0, 0.01),
        ]);
        let slow = report(vec![
            result("dalek", "sha256", 1000.0, 0.01),
            result("softhsm", "sha256", 500.0, 0.01),
        ]);
        let c = compare(&slow, &base, 5.0, Some("softhsm"));
        assert_eq!(c.entries.len(), 1);
        assert_eq!(c.entries[0].module, "dalek");
        assert_eq!(c.entries[0].class, Class::Unchanged);
        assert_eq!(compare(&slow, &base, 5.0, None).regressions(), 2);
        // Our module alone got slower: the ratio drops.
        let worse = report(vec![
            result("dalek", "sha256", 1500.0, 0.01),
            result("softhsm", "sha256", 1000.0, 0.01),
        ]);
        let c = compare(&worse, &base, 5.0, Some("softhsm"));
        assert_eq!(c.entries[0].class, Class::Regressed);
        assert_eq!(c.exit_code(true), EXIT_REGRESSION);
    }

    #[test]
    fn baselines_of_another_machine_class_are_refused() {
        let class = |vendor: &str, features: &[&str]| {
            let f = features.iter().map(|s| s.to_string()).collect();
            MachineClass::new("x86_64", vendor, "f6m143", f, 2, "debian12")
        };
        let mut cur = report(vec![result("m", "sha256", 1000.0, 0.01)]);
        cur.metadata.system.machine_class = Some(class("intel", &["aes", "sha"]));
        let mut base = cur.clone();
        assert_eq!(class_mismatch(&cur, &base, None), None);
        assert_eq!(class_mismatch(&cur, &base, Some("m")), None);
        base.metadata.system.machine_class = Some(class("amd", &["aes", "avx512ifma"]));
        let why = class_mismatch(&cur, &base, None).unwrap();
        assert!(
            why.starts_with("the baseline is of machine class x86_64-amd-f6m143-2c-debian12-aes.avx512ifma, this run of x86_64-intel-"),
            "{why}"
        );
        assert!(
            why.contains("(vendor amd vs intel, features -avx512ifma +sha)"),
            "{why}"
        );
        assert!(
            why.contains("--allow-class-mismatch") && !why.contains('\n'),
            "{why}"
        );
        // Before a run: the machine alone.
        assert!(machine_mismatch(&class("amd", &["aes", "avx512ifma"]), &base).is_none());
        assert!(machine_mismatch(&class("intel", &["aes", "sha"]), &base).is_some());
        // Allowed, the comparison warns about it.
        let c = compare(&cur, &base, 5.0, None);
        assert!(
            c.warnings
                .iter()
                .any(|w| w.starts_with("machine class differs: vendor amd vs intel")),
            "{:?}",
            c.warnings
        );
        // Files without a class (older hsm-bench) are never taken as the same class.
        base.metadata.system.machine_class = None;
        let why = class_mismatch(&cur, &base, None).unwrap();
        assert!(
            why.starts_with("the baseline records no machine class"),
            "{why}"
        );
        let why = class_mismatch(&base, &cur, None).unwrap();
        assert!(
            why.starts_with("the current run records no machine class"),
            "{why}"
        );
    }

    #[test]
    fn throughput_is_compared_in_mb_per_s_where_present() {
        let base = report(vec![
            sized(1000.0, 1024),
            result("m", "p256-sign", 500.0, 0.01),
        ]);
        let cur = report(vec![
            sized(1500.0, 1024),
            result("m", "p256-sign", 500.0, 0.01),
        ]);
        let c = compare(&cur, &base, 5.0, None);
        let e = &c.entries[0];
        assert_eq!(e.bytes_per_sec_current, Some(1_536_000.0));
        assert_eq!(e.bytes_per_sec_baseline, Some(1_024_000.0));
        assert_eq!(e.bytes_per_sec_ratio, Some(1.5));
        assert_eq!(c.entries[1].bytes_per_sec_ratio, None);
        let text = c.render_text();
        let header = text.lines().find(|l| l.starts_with("module")).unwrap();
        assert!(header.contains("MB/s now  MB/s base  MB/s ratio"), "{text}");
        // The three throughput cells sit just before the verdict.
        let cells = |op: &str| -> Vec<String> {
            let l = text
                .lines()
                .find(|l| l.split_whitespace().nth(1) == Some(op))
                .unwrap();
            let w: Vec<String> = l.split_whitespace().map(String::from).collect();
            w[w.len() - 4..w.len() - 1].to_vec()
        };
        assert_eq!(cells("sha256"), ["1.54", "1.02", "1.500x"], "{text}");
        assert_eq!(cells("p256-sign"), ["-", "-", "-"], "{text}");
        let v: serde_json::Value = serde_json::from_str(&c.render_json()).unwrap();
        assert_eq!(v["entries"][0]["bytes_per_sec_ratio"], 1.5);
        assert!(v["entries"][1].get("bytes_per_sec_current").is_none());
        // Without data sizes on either side: no throughput columns.
        let plain = report(vec![result("m", "p256-sign", 500.0, 0.01)]);
        let text = compare(&plain, &plain, 5.0, None).render_text();
        assert!(!text.contains("MB/s"), "{text}");
    }

    #[test]
    fn renderings_mention_the_verdict() {
        let base = report(vec![result("m", "ed25519-sign", 1000.0, 0.01)]);
        let cur = report(vec![result("m", "ed25519-sign", 500.0, 0.01)]);
        let c = compare(&cur, &base, 5.0, None);
        assert!(c.render_text().contains("REGRESSED"));
        assert!(c.render_markdown().starts_with("### hsm-bench comparison"));
        let v: serde_json::Value = serde_json::from_str(&c.render_json()).unwrap();
        assert_eq!(v["entries"][0]["class"], "regressed");
    }
}
