//! `p11-hostile-shim`: a PKCS#11 module that wraps a real one (SoftHSM2 in
//! the tests) and misbehaves on command, so that tests can check that
//! hsm-bench survives any module (issue 26). Test-only; never install it.
//!
//! Configuration, read once on the first `C_GetFunctionList`,
//! `C_GetInterfaceList` or `C_GetInterface`:
//!
//! - `P11_HOSTILE_MODULE`: path of the real module (required).
//! - `P11_HOSTILE`: comma-separated misbehaviours, several at once. Counts are
//!   decimal or `0x`-hex. `@N` after a value means "the first N calls of that
//!   function behave" (default 0: misbehave from the first call); it is
//!   accepted on the count, `overlong`, `crash`, `hang` and `oom` entries.
//!   - `slot_count=N`: `C_GetSlotList` with a NULL list reports N slots (CKR_OK).
//!   - `mech_count=N`: `C_GetMechanismList` with a NULL list reports N mechanisms.
//!   - `object_count=N`: `C_FindObjects` reports N found, whatever the caller's
//!     maximum (the handles the real module wrote stay).
//!   - `attr_len=N`: `C_GetAttributeValue` reports N as the length of every
//!     attribute whose `pValue` is NULL (the size query), with the real
//!     module's return value.
//!   - `overlong=C_Fn`: after the real call returns CKR_OK having written into
//!     a buffer, `*pulLen` claims the caller's buffer length + 4096. For the
//!     functions with an output length pointer (`C_Sign`, `C_SignFinal`,
//!     `C_SignRecover`, `C_VerifyRecover`, `C_Digest`, `C_DigestFinal`,
//!     `C_Encrypt`, `C_EncryptUpdate`, `C_EncryptFinal`, `C_Decrypt`,
//!     `C_DecryptUpdate`, `C_DecryptFinal`, `C_WrapKey`,
//!     `C_GetOperationState` and the four dual-function updates); not
//!     `C_GenerateRandom`, which has none. Size queries (NULL buffer) and
//!     failed calls are left alone.
//!   - `null_function_list`: `C_GetFunctionList` returns CKR_OK and sets
//!     `*ppFunctionList` to NULL.
//!   - `null_interface`: `C_GetInterface` and `C_GetInterfaceList` hand out the
//!     "PKCS 11" interface with a NULL `pFunctionList`.
//!   - `null_fn=C_Fn`: the function list's entry for C_Fn is NULL (any function
//!     of the 2.40 list; repeat the entry for several).
//!   - `token_label=TEXT`, `manufacturer=TEXT`, `model=TEXT`,
//!     `slot_description=TEXT`: replace the field (`CK_TOKEN_INFO.label`;
//!     `manufacturerID` of `CK_TOKEN_INFO`, `CK_SLOT_INFO` and `CK_INFO`;
//!     `CK_TOKEN_INFO.model`; `CK_SLOT_INFO.slotDescription`), padded with
//!     spaces and cut to the field's size. Escapes: `\e` (ESC), `\a` (BEL),
//!     `\n`, `\r`, `\t`, `\\`, `\xHH` (any byte, also invalid UTF-8; `\x2c`
//!     for a comma).
//!   - `crash=C_Fn:KIND[@N]`: call N+1 of C_Fn ends the process: `segv` (a
//!     write into the null page, SIGSEGV), `abort` (`std::process::abort`,
//!     SIGABRT) or `exit` (`_exit(3)`: status 3, no destructors).
//!   - `hang=C_Fn:DURATION[@N]`: from call N+1 on, C_Fn sleeps DURATION
//!     (`ns`, `us`, `ms`, `s`; at most a day) before forwarding.
//!   - `oom=C_Fn[@N]`: call N+1 of C_Fn allocates and touches memory in 64 MiB
//!     blocks until the allocator refuses, then aborts as the Rust runtime
//!     does ("memory allocation of N bytes failed", SIGABRT). Run it under a
//!     memory limit (RLIMIT_AS, a cgroup): without one the kernel's OOM
//!     killer ends the process, or another one, first.
//!
//!   A bad entry makes `C_GetFunctionList` (and `C_GetInterface`,
//!   `C_GetInterfaceList`) return CKR_GENERAL_ERROR and print one line to
//!   stderr naming the entry.
//! - `P11_HOSTILE_COUNT_FILE` (optional): a file to which the shim appends a
//!   line `C_Fn` for every call of a wrapped function it forwards (after any
//!   hang; a crashing call is not forwarded), so a test can see how far a run
//!   got. The wrapped functions are the ones `P11_HOSTILE` names, directly or
//!   through a count (`C_GetSlotList`, `C_GetMechanismList`, `C_FindObjects`,
//!   `C_GetAttributeValue`) or a text field (`C_GetTokenInfo`,
//!   `C_GetSlotInfo`, `C_GetInfo`).
//!
//! The shim exports `C_GetFunctionList` (a 2.40 list: the real module's
//! entries, the named ones replaced by wrappers or NULL), and
//! `C_GetInterfaceList` / `C_GetInterface` (PKCS#11 3.0 §5.4) offering one
//! interface, "PKCS 11" 2.40, on the same list; `C_GetInterface` for another
//! name is forwarded to the real module when it has `C_GetInterface`.
//!
//! Files: `names.rs` (the entries of the list), `config.rs` (`P11_HOSTILE`),
//! `state.rs` (the loaded shim, call counters, crash/oom/hang), `hooks.rs`
//! (the wrappers), this file (loading and the exported entry points). What
//! it shares with `p11-delay-shim` (the list's names, numbers and durations,
//! loading the real module) is in `p11-shim-common`.

mod config;
mod hooks;
mod names;
mod state;

use std::ptr;
use std::sync::Mutex;

use cryptoki_sys::*;

use crate::config::Config;
use crate::names::{FUNCTIONS, set_null};
use crate::state::{GetInterfaceFn, Interface, SHIM, Shim};

/// The interface name the shim offers (NUL-terminated).
static PKCS11_NAME: [u8; 8] = *b"PKCS 11\0";

/// The functions whose wrapper `conf` needs.
fn wrapped(conf: &Config) -> Vec<&'static str> {
    let texts = &conf.texts;
    let mut out: Vec<&str> = FUNCTIONS
        .iter()
        .zip(&conf.fns)
        .filter(|(_, f)| f.active())
        .map(|(n, _)| *n)
        .collect();
    let mut add = |name: &'static str, on: bool| {
        if on && !out.contains(&name) {
            out.push(name);
        }
    };
    add(
        "C_GetTokenInfo",
        texts.token_label.is_some() || texts.manufacturer.is_some() || texts.model.is_some(),
    );
    add(
        "C_GetSlotInfo",
        texts.slot_description.is_some() || texts.manufacturer.is_some(),
    );
    add("C_GetInfo", texts.manufacturer.is_some());
    out
}

fn load() -> Result<Shim, String> {
    let conf = config::parse(&std::env::var("P11_HOSTILE").unwrap_or_default())?;
    let path = std::env::var_os("P11_HOSTILE_MODULE").ok_or("P11_HOSTILE_MODULE is not set")?;
    let count_file = match std::env::var_os("P11_HOSTILE_COUNT_FILE") {
        Some(p) => Some(Mutex::new(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&p)
                .map_err(|e| format!("P11_HOSTILE_COUNT_FILE {}: {e}", p.to_string_lossy()))?,
        )),
        None => None,
    };
    let (lib, real) = p11_shim_common::real::load(&path)?;
    // SAFETY: the symbol, when present, has the PKCS#11 3.0 signature.
    let real_get_interface = unsafe { lib.get::<GetInterfaceFn>(b"C_GetInterface\0") }
        .ok()
        .map(|s| *s);
    let mut list = real;
    list.version = CK_VERSION {
        major: 2,
        minor: 40,
    };
    list.C_GetFunctionList = Some(C_GetFunctionList);
    for name in wrapped(&conf) {
        hooks::install(&mut list, name);
    }
    for &i in &conf.null_fns {
        set_null(&mut list, FUNCTIONS[i]);
    }
    Ok(Shim {
        list,
        real,
        conf,
        count_file,
        real_get_interface,
        _lib: lib,
    })
}

/// The loaded shim, or CKR_GENERAL_ERROR after printing why not.
fn loaded() -> Result<&'static Shim, CK_RV> {
    match SHIM.get_or_init(load) {
        Ok(s) => Ok(s),
        Err(e) => {
            eprintln!("p11-hostile-shim: {e}");
            Err(CKR_GENERAL_ERROR)
        }
    }
}

/// The "PKCS 11" interface as handed out: the shim's list, or NULL with
/// `null_interface`.
fn interface(s: &'static Shim) -> CK_INTERFACE {
    CK_INTERFACE {
        pInterfaceName: PKCS11_NAME.as_ptr() as *mut CK_UTF8CHAR,
        pFunctionList: if s.conf.null_interface {
            ptr::null_mut()
        } else {
            &s.list as *const CK_FUNCTION_LIST as *mut std::ffi::c_void
        },
        flags: 0,
    }
}

/// The module's entry point (base spec §5.4): the real module's function list
/// with the named entries replaced, or NULL with `null_function_list`.
///
/// # Safety
/// `pp` must be a valid pointer to a `CK_FUNCTION_LIST_PTR` (PKCS#11 contract).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_GetFunctionList(pp: *mut CK_FUNCTION_LIST_PTR) -> CK_RV {
    if pp.is_null() {
        return CKR_ARGUMENTS_BAD;
    }
    let s = match loaded() {
        Ok(s) => s,
        Err(rv) => return rv,
    };
    let list = if s.conf.null_function_list {
        ptr::null_mut()
    } else {
        &s.list as *const CK_FUNCTION_LIST as *mut CK_FUNCTION_LIST
    };
    // SAFETY: `pp` is non-null and valid per the PKCS#11 contract; the list
    // lives in a static for the rest of the process.
    unsafe { *pp = list };
    CKR_OK
}

/// `C_GetInterfaceList` (3.0 §5.4): the one "PKCS 11" interface.
///
/// # Safety
/// `list` is null or points to `*count` writable `CK_INTERFACE`s; `count` is
/// a valid `CK_ULONG` pointer (PKCS#11 contract).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_GetInterfaceList(
    list: *mut CK_INTERFACE,
    count: *mut CK_ULONG,
) -> CK_RV {
    if count.is_null() {
        return CKR_ARGUMENTS_BAD;
    }
    let s = match loaded() {
        Ok(s) => s,
        Err(rv) => return rv,
    };
    // SAFETY: `count` is non-null and valid per the contract.
    let room = unsafe { *count };
    // SAFETY: as above.
    unsafe { *count = 1 };
    if list.is_null() {
        return CKR_OK;
    }
    if room < 1 {
        return CKR_BUFFER_TOO_SMALL;
    }
    // SAFETY: the caller said `list` holds `room` >= 1 interfaces.
    unsafe { *list = interface(s) };
    CKR_OK
}

/// `C_GetInterface` (3.0 §5.4): "PKCS 11" (or no name) at version 2.x is the
/// shim's interface; another name goes to the real module's `C_GetInterface`.
///
/// # Safety
/// `name` is null or NUL-terminated; `version` is null or valid; `pp` is a
/// valid `CK_INTERFACE_PTR` pointer (PKCS#11 contract).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_GetInterface(
    name: *mut CK_UTF8CHAR,
    version: *mut CK_VERSION,
    pp: *mut *mut CK_INTERFACE,
    flags: CK_FLAGS,
) -> CK_RV {
    if pp.is_null() {
        return CKR_ARGUMENTS_BAD;
    }
    let s = match loaded() {
        Ok(s) => s,
        Err(rv) => return rv,
    };
    // SAFETY: a non-null name is NUL-terminated per the contract.
    let ours = name.is_null()
        || unsafe { std::ffi::CStr::from_ptr(name as *const _) }.to_bytes() == b"PKCS 11";
    if !ours {
        return match s.real_get_interface {
            // SAFETY: the caller's arguments, unchanged.
            Some(f) => unsafe { f(name, version, pp, flags) },
            None => CKR_ARGUMENTS_BAD,
        };
    }
    // SAFETY: a non-null version is valid per the contract.
    if !version.is_null() && unsafe { (*version).major } != 2 {
        return CKR_ARGUMENTS_BAD;
    }
    static HANDED_OUT: std::sync::OnceLock<Interface> = std::sync::OnceLock::new();
    let i = HANDED_OUT.get_or_init(|| Interface(interface(s)));
    // SAFETY: `pp` is non-null; the interface lives in a static.
    unsafe { *pp = &i.0 as *const CK_INTERFACE as *mut CK_INTERFACE };
    CKR_OK
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_and_counts_pick_the_functions_to_wrap() {
        let c = config::parse("slot_count=5,model=m,hang=C_Sign:1ms").unwrap();
        let w = wrapped(&c);
        for f in ["C_GetSlotList", "C_GetTokenInfo", "C_Sign"] {
            assert!(w.contains(&f), "{f}: {w:?}");
        }
        assert!(!w.contains(&"C_GetSlotInfo"));
        let c = config::parse("manufacturer=x").unwrap();
        assert_eq!(
            wrapped(&c),
            ["C_GetTokenInfo", "C_GetSlotInfo", "C_GetInfo"]
        );
        assert!(wrapped(&config::parse("null_fn=C_Sign").unwrap()).is_empty());
    }
}
