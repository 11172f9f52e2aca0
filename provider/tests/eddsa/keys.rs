//! Ed25519 keys (mechanisms spec §2.3.5–2.3.6): usage flags, login and
//! `CKA_ALLOWED_MECHANISMS`, token keys that persist, and curves that are
//! not Edwards curves refused as `CKR_CURVE_NOT_SUPPORTED` (Ed448 has
//! `ed448.rs`).

use super::*;

#[test]
fn usage_flags_login_and_allowed_mechanisms() {
    let f = Fixture::new();
    let slot = f.token("usage");
    let s = f.user(slot);
    let vectors = rfc8032();
    let no_sign = s
        .create_object(&[
            Attribute::Class(ObjectClass::PRIVATE_KEY),
            Attribute::KeyType(KeyType::EC_EDWARDS),
            Attribute::EcParams(OID.to_vec()),
            Attribute::Value(vectors[0].secret.clone()),
            Attribute::Sign(false),
        ])
        .unwrap();
    assert_rv!(s.sign(&eddsa(), no_sign, b"x"), KeyFunctionNotPermitted);
    let only_sha = s
        .create_object(&[
            Attribute::Class(ObjectClass::PRIVATE_KEY),
            Attribute::KeyType(KeyType::EC_EDWARDS),
            Attribute::EcParams(OID.to_vec()),
            Attribute::Value(vectors[0].secret.clone()),
            Attribute::AllowedMechanisms(vec![cryptoki::mechanism::MechanismType::SHA256]),
        ])
        .unwrap();
    assert_rv!(s.sign(&eddsa(), only_sha, b"x"), MechanismInvalid);
    let data = s
        .create_object(&[
            Attribute::Class(ObjectClass::DATA),
            Attribute::Value(b"v".to_vec()),
        ])
        .unwrap();
    assert_rv!(s.sign(&eddsa(), data, b"x"), KeyTypeInconsistent);
    let (_, private) = generate(&s, true);
    let other = f.p().open_ro_session(slot).unwrap();
    s.logout().unwrap();
    assert_rv!(other.sign(&eddsa(), private, b"x"), UserNotLoggedIn);
}

#[test]
fn token_keys_persist_and_cached_keys_follow_logout() {
    let mut f = Fixture::new();
    let slot = f.token("persist");
    let msg = b"persisted".to_vec();
    let sig = {
        let s = f.user(slot);
        let (_, private) = generate(&s, true);
        s.sign(&eddsa(), private, &msg).unwrap()
    };
    f.restart();
    let s = f.user(slot);
    let found = s
        .find_objects(&[
            Attribute::Class(ObjectClass::PRIVATE_KEY),
            Attribute::Label(b"gen".to_vec()),
        ])
        .unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(
        s.sign(&eddsa(), found[0], &msg).unwrap(),
        sig,
        "same key after restart"
    );
    let public = s
        .find_objects(&[Attribute::Class(ObjectClass::PUBLIC_KEY)])
        .unwrap();
    s.verify(&eddsa(), public[0], &msg, &sig).unwrap();
    // Logout ends operations in progress.
    s.sign_init(&eddsa(), found[0]).unwrap();
    s.logout().unwrap();
    assert_rv!(s.sign_final(), OperationNotInitialized);
}

/// Parameters naming no Edwards curve (X448's OID, an unknown name) are
/// `CKR_CURVE_NOT_SUPPORTED` for generation and import.
#[test]
fn other_curves_are_not_supported() {
    let f = Fixture::new();
    let slot = f.token("ed-other");
    let s = f.user(slot);
    for params in [&[0x06, 0x03, 0x2b, 0x65, 0x6f][..], b"\x13\x0aedwards449"] {
        assert_rv!(
            s.generate_key_pair(
                &Mechanism::EccEdwardsKeyPairGen,
                &[Attribute::EcParams(params.to_vec())],
                &[Attribute::Sign(true)],
            ),
            CurveNotSupported
        );
        assert_rv!(
            s.create_object(&[
                Attribute::Class(ObjectClass::PUBLIC_KEY),
                Attribute::KeyType(KeyType::EC_EDWARDS),
                Attribute::EcParams(params.to_vec()),
                Attribute::EcPoint(vec![1; 57]),
            ]),
            CurveNotSupported
        );
    }
}
