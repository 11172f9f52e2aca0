//! Signing and MACing (base spec §5.13) and verifying (§5.14).

use super::mechanism;
use super::util::{bytes, finish_output, guard_hot, out_buffer, terminating};
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
    guard_hot(|| {
        module::with_session(hSession, |s| {
            // SAFETY: forwarded caller guarantee.
            let mech = unsafe { mechanism::read(pMechanism)? };
            crypto::sign_init(s, &mech, hKey)
        })
    })
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
    guard_hot(|| {
        module::with_session(hSession, |s| {
            terminating(s, OpKind::Sign, || {
                // SAFETY: forwarded caller guarantees.
                let (data, (buf, len)) = unsafe {
                    (
                        bytes(pData, ulDataLen)?,
                        out_buffer(pSignature, pulSignatureLen)?,
                    )
                };
                finish_output(crypto::sign(s, data, buf), len)
            })
        })
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
    guard_hot(|| {
        module::with_session(hSession, |s| {
            terminating(s, OpKind::Sign, || {
                // SAFETY: forwarded caller guarantee.
                let data = unsafe { bytes(pPart, ulPartLen)? };
                crypto::sign_update(s, data)
            })
        })
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
    guard_hot(|| {
        module::with_session(hSession, |s| {
            terminating(s, OpKind::Sign, || {
                // SAFETY: forwarded caller guarantee.
                let (buf, len) = unsafe { out_buffer(pSignature, pulSignatureLen)? };
                finish_output(crypto::sign_final(s, buf), len)
            })
        })
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
    guard_hot(|| {
        module::with_session(hSession, |s| {
            // SAFETY: forwarded caller guarantee.
            let mech = unsafe { mechanism::read(pMechanism)? };
            crypto::verify_init(s, &mech, hKey)
        })
    })
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
    guard_hot(|| {
        module::with_session(hSession, |s| {
            terminating(s, OpKind::Verify, || {
                // SAFETY: forwarded caller guarantee.
                let data = unsafe { bytes(pPart, ulPartLen)? };
                crypto::verify_update(s, data)
            })
        })
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
    guard_hot(|| {
        module::with_session(hSession, |s| {
            terminating(s, OpKind::Verify, || {
                // SAFETY: forwarded caller guarantee.
                let sig = unsafe { bytes(pSignature, ulSignatureLen)? };
                crypto::verify_final(s, sig)
            })
        })
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
    guard_hot(|| {
        module::with_session(hSession, |s| {
            // SAFETY: forwarded caller guarantee.
            let mech = unsafe { mechanism::read(pMechanism)? };
            crypto::sign_recover_init(s, &mech, hKey)
        })
    })
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
    guard_hot(|| {
        module::with_session(hSession, |s| {
            terminating(s, OpKind::SignRecover, || {
                // SAFETY: forwarded caller guarantees.
                let (data, (buf, len)) = unsafe {
                    (
                        bytes(pData, ulDataLen)?,
                        out_buffer(pSignature, pulSignatureLen)?,
                    )
                };
                finish_output(crypto::sign_recover(s, data, buf), len)
            })
        })
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
    guard_hot(|| {
        module::with_session(hSession, |s| {
            // SAFETY: forwarded caller guarantee.
            let mech = unsafe { mechanism::read(pMechanism)? };
            crypto::verify_recover_init(s, &mech, hKey)
        })
    })
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
    guard_hot(|| {
        module::with_session(hSession, |s| {
            terminating(s, OpKind::VerifyRecover, || {
                // SAFETY: forwarded caller guarantees.
                let (signature, (buf, len)) = unsafe {
                    (
                        bytes(pSignature, ulSignatureLen)?,
                        out_buffer(pData, pulDataLen)?,
                    )
                };
                finish_output(crypto::verify_recover(s, signature, buf), len)
            })
        })
    })
}
