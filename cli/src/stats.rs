//! Latency recording and statistics: HdrHistogram for percentiles (nanosecond
//! resolution, 3 significant digits), exact running sums for mean and standard
//! deviation, a 95% confidence interval of the mean, and Tukey-fence outlier counts
//! (outliers are counted, never dropped).

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Highest latency the histogram tracks exactly (1000 s); larger values saturate.
const MAX_TRACKABLE_NS: u64 = 1_000_000_000_000;

/// Per-thread latency recorder.
#[derive(Clone)]
pub struct Recorder {
    hist: Histogram<u64>,
    count: u64,
    sum: u128,
    sumsq: u128,
    min: u64,
    max: u64,
    samples: Option<Vec<u64>>,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder")
            .field("count", &self.count)
            .finish()
    }
}

impl Recorder {
    /// A new recorder; `keep_samples` also keeps every raw sample (capacity reserved
    /// up front so recording does not allocate in the common case).
    pub fn new(keep_samples: bool, capacity: usize) -> Self {
        Recorder {
            hist: Histogram::new_with_bounds(1, MAX_TRACKABLE_NS, 3)
                .expect("valid histogram bounds"),
            count: 0,
            sum: 0,
            sumsq: 0,
            min: u64::MAX,
            max: 0,
            samples: keep_samples.then(|| Vec::with_capacity(capacity)),
        }
    }

    /// Record one latency in nanoseconds.
    #[inline]
    pub fn record(&mut self, ns: u64) {
        self.hist.saturating_record(ns.max(1));
        self.count += 1;
        self.sum += ns as u128;
        self.sumsq += (ns as u128) * (ns as u128);
        self.min = self.min.min(ns);
        self.max = self.max.max(ns);
        if let Some(s) = &mut self.samples {
            s.push(ns);
        }
    }

    /// Add another recorder's data to this one.
    pub fn merge(&mut self, other: &Recorder) {
        self.hist
            .add(&other.hist)
            .expect("histograms with equal bounds merge");
        self.count += other.count;
        self.sum += other.sum;
        self.sumsq += other.sumsq;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        if let (Some(a), Some(b)) = (&mut self.samples, &other.samples) {
            a.extend_from_slice(b);
        }
    }

    /// Number of recorded samples.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Raw samples, if kept.
    pub fn samples(&self) -> Option<&[u64]> {
        self.samples.as_deref()
    }

    /// Statistics over everything recorded; `percentiles` are in percent (e.g. 99.9).
    pub fn summary(&self, percentiles: &[f64]) -> Option<Summary> {
        if self.count == 0 {
            return None;
        }
        let n = self.count as f64;
        let mean = self.sum as f64 / n;
        // Sample variance from exact integer sums: (Σx² - (Σx)²/n) / (n-1).
        let var = if self.count > 1 {
            let num = self.sumsq as f64 - (self.sum as f64) * (self.sum as f64) / n;
            (num / (n - 1.0)).max(0.0)
        } else {
            0.0
        };
        let stddev = var.sqrt();
        let ci95 = if self.count > 1 {
            t_critical_95(self.count - 1) * stddev / n.sqrt()
        } else {
            f64::NAN
        };
        let q = |p: f64| self.hist.value_at_quantile(p / 100.0).min(self.max);
        // Quartiles of fewer than 4 samples say nothing: no outliers then.
        let (low, high) = if self.count < 4 {
            (0, 0)
        } else {
            self.tukey_outliers()
        };
        Some(Summary {
            count: self.count,
            mean_ns: mean,
            stddev_ns: stddev,
            ci95_ns: ci95,
            min_ns: self.min,
            max_ns: self.max,
            p50_ns: q(50.0),
            p90_ns: q(90.0),
            p95_ns: q(95.0),
            p99_ns: q(99.0),
            p999_ns: q(99.9),
            percentiles: percentiles.iter().map(|&p| (p, q(p))).collect(),
            outliers_low: low,
            outliers_high: high,
        })
    }

    /// Samples outside the Tukey fences [Q1 - 1.5 IQR, Q3 + 1.5 IQR].
    fn tukey_outliers(&self) -> (u64, u64) {
        let q1 = self.hist.value_at_quantile(0.25) as f64;
        let q3 = self.hist.value_at_quantile(0.75) as f64;
        let iqr = q3 - q1;
        let (lo, hi) = (q1 - 1.5 * iqr, q3 + 1.5 * iqr);
        let (mut nl, mut nh) = (0, 0);
        for v in self.hist.iter_recorded() {
            let x = self.hist.median_equivalent(v.value_iterated_to()) as f64;
            if x < lo {
                nl += v.count_at_value();
            } else if x > hi {
                nh += v.count_at_value();
            }
        }
        (nl, nh)
    }

    /// Histogram bins for display: `bins` log-spaced (or linear for a narrow range)
    /// buckets between min and max; returns (upper bound ns, count) pairs.
    pub fn bins(&self, bins: usize) -> Vec<(u64, u64)> {
        if self.count == 0 || bins == 0 {
            return Vec::new();
        }
        // Too few samples for a shape: one bin holding them all.
        if self.count < 4 {
            return vec![(self.max.max(1), self.count)];
        }
        let (lo, hi) = (self.min.max(1) as f64, self.max.max(1) as f64);
        let log = hi / lo > 4.0;
        let edge = |i: usize| -> f64 {
            let f = i as f64 / bins as f64;
            if log {
                lo * (hi / lo).powf(f)
            } else {
                lo + (hi - lo) * f
            }
        };
        let uppers: Vec<f64> = (1..=bins).map(edge).collect();
        let mut counts = vec![0u64; bins];
        for v in self.hist.iter_recorded() {
            let x = (self.hist.median_equivalent(v.value_iterated_to()) as f64).clamp(lo, hi);
            let i = uppers.iter().position(|&u| x <= u).unwrap_or(bins - 1);
            counts[i] += v.count_at_value();
        }
        uppers
            .into_iter()
            .map(|u| u.ceil() as u64)
            .zip(counts)
            .collect()
    }
}

/// A [`Recorder`] as a result file carries it, lossless apart from raw
/// samples: the HdrHistogram in its V2 deflate serialization (base64), and
/// the exact count, sums, minimum and maximum. Recorders rebuilt from these
/// merge exactly (`hsm-bench run --processes`, `hsm-bench merge`): the
/// merged percentiles are those of all samples recorded together.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hdr {
    /// The histogram: HdrHistogram V2 + deflate, base64 (1 ns to 1000 s, 3
    /// significant digits).
    pub v2z: String,
    /// Samples recorded.
    pub count: u64,
    /// Σ latency, ns (a decimal string: it may exceed 2^64).
    pub sum_ns: String,
    /// Σ latency², ns² (a decimal string).
    pub sumsq_ns: String,
    /// Smallest sample, ns.
    pub min_ns: u64,
    /// Largest sample, ns.
    pub max_ns: u64,
}

impl Recorder {
    /// The recorder as a result file carries it ([`Hdr`]).
    pub fn to_hdr(&self) -> Hdr {
        use base64ct::Encoding;
        use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};
        let mut buf = Vec::new();
        V2DeflateSerializer::new()
            .serialize(&self.hist, &mut buf)
            .expect("serializing a histogram into memory");
        Hdr {
            v2z: base64ct::Base64::encode_string(&buf),
            count: self.count,
            sum_ns: self.sum.to_string(),
            sumsq_ns: self.sumsq.to_string(),
            min_ns: self.min,
            max_ns: self.max,
        }
    }

    /// A recorder rebuilt from [`Hdr`] (no raw samples); an error when the
    /// text is not one this program wrote (other bounds or precision, counts
    /// that disagree, bad base64 or deflate data).
    pub fn from_hdr(h: &Hdr) -> std::result::Result<Recorder, String> {
        use base64ct::Encoding;
        use hdrhistogram::serialization::Deserializer;
        let bytes = base64ct::Base64::decode_vec(&h.v2z)
            .map_err(|_| "the latency histogram is not base64".to_string())?;
        let hist: Histogram<u64> = Deserializer::new()
            .deserialize(&mut std::io::Cursor::new(bytes))
            .map_err(|e| format!("the latency histogram does not decode ({e:?})"))?;
        let fresh = Recorder::new(false, 0);
        if hist.low() != fresh.hist.low()
            || hist.high() != fresh.hist.high()
            || hist.sigfig() != fresh.hist.sigfig()
        {
            return Err("the latency histogram has other bounds or precision".into());
        }
        if hist.len() != h.count {
            return Err(format!(
                "the latency histogram holds {} samples, its count says {}",
                hist.len(),
                h.count
            ));
        }
        let num = |s: &str| {
            s.parse::<u128>()
                .map_err(|_| format!("the latency sums are not numbers ('{s}')"))
        };
        let mut r = fresh;
        // Same bounds as every recorder's: merging it cannot fail.
        r.hist = hist;
        r.count = h.count;
        r.sum = num(&h.sum_ns)?;
        r.sumsq = num(&h.sumsq_ns)?;
        r.min = if h.count == 0 { u64::MAX } else { h.min_ns };
        r.max = h.max_ns;
        Ok(r)
    }
}

/// Statistics of one measurement (latencies in nanoseconds).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Samples.
    pub count: u64,
    /// Mean latency.
    pub mean_ns: f64,
    /// Sample standard deviation.
    pub stddev_ns: f64,
    /// Half-width of the 95% confidence interval of the mean (Student t).
    pub ci95_ns: f64,
    /// Minimum.
    pub min_ns: u64,
    /// Maximum.
    pub max_ns: u64,
    /// Median.
    pub p50_ns: u64,
    /// 90th percentile.
    pub p90_ns: u64,
    /// 95th percentile.
    pub p95_ns: u64,
    /// 99th percentile.
    pub p99_ns: u64,
    /// 99.9th percentile.
    pub p999_ns: u64,
    /// Requested percentiles (percent, value).
    pub percentiles: Vec<(f64, u64)>,
    /// Samples below the lower Tukey fence.
    pub outliers_low: u64,
    /// Samples above the upper Tukey fence.
    pub outliers_high: u64,
}

/// Two-sided 95% critical value of Student's t distribution for `df` degrees of freedom.
pub fn t_critical_95(df: u64) -> f64 {
    const T: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => f64::INFINITY,
        1..=30 => T[df as usize - 1],
        31..=40 => 2.021,
        41..=60 => 2.000,
        61..=120 => 1.980,
        _ => 1.960,
    }
}

/// Parse a percentile list such as `50,90,99.9` (values in (0, 100]).
pub fn parse_percentiles(s: &str) -> Result<Vec<f64>, String> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let v: f64 = part
            .trim_start_matches(['p', 'P'])
            .parse()
            .map_err(|_| format!("bad percentile '{part}'"))?;
        if !(v > 0.0 && v <= 100.0) {
            return Err(format!("percentile {part} is not in (0, 100]"));
        }
        out.push(v);
    }
    if out.is_empty() {
        return Err("empty percentile list".into());
    }
    Ok(out)
}

/// Label of a percentile: 99.9 -> "p99.9", 50 -> "p50".
pub fn percentile_label(p: f64) -> String {
    if p.fract() == 0.0 {
        format!("p{}", p as u64)
    } else {
        format!("p{p}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(values: impl IntoIterator<Item = u64>) -> Recorder {
        let mut r = Recorder::new(true, 16);
        for v in values {
            r.record(v);
        }
        r
    }

    #[test]
    fn percentiles_of_uniform_values() {
        let r = rec(1..=1000);
        let s = r.summary(&[50.0, 99.9]).unwrap();
        assert_eq!(s.count, 1000);
        assert_eq!(s.min_ns, 1);
        assert_eq!(s.max_ns, 1000);
        // Values up to 2048 are exact at 3 significant digits.
        assert_eq!(s.p50_ns, 500);
        assert_eq!(s.p90_ns, 900);
        assert_eq!(s.p99_ns, 990);
        assert!((999..=1000).contains(&s.p999_ns));
        assert_eq!(s.percentiles, vec![(50.0, 500), (99.9, s.p999_ns)]);
        assert!((s.mean_ns - 500.5).abs() < 1e-9);
    }

    #[test]
    fn mean_and_stddev_are_exact_for_large_values() {
        // Beyond the histogram's exact range: mean/stddev still come from exact sums.
        let r = rec([1_000_001, 1_000_003, 1_000_005]);
        let s = r.summary(&[]).unwrap();
        assert!((s.mean_ns - 1_000_003.0).abs() < 1e-6);
        assert!((s.stddev_ns - 2.0).abs() < 1e-6);
        // 95% CI with 2 degrees of freedom: 4.303 * 2 / sqrt(3).
        assert!((s.ci95_ns - 4.303 * 2.0 / 3f64.sqrt()).abs() < 1e-6);
    }

    #[test]
    fn ci_shrinks_with_more_samples() {
        let small = rec((0..10).map(|i| 100 + (i % 3) * 10))
            .summary(&[])
            .unwrap();
        let large = rec((0..10_000).map(|i| 100 + (i % 3) * 10))
            .summary(&[])
            .unwrap();
        assert!(large.ci95_ns < small.ci95_ns / 10.0);
        assert_eq!(t_critical_95(1), 12.706);
        assert_eq!(t_critical_95(1000), 1.96);
    }

    #[test]
    fn merge_equals_recording_everything_in_one() {
        let a = rec(1..=500);
        let b = rec(501..=1000);
        let mut m = a.clone();
        m.merge(&b);
        let all = rec(1..=1000);
        assert_eq!(m.summary(&[99.0]), all.summary(&[99.0]));
        assert_eq!(m.samples().unwrap().len(), 1000);
    }

    #[test]
    fn outliers_are_counted_not_dropped() {
        let mut v: Vec<u64> = (0..100).map(|i| 1000 + i).collect();
        v.push(50_000);
        v.push(60_000);
        let s = rec(v).summary(&[]).unwrap();
        assert_eq!(s.outliers_high, 2);
        assert_eq!(s.outliers_low, 0);
        assert_eq!(s.count, 102);
        assert_eq!(s.max_ns, 60_000);
    }

    #[test]
    fn bins_hold_every_sample() {
        let r = rec((1..=1000).chain([100_000]));
        let bins = r.bins(12);
        assert_eq!(bins.len(), 12);
        assert_eq!(bins.iter().map(|b| b.1).sum::<u64>(), 1001);
        assert!(bins.windows(2).all(|w| w[0].0 <= w[1].0));
        assert_eq!(bins.last().unwrap().1, 1);
    }

    #[test]
    fn fewer_than_four_samples_have_no_outliers_and_one_bin() {
        let r = rec([1_000, 1_000, 900_000]);
        let s = r.summary(&[]).unwrap();
        assert_eq!((s.outliers_low, s.outliers_high), (0, 0));
        assert_eq!(r.bins(20), vec![(900_000, 3)]);
        // From 4 samples on, the fences apply.
        let r = rec([1_000, 1_000, 1_000, 1_000, 900_000]);
        assert_eq!(r.summary(&[]).unwrap().outliers_high, 1);
        assert_eq!(r.bins(20).len(), 20);
    }

    #[test]
    fn hdr_round_trips_and_merged_hdrs_equal_the_concatenated_samples() {
        // Two "processes" with different latency shapes.
        let a: Vec<u64> = (0..5000).map(|i| 10_000 + (i * 7919) % 3000).collect();
        let b: Vec<u64> = (0..3000).map(|i| 40_000 + (i * 104_729) % 90_000).collect();
        let (ra, rb) = (rec(a.clone()), rec(b.clone()));
        let back = Recorder::from_hdr(&ra.to_hdr()).unwrap();
        assert_eq!(back.summary(&[99.0]), ra.summary(&[99.0]));
        assert_eq!(back.to_hdr(), ra.to_hdr());
        let mut merged = Recorder::from_hdr(&ra.to_hdr()).unwrap();
        merged.merge(&Recorder::from_hdr(&rb.to_hdr()).unwrap());
        let all = rec(a.iter().chain(&b).copied());
        let (m, x) = (
            merged.summary(&[99.0, 99.9]).unwrap(),
            all.summary(&[99.0, 99.9]).unwrap(),
        );
        assert_eq!(m, x);
        assert_eq!(m.p99_ns, x.p99_ns);
        assert_eq!(m.count, 8000);
        // Exact: the p99 of the concatenated samples, at the histogram's
        // resolution (3 significant digits).
        let mut sorted: Vec<u64> = a.iter().chain(&b).copied().collect();
        sorted.sort_unstable();
        let exact = sorted[(0.99 * 8000.0_f64).ceil() as usize - 1];
        assert!(
            m.p99_ns.abs_diff(exact) <= exact / 1000,
            "{} {exact}",
            m.p99_ns
        );
    }

    #[test]
    fn bad_hdrs_are_errors_not_panics() {
        let good = rec([5, 6, 7]).to_hdr();
        let mut h = good.clone();
        h.v2z = "!!!".into();
        assert!(Recorder::from_hdr(&h).is_err());
        let mut h = good.clone();
        h.v2z = <base64ct::Base64 as base64ct::Encoding>::encode_string(&[1u8, 2, 3]);
        assert!(Recorder::from_hdr(&h).is_err());
        let mut h = good.clone();
        h.count = 4;
        assert!(Recorder::from_hdr(&h).is_err());
        let mut h = good.clone();
        h.sum_ns = "-1".into();
        assert!(Recorder::from_hdr(&h).is_err());
        let mut other = Histogram::<u64>::new_with_bounds(1, 1000, 2).unwrap();
        other.record(5).unwrap();
        let mut buf = Vec::new();
        hdrhistogram::serialization::Serializer::serialize(
            &mut hdrhistogram::serialization::V2DeflateSerializer::new(),
            &other,
            &mut buf,
        )
        .unwrap();
        let h = Hdr {
            v2z: <base64ct::Base64 as base64ct::Encoding>::encode_string(&buf),
            count: 1,
            ..good
        };
        assert!(Recorder::from_hdr(&h).unwrap_err().contains("bounds"));
    }

    #[test]
    fn empty_recorder_has_no_summary() {
        assert!(Recorder::new(false, 0).summary(&[]).is_none());
    }

    #[test]
    fn percentile_lists_parse() {
        assert_eq!(
            parse_percentiles("50,90, 99.9").unwrap(),
            vec![50.0, 90.0, 99.9]
        );
        assert_eq!(parse_percentiles("p50,p99").unwrap(), vec![50.0, 99.0]);
        assert!(parse_percentiles("0").is_err());
        assert!(parse_percentiles("101").is_err());
        assert!(parse_percentiles("x").is_err());
        assert!(parse_percentiles("").is_err());
        assert_eq!(percentile_label(99.9), "p99.9");
        assert_eq!(percentile_label(50.0), "p50");
    }
}
