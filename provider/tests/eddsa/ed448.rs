//! Ed448 and Ed448ph (RFC 8032 §5.2) through the C API: the RFC 8032 §7.4
//! and §7.5 known answers through keys imported by value, the Wycheproof
//! ed448 verification tests (valid and invalid), generated keys, contexts,
//! multi-part operations, wrapping (RFC 8410 PKCS#8) and the key checks.

use super::*;
use cryptoki::mechanism::MechanismType;

const OID_448: &[u8] = &[0x06, 0x03, 0x2b, 0x65, 0x71];
const PRINTABLE_448: &[u8] = b"\x13\x0aedwards448";

struct Vector448 {
    name: String,
    secret: Vec<u8>,
    public: Vec<u8>,
    message: Vec<u8>,
    ph: bool,
    context: Vec<u8>,
    signature: Vec<u8>,
}

fn rfc8032_ed448() -> Vec<Vector448> {
    include_str!("../vectors/rfc8032-ed448.txt")
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let f: Vec<_> = l.split(':').collect();
            Vector448 {
                name: f[0].to_string(),
                secret: unhex(f[1]),
                public: unhex(f[2]),
                message: unhex(f[3]),
                ph: f[4] == "1",
                context: unhex(f[5]),
                signature: unhex(f[6]),
            }
        })
        .collect()
}

fn scheme<'a>(ph: bool, context: &'a [u8]) -> Mechanism<'a> {
    Mechanism::Eddsa(EddsaParams::new(if ph {
        EddsaSignatureScheme::Ed448ph(context)
    } else {
        EddsaSignatureScheme::Ed448(context)
    }))
}

fn der57(point: &[u8]) -> Vec<u8> {
    [&[0x04, 57][..], point].concat()
}

/// RFC 8032 §7.4 (all ten blocks) and §7.5 (both): each secret imported
/// with `C_CreateObject` gives the published public key (`CKA_EC_POINT`,
/// `CKA_PUBLIC_KEY_INFO`) and signature, single- and multi-part; the
/// imported public key verifies it and refuses it under another context,
/// the other scheme, or tampered.
#[test]
fn rfc8032_ed448_known_answers_through_imported_keys() {
    let f = Fixture::new();
    let slot = f.token("ed448-kat");
    let s = f.user(slot);
    let vectors = rfc8032_ed448();
    assert_eq!(
        vectors.len(),
        12 - 1,
        "§7.4: 9 blocks + 1 with context, §7.5: 2"
    );
    for (i, v) in vectors.iter().enumerate() {
        let params = [OID_448, PRINTABLE_448][i % 2];
        let private = import_private(&s, &v.secret, params);
        let mech = scheme(v.ph, &v.context);
        assert_eq!(
            s.sign(&mech, private, &v.message).unwrap(),
            v.signature,
            "{}",
            v.name
        );
        s.sign_init(&mech, private).unwrap();
        for chunk in v.message.chunks(100) {
            s.sign_update(chunk).unwrap();
        }
        assert_eq!(
            s.sign_final().unwrap(),
            v.signature,
            "{} multi-part",
            v.name
        );
        let attrs = s
            .get_attributes(
                private,
                &[AttributeType::EcPoint, AttributeType::PublicKeyInfo],
            )
            .unwrap();
        let spki = [
            &[
                0x30, 0x43, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x71, 0x03, 0x3a, 0x00,
            ][..],
            &v.public,
        ]
        .concat();
        assert_eq!(
            attrs,
            vec![
                Attribute::EcPoint(der57(&v.public)),
                Attribute::PublicKeyInfo(spki)
            ],
            "{}",
            v.name
        );
        let encoded = if i % 2 == 0 {
            der57(&v.public)
        } else {
            v.public.clone()
        };
        let public = import_public(&s, &encoded, params);
        s.verify(&mech, public, &v.message, &v.signature).unwrap();
        s.verify_init(&mech, public).unwrap();
        for chunk in v.message.chunks(7) {
            s.verify_update(chunk).unwrap();
        }
        s.verify_final(&v.signature).unwrap();
        let other_context = [v.context.as_slice(), b"x"].concat();
        for wrong in [scheme(v.ph, &other_context), scheme(!v.ph, &v.context)] {
            assert_rv!(
                s.verify(&wrong, public, &v.message, &v.signature),
                SignatureInvalid
            );
        }
        let mut bad = v.signature.clone();
        bad[20] ^= 0x10;
        assert_rv!(s.verify(&mech, public, &v.message, &bad), SignatureInvalid);
        assert_rv!(
            s.verify(&mech, public, &v.message, &v.signature[..113]),
            SignatureLenRange
        );
    }
    // No parameter is Ed448 with the empty context (RFC 8032 §5.2).
    let v = &vectors[0];
    let private = import_private(&s, &v.secret, OID_448);
    assert_eq!(s.sign(&eddsa(), private, &v.message).unwrap(), v.signature);
}

/// Wycheproof ed448_test.json: every valid signature verifies, every
/// invalid one (bad encodings, malleated S, truncated, with garbage) is
/// refused.
#[test]
fn wycheproof_ed448_verification() {
    let f = Fixture::new();
    let slot = f.token("ed448-wp");
    let s = f.user(slot);
    let (mut valid, mut invalid) = (0, 0);
    for line in include_str!("../vectors/wycheproof-ed448.txt")
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let f: Vec<_> = line.split(':').collect();
        let public = import_public(&s, &unhex(f[1]), OID_448);
        let r = s.verify(&eddsa(), public, &unhex(f[2]), &unhex(f[3]));
        if f[4] == "valid" {
            r.unwrap_or_else(|e| panic!("tcId {}: {e:?}", f[0]));
            valid += 1;
        } else {
            assert!(r.is_err(), "tcId {} ({}) accepted", f[0], f[5]);
            invalid += 1;
        }
        s.destroy_object(public).unwrap();
    }
    assert_eq!((valid, invalid), (17, 70));
}

/// Generated Ed448 pairs sign and verify with every scheme; the mechanism
/// info covers 448-bit keys; wrapping the private key gives RFC 8410
/// PKCS#8 and unwraps to a key that signs the same.
#[test]
fn generated_ed448_pairs_sign_wrap_and_unwrap() {
    let f = Fixture::new();
    let slot = f.token("ed448-gen");
    let s = f.user(slot);
    for mech in [
        MechanismType::EDDSA,
        MechanismType::ECC_EDWARDS_KEY_PAIR_GEN,
    ] {
        let info = f.p().get_mechanism_info(slot, mech).unwrap();
        assert_eq!((info.min_key_size(), info.max_key_size()), (255, 448));
    }
    let (public, private) = s
        .generate_key_pair(
            &Mechanism::EccEdwardsKeyPairGen,
            &[
                Attribute::EcParams(OID_448.to_vec()),
                Attribute::Verify(true),
            ],
            &[
                Attribute::Sign(true),
                Attribute::Extractable(true),
                Attribute::Sensitive(true),
            ],
        )
        .unwrap();
    let point = s.get_attributes(public, &[AttributeType::EcPoint]).unwrap();
    let Attribute::EcPoint(point) = &point[0] else {
        panic!()
    };
    assert_eq!(point.len(), 59);
    let context = [0xa5u8; 255];
    for mech in [
        eddsa(),
        scheme(false, b""),
        scheme(false, &context),
        scheme(true, b""),
        scheme(true, &context),
    ] {
        let sig = s.sign(&mech, private, b"message").unwrap();
        assert_eq!(sig.len(), 114);
        s.verify(&mech, public, b"message", &sig).unwrap();
        assert_rv!(s.verify(&mech, public, b"messagE", &sig), SignatureInvalid);
    }
    let long = [0u8; 256];
    assert_rv!(
        s.sign(&scheme(false, &long), private, b"m"),
        MechanismParamInvalid
    );
    // Wrap (AES key wrap with padding) and unwrap.
    let kek = s
        .generate_key(
            &Mechanism::AesKeyGen,
            &[
                Attribute::ValueLen(32.into()),
                Attribute::Wrap(true),
                Attribute::Unwrap(true),
                Attribute::Encrypt(false),
                Attribute::Decrypt(false),
            ],
        )
        .unwrap();
    let wrapped = s.wrap_key(&Mechanism::AesKeyWrapPad, kek, private).unwrap();
    let unwrapped = s
        .unwrap_key(
            &Mechanism::AesKeyWrapPad,
            kek,
            &wrapped,
            &[
                Attribute::Class(ObjectClass::PRIVATE_KEY),
                Attribute::KeyType(KeyType::EC_EDWARDS),
                Attribute::Sign(true),
            ],
        )
        .unwrap();
    let attrs = s
        .get_attributes(
            unwrapped,
            &[AttributeType::EcParams, AttributeType::EcPoint],
        )
        .unwrap();
    assert_eq!(
        attrs,
        vec![
            Attribute::EcParams(OID_448.to_vec()),
            Attribute::EcPoint(point.clone())
        ]
    );
    let sig = s.sign(&eddsa(), unwrapped, b"wrapped").unwrap();
    s.verify(&eddsa(), public, b"wrapped", &sig).unwrap();
}

/// Import checks: a secret or point of the other curve's length, a point
/// that is not on the curve or not canonical, and an Ed448 key under
/// Ed25519 parameters are refused.
#[test]
fn ed448_import_checks() {
    let f = Fixture::new();
    let slot = f.token("ed448-imp");
    let s = f.user(slot);
    let v = &rfc8032_ed448()[0];
    let create = |class, params: &[u8], attr: Attribute| {
        s.create_object(&[
            Attribute::Class(class),
            Attribute::KeyType(KeyType::EC_EDWARDS),
            Attribute::EcParams(params.to_vec()),
            attr,
        ])
    };
    assert_rv!(
        create(
            ObjectClass::PRIVATE_KEY,
            OID_448,
            Attribute::Value(vec![1; 32])
        ),
        AttributeValueInvalid
    );
    assert_rv!(
        create(
            ObjectClass::PRIVATE_KEY,
            OID,
            Attribute::Value(v.secret.clone())
        ),
        AttributeValueInvalid
    );
    assert_rv!(
        create(
            ObjectClass::PUBLIC_KEY,
            OID_448,
            Attribute::EcPoint(vec![1; 32])
        ),
        AttributeValueInvalid
    );
    let mut off_curve = v.public.clone();
    off_curve[0] ^= 1;
    let mut non_canonical = v.public.clone();
    non_canonical[56] |= 1;
    for bad in [off_curve, non_canonical] {
        assert_rv!(
            create(ObjectClass::PUBLIC_KEY, OID_448, Attribute::EcPoint(bad)),
            AttributeValueInvalid
        );
    }
    assert!(
        create(
            ObjectClass::PUBLIC_KEY,
            OID_448,
            Attribute::EcPoint(v.public.clone())
        )
        .is_ok()
    );
}

/// Cross-check with python `cryptography` (OpenSSL's Ed448): a token
/// signature verifies there under the key read from the token's
/// `CKA_PUBLIC_KEY_INFO` (so the SPKI parses too), and a python key and
/// signature import into and verify on the token, whose signature with
/// the imported secret is python's, byte for byte (Ed448 is deterministic).
#[test]
fn ed448_cross_check_with_python_cryptography() {
    const SCRIPT: &str = r#"
import sys
from cryptography.hazmat.primitives import serialization as S
from cryptography.hazmat.primitives.asymmetric import ed448
spki, sig, msg = (bytes.fromhex(a) for a in sys.argv[1:4])
S.load_der_public_key(spki).verify(sig, msg)
k = ed448.Ed448PrivateKey.generate()
raw = k.private_bytes(S.Encoding.Raw, S.PrivateFormat.Raw, S.NoEncryption())
pub = k.public_key().public_bytes(S.Encoding.Raw, S.PublicFormat.Raw)
print(raw.hex(), pub.hex(), k.sign(msg).hex())
"#;
    let f = Fixture::new();
    let slot = f.token("ed448-py");
    let s = f.user(slot);
    let (public, private) = s
        .generate_key_pair(
            &Mechanism::EccEdwardsKeyPairGen,
            &[
                Attribute::EcParams(PRINTABLE_448.to_vec()),
                Attribute::Verify(true),
            ],
            &[Attribute::Sign(true)],
        )
        .unwrap();
    let msg = b"Ed448 from the token, checked by OpenSSL".repeat(5);
    let sig = s.sign(&eddsa(), private, &msg).unwrap();
    let spki = match s
        .get_attributes(public, &[AttributeType::PublicKeyInfo])
        .unwrap()
        .pop()
    {
        Some(Attribute::PublicKeyInfo(v)) => v,
        other => panic!("{other:?}"),
    };
    let out = python_cryptography(SCRIPT, &[&to_hex(&spki), &to_hex(&sig), &to_hex(&msg)]);
    let [secret, point, py_sig] = [&out[0], &out[1], &out[2]].map(|h| unhex(h));
    let py_public = import_public(&s, &point, OID_448);
    s.verify(&eddsa(), py_public, &msg, &py_sig).unwrap();
    assert_rv!(
        s.verify(&eddsa(), py_public, &msg[1..], &py_sig),
        SignatureInvalid
    );
    let py_private = import_private(&s, &secret, OID_448);
    assert_eq!(s.sign(&eddsa(), py_private, &msg).unwrap(), py_sig);
}
