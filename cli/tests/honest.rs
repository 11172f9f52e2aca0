//! Honest results on real tokens: warmup errors, time bounds, exit codes,
//! checks before the benchmark starts, Ctrl-C and closed stdout, missed rates.
//! SoftHSM2 tokens, slowed down or made to fail by the delay shim.

mod common;

use std::time::{Duration, Instant};

use common::*;

#[test]
fn warmup_errors_are_counted_and_an_op_failing_them_all_is_not_measured() {
    let t = SoftToken::new("warm-fail");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let o = run(t
        .shim_run(false)
        .env("P11_DELAY_SHIM_FAIL", "C_GenerateRandom=0x30")
        .args(["--ops", "random32,sha256", "--iterations", "20"])
        .args(["--warmup", "5", "--format", "json", "-o"])
        .arg(&out));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v = json(&out);
    assert_valid(&v);
    let r = find(&v, "p11_delay_shim", "random32");
    assert_eq!(r["status"], "error", "{r}");
    assert_eq!(r["iterations"], 0, "{r}");
    assert_eq!(r["warmup_errors"], 5, "{r}");
    assert_eq!(r["warmup_first_error"], "CKR_DEVICE_ERROR", "{r}");
    let reason = r["reason"].as_str().unwrap();
    assert!(
        reason.contains("warmup failed") && reason.contains("CKR_DEVICE_ERROR"),
        "{reason}"
    );
    let ok = find(&v, "p11_delay_shim", "sha256");
    assert_eq!(ok["status"], "ok");
    assert!(ok.get("warmup_errors").is_none(), "{ok}");
    // The text table names the cause too.
    let text = stdout(&run(cmd().arg("report").arg(&out)));
    assert!(
        has_row(&text, &["random32", "warmup failed", "CKR_DEVICE_ERROR"]),
        "{text}"
    );
}

#[test]
fn a_slow_op_is_cut_short_by_max_op_time_with_a_partial_result() {
    let t = SoftToken::new("slow-cap");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    // 200 ms per C_Sign: the default warmup (10) alone would take 2 s.
    let started = Instant::now();
    let o = run(t
        .shim_run(false)
        .env("P11_DELAY_SHIM_DELAY", "C_Sign=200ms")
        .args(["--ops", "p256-sign", "--duration", "0.3", "--rounds", "3"])
        .args(["--max-op-time", "1", "--format", "json", "-o"])
        .arg(&out));
    let took = started.elapsed();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    // Preparing signs once or twice too; warmup and rounds stay within the cap.
    assert!(took < Duration::from_secs(3), "took {took:?}");
    let v = json(&out);
    assert_valid(&v);
    assert_eq!(v["metadata"]["max_op_time_s"], 1.0);
    let r = find(&v, "p11_delay_shim", "p256-sign");
    assert_eq!(r["cut_short"], true, "{r}");
    let warning = r["warnings"][0].as_str().unwrap();
    assert!(warning.contains("cut short by --max-op-time"), "{warning}");
    let n = r["iterations"].as_u64().unwrap();
    assert!((1..=5).contains(&n), "{r}");
    // Too few samples for fences: no outliers flagged.
    assert_eq!(r["outliers_high"], 0, "{r}");
    let text = stdout(&run(cmd().arg("report").arg(&out)));
    assert!(
        has_row(&text, &["warning: p256-sign", "cut short"]),
        "{text}"
    );
}
