//! Message digesting (base spec §5.12).

use super::calls::{data_in, data_in_out, init, out_only};
use super::util::guard_hot;
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
    // SAFETY: forwarded caller guarantee.
    guard_hot(|| unsafe { init(hSession, pMechanism, crypto::digest_init) })
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
    // SAFETY: forwarded caller guarantees.
    guard_hot(|| unsafe {
        data_in_out(
            hSession,
            OpKind::Digest,
            pData,
            ulDataLen,
            pDigest,
            pulDigestLen,
            crypto::digest,
        )
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
    // SAFETY: forwarded caller guarantee.
    guard_hot(|| unsafe {
        data_in(
            hSession,
            OpKind::Digest,
            pPart,
            ulPartLen,
            crypto::digest_update,
        )
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
    // SAFETY: forwarded caller guarantee.
    guard_hot(|| unsafe {
        out_only(
            hSession,
            OpKind::Digest,
            pDigest,
            pulDigestLen,
            crypto::digest_final,
        )
    })
}
