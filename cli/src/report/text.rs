//! Human-readable report: a summary table (modules side by side with a ratio
//! column when several ran), error notes, and optional ASCII histograms.

use std::fmt::Write;

use crate::report::format::fmt_bytes_rate;
use crate::report::format::fmt_rate;
use crate::report::format::fmt_size;
use crate::report::format::fmt_us;
use crate::report::result::BenchResult;
use crate::report::result::Report;
use crate::report::result::Status;
use crate::safe_text::escape;
use crate::stats::percentile_label;

/// Lay out a table: the first `left` columns left-aligned, the rest
/// right-aligned. Cells are shown escaped ([`escape`]): a cell holds one line
/// of text, whatever a module or a result file put in it.
pub fn table(headers: &[String], rows: &[Vec<String>], left: usize) -> String {
    let esc = |r: &[String]| -> Vec<String> { r.iter().map(|c| escape(c).into_owned()).collect() };
    let headers = esc(headers);
    let rows: Vec<Vec<String>> = rows.iter().map(|r| esc(r)).collect();
    let (headers, rows) = (&headers[..], &rows[..]);
    let n = headers.len();
    let mut w: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate().take(n) {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let line = |cells: &[String]| -> String {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate().take(n) {
            let pad = w[i].saturating_sub(c.chars().count());
            if i > 0 {
                s.push_str("  ");
            }
            if i < left {
                s.push_str(c);
                s.push_str(&" ".repeat(pad));
            } else {
                s.push_str(&" ".repeat(pad));
                s.push_str(c);
            }
        }
        s.trim_end().to_string()
    };
    let mut out = line(headers);
    out.push('\n');
    out.push_str(&"-".repeat(w.iter().sum::<usize>() + 2 * (n.saturating_sub(1))));
    out.push('\n');
    for r in rows {
        out.push_str(&line(r));
        out.push('\n');
    }
    out
}

fn pct_value(r: &BenchResult, p: f64) -> Option<f64> {
    let label = percentile_label(p);
    r.percentiles.get(&label).copied().or(match label.as_str() {
        "p50" => r.p50_us,
        "p90" => r.p90_us,
        "p95" => r.p95_us,
        "p99" => r.p99_us,
        "p99.9" => r.p999_us,
        _ => None,
    })
}

/// The `thr` cell: threads, and with several processes `2×4p` (2 threads in
/// each of 4 processes).
fn thr(threads: u32, processes: u32) -> String {
    if processes > 1 {
        format!("{threads}×{processes}p")
    } else {
        threads.to_string()
    }
}

/// The rows of merged results' parts (`--processes`, `hsm-bench merge`):
/// each process's or host's ops/s, p50 and p99 beside the merged figures.
fn parts_text(results: &[BenchResult]) -> String {
    let merged: Vec<&BenchResult> = results
        .iter()
        .filter(|x| x.per_process.is_some() || x.hosts.is_some())
        .collect();
    if merged.is_empty() {
        return String::new();
    }
    let headers: Vec<String> = [
        "op", "size", "thr", "module", "part", "ops/s", "p50", "p99", "calls",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let f = |v: Option<f64>| v.map(fmt_us).unwrap_or_else(|| "-".into());
    let mut rows = Vec::new();
    for x in merged {
        let head = |part: String| {
            vec![
                x.op.clone(),
                fmt_size(x.data_size),
                thr(x.threads, x.processes),
                x.module.clone(),
                part,
            ]
        };
        for p in x.per_process.iter().chain(&x.hosts).flatten() {
            let mut row = head(crate::report::merge::part_name(p));
            row.push(
                p.ops_per_sec
                    .map(fmt_rate)
                    .unwrap_or_else(|| p.status.as_str().into()),
            );
            row.extend([f(p.p50_us), f(p.p99_us), p.iterations.to_string()]);
            rows.push(row);
        }
        let mut row = head(format!(
            "merged ({})",
            x.throughput_basis.as_deref().unwrap_or("-")
        ));
        row.push(status_cell(x));
        row.extend([f(x.p50_us), f(x.p99_us), x.iterations.to_string()]);
        rows.push(row);
    }
    format!("\n{}", table(&headers, &rows, 5))
}

fn status_cell(r: &BenchResult) -> String {
    match r.status {
        Status::Unsupported => "unsupported".into(),
        Status::Error if r.ops_per_sec.is_none() => "error".into(),
        _ => fmt_rate(r.ops_per_sec.unwrap_or(f64::NAN)),
    }
}

/// Throughput cell: `-` for ops without a data size (or not measured).
fn throughput_cell(r: &BenchResult) -> String {
    r.bytes_per_sec.map_or_else(|| "-".into(), fmt_bytes_rate)
}

/// Render the report as text.
pub fn render(r: &Report) -> String {
    let mut out = String::new();
    let m = &r.metadata;
    let _ = writeln!(
        out,
        "hsm-bench {} ({}) — {}",
        escape(&m.hsm_bench.version),
        escape(&m.hsm_bench.git_commit),
        escape(&m.timestamp)
    );
    for md in &m.modules {
        let _ = writeln!(
            out,
            "module {}: {} {} ({}), token '{}'{}{}",
            escape(&md.name),
            escape(&md.library.description),
            escape(&md.library.version),
            escape(&md.path),
            escape(&md.token.label),
            if md.temporary_token {
                " (temporary)"
            } else {
                ""
            },
            if md.env.is_empty() {
                String::new()
            } else {
                format!(", env {}", escape(&md.env.join(" ")))
            }
        );
    }
    let mode = match (m.iterations, m.duration_s) {
        (_, Some(d)) => format!("{d} s per op"),
        (Some(i), None) => format!("{i} iterations per thread"),
        _ => String::new(),
    };
    let _ = writeln!(
        out,
        "{mode}, warmup {}, threads {:?}{}, rounds {}, keys {}{}",
        m.warmup,
        m.threads,
        m.processes
            .as_ref()
            .map(|p| format!(", processes {p:?}"))
            .unwrap_or_default(),
        m.rounds,
        m.keys,
        m.rate
            .map(|x| format!(", open loop {x} ops/s"))
            .unwrap_or_default()
    );
    let _ = writeln!(
        out,
        "system: {} {} on {} ({} cores), timer resolution {:.0} ns",
        escape(&m.system.os),
        escape(&m.system.kernel),
        escape(&m.system.cpu_model),
        m.system.cpu_cores_logical,
        m.timer.resolution_ns
    );
    if let Some(c) = &m.system.machine_class {
        let _ = writeln!(out, "machine class: {}", escape(&c.id));
    }
    out.push('\n');

    // Groups of (op, size, threads) in first-seen order.
    let mut groups: Vec<(String, u64, u32, u32)> = Vec::new();
    for x in &r.results {
        let k = (x.op.clone(), x.data_size, x.threads, x.processes);
        if !groups.contains(&k) {
            groups.push(k);
        }
    }
    let modules: Vec<String> = if m.modules.is_empty() {
        let mut v: Vec<String> = Vec::new();
        for x in &r.results {
            if !v.contains(&x.module) {
                v.push(x.module.clone());
            }
        }
        v
    } else {
        m.modules.iter().map(|x| x.name.clone()).collect()
    };
    let find = |g: &(String, u64, u32, u32), module: &str| {
        r.results.iter().find(|x| {
            x.module == module
                && x.op == g.0
                && x.data_size == g.1
                && x.threads == g.2
                && x.processes == g.3
        })
    };

    // The throughput column appears when any result has a data size.
    let tput = r.results.iter().any(|x| x.bytes_per_sec.is_some());
    if modules.len() <= 1 {
        let mut headers: Vec<String> = ["op", "size", "thr", "ops/s"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        if tput {
            headers.push("throughput".into());
        }
        headers.extend(["mean", "±95%"].iter().map(|s| s.to_string()));
        headers.extend(m.percentiles.iter().map(|p| percentile_label(*p)));
        headers.extend(["max", "outl", "errors"].iter().map(|s| s.to_string()));
        let rows: Vec<Vec<String>> = groups
            .iter()
            .filter_map(|g| find(g, modules.first().map(String::as_str).unwrap_or("")))
            .map(|x| {
                let mut row = vec![
                    x.op.clone(),
                    fmt_size(x.data_size),
                    thr(x.threads, x.processes),
                    status_cell(x),
                ];
                if tput {
                    row.push(throughput_cell(x));
                }
                let f = |v: Option<f64>| v.map(fmt_us).unwrap_or_else(|| "-".into());
                row.push(f(x.mean_us));
                row.push(
                    x.ci95_us
                        .map(|c| format!("±{}", fmt_us(c)))
                        .unwrap_or_else(|| "-".into()),
                );
                for p in &m.percentiles {
                    row.push(f(pct_value(x, *p)));
                }
                row.push(f(x.max_us));
                row.push(match (x.outliers_low, x.outliers_high) {
                    (Some(l), Some(h)) if x.iterations > x.errors => {
                        format!(
                            "{:.1}%",
                            100.0 * (l + h) as f64 / (x.iterations - x.errors) as f64
                        )
                    }
                    _ => "-".into(),
                });
                row.push(x.errors.to_string());
                row
            })
            .collect();
        out.push_str(&table(&headers, &rows, 1));
    } else {
        let mut headers: Vec<String> = vec!["op".into(), "size".into(), "thr".into()];
        for md in &modules {
            headers.push(format!("{md} ops/s"));
            if tput {
                headers.push("throughput".into());
            }
            headers.push("p50".into());
            headers.push("p95".into());
            headers.push("p99".into());
        }
        for other in &modules[1..] {
            headers.push(format!("{}/{}", modules[0], other));
        }
        let rows: Vec<Vec<String>> = groups
            .iter()
            .map(|g| {
                let mut row = vec![g.0.clone(), fmt_size(g.1), thr(g.2, g.3)];
                for md in &modules {
                    match find(g, md) {
                        Some(x) => {
                            row.push(status_cell(x));
                            if tput {
                                row.push(throughput_cell(x));
                            }
                            for v in [x.p50_us, x.p95_us, x.p99_us] {
                                row.push(v.map(fmt_us).unwrap_or_else(|| "-".into()));
                            }
                        }
                        None => {
                            row.push("n/a".into());
                            let blanks = if tput { 4 } else { 3 };
                            row.extend(std::iter::repeat_n("-".to_string(), blanks));
                        }
                    }
                }
                let first = find(g, &modules[0]).and_then(|x| x.ops_per_sec);
                for other in &modules[1..] {
                    let o = find(g, other).and_then(|x| x.ops_per_sec);
                    row.push(match (first, o) {
                        (Some(a), Some(b)) if b > 0.0 => format!("{:.2}x", a / b),
                        _ => "-".into(),
                    });
                }
                row
            })
            .collect();
        out.push_str(&table(&headers, &rows, 1));
        let _ = writeln!(
            out,
            "ratio = ops/s of {} ÷ ops/s of the other module (above 1: {} is faster)",
            escape(&modules[0]),
            escape(&modules[0])
        );
    }

    let rss: Vec<&BenchResult> = r
        .results
        .iter()
        .filter(|x| x.peak_rss_kib.is_some())
        .collect();
    if !rss.is_empty() {
        out.push('\n');
        for x in rss {
            let kib = x.peak_rss_kib.expect("filtered");
            let _ = writeln!(
                out,
                "peak RSS of the cold-start probe: {} [{}]: {:.1} MiB",
                escape(&x.op),
                escape(&x.module),
                kib as f64 / 1024.0
            );
        }
    }

    let notes: Vec<&BenchResult> = r
        .results
        .iter()
        .filter(|x| x.status != Status::Ok || x.errors > 0)
        .collect();
    if !notes.is_empty() {
        out.push('\n');
        for x in notes {
            let codes = x
                .error_codes
                .iter()
                .map(|(k, v)| format!("{} x{v}", escape(k)))
                .collect::<Vec<_>>()
                .join(", ");
            let _ = writeln!(
                out,
                "note: {} {} [{}]: {}{}{}",
                escape(&x.op),
                fmt_size(x.data_size),
                escape(&x.module),
                x.status.as_str(),
                x.reason
                    .as_ref()
                    .map(|s| format!(": {}", escape(s)))
                    .unwrap_or_default(),
                if codes.is_empty() {
                    String::new()
                } else {
                    format!(" ({} of {} calls failed: {codes})", x.errors, x.iterations)
                }
            );
        }
    }

    out.push_str(&parts_text(&r.results));
    out.push_str(&notes_text(&r.results));

    for x in r.results.iter().filter(|x| x.histogram.is_some()) {
        let bins = x.histogram.as_ref().expect("filtered");
        let _ = writeln!(
            out,
            "\nlatency histogram: {} {} {}t [{}]",
            escape(&x.op),
            fmt_size(x.data_size),
            x.threads,
            escape(&x.module)
        );
        out.push_str(&histogram(bins.iter().map(|b| (b.le_us, b.count)), 50));
    }
    out
}

/// ASCII histogram lines from (upper bound µs, count) bins.
pub fn histogram(bins: impl Iterator<Item = (f64, u64)>, width: usize) -> String {
    let bins: Vec<(f64, u64)> = bins.collect();
    let max = bins.iter().map(|b| b.1).max().unwrap_or(0).max(1);
    let total: u64 = bins.iter().map(|b| b.1).sum::<u64>().max(1);
    let mut out = String::new();
    for (le, n) in &bins {
        let len = ((*n as f64 / max as f64) * width as f64).round() as usize;
        let bar = if *n > 0 && len == 0 {
            "▏".to_string()
        } else {
            "█".repeat(len)
        };
        let _ = writeln!(
            out,
            "  ≤ {:>10} {:>8} {:>5.1}% {}",
            fmt_us(*le),
            n,
            100.0 * *n as f64 / total as f64,
            bar
        );
    }
    out
}

/// `warning:` lines for the text report (empty when no result has warnings).
fn notes_text(results: &[BenchResult]) -> String {
    let mut out = String::new();
    for r in results {
        for w in &r.notes.warnings {
            let _ = writeln!(
                out,
                "warning: {} {} {}t [{}]: {}",
                escape(&r.op),
                fmt_size(r.data_size),
                r.threads,
                escape(&r.module),
                escape(w)
            );
        }
    }
    if !out.is_empty() {
        out.insert(0, '\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_align() {
        let t = table(
            &["op".into(), "ops/s".into()],
            &[
                vec!["sha256".into(), "1,000".into()],
                vec!["x".into(), "5".into()],
            ],
            1,
        );
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "op      ops/s");
        assert_eq!(lines[2], "sha256  1,000");
        assert_eq!(lines[3], "x           5");
    }

    #[test]
    fn throughput_column_shows_units_and_dash_without_data() {
        use crate::report::fixtures::report;
        use crate::report::fixtures::result;
        use crate::report::fixtures::sized;
        let sha = sized(1000.0, 1 << 20);
        let sign = result("m", "p256-sign", 500.0, 0.01);
        let text = render(&report(vec![sha.clone(), sign.clone()]));
        let header = text.lines().find(|l| l.starts_with("op ")).unwrap();
        assert!(header.contains("ops/s  throughput"), "{text}");
        let row = |op: &str| {
            text.lines()
                .find(|l| l.starts_with(op))
                .unwrap()
                .to_string()
        };
        let words =
            |op: &str| -> Vec<String> { row(op).split_whitespace().map(String::from).collect() };
        assert_eq!(words("sha256")[3..6], ["1,000", "1.05", "GB/s"], "{text}");
        assert_eq!(
            words("p256-sign")[..5],
            ["p256-sign", "32B", "1", "500.0", "-"],
            "{text}"
        );
        // Without any data-size op there is no throughput column at all.
        let text = render(&report(vec![sign.clone()]));
        assert!(!text.contains("throughput"), "{text}");
        // Side by side: one throughput column per module.
        let mut other = sha.clone();
        other.module = "n".into();
        let mut other_sign = sign.clone();
        other_sign.module = "n".into();
        let text = render(&report(vec![sha, other, sign, other_sign]));
        let header = text.lines().find(|l| l.starts_with("op ")).unwrap();
        assert_eq!(header.matches("throughput").count(), 2, "{text}");
    }

    /// No character of `text` may act on a terminal (newlines between lines
    /// aside).
    fn assert_terminal_safe(text: &str) {
        let bad: Vec<char> = text
            .chars()
            .filter(|&c| c != '\n' && crate::safe_text::is_unsafe(c))
            .collect();
        assert!(bad.is_empty(), "raw {bad:?} in {text:?}");
    }

    #[test]
    fn module_and_file_text_is_escaped() {
        use crate::report::fixtures::{HOSTILE, HOSTILE_SHOWN, module_meta, report, result};
        let render_with = |text: &str| {
            let mut ok = result("m", "p256-sign", 500.0, 0.01);
            ok.notes.warnings.push(format!("warmup: {text}"));
            let mut failed = result("m", "ed25519-sign", 500.0, 0.01);
            failed.status = Status::Error;
            failed.ops_per_sec = None;
            failed.reason = Some(format!("the module said {text}"));
            failed.error_codes.insert(text.into(), 3);
            failed.errors = 3;
            let mut rep = report(vec![ok, failed]);
            rep.metadata.modules = vec![module_meta("m", text)];
            rep.metadata.system.cpu_model = text.into();
            render(&rep)
        };
        let text = render_with(HOSTILE);
        assert_terminal_safe(&text);
        // A newline in a label forges no line: as many lines as plain text.
        assert_eq!(
            text.lines().count(),
            render_with("plain").lines().count(),
            "{text}"
        );
        assert!(
            text.contains(&format!(
                "{HOSTILE_SHOWN} 1.0 (/lib/m.so), token '{HOSTILE_SHOWN}'"
            )),
            "{text}"
        );
        for want in [
            format!("on {HOSTILE_SHOWN} (2 cores)"),
            format!(
                ": the module said {HOSTILE_SHOWN} (3 of 1000 calls failed: {HOSTILE_SHOWN} x3)"
            ),
            format!("warning: p256-sign 32B 1t [m]: warmup: {HOSTILE_SHOWN}"),
        ] {
            assert!(text.contains(&want), "no {want:?} in {text}");
        }

        // Side by side, module names head columns.
        let mut a = result(HOSTILE, "p256-sign", 500.0, 0.01);
        a.module = HOSTILE.into();
        let b = result("n", "p256-sign", 400.0, 0.01);
        let text = render(&report(vec![a, b]));
        assert_terminal_safe(&text);
        assert!(text.contains(&format!("{HOSTILE_SHOWN} ops/s")), "{text}");
    }

    #[test]
    fn table_cells_are_escaped_and_aligned_as_shown() {
        let t = table(
            &["label".into(), "n".into()],
            &[
                vec!["a\u{1b}[2Jb".into(), "1".into()],
                vec!["x".into(), "22".into()],
            ],
            1,
        );
        assert_terminal_safe(&t);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[2], "a\\e[2Jb   1");
        assert_eq!(lines[3], "x        22");
    }

    #[test]
    fn histogram_bars_scale() {
        let h = histogram([(10.0, 100), (20.0, 50), (30.0, 0)].into_iter(), 10);
        let lines: Vec<&str> = h.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[0].ends_with(&"█".repeat(10)));
        assert!(lines[1].ends_with(&"█".repeat(5)));
        assert!(lines[2].contains("0.0%"));
    }
}
