//! The effective settings of a run: built-in defaults, overridden by the profile,
//! overridden by command-line flags.

use std::time::Duration;

use crate::error::{CliError, Result};
use crate::measure::checks::{
    check_iterations, check_percentiles, check_processes, check_rate, check_rounds, check_seconds,
    check_threads,
};
use crate::measure::mode::Mode;
use crate::measure::profiles::{self, Profile};
use crate::report::format::DEFAULT_SIZES;
use crate::report::format::parse_sizes;
use crate::stats::parse_percentiles;

/// The default time limit of an op of fixed iterations on one module
/// ([`Settings::op_time_limit`]).
pub const DEFAULT_ITERATIONS_OP_TIME: Duration = Duration::from_secs(600);

/// Defaults when neither profile nor flags say otherwise.
pub const DEFAULT_ITERATIONS: u64 = 1000;
/// Default warmup calls.
pub const DEFAULT_WARMUP: u64 = 10;
/// Default percentiles.
pub const DEFAULT_PERCENTILES: [f64; 5] = [50.0, 90.0, 95.0, 99.0, 99.9];

/// Flags of `run` that feed the settings (a subset of the clap struct).
#[derive(Debug, Clone, Default)]
pub struct Flags {
    /// --profile
    pub profile: Option<String>,
    /// --ops
    pub ops: Vec<String>,
    /// --iterations
    pub iterations: Option<u64>,
    /// --duration
    pub duration: Option<f64>,
    /// --warmup
    pub warmup: Option<u64>,
    /// --threads
    pub threads: Vec<u32>,
    /// --processes
    pub processes: Vec<u32>,
    /// --data-sizes
    pub data_sizes: Option<String>,
    /// --rate
    pub rate: Option<f64>,
    /// --mix
    pub mix: Option<String>,
    /// --percentiles
    pub percentiles: Option<String>,
    /// --rounds
    pub rounds: Option<u32>,
    /// --max-op-time
    pub max_op_time: Option<f64>,
    /// Number of modules (rounds default to 3 with more than one).
    pub modules: usize,
    /// --key-label given (ops then default to everything the key allows).
    pub key_label: bool,
}

/// Effective settings.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Where the profile came from.
    pub profile: Option<String>,
    profile_data: Profile,
    /// Op globs.
    pub ops: Vec<String>,
    /// Default mode.
    pub mode: Mode,
    /// Whether the mode came from the command line (then overrides do not apply).
    mode_from_flags: bool,
    /// Warmup calls.
    pub warmup: u64,
    warmup_from_flags: bool,
    /// Thread counts.
    pub threads: Vec<u32>,
    /// Process counts (worker processes per module driving one token).
    pub processes: Vec<u32>,
    /// Data sizes.
    pub data_sizes: Option<Vec<u64>>,
    /// Percentiles.
    pub percentiles: Vec<f64>,
    /// Rounds.
    pub rounds: u32,
    /// Open-loop rate.
    pub rate: Option<f64>,
    /// Mix spec text.
    pub mix: Option<String>,
    /// Longest time one op may take on one module (warmup and all rounds).
    pub max_op_time: Option<Duration>,
}

fn bad(msg: impl Into<String>) -> CliError {
    CliError::usage(msg)
}

/// `--NAME MESSAGE` as a usage error.
fn flag(name: &str, r: std::result::Result<(), String>) -> Result<()> {
    r.map_err(|e| bad(format!("--{name} {e}")))
}

impl Settings {
    /// Resolve defaults, profile and flags.
    pub fn resolve(f: &Flags) -> Result<Self> {
        let (source, p) = match &f.profile {
            Some(name) => {
                let (s, p) = profiles::load(name)?;
                (Some(s), p)
            }
            None if f.ops.is_empty() && f.mix.is_none() && !f.key_label => {
                let (s, p) = profiles::load("quick")?;
                (Some(s), p)
            }
            None => (None, Profile::default()),
        };
        if let Some(i) = f.iterations {
            flag("iterations", check_iterations(i))?;
        }
        if let Some(d) = f.duration {
            flag("duration", check_seconds(d))?;
        }
        if let Some(d) = f.max_op_time {
            flag("max-op-time", check_seconds(d))?;
        }
        let max_op_time = f.max_op_time.or(p.max_op_time).map(Duration::from_secs_f64);
        let mode_from_flags = f.iterations.is_some() || f.duration.is_some();
        let mode = match (f.iterations, f.duration, p.iterations, p.duration) {
            (Some(i), _, _, _) => Mode::Iterations(i),
            (None, Some(d), _, _) => Mode::Duration(Duration::from_secs_f64(d)),
            (None, None, Some(i), _) => Mode::Iterations(i),
            (None, None, None, Some(d)) => Mode::Duration(Duration::from_secs_f64(d)),
            _ => Mode::Iterations(DEFAULT_ITERATIONS),
        };
        let threads = if !f.threads.is_empty() {
            f.threads.clone()
        } else {
            p.threads.clone().unwrap_or_else(|| vec![1])
        };
        flag("threads", check_threads(&threads))?;
        let processes = if !f.processes.is_empty() {
            f.processes.clone()
        } else {
            p.processes.clone().unwrap_or_else(|| vec![1])
        };
        flag("processes", check_processes(&processes))?;
        let data_sizes = match &f.data_sizes {
            Some(s) if s.trim().is_empty() => Some(DEFAULT_SIZES.to_vec()),
            Some(s) => Some(parse_sizes(s).map_err(bad)?),
            None => p.sizes().map_err(bad)?,
        };
        let percentiles = match &f.percentiles {
            Some(s) => parse_percentiles(s).map_err(bad)?,
            None => p
                .percentiles
                .clone()
                .unwrap_or_else(|| DEFAULT_PERCENTILES.to_vec()),
        };
        flag("percentiles", check_percentiles(&percentiles))?;
        let rate = f.rate.or(p.rate);
        if let Some(r) = rate {
            flag("rate", check_rate(r))?;
        }
        let rounds = f
            .rounds
            .or(p.rounds)
            .unwrap_or(if f.modules > 1 { 3 } else { 1 });
        flag("rounds", check_rounds(rounds))?;
        let ops = if !f.ops.is_empty() {
            f.ops.clone()
        } else {
            p.ops.clone()
        };
        let mix = f.mix.clone().or(if f.ops.is_empty() {
            p.mix.clone()
        } else {
            None
        });
        Ok(Settings {
            profile: source,
            ops,
            mode,
            mode_from_flags,
            warmup: f.warmup.or(p.warmup).unwrap_or(DEFAULT_WARMUP),
            warmup_from_flags: f.warmup.is_some(),
            threads,
            processes,
            data_sizes,
            percentiles,
            rounds,
            rate,
            mix,
            max_op_time,
            profile_data: p,
        })
    }

    /// Mode and warmup for `op` (profile overrides apply unless flags set them).
    pub fn plan_for(&self, op: &str) -> (Mode, u64) {
        let o = self.profile_data.override_for(op);
        let mode = match o {
            Some(o) if !self.mode_from_flags => match (o.iterations, o.duration) {
                (Some(i), _) => Mode::Iterations(i),
                (None, Some(d)) => Mode::Duration(Duration::from_secs_f64(d)),
                _ => self.mode,
            },
            _ => self.mode,
        };
        let warmup = match o.and_then(|o| o.warmup) {
            Some(w) if !self.warmup_from_flags => w,
            _ => self.warmup,
        };
        (mode, warmup)
    }

    /// The longest an op may take on one module (its rounds, warmup
    /// included), and whether `--max-op-time` (or the profile) set it. The
    /// default bounds a module that hangs: four times a duration-mode op's
    /// planned time (its warmup takes at most as long as its measurement)
    /// plus a minute, or ten minutes for an op of fixed iterations.
    pub fn op_time_limit(&self, mode: Mode) -> (Duration, bool) {
        match (self.max_op_time, mode) {
            (Some(d), _) => (d, true),
            (None, Mode::Duration(d)) => (d * 4 + Duration::from_secs(60), false),
            (None, Mode::Iterations(_)) => (DEFAULT_ITERATIONS_OP_TIME, false),
        }
    }

    /// Iterations for metadata (None in duration mode).
    pub fn iterations(&self) -> Option<u64> {
        match self.mode {
            Mode::Iterations(i) => Some(i),
            Mode::Duration(_) => None,
        }
    }

    /// Duration for metadata.
    pub fn duration_s(&self) -> Option<f64> {
        match self.mode {
            Mode::Duration(d) => Some(d.as_secs_f64()),
            Mode::Iterations(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::checks::parse_mix;
    use crate::suite::catalogue::catalogue;

    #[test]
    fn mixes_parse_with_aliases_and_ids() {
        let all = catalogue();
        let m = parse_mix("verify=80,sign=15,encrypt=5", &all).unwrap();
        assert_eq!(
            m.parts,
            vec![
                ("ed25519-verify".to_string(), 80),
                ("ed25519-sign".to_string(), 15),
                ("aes256-gcm-encrypt".to_string(), 5)
            ]
        );
        assert_eq!(
            parse_mix("p256-sign=1, sha256=3", &all)
                .unwrap()
                .parts
                .len(),
            2
        );
        assert!(parse_mix("verify", &all).is_err());
        assert!(parse_mix("verify=x", &all).is_err());
        assert!(parse_mix("verify=0", &all).is_err());
        assert!(parse_mix("nope=1", &all).is_err());
        assert!(parse_mix("sign=1,ed25519-sign=2", &all).is_err());
    }

    #[test]
    fn flags_override_profile_and_defaults_apply() {
        let f = Flags {
            profile: Some("quick".into()),
            iterations: Some(7),
            threads: vec![1, 2],
            modules: 2,
            ..Default::default()
        };
        let s = Settings::resolve(&f).unwrap();
        assert_eq!(s.mode, Mode::Iterations(7));
        assert_eq!(s.threads, vec![1, 2]);
        assert_eq!(s.processes, vec![1], "one process unless asked");
        assert_eq!(s.rounds, 3);
        let swept = Settings::resolve(&Flags {
            ops: vec!["sha256".into()],
            processes: vec![1, 2, 4, 8],
            ..Default::default()
        })
        .unwrap();
        assert_eq!(swept.processes, vec![1, 2, 4, 8]);
        // Flags beat profile overrides too.
        assert_eq!(s.plan_for("p256-keygen").0, Mode::Iterations(7));
        // But the profile's warmup override applies when --warmup is not given.
        assert_eq!(s.plan_for("p256-keygen").1, 2);
        let plain = Settings::resolve(&Flags {
            ops: vec!["sha256".into()],
            modules: 1,
            ..Default::default()
        })
        .unwrap();
        assert_eq!(plain.mode, Mode::Iterations(DEFAULT_ITERATIONS));
        assert_eq!(plain.rounds, 1);
        assert_eq!(plain.percentiles, DEFAULT_PERCENTILES.to_vec());
    }

    #[test]
    fn bad_flag_values_are_usage_errors() {
        let bad = |f: Flags| {
            Settings::resolve(&Flags {
                ops: vec!["sha256".into()],
                ..f
            })
            .unwrap_err()
            .code
        };
        assert_eq!(
            bad(Flags {
                iterations: Some(0),
                ..Default::default()
            }),
            2
        );
        assert_eq!(
            bad(Flags {
                duration: Some(-1.0),
                ..Default::default()
            }),
            2
        );
        assert_eq!(
            bad(Flags {
                threads: vec![0],
                ..Default::default()
            }),
            2
        );
        assert_eq!(
            bad(Flags {
                processes: vec![1, 0],
                ..Default::default()
            }),
            2
        );
        assert_eq!(
            bad(Flags {
                rate: Some(0.0),
                ..Default::default()
            }),
            2
        );
        assert_eq!(
            bad(Flags {
                data_sizes: Some("x".into()),
                ..Default::default()
            }),
            2
        );
        assert_eq!(
            bad(Flags {
                percentiles: Some("200".into()),
                ..Default::default()
            }),
            2
        );
        assert_eq!(
            bad(Flags {
                rounds: Some(0),
                ..Default::default()
            }),
            2
        );
        assert_eq!(
            bad(Flags {
                max_op_time: Some(0.0),
                ..Default::default()
            }),
            2
        );
    }

    #[test]
    fn data_sizes_flag_without_value_uses_default_sweep() {
        let s = Settings::resolve(&Flags {
            ops: vec!["sha256".into()],
            data_sizes: Some(String::new()),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(s.data_sizes, Some(DEFAULT_SIZES.to_vec()));
    }
}
