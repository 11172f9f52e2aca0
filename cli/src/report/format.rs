//! Formatting and parsing of the figures every output shows: sizes, rates,
//! durations and RFC 3339 timestamps.

/// A throughput in decimal (SI) units: `512 B/s`, `12.3 kB/s`, `45.6 MB/s`,
/// `1.23 GB/s` (1 MB = 10⁶ bytes, the unit of network and disk figures).
pub fn fmt_bytes_rate(bps: f64) -> String {
    if !bps.is_finite() || bps < 0.0 {
        return "-".into();
    }
    let (v, unit) = if bps >= 1e9 {
        (bps / 1e9, "GB/s")
    } else if bps >= 1e6 {
        (bps / 1e6, "MB/s")
    } else if bps >= 1e3 {
        (bps / 1e3, "kB/s")
    } else {
        return format!("{bps:.0} B/s");
    };
    if v >= 100.0 {
        format!("{v:.0} {unit}")
    } else if v >= 10.0 {
        format!("{v:.1} {unit}")
    } else {
        format!("{v:.2} {unit}")
    }
}

/// ops/s with thousands separators and adaptive precision.
pub fn fmt_rate(r: f64) -> String {
    if !r.is_finite() {
        return "-".into();
    }
    let s = if r >= 1000.0 {
        format!("{r:.0}")
    } else if r >= 10.0 {
        format!("{r:.1}")
    } else {
        format!("{r:.2}")
    };
    let (int, frac) = s
        .split_once('.')
        .map_or((s.as_str(), None), |(a, b)| (a, Some(b)));
    let mut grouped = String::new();
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(c);
    }
    match frac {
        Some(f) => format!("{grouped}.{f}"),
        None => grouped,
    }
}

/// A latency in µs with an adaptive unit: `812ns`, `12.3µs`, `1.234ms`, `2.50s`.
pub fn fmt_us(us: f64) -> String {
    if !us.is_finite() {
        "-".into()
    } else if us < 1.0 {
        format!("{:.0}ns", us * 1000.0)
    } else if us < 10.0 {
        format!("{us:.2}µs")
    } else if us < 1000.0 {
        format!("{us:.1}µs")
    } else if us < 1_000_000.0 {
        format!("{:.3}ms", us / 1000.0)
    } else {
        format!("{:.2}s", us / 1e6)
    }
}

/// Bytes as `64B`, `1K`, `10K`, `1M` (binary multiples).
pub fn fmt_size(n: u64) -> String {
    if n >= 1 << 20 && n.is_multiple_of(1 << 20) {
        format!("{}M", n >> 20)
    } else if n >= 1024 && n.is_multiple_of(1024) {
        format!("{}K", n >> 10)
    } else {
        format!("{n}B")
    }
}

/// Parse a size: `64`, `64B`, `4K`, `4KB`, `4KiB`, `1M`, `1MB` (K = 1024).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let upper = t.to_ascii_uppercase();
    let (num, mult) = if let Some(n) = upper
        .strip_suffix("KIB")
        .or(upper.strip_suffix("KB"))
        .or(upper.strip_suffix('K'))
    {
        (n, 1024)
    } else if let Some(n) = upper
        .strip_suffix("MIB")
        .or(upper.strip_suffix("MB"))
        .or(upper.strip_suffix('M'))
    {
        (n, 1024 * 1024)
    } else if let Some(n) = upper.strip_suffix('B') {
        (n, 1)
    } else {
        (upper.as_str(), 1)
    };
    let v: u64 = num
        .trim()
        .parse()
        .map_err(|_| format!("bad data size '{t}' (examples: 64, 4K, 1M)"))?;
    let bytes = v
        .checked_mul(mult)
        .ok_or_else(|| format!("data size '{t}' too large"))?;
    if bytes == 0 || bytes > 64 * 1024 * 1024 {
        return Err(format!("data size '{t}' must be between 1 byte and 64M"));
    }
    Ok(bytes)
}

/// Parse a size list such as `64,4K,1M`.
pub fn parse_sizes(s: &str) -> Result<Vec<u64>, String> {
    let v: Vec<u64> = s
        .split(',')
        .filter(|p| !p.trim().is_empty())
        .map(parse_size)
        .collect::<Result<_, _>>()?;
    if v.is_empty() {
        return Err("empty data size list".into());
    }
    Ok(v)
}

/// The default `--data-sizes` sweep.
pub const DEFAULT_SIZES: [u64; 4] = [1024, 10 * 1024, 100 * 1024, 1024 * 1024];

/// Now as RFC 3339 UTC with milliseconds.
pub fn rfc3339_now() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    rfc3339(now.as_secs() as i64, now.subsec_millis())
}

/// Seconds since the epoch as RFC 3339 UTC.
pub fn rfc3339(secs: i64, millis: u32) -> String {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Civil-from-days (H. Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

/// A size in a profile: a number of bytes or a string like "4K".
#[derive(Debug, Clone, serde::Deserialize, PartialEq)]
#[serde(untagged)]
pub enum SizeValue {
    /// Bytes.
    Bytes(u64),
    /// Text such as "1K".
    Text(String),
}

impl SizeValue {
    /// The size in bytes.
    pub fn bytes(&self) -> std::result::Result<u64, String> {
        match self {
            // The same rules as "64" given as text or to --data-sizes.
            SizeValue::Bytes(b) => parse_size(&b.to_string()),
            SizeValue::Text(t) => parse_size(t),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("64").unwrap(), 64);
        assert_eq!(parse_size("64B").unwrap(), 64);
        assert_eq!(parse_size("4K").unwrap(), 4096);
        assert_eq!(parse_size("10KB").unwrap(), 10240);
        assert_eq!(parse_size("1m").unwrap(), 1 << 20);
        assert_eq!(parse_size("2MiB").unwrap(), 2 << 20);
        assert!(parse_size("0").is_err());
        assert!(parse_size("abc").is_err());
        assert!(parse_size("1G").is_err());
        assert!(parse_size("100M").is_err());
        assert_eq!(parse_sizes("64,4K,1M").unwrap(), vec![64, 4096, 1 << 20]);
        assert_eq!(
            parse_sizes("1KB,10KB,100KB,1MB").unwrap(),
            DEFAULT_SIZES.to_vec()
        );
        assert!(parse_sizes(",").is_err());
    }

    #[test]
    fn formatting() {
        assert_eq!(fmt_size(64), "64B");
        assert_eq!(fmt_size(1024), "1K");
        assert_eq!(fmt_size(1 << 20), "1M");
        assert_eq!(fmt_size(1500), "1500B");
        assert_eq!(fmt_rate(1234567.8), "1,234,568");
        assert_eq!(fmt_rate(12.345), "12.3");
        assert_eq!(fmt_rate(123.0), "123.0");
        assert_eq!(fmt_us(0.5), "500ns");
        assert_eq!(fmt_us(12.34), "12.3µs");
        assert_eq!(fmt_us(1234.0), "1.234ms");
        assert_eq!(fmt_us(2_500_000.0), "2.50s");
    }

    #[test]
    fn byte_rates_use_decimal_units() {
        assert_eq!(fmt_bytes_rate(512.0), "512 B/s");
        assert_eq!(fmt_bytes_rate(12_345.0), "12.3 kB/s");
        assert_eq!(fmt_bytes_rate(1_024_000.0), "1.02 MB/s");
        assert_eq!(fmt_bytes_rate(456_700_000.0), "457 MB/s");
        assert_eq!(fmt_bytes_rate(1.234e9), "1.23 GB/s");
        assert_eq!(fmt_bytes_rate(f64::NAN), "-");
    }

    #[test]
    fn rfc3339_dates() {
        assert_eq!(rfc3339(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(951_782_400, 5), "2000-02-29T00:00:00.005Z");
        assert_eq!(rfc3339(1_735_689_599, 999), "2024-12-31T23:59:59.999Z");
        assert!(rfc3339_now().ends_with('Z'));
    }
}
