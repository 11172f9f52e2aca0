//! Encryption (base spec §5.8).

use super::mechanism;
use super::util::{bytes, finish_output, guard_hot, out_buffer, terminating};
use crate::api::crypto::{self, OpKind};
use crate::api::module;
use crate::mechanisms::Direction;
use cryptoki_sys::*;

/// `C_EncryptInit`.
///
/// # Safety
/// `pMechanism` null or valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_EncryptInit(
    hSession: CK_SESSION_HANDLE,
    pMechanism: *mut CK_MECHANISM,
    hKey: CK_OBJECT_HANDLE,
) -> CK_RV {
    guard_hot(|| {
        module::with_session(hSession, |s| {
            // SAFETY: forwarded caller guarantee.
            let mech = unsafe { mechanism::read(pMechanism)? };
            crypto::cipher_init(s, Direction::Encrypt, &mech, hKey)
        })
    })
}

/// `C_Encrypt`.
///
/// # Safety
/// Input valid for its length; output null or valid for `*pulEncryptedDataLen`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_Encrypt(
    hSession: CK_SESSION_HANDLE,
    pData: *mut CK_BYTE,
    ulDataLen: CK_ULONG,
    pEncryptedData: *mut CK_BYTE,
    pulEncryptedDataLen: *mut CK_ULONG,
) -> CK_RV {
    guard_hot(|| {
        module::with_session(hSession, |s| {
            terminating(s, OpKind::Encrypt, || {
                // SAFETY: forwarded caller guarantees.
                let (data, (buf, len)) = unsafe {
                    (
                        bytes(pData, ulDataLen)?,
                        out_buffer(pEncryptedData, pulEncryptedDataLen)?,
                    )
                };
                finish_output(crypto::cipher(s, Direction::Encrypt, data, buf), len)
            })
        })
    })
}

/// `C_EncryptUpdate`.
///
/// # Safety
/// Input valid for its length; output null or valid for `*pulEncryptedPartLen`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_EncryptUpdate(
    hSession: CK_SESSION_HANDLE,
    pPart: *mut CK_BYTE,
    ulPartLen: CK_ULONG,
    pEncryptedPart: *mut CK_BYTE,
    pulEncryptedPartLen: *mut CK_ULONG,
) -> CK_RV {
    guard_hot(|| {
        module::with_session(hSession, |s| {
            terminating(s, OpKind::Encrypt, || {
                // SAFETY: forwarded caller guarantees.
                let (data, (buf, len)) = unsafe {
                    (
                        bytes(pPart, ulPartLen)?,
                        out_buffer(pEncryptedPart, pulEncryptedPartLen)?,
                    )
                };
                finish_output(crypto::cipher_update(s, Direction::Encrypt, data, buf), len)
            })
        })
    })
}

/// `C_EncryptFinal`.
///
/// # Safety
/// Output null or valid for `*pulLastEncryptedPartLen`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_EncryptFinal(
    hSession: CK_SESSION_HANDLE,
    pLastEncryptedPart: *mut CK_BYTE,
    pulLastEncryptedPartLen: *mut CK_ULONG,
) -> CK_RV {
    guard_hot(|| {
        module::with_session(hSession, |s| {
            terminating(s, OpKind::Encrypt, || {
                // SAFETY: forwarded caller guarantee.
                let (buf, len) =
                    unsafe { out_buffer(pLastEncryptedPart, pulLastEncryptedPartLen)? };
                finish_output(crypto::cipher_final(s, Direction::Encrypt, buf), len)
            })
        })
    })
}
