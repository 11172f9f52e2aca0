//! SoftHSM2 behind the delay shim (docs/benchmarking.md, "Testing
//! hsm-bench itself: the delay shim"): a slowed module is measured slower
//! side by side, and the regression gate trips on a slowed call.

use super::*;

#[test]
fn a_slowed_module_is_measured_slower_side_by_side() {
    let t = SoftToken::new("slow-test");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    // The same SoftHSM2 instance, once directly and once through the shim, which
    // adds 300 µs to every C_Digest and nothing to C_GenerateRandom.
    let v = run_json(
        t.shim_run(true)
            .env("P11_DELAY_SHIM_DELAY", "C_Digest=300us")
            .args(["--ops", "sha256,random32", "--iterations", "60"]),
        &out,
    );
    assert_eq!(v["metadata"]["rounds"], 3);
    let fast = find(&v, "softhsm2", "sha256");
    let slow = find(&v, "p11_delay_shim", "sha256");
    assert_sane(fast);
    assert_sane(slow);
    let p50 = |r: &Value| r["p50_us"].as_f64().unwrap();
    let ops = |r: &Value| r["ops_per_sec"].as_f64().unwrap();
    assert!(p50(slow) >= 300.0, "shim p50 {}", p50(slow));
    assert!(
        p50(slow) - p50(fast) >= 290.0 && p50(slow) - p50(fast) < 2000.0,
        "{} vs {}",
        p50(slow),
        p50(fast)
    );
    assert!(
        ops(fast) > 3.0 * ops(slow),
        "{} vs {}",
        ops(fast),
        ops(slow)
    );
    assert!(
        ops(slow) < 1e6 / 300.0 * 1.01,
        "no more than 1/300µs ops/s: {}",
        ops(slow)
    );
    // The undelayed call is not slowed by 300 µs.
    assert!(p50(find(&v, "p11_delay_shim", "random32")) < 150.0);
    // The text report shows both modules side by side with the ratio column.
    let o = run(cmd().arg("report").arg(&out));
    let text = stdout(&o);
    assert!(text.contains("softhsm2/p11_delay_shim"), "{text}");
    let row = text.lines().find(|l| l.starts_with("sha256")).unwrap();
    let ratio: f64 = row
        .split_whitespace()
        .last()
        .unwrap()
        .trim_end_matches('x')
        .parse()
        .unwrap();
    assert!(ratio > 3.0, "{row}");
}

#[test]
fn the_regression_gate_trips_on_a_slowed_call() {
    let t = SoftToken::new("gate-test");
    let dir = tempfile::tempdir().unwrap();
    let bench = |delay: &str, name: &str| {
        let out = dir.path().join(name);
        let o = run(t
            .shim_run(false)
            .env("P11_DELAY_SHIM_DELAY", delay)
            .args([
                "--ops",
                "p256-sign,sha256",
                "--iterations",
                "60",
                "--format",
                "json",
                "-o",
            ])
            .arg(&out));
        assert_eq!(code(&o), 0);
        out
    };
    let base = bench("C_Sign=0us", "base.json");
    let slow = bench("C_Sign=2ms", "slow.json");
    let o = run(cmd()
        .arg("compare")
        .arg(&slow)
        .arg(&base)
        .arg("--fail-on-regression"));
    assert_eq!(code(&o), 1, "{}", stdout(&o));
    let text = stdout(&o);
    assert!(has_row(&text, &["p256-sign", "REGRESSED"]), "{text}");
    // The size of the regression matches the injected delay (~50 µs -> ~2 ms).
    let o = run(cmd()
        .arg("compare")
        .arg(&slow)
        .arg(&base)
        .args(["--format", "json"]));
    assert_eq!(code(&o), 0);
    let c: Value = serde_json::from_slice(&o.stdout).unwrap();
    let e = c["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["op"] == "p256-sign")
        .unwrap();
    assert!(e["delta_pct"].as_f64().unwrap() < -80.0, "{e}");
    let p95_now = e["p95_current_us"].as_f64().unwrap();
    assert!(p95_now >= 2000.0, "{e}");
}
