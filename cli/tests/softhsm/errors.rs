//! Errors as the user sees them (docs/benchmarking.md, "Comparing runs and
//! exit codes"): a wrong PIN and usage errors give one line and exit 2, an
//! unsupported op is reported, not fatal.

use super::*;

#[test]
fn wrong_pin_gives_one_line_and_exit_2() {
    let t = SoftToken::new("pin-test");
    let o = run(t.cmd().args(["run", "--module"]).arg(softhsm()).args([
        "--token-label",
        "pin-test",
        "--pin",
        "999999",
        "--ops",
        "sha256",
        "--iterations",
        "5",
    ]));
    assert_eq!(code(&o), 2);
    // SoftHSM2 sets CKF_USER_PIN_COUNT_LOW after a wrong PIN; the error says so.
    let err = stderr(&o);
    assert_eq!(
        err.trim_end(),
        format!(
            "hsm-bench: error: module softhsm2 ({}): C_Login failed: CKR_PIN_INCORRECT; \
             the token now reports CKF_USER_PIN_COUNT_LOW (few tries left)",
            softhsm().display()
        )
    );
    assert!(!err.contains("999999") && !stdout(&o).contains("999999"));
    // The PIN from the environment works, and is not recorded anywhere.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let o = run(t
        .cmd()
        .env("HSM_BENCH_PIN", &t.pin)
        .args(["run", "--quiet", "--module"])
        .arg(softhsm())
        .args([
            "--token-label",
            "pin-test",
            "--ops",
            "sha256",
            "--iterations",
            "5",
            "--format",
            "json",
            "-o",
        ])
        .arg(&out));
    assert_eq!(code(&o), 0);
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(!text.contains(&t.pin));
    // Nor when it is given on the command line.
    let out2 = dir.path().join("r2.json");
    let o = run(t
        .run_on(&[&softhsm()])
        .args(["--ops", "sha256", "--iterations", "5"])
        .args(["--format", "json", "-o"])
        .arg(&out2));
    assert_eq!(code(&o), 0);
    let text2 = std::fs::read_to_string(&out2).unwrap();
    assert!(!text2.contains(&t.pin), "PIN recorded");
    assert!(!stdout(&o).contains(&t.pin) && !stderr(&o).contains(&t.pin));
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["metadata"]["modules"][0]["temporary_token"], false);
    assert_eq!(v["metadata"]["modules"][0]["token"]["label"], "pin-test");
}

#[test]
fn usage_errors_are_one_line_with_exit_2() {
    let cases: Vec<Vec<String>> = vec![
        vec!["run".into(), "--iterations".into(), "abc".into()],
        vec![
            "run".into(),
            "--module".into(),
            "softhsm".into(),
            "--ops".into(),
            "no-such-op".into(),
        ],
        vec![
            "run".into(),
            "--module".into(),
            "softhsm".into(),
            "--ops".into(),
            "sha256".into(),
            "--data-sizes".into(),
            "0".into(),
        ],
        vec!["run".into(), "--module".into(), "/no/such/module.so".into()],
        vec![
            "run".into(),
            "--module".into(),
            "softhsm".into(),
            "--mix".into(),
            "verify=x".into(),
        ],
        // A module given by path needs a token and a PIN: never initialise an arbitrary token.
        vec![
            "run".into(),
            "--module".into(),
            softhsm().display().to_string(),
            "--ops".into(),
            "sha256".into(),
        ],
        vec![
            "compare".into(),
            "/no/such.json".into(),
            "/no/such2.json".into(),
        ],
        vec![
            "run".into(),
            "--profile".into(),
            "no-such-profile".into(),
            "--module".into(),
            "softhsm".into(),
        ],
    ];
    for args in cases {
        let o = run(cmd().args(&args));
        assert_eq!(code(&o), 2, "{args:?}");
        let err = stderr(&o);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("hsm-bench: error: "), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

#[test]
fn unsupported_op_is_reported_not_fatal() {
    let t = SoftToken::new("hide-test");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let v = run_json(
        t.shim_run(false)
            .env("P11_DELAY_SHIM_HIDE", "CKM_EDDSA,CKM_AES_CMAC")
            .args([
                "--ops",
                "ed25519-sign,aes256-cmac,sha256",
                "--iterations",
                "20",
            ]),
        &out,
    );
    for op in ["ed25519-sign", "aes256-cmac"] {
        let r = find(&v, "p11_delay_shim", op);
        assert_eq!(r["status"], "unsupported", "{r}");
        assert!(
            r["reason"]
                .as_str()
                .unwrap()
                .contains("not in the token's mechanism list")
        );
        assert!(r["ops_per_sec"].is_null());
    }
    assert_eq!(find(&v, "p11_delay_shim", "sha256")["status"], "ok");
    // The text table says so too.
    let o = run(t
        .shim_run(false)
        .env("P11_DELAY_SHIM_HIDE", "CKM_EDDSA")
        .args(["--ops", "ed25519-sign,sha256", "--iterations", "10"]));
    assert_eq!(code(&o), 0);
    assert!(
        stdout(&o)
            .lines()
            .any(|l| l.starts_with("ed25519-sign") && l.contains("unsupported"))
    );
}
