//! Results of one job measured by several parts at the same time, merged
//! into one: the worker processes of `run --processes N` (one token, N
//! processes that each load the module) and the hosts of `hsm-bench merge`.
//! Latency histograms are merged exactly (HdrHistogram addition of the
//! results' `latency_hdr`; percentiles are never averaged), calls and
//! errors are counted, and ops/s is every successful call over the union of
//! the parts' measured windows (per round: first start to last end), or,
//! where a part has no windows, the sum of the parts' ops/s. Also the checks
//! that make `hsm-bench merge` refuse files that cannot be merged.

use crate::report::result::{BenchResult, PartRow, Report, Status, throughput};
use crate::stats::Recorder;

/// `throughput_basis` of a result whose ops/s is its calls over the union
/// of its parts' windows.
pub const UNION_WINDOW: &str = "union window";
/// `throughput_basis` of a result whose ops/s is its parts' ops/s added.
pub const SUM_OF_RATES: &str = "sum of rates";

/// How a part is named in messages: `process 2`, `host db-1`.
pub fn part_name(row: &PartRow) -> String {
    match (&row.process, &row.host) {
        (Some(p), _) => format!("process {p}"),
        (None, Some(h)) => format!("host {h}"),
        (None, None) => "part".into(),
    }
}

/// The union of the parts' windows, round by round, when every measured
/// part has the same number of them.
fn union_windows(parts: &[&BenchResult]) -> Option<Vec<[u64; 2]>> {
    let mut out: Option<Vec<[u64; 2]>> = None;
    for p in parts {
        let w = p.windows_unix_ns.as_ref().filter(|w| !w.is_empty())?;
        match &mut out {
            None => out = Some(w.clone()),
            Some(u) if u.len() == w.len() => {
                for (a, b) in u.iter_mut().zip(w) {
                    a[0] = a[0].min(b[0]);
                    a[1] = a[1].max(b[1]);
                }
            }
            Some(_) => return None,
        }
    }
    out
}

fn secs(w: &[u64; 2]) -> f64 {
    w[1].saturating_sub(w[0]) as f64 / 1e9
}

/// Merge `parts` (one module, op, data size and thread count, measured at
/// the same time), each named by its `rows` entry, into one result with
/// the parts' rows beside it (the caller files them under `per_process` or
/// `hosts`). An error when a measured part carries no latency histogram or
/// an unreadable one.
pub fn combine(
    parts: &[BenchResult],
    rows: &[PartRow],
    percentiles: &[f64],
) -> Result<(BenchResult, Vec<PartRow>), String> {
    let first = parts.first().ok_or("nothing to merge")?;
    let mut m = first.clone();
    (m.per_process, m.hosts) = (None, None);
    let rows: Vec<PartRow> = parts
        .iter()
        .zip(rows)
        .map(|(p, r)| PartRow {
            process: r.process,
            host: r.host.clone(),
            ..PartRow::of(p)
        })
        .collect();
    let named = |i: usize| rows.get(i).map(part_name).unwrap_or_default();
    m.iterations = parts.iter().map(|p| p.iterations).sum();
    m.errors = parts.iter().map(|p| p.errors).sum();
    m.error_codes.clear();
    for p in parts {
        for (k, v) in &p.error_codes {
            *m.error_codes.entry(k.clone()).or_default() += v;
        }
    }
    let reasons: Vec<String> = parts
        .iter()
        .enumerate()
        .filter_map(|(i, p)| p.reason.as_ref().map(|r| format!("{}: {r}", named(i))))
        .collect();
    m.reason = (!reasons.is_empty()).then(|| reasons.join("; "));
    if parts.iter().all(|p| p.status == Status::Unsupported) {
        m.reason = first.reason.clone();
        return Ok((m, rows));
    }
    let mut rec: Option<Recorder> = None;
    let mut measured: Vec<&BenchResult> = Vec::new();
    for (i, p) in parts.iter().enumerate() {
        let Some(h) = &p.latency_hdr else {
            if p.iterations > p.errors {
                return Err(format!(
                    "{}: {} {} carries no latency histogram (latency_hdr)",
                    named(i),
                    p.module,
                    p.op
                ));
            }
            continue;
        };
        let r = Recorder::from_hdr(h).map_err(|e| format!("{}: {}: {e}", named(i), p.op))?;
        match &mut rec {
            Some(acc) => acc.merge(&r),
            None => rec = Some(r),
        }
        measured.push(p);
    }
    let ok = m.iterations - m.errors;
    m.status = if m.errors > 0 || ok == 0 || parts.iter().any(|p| p.status == Status::Error) {
        Status::Error
    } else {
        Status::Ok
    };
    m.rounds = parts.iter().map(|p| p.rounds).max().unwrap_or(0);
    m.peak_rss_kib = parts.iter().filter_map(|p| p.peak_rss_kib).max();
    m.samples_ns = if measured.iter().all(|p| p.samples_ns.is_some()) && !measured.is_empty() {
        Some(
            measured
                .iter()
                .flat_map(|p| p.samples_ns.iter().flatten().copied())
                .collect(),
        )
    } else {
        None
    };
    // Notes: counts add up, flags hold when any part's does.
    let n = &mut m.notes;
    n.warmup_errors = parts.iter().map(|p| p.notes.warmup_errors).sum();
    n.warmup_first_error = parts
        .iter()
        .find_map(|p| p.notes.warmup_first_error.clone());
    n.cut_short = parts.iter().any(|p| p.notes.cut_short);
    n.rate_missed = parts.iter().any(|p| p.notes.rate_missed);
    n.rate_achieved = parts
        .iter()
        .map(|p| p.notes.rate_achieved)
        .sum::<Option<f64>>();
    n.warnings.clear();
    for (i, p) in parts.iter().enumerate() {
        for w in &p.notes.warnings {
            n.warnings.push(format!("{}: {w}", named(i)));
        }
    }
    // Throughput: every successful call over the union of the windows.
    let union = union_windows(&measured);
    let (ops, wall, basis) = match &union {
        Some(u) => {
            let wall: f64 = u.iter().map(secs).sum();
            let ok: u64 = measured.iter().map(|p| p.iterations - p.errors).sum();
            ((wall > 0.0).then(|| ok as f64 / wall), wall, UNION_WINDOW)
        }
        None => (
            measured.iter().map(|p| p.ops_per_sec).sum::<Option<f64>>(),
            parts.iter().map(|p| p.duration_s).fold(0.0, f64::max),
            SUM_OF_RATES,
        ),
    };
    if let Some(u) = &union
        && measured.len() > 1
        && measured.iter().any(|p| {
            p.windows_unix_ns
                .as_ref()
                .is_some_and(|w| w.iter().zip(u).any(|(a, b)| a[1] < b[0] || a[0] > b[1]))
        })
    {
        m.notes.warnings.push(
            "the parts' measured windows do not all overlap (were they run at the same time?)"
                .into(),
        );
    }
    m.duration_s = wall;
    m.windows_unix_ns = union.clone();
    m.throughput_basis = Some(basis.into());
    m.round_ops_per_sec = round_rates(&measured, union.as_deref());
    m.latency_hdr = None;
    m.histogram = None;
    m.percentiles.clear();
    for f in [
        &mut m.mean_us,
        &mut m.ci95_us,
        &mut m.stddev_us,
        &mut m.min_us,
        &mut m.p50_us,
        &mut m.p90_us,
        &mut m.p95_us,
        &mut m.p99_us,
        &mut m.p999_us,
        &mut m.max_us,
    ] {
        *f = None;
    }
    (m.outliers_low, m.outliers_high) = (None, None);
    m.ops_per_sec = None;
    let us = |ns: f64| ns / 1000.0;
    if let Some(rec) = rec
        && let Some(sm) = rec.summary(percentiles)
    {
        m.ops_per_sec = ops;
        m.set_latency(&sm);
        if parts.iter().any(|p| p.histogram.is_some()) {
            m.histogram = Some(
                rec.bins(20)
                    .into_iter()
                    .map(|(le, count)| crate::report::result::HistBin {
                        le_us: us(le as f64),
                        count,
                    })
                    .collect(),
            );
        }
        m.latency_hdr = Some(rec.to_hdr());
    }
    let has_data = parts.iter().any(|p| p.bytes_per_sec.is_some());
    m.bytes_per_sec = throughput(m.ops_per_sec, m.data_size, has_data);
    Ok((m, rows))
}

/// ops/s of each round: the parts' calls of the round (their round rate
/// times their own window) over the round's union window; or the parts'
/// round rates added.
fn round_rates(parts: &[&BenchResult], union: Option<&[[u64; 2]]>) -> Option<Vec<f64>> {
    let all: Vec<&Vec<f64>> = parts
        .iter()
        .map(|p| p.round_ops_per_sec.as_ref())
        .collect::<Option<_>>()?;
    let n = all.first()?.len();
    if all.iter().any(|r| r.len() != n) {
        return None;
    }
    Some(
        (0..n)
            .map(|i| match union {
                Some(u) if u.len() == n && secs(&u[i]) > 0.0 => {
                    let calls: f64 = parts
                        .iter()
                        .zip(&all)
                        .map(|(p, r)| {
                            let own = p.windows_unix_ns.as_ref().map_or(0.0, |w| secs(&w[i]));
                            r[i] * own
                        })
                        .sum();
                    calls / secs(&u[i])
                }
                _ => all.iter().map(|r| r[i]).sum(),
            })
            .collect(),
    )
}

/// Why two result files (named `a` and `b`) cannot be merged: settings
/// that make their sum meaningless, named with both values.
pub fn mismatch(a: &Report, an: &str, b: &Report, bn: &str) -> Option<String> {
    let (x, y) = (&a.metadata, &b.metadata);
    let differ = |what: &str, u: String, v: String| {
        (u != v).then(|| format!("{an} and {bn} differ in {what} ({u} vs {v})"))
    };
    let opt = |v: Option<f64>| v.map_or("none".into(), |v| v.to_string());
    differ(
        "iterations",
        format!("{:?}", x.iterations),
        format!("{:?}", y.iterations),
    )
    .or_else(|| differ("duration_s", opt(x.duration_s), opt(y.duration_s)))
    .or_else(|| differ("warmup", x.warmup.to_string(), y.warmup.to_string()))
    .or_else(|| differ("rounds", x.rounds.to_string(), y.rounds.to_string()))
    .or_else(|| differ("rate", opt(x.rate), opt(y.rate)))
    .or_else(|| {
        differ(
            "mix",
            x.mix.clone().unwrap_or_default(),
            y.mix.clone().unwrap_or_default(),
        )
    })
    .or_else(|| {
        a.results.iter().find_map(|r| {
            let o = b.results.iter().find(|o| o.key() == r.key())?;
            let what = format!("{} {} of {}", r.op, r.data_size, r.module);
            differ(
                &format!("the mechanism of {what}"),
                r.mechanism.clone(),
                o.mechanism.clone(),
            )
            .or_else(|| {
                differ(
                    &format!("the mode of {what}"),
                    r.mode.clone(),
                    o.mode.clone(),
                )
            })
            .or_else(|| differ(&format!("the key of {what}"), r.key.clone(), o.key.clone()))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixtures::{report, result};

    fn measured(samples: &[u64], window: [u64; 2]) -> BenchResult {
        let mut rec = Recorder::new(true, 0);
        for &s in samples {
            rec.record(s);
        }
        let mut r = result("dalek", "ed25519-sign", 1.0, 0.01);
        r.iterations = samples.len() as u64;
        r.latency_hdr = Some(rec.to_hdr());
        r.samples_ns = Some(samples.to_vec());
        r.windows_unix_ns = Some(vec![window]);
        r.duration_s = secs(&window);
        r.ops_per_sec = Some(samples.len() as f64 / secs(&window));
        r
    }

    fn row(p: u32) -> PartRow {
        PartRow {
            process: Some(p),
            ..PartRow::of(&result("m", "x", 1.0, 0.0))
        }
    }

    #[test]
    fn merged_percentiles_are_those_of_all_samples_and_ops_count_over_the_union() {
        let a: Vec<u64> = (0..2000).map(|i| 20_000 + i % 500).collect();
        let b: Vec<u64> = (0..1000).map(|i| 90_000 + (i * 37) % 20_000).collect();
        let s = 1_000_000_000_000u64;
        let pa = measured(&a, [s, s + 2_000_000_000]);
        let pb = measured(&b, [s + 500_000_000, s + 2_500_000_000]);
        let (m, rows) = combine(&[pa, pb], &[row(1), row(2)], &[99.0]).unwrap();
        let mut all = Recorder::new(false, 0);
        for &x in a.iter().chain(&b) {
            all.record(x);
        }
        let want = all.summary(&[99.0]).unwrap();
        assert_eq!(m.p99_us, Some(want.p99_ns as f64 / 1000.0));
        assert_eq!(m.percentiles["p99"], want.p99_ns as f64 / 1000.0);
        assert_eq!(m.iterations, 3000);
        assert_eq!(m.ops_per_sec, Some(3000.0 / 2.5));
        assert_eq!(m.throughput_basis.as_deref(), Some(UNION_WINDOW));
        assert_eq!(m.samples_ns.as_ref().unwrap().len(), 3000);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[1].process, Some(2));
        assert_eq!(rows[1].iterations, 1000);
        let back = Recorder::from_hdr(m.latency_hdr.as_ref().unwrap()).unwrap();
        assert_eq!(back.summary(&[99.0]), Some(want));
    }

    #[test]
    fn without_windows_rates_add_up_and_without_histograms_merging_is_refused() {
        let mut a = measured(&[1000, 2000], [0, 1]);
        let mut b = measured(&[3000], [0, 1]);
        (a.windows_unix_ns, b.windows_unix_ns) = (None, None);
        (a.ops_per_sec, b.ops_per_sec) = (Some(10.0), Some(5.0));
        let (m, _) = combine(&[a.clone(), b.clone()], &[row(1), row(2)], &[]).unwrap();
        assert_eq!(m.ops_per_sec, Some(15.0));
        assert_eq!(m.throughput_basis.as_deref(), Some(SUM_OF_RATES));
        b.latency_hdr = None;
        let e = combine(&[a, b], &[row(1), row(2)], &[]).unwrap_err();
        assert!(
            e.contains("process 2") && e.contains("no latency histogram"),
            "{e}"
        );
    }

    #[test]
    fn files_with_other_settings_are_refused_naming_the_setting() {
        let a = report(vec![result("m", "x", 1.0, 0.0)]);
        let mut b = a.clone();
        assert_eq!(mismatch(&a, "A", &b, "B"), None);
        b.metadata.duration_s = Some(5.0);
        let e = mismatch(&a, "A", &b, "B").unwrap();
        assert!(e.contains("duration_s") && e.contains("A and B"), "{e}");
        let mut c = a.clone();
        c.results[0].mechanism = "CKM_OTHER".into();
        assert!(mismatch(&a, "A", &c, "C").unwrap().contains("mechanism"));
    }
}
