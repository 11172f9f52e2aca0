//! Opening a module's library and taking its function list, checked before
//! anything hands the library to cryptoki (whose `Pkcs11::new` dereferences
//! what `C_GetInterface` and `C_GetFunctionList` return without looking).
//!
//! PKCS#11 base spec §5.4: `C_GetFunctionList` returns `CKR_OK` with a
//! pointer to the library's `CK_FUNCTION_LIST`; 3.0 §5.4 `C_GetInterface`
//! returns an interface whose `pFunctionList` points to the interface's
//! list. A NULL there is an error naming the call, not a crash.
//!
//! PKCS#11 3.2 adds functions (key encapsulation, §5.18) that only the
//! `CK_FUNCTION_LIST_3_2` of the "PKCS 11" 3.2 interface holds: it is taken
//! when the module offers that interface (`C_GetInterface("PKCS 11", 3.2)`)
//! and its list says version 3.2; the 2.40 list of `C_GetFunctionList`
//! stays the one every other call goes through.

use std::path::Path;
use std::ptr;

use cryptoki_sys::*;

use crate::token::ckr::ckr_name;

/// `C_DalekVerifyEd25519Batch` of the "Vendor dalek-pkcs11" interface (see the
/// provider's `docs/mechanisms.md`).
pub type VerifyBatchFn = unsafe extern "C" fn(
    CK_SESSION_HANDLE,
    CK_ULONG,
    *const CK_OBJECT_HANDLE,
    *const *const CK_BYTE,
    *const CK_ULONG,
    *const *const CK_BYTE,
) -> CK_RV;

/// `C_GetInterface` (3.0 §5.4).
type GetInterfaceFn = unsafe extern "C" fn(
    *mut CK_UTF8CHAR,
    *mut CK_VERSION,
    *mut *mut CK_INTERFACE,
    CK_FLAGS,
) -> CK_RV;

/// Layout of the vendor interface's function list.
#[repr(C)]
struct VendorList {
    version: CK_VERSION,
    verify_batch: Option<VerifyBatchFn>,
}

/// A module's library, its 2.40 function list (copied), its 3.2 function
/// list (copied) and its vendor batch-verify function, if it has them.
pub struct Library {
    /// Keeps the function pointers valid.
    pub lib: libloading::Library,
    /// The list of `C_GetFunctionList`.
    pub list: CK_FUNCTION_LIST,
    /// The list of the "PKCS 11" 3.2 interface, when offered.
    pub v3_2: Option<CK_FUNCTION_LIST_3_2>,
    /// `C_DalekVerifyEd25519Batch`, when offered.
    pub verify_batch: Option<VerifyBatchFn>,
}

/// Load `path` and check what cryptoki will dereference: the default
/// interface of `C_GetInterface` (when the library has it) and the list of
/// `C_GetFunctionList`. Errors name the call.
pub fn open(path: &Path) -> Result<Library, String> {
    // SAFETY: loading a PKCS#11 module runs its initialisers; the user chose
    // this module to be benchmarked.
    let lib = unsafe { libloading::Library::new(path) }.map_err(|e| e.to_string())?;
    check_default_interface(&lib)?;
    let list = {
        // SAFETY: the symbol has the C_GetFunctionList signature of PKCS#11.
        let get: libloading::Symbol<'_, unsafe extern "C" fn(*mut CK_FUNCTION_LIST_PTR) -> CK_RV> =
            unsafe { lib.get(b"C_GetFunctionList\0") }
                .map_err(|_| "the library has no C_GetFunctionList".to_string())?;
        let mut list_ptr: CK_FUNCTION_LIST_PTR = ptr::null_mut();
        // SAFETY: a valid pointer to a pointer-sized out variable.
        let rv = unsafe { get(&mut list_ptr) };
        if rv != CKR_OK {
            return Err(format!("C_GetFunctionList failed: {}", ckr_name(rv)));
        }
        if list_ptr.is_null() {
            return Err("C_GetFunctionList returned CKR_OK and a NULL function list".into());
        }
        // SAFETY: on CKR_OK the module returned a non-null pointer to its
        // (static) function list; we copy it and keep the library loaded as
        // long as the copy lives.
        unsafe { *list_ptr }
    };
    let v3_2 = interface_3_2(&lib)?;
    let verify_batch = vendor_verify_batch(&lib);
    Ok(Library {
        lib,
        list,
        v3_2,
        verify_batch,
    })
}

/// `C_GetInterface(NULL, NULL, &i, 0)` as cryptoki calls it: an error when it
/// fails or hands out an interface without a function list.
fn check_default_interface(lib: &libloading::Library) -> Result<(), String> {
    // SAFETY: the symbol, when present, has the PKCS#11 3.0 signature.
    let Ok(get) = (unsafe { lib.get::<GetInterfaceFn>(b"C_GetInterface\0") }) else {
        return Ok(());
    };
    let mut iface: *mut CK_INTERFACE = ptr::null_mut();
    // SAFETY: NULL name and version ask for the default interface; `iface`
    // is a valid out pointer.
    let rv = unsafe { get(ptr::null_mut(), ptr::null_mut(), &mut iface, 0) };
    if rv != CKR_OK {
        return Err(format!("C_GetInterface failed: {}", ckr_name(rv)));
    }
    // SAFETY: a non-null interface returned with CKR_OK points to the
    // module's CK_INTERFACE.
    if !iface.is_null() && unsafe { (*iface).pFunctionList }.is_null() {
        return Err(
            "C_GetInterface returned CKR_OK and an interface whose function list is NULL".into(),
        );
    }
    Ok(())
}

/// The function list of the "PKCS 11" 3.2 interface (3.2 §5.4
/// `C_GetInterface` with that name and version), if the module offers it:
/// `None` when it has no `C_GetInterface`, the call fails or returns no
/// interface, or the list it points to is not version 3.2 (its layout would
/// then be another's); an error when it returns `CKR_OK` and a NULL list.
fn interface_3_2(lib: &libloading::Library) -> Result<Option<CK_FUNCTION_LIST_3_2>, String> {
    // SAFETY: the symbol, when present, has the PKCS#11 3.0 signature.
    let Ok(get) = (unsafe { lib.get::<GetInterfaceFn>(b"C_GetInterface\0") }) else {
        return Ok(None);
    };
    let mut name = *b"PKCS 11\0";
    let mut version = CK_VERSION { major: 3, minor: 2 };
    let mut iface: *mut CK_INTERFACE = ptr::null_mut();
    // SAFETY: a NUL-terminated name, a valid version and a valid out-pointer.
    let rv = unsafe { get(name.as_mut_ptr(), &mut version, &mut iface, 0) };
    if rv != CKR_OK || iface.is_null() {
        return Ok(None);
    }
    // SAFETY: on CKR_OK the module returned its (static) interface.
    let list = unsafe { (*iface).pFunctionList };
    if list.is_null() {
        return Err(
            "C_GetInterface(\"PKCS 11\", 3.2) returned CKR_OK and an interface whose \
             function list is NULL"
                .into(),
        );
    }
    // SAFETY: every PKCS#11 function list starts with its CK_VERSION.
    let v = unsafe { *(list as *const CK_VERSION) };
    if (v.major, v.minor) != (3, 2) {
        return Ok(None);
    }
    // SAFETY: a list of version 3.2 has the CK_FUNCTION_LIST_3_2 layout; it
    // is static in the library, which outlives the copy's use.
    Ok(Some(unsafe { *(list as *const CK_FUNCTION_LIST_3_2) }))
}

/// The batch-verify function of a module's vendor interface, if it has one.
fn vendor_verify_batch(lib: &libloading::Library) -> Option<VerifyBatchFn> {
    // SAFETY: the symbol, when present, has the PKCS#11 3.0 signature.
    let get = unsafe { lib.get::<GetInterfaceFn>(b"C_GetInterface\0") }.ok()?;
    let mut name = *b"Vendor dalek-pkcs11\0";
    let mut iface: *mut CK_INTERFACE = ptr::null_mut();
    // SAFETY: a NUL-terminated name and a valid out-pointer.
    let rv = unsafe { get(name.as_mut_ptr(), ptr::null_mut(), &mut iface, 0) };
    if rv != CKR_OK || iface.is_null() {
        return None;
    }
    // SAFETY: on CKR_OK the module returned its (static) interface.
    let list = unsafe { (*iface).pFunctionList } as *const VendorList;
    if list.is_null() {
        return None;
    }
    // SAFETY: a non-null function list of this interface has the layout of
    // `VendorList` at version 1.x.
    let list = unsafe { &*list };
    (list.version.major == 1)
        .then_some(list.verify_batch)
        .flatten()
}
