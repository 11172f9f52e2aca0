//! Key derivation through the C API: HKDF (`CKM_HKDF_DERIVE`,
//! `CKM_HKDF_DATA`, `CKM_HKDF_KEY_GEN`; PKCS #11 3.0 mechanisms spec §2.43)
//! against the RFC 5869 appendix A vectors, the simple derivations of §2.42
//! and §2.16.12 (concatenation, XOR, extraction, AES encryption of data),
//! and what a derived key inherits from its bases.

mod common;

use common::*;
use cryptoki::mechanism::ekdf::AesCbcDeriveParams;
use cryptoki::mechanism::hkdf::{HkdfParams, HkdfSalt};
use cryptoki::mechanism::misc::{ExtractParams, KeyDerivationStringData};
use cryptoki::mechanism::{Mechanism, MechanismType};
use cryptoki::object::{Attribute, AttributeType, KeyType, ObjectClass, ObjectHandle};
use cryptoki::session::Session;

/// A generic secret holding `value`, allowed to derive.
fn secret(s: &Session, value: &[u8], derive: bool) -> ObjectHandle {
    s.create_object(&[
        Attribute::Class(ObjectClass::SECRET_KEY),
        Attribute::KeyType(KeyType::GENERIC_SECRET),
        Attribute::Value(value.to_vec()),
        Attribute::Derive(derive),
        Attribute::Token(false),
    ])
    .unwrap()
}

/// Template of an extractable generic secret of `len` bytes.
fn open_secret(len: u64) -> Vec<Attribute> {
    vec![
        Attribute::Class(ObjectClass::SECRET_KEY),
        Attribute::KeyType(KeyType::GENERIC_SECRET),
        Attribute::ValueLen(len.into()),
        Attribute::Sensitive(false),
        Attribute::Extractable(true),
        Attribute::Token(false),
    ]
}

fn value(s: &Session, h: ObjectHandle) -> Vec<u8> {
    match &s.get_attributes(h, &[AttributeType::Value]).unwrap()[0] {
        Attribute::Value(v) => v.clone(),
        other => panic!("{other:?}"),
    }
}

fn flags(s: &Session, h: ObjectHandle) -> (bool, bool) {
    let got = s
        .get_attributes(
            h,
            &[
                AttributeType::AlwaysSensitive,
                AttributeType::NeverExtractable,
            ],
        )
        .unwrap();
    match (&got[0], &got[1]) {
        (Attribute::AlwaysSensitive(a), Attribute::NeverExtractable(n)) => (*a, *n),
        other => panic!("{other:?}"),
    }
}

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

/// A secret key of `key_type` holding `value`, with the given protection.
fn key_with(
    s: &Session,
    key_type: KeyType,
    value: &[u8],
    sensitive: bool,
    extractable: bool,
) -> ObjectHandle {
    s.create_object(&[
        Attribute::Class(ObjectClass::SECRET_KEY),
        Attribute::KeyType(key_type),
        Attribute::Value(value.to_vec()),
        Attribute::Derive(true),
        Attribute::Sensitive(sensitive),
        Attribute::Extractable(extractable),
        Attribute::Token(false),
    ])
    .unwrap()
}

/// Template of an extractable generic secret, of `len` bytes or (`None`)
/// whatever the derivation gives.
fn open_of(len: Option<u64>) -> Vec<Attribute> {
    let mut t = open_secret(len.unwrap_or(0));
    if len.is_none() {
        t.retain(|a| a.attribute_type() != AttributeType::ValueLen);
    }
    t
}

/// §2.42: concatenation with a key or data, XOR, extraction (the spec's own
/// example), lengths taken from the leading bytes.
#[test]
fn simple_derivations_compute_what_the_spec_says() {
    let f = Fixture::new();
    let slot = f.token("simple");
    let s = f.user(slot);
    let a = key_with(&s, KeyType::GENERIC_SECRET, b"abc", false, true);
    let b = key_with(&s, KeyType::GENERIC_SECRET, b"defg", false, true);
    let derive = |m: &Mechanism, base, len| s.derive_key(m, base, &open_of(len));
    let k = derive(&Mechanism::ConcatenateBaseAndKey(b), a, None).unwrap();
    assert_eq!(value(&s, k), b"abcdefg");
    let k = derive(&Mechanism::ConcatenateBaseAndKey(b), a, Some(4)).unwrap();
    assert_eq!(value(&s, k), b"abcd");
    assert_rv!(
        derive(&Mechanism::ConcatenateBaseAndKey(b), a, Some(8)),
        TemplateInconsistent
    );
    let data = KeyDerivationStringData::new(b"XYZ");
    let k = derive(&Mechanism::ConcatenateBaseAndData(data), a, None).unwrap();
    assert_eq!(value(&s, k), b"abcXYZ");
    let k = derive(&Mechanism::ConcatenateDataAndBase(data), a, None).unwrap();
    assert_eq!(value(&s, k), b"XYZabc");
    let mask = KeyDerivationStringData::new(&[0x20, 0x20]);
    let k = derive(&Mechanism::XorBaseAndData(mask), a, None).unwrap();
    assert_eq!(value(&s, k), b"AB");
    let spec = key_with(
        &s,
        KeyType::GENERIC_SECRET,
        &[0x32, 0x9F, 0x84, 0xA9],
        false,
        true,
    );
    let k = derive(
        &Mechanism::ExtractKeyFromKey(ExtractParams::new(21)),
        spec,
        Some(2),
    )
    .unwrap();
    assert_eq!(value(&s, k), [0x95, 0x26]);
    assert_rv!(
        derive(
            &Mechanism::ExtractKeyFromKey(ExtractParams::new(21)),
            spec,
            None
        ),
        TemplateIncomplete
    );
    assert_rv!(
        derive(
            &Mechanism::ExtractKeyFromKey(ExtractParams::new(32)),
            spec,
            Some(2)
        ),
        MechanismParamInvalid
    );
    // The second key must allow derivation; data is bounded.
    let no_derive = s
        .create_object(&[
            Attribute::Class(ObjectClass::SECRET_KEY),
            Attribute::KeyType(KeyType::GENERIC_SECRET),
            Attribute::Value(b"zz".to_vec()),
            Attribute::Token(false),
        ])
        .unwrap();
    assert_rv!(
        derive(&Mechanism::ConcatenateBaseAndKey(no_derive), a, None),
        KeyFunctionNotPermitted
    );
    let long = vec![1u8; 513];
    assert_rv!(
        derive(
            &Mechanism::XorBaseAndData(KeyDerivationStringData::new(&long)),
            a,
            None
        ),
        MechanismParamInvalid
    );
}

/// `C_DeriveKey` with a raw mechanism and parameter (cryptoki has no
/// `CKM_AES_ECB_ENCRYPT_DATA`).
fn raw_derive(
    s: &Session,
    mech: cryptoki_sys::CK_MECHANISM_TYPE,
    param: &mut [u8],
    base: ObjectHandle,
    len: u64,
) -> Result<ObjectHandle, cryptoki_sys::CK_RV> {
    use cryptoki_sys::*;
    let (mut yes, mut no) = (CK_TRUE, CK_FALSE);
    let mut len: CK_ULONG = len as CK_ULONG;
    let mut class = CKO_SECRET_KEY;
    let mut key_type = CKK_GENERIC_SECRET;
    let attr = |ty, p: *mut u8, n| CK_ATTRIBUTE {
        type_: ty,
        pValue: p.cast(),
        ulValueLen: n,
    };
    let mut template = [
        attr(CKA_CLASS, (&mut class as *mut CK_ULONG).cast(), 8),
        attr(CKA_KEY_TYPE, (&mut key_type as *mut CK_ULONG).cast(), 8),
        attr(CKA_VALUE_LEN, (&mut len as *mut CK_ULONG).cast(), 8),
        attr(CKA_EXTRACTABLE, &mut yes, 1),
        attr(CKA_SENSITIVE, &mut no, 1),
        attr(CKA_TOKEN, &mut no, 1),
    ];
    let mut mechanism = CK_MECHANISM {
        mechanism: mech,
        pParameter: param.as_mut_ptr().cast(),
        ulParameterLen: param.len() as CK_ULONG,
    };
    let mut out = 0;
    // SAFETY: every pointer is live for its stated length.
    let rv = unsafe {
        raw().C_DeriveKey.unwrap()(
            s.handle(),
            &mut mechanism,
            base.handle(),
            template.as_mut_ptr(),
            template.len() as CK_ULONG,
            &mut out,
        )
    };
    if rv == CKR_OK {
        // SAFETY: a handle the module just returned.
        Ok(unsafe { ObjectHandle::new_from_raw(out) })
    } else {
        Err(rv)
    }
}

/// §2.16.12: the derived value is AES-ECB / AES-CBC of the data under the
/// base key (NIST SP 800-38A F.1.1 and F.2.1 as the known answers).
#[test]
fn aes_encrypt_data_derivations_match_sp800_38a() {
    let f = Fixture::new();
    let slot = f.token("encdata");
    let s = f.user(slot);
    let base = key_with(
        &s,
        KeyType::AES,
        &unhex("2b7e151628aed2a6abf7158809cf4f3c"),
        false,
        true,
    );
    let mut plain = unhex("6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e51");
    let iv: [u8; 16] = unhex("000102030405060708090a0b0c0d0e0f")
        .try_into()
        .unwrap();
    let k = s
        .derive_key(
            &Mechanism::AesCbcEncryptData(AesCbcDeriveParams::new(iv, &plain)),
            base,
            &open_of(Some(32)),
        )
        .unwrap();
    assert_eq!(
        value(&s, k),
        unhex("7649abac8119b246cee98e9b12e9197d5086cb9b507219ee95db113a917678b2")
    );
    // CK_KEY_DERIVATION_STRING_DATA over the plaintext.
    let mut string = cryptoki_sys::CK_KEY_DERIVATION_STRING_DATA {
        pData: plain.as_mut_ptr(),
        ulLen: plain.len() as cryptoki_sys::CK_ULONG,
    };
    // SAFETY: viewing a plain C struct as bytes for the raw call.
    let param = unsafe {
        std::slice::from_raw_parts_mut(
            (&mut string as *mut cryptoki_sys::CK_KEY_DERIVATION_STRING_DATA).cast::<u8>(),
            std::mem::size_of::<cryptoki_sys::CK_KEY_DERIVATION_STRING_DATA>(),
        )
    };
    let k = raw_derive(&s, cryptoki_sys::CKM_AES_ECB_ENCRYPT_DATA, param, base, 32).unwrap();
    assert_eq!(
        value(&s, k),
        unhex("3ad77bb40d7a3660a89ecaf32466ef97f5d3d58503b9699de785895a96fdbaaf")
    );
    // Leading bytes for a shorter key; whole blocks only; AES bases only.
    let k = raw_derive(&s, cryptoki_sys::CKM_AES_ECB_ENCRYPT_DATA, param, base, 16).unwrap();
    assert_eq!(value(&s, k), unhex("3ad77bb40d7a3660a89ecaf32466ef97"));
    let generic = key_with(&s, KeyType::GENERIC_SECRET, &[1; 16], false, true);
    assert_eq!(
        raw_derive(
            &s,
            cryptoki_sys::CKM_AES_ECB_ENCRYPT_DATA,
            param,
            generic,
            16
        )
        .unwrap_err(),
        cryptoki_sys::CKR_KEY_TYPE_INCONSISTENT
    );
    assert_rv!(
        s.derive_key(
            &Mechanism::AesCbcEncryptData(AesCbcDeriveParams::new(iv, &plain[..20])),
            base,
            &open_of(Some(16)),
        ),
        MechanismParamInvalid
    );
}

/// §2.42: a key derived by a simple function of its bases is at least as
/// protected as each of them, whatever the template asks; its
/// `CKA_ALWAYS_SENSITIVE` / `CKA_NEVER_EXTRACTABLE` need both bases'.
#[test]
fn simple_derivations_never_loosen_the_bases_protection() {
    let f = Fixture::new();
    let slot = f.token("loosen");
    let s = f.user(slot);
    let open = key_with(&s, KeyType::GENERIC_SECRET, b"open", false, true);
    let sensitive = key_with(&s, KeyType::GENERIC_SECRET, b"secret", true, true);
    let locked = key_with(&s, KeyType::GENERIC_SECRET, b"locked", false, false);
    let read = |k| {
        s.get_attributes(k, &[AttributeType::Sensitive, AttributeType::Extractable])
            .unwrap()
    };
    let data = KeyDerivationStringData::new(b"d");
    for (base, second, sens, extr) in [
        (sensitive, None, true, true),
        (locked, None, false, false),
        (open, Some(sensitive), true, true),
        (open, Some(locked), false, false),
        (open, Some(open), false, true),
    ] {
        let mech = match second {
            Some(k) => Mechanism::ConcatenateBaseAndKey(k),
            None => Mechanism::ConcatenateBaseAndData(data),
        };
        let k = s.derive_key(&mech, base, &open_of(None)).unwrap();
        assert_eq!(
            read(k),
            vec![Attribute::Sensitive(sens), Attribute::Extractable(extr)]
        );
        // cryptoki leaves out what the module calls sensitive.
        let revealed = s.get_attributes(k, &[AttributeType::Value]).unwrap();
        assert_eq!(revealed.is_empty(), sens || !extr);
    }
    // History: both bases generated sensitive and unextractable.
    let generate = || {
        s.generate_key(
            &Mechanism::GenericSecretKeyGen,
            &[
                Attribute::ValueLen(16.into()),
                Attribute::Derive(true),
                Attribute::Sensitive(true),
                Attribute::Extractable(false),
                Attribute::Token(false),
            ],
        )
        .unwrap()
    };
    let (g1, g2) = (generate(), generate());
    let k = s
        .derive_key(&Mechanism::ConcatenateBaseAndKey(g2), g1, &open_of(None))
        .unwrap();
    assert_eq!(flags(&s, k), (true, true));
    let k = s
        .derive_key(&Mechanism::ConcatenateBaseAndKey(open), g1, &open_of(None))
        .unwrap();
    assert_eq!(flags(&s, k), (false, false));
}
