//! Every result is checked: our module behind the delay shim with
//! `P11_DELAY_SHIM_FLIP`, which flips one bit of every output buffer the chosen
//! calls write. Every op that produces an output must then fail its check,
//! named; the same run without flipping must pass. Skipped (with a notice)
//! when `libdalek_pkcs11.so` is not built, like `dalek.rs`. MACs of keys whose
//! value hsm-bench cannot read are checked with SoftHSM2 and pkcs11-tool.

mod common;

use std::path::Path;
use std::process::Command;

use common::*;
use serde_json::Value;

/// Ops that produce an output, and the check that must catch a flipped bit in
/// it when every output is flipped (`all`): the prepared signature or
/// ciphertext fails its self-check, digests and MACs differ from the
/// in-process ones on every call.
const CHECKED: &[(&str, &str)] = &[
    ("ed25519-sign", "prepared signature does not verify"),
    ("ed25519-verify", "prepared signature does not verify"),
    ("p256-sign", "prepared signature does not verify"),
    ("p256-verify", "prepared signature does not verify"),
    ("p384-sign", "prepared signature does not verify"),
    ("p384-verify", "prepared signature does not verify"),
    ("rsa2048-sign", "prepared signature does not verify"),
    ("rsa2048-verify", "prepared signature does not verify"),
    ("rsa2048-pss-sign", "prepared signature does not verify"),
    ("rsa2048-pss-verify", "prepared signature does not verify"),
    (
        "rsa2048-oaep-sha1-encrypt",
        "prepared ciphertext does not decrypt",
    ),
    (
        "rsa2048-oaep-sha256-encrypt",
        "prepared ciphertext does not decrypt",
    ),
    (
        "rsa2048-oaep-sha256-decrypt",
        "prepared ciphertext does not decrypt",
    ),
    ("aes256-gcm-encrypt", "prepared ciphertext does not decrypt"),
    ("aes256-gcm-decrypt", "prepared ciphertext does not decrypt"),
    (
        "aes256-cbc-encrypt",
        "prepared ciphertext decrypts to other data",
    ),
    ("sha256", "digest differs from the reference"),
    ("sha384", "digest differs from the reference"),
    ("sha512", "digest differs from the reference"),
    ("hmac-sha256", "MAC differs from the in-process MAC"),
    ("hmac-sha512", "MAC differs from the in-process MAC"),
    ("aes256-cmac", "MAC differs from the in-process MAC"),
];

/// Ops that pass with every output flipped: random output cannot be checked
/// for correctness (its length and that outputs differ are checked, which a
/// flipped bit does not break); the others write no output buffer.
const UNCHECKABLE: &[&str] = &[
    "random32",
    "session-info",
    "ed25519-keygen",
    "p256-keygen",
    "aes256-keygen",
    "find-object",
];

/// hsm-bench through the shim around our module, flipping `flip` (none when
/// empty) after `after` outputs of each flipped function.
fn flipped(dalek: &Path, tmp: &Path, flip: &str, after: u32) -> Command {
    let mut c = cmd();
    c.env("HSM_BENCH_DALEK_MODULE", shim())
        .env("P11_DELAY_SHIM_MODULE", dalek)
        .env("TMPDIR", tmp);
    if !flip.is_empty() {
        c.env("P11_DELAY_SHIM_FLIP", flip)
            .env("P11_DELAY_SHIM_FLIP_AFTER", after.to_string());
    }
    // No warmup: a warmup whose every call fails ends the op before its
    // timed calls (reported as "warmup failed"); the timed calls' checks are
    // what the FLIP_AFTER runs test.
    c.args(["run", "--quiet", "--module", "dalek"])
        .args(["--iterations", "20", "--warmup", "0"])
        .args(["--format", "json", "-o"])
        .arg(tmp.join("r.json"));
    c
}

/// `op` alone with every output of `func` but the first flipped: its
/// result, which must be an error.
fn flipped_after_one(dalek: &Path, func: &str, op: &str) -> Value {
    let tmp = tempfile::tempdir().unwrap();
    let v = results_of(
        flipped(dalek, tmp.path(), func, 1).args(["--ops", op]),
        tmp.path(),
    );
    let r = find(&v, "dalek", op).clone();
    assert_eq!(r["status"], "error", "{op} ({func} flipped): {r}");
    r
}

/// Run `c` and return the results (a failed op may make the exit code
/// non-zero; the result file is written either way).
fn results_of(c: &mut Command, tmp: &Path) -> Value {
    let o = run(c);
    let path = tmp.join("r.json");
    assert!(path.is_file(), "exit {}: {}", code(&o), stderr(&o));
    let v = json(&path);
    assert_valid(&v);
    v
}

/// Everything said about a failed result: its reason and its error names.
fn failure_text(r: &Value) -> String {
    format!("{} {}", r["reason"], r["error_codes"])
}

/// The ops of the quick profile (the default suite of a bare `hsm-bench`).
fn quick_ops() -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../bench-profiles/quick.toml");
    let text = std::fs::read_to_string(path).unwrap();
    let list = text
        .split("ops = [")
        .nth(1)
        .unwrap()
        .split(']')
        .next()
        .unwrap();
    list.split('"')
        .skip(1)
        .step_by(2)
        .map(String::from)
        .collect()
}

#[test]
fn the_flip_test_covers_the_quick_profile() {
    let quick = quick_ops();
    assert!(quick.len() >= 10, "{quick:?}");
    for op in &quick {
        assert!(
            CHECKED.iter().any(|(o, _)| o == op) || UNCHECKABLE.contains(&op.as_str()),
            "quick op {op} is not in the flip test"
        );
    }
}

#[test]
fn every_output_fails_its_check_when_the_shim_flips_it() {
    let Some(m) = dalek() else { return };
    let ops: Vec<&str> = CHECKED
        .iter()
        .map(|(op, _)| *op)
        .chain(UNCHECKABLE.iter().copied())
        .collect();
    let ops = ops.join(",");

    // Without flipping, everything passes its checks.
    let tmp = tempfile::tempdir().unwrap();
    let v = results_of(
        flipped(&m, tmp.path(), "", 0).args(["--ops", &ops]),
        tmp.path(),
    );
    for r in results(&v) {
        assert_eq!(r["status"], "ok", "unflipped: {r}");
    }

    let tmp = tempfile::tempdir().unwrap();
    let v = results_of(
        flipped(&m, tmp.path(), "all", 0).args(["--ops", &ops]),
        tmp.path(),
    );
    assert_eq!(results(&v).len(), CHECKED.len() + UNCHECKABLE.len());
    for (op, check) in CHECKED {
        let r = find(&v, "dalek", op);
        assert_eq!(r["status"], "error", "{op} passed with flipped output: {r}");
        let text = failure_text(r);
        assert!(
            text.contains("CHECK_FAILED(") && text.contains(check),
            "{op}: expected the check '{check}', got {text}"
        );
    }
    for op in UNCHECKABLE {
        assert_eq!(find(&v, "dalek", op)["status"], "ok", "{op}");
    }
}

#[test]
fn outputs_flipped_after_preparation_fail_the_checks_of_the_timed_calls() {
    let Some(m) = dalek() else { return };
    // One output of each function is left alone (the preparation's, or for
    // MACs and digests, whose references are computed in-process, the
    // warmup's); every timed output is flipped, and the checks of the timed
    // calls (sampled for decryptions and randomized signatures) catch it.
    for (func, op, check) in [
        ("C_Sign", "p256-sign", "sampled signature does not verify"),
        (
            "C_Sign",
            "rsa2048-pss-sign",
            "sampled signature does not verify",
        ),
        ("C_Sign", "ed25519-sign", "deterministic signature differs"),
        ("C_Sign", "rsa2048-sign", "deterministic signature differs"),
        (
            "C_Sign",
            "hmac-sha256",
            "MAC differs from the in-process MAC",
        ),
        (
            "C_Sign",
            "aes256-cmac",
            "MAC differs from the in-process MAC",
        ),
        (
            "C_Encrypt",
            "aes256-gcm-encrypt",
            "sampled ciphertext does not decrypt",
        ),
        (
            "C_Encrypt",
            "aes256-cbc-encrypt",
            "sampled ciphertext decrypts to other data",
        ),
        (
            "C_Encrypt",
            "rsa2048-oaep-sha256-encrypt",
            "sampled ciphertext does not decrypt",
        ),
        (
            "C_Decrypt",
            "aes256-gcm-decrypt",
            "decrypted data differs from the plaintext",
        ),
        ("C_Digest", "sha256", "digest differs from the reference"),
    ] {
        let r = flipped_after_one(&m, func, op);
        assert!(r["reason"].is_null(), "{op} failed while preparing: {r}");
        let errors = r["error_codes"].as_object().unwrap();
        assert!(
            errors
                .keys()
                .all(|k| k.starts_with("CHECK_FAILED(") && k.contains(check)),
            "{op}: expected the check '{check}', got {errors:?}"
        );
        assert!(r["errors"].as_u64().unwrap() >= 7, "{op}: {r}");
    }
}

/// A sensitive secret key `label` of `key_type` (`GENERIC:32`, `AES:32`) made
/// with pkcs11-tool on the SoftHSM2 token `t`: hsm-bench cannot read its value.
fn sensitive_key(t: &SoftToken, key_type: &str, label: &str) {
    let mut c = Command::new("pkcs11-tool");
    c.env("SOFTHSM2_CONF", &t.conf)
        .arg("--module")
        .arg(softhsm());
    c.args(["--token-label", &t.label, "--login", "--pin", &t.pin]);
    c.args(["--keygen", "--key-type", key_type, "--label", label]);
    let o = c.args(["--sensitive", "--usage-sign"]).output();
    let o = o.expect("pkcs11-tool (opensc) is installed");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn macs_of_unreadable_keys_are_checked_with_c_verify() {
    let t = SoftToken::new("flip-mac");
    sensitive_key(&t, "GENERIC:32", "hkey");
    sensitive_key(&t, "AES:32", "akey");
    for (label, op) in [("hkey", "hmac-sha256"), ("akey", "aes256-cmac")] {
        for flip in ["", "C_Sign"] {
            let dir = tempfile::tempdir().unwrap();
            let mut c = t.shim_run(false);
            c.env("P11_DELAY_SHIM_FLIP", flip)
                .args(["--key-label", label, "--ops", op, "--iterations", "10"])
                .args(["--format", "json", "-o"])
                .arg(dir.path().join("r.json"));
            let v = results_of(&mut c, dir.path());
            let r = find(&v, "p11_delay_shim", op);
            if flip.is_empty() {
                assert_eq!(r["status"], "ok", "{op}: {r}");
            } else {
                assert_eq!(r["status"], "error", "{op} passed with flipped MACs: {r}");
                let why = r["reason"].as_str().unwrap();
                assert!(
                    why.contains("C_Verify of the prepared MAC returned CKR_SIGNATURE_INVALID"),
                    "{op}: {why}"
                );
            }
        }
    }
}

/// The breadth profile's ops (every AES mode, key size and direction; 3DES;
/// ECDSA with hashing and on P-521 and secp256k1; key wrap; SHA-1; ECDH
/// writes no output buffer and is left out): with every output flipped each fails a named check
/// while preparing (digests: on every call); with the timed outputs flipped
/// (after the preparation's), the checks of the timed calls catch it: sampled
/// decryptions of ciphertexts and verifications of signatures, the
/// comparison of every decryption with the plaintext and of every digest
/// with the reference. Verify ops write no output in their timed calls;
/// `seed-random32` writes none at all (its sampled C_GenerateRandom
/// outputs are checked like `random32`'s, which a flipped bit passes).
#[test]
fn every_breadth_op_fails_its_check_when_outputs_are_flipped() {
    let Some(m) = dalek() else { return };
    let ops = "aes*-ecb-*,aes*-cbc-*,aes*-ctr-*,aes*-gcm-*,des3-*,p*-ecdsa-*,sha1,\
               secp256k1-*,p521-sign,p521-verify,*-key-wrap*,*-key-unwrap*,rsa*-oaep-wrap,\
               rsa*-oaep-unwrap,rsa3072-pss-*,rsa4096-pss-*,rsa3072-oaep-*,rsa4096-oaep-*";
    let tmp = tempfile::tempdir().unwrap();
    let v = results_of(
        flipped(&m, tmp.path(), "all", 0).args(["--ops", ops]),
        tmp.path(),
    );
    // The first 51, 3DES 4, P-521 with hashing 4, secp256k1 6, raw P-521 2, wrap 6.
    assert_eq!(results(&v).len(), 51 + 4 + 4 + 6 + 2 + 6);
    for r in results(&v) {
        assert_eq!(r["status"], "error", "passed with flipped output: {r}");
        let text = failure_text(r);
        assert!(
            text.contains("CHECK_FAILED(")
                && [
                    "ciphertext",
                    "signature does not verify",
                    "digest differs",
                    "wrapped key does not unwrap"
                ]
                .iter()
                .any(|c| text.contains(c)),
            "{text}"
        );
    }
    // The shim counts outputs per process: one op per run, so that only the
    // preparation's output is left alone.
    let breadth: Vec<String> = results(&v)
        .iter()
        .map(|r| r["op"].as_str().unwrap().to_string())
        // Verify and unwrap ops write no output buffer in their timed calls.
        .filter(|op| !op.ends_with("-verify") && !op.contains("-unwrap"))
        .collect();
    for op in &breadth {
        let (func, check) = if op.ends_with("-encrypt") {
            ("C_Encrypt", "sampled ciphertext")
        } else if op.ends_with("-decrypt") {
            ("C_Decrypt", "decrypted data differs from the plaintext")
        } else if op.ends_with("-sign") {
            ("C_Sign", "sampled signature does not verify")
        } else if op.starts_with("rsa") && op.ends_with("-wrap") {
            ("C_WrapKey", "sampled wrapped key does not unwrap")
        } else if op.contains("-wrap") {
            ("C_WrapKey", "wrapped key differs from the checked one")
        } else {
            ("C_Digest", "digest differs from the reference")
        };
        let r = flipped_after_one(&m, func, op);
        // The first timed call (the warmup's) is the one caught: a failed
        // warmup, or failed measured calls, never a failed preparation.
        let text = failure_text(&r);
        assert!(!text.contains("preparing failed"), "{op}: {r}");
        assert!(
            text.contains(&format!("CHECK_FAILED({check}")),
            "{op}: expected the check '{check}', got {text}"
        );
    }
}
