//! Dual-function cryptographic operations (base spec §5.16); the logic is
//! in `api::dual`. An error other than `CKR_BUFFER_TOO_SMALL` ends both
//! operations of the pair, except `CKR_OPERATION_NOT_INITIALIZED` (the
//! pair was not active: the operation that was is left alone).

use super::util::{bytes, finish_output, guard, out_buffer};
use crate::api::crypto::{self, OpKind};
use crate::api::dual::{self, Pair};
use crate::api::module;
use crate::api::session::Session;
use crate::error::Result;
use cryptoki_sys::*;

/// `C_DigestEncryptUpdate` (§5.16): digests a part of plaintext and encrypts it.
///
/// # Safety
/// `pPart` valid for `ulPartLen`; `pEncryptedPart` null or valid for `*pulEncryptedPartLen`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_DigestEncryptUpdate(
    hSession: CK_SESSION_HANDLE,
    pPart: *mut CK_BYTE,
    ulPartLen: CK_ULONG,
    pEncryptedPart: *mut CK_BYTE,
    pulEncryptedPartLen: *mut CK_ULONG,
) -> CK_RV {
    guard(|| {
        module::with_session(hSession, |s| {
            ending_both(s, [OpKind::Encrypt, OpKind::Digest], || {
                // SAFETY: forwarded caller guarantees.
                let (data, (buf, len)) = unsafe {
                    (
                        bytes(pPart, ulPartLen)?,
                        out_buffer(pEncryptedPart, pulEncryptedPartLen)?,
                    )
                };
                finish_output(dual::update(s, Pair::DigestEncrypt, data, buf), len)
            })
        })
    })
}

/// `C_DecryptDigestUpdate` (§5.16): decrypts a part and digests the plaintext.
///
/// # Safety
/// `pEncryptedPart` valid for `ulEncryptedPartLen`; `pPart` null or valid for `*pulPartLen`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_DecryptDigestUpdate(
    hSession: CK_SESSION_HANDLE,
    pEncryptedPart: *mut CK_BYTE,
    ulEncryptedPartLen: CK_ULONG,
    pPart: *mut CK_BYTE,
    pulPartLen: *mut CK_ULONG,
) -> CK_RV {
    guard(|| {
        module::with_session(hSession, |s| {
            ending_both(s, [OpKind::Decrypt, OpKind::Digest], || {
                // SAFETY: forwarded caller guarantees.
                let (data, (buf, len)) = unsafe {
                    (
                        bytes(pEncryptedPart, ulEncryptedPartLen)?,
                        out_buffer(pPart, pulPartLen)?,
                    )
                };
                finish_output(dual::update(s, Pair::DecryptDigest, data, buf), len)
            })
        })
    })
}

/// `C_SignEncryptUpdate` (§5.16): signs (MACs) a part of plaintext and encrypts it.
///
/// # Safety
/// `pPart` valid for `ulPartLen`; `pEncryptedPart` null or valid for `*pulEncryptedPartLen`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_SignEncryptUpdate(
    hSession: CK_SESSION_HANDLE,
    pPart: *mut CK_BYTE,
    ulPartLen: CK_ULONG,
    pEncryptedPart: *mut CK_BYTE,
    pulEncryptedPartLen: *mut CK_ULONG,
) -> CK_RV {
    guard(|| {
        module::with_session(hSession, |s| {
            ending_both(s, [OpKind::Encrypt, OpKind::Sign], || {
                // SAFETY: forwarded caller guarantees.
                let (data, (buf, len)) = unsafe {
                    (
                        bytes(pPart, ulPartLen)?,
                        out_buffer(pEncryptedPart, pulEncryptedPartLen)?,
                    )
                };
                finish_output(dual::update(s, Pair::SignEncrypt, data, buf), len)
            })
        })
    })
}

/// `C_DecryptVerifyUpdate` (§5.16): decrypts a part and verifies the plaintext.
///
/// # Safety
/// `pEncryptedPart` valid for `ulEncryptedPartLen`; `pPart` null or valid for `*pulPartLen`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_DecryptVerifyUpdate(
    hSession: CK_SESSION_HANDLE,
    pEncryptedPart: *mut CK_BYTE,
    ulEncryptedPartLen: CK_ULONG,
    pPart: *mut CK_BYTE,
    pulPartLen: *mut CK_ULONG,
) -> CK_RV {
    guard(|| {
        module::with_session(hSession, |s| {
            ending_both(s, [OpKind::Decrypt, OpKind::Verify], || {
                // SAFETY: forwarded caller guarantees.
                let (data, (buf, len)) = unsafe {
                    (
                        bytes(pEncryptedPart, ulEncryptedPartLen)?,
                        out_buffer(pPart, pulPartLen)?,
                    )
                };
                finish_output(dual::update(s, Pair::DecryptVerify, data, buf), len)
            })
        })
    })
}

/// Runs `body` (catching a panic); an error other than
/// `CKR_BUFFER_TOO_SMALL` or `CKR_OPERATION_NOT_INITIALIZED` ends both
/// operations of the pair.
fn ending_both(
    session: &Session,
    kinds: [OpKind; 2],
    body: impl FnOnce() -> Result<()>,
) -> Result<()> {
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(body))
        .unwrap_or_else(|_| Err(crate::error::err(CKR_GENERAL_ERROR)));
    if let Err(e) = &r
        && !matches!(e.rv(), CKR_BUFFER_TOO_SMALL | CKR_OPERATION_NOT_INITIALIZED)
    {
        for kind in kinds {
            crypto::end(session, kind);
        }
    }
    r
}
