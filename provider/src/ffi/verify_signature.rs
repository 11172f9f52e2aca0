//! Verification with the signature given first (PKCS#11 3.2 §5.15,
//! "C_VerifySignatureInit" to "C_VerifySignatureFinal"): the same
//! mechanisms and key checks as `C_VerifyInit`, one verification per
//! session whichever way it began.

use super::calls::{data_in, init_with_key};
use super::util::{bytes, guard_hot, terminating};
use crate::api::crypto::{self, OpKind};
use crate::api::module;
use cryptoki_sys::*;

/// `C_VerifySignatureInit`: the signature (at most
/// [`crypto::MAX_SIGNATURE_LEN`] bytes, else `CKR_SIGNATURE_LEN_RANGE`) is
/// kept for the data that follows.
///
/// # Safety
/// `pMechanism` null or valid; `pSignature` valid for `ulSignatureLen`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_VerifySignatureInit(
    hSession: CK_SESSION_HANDLE,
    pMechanism: *mut CK_MECHANISM,
    hKey: CK_OBJECT_HANDLE,
    pSignature: *mut CK_BYTE,
    ulSignatureLen: CK_ULONG,
) -> CK_RV {
    // SAFETY: forwarded caller guarantees.
    guard_hot(|| unsafe {
        init_with_key(hSession, pMechanism, hKey, |s, mech, key| {
            if usize::try_from(ulSignatureLen).map_or(true, |n| n > crypto::MAX_SIGNATURE_LEN) {
                return Err(crate::error::err(CKR_SIGNATURE_LEN_RANGE));
            }
            // The caller guarantees `ulSignatureLen` readable bytes (the
            // enclosing block's SAFETY).
            let signature = bytes(pSignature, ulSignatureLen)?;
            crypto::verify_signature_init(s, mech, key, signature)
        })
    })
}

/// `C_VerifySignature`: single-part data; ends the operation.
///
/// # Safety
/// `pData` valid for `ulDataLen`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_VerifySignature(
    hSession: CK_SESSION_HANDLE,
    pData: *mut CK_BYTE,
    ulDataLen: CK_ULONG,
) -> CK_RV {
    // SAFETY: forwarded caller guarantee.
    guard_hot(|| unsafe {
        data_in(
            hSession,
            OpKind::VerifySignature,
            pData,
            ulDataLen,
            crypto::verify_signature,
        )
    })
}

/// `C_VerifySignatureUpdate`.
///
/// # Safety
/// `pPart` valid for `ulPartLen`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_VerifySignatureUpdate(
    hSession: CK_SESSION_HANDLE,
    pPart: *mut CK_BYTE,
    ulPartLen: CK_ULONG,
) -> CK_RV {
    // SAFETY: forwarded caller guarantee.
    guard_hot(|| unsafe {
        data_in(
            hSession,
            OpKind::VerifySignature,
            pPart,
            ulPartLen,
            crypto::verify_signature_update,
        )
    })
}

/// `C_VerifySignatureFinal`: checks the signature given at
/// initialisation; ends the operation.
#[unsafe(no_mangle)]
pub extern "C" fn C_VerifySignatureFinal(hSession: CK_SESSION_HANDLE) -> CK_RV {
    guard_hot(|| {
        module::with_session(hSession, |s| {
            terminating(s, OpKind::VerifySignature, || {
                crypto::verify_signature_final(s)
            })
        })
    })
}
