//! Honest results on real tokens: warmup errors, time bounds, exit codes,
//! checks before the benchmark starts, Ctrl-C and closed stdout, missed rates.
//! SoftHSM2 tokens, slowed down or made to fail by the delay shim.

mod common;

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
