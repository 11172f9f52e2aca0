//! Decryption (base spec §5.9).

use super::mechanism;
use super::util::{bytes, finish_output, guard_hot, out_buffer, terminating};
use crate::api::crypto::{self, OpKind};
use crate::api::module;
use crate::mechanisms::Direction;
use cryptoki_sys::*;

/// `C_DecryptInit`.
///
/// # Safety
/// `pMechanism` null or valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_DecryptInit(
    hSession: CK_SESSION_HANDLE,
    pMechanism: *mut CK_MECHANISM,
    hKey: CK_OBJECT_HANDLE,
) -> CK_RV {
    guard_hot(|| {
        module::with_session(hSession, |s| {
            // SAFETY: forwarded caller guarantee.
            let mech = unsafe { mechanism::read(pMechanism)? };
            crypto::cipher_init(s, Direction::Decrypt, &mech, hKey)
        })
    })
}

/// `C_Decrypt`.
///
/// # Safety
/// Input valid for its length; output null or valid for `*pulDataLen`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_Decrypt(
    hSession: CK_SESSION_HANDLE,
    pEncryptedData: *mut CK_BYTE,
    ulEncryptedDataLen: CK_ULONG,
    pData: *mut CK_BYTE,
    pulDataLen: *mut CK_ULONG,
) -> CK_RV {
    guard_hot(|| {
        module::with_session(hSession, |s| {
            terminating(s, OpKind::Decrypt, || {
                // SAFETY: forwarded caller guarantees.
                let (data, (buf, len)) = unsafe {
                    (
                        bytes(pEncryptedData, ulEncryptedDataLen)?,
                        out_buffer(pData, pulDataLen)?,
                    )
                };
                finish_output(crypto::cipher(s, Direction::Decrypt, data, buf), len)
            })
        })
    })
}

/// `C_DecryptUpdate`.
///
/// # Safety
/// Input valid for its length; output null or valid for `*pulPartLen`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_DecryptUpdate(
    hSession: CK_SESSION_HANDLE,
    pEncryptedPart: *mut CK_BYTE,
    ulEncryptedPartLen: CK_ULONG,
    pPart: *mut CK_BYTE,
    pulPartLen: *mut CK_ULONG,
) -> CK_RV {
    guard_hot(|| {
        module::with_session(hSession, |s| {
            terminating(s, OpKind::Decrypt, || {
                // SAFETY: forwarded caller guarantees.
                let (data, (buf, len)) = unsafe {
                    (
                        bytes(pEncryptedPart, ulEncryptedPartLen)?,
                        out_buffer(pPart, pulPartLen)?,
                    )
                };
                finish_output(crypto::cipher_update(s, Direction::Decrypt, data, buf), len)
            })
        })
    })
}

/// `C_DecryptFinal`.
///
/// # Safety
/// Output null or valid for `*pulLastPartLen`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_DecryptFinal(
    hSession: CK_SESSION_HANDLE,
    pLastPart: *mut CK_BYTE,
    pulLastPartLen: *mut CK_ULONG,
) -> CK_RV {
    guard_hot(|| {
        module::with_session(hSession, |s| {
            terminating(s, OpKind::Decrypt, || {
                // SAFETY: forwarded caller guarantee.
                let (buf, len) = unsafe { out_buffer(pLastPart, pulLastPartLen)? };
                finish_output(crypto::cipher_final(s, Direction::Decrypt, buf), len)
            })
        })
    })
}
