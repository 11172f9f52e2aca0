//! Settings given with one `--module` (`PATH,token=LABEL,pin-env=VAR,...`)
//! and the environment variables for the common case (`HSM_BENCH_MODULE`,
//! `HSM_BENCH_TOKEN_LABEL`, `HSM_BENCH_PIN`), on a SoftHSM2 token.

mod common;

use common::*;

/// One cheap op on whatever token the command selects.
fn quick(c: &mut std::process::Command) -> std::process::Output {
    run(c.args(QUICK_SHA256).args(["--format", "json"]))
}

/// The label of the token a JSON run recorded for its only module.
fn recorded_label(o: &std::process::Output) -> String {
    let v: serde_json::Value = serde_json::from_str(&stdout(o)).expect("JSON run output");
    v["metadata"]["modules"][0]["token"]["label"]
        .as_str()
        .unwrap_or_else(|| panic!("no token label in {v}"))
        .to_string()
}

/// `run --quiet` of SoftHSM2 given as `--module PATH,token=LABEL,pin-env=VAR`
/// (`VAR` set to `pin` unless `None`), after `global` flags.
fn own_token(t: &SoftToken, var: &str, pin: Option<&str>, global: &[&str]) -> std::process::Output {
    let mut c = t.cmd();
    c.args(["run", "--quiet"])
        .args(global)
        .arg("--module")
        .arg(format!(
            "{},token={},pin-env={var}",
            softhsm().display(),
            t.label
        ));
    match pin {
        Some(p) => c.env(var, p),
        None => c.env_remove(var),
    };
    quick(&mut c)
}

#[test]
fn a_module_carries_its_own_token_label_and_pin_variable() {
    let t = SoftToken::new("per-module");
    let o = own_token(&t, "MY_TOKEN_PIN", Some(&t.pin), &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(recorded_label(&o), "per-module");

    // The module's own PIN variable wins over --pin.
    let o = own_token(&t, "MY_TOKEN_PIN", Some(&t.pin), &["--pin", "wrong-pin"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    // And a wrong one in it is used (and named as the module's login failure).
    let o = own_token(&t, "MY_TOKEN_PIN", Some("wrong-pin"), &["--pin", &t.pin]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("CKR_PIN_INCORRECT"), "{}", stderr(&o));

    // A variable that is not set is named, before any module is loaded.
    let o = own_token(&t, "NO_SUCH_PIN_VAR", None, &[]);
    assert_eq!(code(&o), 2);
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("pin-env=NO_SUCH_PIN_VAR"), "{err}");
}

#[test]
fn bad_module_options_are_one_line_errors() {
    let t = SoftToken::new("bad-options");
    for (suffix, want) in [
        (",tokne=x", "unknown option 'tokne'"),
        (",slot=one", "slot 'one' is not a number"),
        (",token=a,token=b", "option 'token' given twice"),
        (",slot=1,token=x", "not both"),
        (",pin-env=", "option 'pin-env' has no value"),
    ] {
        let mut c = t.cmd();
        c.args(["run", "--quiet", "--module"])
            .arg(format!("{}{suffix}", softhsm().display()));
        let o = quick(&mut c);
        assert_eq!(code(&o), 2, "{suffix}: {}", stdout(&o));
        let err = stderr(&o);
        assert_eq!(err.lines().count(), 1, "{suffix}: {err}");
        assert!(err.contains(want), "{suffix}: {err}");
    }
}

#[test]
fn environment_variables_select_module_token_and_pin() {
    let t = SoftToken::new("from-env");
    let mut c = t.cmd();
    c.args(["run", "--quiet"])
        .env("HSM_BENCH_MODULE", softhsm())
        .env("HSM_BENCH_TOKEN_LABEL", &t.label)
        .env("HSM_BENCH_PIN", &t.pin);
    let o = quick(&mut c);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(recorded_label(&o), "from-env");
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert!(
        v["metadata"]["modules"][0]["path"]
            .as_str()
            .is_some_and(|p| p.contains("softhsm")),
        "{v}"
    );
}
