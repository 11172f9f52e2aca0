//! HKDF (PKCS #11 3.0 mechanisms spec §2.43: `CKM_HKDF_DERIVE`,
//! `CKM_HKDF_DATA`, `CKM_HKDF_KEY_GEN`) against the RFC 5869 appendix A
//! vectors, its parameter and length checks, and what a derived key
//! inherits from its bases.

use super::*;

struct Vector {
    hash: MechanismType,
    ikm: Vec<u8>,
    salt: Vec<u8>,
    info: Vec<u8>,
    prk: &'static str,
    okm: &'static str,
}

/// RFC 5869 appendix A, test cases 1, 2, 3 (SHA-256) and 4 (SHA-1).
fn vectors() -> Vec<Vector> {
    vec![
        Vector {
            hash: MechanismType::SHA256,
            ikm: vec![0x0b; 22],
            salt: (0..13).collect(),
            info: (0xf0..0xfa).collect(),
            prk: "077709362c2e32df0ddc3f0dc47bba6390b6c73bb50f9c3122ec844ad7c2b3e5",
            okm: "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865",
        },
        Vector {
            hash: MechanismType::SHA256,
            ikm: (0..0x50).collect(),
            salt: (0x60..0xb0).collect(),
            info: (0xb0..=0xff).collect(),
            prk: "06a6b88c5853361a06104c9ceb35b45cef760014904671014a193f40c15fc244",
            okm: "b11e398dc80327a1c8e7f78c596a49344f012eda2d4efad8a050cc4c19afa97c59045a99cac7827271cb41c65e590e09da3275600c2f09b8367793a9aca3db71cc30c58179ec3e87c14c01d5c1f3434f1d87",
        },
        Vector {
            hash: MechanismType::SHA256,
            ikm: vec![0x0b; 22],
            salt: vec![],
            info: vec![],
            prk: "19ef24a32c717b167f33a91d6f648bdf96596776afdb6377ac434c1c293ccb04",
            okm: "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8",
        },
        Vector {
            hash: MechanismType::SHA1,
            ikm: vec![0x0b; 11],
            salt: (0..13).collect(),
            info: (0xf0..0xfa).collect(),
            prk: "9b6c18c432a7bf8f0e71c8eb88f4b30baa2ba243",
            okm: "085a01ea1b10f36933068b56efa5ad81a4f14b822f5b091568a9cdd4f155fda2c22e422478d305f3f896",
        },
    ]
}

/// Every RFC 5869 vector, through extract-and-expand, extract alone, expand
/// alone (from the PRK as a key), a salt given as a key, and `CKM_HKDF_DATA`.
#[test]
fn rfc5869_vectors_through_every_hkdf_form() {
    let f = Fixture::new();
    let slot = f.token("hkdf");
    let s = f.user(slot);
    for (i, v) in vectors().iter().enumerate() {
        let (prk, okm) = (unhex(v.prk), unhex(v.okm));
        let base = secret(&s, &v.ikm, true);
        let salt = if v.salt.is_empty() {
            HkdfSalt::Null
        } else {
            HkdfSalt::Data(&v.salt)
        };
        let both = HkdfParams::new(v.hash, Some(salt), Some(&v.info));
        let key = s
            .derive_key(
                &Mechanism::HkdfDerive(both),
                base,
                &open_secret(okm.len() as u64),
            )
            .unwrap();
        assert_eq!(value(&s, key), okm, "case {}", i + 1);
        // Extract alone: the PRK, the hash's length.
        let extract = HkdfParams::new(v.hash, Some(salt), None);
        let mut t = open_secret(0);
        t.retain(|a| a.attribute_type() != AttributeType::ValueLen);
        let key = s
            .derive_key(&Mechanism::HkdfDerive(extract), base, &t)
            .unwrap();
        assert_eq!(value(&s, key), prk, "case {} PRK", i + 1);
        // Expand alone, from the PRK.
        let prk_key = secret(&s, &prk, true);
        let expand = HkdfParams::new(v.hash, None, Some(&v.info));
        let key = s
            .derive_key(
                &Mechanism::HkdfDerive(expand),
                prk_key,
                &open_secret(okm.len() as u64),
            )
            .unwrap();
        assert_eq!(value(&s, key), okm, "case {} expand", i + 1);
        // The salt as a key (which must allow derivation).
        if !v.salt.is_empty() {
            let salt_key = secret(&s, &v.salt, true);
            let keyed = HkdfParams::new(v.hash, Some(HkdfSalt::Key(salt_key)), Some(&v.info));
            let key = s
                .derive_key(
                    &Mechanism::HkdfDerive(keyed),
                    base,
                    &open_secret(okm.len() as u64),
                )
                .unwrap();
            assert_eq!(value(&s, key), okm, "case {} salt key", i + 1);
            let no_derive = secret(&s, &v.salt, false);
            let keyed = HkdfParams::new(v.hash, Some(HkdfSalt::Key(no_derive)), Some(&v.info));
            assert_rv!(
                s.derive_key(
                    &Mechanism::HkdfDerive(keyed),
                    base,
                    &open_secret(okm.len() as u64)
                ),
                KeyFunctionNotPermitted
            );
        }
        // CKM_HKDF_DATA makes a data object holding the output.
        let data = s
            .derive_key(
                &Mechanism::HkdfData(both),
                base,
                &[
                    Attribute::Class(ObjectClass::DATA),
                    Attribute::ValueLen((okm.len() as u64).into()),
                    Attribute::Token(false),
                ],
            )
            .unwrap();
        assert_eq!(value(&s, data), okm, "case {} data", i + 1);
        match &s.get_attributes(data, &[AttributeType::Class]).unwrap()[0] {
            Attribute::Class(c) => assert_eq!(*c, ObjectClass::DATA),
            other => panic!("{other:?}"),
        }
    }
}

/// Bad parameters and bases get the spec's codes; `CKM_HKDF_KEY_GEN` makes
/// `CKK_HKDF` keys that HKDF accepts as a base and nothing else does.
#[test]
fn hkdf_checks_parameters_keys_and_lengths() {
    let f = Fixture::new();
    let slot = f.token("hkdfbad");
    let s = f.user(slot);
    let base = secret(&s, &[7; 32], true);
    let info = b"info".as_slice();
    // Neither extract nor expand.
    let neither = HkdfParams::new(MechanismType::SHA256, None, None);
    assert_rv!(
        s.derive_key(&Mechanism::HkdfDerive(neither), base, &open_secret(32)),
        MechanismParamInvalid
    );
    // Not a hash the PRF can use.
    let md5 = HkdfParams::new(MechanismType::AES_ECB, Some(HkdfSalt::Null), Some(info));
    assert_rv!(
        s.derive_key(&Mechanism::HkdfDerive(md5), base, &open_secret(32)),
        MechanismParamInvalid
    );
    let good = HkdfParams::new(MechanismType::SHA256, Some(HkdfSalt::Null), Some(info));
    // Expanding needs a length; lengths are bounded.
    let mut no_len = open_secret(0);
    no_len.retain(|a| a.attribute_type() != AttributeType::ValueLen);
    assert_rv!(
        s.derive_key(&Mechanism::HkdfDerive(good), base, &no_len),
        TemplateIncomplete
    );
    for len in [0u64, 513, u32::MAX as u64] {
        assert_rv!(
            s.derive_key(&Mechanism::HkdfDerive(good), base, &open_secret(len)),
            AttributeValueInvalid
        );
    }
    // An AES base is refused; an AES key may be derived.
    let aes = s
        .generate_key(
            &Mechanism::AesKeyGen,
            &[Attribute::ValueLen(32.into()), Attribute::Derive(true)],
        )
        .unwrap();
    assert_rv!(
        s.derive_key(&Mechanism::HkdfDerive(good), aes, &open_secret(32)),
        KeyTypeInconsistent
    );
    let derived_aes = s
        .derive_key(
            &Mechanism::HkdfDerive(good),
            base,
            &[
                Attribute::Class(ObjectClass::SECRET_KEY),
                Attribute::KeyType(KeyType::AES),
                Attribute::ValueLen(16.into()),
                Attribute::Encrypt(true),
                Attribute::Token(false),
            ],
        )
        .unwrap();
    s.encrypt(&Mechanism::AesEcb, derived_aes, &[0u8; 16])
        .unwrap();
    // A data object from a key template is inconsistent.
    assert_rv!(
        s.derive_key(
            &Mechanism::HkdfData(good),
            base,
            &[
                Attribute::Class(ObjectClass::SECRET_KEY),
                Attribute::ValueLen(16.into())
            ]
        ),
        TemplateInconsistent
    );
    // CKM_HKDF_KEY_GEN: a CKK_HKDF key, an HKDF base, not an HMAC key.
    let hkdf_key = s
        .generate_key(
            &Mechanism::HkdfKeyGen,
            &[
                Attribute::ValueLen(32.into()),
                Attribute::Derive(true),
                Attribute::Sign(true),
                Attribute::Token(false),
            ],
        )
        .unwrap();
    match &s
        .get_attributes(hkdf_key, &[AttributeType::KeyType])
        .unwrap()[0]
    {
        Attribute::KeyType(k) => assert_eq!(*k, KeyType::HKDF),
        other => panic!("{other:?}"),
    }
    let derived = s
        .derive_key(&Mechanism::HkdfDerive(good), hkdf_key, &open_secret(48))
        .unwrap();
    assert_eq!(value(&s, derived).len(), 48);
    assert_rv!(
        s.sign(&Mechanism::Sha256Hmac, hkdf_key, b"x"),
        KeyTypeInconsistent
    );
}

/// A derived key is always sensitive (never extractable) only if its base
/// always was and it is itself sensitive (unextractable): mechanisms spec
/// 3.0's rule for every derivation.
#[test]
fn derived_keys_inherit_the_bases_history() {
    let f = Fixture::new();
    let slot = f.token("inherit");
    let s = f.user(slot);
    let params = HkdfParams::new(MechanismType::SHA256, Some(HkdfSalt::Null), Some(b"i"));
    let generated = s
        .generate_key(
            &Mechanism::GenericSecretKeyGen,
            &[
                Attribute::ValueLen(32.into()),
                Attribute::Derive(true),
                Attribute::Sensitive(true),
                Attribute::Extractable(false),
                Attribute::Token(false),
            ],
        )
        .unwrap();
    assert_eq!(flags(&s, generated), (true, true));
    let guarded = [
        Attribute::Class(ObjectClass::SECRET_KEY),
        Attribute::KeyType(KeyType::GENERIC_SECRET),
        Attribute::ValueLen(32.into()),
        Attribute::Sensitive(true),
        Attribute::Extractable(false),
        Attribute::Token(false),
    ];
    let kept = s
        .derive_key(&Mechanism::HkdfDerive(params), generated, &guarded)
        .unwrap();
    assert_eq!(flags(&s, kept), (true, true));
    let opened = s
        .derive_key(&Mechanism::HkdfDerive(params), generated, &open_secret(32))
        .unwrap();
    assert_eq!(flags(&s, opened), (false, false));
    // An imported base was never "always sensitive".
    let imported = secret(&s, &[9; 32], true);
    let from_imported = s
        .derive_key(&Mechanism::HkdfDerive(params), imported, &guarded)
        .unwrap();
    assert_eq!(flags(&s, from_imported), (false, false));
}
