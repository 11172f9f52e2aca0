//! NIST SP 800-108 KDFs (PKCS #11 3.0 mechanisms spec §2.42): additional
//! derived keys, the DKM length, all-or-nothing creation and key types.

use super::*;

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
