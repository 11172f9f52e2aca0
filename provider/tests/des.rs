//! DES, double- and triple-length DES through the C API (mechanisms spec
//! 3.0 §2.29; single DES from the historical mechanisms spec): SP 800-67 /
//! FIPS 81 known answers for ECB, CBC and CBC-PAD, SP 800-38B DES3-CMAC
//! examples, DES3-MAC, multi-part against single-part, key generation with
//! parity, refusal of bad parity and weak keys on C_CreateObject and
//! C_UnwrapKey, parity on derived keys, and wrapping with DES3.

mod common;

use common::*;
use cryptoki::mechanism::Mechanism;
use cryptoki::mechanism::misc::KeyDerivationStringData;
use cryptoki::object::{Attribute, AttributeType, KeyType, ObjectClass, ObjectHandle};
use cryptoki::session::Session;
use cryptoki_sys::*;

/// The SP 800-67 Rev. 2 three-key example key and plaintext.
const KEY3: &str = "0123456789abcdef23456789abcdef01456789abcdef0123";
const PLAIN: &str = "54686520717566636b2062726f776e20666f78206a756d70";

fn des_key(s: &Session, kt: KeyType, value: &[u8]) -> cryptoki::error::Result<ObjectHandle> {
    s.create_object(&[
        Attribute::Class(ObjectClass::SECRET_KEY),
        Attribute::KeyType(kt),
        Attribute::Value(value.to_vec()),
        Attribute::Token(false),
        Attribute::Encrypt(true),
        Attribute::Decrypt(true),
        Attribute::Sign(true),
        Attribute::Verify(true),
        Attribute::Wrap(true),
        Attribute::Unwrap(true),
        Attribute::Extractable(true),
        Attribute::Sensitive(false),
    ])
}

fn odd_parity(v: &[u8]) -> bool {
    v.iter().all(|b| b.count_ones() % 2 == 1)
}

fn value(s: &Session, key: ObjectHandle) -> Vec<u8> {
    match &s.get_attributes(key, &[AttributeType::Value]).unwrap()[..] {
        [Attribute::Value(v)] => v.clone(),
        other => panic!("no CKA_VALUE: {other:?}"),
    }
}

/// A MAC through the raw API (cryptoki has no DES3-MAC / DES3-CMAC
/// variants); `len` is the `CK_MAC_GENERAL_PARAMS` of the general forms.
fn raw_mac(
    s: &Session,
    ty: CK_MECHANISM_TYPE,
    len: Option<CK_ULONG>,
    key: ObjectHandle,
    data: &[u8],
) -> Result<Vec<u8>, CK_RV> {
    let mut mac_len = len.unwrap_or(0);
    let mut mech = CK_MECHANISM {
        mechanism: ty,
        pParameter: if len.is_some() {
            (&mut mac_len as *mut CK_ULONG).cast()
        } else {
            std::ptr::null_mut()
        },
        ulParameterLen: if len.is_some() { 8 } else { 0 },
    };
    let mut data = data.to_vec();
    let mut out = [0u8; 16];
    let mut out_len: CK_ULONG = 16;
    // SAFETY: the mechanism, its parameter and the buffers are live locals.
    unsafe {
        let rv = raw().C_SignInit.unwrap()(s.handle(), &mut mech, key.handle());
        if rv != CKR_OK {
            return Err(rv);
        }
        let rv = raw().C_Sign.unwrap()(
            s.handle(),
            data.as_mut_ptr(),
            data.len() as CK_ULONG,
            out.as_mut_ptr(),
            &mut out_len,
        );
        if rv != CKR_OK {
            return Err(rv);
        }
    }
    Ok(out[..out_len as usize].to_vec())
}

#[test]
fn ecb_cbc_and_cbc_pad_known_answers_single_and_multi_part() {
    let f = Fixture::new();
    let s = f.user(f.token("des"));
    let k3 = des_key(&s, KeyType::DES3, &unhex(KEY3)).unwrap();
    let k2 = des_key(&s, KeyType::DES2, &unhex(&KEY3[..32])).unwrap();
    let k1 = des_key(&s, KeyType::DES, &unhex("0123456789abcdef")).unwrap();
    let iv: [u8; 8] = unhex("1234567890abcdef").try_into().unwrap();
    let plain = unhex(PLAIN);
    let padded = [plain.clone(), vec![1, 2]].concat();
    let cases: [(Mechanism, ObjectHandle, Vec<u8>, &str); 5] = [
        // SP 800-67 Rev. 2 three-key TDEA example.
        (
            Mechanism::Des3Ecb,
            k3,
            plain.clone(),
            "a826fd8ce53b855fcce21c8112256fe668d5c05dd9b6b900",
        ),
        // Two-key: K1 K2 K1 (OpenSSL's des-ede agrees).
        (
            Mechanism::Des3Ecb,
            k2,
            plain[..8].to_vec(),
            "c44862f70cf2fbdc",
        ),
        // OpenSSL's des-ede3-cbc of the same 26 bytes agrees.
        (
            Mechanism::Des3CbcPad(iv),
            k3,
            padded,
            "38413d4ba2325cf1141f707471ac2ced57db530f0123b5ace7e14579e7692bc1",
        ),
        // FIPS 81 Appendix B (ECB) and C (CBC).
        (
            Mechanism::DesEcb,
            k1,
            b"Now is t".to_vec(),
            "3fa40e8a984d4815",
        ),
        (
            Mechanism::DesCbc(iv),
            k1,
            b"Now is the time for all ".to_vec(),
            "e5c7cdde872bf27c43e934008c389c0f683788499a7c05f6",
        ),
    ];
    for (mech, key, plain, want) in cases {
        let want = unhex(want);
        assert_eq!(s.encrypt(&mech, key, &plain).unwrap(), want, "{mech:?}");
        assert_eq!(s.decrypt(&mech, key, &want).unwrap(), plain, "{mech:?}");
        for chunk in [1, 7, 8, 9, 17] {
            s.encrypt_init(&mech, key).unwrap();
            assert_eq!(
                cipher_parts(&s, true, &plain, chunk),
                want,
                "{mech:?} {chunk}"
            );
            s.decrypt_init(&mech, key).unwrap();
            assert_eq!(
                cipher_parts(&s, false, &want, chunk),
                plain,
                "{mech:?} {chunk}"
            );
        }
    }
    // Not a whole number of blocks; a bad IV; a key of the wrong kind.
    assert_rv!(
        s.encrypt(&Mechanism::Des3Ecb, k3, &plain[..12]),
        DataLenRange
    );
    assert_rv!(
        s.decrypt(&Mechanism::Des3Cbc(iv), k3, &plain[..12]),
        EncryptedDataLenRange
    );
    assert_rv!(
        s.encrypt(&Mechanism::DesEcb, k3, &plain[..8]),
        KeyTypeInconsistent
    );
    assert_rv!(
        s.encrypt(&Mechanism::Des3Ecb, k1, &plain[..8]),
        KeyTypeInconsistent
    );
    assert_rv!(
        s.encrypt(&Mechanism::AesEcb, k3, &[0; 16]),
        KeyTypeInconsistent
    );
    // Tampered CBC-PAD padding is refused.
    let mut ct = s.encrypt(&Mechanism::Des3CbcPad(iv), k3, b"abc").unwrap();
    ct[7] ^= 0x01;
    assert_rv!(
        s.decrypt(&Mechanism::Des3CbcPad(iv), k3, &ct),
        EncryptedDataInvalid
    );
}

#[test]
fn des3_cmac_and_mac_known_answers() {
    let f = Fixture::new();
    let s = f.user(f.token("des-mac"));
    let msg = unhex("6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e51");
    // NIST SP 800-38B Appendix D.4 (three-key) and D.5 (two-key).
    let examples = [
        (
            KeyType::DES3,
            "8aa83bf8cbda10620bc1bf19fbb6cd58bc313d4a371ca8b5",
            [
                "b7a688e122ffaf95",
                "8e8f293136283797",
                "743ddbe0ce2dc2ed",
                "33e6b1092400eae5",
            ],
        ),
        (
            KeyType::DES2,
            "4cf15134a2850dd58a3d10ba80570d38",
            [
                "bd2ebf9a3ba00361",
                "4ff2ab813c53ce83",
                "62dd1b471902bd4e",
                "31b1e431dabc4eb8",
            ],
        ),
    ];
    for (kt, key, tags) in examples {
        let key = des_key(&s, kt, &unhex(key)).unwrap();
        for (len, tag) in [0, 8, 20, 32].into_iter().zip(tags) {
            let tag = unhex(tag);
            assert_eq!(
                raw_mac(&s, CKM_DES3_CMAC, None, key, &msg[..len]).unwrap(),
                tag
            );
            assert_eq!(
                raw_mac(&s, CKM_DES3_CMAC_GENERAL, Some(5), key, &msg[..len]).unwrap(),
                tag[..5]
            );
        }
    }
    // CBC-MAC with zero padding: the last block of OpenSSL's des-ede3-cbc
    // (IV 0) over the zero-padded message; DES3_MAC is its first half.
    let k3 = des_key(&s, KeyType::DES3, &unhex(KEY3)).unwrap();
    let data = [unhex(PLAIN), vec![0]].concat();
    assert_eq!(
        raw_mac(&s, CKM_DES3_MAC, None, k3, &data).unwrap(),
        unhex("4c9675ac")
    );
    assert_eq!(
        raw_mac(&s, CKM_DES3_MAC_GENERAL, Some(8), k3, &data).unwrap(),
        unhex("4c9675accace34ee")
    );
    assert_eq!(
        raw_mac(&s, CKM_DES3_MAC_GENERAL, Some(9), k3, &data).unwrap_err(),
        CKR_MECHANISM_PARAM_INVALID
    );
    let k1 = des_key(&s, KeyType::DES, &unhex("0123456789abcdef")).unwrap();
    assert_eq!(
        raw_mac(&s, CKM_DES3_CMAC, None, k1, &data).unwrap_err(),
        CKR_KEY_TYPE_INCONSISTENT
    );
}

#[test]
fn generated_keys_have_parity_and_the_right_length() {
    let f = Fixture::new();
    let s = f.user(f.token("des-gen"));
    let iv = [7u8; 8];
    for (keygen, kt, len, mech) in [
        (
            Mechanism::DesKeyGen,
            KeyType::DES,
            8,
            Mechanism::DesCbcPad(iv),
        ),
        (
            Mechanism::Des2KeyGen,
            KeyType::DES2,
            16,
            Mechanism::Des3CbcPad(iv),
        ),
        (
            Mechanism::Des3KeyGen,
            KeyType::DES3,
            24,
            Mechanism::Des3CbcPad(iv),
        ),
    ] {
        let template = [
            Attribute::Token(true),
            Attribute::Encrypt(true),
            Attribute::Decrypt(true),
            Attribute::Extractable(true),
            Attribute::Sensitive(false),
        ];
        let a = s.generate_key(&keygen, &template).unwrap();
        let b = s.generate_key(&keygen, &template).unwrap();
        let (va, vb) = (value(&s, a), value(&s, b));
        assert_eq!(va.len(), len);
        assert_ne!(va, vb);
        assert!(odd_parity(&va), "{va:02x?}");
        if len == 24 {
            assert_ne!(va[..8], va[16..], "three distinct components");
        }
        match &s.get_attributes(a, &[AttributeType::KeyType]).unwrap()[..] {
            [Attribute::KeyType(t)] => assert_eq!(*t, kt),
            other => panic!("{other:?}"),
        }
        let ct = s.encrypt(&mech, a, b"seventeen bytes!!").unwrap();
        assert_eq!(s.decrypt(&mech, a, &ct).unwrap(), b"seventeen bytes!!");
        // A length other than the key type's own, or another key type.
        assert_rv!(
            s.generate_key(&keygen, &[Attribute::ValueLen(32.into())]),
            AttributeValueInvalid
        );
        assert_rv!(
            s.generate_key(&keygen, &[Attribute::KeyType(KeyType::AES)]),
            TemplateInconsistent
        );
    }
}

#[test]
fn bad_parity_weak_and_wrongly_sized_keys_are_refused() {
    let f = Fixture::new();
    let s = f.user(f.token("des-weak"));
    let good = unhex(KEY3);
    let mut bad_parity = good.clone();
    bad_parity[3] ^= 0x01;
    let weak = [unhex("0101010101010101"), good[8..].to_vec()].concat();
    let semi_weak = unhex("01fe01fe01fe01fe");
    let collapsed = [&good[..8], &good[..8], &good[16..]].concat();
    for (kt, v) in [
        (KeyType::DES3, bad_parity.clone()),
        (KeyType::DES3, weak),
        (KeyType::DES, semi_weak),
        (KeyType::DES3, collapsed),
        (KeyType::DES2, good.clone()),
        (KeyType::DES, good[..16].to_vec()),
    ] {
        assert_rv!(des_key(&s, kt, &v), AttributeValueInvalid);
    }
    // Unwrapping a value with bad parity as a DES3 key fails too (the
    // spec: "create or unwrap"), while the good value unwraps.
    let kek = s
        .generate_key(
            &Mechanism::AesKeyGen,
            &[
                Attribute::ValueLen(32.into()),
                Attribute::Token(false),
                Attribute::Encrypt(true),
                Attribute::Unwrap(true),
            ],
        )
        .unwrap();
    let template = [
        Attribute::Class(ObjectClass::SECRET_KEY),
        Attribute::KeyType(KeyType::DES3),
        Attribute::Token(false),
        Attribute::Encrypt(true),
    ];
    let wrapped_bad = s.encrypt(&Mechanism::AesKeyWrap, kek, &bad_parity).unwrap();
    assert_rv!(
        s.unwrap_key(&Mechanism::AesKeyWrap, kek, &wrapped_bad, &template),
        WrappedKeyInvalid
    );
    let wrapped = s.encrypt(&Mechanism::AesKeyWrap, kek, &good).unwrap();
    let k = s
        .unwrap_key(&Mechanism::AesKeyWrap, kek, &wrapped, &template)
        .unwrap();
    assert_eq!(
        s.encrypt(&Mechanism::Des3Ecb, k, &unhex(PLAIN)).unwrap(),
        unhex("a826fd8ce53b855fcce21c8112256fe668d5c05dd9b6b900")
    );
}

/// DES3 wraps and unwraps (CBC-PAD, any key length; ECB, whole blocks),
/// and a derived DES3 key gets its parity bits set.
#[test]
fn wrapping_with_des3_and_derived_des_keys() {
    let f = Fixture::new();
    let s = f.user(f.token("des-wrap"));
    let kek = des_key(&s, KeyType::DES3, &unhex(KEY3)).unwrap();
    let aes = s
        .create_object(&[
            Attribute::Class(ObjectClass::SECRET_KEY),
            Attribute::KeyType(KeyType::AES),
            Attribute::Value(vec![0x42; 16]),
            Attribute::Token(false),
            Attribute::Encrypt(true),
            Attribute::Extractable(true),
        ])
        .unwrap();
    let iv = [9u8; 8];
    for mech in [Mechanism::Des3CbcPad(iv), Mechanism::Des3Ecb] {
        let wrapped = s.wrap_key(&mech, kek, aes).unwrap();
        let back = s
            .unwrap_key(
                &mech,
                kek,
                &wrapped,
                &[
                    Attribute::Class(ObjectClass::SECRET_KEY),
                    Attribute::KeyType(KeyType::AES),
                    Attribute::Token(false),
                    Attribute::Encrypt(true),
                ],
            )
            .unwrap();
        assert_eq!(
            s.encrypt(&Mechanism::AesEcb, back, &[1; 16]).unwrap(),
            s.encrypt(&Mechanism::AesEcb, aes, &[1; 16]).unwrap(),
            "{mech:?}"
        );
    }
    // 16 + 8 bytes with no parity care, concatenated into a DES3 key.
    let base = s
        .create_object(&[
            Attribute::Class(ObjectClass::SECRET_KEY),
            Attribute::KeyType(KeyType::GENERIC_SECRET),
            Attribute::Value((0u8..16).map(|i| i * 16).collect()),
            Attribute::Token(false),
            Attribute::Derive(true),
            Attribute::Extractable(true),
            Attribute::Sensitive(false),
        ])
        .unwrap();
    let data = [0x10u8, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80];
    let mech = Mechanism::ConcatenateBaseAndData(KeyDerivationStringData::new(&data));
    let key = s
        .derive_key(
            &mech,
            base,
            &[
                Attribute::Class(ObjectClass::SECRET_KEY),
                Attribute::KeyType(KeyType::DES3),
                Attribute::Token(false),
                Attribute::Extractable(true),
                Attribute::Sensitive(false),
            ],
        )
        .unwrap();
    let derived = value(&s, key);
    let mut expected: Vec<u8> = (0u8..16).map(|i| i * 16).chain(data).collect();
    for b in &mut expected {
        let high = *b & 0xfe;
        *b = high | ((high.count_ones() as u8 & 1) ^ 1);
    }
    assert_eq!(derived, expected);
    assert!(odd_parity(&derived));
}

#[test]
fn mechanism_info_reports_des_key_sizes_in_bytes() {
    let f = Fixture::new();
    let slot = f.token("des-info");
    let mut count: CK_ULONG = 0;
    // SAFETY: a size query, then a buffer of the size given.
    let list = unsafe {
        let rv = raw().C_GetMechanismList.unwrap()(slot.id(), std::ptr::null_mut(), &mut count);
        assert_eq!(rv, CKR_OK);
        let mut list = vec![0 as CK_MECHANISM_TYPE; count as usize];
        let rv = raw().C_GetMechanismList.unwrap()(slot.id(), list.as_mut_ptr(), &mut count);
        assert_eq!(rv, CKR_OK);
        list
    };
    for (ty, min, max, flags) in [
        (
            CKM_DES3_CBC_PAD,
            16,
            24,
            CKF_ENCRYPT | CKF_DECRYPT | CKF_WRAP | CKF_UNWRAP,
        ),
        (CKM_DES3_CMAC, 16, 24, CKF_SIGN | CKF_VERIFY),
        (CKM_DES3_KEY_GEN, 24, 24, CKF_GENERATE),
        (CKM_DES2_KEY_GEN, 16, 16, CKF_GENERATE),
        (
            CKM_DES_ECB,
            8,
            8,
            CKF_ENCRYPT | CKF_DECRYPT | CKF_WRAP | CKF_UNWRAP,
        ),
    ] {
        assert!(list.contains(&ty), "{ty:#x} listed");
        let mut info = CK_MECHANISM_INFO::default();
        // SAFETY: a live CK_MECHANISM_INFO.
        let rv = unsafe { raw().C_GetMechanismInfo.unwrap()(slot.id(), ty, &mut info) };
        assert_eq!(rv, CKR_OK);
        assert_eq!(
            (info.ulMinKeySize, info.ulMaxKeySize),
            (min, max),
            "{ty:#x}"
        );
        assert_eq!(info.flags & flags, flags, "{ty:#x}");
    }
}
