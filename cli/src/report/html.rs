//! `report --html` and `compare --html`: one self-contained HTML page of SVG
//! charts drawn with plotters' SVG backend (inline `<svg>`, `<text>` laid out by
//! the browser; no scripts, fonts or images are fetched).
//!
//! Charts of a result file:
//! - per op, the latency CDF of every result of the op (from the histogram bins
//!   when the run kept them, `--histogram`, else from min, the percentiles and max);
//! - per op measured at several data sizes, throughput vs data size, and per op
//!   measured at several thread counts, ops/s vs threads, each with a band of the
//!   95% confidence interval of the mean latency (`ci95_us`) carried over to the
//!   rate ([`BenchResult::sampling_noise`]);
//! - with several modules, the ratio of each module's ops/s to the reference
//!   (`--reference`, else the first module), with the ratio's 95% noise (both CIs
//!   and the spread of per-round ratios, as `compare` uses it) as error bars.
//!
//! A comparison gets one chart: current ÷ baseline per entry, coloured by verdict.

use std::collections::BTreeSet;

use plotters::prelude::*;

use crate::report::charts::Bar;
use crate::report::charts::Chart;
use crate::report::charts::Sweep;
use crate::report::charts::colour;
use crate::report::charts::distinct;
use crate::report::charts::escape;
use crate::report::charts::latency_chart;
use crate::report::charts::ratio_chart;
use crate::report::charts::size_threads;
use crate::report::charts::sweep_chart;
use crate::report::comparison::Class;
use crate::report::comparison::Comparison;
use crate::report::result::BenchResult;
use crate::report::result::Report;
use crate::report::result::Status;
use crate::report::result::ratios;

/// Results with a measured rate, in file order.
fn measured(rep: &Report) -> impl Iterator<Item = &BenchResult> {
    rep.results
        .iter()
        .filter(|r| r.status != Status::Unsupported && r.ops_per_sec.is_some())
}

/// Ops in first-seen order.
fn ops_in_order(rep: &Report) -> Vec<String> {
    let mut seen = BTreeSet::new();
    measured(rep)
        .filter(|r| seen.insert(r.op.clone()))
        .map(|r| r.op.clone())
        .collect()
}

/// Every chart of a result file, in page order.
pub fn charts(rep: &Report) -> std::result::Result<Vec<Chart>, String> {
    let mut out = Vec::new();
    for op in ops_in_order(rep) {
        let rs: Vec<&BenchResult> = measured(rep).filter(|r| r.op == op).collect();
        out.extend(latency_chart(&op, &rs)?);
        if distinct(&rs, |r| r.data_size) > 1 {
            out.extend(sweep_chart(&op, &rs, Sweep::DataSize)?);
        }
        if distinct(&rs, |r| r.threads) > 1 {
            out.extend(sweep_chart(&op, &rs, Sweep::Threads)?);
        }
    }
    let modules: Vec<String> = {
        let mut seen = BTreeSet::new();
        rep.results
            .iter()
            .filter(|r| seen.insert(r.module.clone()))
            .map(|r| r.module.clone())
            .collect()
    };
    if modules.len() > 1 {
        let reference = rep
            .metadata
            .reference
            .clone()
            .unwrap_or_else(|| modules[0].clone());
        let rs = ratios(&rep.results, &reference);
        let others: Vec<&String> = modules.iter().filter(|m| **m != reference).collect();
        let bars: Vec<Bar> = rs
            .iter()
            .map(|r| Bar {
                label: format!(
                    "{}{} {}",
                    if others.len() > 1 {
                        format!("{}: ", r.module)
                    } else {
                        String::new()
                    },
                    r.op,
                    size_threads(r.data_size, r.threads)
                ),
                ratio: r.ratio,
                noise: r.noise,
                colour: colour(1 + others.iter().position(|m| **m == r.module).unwrap_or(0)),
            })
            .collect();
        if !bars.is_empty() {
            let title = format!(
                "ops/s of {} ÷ ops/s of {reference} (above 1: faster than {reference})",
                others
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            out.push(ratio_chart("chart-ratio", &title, &bars)?);
        }
    }
    Ok(out)
}

/// The chart of a comparison: current ÷ baseline per compared entry.
pub fn compare_charts(c: &Comparison) -> std::result::Result<Vec<Chart>, String> {
    let bars: Vec<Bar> = c
        .entries
        .iter()
        .filter_map(|e| {
            let (cur, base) = (e.current?, e.baseline?);
            (base > 0.0 && cur.is_finite()).then(|| Bar {
                label: format!(
                    "{} {} {}",
                    e.module,
                    e.op,
                    size_threads(e.data_size, e.threads)
                ),
                ratio: cur / base,
                noise: e.noise_pct / 100.0,
                colour: match e.class {
                    Class::Improved => RGBColor(44, 160, 44),
                    Class::Regressed => RGBColor(214, 39, 40),
                    Class::Unchanged => RGBColor(127, 127, 127),
                },
            })
        })
        .collect();
    if bars.is_empty() {
        return Ok(Vec::new());
    }
    let title = format!(
        "current ÷ baseline ({}; green improved, red regressed, grey unchanged)",
        c.figure
    );
    Ok(vec![ratio_chart("chart-compare", &title, &bars)?])
}

/// The page: a heading, a few lines of context, the charts.
pub fn page(title: &str, context: &[String], charts: &[Chart]) -> String {
    let mut s = String::new();
    s.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    s.push_str(&format!("<title>{}</title>\n", escape(title)));
    s.push_str(
        "<style>body{font-family:sans-serif;margin:1.5em;color:#222}\
         figure{margin:1.5em 0}svg{max-width:100%;height:auto}\
         .meta{color:#555;font-size:90%}</style>\n</head>\n<body>\n",
    );
    s.push_str(&format!("<h1>{}</h1>\n", escape(title)));
    for line in context {
        s.push_str(&format!("<p class=\"meta\">{}</p>\n", escape(line)));
    }
    if charts.is_empty() {
        s.push_str("<p>No measured results to chart.</p>\n");
    } else {
        s.push_str("<ul>\n");
        for c in charts {
            s.push_str(&format!(
                "<li><a href=\"#{}\">{}</a></li>\n",
                escape(&c.id),
                escape(&c.title)
            ));
        }
        s.push_str("</ul>\n");
    }
    for c in charts {
        s.push_str(&format!("<figure>\n{}\n</figure>\n", c.svg));
    }
    // Markers for tests, set once the page has loaded: the charts and the
    // resources the page fetched (none; failed fetches count too).
    s.push_str(
        "<script>window.addEventListener('load',function(){var b=document.body;\
         b.setAttribute('data-charts',\
         String(document.querySelectorAll('svg[id^=\"chart-\"]').length));\
         b.setAttribute('data-resources',\
         String(performance.getEntriesByType('resource').length));});</script>\n",
    );
    s.push_str("</body>\n</html>\n");
    s
}

/// The HTML report of a result file.
pub fn render(rep: &Report) -> std::result::Result<String, String> {
    let m = &rep.metadata;
    let modules: Vec<&str> = m.modules.iter().map(|x| x.name.as_str()).collect();
    let context = vec![
        format!(
            "Run {} · hsm-bench {} ({}) · {} results",
            m.timestamp,
            m.hsm_bench.version,
            m.hsm_bench.git_commit,
            rep.results.len()
        ),
        format!(
            "Machine: {} · {} · {} logical cores{}",
            m.system.cpu_model,
            m.system.arch,
            m.system.cpu_cores_logical,
            if modules.is_empty() {
                String::new()
            } else {
                format!(" · modules: {}", modules.join(", "))
            }
        ),
    ];
    Ok(page("hsm-bench report", &context, &charts(rep)?))
}

/// The HTML page of a comparison.
pub fn render_compare(c: &Comparison) -> std::result::Result<String, String> {
    let context = vec![
        format!(
            "Current {} against baseline {} · figure: {} · threshold {}%",
            c.current, c.baseline, c.figure, c.threshold_pct
        ),
        format!(
            "{} compared, {} regressed",
            c.entries.len(),
            c.regressions()
        ),
    ];
    Ok(page("hsm-bench comparison", &context, &compare_charts(c)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::charts::cdf_points;
    use crate::report::fixtures::result;
    use crate::report::result::HistBin;

    /// A real run (`--module dalek --module softhsm --ops sha256,ed25519-sign
    /// --data-sizes 64,1K --threads 1,2 --rounds 2 --histogram`).
    pub(crate) const FIXTURE: &str = include_str!("../../tests/fixtures/report-sweep.json");

    fn fixture() -> Report {
        serde_json::from_str(FIXTURE).expect("fixture parses")
    }

    /// The ids of the `<svg>` elements, in order.
    fn svg_ids(html: &str) -> Vec<String> {
        html.split("<svg ")
            .skip(1)
            .map(|s| {
                let s = s.strip_prefix("id=\"").expect("every svg has an id first");
                s[..s.find('"').unwrap()].to_string()
            })
            .collect()
    }

    #[test]
    fn page_is_self_contained() {
        let html = render(&fixture()).unwrap();
        for bad in [
            "http://", "https://", "src=", "<link", "@import", "url(", "<img",
        ] {
            assert!(!html.contains(bad), "page contains {bad}");
        }
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert!(html.trim_end().ends_with("</html>"));
    }

    #[test]
    fn fixture_gets_latency_per_op_sweeps_and_ratio() {
        let ids = svg_ids(&render(&fixture()).unwrap());
        assert_eq!(
            ids,
            [
                "chart-latency-ed25519-sign",
                "chart-size-ed25519-sign",
                "chart-threads-ed25519-sign",
                "chart-latency-sha256",
                "chart-size-sha256",
                "chart-threads-sha256",
                "chart-ratio",
            ]
        );
        let html = render(&fixture()).unwrap();
        // Throughput in MB/s for ops with a data size, ratio to the first module,
        // one bar per (op, size, threads) of softhsm.
        assert!(html.contains("throughput, MB/s"));
        assert!(html.contains("ops/s of softhsm ÷ ops/s of dalek"));
        assert_eq!(html.matches("sha256 1K ×2").count(), 1);
    }

    #[test]
    fn one_module_without_sweeps_gets_latency_charts_only() {
        let mut rep = fixture();
        rep.results
            .retain(|r| r.module == "dalek" && r.data_size == 64 && r.threads == 1);
        let ids = svg_ids(&render(&rep).unwrap());
        assert_eq!(ids, ["chart-latency-ed25519-sign", "chart-latency-sha256"]);
        rep.results.clear();
        let html = render(&rep).unwrap();
        assert!(svg_ids(&html).is_empty());
        assert!(html.contains("No measured results"));
    }

    #[test]
    fn cdf_from_percentiles_is_monotonic_and_ends_at_one() {
        let mut r = result("m", "x", 1000.0, 0.01);
        r.percentiles.insert("p99.9".into(), 2000.0);
        r.percentiles.insert("p75".into(), 1050.0);
        let pts = cdf_points(&r);
        assert_eq!(pts.first().unwrap(), &(900.0, 0.0));
        assert_eq!(pts.last().unwrap(), &(3000.0, 1.0));
        assert!(pts.contains(&(1050.0, 0.75)));
        assert!(pts.windows(2).all(|w| w[0].0 <= w[1].0 && w[0].1 < w[1].1));
    }

    #[test]
    fn cdf_from_histogram_bins() {
        let mut r = result("m", "x", 1000.0, 0.01);
        r.histogram = Some(vec![
            HistBin {
                le_us: 950.0,
                count: 1,
            },
            HistBin {
                le_us: 1000.0,
                count: 2,
            },
            HistBin {
                le_us: 3000.0,
                count: 1,
            },
        ]);
        assert_eq!(
            cdf_points(&r),
            [(900.0, 0.0), (950.0, 0.25), (1000.0, 0.75), (3000.0, 1.0)]
        );
    }

    #[test]
    fn compare_page_has_one_bar_per_entry() {
        let base = fixture();
        let mut cur = base.clone();
        for r in &mut cur.results {
            r.ops_per_sec = r.ops_per_sec.map(|o| o * 0.5);
        }
        let c = crate::judge::compare::compare(&cur, &base, 5.0, None);
        let html = render_compare(&c).unwrap();
        assert_eq!(svg_ids(&html), ["chart-compare"]);
        assert!(html.contains("dalek sha256 1K ×2"));
        assert!(!html.contains("http"));
    }

    #[test]
    fn names_are_escaped() {
        let mut rep = fixture();
        rep.results[0].module = "<b>&\"x".into();
        let html = render(&rep).unwrap();
        assert!(!html.contains("<b>"));
        assert!(html.contains("&lt;b&gt;&amp;"));
    }
}
