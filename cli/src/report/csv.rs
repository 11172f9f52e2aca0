//! CSV output: one row per result, the JSON result fields as columns.

use crate::report::result::BenchResult;

/// Column names, in order.
pub const COLUMNS: &[&str] = &[
    "op",
    "module",
    "mechanism",
    "data_size",
    "threads",
    "iterations",
    "errors",
    "status",
    "ops_per_sec",
    "mean_us",
    "ci95_us",
    "stddev_us",
    "min_us",
    "p50_us",
    "p90_us",
    "p95_us",
    "p99_us",
    "p999_us",
    "max_us",
    "outliers_low",
    "outliers_high",
    "duration_s",
    "rounds",
    "mode",
    "rate_target",
    "mix",
    "key",
    "error_codes",
    "reason",
    // Appended after the first release's columns, so consumers that index
    // columns by position keep working.
    "bytes_per_sec",
    // The result's notes (see `crate::report::notes::RunNotes`); warnings joined by " | ".
    "warmup_errors",
    "warmup_first_error",
    "cut_short",
    "rate_missed",
    "rate_achieved",
    "warnings",
    // `--processes` and `hsm-bench merge` (the host: empty in a run's
    // file, `merged` for the merged row).
    "processes",
    "host",
];

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map(|x| x.to_string()).unwrap_or_default()
}

/// Render results as CSV (header + one row each). Empty cells mean "not measured".
pub fn to_string(results: &[BenchResult]) -> String {
    with_hosts(results.iter().map(|r| ("", r)))
}

/// Render results as CSV with a `host` cell each (`hsm-bench merge`).
pub fn with_hosts<'a>(rows: impl Iterator<Item = (&'a str, &'a BenchResult)>) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(COLUMNS).expect("in-memory write");
    for (host, r) in rows {
        let codes = r
            .error_codes
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(";");
        w.write_record([
            r.op.clone(),
            r.module.clone(),
            r.mechanism.clone(),
            r.data_size.to_string(),
            r.threads.to_string(),
            r.iterations.to_string(),
            r.errors.to_string(),
            r.status.as_str().to_string(),
            opt(r.ops_per_sec),
            opt(r.mean_us),
            opt(r.ci95_us),
            opt(r.stddev_us),
            opt(r.min_us),
            opt(r.p50_us),
            opt(r.p90_us),
            opt(r.p95_us),
            opt(r.p99_us),
            opt(r.p999_us),
            opt(r.max_us),
            opt(r.outliers_low),
            opt(r.outliers_high),
            r.duration_s.to_string(),
            r.rounds.to_string(),
            r.mode.clone(),
            opt(r.rate_target),
            r.mix.clone().unwrap_or_default(),
            r.key.clone(),
            codes,
            r.reason.clone().unwrap_or_default(),
            opt(r.bytes_per_sec),
            r.notes.warmup_errors.to_string(),
            r.notes.warmup_first_error.clone().unwrap_or_default(),
            r.notes.cut_short.to_string(),
            r.notes.rate_missed.to_string(),
            opt(r.notes.rate_achieved),
            r.notes.warnings.join(" | "),
            r.processes.to_string(),
            host.to_string(),
        ])
        .expect("in-memory write");
    }
    String::from_utf8(w.into_inner().expect("in-memory flush")).expect("CSV of UTF-8 fields")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_appends_bytes_per_sec_after_the_original_columns() {
        let r = crate::report::fixtures::sized(1000.0, 1024);
        let mut sign = crate::report::fixtures::result("m", "p256-sign", 500.0, 0.01);
        sign.set_throughput(false);
        let text = to_string(&[r, sign]);
        let mut rd = csv::Reader::from_reader(text.as_bytes());
        let header: Vec<String> = rd.headers().unwrap().iter().map(String::from).collect();
        assert_eq!(header.len(), COLUMNS.len());
        assert_eq!(header[..9].join(","), COLUMNS[..9].join(","));
        assert_eq!(header[8], "ops_per_sec");
        assert_eq!(header[28], "reason");
        assert_eq!(header[29], "bytes_per_sec");
        let rows: Vec<csv::StringRecord> = rd.records().map(Result::unwrap).collect();
        assert_eq!(&rows[0][29], "1024000");
        // No data size: an empty cell, not 0.
        assert_eq!(&rows[1][29], "");
        assert!(rows.iter().all(|x| x.len() == header.len()));
    }

    #[test]
    fn notes_have_their_own_columns() {
        let mut r = crate::report::fixtures::result("m", "p256-sign", 500.0, 0.01);
        r.notes.warmup_errors = 3;
        r.notes.warmup_first_error = Some("CKR_DEVICE_ERROR".into());
        r.notes.cut_short = true;
        r.notes.warnings = vec!["one".into(), "two".into()];
        let text = to_string(&[r]);
        let mut rd = csv::Reader::from_reader(text.as_bytes());
        let header: Vec<String> = rd.headers().unwrap().iter().map(String::from).collect();
        let row = rd.records().next().unwrap().unwrap();
        let cell = |name: &str| row[header.iter().position(|h| h == name).unwrap()].to_string();
        assert_eq!(cell("warmup_errors"), "3");
        assert_eq!(cell("warmup_first_error"), "CKR_DEVICE_ERROR");
        assert_eq!(cell("cut_short"), "true");
        assert_eq!(cell("rate_missed"), "false");
        assert_eq!(cell("rate_achieved"), "");
        assert_eq!(cell("warnings"), "one | two");
    }
}
