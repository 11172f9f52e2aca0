//! Machine description for the report metadata, and the measured resolution and
//! cost of the clock used for timing.

use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::machine::MachineClass;

/// The machine the benchmark ran on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SystemInfo {
    /// OS name (e.g. "Debian GNU/Linux").
    pub os: String,
    /// OS version.
    pub os_version: String,
    /// Kernel version.
    pub kernel: String,
    /// CPU architecture.
    pub arch: String,
    /// CPU model.
    pub cpu_model: String,
    /// Logical cores.
    pub cpu_cores_logical: usize,
    /// Physical cores, if known.
    pub cpu_cores_physical: Option<usize>,
    /// Total memory, MiB.
    pub memory_total_mb: u64,
    /// CPU frequency governor (Linux), if readable.
    pub cpu_governor: Option<String>,
    /// The machine class baselines are keyed by (absent in files written by
    /// hsm-bench before it recorded one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_class: Option<MachineClass>,
    /// The host's name (`/proc/sys/kernel/hostname`): how `hsm-bench merge`
    /// names it. Absent in files written before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
}

/// The clock used for timing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimerInfo {
    /// Clock used.
    pub clock: String,
    /// Smallest observed non-zero difference between two readings, ns.
    pub resolution_ns: f64,
    /// Mean cost of one clock reading, ns (two per timed operation).
    pub overhead_ns: f64,
    /// Kernel clock source (Linux), if readable.
    pub clocksource: Option<String>,
}

fn read_trim(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// Collect the machine description.
pub fn system() -> SystemInfo {
    let sys = sysinfo::System::new().ok().map(|mut s| {
        s.refresh_memory();
        s.refresh_cpu_all();
        s
    });
    let cpu_model = sys
        .as_ref()
        .and_then(|s| s.cpus().first().map(|c| c.brand().trim().to_string()))
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".into());
    let logical = sys.as_ref().map(|s| s.cpus().len()).unwrap_or(0);
    SystemInfo {
        os: sysinfo::System::name().unwrap_or_else(|_| std::env::consts::OS.into()),
        os_version: sysinfo::System::os_version().unwrap_or_default(),
        kernel: sysinfo::System::kernel_version().unwrap_or_default(),
        arch: std::env::consts::ARCH.into(),
        cpu_model,
        cpu_cores_logical: if logical > 0 {
            logical
        } else {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
        },
        cpu_cores_physical: sysinfo::System::physical_core_count().ok(),
        memory_total_mb: sys.as_ref().map(|s| s.total_memory()).unwrap_or(0) / (1024 * 1024),
        cpu_governor: read_trim("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
        machine_class: Some(MachineClass::detect()),
        hostname: read_trim("/proc/sys/kernel/hostname")
            .or_else(|| sysinfo::System::host_name().ok()),
    }
}

/// Measure the clock: resolution (smallest non-zero step) and cost per reading.
pub fn timer() -> TimerInfo {
    let mut best = u128::MAX;
    for _ in 0..2000 {
        let a = Instant::now();
        let mut b = Instant::now();
        while b == a {
            b = Instant::now();
        }
        best = best.min((b - a).as_nanos());
    }
    const N: u32 = 200_000;
    let t = Instant::now();
    let mut last = t;
    for _ in 0..N {
        last = std::hint::black_box(Instant::now());
    }
    let overhead = (last - t).as_nanos() as f64 / N as f64;
    TimerInfo {
        clock: "std::time::Instant (CLOCK_MONOTONIC)".into(),
        resolution_ns: best as f64,
        overhead_ns: overhead,
        clocksource: read_trim("/sys/devices/system/clocksource/clocksource0/current_clocksource"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timer_is_fine_grained() {
        let t = timer();
        assert!(t.resolution_ns > 0.0);
        assert!(
            t.resolution_ns < 100_000.0,
            "resolution {} ns",
            t.resolution_ns
        );
        assert!(t.overhead_ns > 0.0 && t.overhead_ns < 100_000.0);
    }

    #[test]
    fn system_is_described() {
        let s = system();
        assert!(s.cpu_cores_logical >= 1);
        assert!(s.memory_total_mb > 0);
        assert!(!s.arch.is_empty());
    }
}
