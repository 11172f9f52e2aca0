//! General-purpose functions (base spec §5.4): `C_Initialize`, `C_Finalize`,
//! `C_GetInfo`, plus the legacy parallel-function stubs (§5.16).

use super::util::{guard, out, pad};
use crate::api::module;
use crate::error::{Result, err};
use cryptoki_sys::*;
use std::ffi::c_void;
use std::sync::Once;

const LIBRARY_VERSION: CK_VERSION = CK_VERSION { major: 0, minor: 1 };
/// `CK_INFO.manufacturerID` and token manufacturer.
pub const MANUFACTURER: &str = "dalek-pkcs11 project";

static ATFORK: Once = Once::new();

/// `pthread_atfork` handlers: the module's locks and idle databases
/// across `fork()` (see `module::before_fork`). Panics cannot cross them.
extern "C" fn before_fork() {
    let _ = std::panic::catch_unwind(module::before_fork);
}

extern "C" fn after_fork_in_parent() {
    let _ = std::panic::catch_unwind(|| module::after_fork(false));
}

extern "C" fn after_fork_in_child() {
    let _ = std::panic::catch_unwind(|| module::after_fork(true));
}

/// Validates `CK_C_INITIALIZE_ARGS` (§5.4 C_Initialize and §5.4 table
/// "Summary of the behavior of Cryptoki for locking"): the four mutex
/// functions are all null or all supplied; if supplied without
/// `CKF_OS_LOCKING_OK` the application demands its own mutexes, which we
/// cannot use (`CKR_CANT_LOCK`); `pReserved` must be null.
fn check_init_args(args: Option<&CK_C_INITIALIZE_ARGS>) -> Result<()> {
    let Some(a) = args else {
        return Ok(());
    };
    if !a.pReserved.is_null() {
        return Err(err(CKR_ARGUMENTS_BAD));
    }
    let supplied = [
        a.CreateMutex.is_some(),
        a.DestroyMutex.is_some(),
        a.LockMutex.is_some(),
        a.UnlockMutex.is_some(),
    ];
    let all = supplied.iter().all(|&s| s);
    let none = supplied.iter().all(|&s| !s);
    if !all && !none {
        return Err(err(CKR_ARGUMENTS_BAD));
    }
    if all && a.flags & CKF_OS_LOCKING_OK == 0 {
        return Err(err(CKR_CANT_LOCK));
    }
    Ok(())
}

/// `C_Initialize`.
///
/// # Safety
/// `pInitArgs` null or a valid `CK_C_INITIALIZE_ARGS`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_Initialize(pInitArgs: *mut c_void) -> CK_RV {
    guard(|| {
        // SAFETY: the caller passes null or a valid CK_C_INITIALIZE_ARGS.
        let args = unsafe { (pInitArgs as *const CK_C_INITIALIZE_ARGS).as_ref() };
        check_init_args(args)?;
        ATFORK.call_once(|| {
            // SAFETY: registers handlers that only take and release the
            // module's own locks (on the forking thread) and store to atomics.
            unsafe {
                libc::pthread_atfork(
                    Some(before_fork),
                    Some(after_fork_in_parent),
                    Some(after_fork_in_child),
                )
            };
        });
        module::initialize()
    })
}

/// `C_Finalize`.
///
/// # Safety
/// No pointer is dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_Finalize(pReserved: *mut c_void) -> CK_RV {
    guard(|| {
        if !pReserved.is_null() {
            return Err(err(CKR_ARGUMENTS_BAD));
        }
        module::finalize()
    })
}

/// `CK_INFO.libraryDescription` (32 bytes at most): says which crypto back
/// end the module was built with, so tests and tools can tell.
#[cfg(not(feature = "aws-lc"))]
const LIBRARY_DESCRIPTION: &str = "dalek-pkcs11 software token";
#[cfg(feature = "aws-lc")]
const LIBRARY_DESCRIPTION: &str = "dalek-pkcs11 token (aws-lc)";

fn fill_info(info: &mut CK_INFO, version: CK_VERSION) {
    info.cryptokiVersion = version;
    pad(&mut info.manufacturerID, MANUFACTURER);
    info.flags = 0;
    pad(&mut info.libraryDescription, LIBRARY_DESCRIPTION);
    info.libraryVersion = LIBRARY_VERSION;
}

/// `C_GetInfo` of the 3.0 interface (and the exported symbol).
///
/// # Safety
/// `pInfo` null or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_GetInfo(pInfo: *mut CK_INFO) -> CK_RV {
    guard(|| {
        module::with(|_| {
            // SAFETY: caller guarantees a valid CK_INFO if non-null.
            fill_info(unsafe { out(pInfo)? }, CK_VERSION { major: 3, minor: 0 });
            Ok(())
        })
    })
}

/// `C_GetInfo` as reached through the 3.2 function list: reports 3.2.
///
/// # Safety
/// `pInfo` null or valid for writes.
pub unsafe extern "C" fn get_info_v3_2(pInfo: *mut CK_INFO) -> CK_RV {
    guard(|| {
        module::with(|_| {
            // SAFETY: caller guarantees a valid CK_INFO if non-null.
            fill_info(unsafe { out(pInfo)? }, CK_VERSION { major: 3, minor: 2 });
            Ok(())
        })
    })
}

/// `C_GetInfo` as reached through the 2.40 function list: reports 2.40.
///
/// # Safety
/// `pInfo` null or valid for writes.
pub unsafe extern "C" fn get_info_v2(pInfo: *mut CK_INFO) -> CK_RV {
    guard(|| {
        module::with(|_| {
            // SAFETY: caller guarantees a valid CK_INFO if non-null.
            fill_info(
                unsafe { out(pInfo)? },
                CK_VERSION {
                    major: 2,
                    minor: 40,
                },
            );
            Ok(())
        })
    })
}

/// `C_GetFunctionStatus`: legacy; always `CKR_FUNCTION_NOT_PARALLEL` (§5.16).
///
/// # Safety
/// No pointer is dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_GetFunctionStatus(hSession: CK_SESSION_HANDLE) -> CK_RV {
    guard(|| module::with(|m| m.session(hSession).and(Err(err(CKR_FUNCTION_NOT_PARALLEL)))))
}

/// `C_CancelFunction`: legacy; always `CKR_FUNCTION_NOT_PARALLEL` (§5.16).
///
/// # Safety
/// No pointer is dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_CancelFunction(hSession: CK_SESSION_HANDLE) -> CK_RV {
    guard(|| module::with(|m| m.session(hSession).and(Err(err(CKR_FUNCTION_NOT_PARALLEL)))))
}

#[cfg(test)]
mod tests {
    use super::*;

    unsafe extern "C" fn create(_: *mut *mut c_void) -> CK_RV {
        CKR_OK
    }
    unsafe extern "C" fn other(_: *mut c_void) -> CK_RV {
        CKR_OK
    }

    fn args(with_mutexes: bool, flags: CK_FLAGS) -> CK_C_INITIALIZE_ARGS {
        CK_C_INITIALIZE_ARGS {
            CreateMutex: with_mutexes.then_some(create as _),
            DestroyMutex: with_mutexes.then_some(other as _),
            LockMutex: with_mutexes.then_some(other as _),
            UnlockMutex: with_mutexes.then_some(other as _),
            flags,
            pReserved: std::ptr::null_mut(),
        }
    }

    #[test]
    fn locking_table() {
        assert!(check_init_args(None).is_ok());
        assert!(check_init_args(Some(&args(false, 0))).is_ok());
        assert!(check_init_args(Some(&args(false, CKF_OS_LOCKING_OK))).is_ok());
        assert!(check_init_args(Some(&args(true, CKF_OS_LOCKING_OK))).is_ok());
        assert_eq!(
            check_init_args(Some(&args(true, 0))).unwrap_err().rv(),
            CKR_CANT_LOCK
        );
        let mut partial = args(true, CKF_OS_LOCKING_OK);
        partial.LockMutex = None;
        assert_eq!(
            check_init_args(Some(&partial)).unwrap_err().rv(),
            CKR_ARGUMENTS_BAD
        );
        let mut reserved = args(false, 0);
        let mut x = 0u8;
        reserved.pReserved = (&mut x as *mut u8).cast();
        assert_eq!(
            check_init_args(Some(&reserved)).unwrap_err().rv(),
            CKR_ARGUMENTS_BAD
        );
    }
}
