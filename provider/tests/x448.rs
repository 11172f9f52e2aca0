//! X448 through the C API (mechanisms spec 3.0 §2.3: Montgomery keys,
//! their key pair generation and `CKM_ECDH1_DERIVE`): RFC 7748 §5.2 and
//! §6.2 known answers and the Wycheproof x448 tests through imported keys
//! and `C_DeriveKey`, generated pairs that agree, wrapping, and refusals.

mod common;

use common::*;
use cryptoki::mechanism::elliptic_curve::{EcKdf, Ecdh1DeriveParams};
use cryptoki::mechanism::{Mechanism, MechanismType};
use cryptoki::object::{Attribute, AttributeType, KeyType, ObjectClass, ObjectHandle};
use cryptoki::session::Session;

const OID: &[u8] = &[0x06, 0x03, 0x2b, 0x65, 0x6f];
const PRINTABLE: &[u8] = b"\x13\x08curve448";

fn import_private(s: &Session, value: &[u8], params: &[u8]) -> ObjectHandle {
    s.create_object(&[
        Attribute::Class(ObjectClass::PRIVATE_KEY),
        Attribute::KeyType(KeyType::EC_MONTGOMERY),
        Attribute::EcParams(params.to_vec()),
        Attribute::Value(value.to_vec()),
        Attribute::Derive(true),
    ])
    .unwrap()
}

fn der(point: &[u8]) -> Vec<u8> {
    [&[0x04, 56][..], point].concat()
}

fn ec_point(s: &Session, key: ObjectHandle) -> Vec<u8> {
    match s
        .get_attributes(key, &[AttributeType::EcPoint])
        .unwrap()
        .pop()
    {
        Some(Attribute::EcPoint(p)) => p,
        other => panic!("{other:?}"),
    }
}

/// Derives a readable generic secret with `kdf` and returns its value.
fn try_derive(
    s: &Session,
    private: ObjectHandle,
    public: &[u8],
    kdf: EcKdf<'_>,
) -> cryptoki::error::Result<Vec<u8>> {
    let key = s.derive_key(
        &Mechanism::Ecdh1Derive(Ecdh1DeriveParams::new(kdf, public)),
        private,
        &[
            Attribute::Class(ObjectClass::SECRET_KEY),
            Attribute::KeyType(KeyType::GENERIC_SECRET),
            Attribute::Sensitive(false),
            Attribute::Extractable(true),
        ],
    )?;
    match s.get_attributes(key, &[AttributeType::Value])?.pop() {
        Some(Attribute::Value(v)) => Ok(v),
        other => panic!("{other:?}"),
    }
}

fn derive(s: &Session, private: ObjectHandle, public: &[u8], kdf: EcKdf<'_>) -> Vec<u8> {
    try_derive(s, private, public, kdf).unwrap()
}

/// RFC 7748 §6.2: Alice's and Bob's imported keys give their published
/// public keys (`CKA_EC_POINT`, DER; `CKA_PUBLIC_KEY_INFO`, RFC 8410) and,
/// both ways, the shared secret.
#[test]
fn rfc7748_section_6_2_through_imported_keys() {
    let f = Fixture::new();
    let slot = f.token("x448");
    let s = f.user(slot);
    let a = unhex(
        "9a8f4925d1519f5775cf46b04b5800d4ee9ee8bae8bc5565d498c28dd9c9baf574a9419744897391006382a6f127ab1d9ac2d8c0a598726b",
    );
    let a_pub = unhex(
        "9b08f7cc31b7e3e67d22d5aea121074a273bd2b83de09c63faa73d2c22c5d9bbc836647241d953d40c5b12da88120d53177f80e532c41fa0",
    );
    let b = unhex(
        "1c306a7ac2a0e2e0990b294470cba339e6453772b075811d8fad0d1d6927c120bb5ee8972b0d3e21374c9c921b09d1b0366f10b65173992d",
    );
    let b_pub = unhex(
        "3eb7a829b0cd20f5bcfc0b599b6feccf6da4627107bdb0d4f345b43027d8b972fc3e34fb4232a13ca706dcb57aec3dae07bdc1c67bf33609",
    );
    let k = unhex(
        "07fff4181ac6cc95ec1c16a94a0f74d12da232ce40a77552281d282bb60c0b56fd2464c335543936521c24403085d59a449a5037514a879d",
    );
    let alice = import_private(&s, &a, OID);
    let bob = import_private(&s, &b, PRINTABLE);
    assert_eq!(ec_point(&s, alice), der(&a_pub));
    assert_eq!(ec_point(&s, bob), der(&b_pub));
    let spki = s
        .get_attributes(alice, &[AttributeType::PublicKeyInfo])
        .unwrap();
    let want = [
        &[
            0x30, 0x42, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x6f, 0x03, 0x39, 0x00,
        ][..],
        &a_pub,
    ]
    .concat();
    assert_eq!(spki, vec![Attribute::PublicKeyInfo(want)]);
    assert_eq!(derive(&s, alice, &b_pub, EcKdf::null()), k);
    assert_eq!(derive(&s, bob, &der(&a_pub), EcKdf::null()), k);
    let public = s
        .create_object(&[
            Attribute::Class(ObjectClass::PUBLIC_KEY),
            Attribute::KeyType(KeyType::EC_MONTGOMERY),
            Attribute::EcParams(OID.to_vec()),
            Attribute::EcPoint(b_pub.clone()),
        ])
        .unwrap();
    assert_eq!(ec_point(&s, public), der(&b_pub));
    let x = derive(&s, alice, &b_pub, EcKdf::sha256(&[]));
    assert_eq!(x, derive(&s, bob, &a_pub, EcKdf::sha256(&[])));
    assert_ne!(x, k);
    // A 55- or 57-byte peer value is refused.
    for bad in [&b_pub[..55], &[&b_pub[..], &[0]].concat()[..]] {
        assert_rv!(
            try_derive(&s, alice, bad, EcKdf::null()),
            MechanismParamInvalid
        );
    }
}

/// RFC 7748 §5.2: the two single X448 vectors (input scalar as an
/// imported private key, input u-coordinate as `pPublicData`).
#[test]
fn rfc7748_section_5_2_vectors() {
    let f = Fixture::new();
    let slot = f.token("x448-5-2");
    let s = f.user(slot);
    for (scalar, u, out) in [
        (
            "3d262fddf9ec8e88495266fea19a34d28882acef045104d0d1aae121700a779c984c24f8cdd78fbff44943eba368f54b29259a4f1c600ad3",
            "06fce640fa3487bfda5f6cf2d5263f8aad88334cbd07437f020f08f9814dc031ddbdc38c19c6da2583fa5429db94ada18aa7a7fb4ef8a086",
            "ce3e4ff95a60dc6697da1db1d85e6afbdf79b50a2412d7546d5f239fe14fbaadeb445fc66a01b0779d98223961111e21766282f73dd96b6f",
        ),
        (
            "203d494428b8399352665ddca42f9de8fef600908e0d461cb021f8c538345dd77c3e4806e25f46d3315c44e0a5b4371282dd2c8d5be3095f",
            "0fbcc2f993cd56d3305b0b7d9e55d4c1a8fb5dbb52f8e9a1e9b6201b165d015894e56c4d3570bee52fe205e28a78b91cdfbde71ce8d157db",
            "884a02576239ff7a2f2f63b2db6a9ff37047ac13568e1e30fe63c4a7ad1b3ee3a5700df34321d62077e63633c575c1c954514e99da7c179d",
        ),
    ] {
        let key = import_private(&s, &unhex(scalar), OID);
        assert_eq!(derive(&s, key, &unhex(u), EcKdf::null()), unhex(out));
    }
}

/// Wycheproof x448_test.json: valid and acceptable cases give the
/// published shared secret (twist points and non-canonical u included),
/// except that an all-zero secret is refused (RFC 7748 §6.2); invalid
/// cases (wrong-length public values) are refused.
#[test]
fn wycheproof_x448() {
    let f = Fixture::new();
    let slot = f.token("x448-wp");
    let s = f.user(slot);
    let (mut agreed, mut refused) = (0, 0);
    for line in include_str!("vectors/wycheproof-x448.txt")
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let f: Vec<_> = line.split(':').collect();
        let key = import_private(&s, &unhex(f[1]), OID);
        let r = try_derive(&s, key, &unhex(f[2]), EcKdf::null());
        if f[4] == "invalid" || f[5].contains("ZeroSharedSecret") {
            assert_rv!(r, MechanismParamInvalid);
            refused += 1;
        } else {
            assert_eq!(r.unwrap(), unhex(f[3]), "tcId {}", f[0]);
            agreed += 1;
        }
        s.destroy_object(key).unwrap();
    }
    assert_eq!(agreed + refused, 510);
    assert_eq!(refused, 12 + 11);
}

/// Generated pairs (`CKM_EC_MONTGOMERY_KEY_PAIR_GEN` on curve448) agree;
/// the mechanism info covers 448-bit keys; a wrapped private key unwraps
/// (RFC 8410 PKCS#8) to one that derives the same secret.
#[test]
fn generated_pairs_agree_and_wrap() {
    let f = Fixture::new();
    let slot = f.token("x448-gen");
    let s = f.user(slot);
    let info = f
        .p()
        .get_mechanism_info(slot, MechanismType::ECC_MONTGOMERY_KEY_PAIR_GEN)
        .unwrap();
    assert_eq!((info.min_key_size(), info.max_key_size()), (255, 448));
    let generate = |params: &[u8]| {
        s.generate_key_pair(
            &Mechanism::EccMontgomeryKeyPairGen,
            &[Attribute::EcParams(params.to_vec())],
            &[Attribute::Derive(true), Attribute::Extractable(true)],
        )
        .unwrap()
    };
    let (pub1, priv1) = generate(OID);
    let (pub2, priv2) = generate(PRINTABLE);
    let p1 = ec_point(&s, pub1);
    let p2 = ec_point(&s, pub2);
    assert_eq!((p1.len(), p2.len()), (58, 58));
    let z = derive(&s, priv1, &p2, EcKdf::null());
    assert_eq!(z, derive(&s, priv2, &p1, EcKdf::null()));
    assert_eq!(z.len(), 56);
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
    let wrapped = s.wrap_key(&Mechanism::AesKeyWrapPad, kek, priv1).unwrap();
    let unwrapped = s
        .unwrap_key(
            &Mechanism::AesKeyWrapPad,
            kek,
            &wrapped,
            &[
                Attribute::Class(ObjectClass::PRIVATE_KEY),
                Attribute::KeyType(KeyType::EC_MONTGOMERY),
                Attribute::Derive(true),
            ],
        )
        .unwrap();
    assert_eq!(ec_point(&s, unwrapped), p1);
    assert_eq!(derive(&s, unwrapped, &p2, EcKdf::null()), z);
    // An X25519 peer value on an X448 key, and X448 values under X25519
    // parameters, are refused.
    assert_rv!(
        try_derive(&s, priv1, &[9; 32], EcKdf::null()),
        MechanismParamInvalid
    );
    assert_rv!(
        s.create_object(&[
            Attribute::Class(ObjectClass::PRIVATE_KEY),
            Attribute::KeyType(KeyType::EC_MONTGOMERY),
            Attribute::EcParams(b"\x13\x0acurve25519".to_vec()),
            Attribute::Value(vec![7; 56]),
        ]),
        AttributeValueInvalid
    );
}

/// Cross-check with python `cryptography` (OpenSSL's X448): python reads
/// the token key's `CKA_PUBLIC_KEY_INFO` (so the SPKI parses) and derives
/// with its own key; the token derives with python's public value; the
/// secrets are equal.
#[test]
fn x448_cross_check_with_python_cryptography() {
    const SCRIPT: &str = r#"
import sys
from cryptography.hazmat.primitives import serialization as S
from cryptography.hazmat.primitives.asymmetric import x448
peer = S.load_der_public_key(bytes.fromhex(sys.argv[1]))
k = x448.X448PrivateKey.generate()
pub = k.public_key().public_bytes(S.Encoding.Raw, S.PublicFormat.Raw)
print(pub.hex(), k.exchange(peer).hex())
"#;
    let f = Fixture::new();
    let slot = f.token("x448-py");
    let s = f.user(slot);
    let (public, private) = s
        .generate_key_pair(
            &Mechanism::EccMontgomeryKeyPairGen,
            &[Attribute::EcParams(PRINTABLE.to_vec())],
            &[Attribute::Derive(true)],
        )
        .unwrap();
    let spki = match s
        .get_attributes(public, &[AttributeType::PublicKeyInfo])
        .unwrap()
        .pop()
    {
        Some(Attribute::PublicKeyInfo(v)) => v,
        other => panic!("{other:?}"),
    };
    let out = python_cryptography(SCRIPT, &[&to_hex(&spki)]);
    let (py_public, py_shared) = (unhex(&out[0]), unhex(&out[1]));
    assert_eq!(derive(&s, private, &py_public, EcKdf::null()), py_shared);
    assert_eq!(
        derive(&s, private, &der(&py_public), EcKdf::null()),
        py_shared
    );
}
