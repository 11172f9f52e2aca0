//! Session management (base spec §5.6).

use super::calls::output;
use super::util::{bytes_non_null, guard, out};
use crate::api::{crypto, module, opstate};
use cryptoki_sys::*;
use std::ffi::c_void;

/// `C_OpenSession`. Notification callbacks are accepted and never called
/// (no surrender events happen in a software token).
///
/// # Safety
/// `phSession` null or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_OpenSession(
    slotID: CK_SLOT_ID,
    flags: CK_FLAGS,
    _pApplication: *mut c_void,
    _Notify: CK_NOTIFY,
    phSession: *mut CK_SESSION_HANDLE,
) -> CK_RV {
    guard(|| {
        module::with(|m| {
            // SAFETY: caller guarantees a valid handle pointer if non-null.
            let out = unsafe { out(phSession)? };
            *out = m.open_session(slotID, flags)?;
            Ok(())
        })
    })
}

/// `C_CloseSession`.
///
/// # Safety
/// No pointer is dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_CloseSession(hSession: CK_SESSION_HANDLE) -> CK_RV {
    guard(|| module::with(|m| m.close_session(hSession)))
}

/// `C_CloseAllSessions`.
///
/// # Safety
/// No pointer is dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_CloseAllSessions(slotID: CK_SLOT_ID) -> CK_RV {
    guard(|| module::with(|m| m.close_all_sessions(slotID)))
}

/// `C_GetSessionInfo`.
///
/// # Safety
/// `pInfo` null or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_GetSessionInfo(
    hSession: CK_SESSION_HANDLE,
    pInfo: *mut CK_SESSION_INFO,
) -> CK_RV {
    guard(|| {
        module::with_session(hSession, |s| {
            // SAFETY: caller guarantees a valid CK_SESSION_INFO if non-null.
            let info = unsafe { out(pInfo)? };
            info.slotID = s.token.slot_id;
            info.state = s.state();
            info.flags = CKF_SERIAL_SESSION | if s.rw { CKF_RW_SESSION } else { 0 };
            info.ulDeviceError = 0;
            Ok(())
        })
    })
}

/// `C_Login`. `CKU_CONTEXT_SPECIFIC` checks the user PIN for the operation
/// whose key has `CKA_ALWAYS_AUTHENTICATE` (see `crypto::context_login`).
///
/// # Safety
/// `pPin` valid for `ulPinLen` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_Login(
    hSession: CK_SESSION_HANDLE,
    userType: CK_USER_TYPE,
    pPin: *mut CK_UTF8CHAR,
    ulPinLen: CK_ULONG,
) -> CK_RV {
    guard(|| {
        module::with_session(hSession, |s| {
            // SAFETY: caller guarantees the PIN bytes.
            let pin = unsafe { bytes_non_null(pPin, ulPinLen)? };
            if userType == CKU_CONTEXT_SPECIFIC {
                return crypto::context_login(s, pin);
            }
            s.token.login(userType, pin)
        })
    })
}

/// `C_LoginUser` (3.0): this token has one user per type, so the user name
/// is ignored and the call behaves as `C_Login`.
///
/// # Safety
/// `pPin` valid for `ulPinLen` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_LoginUser(
    hSession: CK_SESSION_HANDLE,
    userType: CK_USER_TYPE,
    pPin: *mut CK_UTF8CHAR,
    ulPinLen: CK_ULONG,
    _pUsername: *mut CK_UTF8CHAR,
    _ulUsernameLen: CK_ULONG,
) -> CK_RV {
    // SAFETY: same contract as C_Login.
    unsafe { C_Login(hSession, userType, pPin, ulPinLen) }
}

/// `C_Logout`.
///
/// # Safety
/// No pointer is dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_Logout(hSession: CK_SESSION_HANDLE) -> CK_RV {
    guard(|| {
        module::with(|m| {
            let s = m.session(hSession)?;
            m.logout(&s.token)
        })
    })
}

/// `C_SessionCancel` (3.0 §5.6): ends the operations named by `flags`.
///
/// # Safety
/// No pointer is dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_SessionCancel(hSession: CK_SESSION_HANDLE, flags: CK_FLAGS) -> CK_RV {
    guard(|| {
        module::with_session(hSession, |s| {
            let mut ops = s.ops.lock();
            if flags & CKF_FIND_OBJECTS != 0 {
                ops.find = None;
            }
            if flags & CKF_DIGEST != 0 {
                ops.digest = None;
            }
            if flags & CKF_SIGN != 0 {
                ops.sign = None;
            }
            if flags & CKF_VERIFY != 0 {
                ops.verify = None;
                ops.verify_signature = None;
            }
            if flags & CKF_ENCRYPT != 0 {
                ops.encrypt = None;
            }
            if flags & CKF_DECRYPT != 0 {
                ops.decrypt = None;
            }
            // The message-based operations (3.0 §5.19–5.22).
            if flags & CKF_MESSAGE_ENCRYPT != 0 {
                ops.message_encrypt = None;
            }
            if flags & CKF_MESSAGE_DECRYPT != 0 {
                ops.message_decrypt = None;
            }
            if flags & CKF_MESSAGE_SIGN != 0 {
                ops.message_sign = None;
            }
            if flags & CKF_MESSAGE_VERIFY != 0 {
                ops.message_verify = None;
            }
            Ok(())
        })
    })
}

/// `C_GetOperationState` (§5.6): an opaque reference to a copy of the
/// session's digest and MAC operations (see `api::opstate`).
///
/// # Safety
/// `pOperationState` null or valid for `*pulOperationStateLen` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_GetOperationState(
    hSession: CK_SESSION_HANDLE,
    pOperationState: *mut CK_BYTE,
    pulOperationStateLen: *mut CK_ULONG,
) -> CK_RV {
    guard(|| {
        module::with(|m| {
            let s = m.session(hSession)?;
            let get = |buf: Option<&mut [u8]>| opstate::get(m.saved_states(), &s, buf);
            // SAFETY: forwarded caller guarantee.
            unsafe { output(pOperationState, pulOperationStateLen, get) }
        })
    })
}

/// `C_SetOperationState` (§5.6).
///
/// # Safety
/// `pOperationState` valid for `ulOperationStateLen` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_SetOperationState(
    hSession: CK_SESSION_HANDLE,
    pOperationState: *mut CK_BYTE,
    ulOperationStateLen: CK_ULONG,
    hEncryptionKey: CK_OBJECT_HANDLE,
    hAuthenticationKey: CK_OBJECT_HANDLE,
) -> CK_RV {
    guard(|| {
        module::with(|m| {
            let s = m.session(hSession)?;
            // A NULL state is CKR_ARGUMENTS_BAD whatever its length (an
            // empty state is no state), before the state is looked at.
            // SAFETY: forwarded caller guarantee.
            let blob = unsafe { bytes_non_null(pOperationState, ulOperationStateLen)? };
            opstate::set(
                m.saved_states(),
                &s,
                blob,
                hEncryptionKey,
                hAuthenticationKey,
            )
        })
    })
}
