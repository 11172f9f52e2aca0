//! Message digesting (base spec §5.12).

use super::mechanism;
use super::util::{bytes, finish_output, guard_hot, out_buffer, terminating};
use crate::api::crypto::{self, OpKind};
use crate::api::module;
use cryptoki_sys::*;

/// `C_DigestInit`.
///
/// # Safety
/// `pMechanism` null or valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_DigestInit(
    hSession: CK_SESSION_HANDLE,
    pMechanism: *mut CK_MECHANISM,
) -> CK_RV {
    guard_hot(|| {
        module::with_session(hSession, |s| {
            // SAFETY: forwarded caller guarantee.
            let mech = unsafe { mechanism::read(pMechanism)? };
            crypto::digest_init(s, &mech)
        })
    })
}

/// `C_Digest`.
///
/// # Safety
/// `pData` valid for `ulDataLen`; `pDigest` null or valid for `*pulDigestLen`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_Digest(
    hSession: CK_SESSION_HANDLE,
    pData: *mut CK_BYTE,
    ulDataLen: CK_ULONG,
    pDigest: *mut CK_BYTE,
    pulDigestLen: *mut CK_ULONG,
) -> CK_RV {
    guard_hot(|| {
        module::with_session(hSession, |s| {
            terminating(s, OpKind::Digest, || {
                // SAFETY: forwarded caller guarantees.
                let (data, (buf, len)) =
                    unsafe { (bytes(pData, ulDataLen)?, out_buffer(pDigest, pulDigestLen)?) };
                finish_output(crypto::digest(s, data, buf), len)
            })
        })
    })
}

/// `C_DigestUpdate`.
///
/// # Safety
/// `pPart` valid for `ulPartLen`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_DigestUpdate(
    hSession: CK_SESSION_HANDLE,
    pPart: *mut CK_BYTE,
    ulPartLen: CK_ULONG,
) -> CK_RV {
    guard_hot(|| {
        module::with_session(hSession, |s| {
            terminating(s, OpKind::Digest, || {
                // SAFETY: forwarded caller guarantee.
                let data = unsafe { bytes(pPart, ulPartLen)? };
                crypto::digest_update(s, data)
            })
        })
    })
}

/// `C_DigestKey`.
///
/// # Safety
/// No pointer is dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_DigestKey(hSession: CK_SESSION_HANDLE, hKey: CK_OBJECT_HANDLE) -> CK_RV {
    guard_hot(|| module::with(|m| crypto::digest_key(&*m.session(hSession)?, hKey)))
}

/// `C_DigestFinal`.
///
/// # Safety
/// `pDigest` null or valid for `*pulDigestLen`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_DigestFinal(
    hSession: CK_SESSION_HANDLE,
    pDigest: *mut CK_BYTE,
    pulDigestLen: *mut CK_ULONG,
) -> CK_RV {
    guard_hot(|| {
        module::with_session(hSession, |s| {
            terminating(s, OpKind::Digest, || {
                // SAFETY: forwarded caller guarantee.
                let (buf, len) = unsafe { out_buffer(pDigest, pulDigestLen)? };
                finish_output(crypto::digest_final(s, buf), len)
            })
        })
    })
}
