//! Results and reports for the unit tests of every folder (test builds only).

use super::result::{BenchResult, Metadata, Report, Status, ToolInfo};
use crate::sysinfo::{SystemInfo, TimerInfo};

pub fn result(module: &str, op: &str, ops: f64, rel_ci: f64) -> BenchResult {
    let mean = 1e6 / ops;
    BenchResult {
        op: op.into(),
        module: module.into(),
        mechanism: "CKM_EDDSA".into(),
        data_size: 32,
        threads: 1,
        iterations: 1000,
        errors: 0,
        status: Status::Ok,
        ops_per_sec: Some(ops),
        bytes_per_sec: None,
        mean_us: Some(mean),
        ci95_us: Some(mean * rel_ci),
        stddev_us: Some(mean * rel_ci * 10.0),
        min_us: Some(mean * 0.9),
        p50_us: Some(mean),
        p90_us: Some(mean * 1.1),
        p95_us: Some(mean * 1.2),
        p99_us: Some(mean * 1.5),
        p999_us: Some(mean * 2.0),
        max_us: Some(mean * 3.0),
        outliers_low: Some(0),
        outliers_high: Some(0),
        duration_s: 1.0,
        rounds: 1,
        mode: "closed".into(),
        rate_target: None,
        mix: None,
        key: "generated".into(),
        error_codes: Default::default(),
        reason: None,
        percentiles: Default::default(),
        histogram: None,
        samples_ns: None,
        round_ops_per_sec: None,
        peak_rss_kib: None,
        processes: 1,
        latency_hdr: None,
        windows_unix_ns: None,
        per_process: None,
        hosts: None,
        throughput_basis: None,
        notes: Default::default(),
    }
}

/// A `sha256` result on `size` bytes, with its throughput.
pub fn sized(ops: f64, size: u64) -> BenchResult {
    let mut r = result("m", "sha256", ops, 0.01);
    r.data_size = size;
    r.set_throughput(true);
    r
}

pub fn report(results: Vec<BenchResult>) -> Report {
    Report {
        schema: crate::report::result::SCHEMA.into(),
        metadata: Metadata {
            timestamp: "2025-01-01T00:00:00.000Z".into(),
            hsm_bench: ToolInfo::current(),
            command_line: vec!["hsm-bench".into()],
            profile: None,
            modules: vec![],
            iterations: Some(1000),
            duration_s: None,
            warmup: 10,
            threads: vec![1],
            processes: None,
            merged_from: None,
            data_sizes: None,
            rounds: 1,
            rate: None,
            mix: None,
            percentiles: vec![50.0, 99.0],
            keys: "shared".into(),
            reference: None,
            max_op_time_s: None,
            partial: false,
            interrupted: false,
            system: SystemInfo {
                os: "Linux".into(),
                os_version: "x".into(),
                kernel: "6".into(),
                arch: "x86_64".into(),
                cpu_model: "cpu".into(),
                cpu_cores_logical: 2,
                cpu_cores_physical: Some(2),
                memory_total_mb: 1024,
                cpu_governor: None,
                machine_class: None,
                hostname: None,
            },
            timer: TimerInfo {
                clock: "x".into(),
                resolution_ns: 20.0,
                overhead_ns: 20.0,
                clocksource: None,
            },
        },
        results,
        ratios: None,
    }
}

/// What a hostile module may put in its text fields: an OSC sequence that
/// retitles the window (ESC ] … BEL), a newline that forges a line, a CSI as
/// the C1 control U+009B, a bidi override and an invalid UTF-8 byte as
/// [`crate::safe_text::decode`] reads it.
pub const HOSTILE: &str = "\u{1b}]0;pwned\u{7}tok\nforged: line\u{9b}2J\u{202e}x\\xff";

/// [`HOSTILE`] as `escape` shows it.
pub const HOSTILE_SHOWN: &str = "\\e]0;pwned\\x07tok\\nforged: line\\u{9b}2J\\u{202e}x\\xff";

/// A module whose every text field is `text`.
pub fn module_meta(name: &str, text: &str) -> crate::token::info::ModuleMeta {
    use crate::token::info::{LibraryInfo, ModuleMeta, TokenSummary};
    ModuleMeta {
        name: name.into(),
        path: format!("/lib/{name}.so"),
        sha256: "00".repeat(32),
        library: LibraryInfo {
            description: text.into(),
            version: "1.0".into(),
            cryptoki_version: "3.0".into(),
            interface_3_2: false,
            manufacturer: text.into(),
        },
        slot: 1,
        token: TokenSummary {
            label: text.into(),
            manufacturer: text.into(),
            model: text.into(),
            serial: text.into(),
            firmware: "1.0".into(),
            hardware: "1.0".into(),
            utc_time: Some(text.into()),
        },
        temporary_token: false,
        failures: Vec::new(),
        env: Vec::new(),
    }
}
