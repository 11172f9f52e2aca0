//! `C_SignRecover` / `C_VerifyRecover` with RSA (base spec §5.13–5.14),
//! called through the raw function list.

use super::*;

/// A raw `CK_MECHANISM` without parameter.
fn plain_mech(ty: CK_MECHANISM_TYPE) -> CK_MECHANISM {
    CK_MECHANISM {
        mechanism: ty,
        pParameter: std::ptr::null_mut(),
        ulParameterLen: 0,
    }
}

type InitFn = unsafe extern "C" fn(CK_SESSION_HANDLE, *mut CK_MECHANISM, CK_OBJECT_HANDLE) -> CK_RV;
type RunFn = unsafe extern "C" fn(
    CK_SESSION_HANDLE,
    *mut CK_BYTE,
    CK_ULONG,
    *mut CK_BYTE,
    *mut CK_ULONG,
) -> CK_RV;

/// Init, size query, then the call into a buffer of the queried size.
fn recover_call(
    s: &Session,
    init: InitFn,
    run: RunFn,
    mech: CK_MECHANISM_TYPE,
    key: ObjectHandle,
    input: &[u8],
) -> Result<Vec<u8>, CK_RV> {
    let mut input = input.to_vec();
    let mut m = plain_mech(mech);
    // SAFETY: live buffers of the stated lengths throughout.
    unsafe {
        let rv = init(s.handle(), &mut m, key.handle());
        if rv != CKR_OK {
            return Err(rv);
        }
        let mut len: CK_ULONG = 0;
        let rv = run(
            s.handle(),
            input.as_mut_ptr(),
            input.len() as CK_ULONG,
            std::ptr::null_mut(),
            &mut len,
        );
        if rv != CKR_OK {
            return Err(rv);
        }
        let mut out = vec![0u8; len as usize];
        let rv = run(
            s.handle(),
            input.as_mut_ptr(),
            input.len() as CK_ULONG,
            out.as_mut_ptr(),
            &mut len,
        );
        if rv != CKR_OK {
            return Err(rv);
        }
        out.truncate(len as usize);
        Ok(out)
    }
}

/// `C_SignRecover` / `C_VerifyRecover` (base spec §5.13–5.14) with
/// `CKM_RSA_PKCS` and `CKM_RSA_X_509`: the signature is what `C_Sign`
/// makes, recovery gives the data back (PKCS #1 v1.5: without its padding;
/// X.509: the whole block), a short buffer keeps the operation, and a
/// tampered signature or another mechanism is refused.
#[test]
fn sign_and_verify_with_recovery() {
    let f = Fixture::new();
    let slot = f.token("recover");
    let s = f.user(slot);
    let l = raw();
    let (sign_init, sign) = (l.C_SignRecoverInit.unwrap(), l.C_SignRecover.unwrap());
    let (verify_init, verify) = (l.C_VerifyRecoverInit.unwrap(), l.C_VerifyRecover.unwrap());
    for ty in [MechanismType::RSA_PKCS, MechanismType::RSA_X_509] {
        let info = f.p().get_mechanism_info(slot, ty).unwrap();
        assert!(info.sign_recover() && info.verify_recover(), "{ty}");
    }
    let (public, private) = generate(&s, 2048, None);
    let data = b"recover me".to_vec();
    let signature = recover_call(&s, sign_init, sign, CKM_RSA_PKCS, private, &data).unwrap();
    assert_eq!(
        signature,
        s.sign(&Mechanism::RsaPkcs, private, &data).unwrap(),
        "PKCS #1 v1.5 is deterministic: the same signature as C_Sign"
    );
    let recovered =
        recover_call(&s, verify_init, verify, CKM_RSA_PKCS, public, &signature).unwrap();
    assert_eq!(recovered, data);
    // A short buffer: CKR_BUFFER_TOO_SMALL with the exact length, and the
    // operation survives for the next call.
    let mut m = plain_mech(CKM_RSA_PKCS);
    let mut sig = signature.clone();
    // SAFETY: live buffers of the stated lengths.
    unsafe {
        assert_eq!(verify_init(s.handle(), &mut m, public.handle()), CKR_OK);
        let mut small = [0u8; 3];
        let mut len: CK_ULONG = 3;
        let rv = verify(
            s.handle(),
            sig.as_mut_ptr(),
            sig.len() as CK_ULONG,
            small.as_mut_ptr(),
            &mut len,
        );
        assert_eq!((rv, len as usize), (CKR_BUFFER_TOO_SMALL, data.len()));
        let mut out = vec![0u8; len as usize];
        let rv = verify(
            s.handle(),
            sig.as_mut_ptr(),
            sig.len() as CK_ULONG,
            out.as_mut_ptr(),
            &mut len,
        );
        assert_eq!(rv, CKR_OK);
        assert_eq!(out, data);
    }
    // Tampered, truncated, or over-long input.
    let mut bad = signature.clone();
    bad[100] ^= 1;
    assert_eq!(
        recover_call(&s, verify_init, verify, CKM_RSA_PKCS, public, &bad).unwrap_err(),
        CKR_SIGNATURE_INVALID
    );
    assert_eq!(
        recover_call(
            &s,
            verify_init,
            verify,
            CKM_RSA_PKCS,
            public,
            &signature[1..]
        )
        .unwrap_err(),
        CKR_SIGNATURE_LEN_RANGE
    );
    assert_eq!(
        recover_call(&s, sign_init, sign, CKM_RSA_PKCS, private, &[1u8; 246]).unwrap_err(),
        CKR_DATA_LEN_RANGE
    );
    // CKM_RSA_X_509: raw blocks, the data right-aligned in k bytes.
    let block = recover_call(&s, sign_init, sign, CKM_RSA_X_509, private, &data).unwrap();
    assert_eq!(block, s.sign(&Mechanism::RsaX509, private, &data).unwrap());
    let whole = recover_call(&s, verify_init, verify, CKM_RSA_X_509, public, &block).unwrap();
    assert_eq!(whole.len(), 256);
    assert_eq!(&whole[256 - data.len()..], &data[..]);
    assert!(whole[..256 - data.len()].iter().all(|&b| b == 0));
    // A mechanism without recovery, and keys without the usage flag.
    assert_eq!(
        recover_call(&s, sign_init, sign, CKM_SHA256_RSA_PKCS, private, &data).unwrap_err(),
        CKR_MECHANISM_INVALID
    );
    s.update_attributes(private, &[Attribute::SignRecover(false)])
        .unwrap();
    assert_eq!(
        recover_call(&s, sign_init, sign, CKM_RSA_PKCS, private, &data).unwrap_err(),
        CKR_KEY_FUNCTION_NOT_PERMITTED
    );
    s.update_attributes(public, &[Attribute::VerifyRecover(false)])
        .unwrap();
    assert_eq!(
        recover_call(&s, verify_init, verify, CKM_RSA_PKCS, public, &signature).unwrap_err(),
        CKR_KEY_FUNCTION_NOT_PERMITTED
    );
}
