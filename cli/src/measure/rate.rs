//! The open-loop rate check (`--rate`): did the module keep up with the
//! target rate of operations started per second (docs/benchmarking.md,
//! `--rate`)?

use crate::report::format::fmt_rate;

/// The rate an open-loop run achieved (`started` operations, successful or
/// not, over `secs` of wall time) and, when it fell below 95 % of `target`,
/// the warning that says so.
pub fn rate_kept(started: u64, secs: f64, target: f64) -> (f64, Option<String>) {
    let achieved = if secs > 0.0 {
        started as f64 / secs
    } else {
        0.0
    };
    let missed = (achieved < 0.95 * target).then(|| {
        format!(
            "target rate missed: achieved {} of {} ops/s ({:.1} %)",
            fmt_rate(achieved),
            fmt_rate(target),
            100.0 * achieved / target
        )
    });
    (achieved, missed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_below_95_percent_of_the_target_is_missed() {
        // 30 operations in 0.3 s at 100 ops/s: kept, no warning.
        let (achieved, missed) = rate_kept(30, 0.3, 100.0);
        assert!((achieved - 100.0).abs() < 1e-9);
        assert!(missed.is_none());
        // 96 % and exactly 95 % are kept; 94 % is missed, and said so.
        assert!(rate_kept(96, 1.0, 100.0).1.is_none());
        assert!(rate_kept(95, 1.0, 100.0).1.is_none());
        let (achieved, missed) = rate_kept(94, 1.0, 100.0);
        assert_eq!(achieved, 94.0);
        let w = missed.unwrap();
        assert!(w.starts_with("target rate missed: achieved"), "{w}");
        assert!(w.contains("(94.0 %)"), "{w}");
        // Nothing measured: nothing achieved.
        assert_eq!(rate_kept(0, 0.0, 10.0).0, 0.0);
        assert!(rate_kept(0, 0.0, 10.0).1.is_some());
    }
}
