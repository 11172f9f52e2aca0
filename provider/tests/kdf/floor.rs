//! The key-length floor of derivation (docs/SECURITY.md, "Key-management
//! policy"; PKCS #11 3.0 mechanisms spec §2.42, §2.43): what a key derived
//! from a protected base may be.

use super::*;

/// The key-length floor of derivation (docs/SECURITY.md, "Key-management
/// policy"): a key derived from a protected base keeps at least 112 bits,
/// whatever the mechanism (HKDF, SP 800-108 and each additional key, ECDH);
/// a data object from HKDF, or a key from a readable base, is not limited.
#[test]
fn derivation_floor_for_protected_bases() {
    let f = Fixture::new();
    let slot = f.token("floor");
    let s = f.user(slot);
    let protected = secret(&s, &[7; 32], true);
    let good = HkdfParams::new(
        MechanismType::SHA256,
        Some(HkdfSalt::Null),
        Some(b"info".as_slice()),
    );
    assert_rv!(
        s.derive_key(&Mechanism::HkdfDerive(good), protected, &open_secret(13)),
        KeySizeRange
    );
    s.derive_key(&Mechanism::HkdfDerive(good), protected, &open_secret(14))
        .unwrap();
    s.derive_key(
        &Mechanism::HkdfData(good),
        protected,
        &[Attribute::ValueLen(1.into()), Attribute::Token(false)],
    )
    .unwrap();
    let readable = s
        .create_object(&[
            Attribute::Class(ObjectClass::SECRET_KEY),
            Attribute::KeyType(KeyType::GENERIC_SECRET),
            Attribute::Value(vec![7; 32]),
            Attribute::Derive(true),
            Attribute::Sensitive(false),
            Attribute::Extractable(true),
            Attribute::Token(false),
        ])
        .unwrap();
    s.derive_key(&Mechanism::HkdfDerive(good), readable, &open_secret(1))
        .unwrap();
    // SP 800-108: one short additional key refuses the whole derivation.
    let fmt = ctr(16, false);
    let label = b"label".to_vec();
    let k = Kdf {
        ty: CKM_SP800_108_COUNTER_KDF,
        prf: CKM_SHA256_HMAC,
        data: vec![iter_ctr(&fmt), bytes(&label)],
        iv: None,
    };
    assert_eq!(
        sp800_108::derive(&s, &k, protected, &[32, 1]),
        Err(cryptoki_sys::CKR_KEY_SIZE_RANGE)
    );
    assert_eq!(
        sp800_108::derive(&s, &k, protected, &[32, 14])
            .unwrap()
            .len(),
        2
    );
    assert_eq!(
        sp800_108::derive(&s, &k, readable, &[32, 1]).unwrap().len(),
        2
    );
    // ECDH with the shared secret itself (CKD_NULL) cut to 13 bytes.
    use cryptoki::mechanism::elliptic_curve::{EcKdf, Ecdh1DeriveParams};
    let p256 = vec![0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];
    let pair = |derive: bool| {
        s.generate_key_pair(
            &Mechanism::EccKeyPairGen,
            &[Attribute::Token(false), Attribute::EcParams(p256.clone())],
            &[Attribute::Token(false), Attribute::Derive(derive)],
        )
        .unwrap()
    };
    let (_, ours) = pair(true);
    let (peer, _) = pair(false);
    let point = match s
        .get_attributes(peer, &[AttributeType::EcPoint])
        .unwrap()
        .remove(0)
    {
        Attribute::EcPoint(p) => p,
        other => panic!("{other:?}"),
    };
    let ecdh = |len: u64| {
        s.derive_key(
            &Mechanism::Ecdh1Derive(Ecdh1DeriveParams::new(EcKdf::null(), &point)),
            ours,
            &open_secret(len),
        )
    };
    assert_rv!(ecdh(13), KeySizeRange);
    ecdh(16).unwrap();
}
