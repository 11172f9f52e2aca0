//! github-action-benchmark "customBiggerIsBetter" output: a JSON array of
//! `{name, unit, value, range, extra}`; ops/s per result, or ratios to the
//! reference module when there are any.

use serde::Serialize;

use crate::report::format::fmt_size;
use crate::report::format::fmt_us;
use crate::report::result::Report;
use crate::report::result::Status;

#[derive(Serialize)]
struct Entry {
    name: String,
    unit: String,
    value: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    range: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    extra: Option<String>,
}

/// Render a report for github-action-benchmark.
pub fn to_string(r: &Report) -> String {
    let entries: Vec<Entry> = match &r.ratios {
        Some(ratios) if !ratios.is_empty() => ratios
            .iter()
            .map(|x| Entry {
                name: format!(
                    "{} {} {} {}t{}",
                    x.module,
                    x.op,
                    fmt_size(x.data_size),
                    x.threads,
                    procs(x.processes)
                ),
                unit: format!("x {}", x.reference),
                value: x.ratio,
                range: Some(format!("± {:.4}", x.ratio * x.noise)),
                extra: None,
            })
            .collect(),
        _ => r
            .results
            .iter()
            .filter(|x| x.status == Status::Ok)
            .filter_map(|x| {
                Some(Entry {
                    name: format!(
                        "{} {} {} {}t{}",
                        x.module,
                        x.op,
                        fmt_size(x.data_size),
                        x.threads,
                        procs(x.processes)
                    ),
                    unit: "ops/s".into(),
                    value: x.ops_per_sec?,
                    range: Some(format!("± {:.1}", x.ops_per_sec? * x.rel_noise())),
                    extra: Some(format!(
                        "p50 {} p95 {} p99 {}",
                        fmt_us(x.p50_us?),
                        fmt_us(x.p95_us?),
                        fmt_us(x.p99_us?)
                    )),
                })
            })
            .collect(),
    };
    crate::safe_text::json(serde_json::to_string_pretty(&entries).expect("entries serialise"))
}

/// ` 4p` in a name with several processes (`--processes`), else nothing.
fn procs(p: u32) -> String {
    if p > 1 {
        format!(" {p}p")
    } else {
        String::new()
    }
}
