//! The other functions PKCS#11 3.2 adds to the function list (base spec
//! 3.2 §5.6, §5.18, §5.20): session validation flags, the asynchronous
//! calls of a token that runs every call synchronously, key encapsulation
//! and authenticated key wrapping. `verify_signature.rs` has the 3.2
//! verification calls.

use super::calls::init;
use super::util::{guard, out};
use crate::api::module;
use crate::error::err;
use crate::mechanisms;
use cryptoki_sys::*;

/// `C_GetSessionValidationFlags` (3.2 §5.6): the validation flags of the
/// last operation of the session that succeeded
/// (`CKS_LAST_VALIDATION_OK`, the one type 3.2 defines). No operation of
/// this token is done under a validation (it has no validation objects,
/// `CKO_VALIDATION`), so the flags are 0; another type is
/// `CKR_ARGUMENTS_BAD`.
///
/// # Safety
/// `pFlags` null or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_GetSessionValidationFlags(
    hSession: CK_SESSION_HANDLE,
    type_: CK_SESSION_VALIDATION_FLAGS_TYPE,
    pFlags: *mut CK_FLAGS,
) -> CK_RV {
    guard(|| {
        module::with_session(hSession, |_| {
            if type_ != CKS_LAST_VALIDATION_OK {
                return Err(err(CKR_ARGUMENTS_BAD));
            }
            // SAFETY: caller guarantees a valid pointer if non-null.
            *unsafe { out(pFlags)? } = 0;
            Ok(())
        })
    })
}

/// `CKR_FUNCTION_NOT_SUPPORTED`, after the session is checked.
///
/// The asynchronous calls (3.2 §5.20): this token never returns
/// `CKR_PENDING` (every call completes before it returns), so there is
/// never an asynchronous operation to complete, identify or join.
fn unsupported(h_session: CK_SESSION_HANDLE) -> CK_RV {
    guard(|| module::with_session(h_session, |_| Err(err(CKR_FUNCTION_NOT_SUPPORTED))))
}

/// `C_AsyncComplete`: see [`unsupported`].
#[unsafe(no_mangle)]
pub extern "C" fn C_AsyncComplete(
    hSession: CK_SESSION_HANDLE,
    _pFunctionName: *mut CK_UTF8CHAR,
    _pResult: *mut CK_ASYNC_DATA,
) -> CK_RV {
    unsupported(hSession)
}

/// `C_AsyncGetID`: see [`unsupported`].
#[unsafe(no_mangle)]
pub extern "C" fn C_AsyncGetID(
    hSession: CK_SESSION_HANDLE,
    _pFunctionName: *mut CK_UTF8CHAR,
    _pulID: *mut CK_ULONG,
) -> CK_RV {
    unsupported(hSession)
}

/// `C_AsyncJoin`: see [`unsupported`].
#[unsafe(no_mangle)]
pub extern "C" fn C_AsyncJoin(
    hSession: CK_SESSION_HANDLE,
    _pFunctionName: *mut CK_UTF8CHAR,
    _ulID: CK_ULONG,
    _pData: *mut CK_BYTE,
    _ulData: CK_ULONG,
) -> CK_RV {
    unsupported(hSession)
}

/// The mechanism must offer `function` (`CKF_ENCAPSULATE`,
/// `CKF_DECAPSULATE`): no mechanism of the token does yet (docs/
/// mechanisms.md), so every call ends here with `CKR_MECHANISM_INVALID`,
/// after the session and the mechanism are checked.
///
/// # Safety
/// `p_mechanism` null or a valid `CK_MECHANISM`.
unsafe fn kem(
    h_session: CK_SESSION_HANDLE,
    p_mechanism: *mut CK_MECHANISM,
    function: CK_FLAGS,
) -> CK_RV {
    // SAFETY: forwarded caller guarantee.
    guard(|| unsafe {
        init(h_session, p_mechanism, |_, mech| {
            mechanisms::require(mech, function)?;
            Err(err(CKR_MECHANISM_INVALID))
        })
    })
}

/// `C_EncapsulateKey` (3.2 §5.18): see [`kem`].
///
/// # Safety
/// `pMechanism` null or valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_EncapsulateKey(
    hSession: CK_SESSION_HANDLE,
    pMechanism: *mut CK_MECHANISM,
    _hPublicKey: CK_OBJECT_HANDLE,
    _pTemplate: *mut CK_ATTRIBUTE,
    _ulAttributeCount: CK_ULONG,
    _pCiphertext: *mut CK_BYTE,
    _pulCiphertextLen: *mut CK_ULONG,
    _phKey: *mut CK_OBJECT_HANDLE,
) -> CK_RV {
    // SAFETY: forwarded caller guarantee.
    unsafe { kem(hSession, pMechanism, CKF_ENCAPSULATE) }
}

/// `C_DecapsulateKey` (3.2 §5.18): see [`kem`].
///
/// # Safety
/// `pMechanism` null or valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_DecapsulateKey(
    hSession: CK_SESSION_HANDLE,
    pMechanism: *mut CK_MECHANISM,
    _hPrivateKey: CK_OBJECT_HANDLE,
    _pTemplate: *mut CK_ATTRIBUTE,
    _ulAttributeCount: CK_ULONG,
    _pCiphertext: *mut CK_BYTE,
    _ulCiphertextLen: CK_ULONG,
    _phKey: *mut CK_OBJECT_HANDLE,
) -> CK_RV {
    // SAFETY: forwarded caller guarantee.
    unsafe { kem(hSession, pMechanism, CKF_DECAPSULATE) }
}

/// `C_WrapKeyAuthenticated` (3.2 §5.18): not offered yet (docs/
/// mechanisms.md, "PKCS#11 3.2"): `CKR_FUNCTION_NOT_SUPPORTED` after the
/// session is checked.
#[unsafe(no_mangle)]
pub extern "C" fn C_WrapKeyAuthenticated(
    hSession: CK_SESSION_HANDLE,
    _pMechanism: *mut CK_MECHANISM,
    _hWrappingKey: CK_OBJECT_HANDLE,
    _hKey: CK_OBJECT_HANDLE,
    _pAssociatedData: *mut CK_BYTE,
    _ulAssociatedDataLen: CK_ULONG,
    _pWrappedKey: *mut CK_BYTE,
    _pulWrappedKeyLen: *mut CK_ULONG,
) -> CK_RV {
    unsupported(hSession)
}

/// `C_UnwrapKeyAuthenticated` (3.2 §5.18): as [`C_WrapKeyAuthenticated`].
#[unsafe(no_mangle)]
pub extern "C" fn C_UnwrapKeyAuthenticated(
    hSession: CK_SESSION_HANDLE,
    _pMechanism: *mut CK_MECHANISM,
    _hUnwrappingKey: CK_OBJECT_HANDLE,
    _pWrappedKey: *mut CK_BYTE,
    _ulWrappedKeyLen: CK_ULONG,
    _pTemplate: *mut CK_ATTRIBUTE,
    _ulAttributeCount: CK_ULONG,
    _pAssociatedData: *mut CK_BYTE,
    _ulAssociatedDataLen: CK_ULONG,
    _phKey: *mut CK_OBJECT_HANDLE,
) -> CK_RV {
    unsupported(hSession)
}
