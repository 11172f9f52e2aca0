//! `dalek-pkcs11-util import`, `export-public` and `migrate` of ML-DSA,
//! ML-KEM and SLH-DSA keys, on key files written by python `cryptography`
//! 50.0.1 and the RustCrypto crates (tests/data/pqc/, see its README): the
//! SubjectPublicKeyInfo the token exports is byte for byte the one those
//! wrote for the same key, the token holds the seed and/or expanded value
//! the file gave, the imported key signs (or decapsulates) with its public
//! half, and files that are wrong are refused in one line with nothing
//! left on the token.

#[path = "../../provider/tests/common/mod.rs"]
mod common;
mod tool;

use std::path::{Path, PathBuf};

use common::*;
use cryptoki::mechanism::Mechanism;
use cryptoki::mechanism::dsa::{HedgeType, SignAdditionalContext};
use cryptoki::object::{Attribute, AttributeType, KeyType, ObjectClass, ObjectHandle};
use cryptoki::session::Session;
use cryptoki_sys::*;
use serde_json::Value;
use tool::*;

/// A fixture file.
fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/pqc")
        .join(name)
}

/// The DER of a fixture (PEM files decoded).
fn der(name: &str) -> Vec<u8> {
    let bytes = std::fs::read(data(name)).unwrap();
    if !name.ends_with(".pem") {
        return bytes;
    }
    use base64ct::{Base64, Encoding};
    let text = String::from_utf8(bytes).unwrap();
    let body: String = text.lines().filter(|l| !l.starts_with("-----")).collect();
    Base64::decode_vec(&body).unwrap()
}

/// DER tag–length–value (lengths up to 64 KiB).
fn tlv(tag: u8, body: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    match body.len() {
        n if n < 0x80 => out.push(n as u8),
        n if n < 0x100 => out.extend_from_slice(&[0x81, n as u8]),
        n => out.extend_from_slice(&[0x82, (n >> 8) as u8, n as u8]),
    }
    out.extend_from_slice(body);
    out
}

/// PKCS#8 v0 of the OID `oid` (contents octets) and privateKey octets.
fn pkcs8(oid: &[u8], private_key: &[u8]) -> Vec<u8> {
    let mut body = vec![0x02, 0x01, 0x00];
    body.extend(tlv(0x30, &tlv(0x06, oid)));
    body.extend(tlv(0x04, private_key));
    tlv(0x30, &body)
}

/// The OID contents octets of a SubjectPublicKeyInfo (short lengths of
/// the algorithm identifier, as all of these have).
fn spki_oid(spki: &[u8]) -> Vec<u8> {
    let at = spki.iter().position(|&b| b == 0x06).unwrap();
    spki[at + 2..at + 2 + usize::from(spki[at + 1])].to_vec()
}

/// The raw public key of a SubjectPublicKeyInfo (its trailing BIT STRING).
fn spki_key(spki: &[u8], len: usize) -> Vec<u8> {
    spki[spki.len() - len..].to_vec()
}

/// The seed form, expanded form and both form of a CHOICE private key.
fn forms(seed: &[u8], expanded: &[u8]) -> [Vec<u8>; 3] {
    let mut both = tlv(0x04, seed);
    both.extend(tlv(0x04, expanded));
    [tlv(0x80, seed), tlv(0x04, expanded), tlv(0x30, &both)]
}

/// PEM text of `der`.
fn pem(label: &str, der: &[u8]) -> String {
    use base64ct::{Base64, Encoding};
    let b64 = Base64::encode_string(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for chunk in b64.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(chunk).unwrap());
        out.push('\n');
    }
    out + &format!("-----END {label}-----\n")
}

fn import(
    f: &Fixture,
    token: &str,
    label: &str,
    file: &Path,
    extra: &[&str],
) -> std::process::Output {
    let mut args = vec![
        "--json",
        "import",
        "--token",
        token,
        "--label",
        label,
        "--file",
        file.to_str().unwrap(),
        "--pin-env",
        "PIN_USER",
    ];
    args.extend_from_slice(extra);
    util(f, &args)
}

/// `export-public --der` of the key labelled `label` (to a file, so the
/// bytes are exactly the file's).
fn export_der(f: &Fixture, token: &str, label: &str) -> Vec<u8> {
    let out = f.dir.path().join(format!("{token}-{label}.spki.der"));
    ok(&util(
        f,
        &[
            "export-public",
            "--token",
            token,
            "--label",
            label,
            "--der",
            "--out",
            out.to_str().unwrap(),
        ],
    ));
    std::fs::read(out).unwrap()
}

fn the(s: &Session, class: ObjectClass, label: &str) -> ObjectHandle {
    let found = s
        .find_objects(&[
            Attribute::Class(class),
            Attribute::Label(label.as_bytes().to_vec()),
        ])
        .unwrap();
    assert_eq!(found.len(), 1, "{class} {label}");
    found[0]
}

/// The bytes of `ty` on `h`, if readable.
fn bytes(s: &Session, h: ObjectHandle, ty: AttributeType) -> Option<Vec<u8>> {
    match s.get_attributes(h, &[ty]).unwrap().pop()? {
        Attribute::Value(v) | Attribute::Seed(v) | Attribute::PublicKeyInfo(v) => Some(v),
        Attribute::ParameterSet(p) => Some((**p).to_ne_bytes().to_vec()),
        other => panic!("{other:?}"),
    }
}

fn pure(ctx: &[u8]) -> SignAdditionalContext<'_> {
    SignAdditionalContext::new(HedgeType::Preferred, Some(ctx))
}

/// Objects on `token` (by class), as `list` counts them.
fn objects_on(f: &Fixture, token: &str) -> Value {
    let listed: Value = serde_json::from_str(&ok(&util(f, &["list", "--json"]))).unwrap();
    listed["tokens"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["label"] == token)
        .unwrap()["objects"]
        .clone()
}

/// The three ML-DSA sets: name, `CKP_*`, public and expanded lengths.
const ML_DSA: [(&str, CK_ULONG, usize); 3] = [
    ("ml-dsa-44", CKP_ML_DSA_44, 1312),
    ("ml-dsa-65", CKP_ML_DSA_65, 1952),
    ("ml-dsa-87", CKP_ML_DSA_87, 2592),
];

/// The seed and expanded key of an ML-DSA fixture (the expanded key from
/// the token's own code: the "both" file must agree with what the token
/// derives).
fn ml_dsa_key(name: &str, ckp: CK_ULONG) -> (Vec<u8>, Vec<u8>) {
    use dalek_pkcs11::mechanisms::mldsa::{ParamSet, PrivateKey};
    let seed_file = der(&format!("{name}.seed.pem"));
    let seed = seed_file[seed_file.len() - 32..].to_vec();
    let set = ParamSet::from_ckp(ckp).unwrap();
    let expanded = PrivateKey::from_seed(set, &seed)
        .unwrap()
        .expanded_encoding()
        .to_vec();
    (seed, expanded)
}

#[test]
fn ml_dsa_keys_in_each_form_import_and_export_as_python_writes_them() {
    let mut f = Fixture::new();
    f.stop();
    ok(&util(&f, &init_args("pq")));
    let dir = f.dir.path().join("files");
    std::fs::create_dir_all(&dir).unwrap();
    for (name, ckp, _) in ML_DSA {
        let spki = der(&format!("{name}.spki.der"));
        let oid = spki_oid(&spki);
        let (seed, expanded) = ml_dsa_key(name, ckp);
        // python's own file (PEM, seed form); the expanded form as DER, the
        // both form as PEM.
        let [_, exp, both] = forms(&seed, &expanded);
        let exp_file = dir.join(format!("{name}.expanded.der"));
        std::fs::write(&exp_file, pkcs8(&oid, &exp)).unwrap();
        let both_file = dir.join(format!("{name}.both.pem"));
        std::fs::write(&both_file, pem("PRIVATE KEY", &pkcs8(&oid, &both))).unwrap();
        for (i, (form, file)) in [
            ("seed", data(&format!("{name}.seed.pem"))),
            ("expanded", exp_file),
            ("both", both_file),
        ]
        .into_iter()
        .enumerate()
        {
            let label = format!("{name}-{form}");
            // One key in three forms: three ids (the default is the key's).
            let id = format!("{ckp:02x}{i:02x}");
            let out: Value = serde_json::from_str(&ok(&import(
                &f,
                "pq",
                &label,
                &file,
                &["--sensitive", "false", "--extractable", "true", "--id", &id],
            )))
            .unwrap();
            assert_eq!(out["objects"][0]["kind"], name.to_uppercase(), "{out}");
            assert_eq!(out["objects"][1]["class"], "public key", "{out}");
            assert_eq!(export_der(&f, "pq", &label), spki, "{label}");
            // The PEM export is the same key.
            let text = ok(&util(
                &f,
                &["export-public", "--token", "pq", "--label", &label],
            ));
            assert_eq!(text, pem("PUBLIC KEY", &spki), "{label}");
        }
    }

    f.start();
    let s = f.user(f.slot_labelled("pq"));
    for (name, ckp, pk_len) in ML_DSA {
        let spki = der(&format!("{name}.spki.der"));
        let (seed, expanded) = ml_dsa_key(name, ckp);
        for form in ["seed", "expanded", "both"] {
            let label = format!("{name}-{form}");
            let private = the(&s, ObjectClass::PRIVATE_KEY, &label);
            let public = the(&s, ObjectClass::PUBLIC_KEY, &label);
            let set = ckp.to_ne_bytes().to_vec();
            assert_eq!(
                bytes(&s, private, AttributeType::ParameterSet),
                Some(set.clone())
            );
            assert_eq!(bytes(&s, public, AttributeType::ParameterSet), Some(set));
            assert_eq!(
                bytes(&s, private, AttributeType::PublicKeyInfo),
                Some(spki.clone()),
                "{label}: the token's CKA_PUBLIC_KEY_INFO"
            );
            assert_eq!(
                bytes(&s, public, AttributeType::Value),
                Some(spki_key(&spki, pk_len)),
                "{label}"
            );
            // The seed where the file had one; the expanded key always.
            let want_seed = (form != "expanded").then(|| seed.clone());
            assert_eq!(
                bytes(&s, private, AttributeType::Seed),
                want_seed,
                "{label}"
            );
            assert_eq!(
                bytes(&s, private, AttributeType::Value),
                Some(expanded.clone()),
                "{label}"
            );
            let m = Mechanism::MlDsa(pure(b"util"));
            let sig = s.sign(&m, private, b"imported").unwrap();
            s.verify(&m, public, b"imported", &sig)
                .unwrap_or_else(|e| panic!("{label}: {e}"));
        }
    }
}

#[test]
fn ml_dsa_files_that_are_wrong_are_refused_in_one_line_and_leave_nothing() {
    let mut f = Fixture::new();
    f.stop();
    ok(&util(&f, &init_args("pq")));
    let dir = f.dir.path().join("files");
    std::fs::create_dir_all(&dir).unwrap();
    let (name, ckp, _) = ML_DSA[1];
    let oid = spki_oid(&der(&format!("{name}.spki.der")));
    let (seed, expanded) = ml_dsa_key(name, ckp);
    let mut other_seed = seed.clone();
    other_seed[5] ^= 0x40;
    // ρ and K agree with the seed (the tool's own check passes), the rest
    // of the expanded key does not (the token's check refuses it).
    let mut late = expanded.clone();
    late[3000] ^= 1;
    let mut oid_32 = oid.clone();
    *oid_32.last_mut().unwrap() = 32;
    let mut with_null = vec![0x02, 0x01, 0x00];
    let mut alg = tlv(0x06, &oid);
    alg.extend_from_slice(&[0x05, 0x00]);
    with_null.extend(tlv(0x30, &alg));
    with_null.extend(tlv(0x04, &tlv(0x80, &seed)));
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "seed and expanded key of two keys",
            pkcs8(&oid, &forms(&other_seed, &expanded)[2]),
            "seed and expanded key disagree",
        ),
        (
            "expanded key differing past rho and K",
            pkcs8(&oid, &forms(&seed, &late)[2]),
            "not valid for the token",
        ),
        (
            "a 31-byte seed",
            pkcs8(&oid, &tlv(0x80, &seed[1..])),
            "seed is 31 bytes, not 32",
        ),
        (
            "a short expanded key",
            pkcs8(&oid, &tlv(0x04, &expanded[1..])),
            "expanded private key is 4031 bytes, not 4032",
        ),
        (
            "an ML-DSA-44 expanded key under ML-DSA-65's OID",
            pkcs8(&oid, &tlv(0x04, &ml_dsa_key("ml-dsa-44", CKP_ML_DSA_44).1)),
            "4032",
        ),
        (
            "an unknown arc",
            pkcs8(&oid_32, &tlv(0x80, &seed)),
            "2.16.840.1.101.3.4.3.32 are not supported",
        ),
        ("parameters", tlv(0x30, &with_null), "has parameters"),
        (
            "a [0] seed constructed",
            pkcs8(&oid, &tlv(0xa0, &tlv(0x04, &seed))),
            "none of RFC 9881's seed, expandedKey or both forms",
        ),
        (
            "a hostile length",
            pkcs8(&oid, &[0x04, 0x84, 0x7f, 0xff, 0xff, 0xff]),
            "none of",
        ),
    ];
    for (what, file, says) in cases {
        let path = dir.join("bad.der");
        std::fs::write(&path, &file).unwrap();
        let err = refused(&import(&f, "pq", "bad", &path, &[]));
        assert!(err.contains(says), "{what}: {err}");
    }
    assert_eq!(objects_on(&f, "pq"), serde_json::json!({}));
}

/// Imports `files` (label, file, sensitive, extractable) into the source
/// token "src", migrates it to "dst", and returns the report.
fn migrate_imported(
    f: &mut Fixture,
    files: &[(&str, PathBuf, bool, bool)],
) -> (Option<i32>, Value) {
    f.stop();
    ok(&util(f, &init_args("src")));
    ok(&util(f, &init_args("dst")));
    for (n, (label, file, sensitive, extractable)) in files.iter().enumerate() {
        ok(&import(
            f,
            "src",
            label,
            file,
            &[
                "--sensitive",
                &sensitive.to_string(),
                "--extractable",
                &extractable.to_string(),
                "--id",
                &format!("{:02x}", n + 1),
            ],
        ));
    }
    let module = module_path();
    let o = util(
        f,
        &[
            "--json",
            "migrate",
            "--from-module",
            module.to_str().unwrap(),
            "--from-token",
            "src",
            "--pin-env",
            "PIN_USER",
            "--to-token",
            "dst",
        ],
    );
    let v: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stderr)));
    (o.status.code(), v)
}

/// The fate of `class` `label` in a migrate report, and its reason.
fn fate(report: &Value, label: &str, class: &str) -> (String, String) {
    let o = report["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["label"] == label && o["class"] == class)
        .unwrap_or_else(|| panic!("{class} {label} in {report}"));
    (
        o["fate"].as_str().unwrap().to_string(),
        o["reason"].as_str().unwrap_or_default().to_string(),
    )
}

#[test]
fn ml_dsa_keys_migrate_between_our_tokens_by_wrapping_and_by_value() {
    let mut f = Fixture::new();
    let dir = f.dir.path().join("files");
    std::fs::create_dir_all(&dir).unwrap();
    let (name, ckp, _) = ML_DSA[1];
    let oid = spki_oid(&der(&format!("{name}.spki.der")));
    let (_, expanded) = ml_dsa_key(name, ckp);
    let exp_file = dir.join("expanded.der");
    std::fs::write(&exp_file, pkcs8(&oid, &tlv(0x04, &expanded))).unwrap();
    let (code, report) = migrate_imported(
        &mut f,
        &[
            ("wrapped", data("ml-dsa-65.seed.pem"), true, true),
            ("plain", data("ml-dsa-44.seed.pem"), false, true),
            ("locked", data("ml-dsa-87.seed.pem"), true, false),
            // Without its seed the key has no RFC 9881 form to wrap in.
            ("no-seed", exp_file, true, true),
        ],
    );
    assert_eq!(code, Some(1), "two keys cannot leave: {report}");
    assert_eq!(
        fate(&report, "wrapped", "private key").0,
        "moved_wrapped",
        "{report}"
    );
    assert_eq!(fate(&report, "plain", "private key").0, "moved");
    for label in ["wrapped", "plain", "locked", "no-seed"] {
        assert_eq!(fate(&report, label, "public key").0, "moved", "{label}");
    }
    let (locked, why) = fate(&report, "locked", "private key");
    assert_eq!(locked, "not_movable");
    assert!(why.contains("not extractable"), "{why}");
    let (no_seed, why) = fate(&report, "no-seed", "private key");
    assert_eq!(no_seed, "not_movable");
    assert!(why.contains("KeyNotWrappable"), "{why}");
    assert_eq!(report["moved"], 6, "{report}");

    // The copies are the same keys, with the same protection.
    f.start();
    let src = f.user(f.slot_labelled("src"));
    let dst = f.user(f.slot_labelled("dst"));
    for label in ["wrapped", "plain"] {
        let m = Mechanism::MlDsa(pure(b""));
        let sig = dst
            .sign(&m, the(&dst, ObjectClass::PRIVATE_KEY, label), b"migrated")
            .unwrap();
        src.verify(
            &m,
            the(&src, ObjectClass::PUBLIC_KEY, label),
            b"migrated",
            &sig,
        )
        .unwrap_or_else(|e| panic!("{label}: {e}"));
        let private = |s: &Session| {
            let h = the(s, ObjectClass::PRIVATE_KEY, label);
            s.get_attributes(
                h,
                &[
                    AttributeType::KeyType,
                    AttributeType::ParameterSet,
                    AttributeType::Sensitive,
                    AttributeType::Extractable,
                    AttributeType::PublicKeyInfo,
                ],
            )
            .unwrap()
        };
        assert_eq!(private(&dst), private(&src), "{label}");
    }
    assert_eq!(
        bytes(
            &dst,
            the(&dst, ObjectClass::PRIVATE_KEY, "plain"),
            AttributeType::Seed
        ),
        Some(der("ml-dsa-44.seed.pem")[22..].to_vec())
    );
    assert!(
        dst.find_objects(&[
            Attribute::Class(ObjectClass::PRIVATE_KEY),
            Attribute::KeyType(KeyType::ML_DSA),
            Attribute::Label(b"locked".to_vec()),
        ])
        .unwrap()
        .is_empty()
    );
}

/// The three ML-KEM sets: name, `CKP_*`, ek length; 768 and 1024 written
/// by python (PEM), 512 by RustCrypto (DER).
const ML_KEM: [(&str, &str, CK_ULONG, usize); 3] = [
    ("ml-kem-512", "ml-kem-512.seed.der", CKP_ML_KEM_512, 800),
    ("ml-kem-768", "ml-kem-768.seed.pem", CKP_ML_KEM_768, 1184),
    ("ml-kem-1024", "ml-kem-1024.seed.pem", CKP_ML_KEM_1024, 1568),
];

#[test]
fn ml_kem_keys_in_each_form_import_export_and_decapsulate() {
    let mut f = Fixture::new();
    f.stop();
    ok(&util(&f, &init_args("pq")));
    for (name, seed_file, ckp, _) in ML_KEM {
        let spki = der(&format!("{name}.spki.der"));
        for (i, (form, file)) in [
            ("seed", seed_file.to_string()),
            ("expanded", format!("{name}.expanded.der")),
            ("both", format!("{name}.both.der")),
        ]
        .into_iter()
        .enumerate()
        {
            let label = format!("{name}-{form}");
            let id = format!("{ckp:02x}{i:02x}");
            let out: Value = serde_json::from_str(&ok(&import(
                &f,
                "pq",
                &label,
                &data(&file),
                &["--sensitive", "false", "--extractable", "true", "--id", &id],
            )))
            .unwrap();
            assert_eq!(out["objects"][0]["kind"], name.to_uppercase(), "{out}");
            assert_eq!(export_der(&f, "pq", &label), spki, "{label}");
        }
    }
    f.start();
    let s = f.user(f.slot_labelled("pq"));
    for (name, seed_file, ckp, ek_len) in ML_KEM {
        let spki = der(&format!("{name}.spki.der"));
        let seed = der(seed_file)[22..].to_vec();
        // dk is 768k + 96 bytes for ek's 384k + 32 (FIPS 203 §8).
        let both = der(&format!("{name}.both.der"));
        let dk = both[both.len() - (2 * ek_len + 32)..].to_vec();
        for form in ["seed", "expanded", "both"] {
            let label = format!("{name}-{form}");
            let private = the(&s, ObjectClass::PRIVATE_KEY, &label);
            let public = the(&s, ObjectClass::PUBLIC_KEY, &label);
            let set = ckp.to_ne_bytes().to_vec();
            assert_eq!(
                bytes(&s, private, AttributeType::ParameterSet),
                Some(set.clone())
            );
            assert_eq!(bytes(&s, public, AttributeType::ParameterSet), Some(set));
            assert_eq!(
                bytes(&s, public, AttributeType::Value),
                Some(spki_key(&spki, ek_len)),
                "{label}"
            );
            let want_seed = (form != "expanded").then(|| seed.clone());
            assert_eq!(
                bytes(&s, private, AttributeType::Seed),
                want_seed,
                "{label}"
            );
            let value = bytes(&s, private, AttributeType::Value);
            if form != "seed" || value.is_some() {
                assert_eq!(value, Some(dk.clone()), "{label}");
            }
            // Encapsulation to the public key, decapsulation with the
            // private one: the same shared secret.
            let secret = [
                Attribute::Class(ObjectClass::SECRET_KEY),
                Attribute::KeyType(KeyType::GENERIC_SECRET),
                Attribute::Token(false),
                Attribute::Sensitive(false),
                Attribute::Extractable(true),
            ];
            let (ct, ss1) = s
                .encapsulate_key(&Mechanism::MlKem, public, &secret)
                .unwrap();
            let ss2 = s
                .decapsulate_key(&Mechanism::MlKem, private, &secret, &ct)
                .unwrap();
            assert_eq!(
                bytes(&s, ss1, AttributeType::Value),
                bytes(&s, ss2, AttributeType::Value),
                "{label}"
            );
        }
    }
}

#[test]
fn ml_kem_files_that_are_wrong_are_refused_and_keys_migrate() {
    let mut f = Fixture::new();
    f.stop();
    ok(&util(&f, &init_args("pq")));
    let dir = f.dir.path().join("files");
    std::fs::create_dir_all(&dir).unwrap();
    let both = der("ml-kem-768.both.der");
    let mut flipped = both.clone();
    // The last byte of z: the seed (d‖z) and dk disagree.
    *flipped.last_mut().unwrap() ^= 1;
    let path = dir.join("bad.der");
    std::fs::write(&path, &flipped).unwrap();
    let err = refused(&import(&f, "pq", "bad", &path, &[]));
    assert!(err.contains("disagree"), "{err}");
    assert_eq!(objects_on(&f, "pq"), serde_json::json!({}));

    let (code, report) = migrate_imported(
        &mut f,
        &[
            ("wrapped", data("ml-kem-768.seed.pem"), true, true),
            ("plain", data("ml-kem-1024.both.der"), false, true),
            ("locked", data("ml-kem-512.seed.der"), true, false),
        ],
    );
    assert_eq!(code, Some(1), "{report}");
    assert_eq!(fate(&report, "wrapped", "private key").0, "moved_wrapped");
    assert_eq!(fate(&report, "plain", "private key").0, "moved");
    assert_eq!(fate(&report, "locked", "private key").0, "not_movable");
    f.start();
    let src = f.user(f.slot_labelled("src"));
    let dst = f.user(f.slot_labelled("dst"));
    for label in ["wrapped", "plain"] {
        let secret = [
            Attribute::Class(ObjectClass::SECRET_KEY),
            Attribute::KeyType(KeyType::GENERIC_SECRET),
            Attribute::Token(false),
            Attribute::Sensitive(false),
            Attribute::Extractable(true),
        ];
        let (ct, ss1) = src
            .encapsulate_key(
                &Mechanism::MlKem,
                the(&src, ObjectClass::PUBLIC_KEY, label),
                &secret,
            )
            .unwrap();
        let ss2 = dst
            .decapsulate_key(
                &Mechanism::MlKem,
                the(&dst, ObjectClass::PRIVATE_KEY, label),
                &secret,
                &ct,
            )
            .unwrap();
        assert_eq!(
            bytes(&src, ss1, AttributeType::Value),
            bytes(&dst, ss2, AttributeType::Value),
            "{label}"
        );
    }
}

/// The twelve SLH-DSA sets: fixture name, `CKP_*`, n.
const SLH_DSA: [(&str, CK_ULONG, usize); 12] = [
    ("slh-dsa-sha2-128s", CKP_SLH_DSA_SHA2_128S, 16),
    ("slh-dsa-sha2-128f", CKP_SLH_DSA_SHA2_128F, 16),
    ("slh-dsa-sha2-192s", CKP_SLH_DSA_SHA2_192S, 24),
    ("slh-dsa-sha2-192f", CKP_SLH_DSA_SHA2_192F, 24),
    ("slh-dsa-sha2-256s", CKP_SLH_DSA_SHA2_256S, 32),
    ("slh-dsa-sha2-256f", CKP_SLH_DSA_SHA2_256F, 32),
    ("slh-dsa-shake-128s", CKP_SLH_DSA_SHAKE_128S, 16),
    ("slh-dsa-shake-128f", CKP_SLH_DSA_SHAKE_128F, 16),
    ("slh-dsa-shake-192s", CKP_SLH_DSA_SHAKE_192S, 24),
    ("slh-dsa-shake-192f", CKP_SLH_DSA_SHAKE_192F, 24),
    ("slh-dsa-shake-256s", CKP_SLH_DSA_SHAKE_256S, 32),
    ("slh-dsa-shake-256f", CKP_SLH_DSA_SHAKE_256F, 32),
];

#[test]
fn slh_dsa_keys_of_every_set_import_export_sign_and_migrate() {
    let mut f = Fixture::new();
    f.stop();
    ok(&util(&f, &init_args("pq")));
    for (name, _, _) in SLH_DSA {
        let out: Value = serde_json::from_str(&ok(&import(
            &f,
            "pq",
            name,
            &data(&format!("{name}.der")),
            &["--sensitive", "false", "--extractable", "true"],
        )))
        .unwrap();
        assert_eq!(out["objects"][1]["class"], "public key", "{out}");
        assert_eq!(
            export_der(&f, "pq", name),
            der(&format!("{name}.spki.der")),
            "{name}"
        );
    }
    // A private key one byte short is refused before the token sees it
    // (whether the token recomputes PK.root from the seeds is its own
    // business: FIPS 205 does not ask it to).
    let good = der("slh-dsa-shake-128f.der");
    let short = pkcs8(
        &spki_oid(&der("slh-dsa-shake-128f.spki.der")),
        &good[good.len() - 63..],
    );
    let path = f.dir.path().join("bad.der");
    std::fs::write(&path, &short).unwrap();
    let err = refused(&import(&f, "pq", "bad", &path, &[]));
    assert!(err.contains("63 bytes, not 64"), "{err}");

    f.start();
    let s = f.user(f.slot_labelled("pq"));
    for (name, ckp, n) in SLH_DSA {
        let sk = der(&format!("{name}.der"));
        let private = the(&s, ObjectClass::PRIVATE_KEY, name);
        let public = the(&s, ObjectClass::PUBLIC_KEY, name);
        let set = ckp.to_ne_bytes().to_vec();
        assert_eq!(
            bytes(&s, private, AttributeType::ParameterSet),
            Some(set.clone())
        );
        assert_eq!(bytes(&s, public, AttributeType::ParameterSet), Some(set));
        assert_eq!(
            bytes(&s, private, AttributeType::Value),
            Some(sk[sk.len() - 4 * n..].to_vec())
        );
        assert_eq!(
            bytes(&s, public, AttributeType::Value),
            Some(sk[sk.len() - 2 * n..].to_vec())
        );
        if name.ends_with('f') {
            let m = Mechanism::SlhDsa(pure(b""));
            let sig = s.sign(&m, private, b"imported").unwrap();
            s.verify(&m, public, b"imported", &sig)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }
    drop(s);
    drop(f);

    let mut g = Fixture::new();
    let (code, report) = migrate_imported(
        &mut g,
        &[
            ("wrapped", data("slh-dsa-sha2-128f.der"), true, true),
            ("plain", data("slh-dsa-shake-192f.der"), false, true),
        ],
    );
    assert_eq!(code, Some(0), "{report}");
    assert_eq!(fate(&report, "wrapped", "private key").0, "moved_wrapped");
    assert_eq!(fate(&report, "plain", "private key").0, "moved");
}
