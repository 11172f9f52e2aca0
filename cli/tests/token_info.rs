//! Tokens that fill `CK_TOKEN_INFO` unlike ours (opencryptoki's `utcTime`,
//! NUL-padded labels, PIN flags), simulated with the delay shim's
//! `P11_DELAY_SHIM_TOKEN_INFO` over a SoftHSM2 token: hsm-bench lists and
//! selects them, and checks the PIN flags before it calls `C_Login` (which the
//! shim records in `P11_DELAY_SHIM_CALL_LOG`).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::*;

/// `CKF_USER_PIN_COUNT_LOW`, `_FINAL_TRY`, `_LOCKED`, `CKF_USER_PIN_INITIALIZED`,
/// `CKF_TOKEN_INITIALIZED` (PKCS#11 base spec, `CK_TOKEN_INFO` flags).
const COUNT_LOW: u64 = 0x1_0000;
const FINAL_TRY: u64 = 0x2_0000;
const LOCKED: u64 = 0x4_0000;
const USER_PIN_INITIALIZED: u64 = 0x8;
const TOKEN_INITIALIZED: u64 = 0x400;

/// opencryptoki's clock and a NUL-padded label.
const OCKI_STYLE: &str = "utc=13:06:00,label_nul=1";

/// `c` (a command through the shim) with `token_info` and a call log in `dir`.
fn through_shim(mut c: Command, token_info: &str, log: &Path) -> Command {
    c.env("P11_DELAY_SHIM_MODULE", softhsm())
        .env("P11_DELAY_SHIM_TOKEN_INFO", token_info)
        .env("P11_DELAY_SHIM_CALL_LOG", log);
    c
}

/// A SoftHSM2 token labelled `label`, a scratch directory, and a call log path
/// in it.
fn token(label: &str) -> (SoftToken, tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.log");
    (SoftToken::new(label), dir, log)
}

/// How many times the shim saw `C_Login`.
fn logins(log: &Path) -> usize {
    std::fs::read_to_string(log)
        .map(|s| s.lines().filter(|l| *l == "C_Login").count())
        .unwrap_or(0)
}

/// `run` of one cheap op on the token through the shim, logging in with `pin`.
fn bench(t: &SoftToken, token_info: &str, log: &Path, pin: &str, extra: &[&str]) -> Output {
    let mut c = through_shim(t.cmd(), token_info, log);
    c.args(["run", "--quiet", "--module"]).arg(shim());
    c.args(["--token-label", &t.label, "--pin", pin]);
    c.args(["--ops", "sha256", "--iterations", "5", "--warmup", "1"]);
    run(c.args(extra))
}

/// A failed run: exit 2, one line naming the module and containing `want`.
fn assert_refused(o: &Output, want: &str) {
    assert_eq!(code(o), 2, "{}", stdout(o));
    let err = stderr(o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("hsm-bench: error: module p11_delay_shim ("),
        "{err}"
    );
    assert!(err.contains(want), "{err}");
}

/// `hsm-bench list --format FORMAT` of the shim over `t` with `token_info`;
/// checks the exit code and returns stdout.
fn list(t: &SoftToken, token_info: &str, log: &Path, format: &str) -> String {
    let mut c = through_shim(t.cmd(), token_info, log);
    let o = run(c.args(["list", "--format", format, "--module"]).arg(shim()));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    stdout(&o)
}

/// [`list`] as JSON, parsed.
fn list_json(t: &SoftToken, token_info: &str, log: &Path) -> serde_json::Value {
    serde_json::from_str(&list(t, token_info, log, "json")).expect("list prints JSON")
}

#[test]
fn list_shows_an_opencryptoki_style_token_with_its_clean_label() {
    let (t, _dir, log) = token("ocki-list");
    let text = list(&t, OCKI_STYLE, &log, "text");
    assert!(text.contains("token 'ocki-list': "), "{text}");
    assert!(text.contains(", clock 13:06:00"), "{text}");
    assert!(!text.contains('\0'), "{text:?}");
    assert!(text.contains("CKM_SHA256 "), "{text}");
    let doc = list_json(&t, OCKI_STYLE, &log);
    let slot = token_slot(&doc, "ocki-list");
    assert_eq!(slot["token"]["utc_time"], "13:06:00", "{slot}");
    assert_eq!(slot["token"]["initialized"], true);
    assert!(slot["id"].as_u64().is_some());
    assert!(slot["mechanisms"].as_array().unwrap().len() > 10);
    assert_eq!(logins(&log), 0, "list does not log in");

    // PIN warnings are part of the token line.
    let spec = format!("flags_set={FINAL_TRY:#x}");
    let text = list(&t, &spec, &log, "text");
    assert!(
        has_row(&text, &["token 'ocki-list'", "CKF_USER_PIN_FINAL_TRY"]),
        "{text}"
    );
    let doc = list_json(&t, &spec, &log);
    let warnings = &token_slot(&doc, "ocki-list")["token"]["pin_warnings"];
    assert_eq!(warnings[0], "CKF_USER_PIN_FINAL_TRY (one try left)");

    // A failing C_GetTokenInfo is shown with its CKR name, not as "no token".
    let text = list(&t, "rv=0x30", &log, "text");
    assert!(
        text.contains("token: C_GetTokenInfo failed: CKR_DEVICE_ERROR"),
        "{text}"
    );
    assert!(!text.contains("no token\n"), "{text}");
    let doc = list_json(&t, "rv=0x30", &log);
    let slots = doc["modules"][0]["slots"].as_array().unwrap();
    assert!(!slots.is_empty());
    for s in slots {
        assert_eq!(s["token_error"], "CKR_DEVICE_ERROR", "{s}");
        assert!(s.get("token").is_none(), "{s}");
    }
}

/// The slot of `doc` whose token is labelled `label`.
fn token_slot<'a>(doc: &'a serde_json::Value, label: &str) -> &'a serde_json::Value {
    doc["modules"][0]["slots"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["token"]["label"] == label)
        .unwrap_or_else(|| panic!("no token '{label}' in {doc}"))
}

#[test]
fn an_opencryptoki_style_token_is_selected_by_label_and_recorded_clean() {
    let (t, dir, log) = token("ocki-run");
    let out = dir.path().join("r.json");
    let mut c = through_shim(t.shim_run(false), OCKI_STYLE, &log);
    let v = run_json(c.args(["--ops", "sha256", "--iterations", "5"]), &out);
    let token = &v["metadata"]["modules"][0]["token"];
    assert_eq!(token["label"], "ocki-run", "{token}");
    assert_eq!(token["utc_time"], "13:06:00", "{token}");
    assert!(token["serial"].as_str().unwrap().chars().all(|c| c != '\0'));
    assert_eq!(find(&v, "p11_delay_shim", "sha256")["status"], "ok");
    assert_eq!(logins(&log), 1);
    let text = stdout(&run(cmd().arg("report").arg(&out)));
    assert!(!text.contains('\0'), "{text:?}");
}

#[test]
fn pin_flags_are_checked_before_c_login() {
    let (t, dir, _) = token("pin-flags");
    let cases: &[(u64, u64, &str)] = &[
        (LOCKED, 0, "the user PIN of token 'pin-flags' is locked"),
        (FINAL_TRY, 0, "pass --allow-final-pin-try"),
        (
            0,
            USER_PIN_INITIALIZED,
            "the user PIN of token 'pin-flags' is not set",
        ),
        (0, TOKEN_INITIALIZED, "token 'pin-flags' is not initialised"),
    ];
    for (i, (set, clear, want)) in cases.iter().enumerate() {
        let log = dir.path().join(format!("calls-{i}.log"));
        let spec = format!("flags_set={set:#x},flags_clear={clear:#x}");
        let o = bench(&t, &spec, &log, &t.pin, &[]);
        assert_refused(&o, want);
        assert_eq!(logins(&log), 0, "{spec}: C_Login was called");
    }

    // The last try is spent only when asked to.
    let log = dir.path().join("final.log");
    let spec = format!("flags_set={FINAL_TRY:#x}");
    let o = bench(&t, &spec, &log, &t.pin, &["--allow-final-pin-try"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(logins(&log), 1);
}

#[test]
fn an_empty_pin_is_refused_without_c_login() {
    let (t, _dir, log) = token("empty-pin");
    let o = bench(&t, "", &log, "", &[]);
    assert_refused(&o, "empty PIN for token 'empty-pin'");
    assert_eq!(logins(&log), 0);
}

#[test]
fn a_wrong_pin_says_what_the_token_reports_afterwards() {
    let (t, _dir, log) = token("wrong-pin");
    let spec = format!("flags_set={COUNT_LOW:#x}");
    let o = bench(&t, &spec, &log, "not-the-pin", &[]);
    assert_refused(
        &o,
        "C_Login failed: CKR_PIN_INCORRECT; the token now reports CKF_USER_PIN_COUNT_LOW",
    );
    assert_eq!(logins(&log), 1);
}
