//! Key derivation through the C API: HKDF (`CKM_HKDF_DERIVE`,
//! `CKM_HKDF_DATA`, `CKM_HKDF_KEY_GEN`; PKCS #11 3.0 mechanisms spec §2.43)
//! against the RFC 5869 appendix A vectors, the simple derivations of §2.42
//! and §2.16.12 (concatenation, XOR, extraction, AES encryption of data),
//! and what a derived key inherits from its bases.

#[path = "../common/mod.rs"]
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
    // A key longer than the encrypted data: the data is too short.
    assert_eq!(
        raw_derive(
            &s,
            cryptoki_sys::CKM_AES_ECB_ENCRYPT_DATA,
            &mut param[..],
            base,
            48
        )
        .unwrap_err(),
        cryptoki_sys::CKR_MECHANISM_PARAM_INVALID
    );
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

// ---------------------------------------------------------------------------
// NIST SP 800-108 KDFs (PKCS #11 3.0 mechanisms spec §2.42 "SP 800-108 Key
// Derivation"), through raw CK_SP800_108_* structures so that every field
// (and every malformed one) reaches the module as written.
// ---------------------------------------------------------------------------

mod sp800_108 {
    use super::*;
    use cryptoki_sys::*;
    use std::ffi::c_void;

    static FALSE: CK_BBOOL = 0;
    static TRUE: CK_BBOOL = 1;
    static SECRET: CK_ULONG = CKO_SECRET_KEY;
    static PUBLIC: CK_ULONG = CKO_PUBLIC_KEY;
    static GENERIC: CK_ULONG = CKK_GENERIC_SECRET;

    fn attr<T>(ty: CK_ATTRIBUTE_TYPE, v: &T) -> CK_ATTRIBUTE {
        CK_ATTRIBUTE {
            type_: ty,
            pValue: v as *const T as *mut c_void,
            ulValueLen: std::mem::size_of::<T>() as CK_ULONG,
        }
    }

    /// An extractable session generic secret of `*len` bytes.
    fn tpl(len: &CK_ULONG) -> Vec<CK_ATTRIBUTE> {
        vec![
            attr(CKA_CLASS, &SECRET),
            attr(CKA_KEY_TYPE, &GENERIC),
            attr(CKA_VALUE_LEN, len),
            attr(CKA_SENSITIVE, &FALSE),
            attr(CKA_EXTRACTABLE, &TRUE),
            attr(CKA_TOKEN, &FALSE),
        ]
    }

    pub fn ctr(bits: CK_ULONG, le: bool) -> CK_SP800_108_COUNTER_FORMAT {
        CK_SP800_108_COUNTER_FORMAT {
            bLittleEndian: le as CK_BBOOL,
            ulWidthInBits: bits,
        }
    }

    pub fn dkm(method: CK_ULONG, bits: CK_ULONG, le: bool) -> CK_SP800_108_DKM_LENGTH_FORMAT {
        CK_SP800_108_DKM_LENGTH_FORMAT {
            dkmLengthMethod: method,
            bLittleEndian: le as CK_BBOOL,
            ulWidthInBits: bits,
        }
    }

    fn param<T>(ty: CK_ULONG, v: &T) -> CK_PRF_DATA_PARAM {
        CK_PRF_DATA_PARAM {
            type_: ty,
            pValue: v as *const T as *mut c_void,
            ulValueLen: std::mem::size_of::<T>() as CK_ULONG,
        }
    }

    /// The counter-mode iteration variable.
    pub fn iter_ctr(f: &CK_SP800_108_COUNTER_FORMAT) -> CK_PRF_DATA_PARAM {
        param(CK_SP800_108_ITERATION_VARIABLE, f)
    }

    /// The feedback / double-pipeline iteration variable (no value).
    pub fn iter() -> CK_PRF_DATA_PARAM {
        CK_PRF_DATA_PARAM {
            type_: CK_SP800_108_ITERATION_VARIABLE,
            pValue: std::ptr::null_mut(),
            ulValueLen: 0,
        }
    }

    pub fn counter(f: &CK_SP800_108_COUNTER_FORMAT) -> CK_PRF_DATA_PARAM {
        param(CK_SP800_108_OPTIONAL_COUNTER, f)
    }

    pub fn dkm_len(f: &CK_SP800_108_DKM_LENGTH_FORMAT) -> CK_PRF_DATA_PARAM {
        param(CK_SP800_108_DKM_LENGTH, f)
    }

    pub fn bytes(b: &[u8]) -> CK_PRF_DATA_PARAM {
        CK_PRF_DATA_PARAM {
            type_: CK_SP800_108_BYTE_ARRAY,
            pValue: b.as_ptr() as *mut c_void,
            ulValueLen: b.len() as CK_ULONG,
        }
    }

    /// C_DeriveKey with `mech` (whose parameter points at `pAdditional`
    /// entries built from `extra`); the primary key gets `primary`.
    fn call(
        s: &Session,
        mech: &mut CK_MECHANISM,
        base: ObjectHandle,
        primary: &mut [CK_ATTRIBUTE],
    ) -> Result<CK_OBJECT_HANDLE, CK_RV> {
        let mut h: CK_OBJECT_HANDLE = CK_INVALID_HANDLE;
        // SAFETY: the mechanism, its parameter and the template are live.
        let rv = unsafe {
            raw().C_DeriveKey.unwrap()(
                s.handle(),
                mech,
                base.handle(),
                primary.as_mut_ptr(),
                primary.len() as CK_ULONG,
                &mut h,
            )
        };
        if rv == CKR_OK { Ok(h) } else { Err(rv) }
    }

    pub fn raw_value(s: &Session, h: CK_OBJECT_HANDLE) -> Vec<u8> {
        raw_attr(s, h, CKA_VALUE)
    }

    pub fn raw_attr(s: &Session, h: CK_OBJECT_HANDLE, ty: CK_ATTRIBUTE_TYPE) -> Vec<u8> {
        let mut buf = vec![0u8; 1024];
        let mut a = CK_ATTRIBUTE {
            type_: ty,
            pValue: buf.as_mut_ptr() as *mut c_void,
            ulValueLen: buf.len() as CK_ULONG,
        };
        // SAFETY: one attribute with a live buffer of its length.
        let rv = unsafe { raw().C_GetAttributeValue.unwrap()(s.handle(), h, &mut a, 1) };
        assert_eq!(rv, CKR_OK);
        buf.truncate(a.ulValueLen as usize);
        buf
    }

    /// Where a derivation's parameter varies.
    pub struct Kdf<'a> {
        pub ty: CK_MECHANISM_TYPE,
        pub prf: CK_MECHANISM_TYPE,
        pub data: Vec<CK_PRF_DATA_PARAM>,
        /// Feedback mode's IV (None: NULL).
        pub iv: Option<&'a [u8]>,
    }

    /// Derives keys of `lens` bytes (the first the primary key, the rest
    /// additional keys) and returns their values.
    pub fn derive(
        s: &Session,
        k: &Kdf<'_>,
        base: ObjectHandle,
        lens: &[CK_ULONG],
    ) -> Result<Vec<Vec<u8>>, CK_RV> {
        let handles = derive_handles(s, k, base, lens, |_| {}).map_err(|(rv, _)| rv)?;
        Ok(handles.iter().map(|&h| raw_value(s, h)).collect())
    }

    /// As [`derive`], giving handles; `edit` may change the additional
    /// keys' templates first. On failure, also the additional keys'
    /// `phKey` values as the module left them.
    pub fn derive_handles(
        s: &Session,
        k: &Kdf<'_>,
        base: ObjectHandle,
        lens: &[CK_ULONG],
        edit: impl FnOnce(&mut Vec<Vec<CK_ATTRIBUTE>>),
    ) -> Result<Vec<CK_OBJECT_HANDLE>, (CK_RV, Vec<CK_OBJECT_HANDLE>)> {
        let mut templates: Vec<Vec<CK_ATTRIBUTE>> = lens[1..].iter().map(tpl).collect();
        edit(&mut templates);
        let mut outs = vec![0xdead as CK_OBJECT_HANDLE; templates.len()];
        let mut extra: Vec<CK_DERIVED_KEY> = templates
            .iter_mut()
            .zip(outs.iter_mut())
            .map(|(t, o)| CK_DERIVED_KEY {
                pTemplate: t.as_mut_ptr(),
                ulAttributeCount: t.len() as CK_ULONG,
                phKey: o,
            })
            .collect();
        let (n, p) = if extra.is_empty() {
            (0, std::ptr::null_mut())
        } else {
            (extra.len() as CK_ULONG, extra.as_mut_ptr())
        };
        let mut data = k.data.clone();
        let r = with_mechanism(k, &mut data, n, p, |m| call(s, m, base, &mut tpl(&lens[0])));
        drop(extra);
        match r {
            Ok(h) => Ok(std::iter::once(h).chain(outs).collect()),
            Err(rv) => Err((rv, outs)),
        }
    }

    /// Builds the mechanism of `k` and runs `f` on it.
    pub fn with_mechanism<R>(
        k: &Kdf<'_>,
        data: &mut [CK_PRF_DATA_PARAM],
        n_keys: CK_ULONG,
        keys: *mut CK_DERIVED_KEY,
        f: impl FnOnce(&mut CK_MECHANISM) -> R,
    ) -> R {
        let mut counter_params = CK_SP800_108_KDF_PARAMS {
            prfType: k.prf,
            ulNumberOfDataParams: data.len() as CK_ULONG,
            pDataParams: data.as_mut_ptr(),
            ulAdditionalDerivedKeys: n_keys,
            pAdditionalDerivedKeys: keys,
        };
        let iv = k.iv.unwrap_or(&[]);
        let mut feedback_params = CK_SP800_108_FEEDBACK_KDF_PARAMS {
            prfType: k.prf,
            ulNumberOfDataParams: data.len() as CK_ULONG,
            pDataParams: data.as_mut_ptr(),
            ulIVLen: iv.len() as CK_ULONG,
            pIV: if k.iv.is_some() {
                iv.as_ptr() as *mut u8
            } else {
                std::ptr::null_mut()
            },
            ulAdditionalDerivedKeys: n_keys,
            pAdditionalDerivedKeys: keys,
        };
        let mut m = if k.ty == CKM_SP800_108_FEEDBACK_KDF {
            CK_MECHANISM {
                mechanism: k.ty,
                pParameter: &mut feedback_params as *mut _ as *mut c_void,
                ulParameterLen: std::mem::size_of::<CK_SP800_108_FEEDBACK_KDF_PARAMS>() as CK_ULONG,
            }
        } else {
            CK_MECHANISM {
                mechanism: k.ty,
                pParameter: &mut counter_params as *mut _ as *mut c_void,
                ulParameterLen: std::mem::size_of::<CK_SP800_108_KDF_PARAMS>() as CK_ULONG,
            }
        };
        f(&mut m)
    }

    pub fn aes(s: &Session, value: &[u8]) -> ObjectHandle {
        s.create_object(&[
            Attribute::Class(ObjectClass::SECRET_KEY),
            Attribute::KeyType(KeyType::AES),
            Attribute::Value(value.to_vec()),
            Attribute::Derive(true),
            Attribute::Token(false),
        ])
        .unwrap()
    }

    pub fn n_objects(s: &Session) -> usize {
        s.find_objects(&[]).unwrap().len()
    }

    pub fn tpl_public(t: &mut [CK_ATTRIBUTE]) {
        t[0] = attr(CKA_CLASS, &PUBLIC);
    }
}

use cryptoki_sys::{
    CK_SP800_108_DKM_LENGTH_SUM_OF_KEYS, CK_SP800_108_DKM_LENGTH_SUM_OF_SEGMENTS, CKM_AES_CMAC,
    CKM_SHA256_HMAC, CKM_SP800_108_COUNTER_KDF, CKM_SP800_108_DOUBLE_PIPELINE_KDF,
    CKM_SP800_108_FEEDBACK_KDF,
};
use sp800_108::{Kdf, bytes, counter, ctr, dkm, dkm_len, iter, iter_ctr};

/// Counter mode against NIST CAVP KBKDF vectors (SP 800-108 CAVS,
/// KDFCTR_gen.rsp, COUNT=0 of each group): HMAC-SHA256 with 8/16/24/32-bit
/// counters before the fixed data; AES-CMAC (AES-128) with 8/16/32-bit
/// counters before the fixed data (multi-block outputs), and AES-192 with a
/// 32-bit counter after the fixed data.
#[test]
fn sp800_108_counter_mode_cavp_vectors() {
    let f = Fixture::new();
    let slot = f.token("kbkdf-ctr");
    let s = f.user(slot);
    // (PRF, counter bits, counter after fixed data, KI, fixed input, KO)
    let vectors = [
        (
            CKM_SHA256_HMAC,
            8,
            false,
            "3edc6b5b8f7aadbd713732b482b8f979286e1ea3b8f8f99c30c884cfe3349b83",
            "98e9988bb4cc8b34d7922e1c68ad692ba2a1d9ae15149571675f17a77ad49e80c8d2a85e831a26445b1f0ff44d7084a17206b4896c8112daad18605a",
            "6c037652990674a07844732d0ad985f9",
        ),
        (
            CKM_SHA256_HMAC,
            16,
            false,
            "743434c930fe923c350ec202bef28b768cd6062cf233324e21a86c31f9406583",
            "9bdb8a454bd55ab30ced3fd420fde6d946252c875bfe986ed34927c7f7f0b106dab9cc85b4c702804965eb24c37ad883a8f695587a7b6094d3335bbc",
            "19c8a56db1d2a9afb793dc96fbde4c31",
        ),
        (
            CKM_SHA256_HMAC,
            24,
            false,
            "388e93e0273e62f086f52f6f5369d9e4626d143dce3b6afc7caf2c6e7344276b",
            "697bb34b3fbe6853864cac3e1bc6c8c44a4335565479403d949fcbb5e2c1795f9a3849df743389d1a99fe75ef566e6227c591104122a6477dd8e8c8e",
            "d697442b3dd51f96cae949586357b9a6",
        ),
        (
            CKM_SHA256_HMAC,
            32,
            false,
            "dd1d91b7d90b2bd3138533ce92b272fbf8a369316aefe242e659cc0ae238afe0",
            "01322b96b30acd197979444e468e1c5c6859bf1b1cf951b7e725303e237e46b864a145fab25e517b08f8683d0315bb2911d80a0e8aba17f3b413faac",
            "10621342bfb0fd40046c0e29f2cfdbf0",
        ),
        (
            CKM_AES_CMAC,
            8,
            false,
            "bb31eef5a2ca3bfb342c5800fee67313",
            "f85ae18f15ce1a5e036d6e3fd227243a9863f88ef532ce1da810b6639c0928f9b99fe909487d3748cff857cdb790f89e09d8c634dccb616cf7a2663a",
            "8923d38effde99e24f67dec9330c4f1b874fc382ad644140e73a8e406f405d3fe4b4730b7291275a",
        ),
        (
            CKM_AES_CMAC,
            16,
            false,
            "e688c545e5ea41547f7817e484434980",
            "321fbaf2f7f56e43b289e9f57c7d80c14335e612041d84cce9eb4f35ec7aaf9204b5b985709c079f8193124f6bb70f9f2d3d6957b3d2f5a280db6125",
            "f92d496653c757d046ada7535baee4b8b3054cc40fbef4f98776a40c37dc86bafe62d5c74ad33a35",
        ),
        (
            CKM_AES_CMAC,
            32,
            false,
            "009300d265d1f1b28b505dccc162f4f8",
            "5ac373d42ed92427d8ff6cfff7eae13d66d3c7e536cc749859e2a49e3eea2ad846c9fbb7ddd99a1e6a54a89a87db98db6b8229f577b552e09aeed5e6",
            "c666d91f931606882bf214ebe79cd25a02810c7ab6ced75cd3fabd027f0de54e",
        ),
        (
            CKM_AES_CMAC,
            32,
            true,
            "5a1ea452525f99f61bf2f2e680a5856b3263bdcfe4c3f8ba",
            "f93a88be1591168a677030e5d2b61f220d959722b7292d65a25c43f0c99db4bdc76248be329ee31052d216295961d0fae59ebf46939129324639dac6",
            "32df46ca9aae3c0c71681d667c8bf7b454f758e2797391a959c43ff5695399ab6f2e7ce44663db53",
        ),
    ];
    for (i, (prf, bits, after, ki, fixed, ko)) in vectors.into_iter().enumerate() {
        let (ki, fixed, ko) = (unhex(ki), unhex(fixed), unhex(ko));
        let base = if prf == CKM_AES_CMAC {
            sp800_108::aes(&s, &ki)
        } else {
            secret(&s, &ki, true)
        };
        let fmt = ctr(bits, false);
        let data = if after {
            vec![bytes(&fixed), iter_ctr(&fmt)]
        } else {
            vec![iter_ctr(&fmt), bytes(&fixed)]
        };
        let k = Kdf {
            ty: CKM_SP800_108_COUNTER_KDF,
            prf,
            data,
            iv: None,
        };
        let got = sp800_108::derive(&s, &k, base, &[ko.len() as u64]).unwrap();
        assert_eq!(got[0], ko, "vector {i}");
        // The counter's place matters: the other place gives another key.
        let other = if after {
            vec![iter_ctr(&fmt), bytes(&fixed)]
        } else {
            vec![bytes(&fixed), iter_ctr(&fmt)]
        };
        let k = Kdf { data: other, ..k };
        assert_ne!(
            sp800_108::derive(&s, &k, base, &[ko.len() as u64]).unwrap()[0],
            ko
        );
    }
}

/// Feedback mode against NIST CAVP KBKDF vectors (FeedbackModenocounter /
/// FeedbackModeNOzeroiv style, AES-128 CMAC, L=512): no counter with and
/// without an IV, and a 32-bit optional counter before the iteration
/// variable, after it, and after the fixed data.
#[test]
fn sp800_108_feedback_mode_cavp_vectors() {
    let f = Fixture::new();
    let slot = f.token("kbkdf-fb");
    let s = f.user(slot);
    // (KI, IV, fixed input, counter place: 0 none, 1 before iteration
    // variable, 2 after it, 3 after fixed data, KO)
    let vectors = [
        (
            "5c996c922f65de97d4408373229814c6",
            "28dc945cb8337ab5336c3e9b5bad21c7",
            "62afe5fed91e797221a854336b0aadd8a05ad0e3c8345729897b2efcec5a1178a2fa4c063007b67a7015e0d6b7271ea8d86b44",
            0,
            "88a9aae193abdd3fe8143bab66014ae41dc2d12ea9d08f5871588fc5d827924eb9942989d7a36d4b3b107997566472cad5942bd13cb5cff32b9dae30f1bb6300",
        ),
        (
            "3a139e1aa922d3373b2674e303a6cc59",
            "",
            "4d91720a2cff429fc1c0b79e845c5029b3c9535935cbeee5808dea82b8453ffcbed8f54e44500fd82ded679f843c569297ed82",
            0,
            "2c9b849dc36efc1aff45030cf2288eba71faf176172a2688576605bc5f4f66a95850b096c2f9a4416eb743f8d14f8ba4cffbdc3174f63ca861765dc8f5dab59a",
        ),
        (
            "fc126023dfc9fb6cd56fc5602c05657c",
            "a736f838049448e04845b6b0ec2d6f63",
            "8068d7b98b8c4528ae8555ab5ae67c71a92b664245ec7d333b22479c5072421e7239761494e45eff09297737a1bb2c39fe9f1f",
            1,
            "b9824ad55e6913151a3f736f5fd6bf0807e1acb8c7ed0082df138ba1cc0e6db3c667c8abae707cdf920f48bf77765437407b564333796c037b0378f8f431114c",
        ),
        (
            "607a069650470c92021850add7506fed",
            "bcc557c72df7ed5163e39bf201d2354f",
            "d465d19beb40b57d51eb30f9b8170f33a07ffbf03e41b6ade6338cb85d75b910bc0af62e3a228bacaf68eb099d1d315ce09395",
            2,
            "d5741964649e1a4f825493f933cdc02a8edb6001a3986050cf7511184e4794cdec967e631d5b323f39315bf4bd2c45b692d632dfb6bdb86d509845fe63df550d",
        ),
        (
            "1edbd1bb1ff8abda4cb51d656ac83405",
            "0b847773cd50a9984653a8d7bffe41e1",
            "a74a8c3b5b6c504f1b72b0f22ed380de8eff38f541d0991dd2f54c2259a2ea9e6907a3528e6fd5591aff710685308adc97d423",
            3,
            "f6f3c5a17ef294e1818e5a4a7b3194f728fb65befba2083ca8ba0a2585db4c08f8f5a5e0b4f94fb3cf640255277cddf628542693debf34ec1f7d2d1612c233be",
        ),
    ];
    let fmt = ctr(32, false);
    for (i, (ki, iv, fixed, place, ko)) in vectors.into_iter().enumerate() {
        let (ki, iv, fixed, ko) = (unhex(ki), unhex(iv), unhex(fixed), unhex(ko));
        let base = sp800_108::aes(&s, &ki);
        let data = match place {
            0 => vec![iter(), bytes(&fixed)],
            1 => vec![counter(&fmt), iter(), bytes(&fixed)],
            2 => vec![iter(), counter(&fmt), bytes(&fixed)],
            _ => vec![iter(), bytes(&fixed), counter(&fmt)],
        };
        let k = Kdf {
            ty: CKM_SP800_108_FEEDBACK_KDF,
            prf: CKM_AES_CMAC,
            data,
            iv: if iv.is_empty() { None } else { Some(&iv) },
        };
        let got = sp800_108::derive(&s, &k, base, &[ko.len() as u64]).unwrap();
        assert_eq!(got[0], ko, "vector {i}");
    }
}

/// Double-pipeline mode against NIST CAVP KBKDF vectors
/// (PipelineModeWOCounter / PipelineModewithCounter style, AES-128 CMAC,
/// L=512): A(0) is the fixed input data; no counter, and a 32-bit counter
/// before the iteration variable, after it, and after the fixed data.
#[test]
fn sp800_108_double_pipeline_cavp_vectors() {
    let f = Fixture::new();
    let slot = f.token("kbkdf-dp");
    let s = f.user(slot);
    let vectors = [
        (
            "ada2452f1f141a82c7a1b7d3e09ffed1",
            "335660eb265d2044efa06eacd848d3f9f57d219011343318f3a964df4a6fb1bf6cbdee711c7fcbe73b8f257f992e47e8b065af",
            0,
            "a73bd29176e38e761222ae07d639181f4b2c555a3b261815cde5d88a67c8b95c58b6b66ea4f10608c6d799b051519fc8e89de00cdc556350a7d966475086f9af",
        ),
        (
            "f862c0f1fbec48df982d9c4013807912",
            "7d2bba9a4b121a33bc54b5515df6014407710d698d9d768a9a096a0faeb3ad2cb15ed63d9b6490e7647c814b8bac2a842662e7",
            1,
            "19f69a9024217d0beba61f4b8aba60267e9e850a96e7ce5dafebfa6add0df2691f53043223d6300f295d44cb31ea57b0869f5c3840ae003c293a5cdd44af46be",
        ),
        (
            "34f0c2542bfe13c7149b68c8a1ef636b",
            "daefcc52d6e32e1614109268933087fce3d64a5a6f111ba1a8d343a1e388a1752aaea93853be52864997a81c84b04c4f3ff3bd",
            2,
            "fc0eae673e7db3c4660668e187bcd81d5ca9b89213d8d741e71c9bab89bb4fb3c4df541d89a8117f0f56b0f15111ae28abf81fb7d7349fbbcaf01137e4d73527",
        ),
        (
            "b65ea7c14d21cbad94575d668929b8ed",
            "13d47f74b114e79a80a04d281389731d7dfca2b5753036782b8790a97003fa50a5653dda69fc4cc7a79ba59497c17025dbc3fb",
            3,
            "32de17b47de8fc08f756734a2e51488b41105e20f0f811f9b05e583e476691f1d77e6685abdc9f919a38e2cfe3ca5c91c3c7d4a52f229b5f25eb9b70750ebc10",
        ),
    ];
    let fmt = ctr(32, false);
    for (i, (ki, fixed, place, ko)) in vectors.into_iter().enumerate() {
        let (ki, fixed, ko) = (unhex(ki), unhex(fixed), unhex(ko));
        let base = sp800_108::aes(&s, &ki);
        let data = match place {
            0 => vec![iter(), bytes(&fixed)],
            1 => vec![counter(&fmt), iter(), bytes(&fixed)],
            2 => vec![iter(), counter(&fmt), bytes(&fixed)],
            _ => vec![iter(), bytes(&fixed), counter(&fmt)],
        };
        let k = Kdf {
            ty: CKM_SP800_108_DOUBLE_PIPELINE_KDF,
            prf: CKM_AES_CMAC,
            data,
            iv: None,
        };
        let got = sp800_108::derive(&s, &k, base, &[ko.len() as u64]).unwrap();
        assert_eq!(got[0], ko, "vector {i}");
    }
}

/// Additional derived keys (§2.42 "Deriving Additional Keys"): a 48-byte
/// primary key and a 16-byte additional key with HMAC-SHA256 are segments
/// 1–1.5 and 3 of one 96-byte derivation (each key starts a new segment),
/// in every mode; and the DKM length formats: SUM_OF_KEYS is 512 bits and
/// SUM_OF_SEGMENTS 768 bits for those two keys (the spec's example), in
/// either byte order, equal to the same number given as a byte array.
#[test]
fn sp800_108_additional_keys_and_dkm_length() {
    let f = Fixture::new();
    let slot = f.token("kbkdf-keys");
    let s = f.user(slot);
    // A readable base: the 1-byte key below is under the key-length floor
    // of keys derived from a protected base (docs/SECURITY.md,
    // "Key-management policy"), which derivation_floor_for_protected_bases
    // checks.
    let base = s
        .create_object(&[
            Attribute::Class(ObjectClass::SECRET_KEY),
            Attribute::KeyType(KeyType::GENERIC_SECRET),
            Attribute::Value(vec![0x42; 32]),
            Attribute::Derive(true),
            Attribute::Sensitive(false),
            Attribute::Extractable(true),
            Attribute::Token(false),
        ])
        .unwrap();
    let label = b"label".to_vec();
    let iv = [7u8; 32];
    let fmt = ctr(16, false);
    for (ty, iv) in [
        (CKM_SP800_108_COUNTER_KDF, None),
        (CKM_SP800_108_FEEDBACK_KDF, Some(&iv[..])),
        (CKM_SP800_108_DOUBLE_PIPELINE_KDF, None),
    ] {
        let it = if ty == CKM_SP800_108_COUNTER_KDF {
            iter_ctr(&fmt)
        } else {
            iter()
        };
        let k = Kdf {
            ty,
            prf: CKM_SHA256_HMAC,
            data: vec![it, bytes(&label)],
            iv,
        };
        let long = sp800_108::derive(&s, &k, base, &[96]).unwrap().remove(0);
        let two = sp800_108::derive(&s, &k, base, &[48, 16]).unwrap();
        assert_eq!(two[0], long[..48], "{ty:#x}");
        assert_eq!(two[1], long[64..80], "{ty:#x}");
        let three = sp800_108::derive(&s, &k, base, &[20, 1, 33]).unwrap();
        assert_eq!(three[0], long[..20]);
        assert_eq!(three[1], long[32..33]);
        assert_eq!(three[2].len(), 33);
        assert_eq!(
            three[2][..32],
            sp800_108::derive(&s, &k, base, &[64, 32]).unwrap()[1][..]
        );
        // DKM length in every method and byte order against the byte array.
        for (method, le, expect) in [
            (CK_SP800_108_DKM_LENGTH_SUM_OF_KEYS, false, vec![0x02, 0x00]),
            (
                CK_SP800_108_DKM_LENGTH_SUM_OF_SEGMENTS,
                false,
                vec![0x03, 0x00],
            ),
            (
                CK_SP800_108_DKM_LENGTH_SUM_OF_SEGMENTS,
                true,
                vec![0x00, 0x03],
            ),
        ] {
            let d = dkm(method, 16, le);
            let with_dkm = Kdf {
                data: vec![it, bytes(&label), dkm_len(&d)],
                iv,
                ..k
            };
            let with_bytes = Kdf {
                data: vec![it, bytes(&label), bytes(&expect)],
                iv,
                ..k
            };
            let a = sp800_108::derive(&s, &with_dkm, base, &[48, 16]).unwrap();
            assert_eq!(
                a,
                sp800_108::derive(&s, &with_bytes, base, &[48, 16]).unwrap()
            );
            assert_ne!(a, two);
        }
    }
}

/// All or nothing: when an additional key's template fails, no key is
/// made and every additional phKey is CK_INVALID_HANDLE; a key of the wrong
/// type for the PRF is CKR_KEY_TYPE_INCONSISTENT.
#[test]
fn sp800_108_all_or_nothing_and_key_types() {
    let f = Fixture::new();
    let slot = f.token("kbkdf-aon");
    let s = f.user(slot);
    let hmac_key = secret(&s, &[0x42; 32], true);
    let aes_key = sp800_108::aes(&s, &[0x24; 16]);
    let fmt = ctr(32, false);
    let k = Kdf {
        ty: CKM_SP800_108_COUNTER_KDF,
        prf: CKM_SHA256_HMAC,
        data: vec![iter_ctr(&fmt)],
        iv: None,
    };
    let before = sp800_108::n_objects(&s);
    let r = sp800_108::derive_handles(&s, &k, hmac_key, &[16, 16, 16], |t| {
        sp800_108::tpl_public(&mut t[1])
    });
    // The failing template is the second additional key's: the primary
    // key and the first additional key had been made, and are gone.
    let (rv, outs) = r.unwrap_err();
    assert_eq!(rv, cryptoki_sys::CKR_TEMPLATE_INCONSISTENT);
    assert_eq!(outs, [cryptoki_sys::CK_INVALID_HANDLE; 2]);
    assert_eq!(sp800_108::n_objects(&s), before);
    assert_eq!(
        sp800_108::derive(&s, &k, aes_key, &[16]).unwrap_err(),
        cryptoki_sys::CKR_KEY_TYPE_INCONSISTENT
    );
    let cmac = Kdf {
        prf: CKM_AES_CMAC,
        data: k.data.clone(),
        ..k
    };
    assert_eq!(
        sp800_108::derive(&s, &cmac, hmac_key, &[16]).unwrap_err(),
        cryptoki_sys::CKR_KEY_TYPE_INCONSISTENT
    );
    assert_eq!(
        sp800_108::derive(&s, &cmac, aes_key, &[16, 16])
            .unwrap()
            .len(),
        2
    );
    // "Key Derivation Attribute Rules": an additional key whose template
    // leaves out CKA_SENSITIVE / CKA_EXTRACTABLE takes the base key's.
    let guarded = s
        .create_object(&[
            Attribute::Class(ObjectClass::SECRET_KEY),
            Attribute::KeyType(KeyType::GENERIC_SECRET),
            Attribute::Value(vec![0x11; 32]),
            Attribute::Derive(true),
            Attribute::Sensitive(true),
            Attribute::Extractable(false),
            Attribute::Token(false),
        ])
        .unwrap();
    let h = sp800_108::derive_handles(&s, &k, guarded, &[16, 16], |t| {
        t[0].retain(|a| {
            a.type_ != cryptoki_sys::CKA_SENSITIVE && a.type_ != cryptoki_sys::CKA_EXTRACTABLE
        })
    })
    .unwrap();
    let flag = |h, ty| sp800_108::raw_attr(&s, h, ty);
    assert_eq!(flag(h[1], cryptoki_sys::CKA_SENSITIVE), [1]);
    assert_eq!(flag(h[1], cryptoki_sys::CKA_EXTRACTABLE), [0]);
    // The primary key's template said otherwise, and wins.
    assert_eq!(flag(h[0], cryptoki_sys::CKA_SENSITIVE), [0]);
    assert_eq!(flag(h[0], cryptoki_sys::CKA_EXTRACTABLE), [1]);
}

/// Every malformed parameter class is CKR_MECHANISM_PARAM_INVALID.
#[test]
fn sp800_108_malformed_parameters_are_refused() {
    use cryptoki_sys::*;
    let f = Fixture::new();
    let slot = f.token("kbkdf-bad");
    let s = f.user(slot);
    let base = secret(&s, &[0x42; 32], true);
    let aes = sp800_108::aes(&s, &[0x24; 16]);
    let good = ctr(16, false);
    let (w0, w12, w40) = (ctr(0, false), ctr(12, false), ctr(40, false));
    let keys = dkm(CK_SP800_108_DKM_LENGTH_SUM_OF_KEYS, 16, false);
    let (d0, d12, d72, d8) = (
        dkm(CK_SP800_108_DKM_LENGTH_SUM_OF_KEYS, 0, false),
        dkm(CK_SP800_108_DKM_LENGTH_SUM_OF_KEYS, 12, false),
        dkm(CK_SP800_108_DKM_LENGTH_SUM_OF_KEYS, 72, false),
        dkm(CK_SP800_108_DKM_LENGTH_SUM_OF_KEYS, 8, false),
    );
    let bad_method = dkm(3, 16, false);
    let label = [1u8, 2, 3];
    let short = CK_PRF_DATA_PARAM {
        ulValueLen: 4,
        ..iter_ctr(&good)
    };
    let empty = CK_PRF_DATA_PARAM {
        ulValueLen: 0,
        ..bytes(&label)
    };
    let null = CK_PRF_DATA_PARAM {
        pValue: std::ptr::null_mut(),
        ..bytes(&label)
    };
    let valued = CK_PRF_DATA_PARAM {
        ulValueLen: 16,
        ..iter_ctr(&good)
    };
    let handle: CK_OBJECT_HANDLE = base.handle();
    let key_handle = CK_PRF_DATA_PARAM {
        type_: CK_SP800_108_KEY_HANDLE,
        pValue: &handle as *const _ as *mut _,
        ulValueLen: std::mem::size_of::<CK_OBJECT_HANDLE>() as CK_ULONG,
    };
    let unknown = CK_PRF_DATA_PARAM {
        type_: 99,
        ..bytes(&label)
    };
    let c = CKM_SP800_108_COUNTER_KDF;
    let fb = CKM_SP800_108_FEEDBACK_KDF;
    let dp = CKM_SP800_108_DOUBLE_PIPELINE_KDF;
    let cases: Vec<(
        &str,
        CK_MECHANISM_TYPE,
        CK_MECHANISM_TYPE,
        Vec<CK_PRF_DATA_PARAM>,
        u64,
    )> = vec![
        ("no data", c, CKM_SHA256_HMAC, vec![], 16),
        (
            "no iteration variable",
            c,
            CKM_SHA256_HMAC,
            vec![bytes(&label)],
            16,
        ),
        (
            "two iteration variables",
            c,
            CKM_SHA256_HMAC,
            vec![iter_ctr(&good), iter_ctr(&good)],
            16,
        ),
        (
            "two iteration variables (feedback)",
            fb,
            CKM_SHA256_HMAC,
            vec![iter(), iter()],
            16,
        ),
        (
            "counter in counter mode",
            c,
            CKM_SHA256_HMAC,
            vec![iter_ctr(&good), counter(&good)],
            16,
        ),
        (
            "two counters",
            dp,
            CKM_SHA256_HMAC,
            vec![iter(), counter(&good), counter(&good)],
            16,
        ),
        (
            "two DKM lengths",
            c,
            CKM_SHA256_HMAC,
            vec![iter_ctr(&good), dkm_len(&keys), dkm_len(&keys)],
            16,
        ),
        (
            "counter width 0",
            c,
            CKM_SHA256_HMAC,
            vec![iter_ctr(&w0)],
            16,
        ),
        (
            "counter width 12",
            c,
            CKM_SHA256_HMAC,
            vec![iter_ctr(&w12)],
            16,
        ),
        (
            "counter width 40",
            fb,
            CKM_SHA256_HMAC,
            vec![iter(), counter(&w40)],
            16,
        ),
        (
            "DKM width 0",
            c,
            CKM_SHA256_HMAC,
            vec![iter_ctr(&good), dkm_len(&d0)],
            16,
        ),
        (
            "DKM width 12",
            c,
            CKM_SHA256_HMAC,
            vec![iter_ctr(&good), dkm_len(&d12)],
            16,
        ),
        (
            "DKM width 72",
            c,
            CKM_SHA256_HMAC,
            vec![iter_ctr(&good), dkm_len(&d72)],
            16,
        ),
        (
            "DKM length overflows its width",
            c,
            CKM_SHA256_HMAC,
            vec![iter_ctr(&good), dkm_len(&d8)],
            32,
        ),
        (
            "DKM method",
            c,
            CKM_SHA256_HMAC,
            vec![iter_ctr(&good), dkm_len(&bad_method)],
            16,
        ),
        ("counter format length", c, CKM_SHA256_HMAC, vec![short], 16),
        (
            "iteration variable with a value (feedback)",
            fb,
            CKM_SHA256_HMAC,
            vec![valued],
            16,
        ),
        (
            "iteration variable without a format (counter)",
            c,
            CKM_SHA256_HMAC,
            vec![iter()],
            16,
        ),
        (
            "empty byte array",
            c,
            CKM_SHA256_HMAC,
            vec![iter_ctr(&good), empty],
            16,
        ),
        (
            "null byte array",
            c,
            CKM_SHA256_HMAC,
            vec![iter_ctr(&good), null],
            16,
        ),
        (
            "key handle data",
            c,
            CKM_SHA256_HMAC,
            vec![iter_ctr(&good), key_handle],
            16,
        ),
        (
            "unknown data type",
            c,
            CKM_SHA256_HMAC,
            vec![iter_ctr(&good), unknown],
            16,
        ),
        ("PRF not a MAC", c, CKM_SHA256, vec![iter_ctr(&good)], 16),
    ];
    for (what, ty, prf, data, len) in cases {
        let k = Kdf {
            ty,
            prf,
            data,
            iv: None,
        };
        assert_eq!(
            sp800_108::derive(&s, &k, base, &[len]).unwrap_err(),
            CKR_MECHANISM_PARAM_INVALID,
            "{what}"
        );
    }
    // An 8-bit counter cannot number 17 * 512 bytes of 16-byte segments.
    let small = ctr(8, false);
    let k = Kdf {
        ty: c,
        prf: CKM_AES_CMAC,
        data: vec![iter_ctr(&small)],
        iv: None,
    };
    assert_eq!(
        sp800_108::derive(&s, &k, aes, &[512; 17]).unwrap_err(),
        CKR_MECHANISM_PARAM_INVALID
    );
    // More additional keys than the bound.
    assert_eq!(
        sp800_108::derive(&s, &k, aes, &[16; 18]).unwrap_err(),
        CKR_MECHANISM_PARAM_INVALID
    );
    // Structural errors: counts, null arrays, IV, phKey, parameter length.
    let k = Kdf {
        ty: c,
        prf: CKM_SHA256_HMAC,
        data: vec![iter_ctr(&good)],
        iv: None,
    };
    let run = |edit: &dyn Fn(&mut CK_MECHANISM)| -> CK_RV {
        let mut data = k.data.clone();
        sp800_108::with_mechanism(&k, &mut data, 0, std::ptr::null_mut(), |m| {
            edit(m);
            let mut h = 0;
            let mut t = [];
            // SAFETY: the mechanism and its parameter are live locals.
            unsafe {
                raw().C_DeriveKey.unwrap()(s.handle(), m, base.handle(), t.as_mut_ptr(), 0, &mut h)
            }
        })
    };
    fn params(m: &mut CK_MECHANISM) -> &mut CK_SP800_108_KDF_PARAMS {
        // SAFETY: the test's counter-mode mechanism points at this struct.
        unsafe { &mut *(m.pParameter as *mut CK_SP800_108_KDF_PARAMS) }
    }
    let mut dk = CK_DERIVED_KEY {
        pTemplate: std::ptr::null_mut(),
        ulAttributeCount: 0,
        phKey: std::ptr::null_mut(),
    };
    let dkp: *mut CK_DERIVED_KEY = &mut dk;
    for (what, edit) in [
        (
            "huge data count",
            Box::new(|m: &mut CK_MECHANISM| params(m).ulNumberOfDataParams = 1 << 40)
                as Box<dyn Fn(&mut CK_MECHANISM)>,
        ),
        (
            "null data array",
            Box::new(|m: &mut CK_MECHANISM| params(m).pDataParams = std::ptr::null_mut()),
        ),
        (
            "keys count without array",
            Box::new(|m: &mut CK_MECHANISM| params(m).ulAdditionalDerivedKeys = 1),
        ),
        (
            "keys array without count",
            Box::new(move |m: &mut CK_MECHANISM| params(m).pAdditionalDerivedKeys = dkp),
        ),
        (
            "null phKey",
            Box::new(move |m: &mut CK_MECHANISM| {
                params(m).ulAdditionalDerivedKeys = 1;
                params(m).pAdditionalDerivedKeys = dkp;
            }),
        ),
        (
            "huge keys count",
            Box::new(move |m: &mut CK_MECHANISM| {
                params(m).ulAdditionalDerivedKeys = 1 << 40;
                params(m).pAdditionalDerivedKeys = dkp;
            }),
        ),
        (
            "parameter length",
            Box::new(|m: &mut CK_MECHANISM| m.ulParameterLen -= 1),
        ),
        (
            "no parameter",
            Box::new(|m: &mut CK_MECHANISM| {
                m.pParameter = std::ptr::null_mut();
                m.ulParameterLen = 0;
            }),
        ),
    ] {
        assert_eq!(run(&*edit), CKR_MECHANISM_PARAM_INVALID, "{what}");
    }
    // Feedback: an IV length without an IV.
    let fk = Kdf {
        ty: fb,
        prf: CKM_SHA256_HMAC,
        data: vec![iter()],
        iv: None,
    };
    let mut data = fk.data.clone();
    let rv = sp800_108::with_mechanism(&fk, &mut data, 0, std::ptr::null_mut(), |m| {
        // SAFETY: the feedback mechanism points at this struct.
        unsafe { (*(m.pParameter as *mut CK_SP800_108_FEEDBACK_KDF_PARAMS)).ulIVLen = 16 };
        let mut h = 0;
        let mut t = [];
        // SAFETY: the mechanism and its parameter are live locals.
        unsafe {
            raw().C_DeriveKey.unwrap()(s.handle(), m, base.handle(), t.as_mut_ptr(), 0, &mut h)
        }
    });
    assert_eq!(rv, CKR_MECHANISM_PARAM_INVALID);
}

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
