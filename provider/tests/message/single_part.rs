//! Single-part message encryption and decryption (base spec 3.0 §5.19 /
//! §5.20, `C_EncryptMessage` / `C_DecryptMessage`): known answers, tamper
//! detection, generated IVs and the checks of `C_MessageEncryptInit`.

use super::*;

/// GCM spec test cases 3 and 4 (AES-128) through `C_EncryptMessage` with
/// the caller's IV, then back through `C_DecryptMessage`; tampered tag,
/// AAD or ciphertext give `CKR_ENCRYPTED_DATA_INVALID` and write nothing.
#[test]
fn known_answers_and_tamper() {
    let f = Fixture::new();
    let s = f.user(f.token("msg"));
    let key = aes_key(&s, &unhex(KEY));
    let l = list30();
    assert_eq!(init(l, &s, key, true), CKR_OK);
    assert_eq!(init(l, &s, key, true), CKR_OPERATION_ACTIVE);
    assert_eq!(init(l, &s, key, false), CKR_OK);
    let p4 = &unhex(P3)[..60];
    for (aad, plain, ct, tag_hex) in [
        (vec![], unhex(P3), unhex(C3), T3),
        (unhex(A4), p4.to_vec(), unhex(C3)[..60].to_vec(), T4),
    ] {
        let mut iv = unhex(IV);
        let mut tag = [0u8; 16];
        let mut p = params(&mut iv, 0, CKG_NO_GENERATE, &mut tag);
        // Size query, then too small: neither ends the operation.
        assert_eq!(
            message(l, &s, true, &mut p, &aad, &plain, None),
            (CKR_OK, plain.len() as CK_ULONG)
        );
        let mut small = vec![0u8; plain.len() - 1];
        assert_eq!(
            message(l, &s, true, &mut p, &aad, &plain, Some(&mut small)),
            (CKR_BUFFER_TOO_SMALL, plain.len() as CK_ULONG)
        );
        let mut out = vec![0u8; plain.len()];
        assert_eq!(
            message(l, &s, true, &mut p, &aad, &plain, Some(&mut out)).0,
            CKR_OK
        );
        assert_eq!(out, ct);
        assert_eq!(tag.to_vec(), unhex(tag_hex));
        assert_eq!(iv, unhex(IV), "CKG_NO_GENERATE keeps the caller's IV");

        let mut back = vec![0u8; ct.len()];
        let mut p = params(&mut iv, 0, CKG_NO_GENERATE, &mut tag);
        assert_eq!(
            message(l, &s, false, &mut p, &aad, &ct, Some(&mut back)).0,
            CKR_OK
        );
        assert_eq!(back, plain);

        // Tampered tag, AAD, ciphertext.
        let mut bad_tag = tag;
        bad_tag[3] ^= 1;
        let mut bad_aad = aad.clone();
        bad_aad.push(0);
        let mut bad_ct = ct.clone();
        bad_ct[7] ^= 0x80;
        for (t, a, c) in [
            (bad_tag, aad.clone(), ct.clone()),
            (tag, bad_aad, ct.clone()),
            (tag, aad.clone(), bad_ct),
        ] {
            let mut t = t;
            let mut out = vec![0xeeu8; c.len()];
            let mut p = params(&mut iv, 0, CKG_NO_GENERATE, &mut t);
            assert_eq!(
                message(l, &s, false, &mut p, &a, &c, Some(&mut out)).0,
                CKR_ENCRYPTED_DATA_INVALID
            );
            assert!(out.iter().all(|&b| b == 0xee), "no plaintext released");
        }
    }
    // Wrong parameter size / tag size.
    let mut iv = unhex(IV);
    let mut tag = [0u8; 16];
    let mut p = params(&mut iv, 0, CKG_NO_GENERATE, &mut tag);
    let mut out = [0u8; 4];
    let mut len: CK_ULONG = 4;
    // SAFETY: valid buffers; the parameter length is deliberately short.
    let rv = unsafe {
        l.C_EncryptMessage.unwrap()(
            s.handle(),
            &mut p as *mut _ as *mut _,
            8,
            null_mut(),
            0,
            out.as_mut_ptr(),
            4,
            out.as_mut_ptr(),
            &mut len,
        )
    };
    assert_eq!(rv, CKR_MECHANISM_PARAM_INVALID);
    p.ulTagBits = 64;
    assert_eq!(
        message(l, &s, true, &mut p, &[], &[1, 2], Some(&mut out)).0,
        CKR_MECHANISM_PARAM_INVALID
    );
    // SAFETY: no pointers.
    unsafe {
        assert_eq!(l.C_MessageEncryptFinal.unwrap()(s.handle()), CKR_OK);
        assert_eq!(
            l.C_MessageEncryptFinal.unwrap()(s.handle()),
            CKR_OPERATION_NOT_INITIALIZED
        );
        assert_eq!(l.C_MessageDecryptFinal.unwrap()(s.handle()), CKR_OK);
    }
    let mut p = params(&mut iv, 0, CKG_NO_GENERATE, &mut tag);
    assert_eq!(
        message(l, &s, true, &mut p, &[], &[1, 2], Some(&mut out)).0,
        CKR_OPERATION_NOT_INITIALIZED
    );
}

/// `CKG_GENERATE_COUNTER`: 1000 distinct IVs, the fixed prefix kept, each
/// message decrypts; `CKG_GENERATE_RANDOM`: distinct IVs with the prefix.
/// A `C_EncryptInit` operation runs alongside, unaffected.
#[test]
fn generated_ivs() {
    let f = Fixture::new();
    let s = f.user(f.token("msg"));
    let key = aes_key(&s, &unhex(KEY));
    let l = list30();
    // A classic GCM encryption started before, finished after.
    let mut gp = unhex(IV);
    let mut gparams = CK_GCM_PARAMS {
        pIv: gp.as_mut_ptr(),
        ulIvLen: 12,
        ulIvBits: 96,
        pAAD: null_mut(),
        ulAADLen: 0,
        ulTagBits: 128,
    };
    let mut gmech = CK_MECHANISM {
        mechanism: CKM_AES_GCM,
        pParameter: &mut gparams as *mut _ as *mut _,
        ulParameterLen: std::mem::size_of::<CK_GCM_PARAMS>() as CK_ULONG,
    };
    // SAFETY: valid mechanism.
    assert_eq!(
        unsafe { l.C_EncryptInit.unwrap()(s.handle(), &mut gmech, key.handle()) },
        CKR_OK
    );

    assert_eq!(init(l, &s, key, true), CKR_OK);
    assert_eq!(init(l, &s, key, false), CKR_OK);
    for generator in [CKG_GENERATE_COUNTER, CKG_GENERATE_RANDOM] {
        let mut seen = HashSet::new();
        for i in 0..1000u32 {
            let plain = i.to_be_bytes();
            let mut iv = [0u8; 12];
            iv[..4].copy_from_slice(&[0xa5, 0x5a, 0x0f, 0xf0]);
            let mut tag = [0u8; 16];
            let mut p = params(&mut iv, 32, generator, &mut tag);
            let mut ct = [0u8; 4];
            assert_eq!(
                message(l, &s, true, &mut p, b"ad", &plain, Some(&mut ct)).0,
                CKR_OK
            );
            assert_eq!(&iv[..4], &[0xa5, 0x5a, 0x0f, 0xf0], "fixed part kept");
            assert!(seen.insert(iv), "IV repeated");
            let mut back = [0u8; 4];
            let mut p = params(&mut iv, 32, generator, &mut tag);
            assert_eq!(
                message(l, &s, false, &mut p, b"ad", &ct, Some(&mut back)).0,
                CKR_OK
            );
            assert_eq!(back, plain);
        }
        // Fewer than 32 counter bits is refused.
        let mut iv = [0u8; 12];
        let mut tag = [0u8; 16];
        let mut p = params(&mut iv, 96, generator, &mut tag);
        assert_eq!(
            message(l, &s, true, &mut p, &[], &[1], Some(&mut [0u8; 1])).0,
            CKR_MECHANISM_PARAM_INVALID
        );
    }
    // The classic operation is still there and gives test case 3.
    let plain = unhex(P3);
    let mut out = vec![0u8; plain.len() + 16];
    let mut len = out.len() as CK_ULONG;
    // SAFETY: valid buffers.
    let rv = unsafe {
        l.C_Encrypt.unwrap()(
            s.handle(),
            plain.as_ptr() as *mut _,
            plain.len() as CK_ULONG,
            out.as_mut_ptr(),
            &mut len,
        )
    };
    assert_eq!(rv, CKR_OK);
    assert_eq!(out[..plain.len()], unhex(C3)[..]);
    // C_SessionCancel ends exactly the message operations named.
    // SAFETY: no pointers.
    unsafe {
        assert_eq!(
            l.C_SessionCancel.unwrap()(s.handle(), CKF_MESSAGE_ENCRYPT),
            CKR_OK
        );
        assert_eq!(
            l.C_MessageEncryptFinal.unwrap()(s.handle()),
            CKR_OPERATION_NOT_INITIALIZED
        );
        assert_eq!(l.C_MessageDecryptFinal.unwrap()(s.handle()), CKR_OK);
    }
}

/// Only `CKM_AES_GCM` without parameter; a key without `CKA_ENCRYPT` is refused.
#[test]
fn init_checks() {
    let f = Fixture::new();
    let s = f.user(f.token("msg"));
    let l = list30();
    let no_encrypt = s
        .create_object(&[
            Attribute::Class(ObjectClass::SECRET_KEY),
            Attribute::KeyType(KeyType::AES),
            Attribute::Value(unhex(KEY)),
            Attribute::Encrypt(false),
        ])
        .unwrap();
    assert_eq!(
        init(l, &s, no_encrypt, true),
        CKR_KEY_FUNCTION_NOT_PERMITTED
    );
    let key = aes_key(&s, &unhex(KEY));
    let mut mech = CK_MECHANISM {
        mechanism: CKM_AES_CBC,
        pParameter: null_mut(),
        ulParameterLen: 0,
    };
    // SAFETY: valid or deliberately null pointers.
    unsafe {
        assert_eq!(
            l.C_MessageEncryptInit.unwrap()(s.handle(), &mut mech, key.handle()),
            CKR_MECHANISM_INVALID
        );
        let mut junk = [0u8; 8];
        mech.mechanism = CKM_AES_GCM;
        mech.pParameter = junk.as_mut_ptr() as *mut _;
        mech.ulParameterLen = 8;
        assert_eq!(
            l.C_MessageEncryptInit.unwrap()(s.handle(), &mut mech, key.handle()),
            CKR_MECHANISM_PARAM_INVALID
        );
        assert_eq!(
            l.C_MessageEncryptInit.unwrap()(s.handle(), null_mut(), key.handle()),
            CKR_ARGUMENTS_BAD
        );
        // A CK_GCM_MESSAGE_PARAMS at init (how the cryptoki crate passes
        // it) is accepted; the per-message parameters still govern.
        let mut at_init = CK_GCM_MESSAGE_PARAMS::default();
        mech.pParameter = (&mut at_init as *mut CK_GCM_MESSAGE_PARAMS).cast();
        mech.ulParameterLen = std::mem::size_of::<CK_GCM_MESSAGE_PARAMS>() as CK_ULONG;
        assert_eq!(
            l.C_MessageEncryptInit.unwrap()(s.handle(), &mut mech, key.handle()),
            CKR_OK
        );
        assert_eq!(l.C_MessageEncryptFinal.unwrap()(s.handle()), CKR_OK);
    }
}
