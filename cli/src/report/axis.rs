//! Log axes of the charts: where the labelled ticks and the light grid lines
//! go, and where the axis starts and ends.
//!
//! plotters' own log axis labels powers of ten only, so a latency range of
//! 15 µs … 30 ms had no label in its 10–100 µs decade, and a range inside one
//! decade had one label or none. Here the ticks are chosen by how many decades
//! the axis spans: every 1…9 × 10ᵏ under half a decade, 1-2-5 × 10ᵏ under two,
//! 10ᵏ from two on; and the axis starts on a tick at or below the smallest
//! value, so each decade that holds data holds a labelled tick (the lowest
//! data decade holds the axis start or its own 10ᵏ, every higher one its 10ᵏ).
//! The ratio axis is symmetric around 1 ([`ratio_axis`]): 0.1× and 10× are
//! equally far from the centre, and its ticks are their own reciprocals (the
//! 1-2-5 values are).

/// A log axis: its range and ticks, all positive and increasing.
#[derive(Debug, Clone, PartialEq)]
pub struct LogAxis {
    /// Start of the axis (a labelled tick).
    pub lo: f64,
    /// End of the axis.
    pub hi: f64,
    /// Labelled ticks in `lo..=hi`.
    pub ticks: Vec<f64>,
    /// Unlabelled grid lines: the other n × 10ᵏ in `lo..=hi`.
    pub light: Vec<f64>,
}

/// Tick mantissas under half a decade, under two, and from two on (labels
/// stay at least ~1/10 of the axis apart).
const DENSE: &[u32] = &[1, 2, 3, 4, 5, 6, 7, 8, 9];
const ONE_TWO_FIVE: &[u32] = &[1, 2, 5];
const DECADES: &[u32] = &[1];

/// `m × 10ᵏ`, computed so that 1-2-5 values below 1 are their shortest
/// decimals (5 / 100, not 5 × 0.01).
fn value(m: u32, k: i32) -> f64 {
    if k >= 0 {
        m as f64 * 10f64.powi(k)
    } else {
        m as f64 / 10f64.powi(-k)
    }
}

/// Relative tolerance of "on a tick" (floating-point rounding).
const EPS: f64 = 1e-9;

/// Every `m × 10ᵏ` (m in `mantissas`) in `lo..=hi`, increasing.
fn values_in(lo: f64, hi: f64, mantissas: &[u32]) -> Vec<f64> {
    let (k0, k1) = (lo.log10().floor() as i32 - 1, hi.log10().ceil() as i32);
    (k0..=k1)
        .flat_map(|k| mantissas.iter().map(move |&m| value(m, k)))
        .filter(|v| *v >= lo * (1.0 - EPS) && *v <= hi * (1.0 + EPS))
        .collect()
}

/// The largest `m × 10ᵏ` (m in `mantissas`) at or below `x`.
fn snap_down(x: f64, mantissas: &[u32]) -> f64 {
    let k = x.log10().floor() as i32;
    (k - 1..=k)
        .flat_map(|k| mantissas.iter().map(move |&m| value(m, k)))
        .filter(|v| *v <= x * (1.0 + EPS))
        .fold(value(1, k - 1), f64::max)
}

/// The smallest `m × 10ᵏ` (m in `mantissas`) at or above `x`.
fn snap_up(x: f64, mantissas: &[u32]) -> f64 {
    let k = x.log10().floor() as i32;
    (k..=k + 1)
        .flat_map(|k| mantissas.iter().map(move |&m| value(m, k)))
        .filter(|v| *v >= x * (1.0 - EPS))
        .fold(value(1, k + 2), f64::min)
}

/// Tick mantissas for an axis spanning `decades`.
fn mantissas(decades: f64) -> &'static [u32] {
    if decades < 0.5 {
        DENSE
    } else if decades < 2.0 {
        ONE_TWO_FIVE
    } else {
        DECADES
    }
}

fn axis(lo: f64, hi: f64, m: &[u32]) -> LogAxis {
    let ticks = values_in(lo, hi, m);
    let light = values_in(lo, hi, DENSE)
        .into_iter()
        .filter(|v| !ticks.iter().any(|t| (t - v).abs() <= v * EPS))
        .collect();
    LogAxis {
        lo,
        hi,
        ticks,
        light,
    }
}

/// The axis of data from `min` to `max` (both > 0): `pad` (a factor, e.g. 1.2)
/// of room on each side, the start moved down to a tick.
pub fn data_axis(min: f64, max: f64, pad: f64) -> LogAxis {
    let (lo, hi) = (min / pad, (max * pad).max(min * pad * pad));
    let m = mantissas((hi / lo).log10());
    axis(snap_down(lo, m), hi, m)
}

/// The symmetric axis of ratios: `1/R … R`, with `R` the 1-2-5 value at or
/// above `extent` × 1.1 (and at least 2) and 1-2-5 ticks while that is at
/// most 100, else the power of ten at or above it and ticks at the powers of
/// ten (whole outer decades: every decade that may hold data has a labelled
/// tick, and no end label crowds the decade label next to it). `extent` is the
/// largest of every value and every reciprocal to show.
pub fn ratio_axis(extent: f64) -> LogAxis {
    let want = if extent.is_finite() {
        (extent * 1.1).max(2.0)
    } else {
        2.0
    };
    let r = snap_up(want, ONE_TWO_FIVE);
    if r <= 100.0 {
        axis(1.0 / r, r, ONE_TWO_FIVE)
    } else {
        let r = snap_up(want, DECADES);
        axis(1.0 / r, r, DECADES)
    }
}

/// A ratio tick's label: `0.05×`, `1×`, `20×`.
pub fn ratio_label(v: f64) -> String {
    let k = (v * (1.0 + EPS)).log10().floor() as i32;
    // Round to the tick's own precision (ticks are m × 10ᵏ).
    let digits = (-k).max(0) as usize;
    let s = format!("{v:.digits$}");
    format!("{s}×")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The decades (⌊log₁₀⌋) of `xs`.
    fn decades(xs: &[f64]) -> Vec<i32> {
        let mut d: Vec<i32> = xs
            .iter()
            .map(|x| (x * (1.0 + EPS)).log10().floor() as i32)
            .collect();
        d.dedup();
        d
    }

    #[test]
    fn every_decade_with_data_has_a_labelled_tick() {
        // Latencies in µs: Ed25519 of two modules, SHA-256, one slow op, a
        // range inside one decade, one across a power of ten.
        for (min, max) in [
            (15.0, 28_000.0),
            (0.23, 12.0),
            (160.0, 900.0),
            (250.0, 380.0),
            (84.0, 99.0),
            (9.5, 11.0),
            (1.0, 1.0),
            (3e5, 4e7),
        ] {
            let a = data_axis(min, max, 1.2);
            assert!(a.lo <= min && a.hi >= max, "{min}..{max}: {a:?}");
            assert!(a.ticks.first() == Some(&a.lo), "{a:?}");
            // Every decade from the one of min to the one of max holds a tick.
            let want: Vec<i32> = (decades(&[min])[0]..=decades(&[max])[0]).collect();
            let have = decades(&a.ticks);
            for d in want {
                assert!(
                    have.contains(&d),
                    "{min}..{max}: decade {d} has no tick: {a:?}"
                );
            }
            assert!(a.ticks.windows(2).all(|w| w[0] < w[1]));
            assert!(a.ticks.len() >= 2 || a.hi / a.lo < 10.0, "{a:?}");
        }
        // Density by span: 1…9, 1-2-5, decades.
        assert_eq!(data_axis(250.0, 380.0, 1.2).ticks, [200.0, 300.0, 400.0]);
        assert_eq!(
            data_axis(160.0, 900.0, 1.2).ticks,
            [100.0, 200.0, 500.0, 1000.0]
        );
        assert_eq!(
            data_axis(15.0, 28_000.0, 1.2).ticks,
            [10.0, 100.0, 1000.0, 10_000.0]
        );
        let a = data_axis(15.0, 28_000.0, 1.2);
        assert!(a.light.contains(&20.0) && !a.light.contains(&100.0));
    }

    #[test]
    fn the_ratio_axis_is_symmetric_around_one() {
        for extent in [
            1.0,
            1.3,
            3.0,
            7.7,
            19.0,
            60.0,
            95.0,
            140.0,
            3000.0,
            f64::NAN,
        ] {
            let a = ratio_axis(extent);
            assert!((a.lo * a.hi - 1.0).abs() < 1e-9, "{extent}: {a:?}");
            if extent.is_finite() {
                assert!(
                    a.hi >= extent * 1.1 && a.lo <= 1.0 / (extent * 1.1),
                    "{a:?}"
                );
            }
            assert!(a.ticks.contains(&1.0), "{a:?}");
            for t in &a.ticks {
                assert!(
                    a.ticks.iter().any(|u| (u * t - 1.0).abs() < 1e-9),
                    "{extent}: no reciprocal of {t} in {:?}",
                    a.ticks
                );
            }
        }
        assert_eq!(ratio_axis(3.0).ticks, [0.2, 0.5, 1.0, 2.0, 5.0]);
        let wide = ratio_axis(140.0);
        assert_eq!(wide.ticks, [0.001, 0.01, 0.1, 1.0, 10.0, 100.0, 1000.0]);
        assert_eq!(ratio_axis(950.0).hi, 10_000.0);
        assert_eq!(
            ratio_axis(3.0)
                .ticks
                .iter()
                .map(|t| ratio_label(*t))
                .collect::<Vec<_>>(),
            ["0.2×", "0.5×", "1×", "2×", "5×"]
        );
        assert_eq!(ratio_label(0.05), "0.05×");
        assert_eq!(ratio_label(100.0), "100×");
        assert_eq!(ratio_label(0.001), "0.001×");
    }
}
