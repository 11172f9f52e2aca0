//! Key encapsulation end to end (docs/benchmarking.md, "Key encapsulation:
//! ML-KEM and the 3.2 interface"): the `mlkem*` ops on our module, whose
//! "PKCS 11" 3.2 interface has `C_EncapsulateKey` / `C_DecapsulateKey`; the
//! generic op's `encapsulate,decapsulate` on a key made beforehand; and a
//! module without the 3.2 interface (SoftHSM2 2.6), which reports the ops
//! unsupported with the reason. Tests of our module are skipped (with a
//! notice) when `libdalek_pkcs11.so` is not built, as in `dalek.rs`.

mod common;

use std::path::Path;

use common::*;
use serde_json::Value;

/// hsm-bench with our module and a private TMPDIR and token directory.
fn dcmd(module: &Path, tmp: &Path) -> std::process::Command {
    let mut c = cmd();
    c.env("HSM_BENCH_DALEK_MODULE", module)
        .env("TMPDIR", tmp)
        .env("DALEK_PKCS11_TOKEN_DIR", tmp)
        .env_remove("DALEK_PKCS11_CONFIG")
        .env("XDG_CONFIG_HOME", tmp);
    c
}

/// Every result measured and every call checked (a failed check counts as
/// an error under `CHECK_FAILED(…)`).
fn assert_all_checked(v: &Value) {
    for r in results(v) {
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(r["errors"], 0, "{r}");
        assert!(
            r["error_codes"].as_object().is_none_or(|m| m.is_empty()),
            "{r}"
        );
        assert!(r["iterations"].as_u64().unwrap() > 0, "{r}");
        assert_sane(r);
    }
}

/// `--ops 'mlkem*'` on a temporary token of our module: encapsulate,
/// decapsulate and key generation at the three sets, every result checked
/// (the two sides' secrets equal, a corrupted ciphertext giving another),
/// and the module's 3.2 interface recorded.
#[test]
fn our_module_runs_the_mlkem_ops_with_every_result_checked() {
    let Some(m) = dalek() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r.json");
    let v = run_json(
        dcmd(&m, tmp.path()).args([
            "run",
            "--quiet",
            "--module",
            "dalek",
            "--ops",
            "mlkem*",
            "--duration",
            "0.2",
        ]),
        &out,
    );
    assert_eq!(
        v["metadata"]["modules"][0]["library"]["interface_3_2"],
        true
    );
    let ids: Vec<&str> = results(&v)
        .iter()
        .map(|r| r["op"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "mlkem512-encaps",
            "mlkem512-decaps",
            "mlkem768-encaps",
            "mlkem768-decaps",
            "mlkem1024-encaps",
            "mlkem1024-decaps",
            "mlkem512-keygen",
            "mlkem768-keygen",
            "mlkem1024-keygen",
        ]
    );
    assert_all_checked(&v);
    let encaps = find(&v, "dalek", "mlkem768-encaps");
    assert_eq!(encaps["mechanism"], "CKM_ML_KEM", "{encaps}");
    // Our token makes readable keys: the secrets are compared by value,
    // which needs no note.
    assert!(
        encaps["warnings"].as_array().is_none_or(|w| w.is_empty()),
        "{encaps}"
    );
    assert!(token_dirs(tmp.path()).is_empty(), "temporary token removed");
    // `list` names the interface too.
    let o = run(dcmd(&m, tmp.path()).args(["list", "--module", "dalek"]));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stdout(&o).contains(", interface \"PKCS 11\" 3.2)"),
        "{}",
        stdout(&o)
    );
}

/// `--mechanism CKM_ML_KEM --function encapsulate,decapsulate --key-label
/// L` on an ML-KEM-768 pair made beforehand (`keys create`) on a named
/// token: the generic ops, every result checked.
#[test]
fn the_generic_op_encapsulates_with_an_existing_key() {
    let Some(m) = dalek() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let pin = "4711-kem";
    let tool = |args: &[&str]| {
        let o = std::process::Command::new("pkcs11-tool")
            .env("DALEK_PKCS11_TOKEN_DIR", tmp.path())
            .env_remove("DALEK_PKCS11_CONFIG")
            .env("XDG_CONFIG_HOME", tmp.path())
            .arg("--module")
            .arg(&m)
            .args(args)
            .output()
            .expect("pkcs11-tool (opensc) runs");
        assert!(o.status.success(), "pkcs11-tool {args:?}: {}", stderr(&o));
    };
    tool(&[
        "--init-token",
        "--slot-index",
        "0",
        "--label",
        "kem",
        "--so-pin",
        "87654321",
    ]);
    tool(&[
        "--token-label",
        "kem",
        "--login",
        "--login-type",
        "so",
        "--so-pin",
        "87654321",
        "--init-pin",
        "--pin",
        pin,
    ]);
    let hsm = |args: &[&str]| {
        let mut c = dcmd(&m, tmp.path());
        c.args(args)
            .args(["--module", "dalek", "--token-label", "kem", "--pin", pin]);
        c
    };
    let o = run(&mut hsm(&[
        "keys", "create", "--type", "mlkem768", "--label", "kem768",
    ]));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = tmp.path().join("r.json");
    let v = run_json(
        &mut hsm(&[
            "run",
            "--quiet",
            "--mechanism",
            "CKM_ML_KEM",
            "--function",
            "encapsulate,decapsulate",
            "--key-label",
            "kem768",
            "--iterations",
            "40",
            "--warmup",
            "2",
        ]),
        &out,
    );
    let ids: Vec<&str> = results(&v)
        .iter()
        .map(|r| r["op"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["mech-ml-kem-encapsulate", "mech-ml-kem-decapsulate"]);
    assert_all_checked(&v);
    for r in results(&v) {
        assert_eq!(r["iterations"], 40, "{r}");
    }
    // Without --mechanism the key runs the catalogue's ops of its set.
    let v = run_json(
        &mut hsm(&[
            "run",
            "--quiet",
            "--key-label",
            "kem768",
            "--iterations",
            "10",
        ]),
        &out,
    );
    let ids: Vec<&str> = results(&v)
        .iter()
        .map(|r| r["op"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["mlkem768-encaps", "mlkem768-decaps"]);
    assert_all_checked(&v);
    // With token objects (`--key-store token`) every key a call makes is
    // destroyed: the token keeps the pair only.
    let v = run_json(
        &mut hsm(&[
            "run",
            "--quiet",
            "--key-label",
            "kem768",
            "--key-store",
            "token",
            "--iterations",
            "10",
        ]),
        &out,
    );
    assert_all_checked(&v);
    let o = run(&mut hsm(&["keys", "list", "--format", "json"]));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let list: Vec<Value> = serde_json::from_str(&stdout(&o)).unwrap();
    let labels: Vec<&str> = list.iter().map(|k| k["label"].as_str().unwrap()).collect();
    assert_eq!(labels, ["kem768", "kem768"], "{list:?}");
}

/// SoftHSM2 2.6 has no `C_GetInterface`: no 3.2 interface, so the ML-KEM
/// ops are unsupported with a reason saying so (the run goes on), and
/// `list` says it.
#[test]
fn a_module_without_the_3_2_interface_reports_kem_ops_unsupported() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r.json");
    let v = run_json(
        cmd().env("TMPDIR", tmp.path()).args([
            "run",
            "--quiet",
            "--module",
            "softhsm",
            "--ops",
            "mlkem768-encaps,mlkem768-decaps,sha256",
            "--iterations",
            "5",
        ]),
        &out,
    );
    assert_eq!(
        v["metadata"]["modules"][0]["library"]["interface_3_2"],
        false
    );
    for op in ["mlkem768-encaps", "mlkem768-decaps"] {
        let r = find(&v, "softhsm", op);
        assert_eq!(r["status"], "unsupported", "{r}");
        let why = r["reason"].as_str().unwrap();
        assert!(why.contains("no PKCS#11 3.2 interface"), "{why}");
    }
    assert_eq!(find(&v, "softhsm", "sha256")["status"], "ok");
    let o = run(cmd()
        .env("TMPDIR", tmp.path())
        .args(["list", "--module", "softhsm"]));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains(", no 3.2 interface)"), "{}", stdout(&o));
}
