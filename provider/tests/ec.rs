//! ECDSA and ECDH on P-192, P-224, P-256, P-384, P-521 and secp256k1
//! through the C API (mechanisms spec §2.3): RFC 6979 known answers,
//! verification vectors (OpenSSL's verdicts for P-256 / P-384, NIST CAVP
//! and Wycheproof for the others), ECDH known answers (CAVP, Wycheproof),
//! generation, import forms, multi-part, and key derivation.

mod common;

use common::*;
use cryptoki::mechanism::Mechanism;
use cryptoki::mechanism::elliptic_curve::{EcKdf, Ecdh1DeriveParams};
use cryptoki::object::{Attribute, AttributeType, KeyType, ObjectClass, ObjectHandle};
use cryptoki::session::Session;
use cryptoki_sys::*;

const P192: &[u8] = &[0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x01];
const P224: &[u8] = &[0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x21];
const P256: &[u8] = &[0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];
const P384: &[u8] = &[0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x22];
const P521: &[u8] = &[0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x23];
const K256: &[u8] = &[0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x0a];

/// Every curve, with its `CKA_EC_PARAMS` OID, printable name and field size.
const CURVES: [(&str, &[u8], &str, usize); 6] = [
    ("P-192", P192, "prime192v1", 24),
    ("P-224", P224, "secp224r1", 28),
    ("P-256", P256, "prime256v1", 32),
    ("P-384", P384, "secp384r1", 48),
    ("P-521", P521, "secp521r1", 66),
    ("secp256k1", K256, "secp256k1", 32),
];

fn params(curve: &str) -> &'static [u8] {
    CURVES
        .iter()
        .find(|c| c.0 == curve)
        .unwrap_or_else(|| panic!("{curve}"))
        .1
}

/// DER PrintableString of a curve name.
fn printable(name: &str) -> Vec<u8> {
    [&[0x13, name.len() as u8], name.as_bytes()].concat()
}

/// DER OCTET STRING of a point (long-form length for P-521's 133 bytes).
fn der(point: &[u8]) -> Vec<u8> {
    let head = if point.len() < 0x80 {
        vec![0x04, point.len() as u8]
    } else {
        vec![0x04, 0x81, point.len() as u8]
    };
    [head, point.to_vec()].concat()
}

/// The raw point inside a DER `CKA_EC_POINT`.
fn un_der(der: &[u8]) -> &[u8] {
    if der[1] == 0x81 { &der[3..] } else { &der[2..] }
}

fn ecdsa_mech(hash: &str) -> Mechanism<'static> {
    match hash {
        "raw" => Mechanism::Ecdsa,
        "sha1" => Mechanism::EcdsaSha1,
        "sha224" => Mechanism::EcdsaSha224,
        "sha256" => Mechanism::EcdsaSha256,
        "sha384" => Mechanism::EcdsaSha384,
        "sha512" => Mechanism::EcdsaSha512,
        other => panic!("{other}"),
    }
}

fn digest(hash: &str, msg: &[u8], s: &Session) -> Vec<u8> {
    let m = match hash {
        "sha224" => Mechanism::Sha224,
        "sha256" => Mechanism::Sha256,
        "sha384" => Mechanism::Sha384,
        "sha512" => Mechanism::Sha512,
        other => panic!("{other}"),
    };
    s.digest(&m, msg).unwrap()
}

fn public_key(s: &Session, params: &[u8], point: Vec<u8>) -> ObjectHandle {
    s.create_object(&[
        Attribute::Class(ObjectClass::PUBLIC_KEY),
        Attribute::KeyType(KeyType::EC),
        Attribute::EcParams(params.to_vec()),
        Attribute::EcPoint(point),
    ])
    .unwrap()
}

fn private_key(s: &Session, params: &[u8], value: Vec<u8>) -> ObjectHandle {
    s.create_object(&[
        Attribute::Class(ObjectClass::PRIVATE_KEY),
        Attribute::KeyType(KeyType::EC),
        Attribute::EcParams(params.to_vec()),
        Attribute::Value(value),
        Attribute::Derive(true),
    ])
    .unwrap()
}

#[test]
fn rfc6979_deterministic_signatures() {
    let f = Fixture::new();
    // The aws-lc build signs P-256 / P-384 / P-521 with random nonces: there
    // the known answers must verify and our signatures must verify, not
    // equal them. The other curves sign through RustCrypto in both builds.
    let aws_lc = is_aws_lc(&f);
    let mut curves = Vec::new();
    let slot = f.token("rfc6979");
    let s = f.user(slot);
    for line in include_str!("vectors/rfc6979-ecdsa.txt")
        .lines()
        .filter(|l| !l.starts_with('#'))
    {
        let v: Vec<_> = line.split(':').collect();
        curves.push(v[0]);
        let randomized = aws_lc && ["P-256", "P-384", "P-521"].contains(&v[0]);
        let key = private_key(&s, params(v[0]), unhex(v[2]));
        let expected = [unhex(v[4]), unhex(v[5])].concat();
        let msg = unhex(v[3]);
        // Hash-and-sign mechanism, single and multi-part, and raw CKM_ECDSA on the digest.
        let mech = ecdsa_mech(v[1]);
        let check: Box<dyn Fn(Vec<u8>)> = if randomized {
            let point = match s
                .get_attributes(key, &[AttributeType::EcPoint])
                .unwrap()
                .remove(0)
            {
                Attribute::EcPoint(p) => p,
                other => panic!("{other:?}"),
            };
            let public = public_key(&s, params(v[0]), point);
            s.verify(&mech, public, &msg, &expected).unwrap();
            let (s, mech, msg) = (&s, &mech, &msg);
            Box::new(move |sig: Vec<u8>| {
                assert_eq!(sig.len(), expected.len());
                s.verify(mech, public, msg, &sig).unwrap();
            })
        } else {
            let name = v[0];
            Box::new(move |sig: Vec<u8>| assert_eq!(sig, expected, "{name}"))
        };
        check(s.sign(&mech, key, &msg).unwrap());
        // Random nonces (aws-lc) give two different signatures, RFC 6979
        // the same one twice: this tells which back end signed.
        assert_eq!(
            s.sign(&mech, key, &msg).unwrap() != s.sign(&mech, key, &msg).unwrap(),
            randomized,
            "{}",
            v[0]
        );
        s.sign_init(&mech, key).unwrap();
        s.sign_update(&msg[..2]).unwrap();
        s.sign_update(&msg[2..]).unwrap();
        check(s.sign_final().unwrap());
        check(
            s.sign(&Mechanism::Ecdsa, key, &digest(v[1], &msg, &s))
                .unwrap(),
        );
    }
    assert_eq!(curves, ["P-256", "P-384", "P-192", "P-224", "P-521"]);
}

#[test]
fn verification_vectors_match_openssl() {
    let f = Fixture::new();
    let slot = f.token("ecverify");
    let s = f.user(slot);
    let mut checked = 0;
    for line in include_str!("vectors/ecdsa-verify.txt")
        .lines()
        .filter(|l| !l.starts_with('#'))
    {
        let v: Vec<_> = line.split(':').collect();
        let point = [vec![0x04], unhex(v[2]), unhex(v[3])].concat();
        // Raw point on import half the time, DER the other half.
        let encoded = if checked % 2 == 0 {
            point.clone()
        } else {
            [vec![0x04, point.len() as u8], point.clone()].concat()
        };
        let key = public_key(&s, params(v[0]), encoded);
        let sig = [unhex(v[5]), unhex(v[6])].concat();
        let msg = unhex(v[4]);
        let mech = if v[1] == "sha256" {
            Mechanism::EcdsaSha256
        } else {
            Mechanism::EcdsaSha384
        };
        let ours = s.verify(&mech, key, &msg, &sig);
        assert_eq!(ours.is_ok(), v[7] == "1", "line {line}: {ours:?}");
        if let Err(e) = ours {
            assert_eq!(rv_of(e), cryptoki::error::RvError::SignatureInvalid);
        }
        checked += 1;
    }
    assert!(checked > 30);
}

#[test]
fn generation_import_forms_and_lengths() {
    let f = Fixture::new();
    let slot = f.token("ecgen");
    let s = f.user(slot);
    for (name, p, _, field) in CURVES {
        let len = 2 * field;
        let (public, private) = s
            .generate_key_pair(
                &Mechanism::EccKeyPairGen,
                &[Attribute::EcParams(p.to_vec()), Attribute::Token(true)],
                &[Attribute::Token(true), Attribute::Derive(true)],
            )
            .unwrap();
        let point = match s
            .get_attributes(public, &[AttributeType::EcPoint])
            .unwrap()
            .pop()
        {
            Some(Attribute::EcPoint(pt)) => pt,
            other => panic!("{other:?}"),
        };
        assert_eq!(point[0], 0x04, "DER OCTET STRING");
        assert_eq!(un_der(&point)[0], 0x04, "uncompressed point");
        assert_eq!(point, der(un_der(&point)), "{name}");
        assert_eq!(un_der(&point).len(), 1 + len);
        let msg = vec![3u8; 100];
        let sig = s.sign(&Mechanism::EcdsaSha512, private, &msg).unwrap();
        assert_eq!(sig.len(), len, "{name}");
        s.verify(&Mechanism::EcdsaSha512, public, &msg, &sig)
            .unwrap();
        // A tampered signature (one bit of r, one bit of s) fails.
        for at in [0, len - 1] {
            let mut bad = sig.clone();
            bad[at] ^= 0x01;
            assert_rv!(
                s.verify(&Mechanism::EcdsaSha512, public, &msg, &bad),
                SignatureInvalid
            );
        }
        assert_rv!(
            s.verify(&Mechanism::EcdsaSha512, public, &msg, &sig[1..]),
            SignatureLenRange
        );
        // Short and long inputs to raw CKM_ECDSA: hashes of any size.
        for h in [vec![1u8; 20], vec![2u8; 64], vec![0xffu8; 66]] {
            let sig = s.sign(&Mechanism::Ecdsa, private, &h).unwrap();
            s.verify(&Mechanism::Ecdsa, public, &h, &sig).unwrap();
        }
    }
    // The printable curve names are accepted: the key pair works and its
    // private half keeps the name as given.
    for (name, _, printable_name, field) in CURVES {
        let params = printable(printable_name);
        let (public, private) = s
            .generate_key_pair(
                &Mechanism::EccKeyPairGen,
                &[Attribute::EcParams(params.clone())],
                &[],
            )
            .unwrap();
        let sig = s.sign(&Mechanism::EcdsaSha256, private, b"m").unwrap();
        assert_eq!(sig.len(), 2 * field, "{name}");
        s.verify(&Mechanism::EcdsaSha256, public, b"m", &sig)
            .unwrap();
        assert_eq!(
            s.get_attributes(private, &[AttributeType::EcParams])
                .unwrap(),
            vec![Attribute::EcParams(params)]
        );
    }
    for unsupported in ["brainpoolP256r1", "secp256k2", "prime239v1"] {
        assert_rv!(
            s.generate_key_pair(
                &Mechanism::EccKeyPairGen,
                &[Attribute::EcParams(printable(unsupported))],
                &[]
            ),
            CurveNotSupported
        );
    }
    assert_rv!(
        s.generate_key_pair(&Mechanism::EccKeyPairGen, &[], &[]),
        TemplateIncomplete
    );
    // An Ed25519 key cannot do ECDSA.
    let (_, ed) = s
        .generate_key_pair(
            &Mechanism::EccEdwardsKeyPairGen,
            &[Attribute::EcParams(b"\x13\x0cedwards25519".to_vec())],
            &[],
        )
        .unwrap();
    assert_rv!(s.sign(&Mechanism::Ecdsa, ed, &[0; 32]), KeyTypeInconsistent);
}

#[test]
fn ecdh_derives_the_same_secret_both_ways() {
    let f = Fixture::new();
    let slot = f.token("ecdh");
    let s = f.user(slot);
    for (name, p, _, field) in CURVES {
        let make = || {
            s.generate_key_pair(
                &Mechanism::EccKeyPairGen,
                &[Attribute::EcParams(p.to_vec())],
                &[Attribute::Derive(true)],
            )
            .unwrap()
        };
        let (a_pub, a_priv) = make();
        let (b_pub, b_priv) = make();
        let point = |h| match s
            .get_attributes(h, &[AttributeType::EcPoint])
            .unwrap()
            .pop()
        {
            Some(Attribute::EcPoint(pt)) => pt,
            other => panic!("{other:?}"),
        };
        let (pa, pb) = (point(a_pub), point(b_pub));
        let template = [
            Attribute::Class(ObjectClass::SECRET_KEY),
            Attribute::KeyType(KeyType::GENERIC_SECRET),
            Attribute::Sensitive(false),
            Attribute::Extractable(true),
        ];
        // Public data as DER (a to b) and raw (b to a).
        let ab = s
            .derive_key(
                &Mechanism::Ecdh1Derive(Ecdh1DeriveParams::new(EcKdf::null(), &pb)),
                a_priv,
                &template,
            )
            .unwrap();
        let ba = s
            .derive_key(
                &Mechanism::Ecdh1Derive(Ecdh1DeriveParams::new(EcKdf::null(), un_der(&pa))),
                b_priv,
                &template,
            )
            .unwrap();
        let value = |h| s.get_attributes(h, &[AttributeType::Value]).unwrap();
        assert_eq!(value(ab), value(ba), "{name}");
        match &value(ab)[..] {
            [Attribute::Value(v)] => assert_eq!(v.len(), field, "{name}"),
            other => panic!("{other:?}"),
        }
        // SHA-256 KDF into an AES key that then works.
        let aes_template = [
            Attribute::Class(ObjectClass::SECRET_KEY),
            Attribute::KeyType(KeyType::AES),
            Attribute::ValueLen(32.into()),
            Attribute::Sensitive(false),
            Attribute::Extractable(true),
        ];
        let k1 = s
            .derive_key(
                &Mechanism::Ecdh1Derive(Ecdh1DeriveParams::new(EcKdf::sha256(&[]), &pb)),
                a_priv,
                &aes_template,
            )
            .unwrap();
        let k2 = s
            .derive_key(
                &Mechanism::Ecdh1Derive(Ecdh1DeriveParams::new(EcKdf::sha256(&[]), &pa)),
                b_priv,
                &aes_template,
            )
            .unwrap();
        assert_eq!(value(k1), value(k2));
        assert_ne!(value(k1), value(ab));
        let attrs = s
            .get_attributes(k1, &[AttributeType::ValueLen, AttributeType::Local])
            .unwrap();
        assert_eq!(
            attrs,
            vec![Attribute::ValueLen(32.into()), Attribute::Local(false)]
        );
        // A point of the wrong size is a parameter error.
        let other = vec![4u8; un_der(&pa).len() + 1];
        assert_rv!(
            s.derive_key(
                &Mechanism::Ecdh1Derive(Ecdh1DeriveParams::new(EcKdf::null(), &other)),
                a_priv,
                &template
            ),
            MechanismParamInvalid
        );
    }
}

#[test]
fn verification_vectors_of_the_other_curves() {
    let f = Fixture::new();
    let slot = f.token("ecverify2");
    let s = f.user(slot);
    let (mut valid, mut invalid) = (0, 0);
    for (n, line) in include_str!("vectors/ecdsa-verify-curves.txt")
        .lines()
        .filter(|l| !l.starts_with('#'))
        .enumerate()
    {
        let v: Vec<_> = line.split(':').collect();
        let point = unhex(v[2]);
        // Raw point on import half the time, DER the other half.
        let encoded = if n % 2 == 0 {
            point.clone()
        } else {
            der(&point)
        };
        let key = public_key(&s, params(v[0]), encoded);
        let (msg, sig) = (unhex(v[3]), unhex(v[4]));
        let ours = s.verify(&ecdsa_mech(v[1]), key, &msg, &sig);
        assert_eq!(ours.is_ok(), v[5] == "1", "line {line}: {ours:?}");
        if let Err(e) = ours {
            assert_eq!(rv_of(e), cryptoki::error::RvError::SignatureInvalid);
            invalid += 1;
        } else {
            valid += 1;
        }
    }
    assert_eq!((valid, invalid), (5, 12));
}

#[test]
fn ecdh_known_answers() {
    let f = Fixture::new();
    let slot = f.token("ecdhkat");
    let s = f.user(slot);
    let template = [
        Attribute::Class(ObjectClass::SECRET_KEY),
        Attribute::KeyType(KeyType::GENERIC_SECRET),
        Attribute::Sensitive(false),
        Attribute::Extractable(true),
    ];
    let mut curves = Vec::new();
    for line in include_str!("vectors/ecdh-curves.txt")
        .lines()
        .filter(|l| !l.starts_with('#'))
    {
        let v: Vec<_> = line.split(':').collect();
        curves.push(v[0]);
        let key = private_key(&s, params(v[0]), unhex(v[1]));
        let (peer, expected) = (unhex(v[2]), unhex(v[3]));
        // The peer's point raw and as DER.
        for public in [peer.clone(), der(&peer)] {
            let shared = s
                .derive_key(
                    &Mechanism::Ecdh1Derive(Ecdh1DeriveParams::new(EcKdf::null(), &public)),
                    key,
                    &template,
                )
                .unwrap();
            assert_eq!(
                s.get_attributes(shared, &[AttributeType::Value]).unwrap(),
                vec![Attribute::Value(expected.clone())],
                "{line}"
            );
        }
        // A point off the curve (last byte of y changed) is refused.
        let mut off = peer.clone();
        *off.last_mut().unwrap() ^= 1;
        assert_rv!(
            s.derive_key(
                &Mechanism::Ecdh1Derive(Ecdh1DeriveParams::new(EcKdf::null(), &off)),
                key,
                &template
            ),
            MechanismParamInvalid
        );
    }
    assert_eq!(curves, ["P-192", "P-192", "P-224", "P-521", "secp256k1"]);
}

/// `CKM_ECDH1_COFACTOR_DERIVE` (mechanisms spec §2.3.16) through the raw
/// `C_DeriveKey`: every curve of the token has cofactor 1, so the CAVP /
/// Wycheproof ECDH answers are its answers too; its mechanism info is
/// `CKM_ECDH1_DERIVE`'s; an X25519 key is `CKR_KEY_TYPE_INCONSISTENT`.
#[test]
fn ecdh_cofactor_known_answers() {
    let f = Fixture::new();
    let slot = f.token("ecdhcofactor");
    let s = f.user(slot);
    let l = raw();
    let mut info = CK_MECHANISM_INFO::default();
    // SAFETY: a live out-structure.
    let rv =
        unsafe { l.C_GetMechanismInfo.unwrap()(slot.id(), CKM_ECDH1_COFACTOR_DERIVE, &mut info) };
    assert_eq!(rv, CKR_OK);
    assert_eq!(
        info.flags & (CKF_DERIVE | CKF_SIGN | CKF_ENCRYPT),
        CKF_DERIVE
    );
    assert_eq!((info.ulMinKeySize, info.ulMaxKeySize), (192, 521));
    let derive = |key: ObjectHandle, public: &[u8]| -> Result<Vec<u8>, CK_RV> {
        let mut public = public.to_vec();
        let mut p = CK_ECDH1_DERIVE_PARAMS {
            kdf: CKD_NULL,
            ulSharedDataLen: 0,
            pSharedData: std::ptr::null_mut(),
            ulPublicDataLen: public.len() as CK_ULONG,
            pPublicData: public.as_mut_ptr(),
        };
        let mut mech = CK_MECHANISM {
            mechanism: CKM_ECDH1_COFACTOR_DERIVE,
            pParameter: (&mut p as *mut CK_ECDH1_DERIVE_PARAMS).cast(),
            ulParameterLen: std::mem::size_of::<CK_ECDH1_DERIVE_PARAMS>() as CK_ULONG,
        };
        let (mut class, mut kt, mut yes, mut no) =
            (CKO_SECRET_KEY, CKK_GENERIC_SECRET, CK_TRUE, CK_FALSE);
        let attr = |ty, v: *mut u8, n: usize| CK_ATTRIBUTE {
            type_: ty,
            pValue: v.cast(),
            ulValueLen: n as CK_ULONG,
        };
        let mut t = [
            attr(CKA_CLASS, (&mut class as *mut CK_ULONG).cast(), 8),
            attr(CKA_KEY_TYPE, (&mut kt as *mut CK_ULONG).cast(), 8),
            attr(CKA_SENSITIVE, &mut no, 1),
            attr(CKA_EXTRACTABLE, &mut yes, 1),
        ];
        let mut out: CK_OBJECT_HANDLE = 0;
        // SAFETY: the mechanism, its parameter and the template outlive the call.
        let rv = unsafe {
            l.C_DeriveKey.unwrap()(
                s.handle(),
                &mut mech,
                key.handle(),
                t.as_mut_ptr(),
                t.len() as CK_ULONG,
                &mut out,
            )
        };
        if rv != CKR_OK {
            return Err(rv);
        }
        let h = s
            .get_attributes(
                // SAFETY: a handle the module just returned.
                unsafe { ObjectHandle::new_from_raw(out) },
                &[AttributeType::Value],
            )
            .unwrap();
        match h.into_iter().next() {
            Some(Attribute::Value(v)) => Ok(v),
            other => panic!("{other:?}"),
        }
    };
    let mut n = 0;
    for line in include_str!("vectors/ecdh-curves.txt")
        .lines()
        .filter(|l| !l.starts_with('#'))
    {
        let v: Vec<_> = line.split(':').collect();
        let key = private_key(&s, params(v[0]), unhex(v[1]));
        let (peer, expected) = (unhex(v[2]), unhex(v[3]));
        assert_eq!(derive(key, &peer), Ok(expected.clone()), "{line}");
        assert_eq!(derive(key, &der(&peer)), Ok(expected), "{line}");
        let mut off = peer.clone();
        *off.last_mut().unwrap() ^= 1;
        assert_eq!(derive(key, &off), Err(CKR_MECHANISM_PARAM_INVALID));
        n += 1;
    }
    assert_eq!(n, 5);
    // X25519: ECDH1_DERIVE only.
    let (_, x) = s
        .generate_key_pair(
            &Mechanism::EccMontgomeryKeyPairGen,
            &[Attribute::EcParams(vec![
                0x13, 0x0a, b'c', b'u', b'r', b'v', b'e', b'2', b'5', b'5', b'1', b'9',
            ])],
            &[Attribute::Derive(true), Attribute::Token(false)],
        )
        .unwrap();
    assert_eq!(derive(x, &[9u8; 32]), Err(CKR_KEY_TYPE_INCONSISTENT));
}

#[test]
fn private_key_import_computes_the_public_point() {
    // RFC 6979 A.2.3 and A.2.7 key pairs: CKA_EC_POINT of an imported
    // private key is the DER of the public point the RFC gives.
    let f = Fixture::new();
    let slot = f.token("ecimport");
    let s = f.user(slot);
    for (curve, d, x, y) in [
        (
            "P-192",
            "6fab034934e4c0fc9ae67f5b5659a9d7d1fefd187ee09fd4",
            "ac2c77f529f91689fea0ea5efec7f210d8eea0b9e047ed56",
            "3bc723e57670bd4887ebc732c523063d0a7c957bc97c1c43",
        ),
        (
            "P-521",
            "00fad06daa62ba3b25d2fb40133da757205de67f5bb0018fee8c86e1b68c7e75caa896eb32f1f47c70855836a6d16fcc1466f6d8fbec67db89ec0c08b0e996b83538",
            "01894550d0785932e00eaa23b694f213f8c3121f86dc97a04e5a7167db4e5bcd371123d46e45db6b5d5370a7f20fb633155d38ffa16d2bd761dcac474b9a2f5023a4",
            "00493101c962cd4d2fddf782285e64584139c2f91b47f87ff82354d6630f746a28a0db25741b5b34a828008b22acc23f924faafbd4d33f81ea66956dfeaa2bfdfcf5",
        ),
    ] {
        let key = private_key(&s, params(curve), unhex(d));
        let point = [vec![0x04], unhex(x), unhex(y)].concat();
        assert_eq!(
            s.get_attributes(key, &[AttributeType::EcPoint]).unwrap(),
            vec![Attribute::EcPoint(der(&point))],
            "{curve}"
        );
        // The same key with its leading zero bytes left off.
        let short = unhex(d.trim_start_matches("00"));
        let key = private_key(&s, params(curve), short);
        assert_eq!(
            s.get_attributes(key, &[AttributeType::EcPoint]).unwrap(),
            vec![Attribute::EcPoint(der(&point))]
        );
    }
    // A scalar of n (P-192's order) is not a key.
    assert!(
        s.create_object(&[
            Attribute::Class(ObjectClass::PRIVATE_KEY),
            Attribute::KeyType(KeyType::EC),
            Attribute::EcParams(P192.to_vec()),
            Attribute::Value(unhex("ffffffffffffffffffffffff99def836146bc9b1b4d22831")),
        ])
        .is_err()
    );
}

#[test]
fn mechanism_info_covers_192_to_521_bits() {
    let f = Fixture::new();
    let slot = f.free_slot();
    use cryptoki::mechanism::MechanismType as M;
    for (m, sign, derive, pair_gen) in [
        (M::ECC_KEY_PAIR_GEN, false, false, true),
        (M::ECDSA, true, false, false),
        (M::ECDSA_SHA1, true, false, false),
        (M::ECDSA_SHA224, true, false, false),
        (M::ECDSA_SHA256, true, false, false),
        (M::ECDSA_SHA384, true, false, false),
        (M::ECDSA_SHA512, true, false, false),
        (M::ECDH1_DERIVE, false, true, false),
    ] {
        let info = f.p().get_mechanism_info(slot, m).unwrap();
        assert_eq!(
            (info.min_key_size(), info.max_key_size()),
            (192, 521),
            "{m}"
        );
        assert_eq!((info.sign(), info.verify()), (sign, sign), "{m}");
        assert_eq!(info.derive(), derive, "{m}");
        assert_eq!(info.generate_key_pair(), pair_gen, "{m}");
        assert!(
            info.ec_f_p() && info.ec_from_oid() && info.ec_uncompressed(),
            "{m}"
        );
    }
}
