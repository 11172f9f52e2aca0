//! Bad input never crashes the host: random templates, mechanisms, handles
//! and lengths through the raw C API. A caught panic would surface as
//! `CKR_GENERAL_ERROR`, so that code must never come back.

mod common;

use common::*;
use cryptoki_sys::*;
use std::ptr::null_mut;

const TYPES: &[CK_ATTRIBUTE_TYPE] = &[
    CKA_CLASS,
    CKA_TOKEN,
    CKA_PRIVATE,
    CKA_LABEL,
    CKA_VALUE,
    CKA_KEY_TYPE,
    CKA_ID,
    CKA_SENSITIVE,
    CKA_EXTRACTABLE,
    CKA_EC_PARAMS,
    CKA_EC_POINT,
    CKA_SIGN,
    CKA_VERIFY,
    CKA_LOCAL,
    CKA_MODIFIABLE,
    CKA_ALLOWED_MECHANISMS,
    CKA_START_DATE,
    CKA_CERTIFICATE_TYPE,
    CKA_SUBJECT,
    CKA_VALUE_LEN,
    CKA_UNIQUE_ID,
    CKA_TRUSTED,
    0x8000_0001,
];
const CLASSES: &[CK_ULONG] = &[
    CKO_DATA,
    CKO_CERTIFICATE,
    CKO_PUBLIC_KEY,
    CKO_PRIVATE_KEY,
    CKO_SECRET_KEY,
    77,
];
const KEY_TYPES: &[CK_ULONG] = &[
    CKK_EC_EDWARDS,
    CKK_GENERIC_SECRET,
    CKK_AES,
    CKK_RSA,
    CKK_EC,
    0x1234,
];

#[test]
fn random_templates_and_mechanisms_get_error_codes_not_crashes() {
    let f = Fixture::new();
    let slot = f.token("fuzz");
    let s = f.user(slot);
    let h = s.handle();
    let l = raw();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut created = vec![0 as CK_OBJECT_HANDLE];
    let mut codes = std::collections::BTreeSet::new();
    for _ in 0..3000 {
        let n = rng.below(7) as usize;
        let mut buffers: Vec<Vec<u8>> = Vec::new();
        let mut types = Vec::new();
        for _ in 0..n {
            let ty = TYPES[rng.below(TYPES.len() as u64) as usize];
            let value: Vec<u8> = match (ty, rng.below(4)) {
                (CKA_CLASS, 0..=2) => CLASSES[rng.below(CLASSES.len() as u64) as usize]
                    .to_ne_bytes()
                    .to_vec(),
                (CKA_KEY_TYPE, 0..=2) => KEY_TYPES[rng.below(KEY_TYPES.len() as u64) as usize]
                    .to_ne_bytes()
                    .to_vec(),
                (_, 0) => vec![rng.below(2) as u8],
                (_, 1) => (0..rng.below(40)).map(|_| rng.next() as u8).collect(),
                (_, 2) => vec![0x06, 0x03, 0x2b, 0x65, 0x70],
                _ => vec![],
            };
            buffers.push(value);
            types.push(ty);
        }
        let mut template: Vec<CK_ATTRIBUTE> = types
            .iter()
            .zip(buffers.iter_mut())
            .map(|(t, b)| CK_ATTRIBUTE {
                type_: *t,
                pValue: if b.is_empty() {
                    null_mut()
                } else {
                    b.as_mut_ptr().cast()
                },
                ulValueLen: b.len() as CK_ULONG,
            })
            .collect();
        let count = template.len() as CK_ULONG;
        let target = created[rng.below(created.len() as u64) as usize];
        let mut out: CK_OBJECT_HANDLE = 0;
        // SAFETY: every pValue is valid for its ulValueLen; out-pointers are live.
        let rv = unsafe {
            match rng.below(6) {
                0 | 1 => {
                    let rv = l.C_CreateObject.unwrap()(h, template.as_mut_ptr(), count, &mut out);
                    if rv == CKR_OK {
                        created.push(out);
                    }
                    rv
                }
                2 => l.C_SetAttributeValue.unwrap()(h, target, template.as_mut_ptr(), count),
                3 => l.C_GetAttributeValue.unwrap()(h, target, template.as_mut_ptr(), count),
                4 => {
                    let rv = l.C_FindObjectsInit.unwrap()(h, template.as_mut_ptr(), count);
                    l.C_FindObjectsFinal.unwrap()(h);
                    rv
                }
                _ => {
                    let mech_type = [
                        CKM_EDDSA,
                        CKM_SHA256,
                        CKM_EC_EDWARDS_KEY_PAIR_GEN,
                        CKM_RSA_PKCS,
                        rng.next() as CK_ULONG,
                    ][rng.below(5) as usize];
                    let mut param = [0u8; 24];
                    let plen = [0, 3, 24][rng.below(3) as usize];
                    let mut mech = CK_MECHANISM {
                        mechanism: mech_type,
                        pParameter: param.as_mut_ptr().cast(),
                        ulParameterLen: plen,
                    };
                    let rv = match rng.below(3) {
                        0 => l.C_SignInit.unwrap()(h, &mut mech, target),
                        1 => l.C_VerifyInit.unwrap()(h, &mut mech, target),
                        _ => l.C_DigestInit.unwrap()(h, &mut mech),
                    };
                    let mut sig = [0u8; 64];
                    let mut len: CK_ULONG = 64;
                    let mut data = [1u8; 16];
                    l.C_Sign.unwrap()(h, data.as_mut_ptr(), 16, sig.as_mut_ptr(), &mut len);
                    l.C_Verify.unwrap()(h, data.as_mut_ptr(), 16, sig.as_mut_ptr(), 64);
                    l.C_Digest.unwrap()(h, data.as_mut_ptr(), 16, sig.as_mut_ptr(), &mut len);
                    rv
                }
            }
        };
        assert_ne!(rv, CKR_GENERAL_ERROR, "a panic was caught");
        assert_ne!(rv, CKR_DEVICE_ERROR);
        codes.insert(rv);
    }
    assert!(
        codes.contains(&CKR_OK) && codes.len() > 6,
        "the inputs exercised several paths: {codes:x?}"
    );
    // The module still works afterwards.
    assert!(s.find_objects(&[]).is_ok());
}

#[test]
fn invalid_handles_and_null_pointers_everywhere() {
    let f = Fixture::new();
    let slot = f.token("nulls");
    let s = f.user(slot);
    let h = s.handle();
    let l = raw();
    let bad = 0xffff_ff00 as CK_ULONG;
    // SAFETY: null pointers are deliberate; the module must reject them.
    unsafe {
        assert_eq!(
            l.C_GetSlotList.unwrap()(0, null_mut(), null_mut()),
            CKR_ARGUMENTS_BAD
        );
        assert_eq!(
            l.C_GetSlotInfo.unwrap()(slot.id() as CK_SLOT_ID, null_mut()),
            CKR_ARGUMENTS_BAD
        );
        assert_eq!(
            l.C_GetTokenInfo.unwrap()(slot.id() as CK_SLOT_ID, null_mut()),
            CKR_ARGUMENTS_BAD
        );
        assert_eq!(
            l.C_GetMechanismList.unwrap()(slot.id() as CK_SLOT_ID, null_mut(), null_mut()),
            CKR_ARGUMENTS_BAD
        );
        assert_eq!(
            l.C_GetMechanismInfo.unwrap()(slot.id() as CK_SLOT_ID, CKM_EDDSA, null_mut()),
            CKR_ARGUMENTS_BAD
        );
        assert_eq!(
            l.C_InitToken.unwrap()(slot.id() as CK_SLOT_ID, null_mut(), 4, null_mut()),
            CKR_ARGUMENTS_BAD
        );
        assert_eq!(l.C_InitPIN.unwrap()(h, null_mut(), 4), CKR_ARGUMENTS_BAD);
        assert_eq!(
            l.C_SetPIN.unwrap()(h, null_mut(), 4, null_mut(), 4),
            CKR_ARGUMENTS_BAD
        );
        assert_eq!(
            l.C_GetObjectSize.unwrap()(h, bad, null_mut()),
            CKR_ARGUMENTS_BAD
        );
        let mut size: CK_ULONG = 0;
        assert_eq!(
            l.C_GetObjectSize.unwrap()(h, bad, &mut size),
            CKR_OBJECT_HANDLE_INVALID
        );
        assert_eq!(
            l.C_DestroyObject.unwrap()(h, bad),
            CKR_OBJECT_HANDLE_INVALID
        );
        assert_eq!(
            l.C_DestroyObject.unwrap()(bad, 1),
            CKR_SESSION_HANDLE_INVALID
        );
        assert_eq!(
            l.C_CopyObject.unwrap()(h, bad, null_mut(), 0, &mut size),
            CKR_OBJECT_HANDLE_INVALID
        );
        assert_eq!(l.C_DigestInit.unwrap()(h, null_mut()), CKR_ARGUMENTS_BAD);
        assert_eq!(
            l.C_DigestKey.unwrap()(h, bad),
            CKR_OPERATION_NOT_INITIALIZED
        );
        assert_eq!(
            l.C_GenerateKeyPair.unwrap()(
                h,
                null_mut(),
                null_mut(),
                0,
                null_mut(),
                0,
                null_mut(),
                null_mut()
            ),
            CKR_ARGUMENTS_BAD
        );
        let mut mech = CK_MECHANISM {
            mechanism: CKM_EC_EDWARDS_KEY_PAIR_GEN,
            pParameter: null_mut(),
            ulParameterLen: 0,
        };
        let (mut a, mut b) = (0, 0);
        assert_eq!(
            l.C_GenerateKeyPair.unwrap()(
                h,
                &mut mech,
                null_mut(),
                0,
                null_mut(),
                0,
                &mut a,
                &mut b
            ),
            CKR_TEMPLATE_INCOMPLETE
        );
        assert_eq!(
            l.C_GenerateKeyPair.unwrap()(
                h,
                &mut mech,
                null_mut(),
                3,
                null_mut(),
                0,
                &mut a,
                &mut b
            ),
            CKR_ARGUMENTS_BAD
        );
        let mut huge = [CK_ATTRIBUTE {
            type_: CKA_LABEL,
            pValue: [0u8; 1].as_mut_ptr().cast(),
            ulValueLen: CK_ULONG::MAX,
        }];
        assert_eq!(
            l.C_FindObjectsInit.unwrap()(h, huge.as_mut_ptr(), 1),
            CKR_ATTRIBUTE_VALUE_INVALID
        );
        huge[0].ulValueLen = CK_ULONG::MAX - 1;
        assert_eq!(
            l.C_FindObjectsInit.unwrap()(h, huge.as_mut_ptr(), 1),
            CKR_ARGUMENTS_BAD
        );
        assert_eq!(
            l.C_GenerateRandom.unwrap()(h, [0u8; 1].as_mut_ptr(), CK_ULONG::MAX),
            CKR_ARGUMENTS_BAD
        );
        assert_eq!(l.C_CloseAllSessions.unwrap()(bad), CKR_SLOT_ID_INVALID);
        assert_eq!(l.C_Logout.unwrap()(bad), CKR_SESSION_HANDLE_INVALID);
    }
}

/// Lengths a caller chooses never reach an allocator or a loop unbounded.
/// Each case below once aborted the process, stalled it, or panicked.
mod hostile_lengths {
    use super::common::*;
    use crate::assert_rv;
    use cryptoki::mechanism::Mechanism;
    use cryptoki::mechanism::MechanismType;
    use cryptoki::mechanism::elliptic_curve::{EcKdf, Ecdh1DeriveParams};
    use cryptoki::mechanism::rsa::{PkcsMgfType, PkcsPssParams};
    use cryptoki::object::{Attribute, AttributeType, KeyType, ObjectClass};
    use cryptoki_sys::*;

    const P256: &[u8] = &[0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];

    /// ECDH with a KDF into a key of 2^50 bytes: `Vec::with_capacity`
    /// failed and aborted the host (no `catch_unwind` helps there); a
    /// length that can be allocated ran the KDF loop for seconds.
    #[test]
    fn derived_key_lengths_are_bounded() {
        let f = Fixture::new();
        let slot = f.token("derive-len");
        let s = f.user(slot);
        let (public, private) = s
            .generate_key_pair(
                &Mechanism::EccKeyPairGen,
                &[Attribute::EcParams(P256.to_vec())],
                &[Attribute::Derive(true)],
            )
            .unwrap();
        let point = match s
            .get_attributes(public, &[AttributeType::EcPoint])
            .unwrap()
            .pop()
        {
            Some(Attribute::EcPoint(p)) => p,
            other => panic!("{other:?}"),
        };
        let derive = |key_type: KeyType, len: u64| {
            s.derive_key(
                &Mechanism::Ecdh1Derive(Ecdh1DeriveParams::new(EcKdf::sha256(&[]), &point)),
                private,
                &[
                    Attribute::Class(ObjectClass::SECRET_KEY),
                    Attribute::KeyType(key_type),
                    Attribute::ValueLen(len.into()),
                ],
            )
        };
        for len in [1u64 << 50, 1 << 30, 513, 0, u64::MAX] {
            assert_rv!(derive(KeyType::GENERIC_SECRET, len), AttributeValueInvalid);
        }
        for len in [8u64, 33, 1 << 40] {
            assert_rv!(derive(KeyType::AES, len), AttributeValueInvalid);
        }
        // The longest generic secret and every AES size still derive.
        derive(KeyType::GENERIC_SECRET, 512).unwrap();
        for len in [16u64, 24, 32] {
            derive(KeyType::AES, len).unwrap();
        }
    }

    /// An RSA private key without primes made the module factor `n` from
    /// `(n, e, d)`; with d = 1 and e = 2^t + 1 the search ran t steps per
    /// base (1.6 s at a 251-byte e, growing with it). The exponents are now
    /// bounded and checked before any search.
    #[test]
    fn rsa_import_without_primes_is_bounded() {
        let f = Fixture::new();
        let slot = f.token("rsa-import");
        let s = f.user(slot);
        let mut n = vec![0xc3u8; 256];
        n[255] |= 1;
        let mut huge_e = vec![0u8; 64 * 1024];
        huge_e[0] = 1;
        huge_e[64 * 1024 - 1] = 1;
        let import = |e: &[u8], d: &[u8]| {
            s.create_object(&[
                Attribute::Class(ObjectClass::PRIVATE_KEY),
                Attribute::KeyType(KeyType::RSA),
                Attribute::Modulus(n.clone()),
                Attribute::PublicExponent(e.to_vec()),
                Attribute::PrivateExponent(d.to_vec()),
            ])
        };
        let start = std::time::Instant::now();
        // e = 2^524287 + 1 (a 64 KiB exponent), d = 1.
        assert_rv!(import(&huge_e, &[1]), AttributeValueInvalid);
        // An even e, an e below 3, d = 0 or 1, d ≥ n.
        for (e, d) in [
            (&[1u8, 0, 0][..], &[5u8][..]),
            (&[1u8][..], &[5u8][..]),
            (&[1u8, 0, 1][..], &[0u8][..]),
            (&[1u8, 0, 1][..], &[1u8][..]),
            (&[1u8, 0, 1][..], &n[..]),
        ] {
            assert_rv!(import(e, d), AttributeValueInvalid);
        }
        // A consistent-looking but wrong (n, e, d) is refused after one
        // exponentiation, not after the search.
        let d = vec![0x5au8; 255];
        assert_rv!(import(&[1, 0, 1], &d), AttributeValueInvalid);
        // A hang guard, not a speed target: before the bounds the first
        // import alone ran for over a minute (t = 524,287 squarings for
        // each of 198 bases).
        assert!(
            start.elapsed() < std::time::Duration::from_secs(20),
            "{:?}",
            start.elapsed()
        );
    }

    /// sLen = 2^64 − 34 wrapped `sLen + hLen + 2` to 0, passed the check,
    /// and the signer panicked (`CKR_GENERAL_ERROR`, the operation left
    /// active, a message on the host's stderr).
    #[test]
    fn pss_salt_lengths_cannot_overflow() {
        let f = Fixture::new();
        let slot = f.token("pss-salt");
        let s = f.user(slot);
        let (_, private) = s
            .generate_key_pair(
                &Mechanism::RsaPkcsKeyPairGen,
                &[Attribute::ModulusBits(2048.into())],
                &[Attribute::Sign(true)],
            )
            .unwrap();
        for s_len in [u64::MAX - 33, u64::MAX, u64::MAX - 31, 1 << 63] {
            let params = PkcsPssParams {
                hash_alg: MechanismType::SHA256,
                mgf: PkcsMgfType::MGF1_SHA256,
                s_len: s_len.into(),
            };
            assert_rv!(
                s.sign_init(&Mechanism::RsaPkcsPss(params), private),
                MechanismParamInvalid
            );
        }
        // Nothing was left active: a valid operation starts.
        let params = PkcsPssParams {
            hash_alg: MechanismType::SHA256,
            mgf: PkcsMgfType::MGF1_SHA256,
            s_len: 32.into(),
        };
        s.sign(&Mechanism::RsaPkcsPss(params), private, &[7; 32])
            .unwrap();
    }

    /// `C_GetAttributeValue` with `ulCount` = 2^40 once sized an allocation
    /// from it (8 TiB: the process aborted); every template count is bounded.
    #[test]
    fn template_counts_are_bounded() {
        let f = Fixture::new();
        let slot = f.token("count");
        let s = f.user(slot);
        let data = s
            .create_object(&[
                Attribute::Class(ObjectClass::DATA),
                Attribute::Label(b"d".to_vec()),
            ])
            .unwrap();
        let l = raw();
        let h = s.handle();
        let mut one = [CK_ATTRIBUTE {
            type_: CKA_LABEL,
            pValue: std::ptr::null_mut(),
            ulValueLen: 0,
        }];
        for count in [1u64 << 40, 1025, CK_ULONG::MAX] {
            // SAFETY: the module refuses the count before reading the array.
            let rv = unsafe {
                (l.C_GetAttributeValue.unwrap())(h, data.handle(), one.as_mut_ptr(), count)
            };
            assert_eq!(rv, CKR_ARGUMENTS_BAD, "count {count}");
            let rv = unsafe { (l.C_FindObjectsInit.unwrap())(h, one.as_mut_ptr(), count) };
            assert_eq!(rv, CKR_ARGUMENTS_BAD, "count {count}");
        }
        // SAFETY: a valid one-entry template.
        let rv = unsafe { (l.C_GetAttributeValue.unwrap())(h, data.handle(), one.as_mut_ptr(), 1) };
        assert_eq!(rv, CKR_OK);
        assert_eq!(one[0].ulValueLen, 1);
    }
}
