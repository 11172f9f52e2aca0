//! Multi-part message encryption and decryption (base spec 3.0 §5.19 /
//! §5.20): the state and argument errors of `C_EncryptMessageBegin` /
//! `Next` and their decryption counterparts.

use super::*;

/// State and argument rules of Begin / Next.
#[test]
fn multipart_state_and_argument_errors() {
    let f = Fixture::new();
    let s = f.user(f.token("msg"));
    let key = aes_key(&s, &unhex(KEY));
    let l = list30();
    let h = s.handle();
    let mut iv = unhex(IV);
    let mut tag = [0u8; 16];
    let mut p = params(&mut iv, 0, CKG_NO_GENERATE, &mut tag);
    let mut out = [0u8; 64];
    let psize = std::mem::size_of::<CK_GCM_MESSAGE_PARAMS>() as CK_ULONG;
    for encrypt in [true, false] {
        // No message operation at all.
        assert_eq!(
            begin(l, &s, encrypt, &mut p, &[]),
            CKR_OPERATION_NOT_INITIALIZED
        );
        assert_eq!(
            next(l, &s, encrypt, Some(&mut p), b"x", Some(&mut out), true).0,
            CKR_OPERATION_NOT_INITIALIZED
        );
        assert_eq!(init(l, &s, key, encrypt), CKR_OK);
        // Next without Begin.
        assert_eq!(
            next(l, &s, encrypt, Some(&mut p), b"x", Some(&mut out), false).0,
            CKR_OPERATION_NOT_INITIALIZED
        );
        // Bad parameter size at Begin: no message is started.
        let (begin_f, next_f) = if encrypt {
            (
                l.C_EncryptMessageBegin.unwrap(),
                l.C_EncryptMessageNext.unwrap(),
            )
        } else {
            (
                l.C_DecryptMessageBegin.unwrap(),
                l.C_DecryptMessageNext.unwrap(),
            )
        };
        // SAFETY: valid buffers; lengths deliberately wrong.
        unsafe {
            let pp = &mut p as *mut CK_GCM_MESSAGE_PARAMS as *mut _;
            assert_eq!(
                begin_f(h, pp, 8, null_mut(), 0),
                CKR_MECHANISM_PARAM_INVALID
            );
            assert_eq!(
                begin_f(h, null_mut(), 0, null_mut(), 0),
                CKR_MECHANISM_PARAM_INVALID
            );
            assert_eq!(begin_f(h, pp, psize, null_mut(), 3), CKR_ARGUMENTS_BAD);
        }
        assert_eq!(
            next(l, &s, encrypt, Some(&mut p), b"x", Some(&mut out), false).0,
            CKR_OPERATION_NOT_INITIALIZED,
            "no message was started"
        );
        // Begin twice; single-part during a multi-part message.
        assert_eq!(begin(l, &s, encrypt, &mut p, b"ad"), CKR_OK);
        assert_eq!(begin(l, &s, encrypt, &mut p, b"ad"), CKR_OPERATION_ACTIVE);
        assert_eq!(
            message(l, &s, encrypt, &mut p, &[], &[1; 16], Some(&mut out)).0,
            CKR_OPERATION_ACTIVE
        );
        // Each argument error ends the message (the operation stays).
        type Bad = Box<dyn Fn(&mut CK_GCM_MESSAGE_PARAMS, &mut [u8]) -> CK_RV>;
        let cases: Vec<(Bad, CK_RV)> = vec![
            // Unknown flags.
            (
                Box::new(move |p, out| {
                    let mut len = out.len() as CK_ULONG;
                    // SAFETY: valid buffers.
                    unsafe {
                        next_f(
                            h,
                            p as *mut _ as *mut _,
                            psize,
                            out.as_mut_ptr(),
                            1,
                            out.as_mut_ptr(),
                            &mut len,
                            2,
                        )
                    }
                }),
                CKR_ARGUMENTS_BAD,
            ),
            // NULL pulCiphertextPartLen.
            (
                Box::new(move |p, out| {
                    // SAFETY: valid buffers, null length pointer.
                    unsafe {
                        next_f(
                            h,
                            p as *mut _ as *mut _,
                            psize,
                            out.as_mut_ptr(),
                            1,
                            out.as_mut_ptr(),
                            null_mut(),
                            0,
                        )
                    }
                }),
                CKR_ARGUMENTS_BAD,
            ),
            // NULL part with a nonzero length.
            (
                Box::new(move |p, out| {
                    let mut len = out.len() as CK_ULONG;
                    // SAFETY: valid buffers but the null input.
                    unsafe {
                        next_f(
                            h,
                            p as *mut _ as *mut _,
                            psize,
                            null_mut(),
                            5,
                            out.as_mut_ptr(),
                            &mut len,
                            0,
                        )
                    }
                }),
                CKR_ARGUMENTS_BAD,
            ),
            // Short parameter struct.
            (
                Box::new(move |p, out| {
                    let mut len = out.len() as CK_ULONG;
                    // SAFETY: valid buffers; parameter length too short.
                    unsafe {
                        next_f(
                            h,
                            p as *mut _ as *mut _,
                            8,
                            out.as_mut_ptr(),
                            1,
                            out.as_mut_ptr(),
                            &mut len,
                            0,
                        )
                    }
                }),
                CKR_MECHANISM_PARAM_INVALID,
            ),
            // Last part without the parameters (where the tag goes).
            (
                Box::new(move |_, out| {
                    let mut len = out.len() as CK_ULONG;
                    // SAFETY: valid buffers, no parameters.
                    unsafe {
                        next_f(
                            h,
                            null_mut(),
                            0,
                            out.as_mut_ptr(),
                            1,
                            out.as_mut_ptr(),
                            &mut len,
                            CKF_END_OF_MESSAGE,
                        )
                    }
                }),
                CKR_MECHANISM_PARAM_INVALID,
            ),
            // Last part with another tag length than Begin's.
            (
                Box::new(move |p, out| {
                    let mut q = *p;
                    q.ulTagBits = 96;
                    let mut len = out.len() as CK_ULONG;
                    // SAFETY: valid buffers (the tag buffer is 16 bytes).
                    unsafe {
                        next_f(
                            h,
                            &mut q as *mut _ as *mut _,
                            psize,
                            out.as_mut_ptr(),
                            1,
                            out.as_mut_ptr(),
                            &mut len,
                            CKF_END_OF_MESSAGE,
                        )
                    }
                }),
                CKR_MECHANISM_PARAM_INVALID,
            ),
        ];
        for (i, (call, want)) in cases.iter().enumerate() {
            if i > 0 {
                assert_eq!(begin(l, &s, encrypt, &mut p, b"ad"), CKR_OK);
            }
            assert_eq!(call(&mut p, &mut out), *want, "case {i}");
            assert_eq!(
                next(l, &s, encrypt, Some(&mut p), b"x", Some(&mut out), false).0,
                CKR_OPERATION_NOT_INITIALIZED,
                "case {i} ended the message"
            );
        }
        // The operation is still there, with no message in progress: a
        // single-part message runs (the decryption's outcome depends on
        // what `tag` holds; it must not be a state error).
        let r = message(l, &s, encrypt, &mut p, &[], &[], Some(&mut out)).0;
        if encrypt {
            assert_eq!(r, CKR_OK);
        } else {
            assert!(r == CKR_OK || r == CKR_ENCRYPTED_DATA_INVALID, "{r:#x}");
        }
        // C_Message*Final with a message in progress ends both.
        assert_eq!(begin(l, &s, encrypt, &mut p, b"ad"), CKR_OK);
        assert_eq!(
            next(l, &s, encrypt, Some(&mut p), b"part", Some(&mut out), false),
            (CKR_OK, 0)
        );
        // SAFETY: no pointers.
        let fin = unsafe {
            if encrypt {
                l.C_MessageEncryptFinal.unwrap()(h)
            } else {
                l.C_MessageDecryptFinal.unwrap()(h)
            }
        };
        assert_eq!(fin, CKR_OK);
        assert_eq!(
            next(l, &s, encrypt, Some(&mut p), b"x", Some(&mut out), true).0,
            CKR_OPERATION_NOT_INITIALIZED
        );
        assert_eq!(
            begin(l, &s, encrypt, &mut p, &[]),
            CKR_OPERATION_NOT_INITIALIZED
        );
        // A new operation starts without a message; C_SessionCancel drops
        // one in progress with the operation.
        assert_eq!(init(l, &s, key, encrypt), CKR_OK);
        assert_eq!(
            next(l, &s, encrypt, Some(&mut p), b"x", Some(&mut out), true).0,
            CKR_OPERATION_NOT_INITIALIZED
        );
        assert_eq!(begin(l, &s, encrypt, &mut p, b"ad"), CKR_OK);
        let flag = if encrypt {
            CKF_MESSAGE_ENCRYPT
        } else {
            CKF_MESSAGE_DECRYPT
        };
        // SAFETY: no pointers.
        assert_eq!(unsafe { l.C_SessionCancel.unwrap()(h, flag) }, CKR_OK);
        assert_eq!(init(l, &s, key, encrypt), CKR_OK);
        assert_eq!(
            next(l, &s, encrypt, Some(&mut p), b"x", Some(&mut out), true).0,
            CKR_OPERATION_NOT_INITIALIZED
        );
        assert_eq!(begin(l, &s, encrypt, &mut p, b"ad"), CKR_OK, "not active");
        // SAFETY: no pointers.
        unsafe {
            if encrypt {
                assert_eq!(l.C_MessageEncryptFinal.unwrap()(h), CKR_OK);
            } else {
                assert_eq!(l.C_MessageDecryptFinal.unwrap()(h), CKR_OK);
            }
        }
    }
}
