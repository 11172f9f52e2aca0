//! X25519 through the C API (mechanisms spec 3.0 §2.3: Montgomery keys,
//! their key pair generation and `CKM_ECDH1_DERIVE`): RFC 7748 §5.2 and
//! §6.1 known answers through imported keys and `C_DeriveKey`, generated
//! pairs that agree, the key encodings and the refusals.

mod common;

use common::*;
use cryptoki::mechanism::Mechanism;
use cryptoki::mechanism::elliptic_curve::{EcKdf, Ecdh1DeriveParams};
use cryptoki::object::{Attribute, AttributeType, KeyType, ObjectClass, ObjectHandle};
use cryptoki::session::Session;

const OID: &[u8] = &[0x06, 0x03, 0x2b, 0x65, 0x6e];
const PRINTABLE: &[u8] = b"\x13\x0acurve25519";

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
    [&[0x04, 0x20][..], point].concat()
}

/// Derives a readable generic secret with `kdf` and returns its value.
fn derive(s: &Session, private: ObjectHandle, public: &[u8], kdf: EcKdf<'_>) -> Vec<u8> {
    let key = s
        .derive_key(
            &Mechanism::Ecdh1Derive(Ecdh1DeriveParams::new(kdf, public)),
            private,
            &[
                Attribute::Class(ObjectClass::SECRET_KEY),
                Attribute::KeyType(KeyType::GENERIC_SECRET),
                Attribute::Sensitive(false),
                Attribute::Extractable(true),
            ],
        )
        .unwrap();
    match s
        .get_attributes(key, &[AttributeType::Value])
        .unwrap()
        .pop()
    {
        Some(Attribute::Value(v)) => v,
        other => panic!("{other:?}"),
    }
}

/// RFC 7748 §6.1: Alice's and Bob's imported keys give their published
/// public keys (`CKA_EC_POINT`, DER) and, both ways, the shared secret.
#[test]
fn rfc7748_section_6_1_through_imported_keys() {
    let f = Fixture::new();
    let slot = f.token("x25519");
    let s = f.user(slot);
    let a = unhex("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a");
    let a_pub = unhex("8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a");
    let b = unhex("5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb");
    let b_pub = unhex("de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f");
    let k = unhex("4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742");
    let alice = import_private(&s, &a, OID);
    let bob = import_private(&s, &b, PRINTABLE);
    assert_eq!(ec_point(&s, alice), der(&a_pub));
    assert_eq!(ec_point(&s, bob), der(&b_pub));
    // Public data raw (Alice) and DER (Bob).
    assert_eq!(derive(&s, alice, &b_pub, EcKdf::null()), k);
    assert_eq!(derive(&s, bob, &der(&a_pub), EcKdf::null()), k);
    // A public key object imported raw is returned as DER.
    let public = s
        .create_object(&[
            Attribute::Class(ObjectClass::PUBLIC_KEY),
            Attribute::KeyType(KeyType::EC_MONTGOMERY),
            Attribute::EcParams(OID.to_vec()),
            Attribute::EcPoint(b_pub.clone()),
        ])
        .unwrap();
    assert_eq!(ec_point(&s, public), der(&b_pub));
    // The KDF path agrees both ways and differs from the raw secret.
    let x = derive(&s, alice, &b_pub, EcKdf::sha256(&[]));
    assert_eq!(x, derive(&s, bob, &a_pub, EcKdf::sha256(&[])));
    assert_ne!(x, k);
    // The private value is sensitive and not extractable by default.
    let attrs = s
        .get_attributes(
            alice,
            &[AttributeType::Sensitive, AttributeType::Extractable],
        )
        .unwrap();
    assert_eq!(
        attrs,
        vec![Attribute::Sensitive(true), Attribute::Extractable(false)]
    );
    let mut value = [0u8; 32];
    let mut template = [cryptoki_sys::CK_ATTRIBUTE {
        type_: cryptoki_sys::CKA_VALUE,
        pValue: value.as_mut_ptr().cast(),
        ulValueLen: 32,
    }];
    // SAFETY: pValue points at a buffer of ulValueLen bytes.
    let rv = unsafe {
        raw().C_GetAttributeValue.unwrap()(s.handle(), alice.handle(), template.as_mut_ptr(), 1)
    };
    assert_eq!(rv, cryptoki_sys::CKR_ATTRIBUTE_SENSITIVE);
    assert_eq!(value, [0u8; 32]);
}

/// RFC 7748 §5.2: the two single X25519 vectors (input scalar as an
/// imported private key, input u-coordinate as `pPublicData`; the second
/// u has its top bit set, which X25519 ignores).
#[test]
fn rfc7748_section_5_2_vectors() {
    let f = Fixture::new();
    let slot = f.token("x25519-5-2");
    let s = f.user(slot);
    for (scalar, u, out) in [
        (
            "a546e36bf0527c9d3b16154b82465edd62144c0ac1fc5a18506a2244ba449ac4",
            "e6db6867583030db3594c1a424b15f7c726624ec26b3353b10a903a6d0ab1c4c",
            "c3da55379de9c6908e94ea4df28d084f32eccf03491c71f754b4075577a28552",
        ),
        (
            "4b66e9d4d1b4673c5ad22691957d6af5c11b6421e0ea01d42ca4169e7918ba0d",
            "e5210f12786811d3f4b7959d0538ae2c31dbe7106fc03c3efc4cd549c715a493",
            "95cbde9476e8907d7aade45cb4b873f88b595a68799fa152e6f8f7647aac7957",
        ),
    ] {
        let key = import_private(&s, &unhex(scalar), OID);
        assert_eq!(derive(&s, key, &unhex(u), EcKdf::null()), unhex(out));
    }
}

/// Generated pairs (`CKM_EC_MONTGOMERY_KEY_PAIR_GEN`) agree; token keys
/// survive a restart (their sealed `CKA_VALUE` opens again); a low-order
/// peer point, a wrong-length point and curves that are not Montgomery
/// curves are refused.
#[test]
fn generated_pairs_agree_and_refusals() {
    let mut f = Fixture::new();
    let slot = f.token("x25519-gen");
    let gen_pair = |s: &Session| {
        s.generate_key_pair(
            &Mechanism::EccMontgomeryKeyPairGen,
            &[
                Attribute::EcParams(PRINTABLE.to_vec()),
                Attribute::Token(true),
            ],
            &[
                Attribute::Derive(true),
                Attribute::Token(true),
                Attribute::Private(true),
            ],
        )
        .unwrap()
    };
    let (pa, pb, ab) = {
        let s = f.user(slot);
        let (a_pub, a_priv) = gen_pair(&s);
        let (b_pub, b_priv) = gen_pair(&s);
        let (pa, pb) = (ec_point(&s, a_pub), ec_point(&s, b_pub));
        assert_eq!((pa.len(), &pa[..2]), (34, &[0x04, 0x20][..]));
        let ab = derive(&s, a_priv, &pb, EcKdf::null());
        assert_eq!(ab, derive(&s, b_priv, &pa, EcKdf::null()));
        assert_eq!(ab.len(), 32);
        assert_ne!(ab, vec![0u8; 32]);
        // Low-order points give an all-zero secret: refused.
        let mut one = vec![0u8; 32];
        one[0] = 1;
        for u in [vec![0u8; 32], one] {
            assert_rv!(
                s.derive_key(
                    &Mechanism::Ecdh1Derive(Ecdh1DeriveParams::new(EcKdf::null(), &u)),
                    a_priv,
                    &[Attribute::Class(ObjectClass::SECRET_KEY)],
                ),
                MechanismParamInvalid
            );
        }
        assert_rv!(
            s.derive_key(
                &Mechanism::Ecdh1Derive(Ecdh1DeriveParams::new(EcKdf::null(), &[9; 31])),
                a_priv,
                &[Attribute::Class(ObjectClass::SECRET_KEY)],
            ),
            MechanismParamInvalid
        );
        // Not Montgomery curves: Ed25519's OID, an unknown name (X448 has
        // tests/x448.rs).
        for other in [&[0x06, 0x03, 0x2b, 0x65, 0x70][..], b"\x13\x08curve449"] {
            assert_rv!(
                s.generate_key_pair(
                    &Mechanism::EccMontgomeryKeyPairGen,
                    &[Attribute::EcParams(other.to_vec())],
                    &[Attribute::Derive(true)],
                ),
                CurveNotSupported
            );
        }
        (pa, pb, ab)
    };
    f.restart();
    let s = f.user(slot);
    let privates = s
        .find_objects(&[
            Attribute::Class(ObjectClass::PRIVATE_KEY),
            Attribute::KeyType(KeyType::EC_MONTGOMERY),
        ])
        .unwrap();
    assert_eq!(privates.len(), 2);
    for k in privates {
        let mine = ec_point(&s, k);
        let other = if mine == pa { &pb } else { &pa };
        assert_eq!(derive(&s, k, other, EcKdf::null()), ab);
    }
}

/// A token X25519 private key's `CKA_VALUE` is sealed in the token file,
/// even with `CKA_PRIVATE` false (the policy table marks it sensitive), and
/// opens again after a restart: the derived secret is the same.
#[test]
fn private_value_is_sealed_on_the_token() {
    let mut f = Fixture::new();
    let slot = f.token("x25519-sealed");
    let serial = f
        .p()
        .get_token_info(slot)
        .unwrap()
        .serial_number()
        .to_string();
    let marker = b"X25519-PRIVATE-VALUE-MARKER-0032".to_vec();
    let peer = unhex("de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f");
    let before = {
        let s = f.user(slot);
        let key = s
            .create_object(&[
                Attribute::Class(ObjectClass::PRIVATE_KEY),
                Attribute::KeyType(KeyType::EC_MONTGOMERY),
                Attribute::EcParams(OID.to_vec()),
                Attribute::Value(marker.clone()),
                Attribute::Derive(true),
                Attribute::Token(true),
                Attribute::Private(false),
                Attribute::Label(b"sealed".to_vec()),
            ])
            .unwrap();
        derive(&s, key, &peer, EcKdf::null())
    };
    f.stop();
    let bytes: Vec<u8> = ["", "-wal"]
        .iter()
        .filter_map(|side| {
            std::fs::read(
                f.dir
                    .path()
                    .join("tokens")
                    .join(format!("{serial}.sqlite{side}")),
            )
            .ok()
        })
        .flatten()
        .collect();
    assert!(!bytes.is_empty(), "token file found");
    assert!(
        !bytes.windows(marker.len()).any(|w| w == &marker[..]),
        "the private value is stored in the clear"
    );
    f.start();
    let s = f.user(slot);
    let key = s
        .find_objects(&[Attribute::Label(b"sealed".to_vec())])
        .unwrap()[0];
    assert_eq!(derive(&s, key, &peer, EcKdf::null()), before);
}

/// An extractable X25519 private key wraps (PKCS #8, RFC 8410) under an AES
/// key and unwraps as a key that derives the same RFC 7748 §6.1 secret,
/// with its public point and SubjectPublicKeyInfo recomputed.
#[test]
fn private_keys_wrap_and_unwrap() {
    let f = Fixture::new();
    let slot = f.token("x25519-wrap");
    let s = f.user(slot);
    let a = unhex("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a");
    let a_pub = unhex("8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a");
    let b_pub = unhex("de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f");
    let k = unhex("4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742");
    let alice = s
        .create_object(&[
            Attribute::Class(ObjectClass::PRIVATE_KEY),
            Attribute::KeyType(KeyType::EC_MONTGOMERY),
            Attribute::EcParams(OID.to_vec()),
            Attribute::Value(a),
            Attribute::Derive(true),
            Attribute::Extractable(true),
        ])
        .unwrap();
    let kek = s
        .create_object(&[
            Attribute::Class(ObjectClass::SECRET_KEY),
            Attribute::KeyType(KeyType::AES),
            Attribute::Value(vec![3; 32]),
            Attribute::Wrap(true),
            Attribute::Unwrap(true),
            Attribute::Encrypt(false),
            Attribute::Decrypt(false),
        ])
        .unwrap();
    let wrapped = s.wrap_key(&Mechanism::AesKeyWrapPad, kek, alice).unwrap();
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
    assert_eq!(derive(&s, unwrapped, &b_pub, EcKdf::null()), k);
    assert_eq!(ec_point(&s, unwrapped), der(&a_pub));
    let spki = match s
        .get_attributes(unwrapped, &[AttributeType::PublicKeyInfo])
        .unwrap()
        .pop()
    {
        Some(Attribute::PublicKeyInfo(v)) => v,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        spki,
        [&unhex("302a300506032b656e032100")[..], &a_pub].concat()
    );
    // An Ed25519 key type for the same bytes is refused: the PKCS #8 names X25519.
    assert_rv!(
        s.unwrap_key(
            &Mechanism::AesKeyWrapPad,
            kek,
            &wrapped,
            &[
                Attribute::Class(ObjectClass::PRIVATE_KEY),
                Attribute::KeyType(KeyType::EC_EDWARDS),
                Attribute::Sign(true),
            ],
        ),
        WrappedKeyInvalid
    );
}

/// The SP 800-56C one-step KDF (`CKD_SHA256_KDF_SP800`: SHA-256 of
/// counter ‖ Z ‖ FixedInfo): the known answer the `cryptoki` crate's own
/// test suite uses (an X25519 key, an ephemeral peer and OpenPGP-style
/// fixed info), which differs from the X9.63 form (counter after Z).
#[test]
fn sp800_56c_kdf_known_answer() {
    let f = Fixture::new();
    let slot = f.token("x25519sp800");
    let s = f.user(slot);
    let private = import_private(
        &s,
        &unhex("F00670C5F139E7E6C2511EA04FF507AFBBE237CE3C71A89CA59A1C5CF8856562"),
        PRINTABLE,
    );
    let peer = unhex("533B3F09E53B3DEED661A13F7A7D9694AB71CE156C728E00DEE87A1EE3A14C4A");
    let info = unhex(
        "0A2B0601040197550105011203010807416E6F6E796D6F75732053656E646572202020205633A4C5AE4305BC0FE2ABB699A8EE54632790A0",
    );
    let sp800 = derive(&s, private, &peer, EcKdf::sha256_sp800(&info));
    assert_eq!(sp800[..16], unhex("AF8CE51D0139A6D60831A9BABAB20186")[..]);
    let x963 = derive(&s, private, &peer, EcKdf::sha256(&info));
    assert_ne!(x963[..16], sp800[..16]);
}
