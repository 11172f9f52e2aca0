//! Ed25519 signing and verification with generated keys, single- and
//! multi-part (mechanisms spec §2.3.14), and the output-buffer conventions
//! of base spec §5.2.

use super::*;

#[test]
fn generated_keys_sign_and_verify_single_and_multi_part() {
    let f = Fixture::new();
    let slot = f.token("gen");
    let s = f.user(slot);
    let (public, private) = generate(&s, true);
    let attrs = s
        .get_attributes(
            private,
            &[
                AttributeType::Local,
                AttributeType::KeyGenMechanism,
                AttributeType::AlwaysSensitive,
                AttributeType::NeverExtractable,
                AttributeType::Private,
            ],
        )
        .unwrap();
    assert_eq!(attrs[0], Attribute::Local(true));
    assert_eq!(
        attrs[1],
        Attribute::KeyGenMechanism(cryptoki::mechanism::MechanismType::ECC_EDWARDS_KEY_PAIR_GEN)
    );
    assert_eq!(attrs[2], Attribute::AlwaysSensitive(true));
    assert_eq!(attrs[3], Attribute::NeverExtractable(true));
    assert_eq!(attrs[4], Attribute::Private(true));
    assert!(
        s.get_attributes(private, &[AttributeType::Value])
            .unwrap()
            .is_empty(),
        "sensitive value withheld"
    );

    let msg = vec![0x5a; 128];
    let sig = s.sign(&eddsa(), private, &msg).unwrap();
    s.verify(&eddsa(), public, &msg, &sig).unwrap();
    s.sign_init(&eddsa(), private).unwrap();
    s.sign_update(&msg[..50]).unwrap();
    s.sign_update(&msg[50..]).unwrap();
    assert_eq!(s.sign_final().unwrap(), sig, "Ed25519 is deterministic");
    s.verify_init(&eddsa(), public).unwrap();
    s.verify_update(&msg[..1]).unwrap();
    s.verify_update(&msg[1..]).unwrap();
    s.verify_final(&sig).unwrap();
    s.verify_init(&eddsa(), public).unwrap();
    s.verify_update(&msg[1..]).unwrap();
    assert_rv!(s.verify_final(&sig), SignatureInvalid);
    // Private keys have no CKA_VERIFY (§4.9): they cannot verify.
    assert_rv!(
        s.verify(&eddsa(), private, &msg, &sig),
        KeyFunctionNotPermitted
    );
}

#[test]
fn output_buffer_conventions() {
    let f = Fixture::new();
    let slot = f.token("buffers");
    let s = f.user(slot);
    let (public, private) = generate(&s, false);
    let l = raw();
    let h = s.handle();
    let mut mech = CK_MECHANISM {
        mechanism: CKM_EDDSA,
        pParameter: std::ptr::null_mut(),
        ulParameterLen: 0,
    };
    let mut data = *b"conventions";
    let mut sig = [0u8; 64];
    let mut len: CK_ULONG = 0;
    // SAFETY: all pointers are to live locals of the stated lengths.
    unsafe {
        assert_eq!(
            l.C_Sign.unwrap()(h, data.as_mut_ptr(), 11, sig.as_mut_ptr(), &mut len),
            CKR_OPERATION_NOT_INITIALIZED
        );
        assert_eq!(
            l.C_SignInit.unwrap()(h, &mut mech, private.handle()),
            CKR_OK
        );
        assert_eq!(
            l.C_SignInit.unwrap()(h, &mut mech, private.handle()),
            CKR_OPERATION_ACTIVE
        );
        // Size query keeps the operation.
        assert_eq!(
            l.C_Sign.unwrap()(h, data.as_mut_ptr(), 11, std::ptr::null_mut(), &mut len),
            CKR_OK
        );
        assert_eq!(len, 64);
        // Too small: the required length, operation kept.
        len = 10;
        assert_eq!(
            l.C_Sign.unwrap()(h, data.as_mut_ptr(), 11, sig.as_mut_ptr(), &mut len),
            CKR_BUFFER_TOO_SMALL
        );
        assert_eq!(len, 64);
        len = 64;
        assert_eq!(
            l.C_Sign.unwrap()(h, data.as_mut_ptr(), 11, sig.as_mut_ptr(), &mut len),
            CKR_OK
        );
        assert_eq!(len, 64);
        // Finished: a second C_Sign has nothing to do.
        assert_eq!(
            l.C_Sign.unwrap()(h, data.as_mut_ptr(), 11, sig.as_mut_ptr(), &mut len),
            CKR_OPERATION_NOT_INITIALIZED
        );
        // Null length pointer; null data with a length.
        assert_eq!(
            l.C_SignInit.unwrap()(h, &mut mech, private.handle()),
            CKR_OK
        );
        assert_eq!(
            l.C_Sign.unwrap()(
                h,
                data.as_mut_ptr(),
                11,
                sig.as_mut_ptr(),
                std::ptr::null_mut()
            ),
            CKR_ARGUMENTS_BAD
        );
        assert_eq!(
            l.C_SignInit.unwrap()(h, &mut mech, private.handle()),
            CKR_OK
        );
        assert_eq!(
            l.C_Sign.unwrap()(h, std::ptr::null_mut(), 11, sig.as_mut_ptr(), &mut len),
            CKR_ARGUMENTS_BAD
        );
        // After an update, C_Sign may not finish the operation.
        assert_eq!(
            l.C_SignInit.unwrap()(h, &mut mech, private.handle()),
            CKR_OK
        );
        assert_eq!(l.C_SignUpdate.unwrap()(h, data.as_mut_ptr(), 11), CKR_OK);
        assert_eq!(
            l.C_Sign.unwrap()(h, data.as_mut_ptr(), 11, sig.as_mut_ptr(), &mut len),
            CKR_OPERATION_ACTIVE
        );
        // SignFinal conventions.
        assert_eq!(
            l.C_SignInit.unwrap()(h, &mut mech, private.handle()),
            CKR_OK
        );
        assert_eq!(l.C_SignUpdate.unwrap()(h, data.as_mut_ptr(), 11), CKR_OK);
        len = 0;
        assert_eq!(
            l.C_SignFinal.unwrap()(h, sig.as_mut_ptr(), &mut len),
            CKR_BUFFER_TOO_SMALL
        );
        assert_eq!(len, 64);
        assert_eq!(
            l.C_SignFinal.unwrap()(h, sig.as_mut_ptr(), &mut len),
            CKR_OK
        );
        // Bad mechanism pointers and parameters.
        assert_eq!(
            l.C_SignInit.unwrap()(h, std::ptr::null_mut(), private.handle()),
            CKR_ARGUMENTS_BAD
        );
        let mut unknown = CK_MECHANISM {
            mechanism: 0x8000_7777,
            pParameter: std::ptr::null_mut(),
            ulParameterLen: 0,
        };
        assert_eq!(
            l.C_SignInit.unwrap()(h, &mut unknown, private.handle()),
            CKR_MECHANISM_INVALID
        );
        let mut digest = CK_MECHANISM {
            mechanism: CKM_SHA256,
            pParameter: std::ptr::null_mut(),
            ulParameterLen: 0,
        };
        assert_eq!(
            l.C_SignInit.unwrap()(h, &mut digest, private.handle()),
            CKR_MECHANISM_INVALID
        );
        let params_len = std::mem::size_of::<CK_EDDSA_PARAMS>() as CK_ULONG;
        // A context over 255 bytes (RFC 8032 §5.1) is a parameter error.
        let mut long_context = [0u8; 256];
        let mut prehash = CK_EDDSA_PARAMS {
            phFlag: 1,
            ulContextDataLen: 256,
            pContextData: long_context.as_mut_ptr(),
        };
        let mut ph = CK_MECHANISM {
            mechanism: CKM_EDDSA,
            pParameter: (&mut prehash as *mut CK_EDDSA_PARAMS).cast(),
            ulParameterLen: params_len,
        };
        assert_eq!(
            l.C_SignInit.unwrap()(h, &mut ph, private.handle()),
            CKR_MECHANISM_PARAM_INVALID
        );
        let mut pure = CK_EDDSA_PARAMS {
            phFlag: 0,
            ulContextDataLen: 0,
            pContextData: std::ptr::null_mut(),
        };
        ph.pParameter = (&mut pure as *mut CK_EDDSA_PARAMS).cast();
        assert_eq!(
            l.C_SignInit.unwrap()(h, &mut ph, private.handle()),
            CKR_OK,
            "pure Ed25519 via CK_EDDSA_PARAMS"
        );
        assert_eq!(
            l.C_SignFinal.unwrap()(h, sig.as_mut_ptr(), &mut len),
            CKR_OK
        );
        ph.ulParameterLen = 3;
        assert_eq!(
            l.C_SignInit.unwrap()(h, &mut ph, private.handle()),
            CKR_MECHANISM_PARAM_INVALID
        );
        assert_eq!(
            l.C_SignInit.unwrap()(h, &mut mech, 0xdead_beef),
            CKR_KEY_HANDLE_INVALID
        );
        assert_eq!(
            l.C_SignInit.unwrap()(0xdead_beef, &mut mech, private.handle()),
            CKR_SESSION_HANDLE_INVALID
        );
        // Verify needs no output buffer but checks its inputs.
        assert_eq!(
            l.C_VerifyInit.unwrap()(h, &mut mech, public.handle()),
            CKR_OK
        );
        assert_eq!(
            l.C_Verify.unwrap()(h, data.as_mut_ptr(), 11, std::ptr::null_mut(), 64),
            CKR_ARGUMENTS_BAD
        );
        assert_eq!(
            l.C_VerifyFinal.unwrap()(h, sig.as_mut_ptr(), 64),
            CKR_OPERATION_NOT_INITIALIZED,
            "an error ends the operation"
        );
    }
}
