//! `dalek-pkcs11-util migrate` from a real SoftHSM2 token holding RSA, EC
//! and Ed25519 key pairs, AES and generic-secret keys, a certificate and a
//! data object, with every kind of protection: what may leave SoftHSM2 is
//! copied (by value or by wrapping), what may not is listed, and the copies
//! work with the originals (signatures made here verify there, a cipher
//! text made there decrypts here, both make the same MAC).

#[path = "../../provider/tests/common/mod.rs"]
mod common;
mod tool;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use cryptoki::context::{CInitializeArgs, CInitializeFlags, Pkcs11};
use cryptoki::mechanism::Mechanism;
use cryptoki::mechanism::eddsa::{EddsaParams, EddsaSignatureScheme};
use cryptoki::object::{Attribute, AttributeType, KeyType, ObjectClass, ObjectHandle};
use cryptoki::session::{Session, UserType};
use serde_json::Value;
use tool::*;

const SOURCE_PIN: &str = "1234";
/// DER OIDs of P-256 and Ed25519 (`CKA_EC_PARAMS`).
const P256: &[u8] = &[0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];
const ED25519: &[u8] = &[0x06, 0x03, 0x2b, 0x65, 0x70];

/// SoftHSM2's module, or `None` (the test skips) where it is not installed
/// and `DALEK_PKCS11_REQUIRE_SOFTHSM` is not set (scripts/test sets it).
fn softhsm() -> Option<PathBuf> {
    let path = std::env::var_os("DALEK_PKCS11_SOFTHSM_MODULE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/lib/softhsm/libsofthsm2.so"));
    if path.exists() {
        return Some(path);
    }
    assert!(
        std::env::var_os("DALEK_PKCS11_REQUIRE_SOFTHSM").is_none(),
        "SoftHSM2 is required but {} is missing (scripts/install-deps installs softhsm2)",
        path.display()
    );
    eprintln!("skipped: SoftHSM2 not installed ({})", path.display());
    None
}

fn run(cmd: &mut Command) {
    let o = cmd.output().expect("the command runs");
    assert!(
        o.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// A SoftHSM2 token "src" in `dir`, with a certificate written by
/// pkcs11-tool (which fills in its subject, issuer and serial number).
fn source_token(module: &Path, dir: &Path) -> Vec<u8> {
    let tokens = dir.join("softhsm-tokens");
    std::fs::create_dir_all(&tokens).unwrap();
    let conf = dir.join("softhsm2.conf");
    std::fs::write(
        &conf,
        format!(
            "directories.tokendir = {}\nobjectstore.backend = file\nlog.level = ERROR\n",
            tokens.display()
        ),
    )
    .unwrap();
    // SAFETY: the fixture's lock serialises the environment's users.
    unsafe { std::env::set_var("SOFTHSM2_CONF", &conf) };
    run(Command::new("softhsm2-util").args([
        "--init-token",
        "--free",
        "--label",
        "src",
        "--so-pin",
        "12345678",
        "--pin",
        SOURCE_PIN,
    ]));
    run(Command::new("openssl").current_dir(dir).args([
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
        "-keyout",
        "cert.key",
        "-subj",
        "/CN=migrated",
        "-days",
        "2",
        "-outform",
        "DER",
        "-out",
        "cert.der",
    ]));
    run(Command::new("pkcs11-tool").args([
        "--module",
        module.to_str().unwrap(),
        "--token-label",
        "src",
        "--login",
        "--pin",
        SOURCE_PIN,
        "--write-object",
        dir.join("cert.der").to_str().unwrap(),
        "--type",
        "cert",
        "--label",
        "cert",
        "--id",
        "06",
    ]));
    std::fs::read(dir.join("cert.der")).unwrap()
}

/// SoftHSM2 loaded in this process, logged in on "src".
fn open_source(module: &Path) -> (Pkcs11, Session) {
    let p = Pkcs11::new(module).unwrap();
    p.initialize(CInitializeArgs::new(CInitializeFlags::OS_LOCKING_OK))
        .unwrap();
    let slot = *p
        .get_slots_with_token()
        .unwrap()
        .iter()
        .find(|s| p.get_token_info(**s).unwrap().label() == "src")
        .unwrap();
    let s = p.open_rw_session(slot).unwrap();
    s.login(UserType::User, Some(&pin(SOURCE_PIN))).unwrap();
    (p, s)
}

fn ident(label: &str, id: u8) -> [Attribute; 3] {
    [
        Attribute::Token(true),
        Attribute::Label(label.as_bytes().to_vec()),
        Attribute::Id(vec![id]),
    ]
}

/// The source's keys: what can leave by wrapping (sensitive, extractable:
/// RSA, AES), by value (not sensitive: EC, Ed25519, HMAC), and not at all.
fn fill_source(s: &Session) {
    let pair = |mech: Mechanism, label: &str, id: u8, public: &[Attribute], sensitive: bool| {
        let mut pubt = ident(label, id).to_vec();
        pubt.extend_from_slice(public);
        pubt.push(Attribute::Verify(true));
        let mut privt = ident(label, id).to_vec();
        privt.extend([
            Attribute::Private(true),
            Attribute::Sign(true),
            Attribute::Sensitive(sensitive),
            Attribute::Extractable(true),
        ]);
        s.generate_key_pair(&mech, &pubt, &privt).unwrap();
    };
    pair(
        Mechanism::RsaPkcsKeyPairGen,
        "rsa",
        1,
        &[
            Attribute::ModulusBits(2048.into()),
            Attribute::PublicExponent(vec![1, 0, 1]),
        ],
        true,
    );
    pair(
        Mechanism::EccKeyPairGen,
        "ec",
        2,
        &[Attribute::EcParams(P256.to_vec())],
        false,
    );
    pair(
        Mechanism::EccEdwardsKeyPairGen,
        "ed",
        7,
        &[Attribute::EcParams(ED25519.to_vec())],
        // SoftHSM2 2.6 cannot wrap EdDSA keys: this one leaves by value.
        false,
    );
    let secret = |label: &str, id: u8, len: u64, extractable: bool| {
        let mut t = ident(label, id).to_vec();
        t.extend([
            Attribute::ValueLen(len.into()),
            Attribute::Encrypt(true),
            Attribute::Decrypt(true),
            Attribute::Sensitive(true),
            Attribute::Extractable(extractable),
        ]);
        s.generate_key(&Mechanism::AesKeyGen, &t).unwrap();
    };
    secret("aes", 3, 32, true);
    secret("locked", 4, 16, false);
    let mut hmac = ident("hmac", 5).to_vec();
    hmac.extend([
        Attribute::Class(ObjectClass::SECRET_KEY),
        Attribute::KeyType(KeyType::GENERIC_SECRET),
        Attribute::Sign(true),
        Attribute::Verify(true),
        Attribute::Sensitive(false),
        Attribute::Extractable(true),
        Attribute::Value(vec![0x5a; 32]),
    ]);
    s.create_object(&hmac).unwrap();
    s.create_object(&[
        Attribute::Class(ObjectClass::DATA),
        Attribute::Token(true),
        Attribute::Private(true),
        Attribute::Label(b"note".to_vec()),
        Attribute::Application(b"migration test".to_vec()),
        Attribute::Value(b"kept across tokens".to_vec()),
    ])
    .unwrap();
}

fn one(s: &Session, class: ObjectClass, label: &str) -> ObjectHandle {
    let found = s
        .find_objects(&[
            Attribute::Class(class),
            Attribute::Label(label.as_bytes().to_vec()),
        ])
        .unwrap();
    assert_eq!(found.len(), 1, "{class} {label}");
    found[0]
}

fn value(s: &Session, h: ObjectHandle) -> Vec<u8> {
    match &s.get_attributes(h, &[AttributeType::Value]).unwrap()[..] {
        [Attribute::Value(v)] => v.clone(),
        other => panic!("{other:?}"),
    }
}

fn migrate(f: &Fixture, module: &Path, to: &str, extra: &[&str]) -> (Option<i32>, Value) {
    let mut args = vec![
        "--json",
        "migrate",
        "--from-module",
        module.to_str().unwrap(),
        "--from-token",
        "src",
        "--pin-env",
        "PIN_SOURCE",
        "--to-token",
        to,
        "--to-pin-env",
        "PIN_USER",
    ];
    args.extend_from_slice(extra);
    // SAFETY: the fixture's lock serialises the environment's users.
    unsafe { std::env::set_var("PIN_SOURCE", SOURCE_PIN) };
    let o = util(f, &args);
    let v = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stderr)));
    (o.status.code(), v)
}

#[test]
fn a_softhsm2_token_migrates_and_what_cannot_leave_is_listed() {
    let Some(module) = softhsm() else { return };
    let mut f = Fixture::new();
    f.stop();
    let dir = f.dir.path().to_path_buf();
    let cert = source_token(&module, &dir);
    let (p, s) = open_source(&module);
    fill_source(&s);
    drop(s);
    p.finalize().unwrap();
    ok(&util(&f, &init_args("dst")));
    ok(&util(&f, &init_args("dry")));

    // A dry run says what would move and changes nothing.
    let (code, dry) = migrate(&f, &module, "dry", &["--dry-run"]);
    assert_eq!(code, Some(1), "{dry}");
    assert_eq!(
        (dry["moved"].as_u64(), dry["not_movable"].as_u64()),
        (Some(10), Some(1)),
        "{dry}"
    );
    let listed: Value = serde_json::from_str(&ok(&util(&f, &["list", "--json"]))).unwrap();
    let dry_token = listed["tokens"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["label"] == "dry")
        .unwrap();
    assert_eq!(dry_token["objects"], serde_json::json!({}), "{listed}");

    let (code, report) = migrate(&f, &module, "dst", &[]);
    assert_eq!(code, Some(1), "one key cannot leave: {report}");
    let fate = |label: &str, class: &str| {
        report["objects"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["label"] == label && o["class"] == class)
            .unwrap_or_else(|| panic!("{class} {label} in {report}"))["fate"]
            .clone()
    };
    assert_eq!(fate("rsa", "private key"), "moved_wrapped");
    assert_eq!(fate("ed", "private key"), "moved");
    assert_eq!(fate("aes", "secret key"), "moved_wrapped");
    assert_eq!(fate("ec", "private key"), "moved");
    assert_eq!(fate("hmac", "secret key"), "moved");
    assert_eq!(fate("rsa", "public key"), "moved");
    assert_eq!(fate("cert", "certificate"), "moved");
    assert_eq!(fate("note", "data"), "moved");
    assert_eq!(fate("locked", "secret key"), "not_movable");
    let locked = report["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["label"] == "locked")
        .unwrap();
    assert!(
        locked["reason"]
            .as_str()
            .unwrap()
            .contains("not extractable"),
        "{locked}"
    );
    assert_eq!(locked["id"], "04");
    assert_eq!(report["moved"], 10, "{report}");
    // Again: everything is already there; the locked key is still listed.
    let (code, again) = migrate(&f, &module, "dst", &[]);
    assert_eq!(code, Some(1));
    assert_eq!(
        (again["moved"].as_u64(), again["already_there"].as_u64()),
        (Some(0), Some(10)),
        "{again}"
    );
    ok(&util(&f, &["verify", "--token", "dst"]));

    // The copies work with the originals.
    let (p, src) = open_source(&module);
    f.start();
    let slot = f.slot_labelled("dst");
    let here = f.user(slot);
    let digest = [7u8; 32];
    for (label, mech, data) in [
        ("rsa", Mechanism::Sha256RsaPkcs, &b"migrated RSA"[..]),
        ("ec", Mechanism::Ecdsa, &digest[..]),
        (
            "ed",
            Mechanism::Eddsa(EddsaParams::new(EddsaSignatureScheme::Pure)),
            &b"migrated Ed25519"[..],
        ),
    ] {
        let sig = here
            .sign(&mech, one(&here, ObjectClass::PRIVATE_KEY, label), data)
            .unwrap();
        src.verify(&mech, one(&src, ObjectClass::PUBLIC_KEY, label), data, &sig)
            .unwrap_or_else(|e| panic!("{label}: {e}"));
    }
    let iv = [9u8; 16];
    let ct = src
        .encrypt(
            &Mechanism::AesCbcPad(iv),
            one(&src, ObjectClass::SECRET_KEY, "aes"),
            b"secret text",
        )
        .unwrap();
    let pt = here
        .decrypt(
            &Mechanism::AesCbcPad(iv),
            one(&here, ObjectClass::SECRET_KEY, "aes"),
            &ct,
        )
        .unwrap();
    assert_eq!(pt, b"secret text");
    let mac = |s: &Session| {
        s.sign(
            &Mechanism::Sha256Hmac,
            one(s, ObjectClass::SECRET_KEY, "hmac"),
            b"m",
        )
        .unwrap()
    };
    assert_eq!(mac(&here), mac(&src));
    assert_eq!(
        value(&here, one(&here, ObjectClass::CERTIFICATE, "cert")),
        cert
    );
    assert_eq!(
        value(&here, one(&here, ObjectClass::DATA, "note")),
        b"kept across tokens"
    );
    // Protection comes along: the wrapped RSA key is still sensitive and
    // extractable, the EC key still readable, both private.
    let rsa = one(&here, ObjectClass::PRIVATE_KEY, "rsa");
    let got = here
        .get_attributes(
            rsa,
            &[
                AttributeType::Sensitive,
                AttributeType::Extractable,
                AttributeType::Private,
                AttributeType::Id,
            ],
        )
        .unwrap();
    assert_eq!(
        got,
        vec![
            Attribute::Sensitive(true),
            Attribute::Extractable(true),
            Attribute::Private(true),
            Attribute::Id(vec![1])
        ]
    );
    assert!(
        here.find_objects(&[Attribute::Label(b"locked".to_vec())])
            .unwrap()
            .is_empty()
    );
    drop(here);
    drop(src);
    p.finalize().unwrap();
}
