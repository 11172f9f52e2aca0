//! Decryption (base spec §5.9).

use super::calls::{data_in_out, init_with_key, out_only};
use super::util::guard_hot;
use crate::api::crypto::{self, OpKind};
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
    // SAFETY: forwarded caller guarantee.
    guard_hot(|| unsafe {
        init_with_key(hSession, pMechanism, hKey, |s, mech, key| {
            crypto::cipher_init(s, Direction::Decrypt, mech, key)
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
    // SAFETY: forwarded caller guarantees.
    guard_hot(|| unsafe {
        data_in_out(
            hSession,
            OpKind::Decrypt,
            pEncryptedData,
            ulEncryptedDataLen,
            pData,
            pulDataLen,
            |s, data, buf| crypto::cipher(s, Direction::Decrypt, data, buf),
        )
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
    // SAFETY: forwarded caller guarantees.
    guard_hot(|| unsafe {
        data_in_out(
            hSession,
            OpKind::Decrypt,
            pEncryptedPart,
            ulEncryptedPartLen,
            pPart,
            pulPartLen,
            |s, data, buf| crypto::cipher_update(s, Direction::Decrypt, data, buf),
        )
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
    // SAFETY: forwarded caller guarantee.
    guard_hot(|| unsafe {
        out_only(
            hSession,
            OpKind::Decrypt,
            pLastPart,
            pulLastPartLen,
            |s, buf| crypto::cipher_final(s, Direction::Decrypt, buf),
        )
    })
}
