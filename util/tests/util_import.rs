//! `dalek-pkcs11-util import`, `export-public` and `export-cert` on key and
//! certificate files OpenSSL wrote in every form the tool reads (PKCS#8,
//! PKCS#1, SEC1; PEM and DER), checked against OpenSSL itself: the public
//! key the token exports is the one OpenSSL derives from the file, a
//! signature the imported key makes verifies under OpenSSL, and the
//! certificate comes back byte for byte.

#[path = "../../provider/tests/common/mod.rs"]
mod common;
mod tool;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use cryptoki::mechanism::Mechanism;
use cryptoki::object::{Attribute, AttributeType, ObjectClass};
use serde_json::Value;
use tool::*;

/// Runs `openssl` with `args` in `dir`; panics with its stderr on failure.
fn openssl(dir: &Path, args: &[&str]) -> Vec<u8> {
    let o = Command::new("openssl")
        .current_dir(dir)
        .args(args)
        .output()
        .expect("openssl runs (scripts/install-deps installs it)");
    assert!(
        o.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o.stdout
}

/// The key files: (label, file, openssl's "-inform" of it, what import says).
fn key_files(dir: &Path) -> Vec<(&'static str, PathBuf, &'static str, &'static str)> {
    let o = |args: &[&str]| openssl(dir, args);
    o(&[
        "genpkey",
        "-algorithm",
        "RSA",
        "-pkeyopt",
        "rsa_keygen_bits:2048",
        "-out",
        "rsa-pkcs8.pem",
    ]);
    o(&["genrsa", "-traditional", "-out", "rsa-pkcs1.pem", "2048"]);
    o(&[
        "ecparam",
        "-genkey",
        "-name",
        "prime256v1",
        "-noout",
        "-out",
        "p256-sec1.pem",
    ]);
    // With the curve in a separate EC PARAMETERS block, as ecparam writes it.
    o(&[
        "ecparam",
        "-genkey",
        "-name",
        "secp384r1",
        "-out",
        "p384-sec1-params.pem",
    ]);
    o(&[
        "genpkey",
        "-algorithm",
        "EC",
        "-pkeyopt",
        "ec_paramgen_curve:P-521",
        "-outform",
        "DER",
        "-out",
        "p521-pkcs8.der",
    ]);
    o(&[
        "ecparam",
        "-genkey",
        "-name",
        "secp256k1",
        "-noout",
        "-out",
        "k256.pem",
    ]);
    o(&[
        "ec",
        "-in",
        "k256.pem",
        "-outform",
        "DER",
        "-out",
        "k256-sec1.der",
    ]);
    o(&["genpkey", "-algorithm", "ed25519", "-out", "ed25519.pem"]);
    o(&[
        "genpkey",
        "-algorithm",
        "x25519",
        "-outform",
        "DER",
        "-out",
        "x25519.der",
    ]);
    o(&["genpkey", "-algorithm", "ed448", "-out", "ed448.pem"]);
    o(&[
        "genpkey",
        "-algorithm",
        "x448",
        "-outform",
        "DER",
        "-out",
        "x448.der",
    ]);
    vec![
        ("rsa-pkcs8", dir.join("rsa-pkcs8.pem"), "PEM", "RSA 2048"),
        ("rsa-pkcs1", dir.join("rsa-pkcs1.pem"), "PEM", "RSA 2048"),
        ("p256", dir.join("p256-sec1.pem"), "PEM", "EC P-256"),
        ("p384", dir.join("p384-sec1-params.pem"), "PEM", "EC P-384"),
        ("p521", dir.join("p521-pkcs8.der"), "DER", "EC P-521"),
        ("k256", dir.join("k256-sec1.der"), "DER", "EC secp256k1"),
        ("ed25519", dir.join("ed25519.pem"), "PEM", "Ed25519"),
        ("x25519", dir.join("x25519.der"), "DER", "X25519"),
        ("ed448", dir.join("ed448.pem"), "PEM", "Ed448"),
        ("x448", dir.join("x448.der"), "DER", "X448"),
    ]
}

fn import(f: &Fixture, label: &str, file: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "--json",
        "import",
        "--token",
        "keys",
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

#[test]
fn keys_and_certificates_of_every_form_import_and_export_as_openssl_sees_them() {
    let mut f = Fixture::new();
    f.stop();
    ok(&util(&f, &init_args("keys")));
    let dir = f.dir.path().join("files");
    std::fs::create_dir_all(&dir).unwrap();
    let files = key_files(&dir);
    let mut ids = std::collections::HashMap::new();
    for (label, file, inform, kind) in &files {
        let made: Value = serde_json::from_str(&ok(&import(&f, label, file, &[]))).unwrap();
        let objects = made["objects"].as_array().unwrap();
        assert_eq!(objects.len(), 2, "{made}");
        assert_eq!(objects[0]["class"], "private key", "{made}");
        assert_eq!(objects[1]["class"], "public key", "{made}");
        assert_eq!(objects[0]["kind"], *kind, "{made}");
        ids.insert(*label, made["id"].clone());
        // The exported public key is the one OpenSSL derives from the file.
        let exported = ok(&util(
            &f,
            &["export-public", "--token", "keys", "--label", label],
        ));
        let public = |format: &str| {
            let file = file.to_str().unwrap();
            openssl(
                &dir,
                &[
                    "pkey", "-inform", inform, "-in", file, "-pubout", "-outform", format,
                ],
            )
        };
        let expected = public("PEM");
        assert_eq!(exported.as_bytes(), &expected[..], "{label}");
        // By default the id is the key identifier of that public key.
        let spki_der = public("DER");
        assert_eq!(made["id"].as_str().unwrap().len(), 40, "{made}");
        let der = ok(&util(
            &f,
            &[
                "export-public",
                "--token",
                "keys",
                "--id",
                made["id"].as_str().unwrap(),
                "--der",
                "--out",
                dir.join(format!("{label}.pub.der")).to_str().unwrap(),
            ],
        ));
        assert!(der.is_empty());
        assert_eq!(
            std::fs::read(dir.join(format!("{label}.pub.der"))).unwrap(),
            spki_der
        );
    }
    // The same label again is refused, and nothing is added.
    let again = refused(&import(&f, "p256", &files[2].1, &[]));
    assert!(again.contains("already on the token"), "{again}");
    // A certificate for the P-256 key gets the key's id without --id, and
    // comes back as it went in.
    openssl(
        &dir,
        &[
            "req",
            "-x509",
            "-key",
            "p256-sec1.pem",
            "-subj",
            "/CN=imported",
            "-days",
            "2",
            "-out",
            "p256.crt",
        ],
    );
    let cert: Value =
        serde_json::from_str(&ok(&import(&f, "p256", &dir.join("p256.crt"), &[]))).unwrap();
    let v: Value = serde_json::from_str(&ok(&util(&f, &["--json", "list"]))).unwrap();
    assert_eq!(v["tokens"][0]["objects"]["certificate"], 1, "{v}");
    assert_eq!(v["tokens"][0]["objects"]["private key"], files.len(), "{v}");
    let key_id = ids["p256"].clone();
    assert_eq!(cert["id"], key_id, "{cert}");
    let back = ok(&util(
        &f,
        &["export-cert", "--token", "keys", "--label", "p256"],
    ));
    let doc: Value = serde_json::from_str(&ok(&util(
        &f,
        &[
            "--json",
            "export-cert",
            "--token",
            "keys",
            "--label",
            "p256",
        ],
    )))
    .unwrap();
    assert_eq!(doc["pem"].as_str().unwrap(), back, "{doc}");
    assert_eq!(
        back.as_bytes(),
        &std::fs::read(dir.join("p256.crt")).unwrap()[..]
    );
    // A key and its certificate in one file; a mismatched pair is refused.
    openssl(
        &dir,
        &[
            "req", "-x509", "-newkey", "ed25519", "-nodes", "-keyout", "both.key", "-subj",
            "/CN=both", "-days", "2", "-out", "both.crt",
        ],
    );
    let both = dir.join("both.pem");
    let mut text = std::fs::read(dir.join("both.key")).unwrap();
    text.extend(std::fs::read(dir.join("both.crt")).unwrap());
    std::fs::write(&both, &text).unwrap();
    let made: Value =
        serde_json::from_str(&ok(&import(&f, "both", &both, &["--id", "b0:7f"]))).unwrap();
    assert_eq!(made["id"], "b07f");
    assert_eq!(made["objects"].as_array().unwrap().len(), 3, "{made}");
    let mut mixed = std::fs::read(&files[0].1).unwrap();
    mixed.extend(std::fs::read(dir.join("both.crt")).unwrap());
    std::fs::write(dir.join("mixed.pem"), &mixed).unwrap();
    let no = refused(&import(&f, "mixed", &dir.join("mixed.pem"), &[]));
    assert!(no.contains("not for the private key"), "{no}");
    // Encrypted PKCS#8 (PBES2: PBKDF2 or scrypt, AES-CBC) is read with the
    // passphrase from --file-pin-env; without it, or with a wrong one, one
    // line says so and nothing is made.
    let o = |args: &[&str]| openssl(&dir, args);
    o(&[
        "genpkey",
        "-algorithm",
        "EC",
        "-pkeyopt",
        "ec_paramgen_curve:P-384",
        "-out",
        "enc-plain.pem",
    ]);
    o(&[
        "pkcs8",
        "-topk8",
        "-in",
        "enc-plain.pem",
        "-passout",
        "pass:secret",
        "-out",
        "enc.pem",
    ]);
    o(&[
        "genpkey",
        "-algorithm",
        "ed25519",
        "-out",
        "enc-ed25519.pem",
    ]);
    o(&[
        "pkcs8",
        "-topk8",
        "-scrypt",
        "-in",
        "enc-ed25519.pem",
        "-passout",
        "pass:secret",
        "-outform",
        "DER",
        "-out",
        "enc-scrypt.der",
    ]);
    assert!(refused(&import(&f, "enc", &dir.join("enc.pem"), &[])).contains("--file-pin-env"));
    // SAFETY: the fixture's lock serialises the environment's users.
    unsafe {
        std::env::set_var("KEY_PASS", "secret");
        std::env::set_var("WRONG_PASS", "guess");
    }
    let wrong = refused(&import(
        &f,
        "enc",
        &dir.join("enc.pem"),
        &["--file-pin-env", "WRONG_PASS"],
    ));
    assert!(wrong.contains("could not be decrypted"), "{wrong}");
    for (label, file, plain) in [
        ("enc", "enc.pem", "enc-plain.pem"),
        ("enc-scrypt", "enc-scrypt.der", "enc-ed25519.pem"),
    ] {
        ok(&import(
            &f,
            label,
            &dir.join(file),
            &["--file-pin-env", "KEY_PASS"],
        ));
        let exported = ok(&util(
            &f,
            &["export-public", "--token", "keys", "--label", label],
        ));
        assert_eq!(
            exported.as_bytes(),
            &o(&["pkey", "-in", plain, "-pubout"])[..],
            "{label}"
        );
    }
    std::fs::write(dir.join("junk.bin"), b"\x30\x03\x02\x01").unwrap();
    refused(&import(&f, "junk", &dir.join("junk.bin"), &[]));
    refused(&import(&f, "missing", &dir.join("nothing-here.pem"), &[]));
    std::fs::write(dir.join("huge.pem"), vec![b'A'; (1 << 20) + 1]).unwrap();
    let huge = refused(&import(&f, "huge", &dir.join("huge.pem"), &[]));
    assert!(huge.contains("at most 1 MiB"), "{huge}");
    refused(&util(
        &f,
        &["export-public", "--token", "keys", "--label", "nope"],
    ));
    refused(&util(
        &f,
        &["export-cert", "--token", "keys", "--label", "rsa-pkcs8"],
    ));

    // Through the module, as a consumer: the private keys are sensitive
    // and not extractable unless asked for, and they sign what OpenSSL
    // verifies with the exported public keys.
    f.start();
    let slot = f.p().get_slots_with_token().unwrap()[0];
    let s = f.user(slot);
    let private = |label: &str| {
        s.find_objects(&[
            Attribute::Class(ObjectClass::PRIVATE_KEY),
            Attribute::Label(label.as_bytes().to_vec()),
        ])
        .unwrap()[0]
    };
    let flags = |label: &str| {
        s.get_attributes(
            private(label),
            &[AttributeType::Sensitive, AttributeType::Extractable],
        )
        .unwrap()
    };
    assert_eq!(
        flags("p256"),
        vec![Attribute::Sensitive(true), Attribute::Extractable(false)]
    );
    let cert_id = s
        .get_attributes(
            s.find_objects(&[Attribute::Class(ObjectClass::CERTIFICATE)])
                .unwrap()[0],
            &[AttributeType::Id],
        )
        .unwrap();
    assert_eq!(
        cert_id,
        vec![Attribute::Id(unhex(key_id.as_str().unwrap()))]
    );
    let data = b"signed on the token, verified by OpenSSL";
    std::fs::write(dir.join("data"), data).unwrap();
    for (label, mech, args) in [
        (
            "rsa-pkcs1",
            Mechanism::Sha256RsaPkcs,
            &[
                "dgst",
                "-sha256",
                "-verify",
                "rsa-pkcs1.pub",
                "-signature",
                "sig",
                "data",
            ][..],
        ),
        (
            "ed25519",
            Mechanism::Eddsa(cryptoki::mechanism::eddsa::EddsaParams::new(
                cryptoki::mechanism::eddsa::EddsaSignatureScheme::Pure,
            )),
            &[
                "pkeyutl",
                "-verify",
                "-pubin",
                "-inkey",
                "ed25519.pub",
                "-rawin",
                "-in",
                "data",
                "-sigfile",
                "sig",
            ][..],
        ),
    ] {
        let sig = s.sign(&mech, private(label), data).unwrap();
        std::fs::write(dir.join("sig"), sig).unwrap();
        std::fs::write(
            dir.join(format!("{label}.pub")),
            openssl(
                &dir,
                &[
                    "pkey",
                    "-in",
                    files
                        .iter()
                        .find(|k| k.0 == label)
                        .unwrap()
                        .1
                        .to_str()
                        .unwrap(),
                    "-pubout",
                ],
            ),
        )
        .unwrap();
        openssl(&dir, args);
    }
    drop(s);
    f.stop();
    // --sensitive false --extractable true: the scalar reads back as the file has it.
    openssl(
        &dir,
        &[
            "ecparam",
            "-genkey",
            "-name",
            "prime256v1",
            "-noout",
            "-out",
            "open.pem",
        ],
    );
    ok(&import(
        &f,
        "open",
        &dir.join("open.pem"),
        &[
            "--sensitive",
            "false",
            "--extractable",
            "true",
            "--no-public-key",
        ],
    ));
    f.start();
    let slot = f.p().get_slots_with_token().unwrap()[0];
    let s = f.user(slot);
    let k = s
        .find_objects(&[Attribute::Label(b"open".to_vec())])
        .unwrap();
    assert_eq!(k.len(), 1, "--no-public-key made one object");
    let value = match &s.get_attributes(k[0], &[AttributeType::Value]).unwrap()[..] {
        [Attribute::Value(v)] => v.clone(),
        other => panic!("{other:?}"),
    };
    let text =
        String::from_utf8(openssl(&dir, &["ec", "-in", "open.pem", "-text", "-noout"])).unwrap();
    let scalar: String = text
        .split("priv:")
        .nth(1)
        .unwrap()
        .split("pub:")
        .next()
        .unwrap()
        .chars()
        .filter(char::is_ascii_hexdigit)
        .collect();
    let mut scalar = unhex(&scalar);
    while scalar.len() > 32 && scalar[0] == 0 {
        scalar.remove(0);
    }
    assert_eq!(value, scalar);
}

/// DER tag–length–value.
fn tlv(tag: u8, body: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let len = body.len().to_be_bytes();
    let skip = len.iter().take_while(|&&b| b == 0).count();
    if body.len() < 0x80 {
        out.push(body.len() as u8);
    } else {
        out.push(0x80 | (len.len() - skip) as u8);
        out.extend_from_slice(&len[skip..]);
    }
    out.extend_from_slice(body);
    out
}

/// DER `INTEGER` of `v`.
fn integer(v: u64) -> Vec<u8> {
    let bytes = v.to_be_bytes();
    let skip = bytes.iter().take_while(|&&b| b == 0).count().min(7);
    let mut body = bytes[skip..].to_vec();
    if body[0] & 0x80 != 0 {
        body.insert(0, 0);
    }
    tlv(0x02, &body)
}

/// A PKCS#8 `EncryptedPrivateKeyInfo` (RFC 5958 §3) under PBES2 with the
/// key derivation `kdf` (its AlgorithmIdentifier) and AES-256-CBC, over
/// 48 bytes that are no key: what matters is what deriving costs.
fn pbes2_file(kdf: &[u8]) -> Vec<u8> {
    const PBES2: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x05, 0x0d];
    const AES256_CBC: &[u8] = &[0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x01, 0x2a];
    let mut aes = tlv(0x06, AES256_CBC);
    aes.extend(tlv(0x04, &[7; 16]));
    let mut params = kdf.to_vec();
    params.extend(tlv(0x30, &aes));
    let mut alg = tlv(0x06, PBES2);
    alg.extend(tlv(0x30, &params));
    let mut info = tlv(0x30, &alg);
    info.extend(tlv(0x04, &[9; 48]));
    tlv(0x30, &info)
}

/// scrypt's AlgorithmIdentifier (RFC 7914 §7.1) with `N`, `r`, `p`.
fn scrypt_kdf(n: u64, r: u64, p: u64) -> Vec<u8> {
    const SCRYPT: &[u8] = &[0x2b, 0x06, 0x01, 0x04, 0x01, 0xda, 0x47, 0x04, 0x0b];
    let mut params = tlv(0x04, &[1; 16]);
    params.extend(integer(n));
    params.extend(integer(r));
    params.extend(integer(p));
    let mut id = tlv(0x06, SCRYPT);
    id.extend(tlv(0x30, &params));
    tlv(0x30, &id)
}

/// PBKDF2's AlgorithmIdentifier (RFC 8018 §A.2) with HMAC-SHA256.
fn pbkdf2_kdf(iterations: u64) -> Vec<u8> {
    const PBKDF2: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x05, 0x0c];
    const HMAC_SHA256: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x02, 0x09];
    let mut prf = tlv(0x06, HMAC_SHA256);
    prf.extend_from_slice(&[0x05, 0x00]);
    let mut params = tlv(0x04, &[1; 16]);
    params.extend(integer(iterations));
    params.extend(tlv(0x30, &prf));
    let mut id = tlv(0x06, PBKDF2);
    id.extend(tlv(0x30, &params));
    tlv(0x30, &id)
}

#[test]
fn key_files_asking_for_a_costly_kdf_are_refused_before_it_runs_unless_allowed() {
    let mut f = Fixture::new();
    f.stop();
    ok(&util(&f, &init_args("keys")));
    let dir = f.dir.path().join("kdf");
    std::fs::create_dir_all(&dir).unwrap();
    // SAFETY: the fixture's lock serialises the environment's users.
    unsafe { std::env::set_var("KEY_PASS", "fuzz") };
    let pass = ["--file-pin-env", "KEY_PASS"];
    // Before: scrypt N=2^40 aborted the tool on a 1 PiB allocation, N=2^22
    // took 4 GiB, PBKDF2 at 4*10^9 iterations ran for a quarter of an hour,
    // and N=0 panicked in the pkcs5 crate. Each is now one line and exit 2,
    // with or without the passphrase (none is asked for).
    let hostile = [
        (
            "scrypt-2^40",
            scrypt_kdf(1 << 40, 8, 1),
            "need 1073741825 MiB of memory, above the limit of 256 MiB: raise it with --max-kdf-memory",
        ),
        (
            "scrypt-2^22",
            scrypt_kdf(1 << 22, 8, 1),
            "need 4097 MiB of memory, above the limit of 256 MiB",
        ),
        (
            "scrypt-r-p",
            scrypt_kdf(2, 65535, 65535),
            "(N=2^1, r=65535, p=65535) need 524304 MiB of memory",
        ),
        (
            "scrypt-r",
            scrypt_kdf(1 << 10, 65535, 1),
            "--max-kdf-memory",
        ),
        (
            "scrypt-p",
            scrypt_kdf(1 << 14, 8, 65535),
            "mix 1048560 MiB, above the limit of 1024 MiB",
        ),
        (
            "scrypt-n0",
            scrypt_kdf(0, 8, 1),
            "(N=0, r=8, p=1) are invalid",
        ),
        (
            "pbkdf2-4e9",
            pbkdf2_kdf(4_000_000_000),
            "asks for 4000000000 PBKDF2 iterations, above the limit of 10000000: raise it with --max-kdf-iterations",
        ),
    ];
    for (name, kdf, says) in &hostile {
        let der = &pbes2_file(kdf);
        let file = dir.join(format!("{name}.der"));
        std::fs::write(&file, der).unwrap();
        for extra in [&pass[..], &[]] {
            let e = refused(&import(&f, name, &file, extra));
            assert!(e.contains(says), "{name}: {e}");
        }
        let pem = dir.join(format!("{name}.pem"));
        std::fs::write(&pem, pem_text("ENCRYPTED PRIVATE KEY", der)).unwrap();
        let e = refused(&import(&f, name, &pem, &pass));
        assert!(e.contains(says), "{name}: {e}");
    }
    assert!(pbes2_file(&hostile[0].1).len() < 200);
    // The options' ceilings keep even the largest value from reaching an
    // absurd allocation; N=2^40 stays refused at the ceiling.
    let file = dir.join("scrypt-2^40.der");
    let e = refused(&import(&f, "x", &file, &["--max-kdf-memory", "4097"]));
    assert!(e.contains("--max-kdf-memory") && e.contains("4096"), "{e}");
    refused(&import(
        &f,
        "x",
        &file,
        &["--max-kdf-iterations", "100000001"],
    ));
    refused(&import(&f, "x", &file, &["--max-kdf-memory", "0"]));
    let e = refused(&import(&f, "x", &file, &["--max-kdf-memory", "4096"]));
    assert!(e.contains("above the limit of 4096 MiB"), "{e}");
    // Legitimate files OpenSSL writes: refused under a limit below their
    // cost, imported at it. OpenSSL's defaults: PBKDF2 2048 iterations;
    // scrypt N=2^14, r=8, p=1 (16 MiB + 2 KiB).
    let o = |args: &[&str]| openssl(&dir, args);
    o(&["genpkey", "-algorithm", "ed25519", "-out", "plain.pem"]);
    o(&[
        "pkcs8",
        "-topk8",
        "-in",
        "plain.pem",
        "-passout",
        "pass:fuzz",
        "-out",
        "pbkdf2.pem",
    ]);
    o(&[
        "pkcs8",
        "-topk8",
        "-scrypt",
        "-in",
        "plain.pem",
        "-passout",
        "pass:fuzz",
        "-out",
        "scrypt.pem",
    ]);
    let pbkdf2 = dir.join("pbkdf2.pem");
    let e = refused(&import(
        &f,
        "pbkdf2",
        &pbkdf2,
        &[&pass[..], &["--max-kdf-iterations", "2047"]].concat(),
    ));
    assert!(
        e.contains("2048 PBKDF2 iterations, above the limit of 2047"),
        "{e}"
    );
    ok(&import(
        &f,
        "pbkdf2",
        &pbkdf2,
        &[&pass[..], &["--max-kdf-iterations", "2048", "--id", "01"]].concat(),
    ));
    let scrypt = dir.join("scrypt.pem");
    let e = refused(&import(
        &f,
        "scrypt",
        &scrypt,
        &[&pass[..], &["--max-kdf-memory", "16"]].concat(),
    ));
    assert!(
        e.contains("(N=2^14, r=8, p=1) need 17 MiB of memory, above the limit of 16 MiB"),
        "{e}"
    );
    ok(&import(
        &f,
        "scrypt",
        &scrypt,
        &[&pass[..], &["--max-kdf-memory", "17", "--id", "02"]].concat(),
    ));
    // Just above the default PBKDF2 limit (a few seconds to write and read):
    // refused by default, imported when the limit is raised to it.
    o(&[
        "pkcs8",
        "-topk8",
        "-v2",
        "aes-256-cbc",
        "-iter",
        "10000001",
        "-in",
        "plain.pem",
        "-passout",
        "pass:fuzz",
        "-outform",
        "DER",
        "-out",
        "costly.der",
    ]);
    let costly = dir.join("costly.der");
    let e = refused(&import(&f, "costly", &costly, &pass));
    assert!(
        e.contains("10000001 PBKDF2 iterations, above the limit of 10000000"),
        "{e}"
    );
    let made: Value = serde_json::from_str(&ok(&import(
        &f,
        "costly",
        &costly,
        &[
            &pass[..],
            &["--max-kdf-iterations", "10000001", "--id", "03"],
        ]
        .concat(),
    )))
    .unwrap();
    assert_eq!(made["objects"][0]["kind"], "Ed25519", "{made}");
}

/// PEM text of `der` under `label`, 64-character lines.
fn pem_text(label: &str, der: &[u8]) -> String {
    use base64ct::{Base64, Encoding};
    let b64 = Base64::encode_string(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for chunk in b64.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(chunk).unwrap());
        out.push('\n');
    }
    out + &format!("-----END {label}-----\n")
}
