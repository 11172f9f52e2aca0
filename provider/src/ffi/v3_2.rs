//! The other functions PKCS#11 3.2 adds to the function list (base spec
//! 3.2 §5.6, §5.18, §5.20): session validation flags, the asynchronous
//! calls of a token that runs every call synchronously, key encapsulation
//! (ML-KEM) and authenticated key wrapping (AES-GCM). `verify_signature.rs` has the 3.2
//! verification calls.

use super::calls::{new_key, new_object};
use super::mechanism;
use super::util::{bytes, finish_output, guard, guard_deep, out, out_buffer, template};
use crate::api::crypto;
use crate::api::message::MessageParams;
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

/// `C_EncapsulateKey` (3.2 §5.18): a new secret key from the caller's
/// template and the ciphertext that carries it to the holder of the
/// private key. The ciphertext buffer follows the size-query convention
/// (§5.2): a null `pCiphertext` asks for its length and makes no key, a
/// buffer too small is `CKR_BUFFER_TOO_SMALL` with the length, and no key.
///
/// # Safety
/// `pMechanism` null or valid; the template valid for its count;
/// `pulCiphertextLen` null or valid; `pCiphertext` null or valid for
/// `*pulCiphertextLen` bytes; `phKey` null or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_EncapsulateKey(
    hSession: CK_SESSION_HANDLE,
    pMechanism: *mut CK_MECHANISM,
    hPublicKey: CK_OBJECT_HANDLE,
    pTemplate: *mut CK_ATTRIBUTE,
    ulAttributeCount: CK_ULONG,
    pCiphertext: *mut CK_BYTE,
    pulCiphertextLen: *mut CK_ULONG,
    phKey: *mut CK_OBJECT_HANDLE,
) -> CK_RV {
    guard_deep(|| {
        module::with_session(hSession, |s| {
            // SAFETY: forwarded caller guarantees.
            let (template, (buf, len), mech) = unsafe {
                (
                    template(pTemplate, ulAttributeCount)?,
                    out_buffer(pCiphertext, pulCiphertextLen)?,
                    mechanism::read(pMechanism)?,
                )
            };
            let asked = buf.is_some();
            // SAFETY: forwarded caller guarantee.
            let handle_out = if asked {
                Some(unsafe { out(phKey)? })
            } else {
                None
            };
            let made = crypto::encapsulate_key(s, &mech, hPublicKey, &template, buf);
            let made = made.map(|(n, handle)| {
                if let (Some(h), Some(o)) = (handle, handle_out) {
                    *o = h;
                }
                n
            });
            finish_output(made, len)
        })
    })
}

/// `C_DecapsulateKey` (3.2 §5.18): the secret key `pCiphertext` carries,
/// made from the caller's template.
///
/// # Safety
/// `pMechanism` null or valid; the template valid for its count;
/// `pCiphertext` valid for `ulCiphertextLen` bytes; `phKey` valid for
/// writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_DecapsulateKey(
    hSession: CK_SESSION_HANDLE,
    pMechanism: *mut CK_MECHANISM,
    hPrivateKey: CK_OBJECT_HANDLE,
    pTemplate: *mut CK_ATTRIBUTE,
    ulAttributeCount: CK_ULONG,
    pCiphertext: *mut CK_BYTE,
    ulCiphertextLen: CK_ULONG,
    phKey: *mut CK_OBJECT_HANDLE,
) -> CK_RV {
    guard_deep(|| {
        module::with_session(hSession, |s| {
            // SAFETY: forwarded caller guarantee.
            let ciphertext = unsafe { bytes(pCiphertext, ulCiphertextLen)? };
            let decapsulate =
                |mech: &_, t: &[_]| crypto::decapsulate_key(s, mech, hPrivateKey, t, ciphertext);
            // SAFETY: forwarded caller guarantees.
            unsafe { new_key(pMechanism, pTemplate, ulAttributeCount, phKey, decapsulate) }
        })
    })
}

/// `CKM_AES_GCM` and its `CK_GCM_MESSAGE_PARAMS` (the authenticated wrap
/// calls' mechanism; another mechanism is `CKR_MECHANISM_INVALID`).
///
/// # Safety
/// `p` null or a valid `CK_MECHANISM` whose parameter is valid for its
/// length, with `pIv` / `pTag` valid for their lengths.
unsafe fn gcm_message<'a>(p: *const CK_MECHANISM) -> Result<MessageParams<'a>> {
    // SAFETY: caller guarantees validity when non-null.
    let m = unsafe { p.as_ref() }.ok_or(err(CKR_ARGUMENTS_BAD))?;
    if m.mechanism != CKM_AES_GCM {
        mechanisms::lookup(m.mechanism)?;
        return Err(err(CKR_MECHANISM_INVALID));
    }
    // SAFETY: forwarded caller guarantee.
    unsafe { super::message::read_params(CKM_AES_GCM, m.pParameter, m.ulParameterLen) }
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
