//! `--key-label` runs exactly what the key allows (its type, size, usage flags
//! and CKA_ALLOWED_MECHANISMS), `--ops` selects among those ops, and the generic
//! op (`--mechanism`) times a mechanism the catalogue lacks, with its results
//! checked. Keys are made on a SoftHSM2 token through cryptoki, with the
//! attributes pkcs11-tool cannot set.

mod common;

use common::*;
use cryptoki::context::{CInitializeArgs, CInitializeFlags, Pkcs11};
use cryptoki::mechanism::MechanismType;
use cryptoki::object::{Attribute, KeyType, ObjectClass};
use cryptoki::session::UserType;
use cryptoki::types::AuthPin;
use serde_json::Value;

/// One SoftHSM2 token with every key these tests use, made once: SoftHSM2
/// reads its configuration at its first C_Initialize in a process, so this
/// process makes keys on one token only (hsm-bench runs are processes of
/// their own and only make session objects).
fn token() -> &'static SoftToken {
    static TOKEN: std::sync::OnceLock<SoftToken> = std::sync::OnceLock::new();
    TOKEN.get_or_init(|| {
        let t = SoftToken::new("existing-keys");
        make_keys(
            &t,
            &[
                secret("h256", KeyType::SHA256_HMAC, &[7; 32], vec![]),
                secret("generic", KeyType::GENERIC_SECRET, &[9; 64], vec![]),
                secret("short", KeyType::GENERIC_SECRET, &[9; 32], vec![]),
                secret(
                    "cbc-only",
                    KeyType::AES,
                    &[3; 16],
                    vec![Attribute::AllowedMechanisms(vec![MechanismType::AES_CBC])],
                ),
                secret("aes", KeyType::AES, &[5; 16], vec![]),
                secret("mac", KeyType::GENERIC_SECRET, &[6; 32], vec![]),
            ],
        );
        t
    })
}

/// Make token objects on `t` with cryptoki: one secret key per template.
fn make_keys(t: &SoftToken, keys: &[Vec<Attribute>]) {
    // SAFETY: called once, from `token`'s initialiser, before any test of
    // this binary reads SOFTHSM2_CONF (the hsm-bench children get it
    // explicitly).
    unsafe { std::env::set_var("SOFTHSM2_CONF", &t.conf) };
    let ctx = Pkcs11::new(softhsm()).unwrap();
    ctx.initialize(CInitializeArgs::new(CInitializeFlags::OS_LOCKING_OK))
        .unwrap();
    let slot = ctx.get_slots_with_token().unwrap()[0];
    let s = ctx.open_rw_session(slot).unwrap();
    s.login(UserType::User, Some(&AuthPin::from(t.pin.clone())))
        .unwrap();
    for k in keys {
        s.create_object(k).unwrap();
    }
    // A key pair the catalogue has no op for: EC on brainpoolP256r1.
    s.generate_key_pair(
        &cryptoki::mechanism::Mechanism::EccKeyPairGen,
        &[
            Attribute::Token(true),
            Attribute::Verify(true),
            Attribute::Label(b"bp256".to_vec()),
            Attribute::EcParams(BRAINPOOL_P256R1.to_vec()),
        ],
        &[
            Attribute::Token(true),
            Attribute::Private(true),
            Attribute::Sign(true),
            Attribute::Label(b"bp256".to_vec()),
        ],
    )
    .unwrap();
    drop(s);
    ctx.finalize().unwrap();
}

/// The DER OID of brainpoolP256r1 (RFC 5639), a curve SoftHSM2 offers
/// and the catalogue does not cover.
const BRAINPOOL_P256R1: [u8; 11] = [
    0x06, 0x09, 0x2b, 0x24, 0x03, 0x03, 0x02, 0x08, 0x01, 0x01, 0x07,
];

fn secret(label: &str, kt: KeyType, value: &[u8], extra: Vec<Attribute>) -> Vec<Attribute> {
    let mut v = vec![
        Attribute::Class(ObjectClass::SECRET_KEY),
        Attribute::KeyType(kt),
        Attribute::Token(true),
        Attribute::Private(true),
        Attribute::Sensitive(true),
        Attribute::Label(label.as_bytes().to_vec()),
        Attribute::Value(value.to_vec()),
        Attribute::Sign(true),
        Attribute::Verify(true),
        Attribute::Encrypt(true),
        Attribute::Decrypt(true),
    ];
    v.extend(extra);
    v
}

fn ids(v: &Value) -> Vec<String> {
    results(v)
        .iter()
        .map(|r| r["op"].as_str().unwrap().to_string())
        .collect()
}

/// Run on SoftHSM2 with `args`; the results (every one must be ok).
fn run_ok(t: &SoftToken, args: &[&str]) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let v = run_json(
        t.run_on(&[&softhsm()])
            .args(["--iterations", "10", "--warmup", "1"])
            .args(args),
        &dir.path().join("r.json"),
    );
    for r in results(&v) {
        assert_eq!(r["status"], "ok", "{args:?}: {r}");
        assert_eq!(r["errors"], 0, "{args:?}: {r}");
    }
    v
}

#[test]
fn the_key_type_and_allowed_mechanisms_decide_the_ops() {
    let t = token();
    // A CKK_SHA256_HMAC key runs HMAC-SHA256 only.
    assert_eq!(ids(&run_ok(t, &["--key-label", "h256"])), ["hmac-sha256"]);
    // A generic secret runs both HMACs (a 64-byte one: SoftHSM2 wants HMAC
    // keys at least as long as the hash); --ops picks among them.
    assert_eq!(
        ids(&run_ok(t, &["--key-label", "generic"])),
        ["hmac-sha256", "hmac-sha512"]
    );
    assert_eq!(
        ids(&run_ok(
            t,
            &["--key-label", "generic", "--ops", "hmac-sha512"]
        )),
        ["hmac-sha512"]
    );
    // A 32-byte one is too short for SoftHSM2's HMAC-SHA512 (64..512 bytes):
    // the op is left out, as `list` and `run` agree.
    assert_eq!(ids(&run_ok(t, &["--key-label", "short"])), ["hmac-sha256"]);
    // An AES-128 key restricted to CKM_AES_CBC runs AES-128-CBC only.
    assert_eq!(
        ids(&run_ok(t, &["--key-label", "cbc-only"])),
        ["aes128-cbc-encrypt", "aes128-cbc-decrypt"]
    );
    // --ops that leaves nothing is a usage error naming the key.
    let o = run(t.run_on(&[&softhsm()]).args([
        "--key-label",
        "h256",
        "--ops",
        "hmac-sha512",
        "--iterations",
        "5",
    ]));
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
}

/// A key the catalogue has no op for (a type or, here, a curve it does not
/// know) is measured by the generic op, and without `--mechanism` the run
/// says how (it used to stop at "not benchmarked by hsm-bench").
#[test]
fn the_generic_op_takes_a_key_the_catalogue_lacks() {
    let t = token();
    let v = run_ok(
        t,
        &[
            "--mechanism",
            "CKM_ECDSA",
            "--function",
            "sign,verify",
            "--key-label",
            "bp256",
        ],
    );
    assert_eq!(ids(&v), ["mech-ecdsa-sign", "mech-ecdsa-verify"]);
    let o = run(t
        .run_on(&[&softhsm()])
        .args(["--key-label", "bp256", "--iterations", "5"]));
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("brainpoolP256r1") && err.contains("--mechanism"),
        "{err}"
    );
}

#[test]
fn the_generic_op_times_a_mechanism_the_catalogue_lacks() {
    let t = token();
    // A digest needs no key: CKM_SHA224 is not in the catalogue. `--html`
    // writes the chart page beside the results.
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("r.html");
    let html_arg = html.to_str().unwrap();
    let v = run_ok(t, &["--mechanism", "CKM_SHA224", "--html", html_arg]);
    assert_eq!(ids(&v), ["mech-sha224-digest"]);
    assert_eq!(results(&v)[0]["mechanism"], "CKM_SHA224");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>"), "{}", &page[..60]);
    assert!(page.contains("<svg") && page.contains("mech-sha224-digest"));
    // An unwritable --html is refused before anything runs.
    let o = run(t.run_on(&[&softhsm()]).args([
        "--mechanism",
        "CKM_SHA224",
        "--html",
        "/nonexistent/r.html",
    ]));
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("--html"), "{}", stderr(&o));
    // AES-CBC with the IV given as the parameter: encrypt and decrypt (what
    // the mechanism info and the key's flags allow), each checked.
    let v = run_ok(
        t,
        &[
            "--mechanism",
            "ckm_aes_cbc",
            "--mech-param-hex",
            "000102030405060708090a0b0c0d0e0f",
            "--key-label",
            "aes",
            "--data-sizes",
            "64",
        ],
    );
    assert_eq!(ids(&v), ["mech-aes-cbc-encrypt", "mech-aes-cbc-decrypt"]);
    for r in results(&v) {
        assert_eq!(r["data_size"], 64, "{r}");
    }
    // A MAC: sign and verify, checked with C_Verify and a corrupted MAC.
    let v = run_ok(
        t,
        &[
            "--mechanism",
            "CKM_SHA224_HMAC",
            "--key-label",
            "mac",
            "--function",
            "sign,verify",
        ],
    );
    assert_eq!(
        ids(&v),
        ["mech-sha224-hmac-sign", "mech-sha224-hmac-verify"]
    );
    // A wrong IV length fails preparation with the token's code, named: an
    // error (exit 4: nothing was measured), not a crash or a silent pass.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let o = run(t
        .run_on(&[&softhsm()])
        .args(["--mechanism", "CKM_AES_CBC", "--mech-param-hex", "0001"])
        .args(["--key-label", "aes", "--function", "encrypt"])
        .args(["--iterations", "5", "--format", "json", "-o"])
        .arg(&out));
    assert_eq!(code(&o), 4, "{}", stderr(&o));
    let v = json(&out);
    let r = &results(&v)[0];
    assert_eq!(r["status"], "error", "{r}");
    let why = r["reason"].as_str().unwrap_or_default();
    assert!(why.contains("C_Encrypt") && why.contains("CKR_"), "{r}");
    // Usage errors before anything is loaded: one line, exit 2.
    for args in [
        vec!["--mechanism", "CKM_NOPE"],
        vec!["--mechanism", "CKM_AES_CBC", "--mech-param-hex", "xyz"],
        vec!["--mechanism", "CKM_AES_CBC", "--function", "encrypt"],
        vec!["--mechanism", "CKM_SHA224", "--function", "wrap"],
    ] {
        let o = run(t.run_on(&[&softhsm()]).args(&args));
        assert_eq!(code(&o), 2, "{args:?}: {}", stderr(&o));
        assert_eq!(stderr(&o).lines().count(), 1, "{args:?}: {}", stderr(&o));
    }
}

/// With every C_Encrypt / C_Sign output flipped by the delay shim, the
/// generic op's checks fail (and pass through the same shim without
/// flipping): a generic op is as honest as the catalogue's.
#[test]
fn generic_results_are_checked_against_a_flipping_module() {
    let t = token();
    // (flipped call, mechanism, function): decrypt flips the ciphertext
    // made while preparing, sign the MAC checked with C_Verify.
    for (flip, mechanism, function) in [
        ("C_Encrypt", "CKM_AES_ECB", "encrypt"),
        ("C_Encrypt", "CKM_AES_ECB", "decrypt"),
        ("C_Sign", "CKM_AES_CMAC", "sign"),
    ]
    .into_iter()
    .flat_map(|(f, m, func)| [("", m, func), (f, m, func)])
    {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("r.json");
        let o = run(t
            .shim_run(false)
            .env("P11_DELAY_SHIM_FLIP", flip)
            .args(["--iterations", "10", "--warmup", "0", "--data-sizes", "32"])
            .args(["--mechanism", mechanism, "--key-label", "aes"])
            .args(["--function", function])
            .args(["--format", "json", "-o"])
            .arg(&out));
        assert!(out.is_file(), "{mechanism} {function}: {}", stderr(&o));
        let v = json(&out);
        let op = format!(
            "mech-{}-{function}",
            mechanism[4..].to_lowercase().replace('_', "-")
        );
        let r = find(&v, "p11_delay_shim", &op);
        let want = if flip.is_empty() { "ok" } else { "error" };
        assert_eq!(r["status"], want, "{op} with '{flip}' flipped: {r}");
    }
}
