//! Signing and MACing (base spec §5.13) and verifying (§5.14).

use super::calls::{data_in, data_in_out, init_with_key, out_only};
use super::util::{bytes, guard_hot, terminating};
use crate::api::crypto::{self, OpKind};
use crate::api::module;
use cryptoki_sys::*;

/// `C_SignInit`.
///
/// # Safety
/// `pMechanism` null or valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_SignInit(
    hSession: CK_SESSION_HANDLE,
    pMechanism: *mut CK_MECHANISM,
    hKey: CK_OBJECT_HANDLE,
) -> CK_RV {
    // SAFETY: forwarded caller guarantee.
    let rv = guard_hot(|| unsafe { init_with_key(hSession, pMechanism, hKey, crypto::sign_init) });
    // SAFETY: forwarded caller guarantee.
    unsafe { super::trace::call("C_SignInit", pMechanism, rv) };
    rv
}

/// `C_Sign`.
///
/// # Safety
/// `pData` valid for `ulDataLen`; `pSignature` null or valid for `*pulSignatureLen`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_Sign(
    hSession: CK_SESSION_HANDLE,
    pData: *mut CK_BYTE,
    ulDataLen: CK_ULONG,
    pSignature: *mut CK_BYTE,
    pulSignatureLen: *mut CK_ULONG,
) -> CK_RV {
    // SAFETY: forwarded caller guarantees.
    guard_hot(|| unsafe {
        data_in_out(
            hSession,
            OpKind::Sign,
            pData,
            ulDataLen,
            pSignature,
            pulSignatureLen,
            crypto::sign,
        )
    })
}

/// `C_SignUpdate`.
///
/// # Safety
/// `pPart` valid for `ulPartLen`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_SignUpdate(
    hSession: CK_SESSION_HANDLE,
    pPart: *mut CK_BYTE,
    ulPartLen: CK_ULONG,
) -> CK_RV {
    // SAFETY: forwarded caller guarantee.
    guard_hot(|| unsafe {
        data_in(
            hSession,
            OpKind::Sign,
            pPart,
            ulPartLen,
            crypto::sign_update,
        )
    })
}

/// `C_SignFinal`.
///
/// # Safety
/// `pSignature` null or valid for `*pulSignatureLen`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_SignFinal(
    hSession: CK_SESSION_HANDLE,
    pSignature: *mut CK_BYTE,
    pulSignatureLen: *mut CK_ULONG,
) -> CK_RV {
    // SAFETY: forwarded caller guarantee.
    guard_hot(|| unsafe {
        out_only(
            hSession,
            OpKind::Sign,
            pSignature,
            pulSignatureLen,
            crypto::sign_final,
        )
    })
}

/// `C_VerifyInit`.
///
/// # Safety
/// `pMechanism` null or valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_VerifyInit(
    hSession: CK_SESSION_HANDLE,
    pMechanism: *mut CK_MECHANISM,
    hKey: CK_OBJECT_HANDLE,
) -> CK_RV {
    // SAFETY: forwarded caller guarantee.
    guard_hot(|| unsafe { init_with_key(hSession, pMechanism, hKey, crypto::verify_init) })
}

/// `C_Verify`.
///
/// # Safety
/// `pData` valid for `ulDataLen`; `pSignature` valid for `ulSignatureLen`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_Verify(
    hSession: CK_SESSION_HANDLE,
    pData: *mut CK_BYTE,
    ulDataLen: CK_ULONG,
    pSignature: *mut CK_BYTE,
    ulSignatureLen: CK_ULONG,
) -> CK_RV {
    guard_hot(|| {
        module::with_session(hSession, |s| {
            terminating(s, OpKind::Verify, || {
                // SAFETY: forwarded caller guarantees.
                let (data, sig) =
                    unsafe { (bytes(pData, ulDataLen)?, bytes(pSignature, ulSignatureLen)?) };
                crypto::verify(s, data, sig)
            })
        })
    })
}

/// `C_VerifyUpdate`.
///
/// # Safety
/// `pPart` valid for `ulPartLen`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_VerifyUpdate(
    hSession: CK_SESSION_HANDLE,
    pPart: *mut CK_BYTE,
    ulPartLen: CK_ULONG,
) -> CK_RV {
    // SAFETY: forwarded caller guarantee.
    guard_hot(|| unsafe {
        data_in(
            hSession,
            OpKind::Verify,
            pPart,
            ulPartLen,
            crypto::verify_update,
        )
    })
}

/// `C_VerifyFinal`.
///
/// # Safety
/// `pSignature` valid for `ulSignatureLen`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_VerifyFinal(
    hSession: CK_SESSION_HANDLE,
    pSignature: *mut CK_BYTE,
    ulSignatureLen: CK_ULONG,
) -> CK_RV {
    // SAFETY: forwarded caller guarantee.
    guard_hot(|| unsafe {
        data_in(
            hSession,
            OpKind::Verify,
            pSignature,
            ulSignatureLen,
            crypto::verify_final,
        )
    })
}

/// `C_SignRecoverInit` (§5.13).
///
/// # Safety
/// `pMechanism` null or valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_SignRecoverInit(
    hSession: CK_SESSION_HANDLE,
    pMechanism: *mut CK_MECHANISM,
    hKey: CK_OBJECT_HANDLE,
) -> CK_RV {
    // SAFETY: forwarded caller guarantee.
    guard_hot(|| unsafe { init_with_key(hSession, pMechanism, hKey, crypto::sign_recover_init) })
}

/// `C_SignRecover` (§5.13).
///
/// # Safety
/// `pData` valid for `ulDataLen`; `pSignature` null or valid for `*pulSignatureLen`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_SignRecover(
    hSession: CK_SESSION_HANDLE,
    pData: *mut CK_BYTE,
    ulDataLen: CK_ULONG,
    pSignature: *mut CK_BYTE,
    pulSignatureLen: *mut CK_ULONG,
) -> CK_RV {
    // SAFETY: forwarded caller guarantees.
    guard_hot(|| unsafe {
        data_in_out(
            hSession,
            OpKind::SignRecover,
            pData,
            ulDataLen,
            pSignature,
            pulSignatureLen,
            crypto::sign_recover,
        )
    })
}

/// `C_VerifyRecoverInit` (§5.14).
///
/// # Safety
/// `pMechanism` null or valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_VerifyRecoverInit(
    hSession: CK_SESSION_HANDLE,
    pMechanism: *mut CK_MECHANISM,
    hKey: CK_OBJECT_HANDLE,
) -> CK_RV {
    // SAFETY: forwarded caller guarantee.
    guard_hot(|| unsafe { init_with_key(hSession, pMechanism, hKey, crypto::verify_recover_init) })
}

/// `C_VerifyRecover` (§5.14).
///
/// # Safety
/// `pSignature` valid for `ulSignatureLen`; `pData` null or valid for `*pulDataLen`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_VerifyRecover(
    hSession: CK_SESSION_HANDLE,
    pSignature: *mut CK_BYTE,
    ulSignatureLen: CK_ULONG,
    pData: *mut CK_BYTE,
    pulDataLen: *mut CK_ULONG,
) -> CK_RV {
    // SAFETY: forwarded caller guarantees.
    guard_hot(|| unsafe {
        data_in_out(
            hSession,
            OpKind::VerifyRecover,
            pSignature,
            ulSignatureLen,
            pData,
            pulDataLen,
            crypto::verify_recover,
        )
    })
}
