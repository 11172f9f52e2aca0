//! Encryption (base spec §5.8).

use super::calls::{data_in_out, init_with_key, out_only};
use super::util::guard_hot;
use crate::api::crypto::{self, OpKind};
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
    // SAFETY: forwarded caller guarantee.
    guard_hot(|| unsafe {
        init_with_key(hSession, pMechanism, hKey, |s, mech, key| {
            crypto::cipher_init(s, Direction::Encrypt, mech, key)
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
    // SAFETY: forwarded caller guarantees.
    guard_hot(|| unsafe {
        data_in_out(
            hSession,
            OpKind::Encrypt,
            pData,
            ulDataLen,
            pEncryptedData,
            pulEncryptedDataLen,
            |s, data, buf| crypto::cipher(s, Direction::Encrypt, data, buf),
        )
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
    // SAFETY: forwarded caller guarantees.
    guard_hot(|| unsafe {
        data_in_out(
            hSession,
            OpKind::Encrypt,
            pPart,
            ulPartLen,
            pEncryptedPart,
            pulEncryptedPartLen,
            |s, data, buf| crypto::cipher_update(s, Direction::Encrypt, data, buf),
        )
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
    // SAFETY: forwarded caller guarantee.
    guard_hot(|| unsafe {
        out_only(
            hSession,
            OpKind::Encrypt,
            pLastEncryptedPart,
            pulLastEncryptedPartLen,
            |s, buf| crypto::cipher_final(s, Direction::Encrypt, buf),
        )
    })
}
