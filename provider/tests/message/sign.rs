//! Message-based signing and verification (base spec 3.0 §5.21 / §5.22):
//! HMAC and Ed25519 through `C_SignMessage` / `C_VerifyMessage`, and
//! multi-part messages through `C_SignMessageBegin` / `Next`.

use super::*;

fn sign_init(
    l: &CK_FUNCTION_LIST_3_0,
    s: &Session,
    ty: CK_MECHANISM_TYPE,
    key: ObjectHandle,
    sign: bool,
) -> CK_RV {
    let mut mech = CK_MECHANISM {
        mechanism: ty,
        pParameter: null_mut(),
        ulParameterLen: 0,
    };
    // SAFETY: valid mechanism.
    unsafe {
        if sign {
            l.C_MessageSignInit.unwrap()(s.handle(), &mut mech, key.handle())
        } else {
            l.C_MessageVerifyInit.unwrap()(s.handle(), &mut mech, key.handle())
        }
    }
}

fn sign_message(
    l: &CK_FUNCTION_LIST_3_0,
    s: &Session,
    data: &[u8],
    out: Option<&mut [u8]>,
) -> (CK_RV, CK_ULONG) {
    let (p, mut len) = match out {
        Some(o) => (o.as_mut_ptr(), o.len() as CK_ULONG),
        None => (null_mut(), 0),
    };
    // SAFETY: buffers valid for their lengths.
    let rv = unsafe {
        l.C_SignMessage.unwrap()(
            s.handle(),
            null_mut(),
            0,
            data.as_ptr() as *mut _,
            data.len() as CK_ULONG,
            p,
            &mut len,
        )
    };
    (rv, len)
}

fn verify_message(l: &CK_FUNCTION_LIST_3_0, s: &Session, data: &[u8], sig: &[u8]) -> CK_RV {
    // SAFETY: buffers valid for their lengths.
    unsafe {
        l.C_VerifyMessage.unwrap()(
            s.handle(),
            null_mut(),
            0,
            data.as_ptr() as *mut _,
            data.len() as CK_ULONG,
            sig.as_ptr() as *mut _,
            sig.len() as CK_ULONG,
        )
    }
}

/// RFC 4231 test case 2 (HMAC-SHA-256) through `C_SignMessage` equals the
/// vector and `C_Sign`; `C_VerifyMessage` accepts it and rejects a changed
/// MAC; several messages in one operation; mechanism-info flags.
#[test]
fn hmac_message_sign_and_verify() {
    let f = Fixture::new();
    let slot = f.token("msg");
    let s = f.user(slot);
    let l = list30();
    let key = s
        .create_object(&[
            Attribute::Class(ObjectClass::SECRET_KEY),
            Attribute::KeyType(KeyType::GENERIC_SECRET),
            Attribute::Value(b"Jefe".to_vec()),
            Attribute::Sign(true),
            Attribute::Verify(true),
        ])
        .unwrap();
    let data = b"what do ya want for nothing?";
    let expected = unhex("5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    assert_eq!(s.sign(&Mechanism::Sha256Hmac, key, data).unwrap(), expected);
    assert_eq!(sign_init(l, &s, CKM_SHA256_HMAC, key, true), CKR_OK);
    assert_eq!(
        sign_init(l, &s, CKM_SHA256_HMAC, key, true),
        CKR_OPERATION_ACTIVE
    );
    assert_eq!(sign_message(l, &s, data, None), (CKR_OK, 32));
    let mut small = [0u8; 31];
    assert_eq!(
        sign_message(l, &s, data, Some(&mut small)),
        (CKR_BUFFER_TOO_SMALL, 32)
    );
    for _ in 0..3 {
        let mut mac = [0u8; 32];
        assert_eq!(sign_message(l, &s, data, Some(&mut mac)), (CKR_OK, 32));
        assert_eq!(mac.to_vec(), expected);
    }
    assert_eq!(sign_init(l, &s, CKM_SHA256_HMAC, key, false), CKR_OK);
    assert_eq!(verify_message(l, &s, data, &expected), CKR_OK);
    let mut bad = expected.clone();
    bad[0] ^= 1;
    assert_eq!(verify_message(l, &s, data, &bad), CKR_SIGNATURE_INVALID);
    assert_eq!(
        verify_message(l, &s, b"other", &expected),
        CKR_SIGNATURE_INVALID
    );
    assert_eq!(
        verify_message(l, &s, data, &expected),
        CKR_OK,
        "operation survives"
    );
    // SAFETY: no pointers.
    unsafe {
        assert_eq!(l.C_MessageSignFinal.unwrap()(s.handle()), CKR_OK);
        assert_eq!(l.C_MessageVerifyFinal.unwrap()(s.handle()), CKR_OK);
        assert_eq!(
            l.C_MessageVerifyFinal.unwrap()(s.handle()),
            CKR_OPERATION_NOT_INITIALIZED
        );
    }
    assert_eq!(
        sign_message(l, &s, data, Some(&mut [0u8; 32])).0,
        CKR_OPERATION_NOT_INITIALIZED
    );
    // CMAC has no message signing.
    assert_eq!(
        sign_init(l, &s, CKM_AES_CMAC, key, true),
        CKR_MECHANISM_INVALID
    );

    let flags = |m| {
        let mut info = CK_MECHANISM_INFO::default();
        // SAFETY: valid out-pointer.
        assert_eq!(
            unsafe { l.C_GetMechanismInfo.unwrap()(slot.id(), m, &mut info) },
            CKR_OK
        );
        info.flags
    };
    assert_ne!(flags(CKM_SHA256_HMAC) & CKF_MESSAGE_SIGN, 0);
    assert_ne!(flags(CKM_SHA512_HMAC_GENERAL) & CKF_MESSAGE_VERIFY, 0);
    assert_ne!(flags(CKM_EDDSA) & CKF_MESSAGE_SIGN, 0);
    let gcm = flags(CKM_AES_GCM);
    assert_eq!(
        gcm & (CKF_MESSAGE_ENCRYPT | CKF_MESSAGE_DECRYPT),
        CKF_MESSAGE_ENCRYPT | CKF_MESSAGE_DECRYPT
    );
    assert_eq!(gcm & CKF_MESSAGE_SIGN, 0);
}

/// Ed25519 through `C_SignMessage` verifies with `C_Verify`; a `C_Sign`
/// signature verifies through `C_VerifyMessage`; a changed one does not.
#[test]
fn eddsa_message_sign_and_verify() {
    let f = Fixture::new();
    let s = f.user(f.token("msg"));
    let l = list30();
    let (public, private) = s
        .generate_key_pair(
            &Mechanism::EccEdwardsKeyPairGen,
            &[
                Attribute::EcParams(b"\x13\x0cedwards25519".to_vec()),
                Attribute::Verify(true),
            ],
            &[Attribute::Sign(true)],
        )
        .unwrap();
    assert_eq!(sign_init(l, &s, CKM_EDDSA, private, true), CKR_OK);
    assert_eq!(sign_init(l, &s, CKM_EDDSA, public, false), CKR_OK);
    for msg in [&b""[..], b"abc", &[7u8; 1000]] {
        let mut sig = [0u8; 64];
        assert_eq!(sign_message(l, &s, msg, Some(&mut sig)), (CKR_OK, 64));
        s.verify(
            &Mechanism::Eddsa(cryptoki::mechanism::eddsa::EddsaParams::new(
                cryptoki::mechanism::eddsa::EddsaSignatureScheme::Pure,
            )),
            public,
            msg,
            &sig,
        )
        .unwrap();
        assert_eq!(verify_message(l, &s, msg, &sig), CKR_OK);
        let mut bad = sig;
        bad[10] ^= 4;
        assert_eq!(verify_message(l, &s, msg, &bad), CKR_SIGNATURE_INVALID);
    }
}

/// `C_SignMessageBegin` / `Next` in parts gives the single-part MAC;
/// state errors; `C_VerifyMessageBegin` / `Next` accepts it and rejects a
/// changed one.
#[test]
fn multipart_message_sign() {
    let f = Fixture::new();
    let s = f.user(f.token("msg"));
    let l = list30();
    let key = s
        .create_object(&[
            Attribute::Class(ObjectClass::SECRET_KEY),
            Attribute::KeyType(KeyType::GENERIC_SECRET),
            Attribute::Value(b"Jefe".to_vec()),
            Attribute::Sign(true),
            Attribute::Verify(true),
        ])
        .unwrap();
    let expected = unhex("5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    let h = s.handle();
    assert_eq!(sign_init(l, &s, CKM_SHA256_HMAC, key, true), CKR_OK);
    assert_eq!(sign_init(l, &s, CKM_SHA256_HMAC, key, false), CKR_OK);
    // SAFETY: every buffer valid for its length.
    unsafe {
        let begin = l.C_SignMessageBegin.unwrap();
        let next = l.C_SignMessageNext.unwrap();
        let mut part = *b"what do ya ";
        assert_eq!(
            next(
                h,
                null_mut(),
                0,
                part.as_mut_ptr(),
                11,
                null_mut(),
                null_mut()
            ),
            CKR_OPERATION_NOT_INITIALIZED
        );
        assert_eq!(begin(h, null_mut(), 0), CKR_OK);
        assert_eq!(begin(h, null_mut(), 0), CKR_OPERATION_ACTIVE);
        assert_eq!(
            sign_message(l, &s, b"x", Some(&mut [0u8; 32])).0,
            CKR_OPERATION_ACTIVE
        );
        assert_eq!(
            next(
                h,
                null_mut(),
                0,
                part.as_mut_ptr(),
                11,
                null_mut(),
                null_mut()
            ),
            CKR_OK
        );
        let mut last = *b"want for nothing?";
        let mut len: CK_ULONG = 0;
        assert_eq!(
            next(
                h,
                null_mut(),
                0,
                last.as_mut_ptr(),
                17,
                null_mut(),
                &mut len
            ),
            CKR_OK
        );
        assert_eq!(len, 32);
        let mut mac = [0u8; 32];
        len = 31;
        assert_eq!(
            next(
                h,
                null_mut(),
                0,
                last.as_mut_ptr(),
                17,
                mac.as_mut_ptr(),
                &mut len
            ),
            CKR_BUFFER_TOO_SMALL
        );
        len = 32;
        assert_eq!(
            next(
                h,
                null_mut(),
                0,
                last.as_mut_ptr(),
                17,
                mac.as_mut_ptr(),
                &mut len
            ),
            CKR_OK
        );
        assert_eq!(mac.to_vec(), expected);
        assert_eq!(
            next(
                h,
                null_mut(),
                0,
                last.as_mut_ptr(),
                17,
                mac.as_mut_ptr(),
                &mut len
            ),
            CKR_OPERATION_NOT_INITIALIZED,
            "the message ended"
        );

        let vbegin = l.C_VerifyMessageBegin.unwrap();
        let vnext = l.C_VerifyMessageNext.unwrap();
        for (sig, want) in [
            (expected.clone(), CKR_OK),
            ([0u8; 32].to_vec(), CKR_SIGNATURE_INVALID),
        ] {
            assert_eq!(vbegin(h, null_mut(), 0), CKR_OK);
            assert_eq!(
                vnext(h, null_mut(), 0, part.as_mut_ptr(), 11, null_mut(), 0),
                CKR_OK
            );
            assert_eq!(
                vnext(
                    h,
                    null_mut(),
                    0,
                    last.as_mut_ptr(),
                    17,
                    sig.as_ptr() as *mut _,
                    32
                ),
                want
            );
        }
    }
}
