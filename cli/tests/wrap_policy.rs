//! The key-wrap ops on a token with role separation: our module under
//! `key_policy = strict` (`DALEK_PKCS11_KEY_POLICY=strict` in hsm-bench's
//! environment) refuses the usual wrapping keys and readable unwrapped keys;
//! hsm-bench then makes a role-separated wrapping key and sensitive
//! unwrapped keys, checks every result all the same, and says so. Under the
//! default policy nothing of that happens (the path the committed baselines
//! were measured on). Skipped (with a notice) when `libdalek_pkcs11.so` is
//! not built, like `dalek.rs`.

mod common;

use std::path::Path;
use std::process::Command;

use common::*;
use serde_json::Value;

/// The key-wrap ops.
const WRAP_OPS: &[&str] = &[
    "aes256-key-wrap",
    "aes256-key-unwrap",
    "aes256-key-wrap-pad",
    "aes256-key-unwrap-pad",
    "rsa2048-oaep-wrap",
    "rsa2048-oaep-unwrap",
];

/// hsm-bench on our module (`module`: the module itself, or the delay shim
/// in front of it) under `policy`, `ops`, 20 iterations.
fn wrap_run(module: &Path, tmp: &Path, policy: &str, ops: &str, warmup: &str) -> Command {
    let mut c = cmd();
    c.env("HSM_BENCH_DALEK_MODULE", module)
        .env("DALEK_PKCS11_KEY_POLICY", policy)
        .env("TMPDIR", tmp)
        .args(["run", "--quiet", "--module", "dalek"])
        .args(["--ops", ops])
        .args(["--iterations", "20", "--warmup", warmup]);
    c
}

fn warnings(r: &Value) -> Vec<String> {
    r["warnings"]
        .as_array()
        .map(|a| a.iter().map(|w| w.as_str().unwrap().to_string()).collect())
        .unwrap_or_default()
}

/// Every wrap op measured: status ok, every call made and checked (a failed
/// check is an error).
fn assert_all_measured(v: &Value, policy: &str) {
    assert_eq!(results(v).len(), WRAP_OPS.len(), "{policy}");
    for op in WRAP_OPS {
        let r = find(v, "dalek", op);
        assert_eq!(r["status"], "ok", "{op} under {policy}: {r}");
        assert_eq!(r["iterations"], 20, "{op} under {policy}");
        assert_eq!(r["errors"], 0, "{op} under {policy}");
        assert!(r["reason"].is_null(), "{op} under {policy}: {r}");
        assert_sane(r);
    }
}

#[test]
fn strict_policy_wrap_ops_are_measured_with_role_separated_keys() {
    let Some(m) = dalek() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let v = run_json(
        &mut wrap_run(&m, tmp.path(), "strict", &WRAP_OPS.join(","), "2"),
        &tmp.path().join("r.json"),
    );
    assert_all_measured(&v, "strict");
    let keys = v["metadata"]["keys"].as_str().unwrap();
    assert!(
        keys.contains("role-separated wrapping keys")
            && keys.contains("allowed to wrap and unwrap only")
            && keys.contains("aes256-wrap on dalek"),
        "{keys}"
    );
    for op in WRAP_OPS {
        let w = warnings(find(&v, "dalek", op));
        assert!(
            w.iter()
                .any(|w| w.starts_with("unwrapped keys made sensitive")
                    && w.contains("CKR_TEMPLATE_INCONSISTENT")
                    && w.contains("checked by what they encrypt")),
            "{op}: {w:?}"
        );
        if op.starts_with("aes") {
            assert!(
                w.iter()
                    .any(|w| w.starts_with("role-separated wrapping key aes256-wrap")
                        && w.contains("refused the usual one: CKR_TEMPLATE_INCONSISTENT")),
                "{op}: {w:?}"
            );
        }
    }
    assert!(token_dirs(tmp.path()).is_empty(), "temporary token left");
}

#[test]
fn default_policy_wrap_ops_keep_the_usual_keys() {
    let Some(m) = dalek() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let v = run_json(
        &mut wrap_run(&m, tmp.path(), "default", &WRAP_OPS.join(","), "2"),
        &tmp.path().join("r.json"),
    );
    assert_all_measured(&v, "default");
    let keys = v["metadata"]["keys"].as_str().unwrap();
    assert_eq!(
        keys, "shared: one set of session-object keys used by every thread",
        "the keys line of the usual path"
    );
    for op in WRAP_OPS {
        let w = warnings(find(&v, "dalek", op));
        assert!(w.is_empty(), "{op}: {w:?}");
    }
}

/// The results of `c` (a failed op may make the exit code non-zero; the
/// result file is written either way).
fn results_of(c: &mut Command, tmp: &Path) -> Value {
    let path = tmp.join("r.json");
    let o = run(c.args(["--format", "json", "-o"]).arg(&path));
    assert!(path.is_file(), "exit {}: {}", code(&o), stderr(&o));
    let v = json(&path);
    assert_valid(&v);
    v
}

/// Under `strict` the unwrapped keys are checked by what they encrypt: with
/// every `C_Encrypt` output flipped by the delay shim, each wrap op fails
/// that check while preparing; with only the preparation's left alone, the
/// sampled checks of the timed calls catch it (unwrap ops, RSA-OAEP wrap; AES
/// key wrap compares each output with the checked one, as under `default`,
/// caught here with `C_WrapKey` flipped). Under `default` a flipped
/// `C_Encrypt` touches none of them (values are compared, nothing is
/// encrypted).
#[test]
fn strict_policy_unwrapped_keys_are_checked_by_what_they_encrypt() {
    let Some(m) = dalek() else { return };
    let shim = shim();
    let flipped = |policy: &str, func: &str, after: u32, ops: &str| {
        let tmp = tempfile::tempdir().unwrap();
        // The shim counts outputs per process: with `after`, one op per run.
        let mut c = wrap_run(&shim, tmp.path(), policy, ops, "0");
        c.env("P11_DELAY_SHIM_MODULE", &m)
            .env("P11_DELAY_SHIM_FLIP", func)
            .env("P11_DELAY_SHIM_FLIP_AFTER", after.to_string());
        results_of(&mut c, tmp.path())
    };
    let all = WRAP_OPS.join(",");

    let v = flipped("default", "C_Encrypt", 0, &all);
    for op in WRAP_OPS {
        assert_eq!(find(&v, "dalek", op)["status"], "ok", "{op} under default");
    }

    let v = flipped("strict", "C_Encrypt", 0, &all);
    for op in WRAP_OPS {
        let r = find(&v, "dalek", op);
        assert_eq!(
            r["status"], "error",
            "{op} passed with flipped C_Encrypt: {r}"
        );
        let why = r["reason"].as_str().unwrap_or_default();
        assert!(
            why.contains("CHECK_FAILED(prepared wrapped key unwraps to another key"),
            "{op}: {why}"
        );
    }

    for (func, op, check) in [
        (
            "C_Encrypt",
            "aes256-key-unwrap",
            "unwrapped key unwraps to another key",
        ),
        (
            "C_Encrypt",
            "aes256-key-unwrap-pad",
            "unwrapped key unwraps to another key",
        ),
        (
            "C_Encrypt",
            "rsa2048-oaep-unwrap",
            "unwrapped key unwraps to another key",
        ),
        (
            "C_Encrypt",
            "rsa2048-oaep-wrap",
            "sampled wrapped key unwraps to another key",
        ),
        (
            "C_WrapKey",
            "aes256-key-wrap",
            "wrapped key differs from the checked one",
        ),
        (
            "C_WrapKey",
            "aes256-key-wrap-pad",
            "wrapped key differs from the checked one",
        ),
    ] {
        let v = flipped("strict", func, 1, op);
        let r = find(&v, "dalek", op);
        assert_eq!(r["status"], "error", "{op} ({func} flipped): {r}");
        assert!(r["reason"].is_null(), "{op} failed while preparing: {r}");
        let errors = r["error_codes"].as_object().unwrap();
        assert!(
            !errors.is_empty()
                && errors
                    .keys()
                    .all(|k| k.starts_with("CHECK_FAILED(") && k.contains(check)),
            "{op}: expected the check '{check}', got {errors:?}"
        );
        assert!(r["errors"].as_u64().unwrap() >= 7, "{op}: {r}");
    }
}
