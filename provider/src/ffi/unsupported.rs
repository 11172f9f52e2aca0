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
    C_EncryptMessageBegin(h: CK_SESSION_HANDLE, a: *mut c_void, b: CK_ULONG, c: *mut CK_BYTE, d: CK_ULONG);
    C_EncryptMessageNext(h: CK_SESSION_HANDLE, a: *mut c_void, b: CK_ULONG, c: *mut CK_BYTE, d: CK_ULONG, e: *mut CK_BYTE, f: *mut CK_ULONG, g: CK_FLAGS);
    C_DecryptMessageBegin(h: CK_SESSION_HANDLE, a: *mut c_void, b: CK_ULONG, c: *mut CK_BYTE, d: CK_ULONG);
    C_DecryptMessageNext(h: CK_SESSION_HANDLE, a: *mut c_void, b: CK_ULONG, c: *mut CK_BYTE, d: CK_ULONG, e: *mut CK_BYTE, f: *mut CK_ULONG, g: CK_FLAGS);
}
