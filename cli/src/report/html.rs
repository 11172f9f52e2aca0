//! `report --html` and `compare --html`: one self-contained HTML page of SVG
//! charts drawn with plotters' SVG backend (inline `<svg>`, `<text>` laid out by
//! the browser; no scripts, fonts or images are fetched).
//!
//! A result file's page leads with the answer, then the details:
//! - **Summary**: a table of ops/s per (op, size, threads) and module, with
//!   each module's ratio to the reference (`--reference`, else the first
//!   module) and its 95% noise; with several modules, the chart of those
//!   ratios on a log axis symmetric around 1 (0.5× and 2× equally far from
//!   it), the ratio's noise (both CIs and the spread of per-round ratios, as
//!   `compare` uses it) as error bars;
//! - **Details**, linked from a list: per op, the latency CDF of every result
//!   of the op (from the histogram bins when the run kept them, `--histogram`,
//!   else from min, the percentiles and max); per op measured at several data
//!   sizes, throughput vs data size, and per op measured at several thread
//!   counts, ops/s vs threads (and vs processes, `--processes`), each with a
//!   band of the 95% confidence interval
//!   of the mean latency (`ci95_us`) carried over to the rate
//!   ([`BenchResult::sampling_noise`]).
//!
//! Log axes have a labelled tick in every decade that holds data (`axis.rs`),
//! and the charts keep room for the last tick label at their right edge.
//! A comparison's page holds one chart: current ÷ baseline per entry, coloured
//! by verdict, on the same symmetric log axis.

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
use crate::report::format::fmt_rate;
use crate::report::format::fmt_size;
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

/// The modules of a report in first-seen order, and the reference of its
/// ratios (`--reference`, else the first module).
fn modules_and_reference(rep: &Report) -> (Vec<String>, String) {
    let mut seen = BTreeSet::new();
    let modules: Vec<String> = rep
        .results
        .iter()
        .filter(|r| seen.insert(r.module.clone()))
        .map(|r| r.module.clone())
        .collect();
    let reference = rep
        .metadata
        .reference
        .clone()
        .or_else(|| modules.first().cloned())
        .unwrap_or_default();
    (modules, reference)
}

/// The detail charts of a result file, in page order: per op its latency CDF
/// and its sweeps.
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
        if distinct(&rs, |r| r.processes) > 1 {
            out.extend(sweep_chart(&op, &rs, Sweep::Processes)?);
        }
    }
    Ok(out)
}

/// With two modules or more, the chart of every module's ops/s over the
/// reference's, per (op, size, threads).
pub fn ratio_summary_chart(rep: &Report) -> std::result::Result<Option<Chart>, String> {
    let (modules, reference) = modules_and_reference(rep);
    if modules.len() < 2 {
        return Ok(None);
    }
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
    if bars.is_empty() {
        return Ok(None);
    }
    let title = format!(
        "ops/s of {} ÷ ops/s of {reference} (right of 1: faster than {reference})",
        others
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    ratio_chart("chart-ratio", &title, &bars).map(Some)
}

/// A ratio as the summary table shows it: `0.063×`, `1.50×`, `16.1×`.
fn fmt_ratio(r: f64) -> String {
    if r >= 10.0 {
        format!("{r:.1}×")
    } else if r >= 1.0 {
        format!("{r:.2}×")
    } else {
        format!("{r:.3}×")
    }
}

/// The summary table: one row per (op, size, threads) in file order, the
/// ops/s of every module, and with two modules or more each other module's
/// ratio to the reference with its 95% noise.
pub fn summary_table(rep: &Report) -> String {
    let (modules, reference) = modules_and_reference(rep);
    let others: Vec<&String> = if modules.len() > 1 {
        modules.iter().filter(|m| **m != reference).collect()
    } else {
        Vec::new()
    };
    let rs = ratios(&rep.results, &reference);
    let mut rows: Vec<(&str, u64, u32, u32)> = Vec::new();
    for r in &rep.results {
        let k = (r.op.as_str(), r.data_size, r.threads, r.processes);
        if !rows.contains(&k) {
            rows.push(k);
        }
    }
    let mut s = String::from("<table id=\"summary\" class=\"summary\">\n<thead><tr><th>op</th>");
    s.push_str("<th>size</th><th>threads</th>");
    for m in &modules {
        s.push_str(&format!("<th>{} ops/s</th>", escape(m)));
    }
    for m in &others {
        s.push_str(&format!("<th>{} ÷ {}</th>", escape(m), escape(&reference)));
    }
    s.push_str("</tr></thead>\n<tbody>\n");
    for (op, size, threads, procs) in rows {
        let thr = if procs > 1 {
            format!("{threads}×{procs}p")
        } else {
            threads.to_string()
        };
        s.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td>{thr}</td>",
            escape(op),
            if size == 0 {
                "–".into()
            } else {
                fmt_size(size)
            }
        ));
        for m in &modules {
            let r = rep.results.iter().find(|r| {
                r.module == *m
                    && r.op == op
                    && r.data_size == size
                    && r.threads == threads
                    && r.processes == procs
            });
            let cell = match r {
                None => "–".to_string(),
                Some(r) => match (r.status, r.ops_per_sec) {
                    (Status::Unsupported, _) => "unsupported".into(),
                    (_, Some(ops)) => fmt_rate(ops),
                    (_, None) => r.status.as_str().to_string(),
                },
            };
            s.push_str(&format!("<td class=\"num\">{}</td>", escape(&cell)));
        }
        for m in &others {
            let x = rs.iter().find(|x| {
                x.module == **m
                    && x.op == op
                    && x.data_size == size
                    && x.threads == threads
                    && x.processes == procs
            });
            let cell = x.map_or_else(
                || "–".to_string(),
                |x| format!("{} ±{:.0}%", fmt_ratio(x.ratio), 100.0 * x.noise),
            );
            s.push_str(&format!("<td class=\"num\">{cell}</td>"));
        }
        s.push_str("</tr>\n");
    }
    s.push_str("</tbody>\n</table>\n");
    if !others.is_empty() {
        s.push_str(&format!(
            "<p class=\"meta\">Ratios: ops/s ÷ ops/s of {} (above 1: faster), ± the \
             ratio's 95% noise (both confidence intervals and the spread of per-round \
             ratios).</p>\n",
            escape(&reference)
        ));
    }
    s
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

/// What a page shows first: a table (HTML, may be empty) and charts.
pub struct Summary {
    /// The table, as HTML.
    pub table: String,
    /// Charts under the table.
    pub charts: Vec<Chart>,
}

/// The page: a heading, a few lines of context, the summary (the answer:
/// a table and the ratio chart), then the details (a list of links and the
/// detail charts).
pub fn page(title: &str, context: &[String], summary: &Summary, details: &[Chart]) -> String {
    let mut s = String::new();
    s.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    s.push_str(&format!("<title>{}</title>\n", escape(title)));
    s.push_str(
        "<style>body{font-family:sans-serif;margin:1.5em;color:#222}\
         figure{margin:1.5em 0}svg{max-width:100%;height:auto}\
         .meta{color:#555;font-size:90%}\
         table.summary{border-collapse:collapse;font-size:90%}\
         .summary th,.summary td{padding:.25em .7em;border-bottom:1px solid #ddd;text-align:left}\
         .summary td.num{text-align:right;font-variant-numeric:tabular-nums}</style>\n\
         </head>\n<body>\n",
    );
    s.push_str(&format!("<h1>{}</h1>\n", escape(title)));
    for line in context {
        s.push_str(&format!("<p class=\"meta\">{}</p>\n", escape(line)));
    }
    let all = summary.charts.len() + details.len();
    if all == 0 && summary.table.is_empty() {
        s.push_str("<p>No measured results to chart.</p>\n");
    }
    if !summary.table.is_empty() || !summary.charts.is_empty() {
        s.push_str("<section id=\"section-summary\">\n<h2>Summary</h2>\n");
        s.push_str(&summary.table);
        for c in &summary.charts {
            s.push_str(&format!("<figure>\n{}\n</figure>\n", c.svg));
        }
        s.push_str("</section>\n");
    }
    if !details.is_empty() {
        s.push_str("<section id=\"section-details\">\n<h2>Details</h2>\n<ul>\n");
        for c in details {
            s.push_str(&format!(
                "<li><a href=\"#{}\">{}</a></li>\n",
                escape(&c.id),
                escape(&c.title)
            ));
        }
        s.push_str("</ul>\n");
        for c in details {
            s.push_str(&format!("<figure>\n{}\n</figure>\n", c.svg));
        }
        s.push_str("</section>\n");
    }
    // Markers for tests, set once the page has loaded: the charts, the
    // resources the page fetched (none; failed fetches count too), and the
    // chart labels that reach past their chart's edges (none).
    s.push_str(
        "<script>window.addEventListener('load',function(){var b=document.body;\
         var svgs=document.querySelectorAll('svg[id^=\"chart-\"]');\
         b.setAttribute('data-charts',String(svgs.length));\
         b.setAttribute('data-resources',\
         String(performance.getEntriesByType('resource').length));\
         var out=0;svgs.forEach(function(v){var s=v.getBoundingClientRect();\
         v.querySelectorAll('text').forEach(function(t){var r=t.getBoundingClientRect();\
         if(r.width>0&&(r.left<s.left-0.5||r.top<s.top-0.5||r.right>s.right+0.5||\
         r.bottom>s.bottom+0.5))out++;});});\
         b.setAttribute('data-labels-outside',String(out));});</script>\n",
    );
    s.push_str("</body>\n</html>\n");
    s
}

/// The HTML report of a result file: the summary (ops/s table, ratio chart)
/// first, then per op the latency CDF and the sweeps.
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
    let summary = Summary {
        table: if rep.results.is_empty() {
            String::new()
        } else {
            summary_table(rep) + &parts_table(rep)
        },
        charts: ratio_summary_chart(rep)?.into_iter().collect(),
    };
    Ok(page("hsm-bench report", &context, &summary, &charts(rep)?))
}

/// Each process's (`--processes`) or host's (`merge`) row of the merged
/// results, then the merged row; empty when there are none.
fn parts_table(rep: &Report) -> String {
    let us = |v: Option<f64>| v.map_or("–".into(), crate::report::format::fmt_us);
    let mut s = String::new();
    for r in rep
        .results
        .iter()
        .filter(|r| r.per_process.is_some() || r.hosts.is_some())
    {
        let head = format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td>",
            escape(&r.op),
            escape(&size_threads(r.data_size, r.threads)),
            r.processes,
            escape(&r.module)
        );
        for p in r.per_process.iter().chain(&r.hosts).flatten() {
            let ops = p.ops_per_sec.map_or(p.status.as_str().into(), fmt_rate);
            s.push_str(&format!(
                "{head}<td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>\n",
                escape(&crate::report::merge::part_name(p)),
                escape(&ops),
                us(p.p50_us),
                us(p.p99_us)
            ));
        }
        s.push_str(&format!(
            "{head}<td><b>merged</b></td><td class=\"num\"><b>{}</b></td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>\n",
            r.ops_per_sec.map_or("–".into(), fmt_rate),
            us(r.p50_us),
            us(r.p99_us)
        ));
    }
    if s.is_empty() {
        return s;
    }
    format!(
        "<table id=\"parts\" class=\"summary\">\n<thead><tr><th>op</th><th>size ×threads</th>\
         <th>processes</th><th>module</th><th>part</th><th>ops/s</th><th>p50</th><th>p99</th>\
         </tr></thead>\n<tbody>\n{s}</tbody>\n</table>\n"
    )
}

/// The HTML page of a comparison: the chart of current ÷ baseline.
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
    let summary = Summary {
        table: String::new(),
        charts: compare_charts(c)?,
    };
    Ok(page("hsm-bench comparison", &context, &summary, &[]))
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
    fn fixture_gets_ratio_then_latency_per_op_and_sweeps() {
        let ids = svg_ids(&render(&fixture()).unwrap());
        assert_eq!(
            ids,
            [
                "chart-ratio",
                "chart-latency-ed25519-sign",
                "chart-size-ed25519-sign",
                "chart-threads-ed25519-sign",
                "chart-latency-sha256",
                "chart-size-sha256",
                "chart-threads-sha256",
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

    /// The `<svg id="ID" …>…</svg>` of a page.
    fn svg<'a>(html: &'a str, id: &str) -> &'a str {
        let start = html
            .find(&format!("<svg id=\"{id}\""))
            .unwrap_or_else(|| panic!("no {id}"));
        let end = start + html[start..].find("</svg>").unwrap();
        &html[start..end]
    }

    /// The value of attribute `name` in `tag`.
    fn attr<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
        let at = tag.find(&format!(" {name}=\""))? + name.len() + 3;
        Some(&tag[at..at + tag[at..].find('"')?])
    }

    /// A `<text>` of an SVG as drawn: where, anchored how, and its text.
    #[derive(Debug)]
    struct Label {
        x: f64,
        anchor: String,
        size: f64,
        rotated: bool,
        text: String,
    }

    fn labels(svg: &str) -> Vec<Label> {
        svg.split("<text ")
            .skip(1)
            .map(|t| {
                let (tag, rest) = t.split_once('>').unwrap();
                let tag = &format!(" {tag}");
                let num = |n| attr(tag, n).unwrap().parse::<f64>().unwrap();
                Label {
                    x: num("x"),
                    anchor: attr(tag, "text-anchor").unwrap_or("start").to_string(),
                    size: num("font-size"),
                    rotated: attr(tag, "transform").is_some(),
                    text: rest[..rest.find("</text>").unwrap()].trim().to_string(),
                }
            })
            .collect()
    }

    /// The width attribute of an SVG.
    fn width(svg: &str) -> f64 {
        attr(&svg[..svg.find('>').unwrap()], "width")
            .unwrap()
            .parse()
            .unwrap()
    }

    /// A latency tick label (`200ns`, `1µs`, `10ms`, `2s`) in µs.
    fn tick_us(text: &str) -> Option<f64> {
        let units = [("ns", 1e-3), ("µs", 1.0), ("ms", 1e3), ("s", 1e6)];
        let (unit, scale) = units.iter().find(|(u, _)| text.ends_with(u))?;
        Some(text.strip_suffix(unit)?.parse::<f64>().ok()? * scale)
    }

    #[test]
    fn the_summary_leads_the_page() {
        let html = render(&fixture()).unwrap();
        let at = |what: &str| html.find(what).unwrap_or_else(|| panic!("no {what}"));
        assert!(at("<table id=\"summary\"") < at("<svg id=\"chart-ratio\""));
        assert!(at("<svg id=\"chart-ratio\"") < at("<svg id=\"chart-latency-"));
        assert!(at("<h2>Summary</h2>") < at("<h2>Details</h2>"));
        // One row per (op, size, threads), ops/s of both modules and the
        // ratio to the reference (the first module).
        let table = &html[at("<table id=\"summary\"")..at("</table>")];
        assert_eq!(table.matches("<tr><td>").count(), 8, "{table}");
        assert!(
            table.contains("<th>dalek ops/s</th><th>softhsm ops/s</th><th>softhsm ÷ dalek</th>")
        );
        let rep = fixture();
        let find = |m: &str| {
            rep.results
                .iter()
                .find(|r| {
                    r.module == m && r.op == "sha256" && r.data_size == 1024 && r.threads == 2
                })
                .unwrap()
                .ops_per_sec
                .unwrap()
        };
        let (d, s) = (find("dalek"), find("softhsm"));
        let row = format!(
            "<tr><td>sha256</td><td>1K</td><td>2</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{} ±",
            fmt_rate(d),
            fmt_rate(s),
            fmt_ratio(s / d)
        );
        assert!(table.contains(&row), "no {row} in {table}");
        // One module: the table without ratios, and no ratio chart.
        let mut one = fixture();
        one.results.retain(|r| r.module == "dalek");
        let html = render(&one).unwrap();
        assert!(html.contains("<th>dalek ops/s</th></tr>"));
        assert!(!html.contains("chart-ratio"));
    }

    #[test]
    fn the_ratio_axis_is_symmetric_around_one() {
        let html = render(&fixture()).unwrap();
        let ratio = |l: &Label| l.text.strip_suffix('×')?.parse::<f64>().ok();
        let ticks: Vec<(f64, f64)> = labels(svg(&html, "chart-ratio"))
            .iter()
            .filter_map(|l| Some((ratio(l)?, l.x)))
            .collect();
        assert!(ticks.len() >= 5, "{ticks:?}");
        let centre = ticks.iter().find(|t| t.0 == 1.0).expect("a tick at 1×").1;
        for &(v, x) in &ticks {
            let (_, mirror) = ticks
                .iter()
                .find(|t| (t.0 * v - 1.0).abs() < 1e-9)
                .unwrap_or_else(|| panic!("no tick at 1/{v}: {ticks:?}"));
            assert!(
                ((x - centre) + (mirror - centre)).abs() <= 1.5,
                "{v}: {ticks:?}"
            );
        }
        // The axis ends on ticks: its limits are reciprocal.
        let (first, last) = (ticks[0], ticks[ticks.len() - 1]);
        assert!((first.0 * last.0 - 1.0).abs() < 1e-9, "{ticks:?}");
        // A comparison uses the same axis.
        let c = crate::judge::compare::compare(&fixture(), &fixture(), 5.0, None);
        let html = render_compare(&c).unwrap();
        assert!(
            labels(svg(&html, "chart-compare"))
                .iter()
                .any(|l| l.text == "1×")
        );
    }

    #[test]
    fn every_decade_with_latency_data_has_a_labelled_tick() {
        let rep = fixture();
        let html = render(&rep).unwrap();
        let decade = |us: f64| (us * (1.0 + 1e-9)).log10().floor() as i32;
        for op in ops_in_order(&rep) {
            let ticks: Vec<i32> = labels(svg(&html, &format!("chart-latency-{op}")))
                .iter()
                .filter_map(|l| tick_us(&l.text))
                .map(decade)
                .collect();
            let data: BTreeSet<i32> = measured(&rep)
                .filter(|r| r.op == op)
                .flat_map(|r| cdf_points(r).into_iter().map(|p| decade(p.0)))
                .collect();
            assert!(data.len() >= 2, "{op}: {data:?}");
            for d in data {
                assert!(
                    ticks.contains(&d),
                    "{op}: no tick in decade 1e{d} µs: {ticks:?}"
                );
            }
        }
    }

    #[test]
    fn no_label_reaches_past_its_chart() {
        let rep = fixture();
        let mut pages = vec![render(&rep).unwrap()];
        let mut one = rep.clone();
        one.results
            .retain(|r| r.module == "dalek" && r.threads == 1);
        pages.push(render(&one).unwrap());
        let c = crate::judge::compare::compare(&rep, &rep, 5.0, None);
        pages.push(render_compare(&c).unwrap());
        // Latencies up to just under 10 ms: a tick at the right edge.
        let slow = result("m", "slow-op", 1e6 / 2800.0, 0.01);
        assert!((slow.max_us.unwrap() - 8400.0).abs() < 1e-6);
        pages.push(render(&crate::report::fixtures::report(vec![slow])).unwrap());
        for html in &pages {
            for id in svg_ids(html) {
                let svg = svg(html, &id);
                let w = width(svg);
                for l in labels(svg) {
                    // Sans-serif glyphs average well under 0.6 em.
                    let len = if l.rotated {
                        l.size
                    } else {
                        0.6 * l.size * l.text.chars().count() as f64
                    };
                    let (left, right) = match l.anchor.as_str() {
                        "middle" => (l.x - len / 2.0, l.x + len / 2.0),
                        "end" => (l.x - len, l.x),
                        _ => (l.x, l.x + len),
                    };
                    assert!(
                        left >= 0.0 && right <= w,
                        "{id}: {l:?} spans {left}..{right} of {w}"
                    );
                }
            }
        }
    }

    #[test]
    fn latency_ticks_are_short() {
        use crate::report::charts::fmt_tick_us;
        assert_eq!(fmt_tick_us(0.2), "200ns");
        assert_eq!(fmt_tick_us(1.0), "1µs");
        assert_eq!(fmt_tick_us(50.0), "50µs");
        assert_eq!(fmt_tick_us(10_000.0), "10ms");
        assert_eq!(fmt_tick_us(2e6), "2s");
    }
}
