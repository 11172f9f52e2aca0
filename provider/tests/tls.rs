//! The TLS 1.2 mechanisms through the module (mechanisms spec 3.0 §2.42):
//! known answers from the CAVS TLS 1.2 SHA-256 vectors (master secret and
//! key block, `vectors/tls12-prf-cavs.txt`) and ACVP RFC 7627 (extended
//! master secret and key block, all 60 tests, `vectors/tls12-ems-acvp.txt`),
//! ACVP kdf-components TLS v1.2 (SHA-256/384/512 master secret and key
//! block, `vectors/tls12-kdf-components-acvp.txt`), and a
//! cross-check of the master secret, `CKM_TLS_KDF` and `CKM_TLS_MAC`
//! against the OpenSSL command line (`openssl kdf TLS1-PRF`), an
//! implementation nobody here wrote.

mod common;
#[path = "common/tls_calls.rs"]
mod tls_calls;

use common::*;
use cryptoki::object::{Attribute, AttributeType, KeyType, ObjectClass, ObjectHandle};
use cryptoki::session::Session;
use cryptoki_sys::*;
use tls_calls as t;

/// A readable session generic secret holding `value`, for derivation.
fn readable_secret(s: &Session, value: &[u8]) -> ObjectHandle {
    s.create_object(&[
        Attribute::Class(ObjectClass::SECRET_KEY),
        Attribute::KeyType(KeyType::GENERIC_SECRET),
        Attribute::Token(false),
        Attribute::Sensitive(false),
        Attribute::Extractable(true),
        Attribute::Derive(true),
        Attribute::Value(value.to_vec()),
    ])
    .unwrap()
}

/// The template of a readable derived generic secret.
fn readable() -> Vec<Attribute> {
    vec![
        Attribute::Class(ObjectClass::SECRET_KEY),
        Attribute::KeyType(KeyType::GENERIC_SECRET),
        Attribute::Token(false),
        Attribute::Sensitive(false),
        Attribute::Extractable(true),
    ]
}

fn value(s: &Session, h: CK_OBJECT_HANDLE) -> Vec<u8> {
    // SAFETY: a handle the module returned.
    let h = unsafe { ObjectHandle::new_from_raw(h) };
    match &s.get_attributes(h, &[AttributeType::Value]).unwrap()[0] {
        Attribute::Value(v) => v.clone(),
        other => panic!("{other:?}"),
    }
}

/// Records of `key = value` lines, one per blank-line or `COUNT`/`tcId`
/// start; `[...]` lines set the section, stored under `section`.
fn records(text: &str, start: &str) -> Vec<std::collections::HashMap<String, String>> {
    let mut out = Vec::new();
    let mut section = String::new();
    let mut cur: Option<std::collections::HashMap<String, String>> = None;
    for line in text.lines().map(str::trim) {
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        if let Some(sec) = line.strip_prefix('[') {
            if !sec.contains('=') {
                section = sec.trim_end_matches(']').to_string();
            }
            continue;
        }
        let Some((k, v)) = line.split_once('=') else {
            continue;
        };
        let (k, v) = (k.trim(), v.trim());
        if k == start {
            out.extend(cur.take());
            let mut r = std::collections::HashMap::new();
            r.insert("section".to_string(), section.clone());
            cur = Some(r);
        }
        if let Some(r) = cur.as_mut() {
            r.insert(k.to_string(), v.to_string());
        }
    }
    out.extend(cur);
    out
}

/// The key block of `master` through `CKM_TLS12_KEY_AND_MAC_DERIVE` with
/// the split (mac, key, iv) in bytes: the four keys read back, then the IVs.
fn key_block_by_split(
    s: &Session,
    master: ObjectHandle,
    prf: CK_MECHANISM_TYPE,
    (m, k, i): (usize, usize, usize),
    client: &[u8],
    server: &[u8],
) -> Vec<u8> {
    let km = t::key_mat(
        s,
        CKM_TLS12_KEY_AND_MAC_DERIVE,
        master,
        prf,
        (
            (m * 8) as CK_ULONG,
            (k * 8) as CK_ULONG,
            (i * 8) as CK_ULONG,
        ),
        client,
        server,
        &readable(),
    )
    .unwrap();
    let mut block = Vec::new();
    for (n, h) in km.handles.into_iter().enumerate() {
        let len = if n < 2 { m } else { k };
        // Absent keys (length 0) have no handle.
        assert_eq!(h == CK_INVALID_HANDLE, len == 0);
        if len > 0 {
            block.extend(value(s, h));
        }
    }
    block.extend(&km.iv_client);
    block.extend(&km.iv_server);
    block
}

/// CAVS 17.8 TLS 1.2 SHA-256: master secret from the Hello randoms (with
/// `pVersion` returning the pre-master's first bytes), and the whole
/// 128-byte key block from the client/server randoms by two splits.
#[test]
fn cavs_tls12_sha256_master_secret_and_key_block() {
    let f = Fixture::new();
    let s = f.user(f.token("tls"));
    let text = include_str!("vectors/tls12-prf-cavs.txt");
    let vectors = records(text, "COUNT");
    assert_eq!(vectors.len(), 100);
    for v in &vectors {
        let hex = |k: &str| unhex(&v[k]);
        let mv = MasterVector {
            tag: format!("COUNT {}", v["COUNT"]),
            prf: CKM_SHA256,
            pre_master: hex("pre_master_secret"),
            hello: [hex("clientHello_random"), hex("serverHello_random")],
            randoms: [hex("client_random"), hex("server_random")],
            master: hex("master_secret"),
            key_block: hex("key_block"),
        };
        assert_eq!(mv.key_block.len(), 128);
        mv.check(
            &s,
            CKM_TLS12_MASTER_KEY_DERIVE,
            &[(32, 32, 0), (20, 32, 12), (0, 16, 48)],
        );
    }
}

/// The PRF hash of an ACVP group (`[SHA2-256]` …).
fn acvp_prf(section: &str) -> CK_MECHANISM_TYPE {
    match section {
        "SHA2-256" => CKM_SHA256,
        "SHA2-384" => CKM_SHA384,
        "SHA2-512" => CKM_SHA512,
        other => panic!("{other}"),
    }
}

/// One master secret and key block vector, in bytes.
struct MasterVector {
    tag: String,
    prf: CK_MECHANISM_TYPE,
    pre_master: Vec<u8>,
    /// The Hello randoms (client, server) of the master secret.
    hello: [Vec<u8>; 2],
    /// The randoms (client, server) of the key block.
    randoms: [Vec<u8>; 2],
    master: Vec<u8>,
    key_block: Vec<u8>,
}

impl MasterVector {
    /// Derives the master secret with `ty` (`pVersion` given unless the
    /// `_DH` variant: it returns the pre-master's first bytes), then the
    /// key block by each split.
    fn check(&self, s: &Session, ty: CK_MECHANISM_TYPE, splits: &[(usize, usize, usize)]) {
        let base = readable_secret(s, &self.pre_master);
        let dh = ty == CKM_TLS12_MASTER_KEY_DERIVE_DH;
        let mut version = CK_VERSION { major: 0, minor: 0 };
        let [ch, sh] = &self.hello;
        let master = t::master(
            s,
            ty,
            base,
            self.prf,
            ch,
            sh,
            (!dh).then_some(&mut version),
            &readable(),
        )
        .unwrap();
        if !dh {
            let pms = &self.pre_master;
            assert_eq!([version.major, version.minor], [pms[0], pms[1]]);
        }
        assert_eq!(value(s, master.handle()), self.master, "{}", self.tag);
        let [c, sr] = &self.randoms;
        for &split in splits {
            assert_eq!(
                key_block_by_split(s, master, self.prf, split, c, sr),
                self.key_block,
                "{} split {split:?}",
                self.tag
            );
        }
        s.destroy_object(master).unwrap();
        s.destroy_object(base).unwrap();
    }
}

/// ACVP TLS-v1.2-KDF-RFC7627: extended master secret (SHA-256, -384,
/// -512; also through the `_DH` variant) and key block.
#[test]
fn acvp_rfc7627_extended_master_secret_and_key_block() {
    let f = Fixture::new();
    let s = f.user(f.token("tls"));
    let vectors = records(include_str!("vectors/tls12-ems-acvp.txt"), "tcId");
    assert_eq!(vectors.len(), 60);
    for v in &vectors {
        let hex = |k: &str| unhex(&v[k]);
        let prf = acvp_prf(&v["section"]);
        let base = readable_secret(&s, &hex("preMasterSecret"));
        for ty in [
            CKM_TLS12_EXTENDED_MASTER_KEY_DERIVE,
            CKM_TLS12_EXTENDED_MASTER_KEY_DERIVE_DH,
        ] {
            let master =
                t::extended_master(&s, ty, base, prf, &hex("sessionHash"), None, &readable())
                    .unwrap();
            assert_eq!(
                value(&s, master.handle()),
                hex("masterSecret"),
                "tcId {}",
                v["tcId"]
            );
            let block = key_block_by_split(
                &s,
                master,
                prf,
                (20, 32, 12),
                &hex("clientRandom"),
                &hex("serverRandom"),
            );
            assert_eq!(block, hex("keyBlock"), "tcId {}", v["tcId"]);
        }
    }
}

/// ACVP kdf-components TLS v1.2 (SHA-256, -384, -512): master secret
/// from the Hello randoms through `CKM_TLS12_MASTER_KEY_DERIVE` (and the
/// `_DH` variant), the 128-byte key block from the client/server randoms
/// through `CKM_TLS12_KEY_AND_MAC_DERIVE` with two splits.
#[test]
fn acvp_kdf_components_tls12_master_secret_and_key_block() {
    let f = Fixture::new();
    let s = f.user(f.token("tls"));
    let vectors = records(
        include_str!("vectors/tls12-kdf-components-acvp.txt"),
        "tcId",
    );
    assert_eq!(vectors.len(), 30);
    for v in &vectors {
        let hex = |k: &str| unhex(&v[k]);
        let mv = MasterVector {
            tag: format!("tcId {}", v["tcId"]),
            prf: acvp_prf(&v["section"]),
            pre_master: hex("preMasterSecret"),
            hello: [hex("clientHelloRandom"), hex("serverHelloRandom")],
            randoms: [hex("clientRandom"), hex("serverRandom")],
            master: hex("masterSecret"),
            key_block: hex("keyBlock"),
        };
        for ty in [CKM_TLS12_MASTER_KEY_DERIVE, CKM_TLS12_MASTER_KEY_DERIVE_DH] {
            mv.check(&s, ty, &[(20, 32, 12), (0, 32, 32)]);
        }
    }
}

/// RFC 5705 exporter through `CKM_TLS_KDF` and `CKM_TLS12_KDF` against
/// values computed with Python's stdlib hmac (`vectors/
/// tls-exporter-python.txt`, checked with `openssl kdf TLS1-PRF` when it
/// was generated): a context present (with its 2-byte length, given by
/// the caller in `pContextData`), present but empty (`00 00`), 300 bytes,
/// and absent (NULL, 0), for the SHA-256/384/512 PRFs and `CKM_TLS_PRF`.
/// An empty context (`00 00`) and no context give different keys.
#[test]
fn rfc5705_exporter_contexts_python_hmac() {
    let f = Fixture::new();
    let s = f.user(f.token("tls"));
    let vectors = records(include_str!("vectors/tls-exporter-python.txt"), "name");
    assert_eq!(vectors.len(), 16);
    for v in &vectors {
        let hex = |k: &str| unhex(&v[k]);
        let prf = match v["prf"].as_str() {
            "SHA256" => CKM_SHA256,
            "SHA384" => CKM_SHA384,
            "SHA512" => CKM_SHA512,
            "TLS_PRF" => CKM_TLS_PRF,
            other => panic!("{other}"),
        };
        let base = readable_secret(&s, &hex("secret"));
        let want = hex("out");
        let context = v.get("context").map(|c| unhex(c));
        for ty in [CKM_TLS_KDF, CKM_TLS12_KDF] {
            let mut tpl = readable();
            tpl.push(Attribute::ValueLen((want.len() as u64).into()));
            let k = t::kdf(
                &s,
                ty,
                base,
                prf,
                &hex("label"),
                &hex("client"),
                &hex("server"),
                context.as_deref(),
                &tpl,
            )
            .unwrap_or_else(|rv| panic!("{} {ty:#x}: {rv:#x}", v["name"]));
            assert_eq!(value(&s, k.handle()), want, "{} {ty:#x}", v["name"]);
        }
    }
    // RFC 5705: an empty context and no context differ (same inputs).
    let base = readable_secret(&s, &[0x5a; 48]);
    let mut tpl = readable();
    tpl.push(Attribute::ValueLen(32.into()));
    let (r, label) = ([1u8; 32], b"EXPORTER-x");
    let derive = |ctx: Option<&[u8]>| {
        let k = t::kdf(
            &s,
            CKM_TLS12_KDF,
            base,
            CKM_SHA256,
            label,
            &r,
            &r,
            ctx,
            &tpl,
        )
        .unwrap();
        value(&s, k.handle())
    };
    assert_ne!(derive(None), derive(Some(&[0, 0])));
    // A NULL pointer and a non-NULL one with length 0 are both "no
    // context" (nothing appended).
    assert_eq!(derive(None), derive(Some(&[])));
}

/// `openssl kdf … TLS1-PRF` over `secret` and `label ‖ seed`, or None
/// (with a message) when no openssl is installed.
fn openssl_prf(digest: &str, secret: &[u8], seed: &[u8], len: usize) -> Option<Vec<u8>> {
    let out = match std::process::Command::new("openssl")
        .args([
            "kdf",
            "-keylen",
            &len.to_string(),
            "-kdfopt",
            &format!("digest:{digest}"),
            "-kdfopt",
            &format!("hexsecret:{}", to_hex(secret)),
            "-kdfopt",
            &format!("hexseed:{}", to_hex(seed)),
            "TLS1-PRF",
        ])
        .output()
    {
        Ok(o) => o,
        Err(e) => {
            println!("skipped: no openssl command ({e})");
            return None;
        }
    };
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(unhex(
        &String::from_utf8(out.stdout)
            .unwrap()
            .trim()
            .replace(':', ""),
    ))
}

/// Master secret, `CKM_TLS_KDF`/`CKM_TLS12_KDF` (RFC 5705 exporter with a
/// length-prefixed context, SHA-256 and SHA-384) and `CKM_TLS_MAC` (client
/// and server Finished, several parts) checked against OpenSSL.
#[test]
fn openssl_cross_check() {
    let f = Fixture::new();
    let s = f.user(f.token("tls"));
    let mut rng = Rng(0x7153);
    let mut bytes = |n: usize| -> Vec<u8> { (0..n).map(|_| rng.next() as u8).collect() };
    for (prf, digest) in [(CKM_SHA256, "SHA2-256"), (CKM_SHA384, "SHA2-384")] {
        let pms = bytes(48);
        let (c, sr) = (bytes(32), bytes(32));
        let base = readable_secret(&s, &pms);
        let master = t::master(
            &s,
            CKM_TLS12_MASTER_KEY_DERIVE_DH,
            base,
            prf,
            &c,
            &sr,
            None,
            &readable(),
        )
        .unwrap();
        let ms = value(&s, master.handle());
        let seed = [&b"master secret"[..], &c, &sr].concat();
        let Some(want) = openssl_prf(digest, &pms, &seed, 48) else {
            return;
        };
        assert_eq!(ms, want, "master secret {digest}");
        // Exporter: label, randoms, then a context with its 2-byte length.
        let context = [&[0u8, 5][..], b"hello"].concat();
        for ty in [CKM_TLS_KDF, CKM_TLS12_KDF] {
            let mut tpl = readable();
            tpl.push(Attribute::ValueLen(40.into()));
            let k = t::kdf(
                &s,
                ty,
                master,
                prf,
                b"EXPORTER-test",
                &c,
                &sr,
                Some(&context),
                &tpl,
            )
            .unwrap();
            let seed = [&b"EXPORTER-test"[..], &c, &sr, &context].concat();
            assert_eq!(
                value(&s, k.handle()),
                openssl_prf(digest, &ms, &seed, 40).unwrap(),
                "TLS_KDF {digest}"
            );
        }
        let hash = bytes(if prf == CKM_SHA256 { 32 } else { 48 });
        for (soc, label) in [(1, &b"server finished"[..]), (2, b"client finished")] {
            for ty in [CKM_TLS_MAC, CKM_TLS12_MAC] {
                let p = t::mac_params(prf, 12, soc);
                let mac = t::mac(&s, ty, master, p, &[&hash[..5], &hash[5..]]).unwrap();
                let seed = [label, &hash].concat();
                assert_eq!(mac, openssl_prf(digest, &ms, &seed, 12).unwrap());
                t::mac_verify(&s, ty, master, p, &[&hash], &mac).unwrap();
                let mut bad = mac.clone();
                bad[11] ^= 1;
                assert_eq!(
                    t::mac_verify(&s, ty, master, p, &[&hash], &bad),
                    Err(CKR_SIGNATURE_INVALID)
                );
            }
        }
    }
}

/// The TLS 1.0/1.1 PRF (`prfMechanism = CKM_TLS_PRF`, MD5 ⊕ SHA-1) of
/// `CKM_TLS_KDF` and `CKM_TLS_MAC`, checked against OpenSSL's `MD5-SHA1`
/// TLS1-PRF, with an odd-length secret (the halves share a byte).
#[test]
fn openssl_cross_check_tls10_prf() {
    let f = Fixture::new();
    let s = f.user(f.token("tls"));
    let secret: Vec<u8> = (0..47u8).map(|i| i.wrapping_mul(29)).collect();
    let base = readable_secret(&s, &secret);
    let (c, sr) = ([0x11u8; 32], [0x22u8; 32]);
    let mut tpl = readable();
    tpl.push(Attribute::ValueLen(36.into()));
    let k = t::kdf(
        &s,
        CKM_TLS_KDF,
        base,
        CKM_TLS_PRF,
        b"EXPORTER-legacy",
        &c,
        &sr,
        None,
        &tpl,
    )
    .unwrap();
    let seed = [&b"EXPORTER-legacy"[..], &c, &sr].concat();
    let Some(want) = openssl_prf("MD5-SHA1", &secret, &seed, 36) else {
        return;
    };
    assert_eq!(value(&s, k.handle()), want);
}

/// The master secret and traffic keys from a generated (token-secret)
/// pre-master: sensitive, never extractable, always sensitive; the master
/// a 48-byte generic secret that derives and signs (JSSE asks for
/// neither); write keys typed by the template, MAC keys generic secrets
/// that sign; the AEAD shape's IVs returned under `default`.
#[test]
fn derived_keys_attributes() {
    let f = Fixture::new();
    let s = f.user(f.token("tls"));
    // Allowed the master derivation only: an HMAC under it (or under a
    // copy of it) would compute the master secret, which would then not be
    // always sensitive.
    let pre = generate_allowed(
        &s,
        &cryptoki::mechanism::Mechanism::GenericSecretKeyGen,
        &[
            Attribute::Token(false),
            Attribute::ValueLen(48.into()),
            Attribute::Sensitive(true),
            Attribute::Extractable(false),
            Attribute::Derive(true),
        ],
        &[CKM_TLS12_MASTER_KEY_DERIVE_DH],
    )
    .unwrap();
    let r = [9u8; 32];
    let master = t::master(
        &s,
        CKM_TLS12_MASTER_KEY_DERIVE_DH,
        pre,
        CKM_SHA384,
        &r,
        &r,
        None,
        &[],
    )
    .unwrap();
    use AttributeType as A;
    let flags = |h: ObjectHandle| -> Vec<Attribute> {
        s.get_attributes(
            h,
            &[
                A::Sensitive,
                A::Extractable,
                A::AlwaysSensitive,
                A::NeverExtractable,
                A::KeyType,
            ],
        )
        .unwrap()
    };
    let protected = |ty: KeyType| {
        vec![
            Attribute::Sensitive(true),
            Attribute::Extractable(false),
            Attribute::AlwaysSensitive(true),
            Attribute::NeverExtractable(true),
            Attribute::KeyType(ty),
        ]
    };
    assert_eq!(flags(master), protected(KeyType::GENERIC_SECRET));
    assert_eq!(
        s.get_attributes(master, &[A::ValueLen, A::Derive, A::Sign, A::Verify])
            .unwrap(),
        vec![
            Attribute::ValueLen(48.into()),
            Attribute::Derive(true),
            Attribute::Sign(true),
            Attribute::Verify(true)
        ]
    );
    let tpl = [
        Attribute::Class(ObjectClass::SECRET_KEY),
        Attribute::KeyType(KeyType::AES),
        Attribute::ValueLen(16.into()),
        Attribute::Token(false),
    ];
    let km = t::key_mat(
        &s,
        CKM_TLS12_KEY_AND_MAC_DERIVE,
        master,
        CKM_SHA384,
        (160, 128, 32),
        &r,
        &r,
        &tpl,
    )
    .unwrap();
    assert_ne!(km.iv_client, km.iv_server);
    for (n, h) in km.handles.into_iter().enumerate() {
        // SAFETY: a handle the module returned.
        let h = unsafe { ObjectHandle::new_from_raw(h) };
        let (ty, usage) = if n < 2 {
            (KeyType::GENERIC_SECRET, A::Sign)
        } else {
            (KeyType::AES, A::Encrypt)
        };
        assert_eq!(flags(h), protected(ty), "key {n}");
        match &s.get_attributes(h, &[usage]).unwrap()[0] {
            Attribute::Sign(b) | Attribute::Encrypt(b) => assert!(*b, "key {n}"),
            other => panic!("{other:?}"),
        }
    }
}

/// `C_GetMechanismInfo`: derive for the ten derivations, sign and verify
/// for the MACs, base sizes in bytes.
#[test]
fn mechanism_info() {
    let f = Fixture::new();
    let slot = f.token("tls");
    let slot = slot.id() as CK_SLOT_ID;
    for (ty, derive, min, max) in [
        (CKM_TLS12_MASTER_KEY_DERIVE, true, 48, 48),
        (CKM_TLS12_MASTER_KEY_DERIVE_DH, true, 1, 512),
        (CKM_TLS12_EXTENDED_MASTER_KEY_DERIVE, true, 48, 48),
        (CKM_TLS12_EXTENDED_MASTER_KEY_DERIVE_DH, true, 1, 512),
        (CKM_TLS12_KEY_AND_MAC_DERIVE, true, 48, 48),
        (CKM_TLS12_KEY_SAFE_DERIVE, true, 48, 48),
        (CKM_TLS_KDF, true, 1, 512),
        (CKM_TLS12_KDF, true, 1, 512),
        (CKM_TLS_MAC, false, 1, 512),
        (CKM_TLS12_MAC, false, 1, 512),
    ] {
        let mut info = CK_MECHANISM_INFO::default();
        // SAFETY: a valid out-pointer.
        let rv = unsafe { raw().C_GetMechanismInfo.unwrap()(slot, ty, &mut info) };
        assert_eq!(rv, CKR_OK, "{ty:#x}");
        let want = if derive {
            CKF_DERIVE
        } else {
            CKF_SIGN | CKF_VERIFY
        };
        assert_eq!(info.flags, want, "{ty:#x}");
        assert_eq!((info.ulMinKeySize, info.ulMaxKeySize), (min, max));
    }
}

/// Parameter and template checks: randoms of the wrong length, sizes not
/// whole bytes, `bIsExport`, a `pVersion` for the DH variant, an unknown
/// PRF, `ulMacLength` out of range, a wrong master length, and a
/// key-and-MAC template asking for other protection than the base's.
#[test]
fn malformed_parameters() {
    let f = Fixture::new();
    let s = f.user(f.token("tls"));
    let r = [7u8; 32];
    let base = readable_secret(&s, &[3u8; 48]);
    let mut v = CK_VERSION { major: 0, minor: 0 };
    let m = |ty, prf, c: &[u8], ver: Option<&mut CK_VERSION>| {
        t::master(&s, ty, base, prf, c, &r, ver, &readable())
    };
    let bad: Result<(), CK_RV> = Err(CKR_MECHANISM_PARAM_INVALID);
    assert_eq!(
        m(CKM_TLS12_MASTER_KEY_DERIVE, CKM_SHA256, &r[..31], None).err(),
        bad.err()
    );
    assert_eq!(
        m(CKM_TLS12_MASTER_KEY_DERIVE, CKM_MD5, &r, None).err(),
        bad.err()
    );
    assert_eq!(
        m(CKM_TLS12_MASTER_KEY_DERIVE_DH, CKM_SHA256, &r, Some(&mut v)).err(),
        bad.err()
    );
    let short = readable_secret(&s, &[3u8; 32]);
    assert_eq!(
        t::master(
            &s,
            CKM_TLS12_MASTER_KEY_DERIVE,
            short,
            CKM_SHA256,
            &r,
            &r,
            None,
            &readable()
        )
        .err(),
        Some(CKR_KEY_SIZE_RANGE)
    );
    // A DH pre-master may be any length.
    t::master(
        &s,
        CKM_TLS12_MASTER_KEY_DERIVE_DH,
        short,
        CKM_SHA256,
        &r,
        &r,
        None,
        &readable(),
    )
    .unwrap();
    let master = m(CKM_TLS12_MASTER_KEY_DERIVE, CKM_SHA256, &r, None).unwrap();
    let km = |sizes, tpl: &[Attribute]| {
        t::key_mat(
            &s,
            CKM_TLS12_KEY_AND_MAC_DERIVE,
            master,
            CKM_SHA256,
            sizes,
            &r,
            &r,
            tpl,
        )
    };
    assert_eq!(km((256, 129, 0), &readable()).err(), bad.err());
    let mut tpl = readable();
    tpl.retain(|a| a.attribute_type() != AttributeType::Sensitive);
    tpl.push(Attribute::Sensitive(true));
    assert_eq!(
        km((256, 128, 0), &tpl).err(),
        Some(CKR_TEMPLATE_INCONSISTENT)
    );
    // AEAD shape: no MAC keys.
    let out = km((0, 128, 32), &readable()).unwrap();
    assert_eq!(out.handles[..2], [CK_INVALID_HANDLE; 2]);
    assert_eq!(out.iv_client.len(), 4);
    for (len, ok) in [(0, false), (12, true), (64, true), (65, false)] {
        let p = t::mac_params(CKM_SHA256, len, 2);
        assert_eq!(
            t::mac(&s, CKM_TLS_MAC, master, p, &[b"x"]).is_ok(),
            ok,
            "{len}"
        );
    }
    assert!(
        t::mac(
            &s,
            CKM_TLS_MAC,
            master,
            t::mac_params(CKM_SHA256, 12, 3),
            &[b"x"]
        )
        .is_err()
    );
    // TLS_KDF needs CKA_VALUE_LEN.
    assert_eq!(
        t::kdf(
            &s,
            CKM_TLS_KDF,
            master,
            CKM_SHA256,
            b"EXPORTER-x",
            &r,
            &r,
            None,
            &readable()
        )
        .err(),
        Some(CKR_TEMPLATE_INCOMPLETE)
    );
}
