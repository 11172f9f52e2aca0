//! The values of the shims' environment variables: counts and return values
//! (decimal or `0x`-hex), and durations (`200us`, `1.5ms`, `300ns`, `2s`).

use std::time::Duration;

/// A number: decimal or `0x` hexadecimal (surrounding blanks ignored).
pub fn parse_number(s: &str) -> Result<u64, String> {
    let s = s.trim();
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16),
        None => s.parse(),
    }
    .map_err(|_| format!("'{s}' is not a number (decimal or 0x-hex)"))
}

/// A duration such as `200us` (or `200µs`), `1.5ms`, `300ns`, `2s`, at most
/// `max` (each shim has its own bound).
pub fn parse_duration(s: &str, max: Duration) -> Result<Duration, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or_else(|| format!("'{s}' has no unit (ns, us, ms, s)"))?;
    let (num, unit) = s.split_at(split);
    let v: f64 = num.parse().map_err(|_| format!("bad number in '{s}'"))?;
    let ns = match unit {
        "ns" => v,
        "us" | "µs" => v * 1e3,
        "ms" => v * 1e6,
        "s" => v * 1e9,
        _ => return Err(format!("unknown unit '{unit}' in '{s}' (ns, us, ms, s)")),
    };
    if !(0.0..=max.as_nanos() as f64).contains(&ns) {
        return Err(format!(
            "duration '{s}' out of range (at most {}s)",
            max.as_secs_f64()
        ));
    }
    Ok(Duration::from_nanos(ns as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINUTE: Duration = Duration::from_secs(60);

    #[test]
    fn numbers_parse_in_decimal_and_hex() {
        assert_eq!(parse_number(" 42 "), Ok(42));
        assert_eq!(parse_number("0x10000000000"), Ok(1 << 40));
        assert_eq!(parse_number("0X30"), Ok(0x30));
        for bad in ["", "x", "0x", "-1", "1.5", "0xzz"] {
            let e = parse_number(bad).unwrap_err();
            assert!(e.contains("not a number"), "{bad}: {e}");
        }
    }

    #[test]
    fn durations_parse() {
        let d = |s| parse_duration(s, MINUTE);
        assert_eq!(d("200us").unwrap(), Duration::from_micros(200));
        assert_eq!(d("200µs").unwrap(), Duration::from_micros(200));
        assert_eq!(d("1.5ms").unwrap(), Duration::from_micros(1500));
        assert_eq!(d("300ns").unwrap(), Duration::from_nanos(300));
        assert_eq!(d(" 2s ").unwrap(), Duration::from_secs(2));
        assert!(d("200").unwrap_err().contains("no unit"));
        assert!(d("5h").unwrap_err().contains("unknown unit"));
        assert!(d("x ms").is_err());
        assert!(d("1.2.3ms").unwrap_err().contains("bad number"));
    }

    #[test]
    fn durations_stop_at_the_given_maximum() {
        assert_eq!(parse_duration("60s", MINUTE), Ok(MINUTE));
        let e = parse_duration("60.001s", MINUTE).unwrap_err();
        assert!(e.contains("out of range (at most 60s)"), "{e}");
        let day = Duration::from_secs(86_400);
        assert_eq!(parse_duration("86400s", day), Ok(day));
        assert!(parse_duration("86401s", day).is_err());
    }
}
