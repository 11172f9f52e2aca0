//! ML-DSA through the message-based API (base spec 3.0 §5.21 / §5.22):
//! `C_MessageSignInit` with a `CK_SIGN_ADDITIONAL_CONTEXT`, whole messages
//! and `C_SignMessageBegin` / `Next`, against `C_Sign`.

use super::*;
use std::ptr::null_mut;

/// The 3.0 function list of the loaded module.
fn list30() -> &'static CK_FUNCTION_LIST_3_0 {
    raw30()
}

#[test]
fn message_signing_matches_c_sign() {
    let f = Fixture::new();
    let s = f.user(f.token("message"));
    let l = list30();
    let (public, private) = generate(&s, MlDsaParameterSetType::ML_DSA_44, false);
    let context = *b"message ctx";
    let expected = s
        .sign(&deterministic(&context), private, b"hello world")
        .unwrap();
    let mut param = CK_SIGN_ADDITIONAL_CONTEXT {
        hedgeVariant: CKH_DETERMINISTIC_REQUIRED,
        pContext: context.as_ptr() as *mut u8,
        ulContextLen: context.len() as CK_ULONG,
    };
    let mut mech = CK_MECHANISM {
        mechanism: CKM_ML_DSA,
        pParameter: (&mut param as *mut CK_SIGN_ADDITIONAL_CONTEXT).cast(),
        ulParameterLen: std::mem::size_of::<CK_SIGN_ADDITIONAL_CONTEXT>() as CK_ULONG,
    };
    let h = s.handle();
    let mut sig = vec![0u8; 2420];
    // SAFETY: every buffer is valid for its length; the parameter outlives
    // the calls.
    unsafe {
        assert_eq!(
            l.C_MessageSignInit.unwrap()(h, &mut mech, private.handle()),
            CKR_OK
        );
        assert_eq!(
            l.C_MessageVerifyInit.unwrap()(h, &mut mech, public.handle()),
            CKR_OK
        );
        for _ in 0..2 {
            let mut len = sig.len() as CK_ULONG;
            let mut data = *b"hello world";
            let rv = l.C_SignMessage.unwrap()(
                h,
                null_mut(),
                0,
                data.as_mut_ptr(),
                11,
                sig.as_mut_ptr(),
                &mut len,
            );
            assert_eq!((rv, len), (CKR_OK, 2420));
            assert_eq!(sig, expected);
            let verify = l.C_VerifyMessage.unwrap();
            let rv = verify(
                h,
                null_mut(),
                0,
                data.as_mut_ptr(),
                11,
                sig.as_mut_ptr(),
                2420,
            );
            assert_eq!(rv, CKR_OK);
            data[0] ^= 1;
            let rv = verify(
                h,
                null_mut(),
                0,
                data.as_mut_ptr(),
                11,
                sig.as_mut_ptr(),
                2420,
            );
            assert_eq!(rv, CKR_SIGNATURE_INVALID);
        }
        // Multi-part message.
        assert_eq!(l.C_SignMessageBegin.unwrap()(h, null_mut(), 0), CKR_OK);
        let next = l.C_SignMessageNext.unwrap();
        let mut first = *b"hello ";
        let rv = next(
            h,
            null_mut(),
            0,
            first.as_mut_ptr(),
            6,
            null_mut(),
            null_mut(),
        );
        assert_eq!(rv, CKR_OK);
        let mut second = *b"world";
        let mut len = sig.len() as CK_ULONG;
        sig.fill(0);
        let rv = next(
            h,
            null_mut(),
            0,
            second.as_mut_ptr(),
            5,
            sig.as_mut_ptr(),
            &mut len,
        );
        assert_eq!((rv, len), (CKR_OK, 2420));
        assert_eq!(sig, expected);
        assert_eq!(l.C_MessageSignFinal.unwrap()(h), CKR_OK);
        assert_eq!(l.C_MessageVerifyFinal.unwrap()(h), CKR_OK);
    }
}

/// Malformed `CK_SIGN_ADDITIONAL_CONTEXT`s are refused before anything is
/// read: a wrong structure length, a context over 255 bytes (with a null
/// pointer that must not be read), an unknown hedge variant.
#[test]
fn malformed_sign_context_parameters_are_refused() {
    let f = Fixture::new();
    let s = f.user(f.token("params"));
    let (_, private) = generate(&s, MlDsaParameterSetType::ML_DSA_44, false);
    let cases = [
        (CKH_HEDGE_PREFERRED, 256, 0),
        (CKH_HEDGE_PREFERRED, CK_ULONG::MAX, 0),
        (7, 0, 0),
        (CKH_HEDGE_PREFERRED, 0, 1),
    ];
    for (hedge, len, extra) in cases {
        let mut param = CK_SIGN_ADDITIONAL_CONTEXT {
            hedgeVariant: hedge,
            pContext: null_mut(),
            ulContextLen: len,
        };
        let mut mech = CK_MECHANISM {
            mechanism: CKM_ML_DSA,
            pParameter: (&mut param as *mut CK_SIGN_ADDITIONAL_CONTEXT).cast(),
            ulParameterLen: std::mem::size_of::<CK_SIGN_ADDITIONAL_CONTEXT>() as CK_ULONG - extra,
        };
        // SAFETY: the mechanism and its parameter are valid for the call
        // (the context pointer is null and must not be read).
        let rv = unsafe { raw().C_SignInit.unwrap()(s.handle(), &mut mech, private.handle()) };
        assert_eq!(rv, CKR_MECHANISM_PARAM_INVALID, "{hedge} {len} {extra}");
    }
}
