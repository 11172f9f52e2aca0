//! SVG charts of results, drawn with plotters: the latency CDF of an op, sweeps
//! over data sizes or thread counts, and bars of ratios between modules. The
//! HTML page (`html.rs`) embeds them.

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::report::axis::{data_axis, ratio_axis, ratio_label};
use crate::report::format::{fmt_rate, fmt_size};
use crate::report::result::BenchResult;
use std::collections::BTreeSet;

/// One chart of the page.
#[derive(Debug, Clone)]
pub struct Chart {
    /// Element id of the `<svg>` (`chart-...`).
    pub id: String,
    /// Title (caption and `aria-label`).
    pub title: String,
    /// The `<svg>` element.
    pub svg: String,
}

/// Chart width, px.
pub const WIDTH: u32 = 960;

/// Height of the line charts, px.
pub const HEIGHT: u32 = 420;

/// Series colours (Tableau 10).
const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

pub fn colour(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

type DrawResult = std::result::Result<(), String>;

fn err<E: std::fmt::Debug>(e: E) -> String {
    format!("cannot draw chart: {e:?}")
}

/// Draw into an SVG string of `w`×`h` px and give it an id and a label.
fn svg_chart(
    id: String,
    title: String,
    w: u32,
    h: u32,
    draw: impl FnOnce(&DrawingArea<SVGBackend<'_>, Shift>) -> DrawResult,
) -> std::result::Result<Chart, String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (w, h)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        draw(&root)?;
        root.present().map_err(err)?;
    }
    // Inline SVG in HTML needs no namespace declaration: dropping it leaves no URL
    // at all in the page.
    let svg = svg
        .replace(" xmlns=\"http://www.w3.org/2000/svg\"", "")
        .replacen(
            "<svg ",
            &format!(
                "<svg id=\"{}\" role=\"img\" aria-label=\"{}\" ",
                escape(&id),
                escape(&title)
            ),
            1,
        );
    Ok(Chart { id, title, svg })
}

/// Points of the latency CDF of a result, (µs, fraction), increasing in both.
pub fn cdf_points(r: &BenchResult) -> Vec<(f64, f64)> {
    let mut pts: Vec<(f64, f64)> = Vec::new();
    if let Some(bins) = r.histogram.as_deref() {
        let total: u64 = bins.iter().map(|b| b.count).sum();
        if total > 0 {
            if let Some(min) = r.min_us {
                pts.push((min, 0.0));
            }
            let mut acc = 0;
            for b in bins {
                acc += b.count;
                pts.push((b.le_us, acc as f64 / total as f64));
            }
        }
    }
    if pts.is_empty() {
        let fixed = [
            (r.min_us, 0.0),
            (r.p50_us, 0.5),
            (r.p90_us, 0.9),
            (r.p95_us, 0.95),
            (r.p99_us, 0.99),
            (r.p999_us, 0.999),
            (r.max_us, 1.0),
        ];
        pts.extend(fixed.iter().filter_map(|(v, p)| v.map(|v| (v, *p))));
        pts.extend(r.percentiles.iter().filter_map(|(k, v)| {
            let p: f64 = k.strip_prefix('p')?.parse().ok()?;
            Some((*v, p / 100.0))
        }));
    }
    pts.retain(|(x, p)| x.is_finite() && *x > 0.0 && p.is_finite());
    pts.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.total_cmp(&b.0)));
    pts.dedup_by(|a, b| a.1 == b.1);
    // Keep the curve monotonic (bins and percentiles are, up to rounding).
    let mut out: Vec<(f64, f64)> = Vec::with_capacity(pts.len());
    for (x, p) in pts {
        let x = out.last().map_or(x, |l| x.max(l.0));
        out.push((x, p));
    }
    out
}

/// Series name of a result: the module, plus the data size and threads when the
/// op's results differ in them.
pub fn series_name(r: &BenchResult, by_size: bool, by_threads: bool, by_procs: bool) -> String {
    let mut s = r.module.clone();
    if by_size {
        s.push_str(&format!(" {}", fmt_size(r.data_size)));
    }
    if by_threads {
        s.push_str(&format!(" ×{}", r.threads));
    }
    if by_procs {
        s.push_str(&format!(" {}p", r.processes));
    }
    s
}

pub fn distinct<T: Ord>(rs: &[&BenchResult], f: impl Fn(&BenchResult) -> T) -> usize {
    rs.iter().map(|r| f(r)).collect::<BTreeSet<_>>().len()
}

/// A latency tick (µs, a 1…9 × 10ᵏ value) as a short label: `200ns`, `1µs`,
/// `50µs`, `10ms`, `2s`.
pub fn fmt_tick_us(us: f64) -> String {
    let (v, unit) = if us < 1.0 {
        (us * 1e3, "ns")
    } else if us < 1e3 {
        (us, "µs")
    } else if us < 1e6 {
        (us / 1e3, "ms")
    } else {
        (us / 1e6, "s")
    };
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s}{unit}")
}

/// Room right of the plot, px: half of the widest tick label (`10.000ms`)
/// centred on the last tick, so that no label is cut at the edge.
const RIGHT_MARGIN: u32 = 40;

/// Axis font.
fn font() -> TextStyle<'static> {
    ("sans-serif", 15).into_font().into()
}

fn caption_font() -> TextStyle<'static> {
    ("sans-serif", 20).into_font().into()
}

/// The latency CDF chart of one op.
pub fn latency_chart(op: &str, rs: &[&BenchResult]) -> std::result::Result<Option<Chart>, String> {
    let (by_size, by_threads, by_procs) = (
        distinct(rs, |r| r.data_size) > 1,
        distinct(rs, |r| r.threads) > 1,
        distinct(rs, |r| r.processes) > 1,
    );
    let series: Vec<(String, Vec<(f64, f64)>)> = rs
        .iter()
        .map(|r| (series_name(r, by_size, by_threads, by_procs), cdf_points(r)))
        .filter(|(_, p)| p.len() >= 2)
        .collect();
    let xs = series.iter().flat_map(|(_, p)| p.iter().map(|q| q.0));
    let (lo, hi) = xs.fold((f64::INFINITY, 0f64), |(l, h), x| (l.min(x), h.max(x)));
    if series.is_empty() {
        return Ok(None);
    }
    let x = data_axis(lo, hi, 1.2);
    let title = format!("{op}: latency distribution (CDF)");
    svg_chart(
        format!("chart-latency-{}", slug(op)),
        title.clone(),
        WIDTH,
        HEIGHT,
        |root| {
            let mut chart = ChartBuilder::on(root)
                .caption(&title, caption_font())
                .margin(12)
                .margin_right(RIGHT_MARGIN)
                .x_label_area_size(40)
                .y_label_area_size(56)
                .build_cartesian_2d(
                    (x.lo..x.hi)
                        .log_scale()
                        .with_key_points(x.ticks.clone())
                        .with_light_points(x.light.clone()),
                    0f64..1f64,
                )
                .map_err(err)?;
            chart
                .configure_mesh()
                .x_desc("latency (log scale)")
                .y_desc("fraction of calls ≤ latency")
                .x_label_formatter(&|v| fmt_tick_us(*v))
                .label_style(font())
                .draw()
                .map_err(err)?;
            for (i, (name, pts)) in series.iter().enumerate() {
                let c = colour(i);
                chart
                    .draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(2)))
                    .map_err(err)?
                    .label(name.as_str())
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2))
                    });
            }
            legend(&mut chart)
        },
    )
    .map(Some)
}

fn legend<'a, DB: DrawingBackend + 'a, CT: plotters::coord::CoordTranslate>(
    chart: &mut ChartContext<'a, DB, CT>,
) -> DrawResult {
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.4))
        .label_font(font())
        .draw()
        .map_err(err)
}

/// Which sweep a chart shows.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Sweep {
    DataSize,
    Threads,
    /// `--processes`.
    Processes,
}

/// Throughput vs data size (bytes/s when the op has them, else ops/s) or ops/s vs
/// threads of one op, one line per module (and other parameter), with the band of
/// the 95% confidence interval.
pub fn sweep_chart(
    op: &str,
    rs: &[&BenchResult],
    sweep: Sweep,
) -> std::result::Result<Option<Chart>, String> {
    let bytes = sweep == Sweep::DataSize && rs.iter().all(|r| r.bytes_per_sec.is_some());
    let x_of = |r: &BenchResult| match sweep {
        Sweep::DataSize => r.data_size.max(1) as f64,
        Sweep::Threads => r.threads as f64,
        Sweep::Processes => r.processes as f64,
    };
    let y_of = |r: &BenchResult| {
        if bytes {
            r.bytes_per_sec.unwrap_or(0.0) / 1e6
        } else {
            r.ops_per_sec.unwrap_or(0.0)
        }
    };
    // Lines: results equal in everything but the swept parameter.
    let mut lines: Vec<(String, Vec<&BenchResult>)> = Vec::new();
    let (sizes, threads, procs) = (
        distinct(rs, |r| r.data_size) > 1,
        distinct(rs, |r| r.threads) > 1,
        distinct(rs, |r| r.processes) > 1,
    );
    for r in rs {
        let name = match sweep {
            Sweep::DataSize => series_name(r, false, threads, procs),
            Sweep::Threads => series_name(r, sizes, false, procs),
            Sweep::Processes => series_name(r, sizes, threads, false),
        };
        match lines.iter_mut().find(|l| l.0 == name) {
            Some(l) => l.1.push(r),
            None => lines.push((name, vec![r])),
        }
    }
    lines.retain(|l| l.1.len() >= 2);
    if lines.is_empty() {
        return Ok(None);
    }
    for l in &mut lines {
        l.1.sort_by(|a, b| x_of(a).total_cmp(&x_of(b)));
    }
    let all = lines.iter().flat_map(|l| l.1.iter());
    let (x_lo, x_hi, y_hi) = all.fold((f64::INFINITY, 0f64, 0f64), |(a, b, c), r| {
        let y = y_of(r) * (1.0 + r.sampling_noise());
        (a.min(x_of(r)), b.max(x_of(r)), c.max(y))
    });
    let y_hi = if y_hi > 0.0 { y_hi * 1.1 } else { 1.0 };
    let (what, id, x_desc) = match sweep {
        Sweep::DataSize => ("vs data size", "size", "data size (log₂ scale)"),
        Sweep::Threads => ("vs threads", "threads", "threads"),
        Sweep::Processes => ("vs processes", "processes", "processes"),
    };
    let y_desc = if bytes { "throughput, MB/s" } else { "ops/s" };
    let title = format!(
        "{op}: {} {what} (band: 95% CI)",
        if bytes { "throughput" } else { "ops/s" }
    );
    // One mesh for both x axes (their coordinate types differ).
    macro_rules! finish {
        ($chart:expr, $x_label:expr) => {{
            let mut chart = $chart;
            chart
                .configure_mesh()
                .x_desc(x_desc)
                .y_desc(y_desc)
                .x_label_formatter($x_label)
                .y_label_formatter(&|v| fmt_rate(*v))
                .label_style(font())
                .draw()
                .map_err(err)?;
            draw_lines(&mut chart, &lines, &x_of, &y_of)?;
            legend(&mut chart)
        }};
    }
    let draw = |root: &DrawingArea<SVGBackend<'_>, Shift>| -> DrawResult {
        let caption = || {
            let mut b = ChartBuilder::on(root);
            b.caption(&title, caption_font())
                .margin(12)
                .margin_right(RIGHT_MARGIN)
                .x_label_area_size(40)
                .y_label_area_size(72);
            b
        };
        match sweep {
            // Sizes on a log₂ axis, half a power of two of room on each side,
            // a labelled tick at every power of two (every other one past
            // twelve): every decade of sizes holds one.
            Sweep::DataSize => {
                let (k0, k1) = (x_lo.log2().floor() as i32, x_hi.log2().ceil() as i32);
                let step = if k1 - k0 > 12 { 2 } else { 1 };
                let ticks: Vec<f64> = (k0..=k1)
                    .step_by(step)
                    .map(|k| 2f64.powi(k))
                    .filter(|v| (x_lo..=x_hi).contains(v))
                    .collect();
                let range = (x_lo / 2f64.sqrt())..(x_hi * 2f64.sqrt());
                finish!(
                    caption()
                        .build_cartesian_2d(range.log_scale().with_key_points(ticks), 0f64..y_hi)
                        .map_err(err)?,
                    &|v: &f64| fmt_size(v.round() as u64)
                )
            }
            Sweep::Threads | Sweep::Processes => {
                let pad = ((x_hi - x_lo) * 0.05).max(0.2);
                finish!(
                    caption()
                        .build_cartesian_2d((x_lo - pad)..(x_hi + pad), 0f64..y_hi)
                        .map_err(err)?,
                    &|v: &f64| if v.fract() == 0.0 {
                        format!("{v:.0}")
                    } else {
                        String::new()
                    }
                )
            }
        }
    };
    svg_chart(
        format!("chart-{id}-{}", slug(op)),
        title.clone(),
        WIDTH,
        HEIGHT,
        draw,
    )
    .map(Some)
}

/// The lines of a sweep: noise band (polygon), line and points.
fn draw_lines<'a, DB, CT>(
    chart: &mut ChartContext<'a, DB, CT>,
    lines: &[(String, Vec<&BenchResult>)],
    x_of: &dyn Fn(&BenchResult) -> f64,
    y_of: &dyn Fn(&BenchResult) -> f64,
) -> DrawResult
where
    DB: DrawingBackend + 'a,
    CT: plotters::coord::CoordTranslate<From = (f64, f64)>,
{
    for (i, (name, rs)) in lines.iter().enumerate() {
        let c = colour(i);
        let noise = |r: &BenchResult| r.sampling_noise();
        if rs.iter().any(|r| noise(r) > 0.0) {
            // Relative noise is a factor: the band is y ÷ (1 + n) .. y × (1 + n).
            let upper = rs.iter().map(|r| (x_of(r), y_of(r) * (1.0 + noise(r))));
            let lower = rs
                .iter()
                .rev()
                .map(|r| (x_of(r), y_of(r) / (1.0 + noise(r))));
            chart
                .draw_series(std::iter::once(Polygon::new(
                    upper.chain(lower).collect::<Vec<_>>(),
                    c.mix(0.18).filled(),
                )))
                .map_err(err)?;
        }
        chart
            .draw_series(LineSeries::new(
                rs.iter().map(|r| (x_of(r), y_of(r))),
                c.stroke_width(2),
            ))
            .map_err(err)?
            .label(name.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
        chart
            .draw_series(
                rs.iter()
                    .map(|r| Circle::new((x_of(r), y_of(r)), 3, c.filled())),
            )
            .map_err(err)?;
    }
    Ok(())
}

/// One bar of a ratio chart.
#[derive(Debug, Clone)]
pub struct Bar {
    /// Row label.
    pub label: String,
    /// The ratio.
    pub ratio: f64,
    /// Relative noise (fraction); the error bar spans ratio ÷ (1 + n) .. × (1 + n).
    pub noise: f64,
    /// Bar colour.
    pub colour: RGBColor,
}

/// `1K ×2`, or `×2` for ops without a data size.
pub fn size_threads(size: u64, threads: u32) -> String {
    if size == 0 {
        format!("×{threads}")
    } else {
        format!("{} ×{threads}", fmt_size(size))
    }
}

/// Horizontal bars of ratios on a log axis symmetric around 1 (0.1× and 10×
/// equally far from the centre, [`ratio_axis`]): each bar runs from 1 to its
/// ratio, left for below 1, right for above, with its noise as an error bar.
pub fn ratio_chart(id: &str, title: &str, bars: &[Bar]) -> std::result::Result<Chart, String> {
    let n = bars.len();
    let extent = bars
        .iter()
        .flat_map(|b| {
            let f = 1.0 + b.noise.max(0.0);
            [b.ratio * f, f / b.ratio]
        })
        .filter(|x| x.is_finite() && *x > 0.0)
        .fold(1.0f64, f64::max);
    let x = ratio_axis(extent);
    let label_w = bars
        .iter()
        .map(|b| b.label.chars().count())
        .max()
        .unwrap_or(4) as u32
        * 7
        + 16;
    let h = 90 + 26 * n as u32;
    // Row i (0 at the bottom) spans y ROW·i … ROW·(i+1), in whole units (an
    // integer axis takes our ticks and formatter); the first bar goes on top.
    const ROW: i32 = 100;
    let centres: Vec<i32> = (0..n as i32).map(|i| i * ROW + ROW / 2).collect();
    let row_label = |y: &i32| {
        bars.get(n.wrapping_sub(1 + (y / ROW) as usize))
            .map(|b| b.label.clone())
            .unwrap_or_default()
    };
    svg_chart(id.to_string(), title.to_string(), WIDTH, h, |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(title, caption_font())
            .margin(12)
            .margin_right(RIGHT_MARGIN)
            .x_label_area_size(40)
            .y_label_area_size(label_w.min(WIDTH / 2))
            .build_cartesian_2d(
                (x.lo..x.hi)
                    .log_scale()
                    .with_key_points(x.ticks.clone())
                    .with_light_points(x.light.clone()),
                (0..ROW * n.max(1) as i32).with_key_points(centres.clone()),
            )
            .map_err(err)?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .x_label_formatter(&|v| ratio_label(*v))
            .y_label_formatter(&row_label)
            .x_desc("ratio, log scale (error bar: 95% noise)")
            .label_style(font())
            .draw()
            .map_err(err)?;
        for (b, i) in bars.iter().zip((0..n).rev()) {
            if !(b.ratio.is_finite() && b.ratio > 0.0) {
                continue;
            }
            let y = i as i32 * ROW;
            chart
                .draw_series([Rectangle::new(
                    [(1.0, y + ROW * 15 / 100), (b.ratio, y + ROW * 85 / 100)],
                    b.colour.mix(0.75).filled(),
                )])
                .map_err(err)?;
            if b.noise > 0.0 && b.noise.is_finite() {
                chart
                    .draw_series([ErrorBar::new_horizontal(
                        y + ROW / 2,
                        b.ratio / (1.0 + b.noise),
                        b.ratio,
                        b.ratio * (1.0 + b.noise),
                        BLACK.stroke_width(1),
                        8,
                    )])
                    .map_err(err)?;
            }
        }
        chart
            .draw_series([PathElement::new(
                vec![(1.0, 0), (1.0, ROW * n.max(1) as i32)],
                BLACK.stroke_width(1),
            )])
            .map_err(err)?;
        Ok(())
    })
}

/// HTML/XML text escaping; control and bidi characters are shown as
/// [`crate::safe_text::escape`] shows them.
pub fn escape(s: &str) -> String {
    crate::safe_text::escape(s)
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// An id fragment from free text: `[a-z0-9-]` only.
pub fn slug(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect()
}
