//! HMAC (RFC 4231) and AES-CMAC (RFC 4493) through the C API, key
//! generation for secret keys, and MAC verification.

mod common;

use common::*;
use cryptoki::mechanism::Mechanism;
use cryptoki::object::{Attribute, AttributeType, KeyType, ObjectHandle};
use cryptoki::session::Session;
use cryptoki_sys::*;

/// A secret key of `key_type`, created through the raw API: cryptoki
/// 0.12.1 maps its `KeyType::SHA224_HMAC`, `SHA384_HMAC` and `SHA512_HMAC`
/// constants to `CKK_SHA256_HMAC`, so they cannot be used to test the
/// HMAC key types.
fn secret(s: &Session, key_type: CK_KEY_TYPE, mut value: Vec<u8>) -> ObjectHandle {
    let mut class = CKO_SECRET_KEY;
    let mut kt = key_type;
    let mut template = [
        CK_ATTRIBUTE {
            type_: CKA_CLASS,
            pValue: (&mut class as *mut CK_ULONG).cast(),
            ulValueLen: 8,
        },
        CK_ATTRIBUTE {
            type_: CKA_KEY_TYPE,
            pValue: (&mut kt as *mut CK_ULONG).cast(),
            ulValueLen: 8,
        },
        CK_ATTRIBUTE {
            type_: CKA_VALUE,
            pValue: value.as_mut_ptr().cast(),
            ulValueLen: value.len() as CK_ULONG,
        },
    ];
    let mut handle: CK_OBJECT_HANDLE = 0;
    // SAFETY: every pValue points at a live buffer of its length.
    let rv =
        unsafe { raw().C_CreateObject.unwrap()(s.handle(), template.as_mut_ptr(), 3, &mut handle) };
    assert_eq!(rv, CKR_OK);
    // SAFETY: a handle the module just returned for this session's token.
    unsafe { ObjectHandle::new_from_raw(handle) }
}

#[test]
fn rfc4231_hmac_vectors() {
    let f = Fixture::new();
    let slot = f.token("hmac");
    let s = f.user(slot);
    let mut n = 0;
    for line in include_str!("vectors/rfc4231-hmac.txt")
        .lines()
        .filter(|l| !l.starts_with('#'))
    {
        let v: Vec<_> = line.split(':').collect();
        let (mech, key_type) = match v[0] {
            "sha224" => (Mechanism::Sha224Hmac, CKK_SHA224_HMAC),
            "sha256" => (Mechanism::Sha256Hmac, CKK_SHA256_HMAC),
            "sha384" => (Mechanism::Sha384Hmac, CKK_SHA384_HMAC),
            _ => (Mechanism::Sha512Hmac, CKK_SHA512_HMAC),
        };
        let data = unhex(v[2]);
        let expected = unhex(v[3]);
        for kt in [CKK_GENERIC_SECRET, key_type] {
            let key = secret(&s, kt, unhex(v[1]));
            assert_eq!(s.sign(&mech, key, &data).unwrap(), expected, "{line}");
            s.verify(&mech, key, &data, &expected).unwrap();
            let mut bad = expected.clone();
            bad[0] ^= 1;
            assert_rv!(s.verify(&mech, key, &data, &bad), SignatureInvalid);
            assert_rv!(
                s.verify(&mech, key, &data, &expected[1..]),
                SignatureLenRange
            );
            s.sign_init(&mech, key).unwrap();
            for chunk in data.chunks(7) {
                s.sign_update(chunk).unwrap();
            }
            assert_eq!(s.sign_final().unwrap(), expected);
        }
        n += 1;
    }
    assert_eq!(n, 24);
}

#[test]
fn hmac_general_lengths_and_key_types() {
    let f = Fixture::new();
    let slot = f.token("hmacgen");
    let s = f.user(slot);
    let key = secret(&s, CKK_GENERIC_SECRET, b"Jefe".to_vec());
    let full = s
        .sign(&Mechanism::Sha256Hmac, key, b"what do ya want for nothing?")
        .unwrap();
    let l = raw();
    let mut len: CK_ULONG = 12;
    let mut mech = CK_MECHANISM {
        mechanism: CKM_SHA256_HMAC_GENERAL,
        pParameter: (&mut len as *mut CK_ULONG).cast(),
        ulParameterLen: 8,
    };
    let mut data = *b"what do ya want for nothing?";
    let mut out = [0u8; 32];
    let mut out_len: CK_ULONG = 32;
    // SAFETY: live local buffers.
    unsafe {
        assert_eq!(
            l.C_SignInit.unwrap()(s.handle(), &mut mech, key.handle()),
            CKR_OK
        );
        assert_eq!(
            l.C_Sign.unwrap()(
                s.handle(),
                data.as_mut_ptr(),
                data.len() as CK_ULONG,
                out.as_mut_ptr(),
                &mut out_len
            ),
            CKR_OK
        );
        assert_eq!(out_len, 12);
        assert_eq!(out[..12], full[..12]);
        let mut too_long: CK_ULONG = 33;
        mech.pParameter = (&mut too_long as *mut CK_ULONG).cast();
        assert_eq!(
            l.C_SignInit.unwrap()(s.handle(), &mut mech, key.handle()),
            CKR_MECHANISM_PARAM_INVALID
        );
    }
    let aes = secret(&s, CKK_AES, vec![1; 16]);
    assert_rv!(
        s.sign(&Mechanism::Sha256Hmac, aes, b"x"),
        KeyTypeInconsistent
    );
    let sha512_key = secret(&s, CKK_SHA512_HMAC, vec![1; 16]);
    assert_rv!(
        s.sign(&Mechanism::Sha256Hmac, sha512_key, b"x"),
        KeyTypeInconsistent
    );
}

#[test]
fn rfc4493_cmac_vectors() {
    let f = Fixture::new();
    let slot = f.token("cmac");
    let s = f.user(slot);
    for line in include_str!("vectors/rfc4493-cmac.txt")
        .lines()
        .filter(|l| !l.starts_with('#'))
    {
        let v: Vec<_> = line.split(':').collect();
        let key = secret(&s, CKK_AES, unhex(v[0]));
        let expected = unhex(v[2]);
        assert_eq!(
            s.sign(&Mechanism::AesCMac, key, &unhex(v[1])).unwrap(),
            expected
        );
        s.verify(&Mechanism::AesCMac, key, &unhex(v[1]), &expected)
            .unwrap();
        let mut mac_len: CK_ULONG = 8;
        let mut mech = CK_MECHANISM {
            mechanism: CKM_AES_CMAC_GENERAL,
            pParameter: (&mut mac_len as *mut CK_ULONG).cast(),
            ulParameterLen: 8,
        };
        let mut data = unhex(v[1]);
        let mut out = [0u8; 16];
        let mut out_len: CK_ULONG = 16;
        // SAFETY: live local buffers.
        unsafe {
            assert_eq!(
                raw().C_SignInit.unwrap()(s.handle(), &mut mech, key.handle()),
                CKR_OK
            );
            assert_eq!(
                raw().C_Sign.unwrap()(
                    s.handle(),
                    data.as_mut_ptr(),
                    data.len() as CK_ULONG,
                    out.as_mut_ptr(),
                    &mut out_len
                ),
                CKR_OK
            );
        }
        assert_eq!(out[..out_len as usize], expected[..8]);
    }
}

#[test]
fn generate_secret_keys() {
    let f = Fixture::new();
    let slot = f.token("keygen");
    let s = f.user(slot);
    for len in [16u64, 24, 32] {
        let key = s
            .generate_key(
                &Mechanism::AesKeyGen,
                &[Attribute::ValueLen(len.into()), Attribute::Token(true)],
            )
            .unwrap();
        let a = s
            .get_attributes(
                key,
                &[
                    AttributeType::KeyType,
                    AttributeType::ValueLen,
                    AttributeType::Local,
                    AttributeType::KeyGenMechanism,
                ],
            )
            .unwrap();
        assert_eq!(a[0], Attribute::KeyType(KeyType::AES));
        assert_eq!(a[1], Attribute::ValueLen(len.into()));
        assert_eq!(a[2], Attribute::Local(true));
        assert_eq!(
            a[3],
            Attribute::KeyGenMechanism(cryptoki::mechanism::MechanismType::AES_KEY_GEN)
        );
        let mac = s.sign(&Mechanism::AesCMac, key, b"generated").unwrap();
        s.verify(&Mechanism::AesCMac, key, b"generated", &mac)
            .unwrap();
    }
    assert_rv!(
        s.generate_key(&Mechanism::AesKeyGen, &[Attribute::ValueLen(20.into())]),
        AttributeValueInvalid
    );
    assert_rv!(
        s.generate_key(&Mechanism::AesKeyGen, &[]),
        TemplateIncomplete
    );
    assert_rv!(
        s.generate_key(
            &Mechanism::AesKeyGen,
            &[
                Attribute::ValueLen(16.into()),
                Attribute::Value(vec![0; 16])
            ]
        ),
        TemplateInconsistent
    );
    assert_rv!(
        s.generate_key(
            &Mechanism::AesKeyGen,
            &[
                Attribute::ValueLen(16.into()),
                Attribute::KeyType(KeyType::GENERIC_SECRET)
            ]
        ),
        TemplateInconsistent
    );
    let hmac = s
        .generate_key(
            &Mechanism::GenericSecretKeyGen,
            &[
                Attribute::ValueLen(32.into()),
                Attribute::KeyType(KeyType::SHA256_HMAC),
                Attribute::Sensitive(false),
                Attribute::Extractable(true),
            ],
        ) // really CKK_SHA256_HMAC
        .unwrap();
    let value = s.get_attributes(hmac, &[AttributeType::Value]).unwrap();
    match &value[0] {
        Attribute::Value(v) => assert_eq!(v.len(), 32),
        other => panic!("{other:?}"),
    }
    let mac = s.sign(&Mechanism::Sha256Hmac, hmac, b"m").unwrap();
    s.verify(&Mechanism::Sha256Hmac, hmac, b"m", &mac).unwrap();
    // CKA_SIGN false forbids MACing.
    let nosign = s
        .generate_key(
            &Mechanism::GenericSecretKeyGen,
            &[Attribute::ValueLen(32.into()), Attribute::Sign(false)],
        )
        .unwrap();
    assert_rv!(
        s.sign(&Mechanism::Sha256Hmac, nosign, b"m"),
        KeyFunctionNotPermitted
    );
}

/// `CK_ULONG` attribute read through the raw API (cryptoki cannot name
/// every HMAC key type, see [`secret`]).
fn raw_ulong(s: &Session, key: ObjectHandle, ty: CK_ATTRIBUTE_TYPE) -> CK_ULONG {
    let mut v: CK_ULONG = CK_ULONG::MAX;
    let mut attr = CK_ATTRIBUTE {
        type_: ty,
        pValue: (&mut v as *mut CK_ULONG).cast(),
        ulValueLen: 8,
    };
    // SAFETY: one attribute over a live CK_ULONG.
    let rv = unsafe { raw().C_GetAttributeValue.unwrap()(s.handle(), key.handle(), &mut attr, 1) };
    assert_eq!(rv, CKR_OK);
    v
}

/// `C_GenerateKey` through the raw API; `None` leaves `CKA_VALUE_LEN` out.
fn raw_generate(
    s: &Session,
    mech: CK_MECHANISM_TYPE,
    len: Option<CK_ULONG>,
    key_type: Option<CK_KEY_TYPE>,
) -> Result<ObjectHandle, CK_RV> {
    let (mut yes, mut no) = (CK_TRUE, CK_FALSE);
    let mut len_v = len.unwrap_or(0);
    let mut kt = key_type.unwrap_or(0);
    let flag = |ty, v: &mut CK_BBOOL| CK_ATTRIBUTE {
        type_: ty,
        pValue: (v as *mut CK_BBOOL).cast(),
        ulValueLen: 1,
    };
    let mut template = vec![
        flag(CKA_EXTRACTABLE, &mut yes),
        flag(CKA_SENSITIVE, &mut no),
        flag(CKA_SIGN, &mut yes),
        flag(CKA_VERIFY, &mut yes),
    ];
    if len.is_some() {
        template.push(CK_ATTRIBUTE {
            type_: CKA_VALUE_LEN,
            pValue: (&mut len_v as *mut CK_ULONG).cast(),
            ulValueLen: 8,
        });
    }
    if key_type.is_some() {
        template.push(CK_ATTRIBUTE {
            type_: CKA_KEY_TYPE,
            pValue: (&mut kt as *mut CK_ULONG).cast(),
            ulValueLen: 8,
        });
    }
    let mut mechanism = CK_MECHANISM {
        mechanism: mech,
        pParameter: std::ptr::null_mut(),
        ulParameterLen: 0,
    };
    let mut handle: CK_OBJECT_HANDLE = 0;
    // SAFETY: every pValue points at a live buffer of its length.
    let rv = unsafe {
        raw().C_GenerateKey.unwrap()(
            s.handle(),
            &mut mechanism,
            template.as_mut_ptr(),
            template.len() as CK_ULONG,
            &mut handle,
        )
    };
    if rv == CKR_OK {
        // SAFETY: a handle the module just returned for this session.
        Ok(unsafe { ObjectHandle::new_from_raw(handle) })
    } else {
        Err(rv)
    }
}

/// `CKM_SHA*_KEY_GEN` (PKCS #11 3.0) make keys of the matching
/// `CKK_SHA*_HMAC` type, of `CKA_VALUE_LEN` bytes or (left out) the hash's
/// length; the key MACs with its own HMAC exactly as RFC 2104 computes it,
/// and is refused for another hash's HMAC.
#[test]
fn hash_specific_key_generation_makes_hmac_keys() {
    use hmac::{KeyInit, Mac};
    let f = Fixture::new();
    let slot = f.token("shakeygen");
    let s = f.user(slot);
    type MacFn = fn(&[u8], &[u8]) -> Vec<u8>;
    fn mac<M: Mac + KeyInit>(key: &[u8], data: &[u8]) -> Vec<u8> {
        let mut m = <M as KeyInit>::new_from_slice(key).unwrap();
        m.update(data);
        m.finalize().into_bytes().to_vec()
    }
    let cases: [(CK_MECHANISM_TYPE, CK_KEY_TYPE, Mechanism, usize, MacFn); 5] = [
        (
            CKM_SHA_1_KEY_GEN,
            CKK_SHA_1_HMAC,
            Mechanism::Sha1Hmac,
            20,
            mac::<hmac::Hmac<sha1::Sha1>>,
        ),
        (
            CKM_SHA224_KEY_GEN,
            CKK_SHA224_HMAC,
            Mechanism::Sha224Hmac,
            28,
            mac::<hmac::Hmac<sha2::Sha224>>,
        ),
        (
            CKM_SHA256_KEY_GEN,
            CKK_SHA256_HMAC,
            Mechanism::Sha256Hmac,
            32,
            mac::<hmac::Hmac<sha2::Sha256>>,
        ),
        (
            CKM_SHA384_KEY_GEN,
            CKK_SHA384_HMAC,
            Mechanism::Sha384Hmac,
            48,
            mac::<hmac::Hmac<sha2::Sha384>>,
        ),
        (
            CKM_SHA512_KEY_GEN,
            CKK_SHA512_HMAC,
            Mechanism::Sha512Hmac,
            64,
            mac::<hmac::Hmac<sha2::Sha512>>,
        ),
    ];
    for (i, (gen_mech, key_type, hmac_mech, hash_len, reference)) in cases.iter().enumerate() {
        let info = f
            .p()
            .get_mechanism_info(
                slot,
                cryptoki::mechanism::MechanismType::try_from(*gen_mech).unwrap(),
            )
            .unwrap();
        assert!(info.generate(), "{gen_mech:#x}");
        for len in [None, Some(17), Some(128)] {
            let key = raw_generate(&s, *gen_mech, len, None).unwrap();
            assert_eq!(raw_ulong(&s, key, CKA_KEY_TYPE), *key_type);
            let want_len = len.map_or(*hash_len, |l| l as usize);
            assert_eq!(raw_ulong(&s, key, CKA_VALUE_LEN) as usize, want_len);
            assert_eq!(raw_ulong(&s, key, CKA_KEY_GEN_MECHANISM), *gen_mech);
            let value = match &s.get_attributes(key, &[AttributeType::Value]).unwrap()[0] {
                Attribute::Value(v) => v.clone(),
                other => panic!("{other:?}"),
            };
            assert_eq!(value.len(), want_len);
            let tag = s.sign(hmac_mech, key, b"hash-specific").unwrap();
            assert_eq!(tag, reference(&value, b"hash-specific"), "{gen_mech:#x}");
            s.verify(hmac_mech, key, b"hash-specific", &tag).unwrap();
            // Another hash's HMAC is not this key's.
            let other = &cases[(i + 1) % cases.len()].2;
            assert_rv!(s.sign(other, key, b"x"), KeyTypeInconsistent);
        }
        // A template naming another key type is inconsistent; lengths are bounded.
        assert_eq!(
            raw_generate(&s, *gen_mech, Some(32), Some(CKK_AES)).unwrap_err(),
            CKR_TEMPLATE_INCONSISTENT
        );
        for bad in [0, 513, CK_ULONG::MAX] {
            assert_eq!(
                raw_generate(&s, *gen_mech, Some(bad), None).unwrap_err(),
                CKR_ATTRIBUTE_VALUE_INVALID,
                "{bad}"
            );
        }
    }
}
