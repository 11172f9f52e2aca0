//! The other functions PKCS#11 3.2 adds to the function list (base spec
//! 3.2 §5.6, §5.18, §5.20): session validation flags, the asynchronous
//! calls of a token that runs every call synchronously, key encapsulation
//! and authenticated key wrapping (AES-GCM). `verify_signature.rs` has the 3.2
//! verification calls.

use super::calls::{init, new_object};
use super::util::{bytes, finish_output, guard, guard_deep, out, out_buffer};
use crate::api::crypto;
use crate::api::message::GcmMessage;
use crate::api::module;
use crate::error::{Result, err};
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

/// `CKM_AES_GCM` and its `CK_GCM_MESSAGE_PARAMS` (the authenticated wrap
/// calls' mechanism; another mechanism is `CKR_MECHANISM_INVALID`).
///
/// # Safety
/// `p` null or a valid `CK_MECHANISM` whose parameter is valid for its
/// length, with `pIv` / `pTag` valid for their lengths.
unsafe fn gcm_message<'a>(p: *const CK_MECHANISM) -> Result<GcmMessage<'a>> {
    // SAFETY: caller guarantees validity when non-null.
    let m = unsafe { p.as_ref() }.ok_or(err(CKR_ARGUMENTS_BAD))?;
    if m.mechanism != CKM_AES_GCM {
        mechanisms::lookup(m.mechanism)?;
        return Err(err(CKR_MECHANISM_INVALID));
    }
    // SAFETY: forwarded caller guarantee.
    unsafe { super::message::read_params(m.pParameter, m.ulParameterLen) }
}

/// `C_WrapKeyAuthenticated` (3.2 §5.18; AES-GCM, mechanisms §6.13.3): the
/// IV is generated into the parameter's `pIv` as its `ivGenerator` asks
/// and the tag written to `pTag`; the wrapped key is the ciphertext.
///
/// # Safety
/// `pMechanism` as for `C_EncryptMessage`; `pAssociatedData` valid for
/// `ulAssociatedDataLen`; `pWrappedKey` null or valid for
/// `*pulWrappedKeyLen` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_WrapKeyAuthenticated(
    hSession: CK_SESSION_HANDLE,
    pMechanism: *mut CK_MECHANISM,
    hWrappingKey: CK_OBJECT_HANDLE,
    hKey: CK_OBJECT_HANDLE,
    pAssociatedData: *mut CK_BYTE,
    ulAssociatedDataLen: CK_ULONG,
    pWrappedKey: *mut CK_BYTE,
    pulWrappedKeyLen: *mut CK_ULONG,
) -> CK_RV {
    guard(|| {
        module::with_session(hSession, |s| {
            // SAFETY: forwarded caller guarantees.
            let ((buf, len), params, aad) = unsafe {
                (
                    out_buffer(pWrappedKey, pulWrappedKeyLen)?,
                    gcm_message(pMechanism)?,
                    bytes(pAssociatedData, ulAssociatedDataLen)?,
                )
            };
            finish_output(
                crypto::wrap_key_authenticated(s, params, hWrappingKey, hKey, aad, buf),
                len,
            )
        })
    })
}

/// `C_UnwrapKeyAuthenticated` (3.2 §5.18): the IV and tag come from the
/// parameter; a wrong IV, tag or associated data is
/// `CKR_WRAPPED_KEY_INVALID` and makes no key.
///
/// # Safety
/// As [`C_WrapKeyAuthenticated`]; `pWrappedKey` valid for
/// `ulWrappedKeyLen`; the template valid for its count; `phKey` valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_UnwrapKeyAuthenticated(
    hSession: CK_SESSION_HANDLE,
    pMechanism: *mut CK_MECHANISM,
    hUnwrappingKey: CK_OBJECT_HANDLE,
    pWrappedKey: *mut CK_BYTE,
    ulWrappedKeyLen: CK_ULONG,
    pTemplate: *mut CK_ATTRIBUTE,
    ulAttributeCount: CK_ULONG,
    pAssociatedData: *mut CK_BYTE,
    ulAssociatedDataLen: CK_ULONG,
    phKey: *mut CK_OBJECT_HANDLE,
) -> CK_RV {
    guard_deep(|| {
        module::with_session(hSession, |s| {
            // SAFETY: forwarded caller guarantees.
            let (wrapped, aad) = unsafe {
                (
                    bytes(pWrappedKey, ulWrappedKeyLen)?,
                    bytes(pAssociatedData, ulAssociatedDataLen)?,
                )
            };
            let unwrap = |t: &[_]| {
                // SAFETY: forwarded caller guarantee.
                let params = unsafe { gcm_message(pMechanism)? };
                crypto::unwrap_key_authenticated(s, params, hUnwrappingKey, wrapped, t, aad)
            };
            // SAFETY: forwarded caller guarantees.
            unsafe { new_object(pTemplate, ulAttributeCount, phKey, unwrap) }
        })
    })
}
