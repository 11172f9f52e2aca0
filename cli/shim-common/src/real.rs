//! The real module a shim wraps: loading it and copying its function list
//! (PKCS#11 base spec §5.2, `C_GetFunctionList`), and reading the length
//! pointers callers pass to it.

use std::ffi::OsStr;
use std::ptr;

use cryptoki_sys::{CK_FUNCTION_LIST, CK_FUNCTION_LIST_PTR, CK_RV, CK_ULONG, CKR_OK};

/// Load the PKCS#11 module at `path` and copy the function list its
/// `C_GetFunctionList` returns. The library must stay loaded for as long as
/// the list is used: the caller keeps it.
pub fn load(path: &OsStr) -> Result<(libloading::Library, CK_FUNCTION_LIST), String> {
    // SAFETY: loading the module the user named; its initialisers run as they
    // would if the application loaded it directly.
    let lib = unsafe { libloading::Library::new(path) }
        .map_err(|e| format!("cannot load {}: {e}", path.to_string_lossy()))?;
    let list = {
        // SAFETY: C_GetFunctionList has this signature in every PKCS#11 module.
        let get: libloading::Symbol<'_, unsafe extern "C" fn(*mut CK_FUNCTION_LIST_PTR) -> CK_RV> =
            unsafe { lib.get(b"C_GetFunctionList\0") }.map_err(|e| e.to_string())?;
        let mut p: CK_FUNCTION_LIST_PTR = ptr::null_mut();
        // SAFETY: `p` is a valid out pointer.
        let rv = unsafe { get(&mut p) };
        if rv != CKR_OK || p.is_null() {
            return Err(format!(
                "C_GetFunctionList of the real module returned 0x{rv:x} and {p:?}"
            ));
        }
        // SAFETY: on CKR_OK the module returned its function list, which we
        // copy; the library stays loaded as long as the caller keeps it.
        unsafe { *p }
    };
    Ok((lib, list))
}

/// `*p`, or 0 when `p` is null (a caller's output-length pointer).
///
/// # Safety
/// `p` is null or points to a readable `CK_ULONG`.
pub unsafe fn read_or_zero(p: *const CK_ULONG) -> CK_ULONG {
    if p.is_null() {
        0
    } else {
        // SAFETY: non-null and readable per the caller's contract.
        unsafe { *p }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_null_length_pointer_reads_as_zero() {
        // SAFETY: null is allowed.
        assert_eq!(unsafe { read_or_zero(ptr::null()) }, 0);
        let n: CK_ULONG = 7;
        // SAFETY: points at a live CK_ULONG.
        assert_eq!(unsafe { read_or_zero(&n) }, 7);
    }

    #[test]
    fn a_missing_module_is_named() {
        let e = load(OsStr::new("/nonexistent/libnope.so")).unwrap_err();
        assert!(
            e.starts_with("cannot load /nonexistent/libnope.so: "),
            "{e}"
        );
    }
}
