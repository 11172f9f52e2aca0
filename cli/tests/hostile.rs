//! hsm-bench survives any module (issue 26): SoftHSM2 behind the hostile shim
//! (`cli/hostile-shim`), which reports absurd counts and lengths, claims more
//! output than a buffer holds, and hands out NULL function lists and entries.
//! Every case ends with an exit code (never a signal), no panic text, and
//! either one line naming the module and the call or, for a misbehaving
//! operation, that op's error with the other ops and modules kept in the
//! JSON (`docs/benchmarking.md`, "When a module misbehaves").

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::hostile::*;
use common::*;
use serde_json::Value;

/// 2^40: the count or length a broken module reports.
const HUGE: &str = "0x10000000000";

/// `c` with `--format json -o DIR/r.json`: its output (checked for exit code
/// 0 and no panic text) and the result file (validated).
fn run_ok(c: &mut Command, dir: &Path) -> Value {
    let path = dir.join("r.json");
    let o = run(c.args(["--format", "json", "-o"]).arg(&path));
    assert_no_panic(&o, 0);
    assert!(path.is_file(), "no JSON written: {}", stderr(&o));
    let v = json(&path);
    assert_valid(&v);
    v
}

/// `hsm-bench run --quiet` through the shim alone, misbehaving as `spec`
/// says, on `ops` with 5 iterations each.
fn shim_run(t: &SoftToken, spec: &str, ops: &str) -> Command {
    let mut c = t.hostile_run(spec, &[&hostile_shim()]);
    c.args(["--ops", ops, "--iterations", "5"]);
    c
}

/// Asserts that `o` ended with exit code 2 and one error line naming the
/// shim's module and holding each of `parts`.
fn assert_shim_error(o: &Output, parts: &[&str]) {
    let module = format!("module {HOSTILE}");
    assert_one_line_error(o, 2, &[&[module.as_str()], parts].concat());
}

/// Everything a result says about its failure.
fn failure_text(r: &Value) -> String {
    format!("{} {}", r["reason"], r["error_codes"])
}

/// Asserts that the shim's `op` failed, with a reason holding `parts`.
fn assert_op_failed(v: &Value, op: &str, parts: &[&str]) {
    let r = find(v, HOSTILE, op);
    assert_eq!(r["status"], "error", "{op}: {r}");
    let text = failure_text(r);
    for p in parts {
        assert!(text.contains(p), "{op}: '{p}' not in {text}");
    }
}

#[test]
fn list_refuses_a_slot_count_of_2_40_naming_the_call() {
    let t = SoftToken::new("slots-list");
    let o = t.through_hostile(&format!("slot_count={HUGE}"), &["list"]);
    assert_shim_error(&o, &["C_GetSlotList reports 1099511627776 slots", "4096"]);
}

#[test]
fn run_refuses_a_slot_count_of_2_40_naming_the_call() {
    let t = SoftToken::new("slots-run");
    let o = run(&mut shim_run(&t, &format!("slot_count={HUGE}"), "sha256"));
    assert_shim_error(&o, &["C_GetSlotList reports 1099511627776"]);
}

#[test]
fn list_shows_a_mechanism_count_of_2_40_as_the_slots_error() {
    let t = SoftToken::new("mechs-list");
    let spec = format!("mech_count={HUGE}");
    let o = t.through_hostile(&spec, &["list"]);
    assert_no_panic(&o, 0);
    let text = stdout(&o);
    assert!(
        text.contains("C_GetMechanismList reports 1099511627776 mechanisms"),
        "{text}"
    );
    let o = t.through_hostile(&spec, &["list", "--format", "json"]);
    assert_no_panic(&o, 0);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let slot = v["modules"][0]["slots"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["token"]["label"] == "mechs-list")
        .expect("the token's slot")
        .clone();
    let e = slot["mechanisms_error"].as_str().unwrap_or_default();
    assert!(
        e.contains("C_GetMechanismList") && e.contains("65536"),
        "{slot}"
    );
}

#[test]
fn run_refuses_a_mechanism_count_of_2_40_naming_the_call() {
    let t = SoftToken::new("mechs-run");
    let o = run(&mut shim_run(&t, &format!("mech_count={HUGE}"), "sha256"));
    assert_shim_error(&o, &["C_GetMechanismList reports 1099511627776 mechanisms"]);
}

#[test]
fn an_attribute_length_of_2_40_fails_the_op_that_reads_it() {
    let t = SoftToken::new("attr-len");
    let tmp = tempfile::tempdir().unwrap();
    let v = run_ok(
        &mut shim_run(
            &t,
            &format!("attr_len={HUGE}"),
            "p256-ecdh-derive,session-info",
        ),
        tmp.path(),
    );
    assert_op_failed(
        &v,
        "p256-ecdh-derive",
        &["C_GetAttributeValue reports a length over", "1048576 bytes"],
    );
    assert_eq!(find(&v, HOSTILE, "session-info")["status"], "ok");
}

/// (misbehaviour, op that makes the call, the call, an op that does not).
const OVERLONG: &[(&str, &str, &str, &str)] = &[
    ("overlong=C_Digest", "sha256", "C_Digest", "session-info"),
    ("overlong=C_Sign", "hmac-sha256", "C_Sign", "sha256"),
    ("overlong=C_Sign", "p256-sign", "C_Sign", "sha256"),
    (
        "overlong=C_Encrypt",
        "aes256-cbc-encrypt",
        "C_Encrypt",
        "sha256",
    ),
    (
        "overlong=C_Decrypt",
        "aes256-cbc-decrypt",
        "C_Decrypt",
        "sha256",
    ),
    (
        "overlong=C_WrapKey",
        "aes256-key-wrap",
        "C_WrapKey",
        "sha256",
    ),
];

#[test]
fn an_output_longer_than_its_buffer_fails_that_op_only() {
    let t = SoftToken::new("overlong");
    for &(spec, op, call, other) in OVERLONG {
        let tmp = tempfile::tempdir().unwrap();
        let v = run_ok(
            &mut shim_run(&t, spec, &format!("{op},{other}")),
            tmp.path(),
        );
        assert_op_failed(
            &v,
            op,
            &[
                &format!("module {HOSTILE}: {call} returned CKR_OK claiming "),
                "bytes of output, but the buffer holds ",
            ],
        );
        assert_eq!(find(&v, HOSTILE, other)["status"], "ok", "{spec}");
    }
}

#[test]
fn an_overlong_digest_leaves_the_other_module_measured() {
    // SoftHSM2 itself first, then the shim over the same token: the shim's
    // digest fails, SoftHSM2's is measured, the JSON has both.
    let t = SoftToken::new("overlong-two");
    let tmp = tempfile::tempdir().unwrap();
    let v = run_ok(
        t.hostile_run("overlong=C_Digest", &[&softhsm(), &hostile_shim()])
            .args(["--ops", "sha256,random32", "--iterations", "5"]),
        tmp.path(),
    );
    assert_op_failed(
        &v,
        "sha256",
        &["claiming 4224 bytes of output, but the buffer holds 128"],
    );
    assert_eq!(find(&v, HOSTILE, "random32")["status"], "ok");
    for op in ["sha256", "random32"] {
        let r = find(&v, "softhsm2", op);
        assert_eq!(r["status"], "ok", "{r}");
        assert_sane(r);
    }
}

#[test]
fn more_objects_found_than_asked_for_fail_the_find_op() {
    let t = SoftToken::new("objects");
    let tmp = tempfile::tempdir().unwrap();
    let v = run_ok(
        &mut shim_run(&t, "object_count=1000", "find-object,sha256"),
        tmp.path(),
    );
    assert_op_failed(
        &v,
        "find-object",
        &[
            &format!("module {HOSTILE}: C_FindObjects returned CKR_OK claiming 1000 objects"),
            "but the buffer holds 2",
        ],
    );
    assert_eq!(find(&v, HOSTILE, "sha256")["status"], "ok");
}

#[test]
fn keys_list_refuses_more_objects_found_than_asked_for() {
    let t = SoftToken::new("objects-keys");
    let o = t.through_hostile(
        "object_count=1000",
        &["keys", "list", "--token-label", &t.label, "--pin", &t.pin],
    );
    assert_one_line_error(
        &o,
        2,
        &[
            HOSTILE,
            "C_FindObjects returned CKR_OK claiming 1000 objects",
        ],
    );
}

#[test]
fn a_null_function_list_is_an_error_naming_the_call() {
    let t = SoftToken::new("null-list");
    for (spec, call) in [
        (
            "null_function_list",
            "C_GetFunctionList returned CKR_OK and a NULL function list",
        ),
        (
            "null_interface",
            "C_GetInterface returned CKR_OK and an interface whose function list is NULL",
        ),
    ] {
        assert_shim_error(&t.through_hostile(spec, &["list"]), &[call]);
        assert_shim_error(&run(&mut shim_run(&t, spec, "sha256")), &[call]);
    }
}

#[test]
fn a_null_entry_for_a_set_up_call_is_an_error_naming_it() {
    let t = SoftToken::new("null-setup");
    let o = t.through_hostile("null_fn=C_GetSlotList", &["list"]);
    assert_shim_error(&o, &["C_GetSlotList is NULL in its function list"]);
    let o = run(&mut shim_run(&t, "null_fn=C_Login", "sha256"));
    assert_shim_error(&o, &["C_Login is NULL in its function list"]);
}

#[test]
fn a_null_entry_for_an_ops_call_fails_that_op_naming_it() {
    let t = SoftToken::new("null-sign");
    let tmp = tempfile::tempdir().unwrap();
    let v = run_ok(
        &mut shim_run(&t, "null_fn=C_Sign", "hmac-sha256,p256-sign,sha256"),
        tmp.path(),
    );
    for op in ["hmac-sha256", "p256-sign"] {
        assert_op_failed(&v, op, &["C_Sign is NULL in the module's function list"]);
    }
    assert_eq!(find(&v, HOSTILE, "sha256")["status"], "ok");
}
