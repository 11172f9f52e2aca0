//! `p11-delay-shim`: a PKCS#11 module that wraps another one and slows chosen calls
//! down, so tests can check that a slower module is measured as slower (and that a
//! regression gate trips).
//!
//! Configuration (read on the first `C_GetFunctionList`):
//! - `P11_DELAY_SHIM_MODULE`: path of the real module (required).
//! - `P11_DELAY_SHIM_DELAY`: comma-separated `C_Function=DURATION` entries, e.g.
//!   `C_Sign=200us,C_Digest=1ms` (units ns, us, ms, s; at most 60 s). The
//!   delay is a busy wait before the call is forwarded, so it is precise and
//!   independent of the scheduler.
//! - `P11_DELAY_SHIM_HIDE`: comma-separated mechanisms (`CKM_EDDSA` or `0x1057`) to
//!   remove from `C_GetMechanismList` (and to refuse in `C_GetMechanismInfo`), to
//!   simulate a token without them.
//! - `P11_DELAY_SHIM_TOKEN_INFO`: rewrite what `C_GetTokenInfo` returns, to
//!   simulate tokens that fill `CK_TOKEN_INFO` differently (opencryptoki,
//!   tpm2-pkcs11, hardware HSMs). Comma-separated items:
//!   - `utc=TEXT`: set `utcTime` to TEXT (at most 16 bytes, no commas),
//!     NUL-padded, and set `CKF_CLOCK_ON_TOKEN`, e.g. `utc=13:06:00` as
//!     opencryptoki sends it;
//!   - `label_nul=1`: pad the label with NUL bytes instead of spaces;
//!   - `flags_set=0x…`: OR these bits into `flags` (e.g. `0x40000`,
//!     `CKF_USER_PIN_LOCKED`);
//!   - `flags_clear=0x…`: clear these bits of `flags` (applied after `flags_set`);
//!   - `rv=0x…`: fail every `C_GetTokenInfo` with this return value instead
//!     (e.g. `rv=0x30`, `CKR_DEVICE_ERROR`).
//!
//!   Numbers are hexadecimal with `0x` or decimal.
//! - `P11_DELAY_SHIM_FAIL`: comma-separated `C_Function=RV` entries, e.g.
//!   `C_GenerateRandom=0x30`: that function returns RV (hex with `0x` or
//!   decimal, not 0) without calling the real module, to simulate a token
//!   whose operation fails.
//! - `P11_DELAY_SHIM_CALL_LOG`: path of a file to which the shim appends one
//!   line per `C_Login` call (`C_Login`), so tests can check that an application
//!   did or did not try to log in.
//!
//! - `P11_DELAY_SHIM_FLIP`: comma-separated functions with an output buffer
//!   (`C_Sign`, `C_Encrypt`, `C_Decrypt`, `C_Digest`, `C_GenerateRandom`,
//!   `C_WrapKey`) or
//!   `all`: after the real call returns `CKR_OK` having written a non-empty
//!   buffer, the shim flips the lowest bit of the middle output byte. Size
//!   queries (a null buffer) and failed calls are left alone. This simulates a
//!   token that returns wrong results, so tests can check that every result is
//!   checked.
//! - `P11_DELAY_SHIM_FLIP_AFTER`: leave the first N written outputs of each
//!   flipped function alone (default 0), e.g. `1` to let a benchmark's
//!   preparation pass and corrupt only the timed calls.
//! - `P11_DELAY_SHIM_SPY_GUARD=1`: keeps calls that OpenSC's `pkcs11-spy`
//!   misreads away from it, when the shim sits in front of the spy
//!   (`provider/tests/interop/java-tls.sh` traces a Java TLS handshake so):
//!   - a `C_DeriveKey` whose `phKey` is NULL is forwarded with a pointer to a
//!     throw-away handle. The TLS key-and-MAC mechanisms return their handles
//!     in the parameter and JDK's SunPKCS11 passes NULL; the spy reads
//!     `*phKey` after every successful `C_DeriveKey`;
//!   - `C_EncryptInit` / `C_DecryptInit` with `CKM_AES_GCM` and a parameter
//!     that is not a `CK_GCM_PARAMS` (JDK's first try, the 40-byte layout
//!     without `ulIvBits`) return `CKR_MECHANISM_PARAM_INVALID`, as a module
//!     of the 3.x layout does, without reaching the spy, which reads every
//!     GCM parameter as a `CK_GCM_PARAMS` and follows a length as a pointer.
//!
//! Only `C_GetFunctionList` is exported (a 2.40 function list), which is what
//! cryptoki falls back to when a module has no `C_GetInterface`. Every entry of the
//! real list is copied; the chosen entries are replaced by wrappers.
//! What the shim shares with `p11-hostile-shim` (numbers, durations, names
//! of the function list, loading the real module) is in `p11-shim-common`.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use cryptoki_sys::*;
use p11_shim_common::names::{index_in, position};
use p11_shim_common::parse::{parse_duration, parse_number};
use p11_shim_common::real::read_or_zero;

/// The longest delay `P11_DELAY_SHIM_DELAY` takes: a minute.
pub const MAX_DELAY: Duration = Duration::from_secs(60);

/// Parse `C_Sign=200us,C_Digest=1ms` into (function, delay) pairs, checking the
/// function names against the ones the shim can delay.
pub fn parse_delays(spec: &str) -> Result<Vec<(String, Duration)>, String> {
    parse_hook_entries(spec, "DURATION", |v| parse_duration(v, MAX_DELAY))
}

/// Parse `C_Function=VALUE` entries, checking the function names against the
/// ones the shim can hook.
fn parse_hook_entries<T>(
    spec: &str,
    what: &str,
    value: impl Fn(&str) -> Result<T, String>,
) -> Result<Vec<(String, T)>, String> {
    let mut out = Vec::new();
    for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (name, v) = item
            .split_once('=')
            .ok_or_else(|| format!("'{item}' is not C_Function={what}"))?;
        let name = name.trim();
        if hook_index(name).is_none() {
            return Err(format!(
                "cannot hook '{name}' (can hook: {})",
                HOOKABLE.join(", ")
            ));
        }
        out.push((name.to_string(), value(v)?));
    }
    Ok(out)
}

/// Mechanism names the shim knows for `P11_DELAY_SHIM_HIDE` (numbers work for all).
const MECH_NAMES: &[(&str, CK_MECHANISM_TYPE)] = &[
    ("CKM_EDDSA", CKM_EDDSA),
    ("CKM_EC_EDWARDS_KEY_PAIR_GEN", CKM_EC_EDWARDS_KEY_PAIR_GEN),
    ("CKM_ECDSA", CKM_ECDSA),
    ("CKM_EC_KEY_PAIR_GEN", CKM_EC_KEY_PAIR_GEN),
    ("CKM_RSA_PKCS_KEY_PAIR_GEN", CKM_RSA_PKCS_KEY_PAIR_GEN),
    ("CKM_SHA256_RSA_PKCS", CKM_SHA256_RSA_PKCS),
    ("CKM_SHA256_RSA_PKCS_PSS", CKM_SHA256_RSA_PKCS_PSS),
    ("CKM_RSA_PKCS_OAEP", CKM_RSA_PKCS_OAEP),
    ("CKM_AES_KEY_GEN", CKM_AES_KEY_GEN),
    ("CKM_AES_GCM", CKM_AES_GCM),
    ("CKM_AES_CBC", CKM_AES_CBC),
    ("CKM_AES_CMAC", CKM_AES_CMAC),
    ("CKM_SHA256", CKM_SHA256),
    ("CKM_SHA384", CKM_SHA384),
    ("CKM_SHA512", CKM_SHA512),
    ("CKM_SHA256_HMAC", CKM_SHA256_HMAC),
    ("CKM_SHA512_HMAC", CKM_SHA512_HMAC),
];

/// Parse `CKM_EDDSA,0x1057` into mechanism numbers.
pub fn parse_mechanisms(spec: &str) -> Result<Vec<CK_MECHANISM_TYPE>, String> {
    spec.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
                CK_MECHANISM_TYPE::from_str_radix(h, 16).map_err(|_| format!("bad mechanism '{s}'"))
            } else if let Ok(n) = s.parse::<CK_MECHANISM_TYPE>() {
                Ok(n)
            } else {
                MECH_NAMES
                    .iter()
                    .find(|(n, _)| *n == s)
                    .map(|(_, v)| *v)
                    .ok_or_else(|| format!("unknown mechanism '{s}' (use its number)"))
            }
        })
        .collect()
}

/// Parse `C_Sign=0x30,C_Digest=5` into (function, return value) pairs.
pub fn parse_fails(spec: &str) -> Result<Vec<(String, CK_RV)>, String> {
    parse_hook_entries(spec, "RV", |v| match parse_number(v)? {
        0 => Err(format!("'{v}': RV must not be CKR_OK")),
        rv => Ok(rv),
    })
}

/// How `P11_DELAY_SHIM_TOKEN_INFO` rewrites `C_GetTokenInfo`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TokenInfoEdit {
    /// New `utcTime` bytes (NUL-padded to 16), with `CKF_CLOCK_ON_TOKEN`.
    pub utc: Option<Vec<u8>>,
    /// Pad the label with NULs instead of spaces.
    pub label_nul: bool,
    /// Flag bits to set.
    pub flags_set: CK_FLAGS,
    /// Flag bits to clear.
    pub flags_clear: CK_FLAGS,
    /// Fail `C_GetTokenInfo` with this return value.
    pub rv: Option<CK_RV>,
}

/// Parse `utc=13:06:00,label_nul=1,flags_set=0x40000,flags_clear=0x8,rv=0x30`.
pub fn parse_token_info(spec: &str) -> Result<TokenInfoEdit, String> {
    let mut e = TokenInfoEdit::default();
    for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (k, v) = item
            .split_once('=')
            .ok_or_else(|| format!("'{item}' is not KEY=VALUE"))?;
        match k.trim() {
            "utc" if v.len() <= 16 => e.utc = Some(v.as_bytes().to_vec()),
            "utc" => return Err(format!("utc '{v}' is longer than 16 bytes")),
            "label_nul" => e.label_nul = parse_number(v)? != 0,
            "flags_set" => e.flags_set = parse_number(v)?,
            "flags_clear" => e.flags_clear = parse_number(v)?,
            "rv" => e.rv = Some(parse_number(v)?),
            other => {
                return Err(format!(
                    "unknown token info item '{other}' (utc, label_nul, flags_set, flags_clear, rv)"
                ));
            }
        }
    }
    Ok(e)
}

impl TokenInfoEdit {
    /// Rewrite `info` as configured.
    pub fn apply(&self, info: &mut CK_TOKEN_INFO) {
        if let Some(utc) = &self.utc {
            info.utcTime = [0; 16];
            info.utcTime[..utc.len()].copy_from_slice(utc);
            info.flags |= CKF_CLOCK_ON_TOKEN;
        }
        if self.label_nul {
            let end = info
                .label
                .iter()
                .rposition(|&b| b != b' ')
                .map_or(0, |i| i + 1);
            info.label[end..].fill(0);
        }
        info.flags |= self.flags_set;
        info.flags &= !self.flags_clear;
    }
}

struct Shim {
    /// The list handed to the application.
    list: CK_FUNCTION_LIST,
    /// The real module's list.
    real: CK_FUNCTION_LIST,
    hidden: Vec<CK_MECHANISM_TYPE>,
    token_info: Option<TokenInfoEdit>,
    call_log: Option<std::path::PathBuf>,
    _lib: libloading::Library,
}

static SHIM: OnceLock<Result<Shim, String>> = OnceLock::new();

/// Outputs of each flipped function left alone before flipping starts.
static FLIP_AFTER: AtomicU64 = AtomicU64::new(0);

fn shim() -> Option<&'static Shim> {
    SHIM.get().and_then(|r| r.as_ref().ok())
}

/// Busy-wait for `ns` nanoseconds.
#[inline]
fn spin(ns: u64) {
    if ns == 0 {
        return;
    }
    let t = Instant::now();
    let d = Duration::from_nanos(ns);
    while t.elapsed() < d {
        std::hint::spin_loop();
    }
}

/// The index of `name` in [`HOOKABLE`].
fn hook_index(name: &str) -> Option<usize> {
    position(HOOKABLE, name)
}

/// Flip the lowest bit of the middle byte of `buf[..n]` (nothing when `n` is 0).
///
/// # Safety
/// `buf` points to at least `n` writable bytes.
unsafe fn flip(buf: *mut CK_BYTE, n: usize) {
    if n > 0 {
        // SAFETY: n / 2 < n, inside the buffer.
        unsafe { *buf.add(n / 2) ^= 0x01 };
    }
}

/// The name of a function with an output buffer (used by `hooks!`).
macro_rules! flippable {
    ($name:expr, $out:ident) => {
        $name
    };
}

/// Parse `C_Sign,C_Digest` or `all` into the functions whose output the shim
/// corrupts (`P11_DELAY_SHIM_FLIP`).
pub fn parse_flips(spec: &str) -> Result<Vec<String>, String> {
    let names: Vec<&str> = spec
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    if names == ["all"] {
        return Ok(FLIPPABLE.iter().map(|s| s.to_string()).collect());
    }
    names
        .into_iter()
        .map(|n| {
            if FLIPPABLE.contains(&n) {
                Ok(n.to_string())
            } else {
                Err(format!(
                    "cannot flip the output of '{n}' (can flip: {}, or all)",
                    FLIPPABLE.join(", ")
                ))
            }
        })
        .collect()
}

/// Generates, for each listed function, a wrapper that waits for its configured
/// delay and then forwards to the real module, plus the table of names and the
/// installer that puts the wrapper into the function list.
macro_rules! hooks {
    ($( $name:ident ( $($arg:ident : $ty:ty),* ) $(=> $out:ident [ $len:expr ])? ; )*) => {
        /// Functions the shim can delay.
        pub const HOOKABLE: &[&str] = &[$(stringify!($name)),*];

        /// Functions with an output buffer, whose output the shim can corrupt.
        pub const FLIPPABLE: &[&str] = &[$($( flippable!(stringify!($name), $out) ,)?)*];

        static DELAYS: [AtomicU64; HOOKABLE.len()] = [const { AtomicU64::new(0) }; HOOKABLE.len()];
        static FLIPS: [AtomicBool; HOOKABLE.len()] = [const { AtomicBool::new(false) }; HOOKABLE.len()];
        static FLIP_SEEN: [AtomicU64; HOOKABLE.len()] = [const { AtomicU64::new(0) }; HOOKABLE.len()];
        static FAILS: [AtomicU64; HOOKABLE.len()] = [const { AtomicU64::new(0) }; HOOKABLE.len()];

        $(
            #[allow(non_snake_case)]
            unsafe extern "C" fn $name($($arg: $ty),*) -> CK_RV {
                const I: usize = index_in(HOOKABLE, stringify!($name));
                spin(DELAYS[I].load(Ordering::Relaxed));
                let fail = FAILS[I].load(Ordering::Relaxed);
                if fail != 0 {
                    return fail;
                }
                let rv = match shim().and_then(|s| s.real.$name) {
                    // SAFETY: forwarding the caller's arguments unchanged to the real
                    // module's implementation of the same function; the caller's
                    // obligations towards the arguments are the same.
                    Some(f) => unsafe { f($($arg),*) },
                    None => CKR_FUNCTION_NOT_SUPPORTED,
                };
                $(
                    if rv == CKR_OK && FLIPS[I].load(Ordering::Relaxed) && !$out.is_null() {
                        // SAFETY: on CKR_OK with a non-null buffer the real module wrote
                        // `$len` bytes to the caller's buffer (a null length pointer
                        // reads as 0).
                        #[allow(unused_unsafe)]
                        let n = unsafe { $len } as usize;
                        if n > 0 && FLIP_SEEN[I].fetch_add(1, Ordering::Relaxed) >= FLIP_AFTER.load(Ordering::Relaxed) {
                            // SAFETY: `n` bytes were written; flip stays inside them.
                            unsafe { flip($out, n) };
                        }
                    }
                )?
                rv
            }
        )*

        fn install(list: &mut CK_FUNCTION_LIST, name: &str) -> bool {
            match name {
                $( stringify!($name) => { list.$name = Some($name); true } )*
                _ => false,
            }
        }
    };
}

hooks! {
    C_SignInit(s: CK_SESSION_HANDLE, m: *mut CK_MECHANISM, k: CK_OBJECT_HANDLE);
    C_Sign(s: CK_SESSION_HANDLE, d: *mut CK_BYTE, dl: CK_ULONG, o: *mut CK_BYTE, ol: *mut CK_ULONG) => o[read_or_zero(ol)];
    C_VerifyInit(s: CK_SESSION_HANDLE, m: *mut CK_MECHANISM, k: CK_OBJECT_HANDLE);
    C_Verify(s: CK_SESSION_HANDLE, d: *mut CK_BYTE, dl: CK_ULONG, g: *mut CK_BYTE, gl: CK_ULONG);
    C_EncryptInit(s: CK_SESSION_HANDLE, m: *mut CK_MECHANISM, k: CK_OBJECT_HANDLE);
    C_Encrypt(s: CK_SESSION_HANDLE, d: *mut CK_BYTE, dl: CK_ULONG, o: *mut CK_BYTE, ol: *mut CK_ULONG) => o[read_or_zero(ol)];
    C_DecryptInit(s: CK_SESSION_HANDLE, m: *mut CK_MECHANISM, k: CK_OBJECT_HANDLE);
    C_Decrypt(s: CK_SESSION_HANDLE, d: *mut CK_BYTE, dl: CK_ULONG, o: *mut CK_BYTE, ol: *mut CK_ULONG) => o[read_or_zero(ol)];
    C_DigestInit(s: CK_SESSION_HANDLE, m: *mut CK_MECHANISM);
    C_Digest(s: CK_SESSION_HANDLE, d: *mut CK_BYTE, dl: CK_ULONG, o: *mut CK_BYTE, ol: *mut CK_ULONG) => o[read_or_zero(ol)];
    C_GenerateRandom(s: CK_SESSION_HANDLE, o: *mut CK_BYTE, ol: CK_ULONG) => o[ol];
    C_WrapKey(s: CK_SESSION_HANDLE, m: *mut CK_MECHANISM, w: CK_OBJECT_HANDLE, k: CK_OBJECT_HANDLE, o: *mut CK_BYTE, ol: *mut CK_ULONG) => o[read_or_zero(ol)];
    C_GenerateKey(s: CK_SESSION_HANDLE, m: *mut CK_MECHANISM, t: *mut CK_ATTRIBUTE, n: CK_ULONG, k: *mut CK_OBJECT_HANDLE);
    C_GenerateKeyPair(s: CK_SESSION_HANDLE, m: *mut CK_MECHANISM, pt: *mut CK_ATTRIBUTE, pn: CK_ULONG, st: *mut CK_ATTRIBUTE, sn: CK_ULONG, pk: *mut CK_OBJECT_HANDLE, sk: *mut CK_OBJECT_HANDLE);
    C_FindObjectsInit(s: CK_SESSION_HANDLE, t: *mut CK_ATTRIBUTE, n: CK_ULONG);
    C_GetSessionInfo(s: CK_SESSION_HANDLE, i: *mut CK_SESSION_INFO);
}

/// `C_GetMechanismList` without the hidden mechanisms.
unsafe extern "C" fn shim_get_mechanism_list(
    slot: CK_SLOT_ID,
    list: *mut CK_MECHANISM_TYPE,
    count: *mut CK_ULONG,
) -> CK_RV {
    let Some(s) = shim() else {
        return CKR_GENERAL_ERROR;
    };
    let Some(real) = s.real.C_GetMechanismList else {
        return CKR_FUNCTION_NOT_SUPPORTED;
    };
    if count.is_null() {
        return CKR_ARGUMENTS_BAD;
    }
    let mut n: CK_ULONG = 0;
    // SAFETY: a null list asks the real module for the count only.
    let rv = unsafe { real(slot, std::ptr::null_mut(), &mut n) };
    if rv != CKR_OK {
        return rv;
    }
    let mut all = vec![0 as CK_MECHANISM_TYPE; n as usize];
    // SAFETY: `all` has room for `n` entries, as the real module was told.
    let rv = unsafe { real(slot, all.as_mut_ptr(), &mut n) };
    if rv != CKR_OK {
        return rv;
    }
    all.truncate(n as usize);
    all.retain(|m| !s.hidden.contains(m));
    // SAFETY: `count` was checked non-null; the caller provides a valid CK_ULONG.
    let want = unsafe { *count };
    // SAFETY: as above.
    unsafe { *count = all.len() as CK_ULONG };
    if list.is_null() {
        return CKR_OK;
    }
    if (want as usize) < all.len() {
        return CKR_BUFFER_TOO_SMALL;
    }
    // SAFETY: the caller said `list` holds `want` >= all.len() entries.
    unsafe { std::ptr::copy_nonoverlapping(all.as_ptr(), list, all.len()) };
    CKR_OK
}

/// `C_GetMechanismInfo` refusing hidden mechanisms.
unsafe extern "C" fn shim_get_mechanism_info(
    slot: CK_SLOT_ID,
    m: CK_MECHANISM_TYPE,
    info: *mut CK_MECHANISM_INFO,
) -> CK_RV {
    let Some(s) = shim() else {
        return CKR_GENERAL_ERROR;
    };
    if s.hidden.contains(&m) {
        return CKR_MECHANISM_INVALID;
    }
    match s.real.C_GetMechanismInfo {
        // SAFETY: forwarding the caller's arguments unchanged.
        Some(f) => unsafe { f(slot, m, info) },
        None => CKR_FUNCTION_NOT_SUPPORTED,
    }
}

/// `C_GetTokenInfo` rewritten by `P11_DELAY_SHIM_TOKEN_INFO`.
unsafe extern "C" fn shim_get_token_info(slot: CK_SLOT_ID, info: *mut CK_TOKEN_INFO) -> CK_RV {
    let Some(s) = shim() else {
        return CKR_GENERAL_ERROR;
    };
    if let Some(rv) = s.token_info.as_ref().and_then(|e| e.rv) {
        return rv;
    }
    let Some(real) = s.real.C_GetTokenInfo else {
        return CKR_FUNCTION_NOT_SUPPORTED;
    };
    // SAFETY: forwarding the caller's arguments unchanged.
    let rv = unsafe { real(slot, info) };
    if rv == CKR_OK
        && let (Some(edit), false) = (&s.token_info, info.is_null())
    {
        // SAFETY: on CKR_OK the real module filled the caller's (non-null) structure.
        edit.apply(unsafe { &mut *info });
    }
    rv
}

/// `C_Login`, recorded in `P11_DELAY_SHIM_CALL_LOG`.
unsafe extern "C" fn shim_login(
    session: CK_SESSION_HANDLE,
    user: CK_USER_TYPE,
    pin: *mut CK_UTF8CHAR,
    pin_len: CK_ULONG,
) -> CK_RV {
    let Some(s) = shim() else {
        return CKR_GENERAL_ERROR;
    };
    if let Some(path) = &s.call_log {
        use std::io::Write;
        let logged = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .and_then(|mut f| f.write_all(b"C_Login\n"));
        if logged.is_err() {
            return CKR_GENERAL_ERROR;
        }
    }
    match s.real.C_Login {
        // SAFETY: forwarding the caller's arguments unchanged.
        Some(f) => unsafe { f(session, user, pin, pin_len) },
        None => CKR_FUNCTION_NOT_SUPPORTED,
    }
}

/// `C_DeriveKey` with a NULL `phKey` replaced by a throw-away handle
/// (`P11_DELAY_SHIM_SPY_GUARD`).
unsafe extern "C" fn guard_derive_key(
    session: CK_SESSION_HANDLE,
    mechanism: *mut CK_MECHANISM,
    base: CK_OBJECT_HANDLE,
    template: *mut CK_ATTRIBUTE,
    count: CK_ULONG,
    ph_key: *mut CK_OBJECT_HANDLE,
) -> CK_RV {
    let Some(real) = shim().and_then(|s| s.real.C_DeriveKey) else {
        return CKR_FUNCTION_NOT_SUPPORTED;
    };
    let mut unused = CK_INVALID_HANDLE;
    let ph_key = if ph_key.is_null() {
        &mut unused as *mut CK_OBJECT_HANDLE
    } else {
        ph_key
    };
    // SAFETY: the caller's arguments, with `ph_key` valid for writes (the
    // caller's or a local that outlives the call).
    unsafe { real(session, mechanism, base, template, count, ph_key) }
}

/// The real `C_EncryptInit` or `C_DecryptInit`, unless the mechanism is
/// `CKM_AES_GCM` with a parameter that is not a `CK_GCM_PARAMS`: then
/// `CKR_MECHANISM_PARAM_INVALID` (`P11_DELAY_SHIM_SPY_GUARD`).
///
/// # Safety
/// The caller's arguments, valid for `real`.
unsafe fn guard_init(
    real: CK_C_EncryptInit,
    session: CK_SESSION_HANDLE,
    m: *mut CK_MECHANISM,
    key: CK_OBJECT_HANDLE,
) -> CK_RV {
    // SAFETY: the caller's mechanism pointer, null or valid.
    let misfit = unsafe { m.as_ref() }.is_some_and(|m| {
        m.mechanism == CKM_AES_GCM
            && m.ulParameterLen as usize != std::mem::size_of::<CK_GCM_PARAMS>()
    });
    match real {
        _ if misfit => CKR_MECHANISM_PARAM_INVALID,
        // SAFETY: forwarding the caller's arguments unchanged.
        Some(f) => unsafe { f(session, m, key) },
        None => CKR_FUNCTION_NOT_SUPPORTED,
    }
}

/// `C_EncryptInit` through [`guard_init`].
unsafe extern "C" fn guard_encrypt_init(
    session: CK_SESSION_HANDLE,
    m: *mut CK_MECHANISM,
    key: CK_OBJECT_HANDLE,
) -> CK_RV {
    // SAFETY: forwarded caller guarantees.
    unsafe { guard_init(shim().and_then(|s| s.real.C_EncryptInit), session, m, key) }
}

/// `C_DecryptInit` through [`guard_init`].
unsafe extern "C" fn guard_decrypt_init(
    session: CK_SESSION_HANDLE,
    m: *mut CK_MECHANISM,
    key: CK_OBJECT_HANDLE,
) -> CK_RV {
    // SAFETY: forwarded caller guarantees.
    unsafe { guard_init(shim().and_then(|s| s.real.C_DecryptInit), session, m, key) }
}

fn load() -> Result<Shim, String> {
    let path =
        std::env::var_os("P11_DELAY_SHIM_MODULE").ok_or("P11_DELAY_SHIM_MODULE is not set")?;
    let delays = parse_delays(&std::env::var("P11_DELAY_SHIM_DELAY").unwrap_or_default())?;
    let fails = parse_fails(&std::env::var("P11_DELAY_SHIM_FAIL").unwrap_or_default())?;
    let hidden = parse_mechanisms(&std::env::var("P11_DELAY_SHIM_HIDE").unwrap_or_default())?;
    let token_info = std::env::var("P11_DELAY_SHIM_TOKEN_INFO")
        .ok()
        .map(|v| parse_token_info(&v))
        .transpose()?;
    let call_log = std::env::var_os("P11_DELAY_SHIM_CALL_LOG").map(std::path::PathBuf::from);
    let flips = parse_flips(&std::env::var("P11_DELAY_SHIM_FLIP").unwrap_or_default())?;
    let flip_after = match std::env::var("P11_DELAY_SHIM_FLIP_AFTER") {
        Ok(v) => v
            .trim()
            .parse::<u64>()
            .map_err(|_| format!("P11_DELAY_SHIM_FLIP_AFTER '{v}' is not a count"))?,
        Err(_) => 0,
    };
    FLIP_AFTER.store(flip_after, Ordering::Relaxed);
    let (lib, real) = p11_shim_common::real::load(&path)?;
    let mut list = real;
    list.C_GetFunctionList = Some(C_GetFunctionList);
    for (name, d) in &delays {
        install(&mut list, name);
        let i = hook_index(name).expect("checked by parse_delays");
        DELAYS[i].store(d.as_nanos() as u64, Ordering::Relaxed);
    }
    for name in &flips {
        install(&mut list, name);
        let i = hook_index(name).expect("every flippable function is hookable");
        FLIPS[i].store(true, Ordering::Relaxed);
    }
    for (name, rv) in &fails {
        install(&mut list, name);
        let i = hook_index(name).expect("checked by parse_fails");
        FAILS[i].store(*rv, Ordering::Relaxed);
    }
    if !hidden.is_empty() {
        list.C_GetMechanismList = Some(shim_get_mechanism_list);
        list.C_GetMechanismInfo = Some(shim_get_mechanism_info);
    }
    if token_info.is_some() {
        list.C_GetTokenInfo = Some(shim_get_token_info);
    }
    if call_log.is_some() {
        list.C_Login = Some(shim_login);
    }
    if std::env::var("P11_DELAY_SHIM_SPY_GUARD").is_ok_and(|v| v.trim() == "1") {
        list.C_DeriveKey = Some(guard_derive_key);
        list.C_EncryptInit = Some(guard_encrypt_init);
        list.C_DecryptInit = Some(guard_decrypt_init);
    }
    Ok(Shim {
        list,
        real,
        hidden,
        token_info,
        call_log,
        _lib: lib,
    })
}

/// The module's entry point: the real module's function list with the configured
/// entries replaced.
///
/// # Safety
/// `pp` must be a valid pointer to a `CK_FUNCTION_LIST_PTR` (PKCS#11 contract).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_GetFunctionList(pp: *mut CK_FUNCTION_LIST_PTR) -> CK_RV {
    if pp.is_null() {
        return CKR_ARGUMENTS_BAD;
    }
    match SHIM.get_or_init(load) {
        Ok(s) => {
            // SAFETY: `pp` is non-null and valid per the PKCS#11 contract; the list
            // lives in a static for the rest of the process.
            unsafe { *pp = &s.list as *const CK_FUNCTION_LIST as *mut CK_FUNCTION_LIST };
            CKR_OK
        }
        Err(e) => {
            eprintln!("p11-delay-shim: {e}");
            CKR_GENERAL_ERROR
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_are_durations_of_at_most_a_minute() {
        assert_eq!(
            parse_delays("C_Sign=1.5ms").unwrap()[0].1,
            Duration::from_micros(1500)
        );
        assert_eq!(parse_delays("C_Sign=60s").unwrap()[0].1, MAX_DELAY);
        let e = parse_delays("C_Sign=61s").unwrap_err();
        assert!(e.contains("out of range"), "{e}");
        assert!(parse_delays("C_Sign=200").is_err());
        assert!(parse_delays("C_Sign=5h").is_err());
    }

    #[test]
    fn delay_specs_parse_and_reject_unknown_functions() {
        let d = parse_delays("C_Sign=200us, C_Digest=1ms").unwrap();
        assert_eq!(d[0], ("C_Sign".to_string(), Duration::from_micros(200)));
        assert_eq!(d[1], ("C_Digest".to_string(), Duration::from_millis(1)));
        assert!(parse_delays("C_Nope=1ms").is_err());
        assert!(parse_delays("C_Sign").is_err());
        assert!(parse_delays("").unwrap().is_empty());
    }

    #[test]
    fn fail_specs_parse() {
        assert_eq!(
            parse_fails("C_Sign=0x30, C_Digest=5").unwrap(),
            vec![("C_Sign".to_string(), 0x30), ("C_Digest".to_string(), 5)]
        );
        assert!(parse_fails("C_Sign=0").is_err());
        assert!(parse_fails("C_Nope=0x30").is_err());
    }

    #[test]
    fn mechanisms_parse() {
        assert_eq!(
            parse_mechanisms("CKM_EDDSA,0x1087,4226").unwrap(),
            vec![CKM_EDDSA, 0x1087, 4226]
        );
        assert!(parse_mechanisms("CKM_NOPE").is_err());
    }

    #[test]
    fn token_info_edits_parse_and_apply() {
        let e =
            parse_token_info("utc=13:06:00, label_nul=1,flags_set=0x40000,flags_clear=4").unwrap();
        assert_eq!(e.utc.as_deref(), Some(&b"13:06:00"[..]));
        assert!(e.label_nul);
        assert_eq!((e.flags_set, e.flags_clear), (CKF_USER_PIN_LOCKED, 4));
        assert!(parse_token_info("utc=12345678901234567").is_err());
        assert!(parse_token_info("colour=red").is_err());
        assert!(parse_token_info("flags_set=zz").is_err());
        assert_eq!(
            parse_token_info("rv=0x30").unwrap().rv,
            Some(CKR_DEVICE_ERROR)
        );
        assert_eq!(parse_token_info("").unwrap(), TokenInfoEdit::default());

        // SAFETY: CK_TOKEN_INFO is a C struct of arrays and integers; all-zero is valid.
        let mut info: CK_TOKEN_INFO = unsafe { std::mem::zeroed() };
        info.label = [b' '; 32];
        info.label[..3].copy_from_slice(b"tok");
        info.utcTime = [b' '; 16];
        info.flags = 4 | CKF_TOKEN_INITIALIZED;
        e.apply(&mut info);
        assert_eq!(&info.label[..4], b"tok\0");
        assert!(info.label[3..].iter().all(|&b| b == 0));
        assert_eq!(&info.utcTime[..9], b"13:06:00\0");
        assert_eq!(
            info.flags,
            CKF_TOKEN_INITIALIZED | CKF_CLOCK_ON_TOKEN | CKF_USER_PIN_LOCKED
        );
    }

    #[test]
    fn every_hook_has_an_index_and_installs() {
        let mut list: CK_FUNCTION_LIST = unsafe_zeroed_list();
        for (i, h) in HOOKABLE.iter().enumerate() {
            assert_eq!(hook_index(h), Some(i));
            assert!(install(&mut list, h));
        }
        assert!(list.C_Sign.is_some() && list.C_GetSessionInfo.is_some());
        assert!(!install(&mut list, "C_Login"));
    }

    fn unsafe_zeroed_list() -> CK_FUNCTION_LIST {
        // SAFETY: CK_FUNCTION_LIST is a C struct of a version and nullable function
        // pointers (Option<fn>), for which all-zero bytes are a valid value (None).
        unsafe { std::mem::zeroed() }
    }

    #[test]
    fn flips_parse_and_flip_one_bit() {
        assert_eq!(
            parse_flips("C_Sign, C_Digest").unwrap(),
            vec!["C_Sign".to_string(), "C_Digest".to_string()]
        );
        assert_eq!(parse_flips("all").unwrap().len(), FLIPPABLE.len());
        assert_eq!(
            FLIPPABLE,
            [
                "C_Sign",
                "C_Encrypt",
                "C_Decrypt",
                "C_Digest",
                "C_GenerateRandom",
                "C_WrapKey"
            ]
        );
        assert!(parse_flips("C_Verify").unwrap_err().contains("can flip"));
        assert!(parse_flips("").unwrap().is_empty());
        let mut b = [0u8; 5];
        // SAFETY: `b` has 5 bytes.
        unsafe { flip(b.as_mut_ptr(), 5) };
        assert_eq!(b, [0, 0, 1, 0, 0]);
        // SAFETY: nothing is written for n = 0.
        unsafe { flip(b.as_mut_ptr(), 0) };
        assert_eq!(b, [0, 0, 1, 0, 0]);
    }

    #[test]
    fn spin_waits_at_least_the_delay() {
        let t = Instant::now();
        spin(200_000);
        assert!(t.elapsed() >= Duration::from_micros(200));
    }
}
