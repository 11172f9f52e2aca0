//! SHA-3 and SHA-512/t through the C API (issue 30): the digests
//! (`CKM_SHA3_*`, `CKM_SHA512_224`, `CKM_SHA512_256`) against NIST CAVP
//! vectors, single- and multi-part, `C_DigestKey` and the operation state;
//! their HMACs against Wycheproof; the SHA-3 key generators; RSA PKCS #1
//! v1.5 and ECDSA with SHA-3 against Wycheproof verification vectors, and
//! signatures the module makes checked by python `cryptography`; the
//! `CKM_SHA*_KEY_DERIVATION` derivations. cryptoki 0.12 names none of
//! these mechanisms, so the calls go through the raw function list.

mod common;
#[path = "common/raw_calls.rs"]
mod raw_calls;

use common::*;
use cryptoki::session::Session;
use cryptoki_sys::*;
use raw_calls::*;

fn digest_mech(name: &str) -> CK_MECHANISM_TYPE {
    match name {
        "SHA3-224" | "SHA3_224" => CKM_SHA3_224,
        "SHA3-256" | "SHA3_256" => CKM_SHA3_256,
        "SHA3-384" | "SHA3_384" => CKM_SHA3_384,
        "SHA3-512" | "SHA3_512" => CKM_SHA3_512,
        "SHA512_224" => CKM_SHA512_224,
        "SHA512_256" => CKM_SHA512_256,
        other => panic!("unknown hash {other}"),
    }
}

/// NIST CAVP SHA-3 byte-oriented vectors (tests/vectors/sha3-cavp.txt),
/// each single-part and in 7-byte parts.
#[test]
fn sha3_cavp_vectors() {
    let f = Fixture::new();
    let s = f.user(f.token("sha3"));
    let text = vectors("sha3-cavp.txt");
    let (mut alg, mut len, mut msg, mut count) = (0, 0usize, Vec::new(), 0);
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        if let Some(name) = line.strip_prefix('[') {
            alg = digest_mech(name.trim_end_matches(']'));
        } else if let Some(v) = line.strip_prefix("Len = ") {
            len = v.parse::<usize>().unwrap() / 8;
        } else if let Some(v) = line.strip_prefix("Msg = ") {
            msg = unhex(v);
            msg.truncate(len);
        } else if let Some(v) = line.strip_prefix("MD = ") {
            assert_eq!(hex(&digest(&s, alg, &msg, None)), v, "{alg:#x} len {len}");
            assert_eq!(
                hex(&digest(&s, alg, &msg, Some(7))),
                v,
                "parts {alg:#x} len {len}"
            );
            count += 1;
        }
    }
    assert_eq!(count, 112);
}

/// SHA-512/224 and SHA-512/256: the FIPS 180-4 examples (NIST CSRC
/// "Examples with Intermediate Values": "abc" and the 896-bit message).
#[test]
fn sha512_t_examples() {
    let f = Fixture::new();
    let s = f.user(f.token("sha512t"));
    let two_blocks = b"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu";
    let cases: [(CK_MECHANISM_TYPE, &[u8], &str); 4] = [
        (
            CKM_SHA512_224,
            b"abc",
            "4634270f707b6a54daae7530460842e20e37ed265ceee9a43e8924aa",
        ),
        (
            CKM_SHA512_224,
            two_blocks,
            "23fec5bb94d60b23308192640b0c453335d664734fe40e7268674af9",
        ),
        (
            CKM_SHA512_256,
            b"abc",
            "53048e2681941ef99b2e29b76b4c7dabe4c2d0c634fc6d46e0e2f13107e7af23",
        ),
        (
            CKM_SHA512_256,
            two_blocks,
            "3928e184fb8690f840da3988121d31be65cb9d3ef83ee6146feac861e19b563a",
        ),
    ];
    for (m, data, want) in cases {
        assert_eq!(hex(&digest(&s, m, data, None)), want);
        assert_eq!(hex(&digest(&s, m, data, Some(5))), want);
    }
    // C_GetMechanismInfo: digest only.
    let mut info = CK_MECHANISM_INFO::default();
    for m in [
        CKM_SHA3_224,
        CKM_SHA3_256,
        CKM_SHA3_384,
        CKM_SHA3_512,
        CKM_SHA512_224,
        CKM_SHA512_256,
    ] {
        // SAFETY: valid slot and output structure.
        let rv =
            unsafe { raw().C_GetMechanismInfo.unwrap()(f.token("sha512t").id(), m, &mut info) };
        assert_eq!(rv, CKR_OK);
        assert_eq!(info.flags, CKF_DIGEST, "{m:#x}");
    }
}

/// `C_DigestKey` with SHA3-256 hashes the key's value; the operation state
/// saved mid-digest and restored gives the same digest.
#[test]
fn sha3_digest_key_and_operation_state() {
    let f = Fixture::new();
    let s = f.user(f.token("sha3key"));
    let k = secret(
        &s,
        CKK_GENERIC_SECRET,
        b"0123456789abcdef",
        vec![flag(CKA_SENSITIVE, false), flag(CKA_EXTRACTABLE, true)],
    );
    let r = raw();
    let mut out = [0u8; 64];
    let mut len = 64 as CK_ULONG;
    // SAFETY: valid session, mechanism and buffers of the given lengths.
    unsafe {
        let mut m = mech(CKM_SHA3_256, None);
        assert_eq!(r.C_DigestInit.unwrap()(s.handle(), &mut m), CKR_OK);
        assert_eq!(
            r.C_DigestUpdate.unwrap()(s.handle(), b"x:".as_ptr() as *mut u8, 2),
            CKR_OK
        );
        assert_eq!(r.C_DigestKey.unwrap()(s.handle(), k), CKR_OK);
        let mut state = vec![0u8; 4096];
        let mut state_len = state.len() as CK_ULONG;
        assert_eq!(
            r.C_GetOperationState.unwrap()(s.handle(), state.as_mut_ptr(), &mut state_len),
            CKR_OK
        );
        assert_eq!(
            r.C_DigestUpdate.unwrap()(s.handle(), b"spoil".as_ptr() as *mut u8, 5),
            CKR_OK
        );
        assert_eq!(
            r.C_SetOperationState.unwrap()(s.handle(), state.as_mut_ptr(), state_len, 0, 0),
            CKR_OK
        );
        assert_eq!(
            r.C_DigestFinal.unwrap()(s.handle(), out.as_mut_ptr(), &mut len),
            CKR_OK
        );
    }
    assert_eq!(len, 32);
    assert_eq!(
        out[..32],
        digest(&s, CKM_SHA3_256, b"x:0123456789abcdef", None)[..]
    );
}

fn hmac_mech(name: &str, general: bool) -> CK_MECHANISM_TYPE {
    match (name, general) {
        ("SHA3_224", false) => CKM_SHA3_224_HMAC,
        ("SHA3_224", true) => CKM_SHA3_224_HMAC_GENERAL,
        ("SHA3_256", false) => CKM_SHA3_256_HMAC,
        ("SHA3_256", true) => CKM_SHA3_256_HMAC_GENERAL,
        ("SHA3_384", false) => CKM_SHA3_384_HMAC,
        ("SHA3_384", true) => CKM_SHA3_384_HMAC_GENERAL,
        ("SHA3_512", false) => CKM_SHA3_512_HMAC,
        ("SHA3_512", true) => CKM_SHA3_512_HMAC_GENERAL,
        ("SHA512_224", false) => CKM_SHA512_224_HMAC,
        ("SHA512_224", true) => CKM_SHA512_224_HMAC_GENERAL,
        ("SHA512_256", false) => CKM_SHA512_256_HMAC,
        ("SHA512_256", true) => CKM_SHA512_256_HMAC_GENERAL,
        _ => panic!("{name}"),
    }
}

fn hmac_key_type(name: &str) -> CK_KEY_TYPE {
    match name {
        "SHA3_224" => CKK_SHA3_224_HMAC,
        "SHA3_256" => CKK_SHA3_256_HMAC,
        "SHA3_384" => CKK_SHA3_384_HMAC,
        "SHA3_512" => CKK_SHA3_512_HMAC,
        "SHA512_224" => CKK_SHA512_224_HMAC,
        _ => CKK_SHA512_256_HMAC,
    }
}

/// Wycheproof HMAC-SHA3 and HMAC-SHA-512/t (tests/vectors/
/// hmac-sha3-sha512t-wycheproof.txt): valid tags are computed (full-length
/// with the plain mechanism, truncated with `_GENERAL`) and verify; invalid
/// ones do not verify. Keys are typed for the hash (`CKK_SHA3_256_HMAC`, ...)
/// or generic secrets, alternately.
#[test]
fn hmac_wycheproof_vectors() {
    let f = Fixture::new();
    let s = f.user(f.token("hmac3"));
    let (mut valid, mut invalid) = (0, 0);
    for (i, line) in vectors("hmac-sha3-sha512t-wycheproof.txt")
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .enumerate()
    {
        let w: Vec<&str> = line.split(' ').collect();
        let (name, tag_bits) = (w[0], w[1].parse::<usize>().unwrap());
        let (key, msg, tag) = (unhex(w[2]), opt_hex(w[3]), opt_hex(w[4]));
        let full = digest(&s, digest_mech(name), b"", None).len();
        let key_type = if i % 2 == 0 {
            hmac_key_type(name)
        } else {
            CKK_GENERIC_SECRET
        };
        let k = mac_key(&s, key_type, &key);
        let general = tag_bits / 8 != full;
        // A CK_MECHANISM points at its parameter; built per call.
        let mut n2 = (tag_bits / 8) as CK_ULONG;
        let mk = |p: &mut CK_ULONG| {
            if general {
                mech(hmac_mech(name, true), Some(p))
            } else {
                mech(hmac_mech(name, false), None)
            }
        };
        if w[5] == "valid" {
            assert_eq!(sign(&s, mk(&mut n2), k, &msg, None).unwrap(), tag, "{line}");
            assert_eq!(
                sign(&s, mk(&mut n2), k, &msg, Some(3)).unwrap(),
                tag,
                "{line}"
            );
            assert_eq!(verify(&s, mk(&mut n2), k, &msg, &tag), CKR_OK, "{line}");
            valid += 1;
        } else {
            let rv = verify(&s, mk(&mut n2), k, &msg, &tag);
            assert!(
                rv == CKR_SIGNATURE_INVALID || rv == CKR_SIGNATURE_LEN_RANGE,
                "{line}: {rv:#x}"
            );
            invalid += 1;
        }
    }
    assert!(valid > 300 && invalid > 300, "{valid} {invalid}");
}

/// The key generators make keys of their type (default length the hash's),
/// and each HMAC takes its own key type and generic secrets only.
#[test]
fn sha3_key_generators_and_key_types() {
    let f = Fixture::new();
    let s = f.user(f.token("keygen3"));
    let gens = [
        (
            CKM_SHA3_224_KEY_GEN,
            CKK_SHA3_224_HMAC,
            28,
            CKM_SHA3_224_HMAC,
        ),
        (
            CKM_SHA3_256_KEY_GEN,
            CKK_SHA3_256_HMAC,
            32,
            CKM_SHA3_256_HMAC,
        ),
        (
            CKM_SHA3_384_KEY_GEN,
            CKK_SHA3_384_HMAC,
            48,
            CKM_SHA3_384_HMAC,
        ),
        (
            CKM_SHA3_512_KEY_GEN,
            CKK_SHA3_512_HMAC,
            64,
            CKM_SHA3_512_HMAC,
        ),
        (
            CKM_SHA512_224_KEY_GEN,
            CKK_SHA512_224_HMAC,
            28,
            CKM_SHA512_224_HMAC,
        ),
        (
            CKM_SHA512_256_KEY_GEN,
            CKK_SHA512_256_HMAC,
            32,
            CKM_SHA512_256_HMAC,
        ),
    ];
    for (gen_mech, key_type, len, hmac) in gens {
        let t = vec![
            flag(CKA_TOKEN, false),
            flag(CKA_SIGN, true),
            flag(CKA_VERIFY, true),
        ];
        let k = generate(&s, gen_mech, t.clone()).unwrap();
        assert_eq!(attr(&s, k, CKA_KEY_TYPE).unwrap(), key_type.to_ne_bytes());
        assert_eq!(
            attr(&s, k, CKA_VALUE_LEN).unwrap(),
            (len as CK_ULONG).to_ne_bytes()
        );
        let mut t2 = t.clone();
        t2.push(ul(CKA_VALUE_LEN, 20));
        let k20 = generate(&s, gen_mech, t2).unwrap();
        assert_eq!(
            attr(&s, k20, CKA_VALUE_LEN).unwrap(),
            (20 as CK_ULONG).to_ne_bytes()
        );
        let mac = sign(&s, mech(hmac, None), k, b"data", None).unwrap();
        assert_eq!(mac.len(), len);
        assert_eq!(verify(&s, mech(hmac, None), k, b"data", &mac), CKR_OK);
        // Another hash's HMAC refuses the key.
        let other = if hmac == CKM_SHA3_256_HMAC {
            CKM_SHA256_HMAC
        } else {
            CKM_SHA3_256_HMAC
        };
        assert_eq!(
            sign(&s, mech(other, None), k, b"data", None),
            Err(CKR_KEY_TYPE_INCONSISTENT)
        );
        // A key type of another hash is refused by the generator.
        let mut bad = t.clone();
        bad.push(ul(CKA_KEY_TYPE, CKK_SHA256_HMAC));
        assert_eq!(generate(&s, gen_mech, bad), Err(CKR_TEMPLATE_INCONSISTENT));
    }
    // _GENERAL: 1..=hash length.
    let k = mac_key(&s, CKK_GENERIC_SECRET, &[7u8; 32]);
    for (n, want) in [
        (0, Err(CKR_MECHANISM_PARAM_INVALID)),
        (33, Err(CKR_MECHANISM_PARAM_INVALID)),
    ] {
        let mut n: CK_ULONG = n;
        assert_eq!(
            sign(
                &s,
                mech(CKM_SHA3_256_HMAC_GENERAL, Some(&mut n)),
                k,
                b"d",
                None
            )
            .map(|_| ()),
            want
        );
    }
    let mut n: CK_ULONG = 10;
    let full = sign(&s, mech(CKM_SHA3_256_HMAC, None), k, b"d", None).unwrap();
    let short = sign(
        &s,
        mech(CKM_SHA3_256_HMAC_GENERAL, Some(&mut n)),
        k,
        b"d",
        None,
    )
    .unwrap();
    assert_eq!(short, full[..10]);
}

fn rsa_public(s: &Session, n: &[u8], e: &[u8]) -> CK_OBJECT_HANDLE {
    create(
        s,
        vec![
            ul(CKA_CLASS, CKO_PUBLIC_KEY),
            ul(CKA_KEY_TYPE, CKK_RSA),
            (CKA_MODULUS, n.to_vec()),
            (CKA_PUBLIC_EXPONENT, e.to_vec()),
            flag(CKA_VERIFY, true),
            flag(CKA_TOKEN, false),
        ],
    )
    .unwrap()
}

/// Wycheproof RSASSA-PKCS1-v1_5 with SHA-3 (2048 and 3072 bits): valid
/// signatures verify, invalid ones do not ("acceptable" ones are not judged).
#[test]
fn rsa_pkcs1v15_sha3_wycheproof_vectors() {
    let f = Fixture::new();
    let s = f.user(f.token("rsa3"));
    let (mut key, mut m, mut checked) = (0, 0, 0);
    for line in vectors("rsa-pkcs1v15-sha3-wycheproof.txt")
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let w: Vec<&str> = line.split(' ').collect();
        if w[0] == "key" {
            m = match w[1] {
                "SHA3_224" => CKM_SHA3_224_RSA_PKCS,
                "SHA3_256" => CKM_SHA3_256_RSA_PKCS,
                "SHA3_384" => CKM_SHA3_384_RSA_PKCS,
                _ => CKM_SHA3_512_RSA_PKCS,
            };
            let n = unhex(w[2]);
            let n = n.strip_prefix(&[0u8][..]).unwrap_or(&n).to_vec();
            key = rsa_public(&s, &n, &unhex(w[3]));
            continue;
        }
        let (msg, sig) = (opt_hex(w[0]), opt_hex(w[1]));
        let rv = verify(&s, mech(m, None), key, &msg, &sig);
        match w[2] {
            "valid" => assert_eq!(rv, CKR_OK, "{line}"),
            "invalid" => assert!(
                rv == CKR_SIGNATURE_INVALID || rv == CKR_SIGNATURE_LEN_RANGE,
                "{line}: {rv:#x}"
            ),
            _ => continue,
        }
        checked += 1;
    }
    assert!(checked > 1700, "{checked}");
}

/// Wycheproof ECDSA with SHA-3 (P-256, P-384, P-521), as r || s.
#[test]
fn ecdsa_sha3_wycheproof_vectors() {
    let f = Fixture::new();
    let s = f.user(f.token("ecdsa3"));
    let (mut key, mut m, mut checked) = (0, 0, 0);
    for line in vectors("ecdsa-sha3-wycheproof.txt")
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let w: Vec<&str> = line.split(' ').collect();
        if w[0] == "key" {
            let oid: &[u8] = match w[1] {
                "secp256r1" => &[0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07],
                "secp384r1" => &[0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x22],
                _ => &[0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x23],
            };
            m = match w[2] {
                "SHA3_256" => CKM_ECDSA_SHA3_256,
                "SHA3_384" => CKM_ECDSA_SHA3_384,
                _ => CKM_ECDSA_SHA3_512,
            };
            let point = unhex(w[3]);
            let mut der = vec![0x04];
            if point.len() > 127 {
                der.push(0x81);
            }
            der.push(point.len() as u8);
            der.extend_from_slice(&point);
            key = create(
                &s,
                vec![
                    ul(CKA_CLASS, CKO_PUBLIC_KEY),
                    ul(CKA_KEY_TYPE, CKK_EC),
                    (CKA_EC_PARAMS, oid.to_vec()),
                    (CKA_EC_POINT, der),
                    flag(CKA_VERIFY, true),
                    flag(CKA_TOKEN, false),
                ],
            )
            .unwrap();
            continue;
        }
        let (msg, sig) = (opt_hex(w[0]), unhex(w[1]));
        let rv = verify(&s, mech(m, None), key, &msg, &sig);
        if w[2] == "valid" {
            assert_eq!(rv, CKR_OK, "{line}");
        } else {
            assert!(
                rv == CKR_SIGNATURE_INVALID || rv == CKR_SIGNATURE_LEN_RANGE,
                "{line}: {rv:#x}"
            );
        }
        checked += 1;
    }
    assert!(checked > 1000, "{checked}");
}

/// Runs `script` in python3 with `args`; true if it exits 0.
fn python(script: &str, args: &[String]) -> bool {
    let out = std::process::Command::new("python3")
        .arg("-c")
        .arg(script)
        .args(args)
        .output()
        .unwrap();
    if !out.status.success() {
        eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    }
    out.status.success()
}

const PY_RSA: &str = r#"
import sys
from cryptography.hazmat.primitives.asymmetric import rsa, padding
from cryptography.hazmat.primitives import hashes
n, e, h, pss, msg, sig = sys.argv[1:]
key = rsa.RSAPublicNumbers(int(e, 16), int(n, 16)).public_key()
hh = {"224": hashes.SHA3_224(), "256": hashes.SHA3_256(), "384": hashes.SHA3_384(), "512": hashes.SHA3_512()}[h]
pad = padding.PSS(mgf=padding.MGF1(hh), salt_length=int(pss)) if pss != "-" else padding.PKCS1v15()
key.verify(bytes.fromhex(sig), bytes.fromhex(msg), pad, hh)
"#;

const PY_EC: &str = r#"
import sys
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
from cryptography.hazmat.primitives import hashes
point, h, msg, sig = sys.argv[1:]
key = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), bytes.fromhex(point))
hh = {"224": hashes.SHA3_224(), "256": hashes.SHA3_256(), "384": hashes.SHA3_384(), "512": hashes.SHA3_512()}[h]
raw = bytes.fromhex(sig)
r, s = int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big")
key.verify(encode_dss_signature(r, s), bytes.fromhex(msg), ec.ECDSA(hh))
"#;

/// Signatures the module makes with `CKM_SHA3_*_RSA_PKCS`,
/// `CKM_SHA3_*_RSA_PKCS_PSS` and `CKM_ECDSA_SHA3_*` verify in python
/// `cryptography` (OpenSSL), and a flipped message does not.
#[test]
fn sha3_signatures_verify_in_have_python_cryptography() {
    use cryptoki::mechanism::Mechanism;
    use cryptoki::object::{Attribute, AttributeType};
    if !have_python_cryptography() {
        eprintln!("python3 cryptography missing: cross-check not run");
        return;
    }
    let f = Fixture::new();
    let s = f.user(f.token("xsha3"));
    let (public, private) = s
        .generate_key_pair(
            &Mechanism::RsaPkcsKeyPairGen,
            &[
                Attribute::ModulusBits(2048.into()),
                Attribute::Verify(true),
                Attribute::Token(false),
            ],
            &[Attribute::Sign(true), Attribute::Token(false)],
        )
        .unwrap();
    let get = |h, t| match s.get_attributes(h, &[t]).unwrap().remove(0) {
        Attribute::Modulus(v) | Attribute::PublicExponent(v) | Attribute::EcPoint(v) => v,
        _ => unreachable!(),
    };
    let n = hex(&get(public, AttributeType::Modulus));
    let e = hex(&get(public, AttributeType::PublicExponent));
    let msg = b"signed by the token, checked by OpenSSL";
    let rsa_cases = [
        (
            CKM_SHA3_224_RSA_PKCS,
            CKM_SHA3_224,
            CKG_MGF1_SHA3_224,
            "224",
        ),
        (
            CKM_SHA3_256_RSA_PKCS,
            CKM_SHA3_256,
            CKG_MGF1_SHA3_256,
            "256",
        ),
        (
            CKM_SHA3_384_RSA_PKCS,
            CKM_SHA3_384,
            CKG_MGF1_SHA3_384,
            "384",
        ),
        (
            CKM_SHA3_512_RSA_PKCS,
            CKM_SHA3_512,
            CKG_MGF1_SHA3_512,
            "512",
        ),
    ];
    for (i, (m, hash, mgf, bits)) in rsa_cases.into_iter().enumerate() {
        let sig = sign(
            &s,
            mech(m, None),
            private.handle(),
            msg,
            if i % 2 == 0 { None } else { Some(9) },
        )
        .unwrap();
        assert!(
            python(
                PY_RSA,
                &[
                    n.clone(),
                    e.clone(),
                    bits.into(),
                    "-".into(),
                    hex(msg),
                    hex(&sig)
                ]
            ),
            "{m:#x}"
        );
        assert!(!python(
            PY_RSA,
            &[
                n.clone(),
                e.clone(),
                bits.into(),
                "-".into(),
                hex(b"other"),
                hex(&sig)
            ]
        ));
        // PSS with the same hash, MGF1 over it and a salt of the hash's length.
        let salt = digest(&s, hash, b"", None).len() as CK_ULONG;
        let params = CK_RSA_PKCS_PSS_PARAMS {
            hashAlg: hash,
            mgf,
            sLen: salt,
        };
        let pss = m + (CKM_SHA3_256_RSA_PKCS_PSS - CKM_SHA3_256_RSA_PKCS);
        let pss = if m == CKM_SHA3_224_RSA_PKCS {
            CKM_SHA3_224_RSA_PKCS_PSS
        } else {
            pss
        };
        let pm = |p: &mut CK_RSA_PKCS_PSS_PARAMS| CK_MECHANISM {
            mechanism: pss,
            pParameter: (p as *mut CK_RSA_PKCS_PSS_PARAMS).cast(),
            ulParameterLen: size_of::<CK_RSA_PKCS_PSS_PARAMS>() as CK_ULONG,
        };
        let mut p = params;
        let sig = sign(&s, pm(&mut p), private.handle(), msg, None).unwrap();
        assert!(
            python(
                PY_RSA,
                &[
                    n.clone(),
                    e.clone(),
                    bits.into(),
                    salt.to_string(),
                    hex(msg),
                    hex(&sig)
                ]
            ),
            "{pss:#x}"
        );
        assert_eq!(verify(&s, pm(&mut p), public.handle(), msg, &sig), CKR_OK);
        // PSS parameters naming another hash are refused.
        let mut other = CK_RSA_PKCS_PSS_PARAMS {
            hashAlg: CKM_SHA256,
            ..params
        };
        assert_eq!(
            sign(&s, pm(&mut other), private.handle(), msg, None),
            Err(CKR_MECHANISM_PARAM_INVALID)
        );
    }
    let (public, private) = s
        .generate_key_pair(
            &Mechanism::EccKeyPairGen,
            &[
                Attribute::EcParams(vec![
                    0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07,
                ]),
                Attribute::Verify(true),
                Attribute::Token(false),
            ],
            &[Attribute::Sign(true), Attribute::Token(false)],
        )
        .unwrap();
    let point = get(public, AttributeType::EcPoint);
    let point = hex(&point[2..]); // DER OCTET STRING of a 65-byte point
    for (m, bits) in [
        (CKM_ECDSA_SHA3_224, "224"),
        (CKM_ECDSA_SHA3_256, "256"),
        (CKM_ECDSA_SHA3_384, "384"),
        (CKM_ECDSA_SHA3_512, "512"),
    ] {
        let sig = sign(&s, mech(m, None), private.handle(), msg, Some(4)).unwrap();
        assert_eq!(sig.len(), 64);
        assert!(
            python(PY_EC, &[point.clone(), bits.into(), hex(msg), hex(&sig)]),
            "{m:#x}"
        );
        assert!(!python(
            PY_EC,
            &[point.clone(), bits.into(), hex(b"other"), hex(&sig)]
        ));
        assert_eq!(
            verify(&s, mech(m, None), public.handle(), msg, &sig),
            CKR_OK
        );
    }
}

/// `CKM_<hash>_KEY_DERIVATION`: the derived key is the hash of the base's
/// value (checked against the token's own digest, itself checked against
/// NIST above), truncated to `CKA_VALUE_LEN`; without a length or key type
/// it is a generic secret of the hash's length; longer than the hash is
/// refused; DES keys get parity.
#[test]
fn hash_key_derivations() {
    let f = Fixture::new();
    let s = f.user(f.token("kd"));
    let base_value = b"a base key value of 32 bytes....";
    let base = secret(
        &s,
        CKK_GENERIC_SECRET,
        base_value,
        vec![
            flag(CKA_DERIVE, true),
            flag(CKA_SENSITIVE, false),
            flag(CKA_EXTRACTABLE, true),
        ],
    );
    let open = || {
        vec![
            ul(CKA_CLASS, CKO_SECRET_KEY),
            flag(CKA_TOKEN, false),
            flag(CKA_SENSITIVE, false),
            flag(CKA_EXTRACTABLE, true),
        ]
    };
    let cases = [
        (CKM_SHA1_KEY_DERIVATION, CKM_SHA_1),
        (CKM_SHA224_KEY_DERIVATION, CKM_SHA224),
        (CKM_SHA256_KEY_DERIVATION, CKM_SHA256),
        (CKM_SHA384_KEY_DERIVATION, CKM_SHA384),
        (CKM_SHA512_KEY_DERIVATION, CKM_SHA512),
        (CKM_SHA512_224_KEY_DERIVATION, CKM_SHA512_224),
        (CKM_SHA512_256_KEY_DERIVATION, CKM_SHA512_256),
        (CKM_SHA3_224_KEY_DERIVATION, CKM_SHA3_224),
        (CKM_SHA3_256_KEY_DERIVATION, CKM_SHA3_256),
        (CKM_SHA3_384_KEY_DERIVATION, CKM_SHA3_384),
        (CKM_SHA3_512_KEY_DERIVATION, CKM_SHA3_512),
    ];
    for (kd, hash) in cases {
        let want = digest(&s, hash, base_value, None);
        let k = derive(&s, kd, base, open()).unwrap();
        assert_eq!(attr(&s, k, CKA_VALUE).unwrap(), want, "{kd:#x}");
        assert_eq!(
            attr(&s, k, CKA_KEY_TYPE).unwrap(),
            CKK_GENERIC_SECRET.to_ne_bytes()
        );
        let mut t = open();
        t.push(ul(CKA_VALUE_LEN, 16));
        let k = derive(&s, kd, base, t).unwrap();
        assert_eq!(attr(&s, k, CKA_VALUE).unwrap(), want[..16]);
        let mut t = open();
        t.push(ul(CKA_VALUE_LEN, want.len() as CK_ULONG + 1));
        assert_eq!(
            derive(&s, kd, base, t),
            Err(CKR_TEMPLATE_INCONSISTENT),
            "{kd:#x}"
        );
        let mut t = open();
        t.push(ul(CKA_KEY_TYPE, CKK_AES));
        t.push(ul(CKA_VALUE_LEN, 16));
        let k = derive(&s, kd, base, t).unwrap();
        assert_eq!(attr(&s, k, CKA_VALUE).unwrap(), want[..16]);
    }
    // DES3 (24 bytes) from SHA-1 (20 bytes): too long; from SHA-256 with parity.
    let mut t = open();
    t.push(ul(CKA_KEY_TYPE, CKK_DES3));
    assert_eq!(
        derive(&s, CKM_SHA1_KEY_DERIVATION, base, t.clone()),
        Err(CKR_TEMPLATE_INCONSISTENT)
    );
    let k = derive(&s, CKM_SHA256_KEY_DERIVATION, base, t).unwrap();
    let v = attr(&s, k, CKA_VALUE).unwrap();
    assert_eq!(v.len(), 24);
    assert!(v.iter().all(|b| b.count_ones() % 2 == 1));
    // A parameter is refused.
    let mut p: CK_ULONG = 1;
    let mut m = mech(CKM_SHA256_KEY_DERIVATION, Some(&mut p));
    let mut h = 0;
    let mut t = open();
    let mut attrs = raw_template(&mut t);
    // SAFETY: valid mechanism and template buffers.
    let rv = unsafe {
        raw().C_DeriveKey.unwrap()(
            s.handle(),
            &mut m,
            base,
            attrs.as_mut_ptr(),
            attrs.len() as _,
            &mut h,
        )
    };
    assert_eq!(rv, CKR_MECHANISM_PARAM_INVALID);
}
