//! Functions of the tables that this token does not implement (yet): each
//! returns `CKR_FUNCTION_NOT_SUPPORTED` once the module is initialised and
//! the session valid, as the base spec allows for every optional function.

use super::util::guard;
use crate::api::module;
use crate::error::err;
use cryptoki_sys::*;
use std::ffi::c_void;

macro_rules! not_supported {
    ($($name:ident($session:ident: CK_SESSION_HANDLE $(, $arg:ident: $ty:ty)*);)*) => {$(
        /// Not supported: `CKR_FUNCTION_NOT_SUPPORTED`.
        ///
        /// # Safety
        /// No pointer is dereferenced.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name($session: CK_SESSION_HANDLE $(, $arg: $ty)*) -> CK_RV {
            $(let _ = $arg;)*
            guard(|| module::with(|m| m.session($session).and(Err(err(CKR_FUNCTION_NOT_SUPPORTED)))))
        }
    )*};
}

not_supported! {
    C_GetOperationState(h: CK_SESSION_HANDLE, a: *mut CK_BYTE, b: *mut CK_ULONG);
    C_SetOperationState(h: CK_SESSION_HANDLE, a: *mut CK_BYTE, b: CK_ULONG, c: CK_OBJECT_HANDLE, d: CK_OBJECT_HANDLE);
    C_DigestEncryptUpdate(h: CK_SESSION_HANDLE, a: *mut CK_BYTE, b: CK_ULONG, c: *mut CK_BYTE, d: *mut CK_ULONG);
    C_DecryptDigestUpdate(h: CK_SESSION_HANDLE, a: *mut CK_BYTE, b: CK_ULONG, c: *mut CK_BYTE, d: *mut CK_ULONG);
    C_SignEncryptUpdate(h: CK_SESSION_HANDLE, a: *mut CK_BYTE, b: CK_ULONG, c: *mut CK_BYTE, d: *mut CK_ULONG);
    C_DecryptVerifyUpdate(h: CK_SESSION_HANDLE, a: *mut CK_BYTE, b: CK_ULONG, c: *mut CK_BYTE, d: *mut CK_ULONG);
    C_EncryptMessageBegin(h: CK_SESSION_HANDLE, a: *mut c_void, b: CK_ULONG, c: *mut CK_BYTE, d: CK_ULONG);
    C_EncryptMessageNext(h: CK_SESSION_HANDLE, a: *mut c_void, b: CK_ULONG, c: *mut CK_BYTE, d: CK_ULONG, e: *mut CK_BYTE, f: *mut CK_ULONG, g: CK_FLAGS);
    C_DecryptMessageBegin(h: CK_SESSION_HANDLE, a: *mut c_void, b: CK_ULONG, c: *mut CK_BYTE, d: CK_ULONG);
    C_DecryptMessageNext(h: CK_SESSION_HANDLE, a: *mut c_void, b: CK_ULONG, c: *mut CK_BYTE, d: CK_ULONG, e: *mut CK_BYTE, f: *mut CK_ULONG, g: CK_FLAGS);
}

/// `C_WaitForSlotEvent`: slots never change by themselves, so a
/// non-blocking call reports `CKR_NO_EVENT`; blocking is not supported.
///
/// # Safety
/// No pointer is dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_WaitForSlotEvent(
    flags: CK_FLAGS,
    _pSlot: *mut CK_SLOT_ID,
    _pReserved: *mut c_void,
) -> CK_RV {
    guard(|| {
        module::with(|_| {
            if flags & CKF_DONT_BLOCK != 0 {
                Err(err(CKR_NO_EVENT))
            } else {
                Err(err(CKR_FUNCTION_NOT_SUPPORTED))
            }
        })
    })
}
