//! The wrappers: one for every function of the 2.40 list but
//! `C_GetFunctionList`. A wrapper enters the shim (`Shim::enter`: counting,
//! crash, memory, hang, log), forwards to the real module, and then bends
//! what the real module answered where `P11_HOSTILE` says so. Only the
//! functions `P11_HOSTILE` names get their wrapper installed.

use cryptoki_sys::*;

use p11_shim_common::real::read_or_zero;

use crate::config::fill;
use crate::names::index;
use crate::state::{Shim, due, shim};

/// `overlong`: after a successful call that wrote into a buffer of `cap`
/// bytes, claim `cap + 4096`.
///
/// # Safety
/// `ol` is null or points to a writable `CK_ULONG` (the caller's length).
unsafe fn post_out(
    s: &Shim,
    i: usize,
    nth: u64,
    rv: CK_RV,
    o: *mut CK_BYTE,
    ol: *mut CK_ULONG,
    cap: CK_ULONG,
) {
    if rv == CKR_OK && !o.is_null() && !ol.is_null() && due(&s.conf.fns[i].overlong, nth).is_some()
    {
        // SAFETY: non-null, the caller's own length variable.
        unsafe { *ol = cap.saturating_add(4096) };
    }
}

/// `slot_count` / `mech_count`: a successful size query (NULL list) reports
/// the configured count.
///
/// # Safety
/// `n` is null or points to a writable `CK_ULONG`.
unsafe fn post_count<T>(s: &Shim, i: usize, nth: u64, rv: CK_RV, list: *mut T, n: *mut CK_ULONG) {
    if let (CKR_OK, true, false, Some(v)) = (
        rv,
        list.is_null(),
        n.is_null(),
        due(&s.conf.fns[i].count, nth),
    ) {
        // SAFETY: non-null, the caller's count variable.
        unsafe { *n = *v };
    }
}

/// `object_count`: a successful `C_FindObjects` reports the configured
/// number found, whatever the caller's maximum was.
///
/// # Safety
/// `n` is null or points to a writable `CK_ULONG`.
unsafe fn post_found(s: &Shim, i: usize, nth: u64, rv: CK_RV, n: *mut CK_ULONG) {
    if let (CKR_OK, false, Some(v)) = (rv, n.is_null(), due(&s.conf.fns[i].count, nth)) {
        // SAFETY: non-null, the caller's count variable.
        unsafe { *n = *v };
    }
}

/// `attr_len`: every attribute of a size query (NULL `pValue`) reports the
/// configured length.
///
/// # Safety
/// `t` is null or points to `n` writable `CK_ATTRIBUTE`s.
unsafe fn post_attrs(s: &Shim, i: usize, nth: u64, t: *mut CK_ATTRIBUTE, n: CK_ULONG) {
    let Some(v) = due(&s.conf.fns[i].count, nth) else {
        return;
    };
    if t.is_null() {
        return;
    }
    for k in 0..n as usize {
        // SAFETY: `t` holds `n` attributes (the caller's template).
        let a = unsafe { &mut *t.add(k) };
        if a.pValue.is_null() {
            a.ulValueLen = *v;
        }
    }
}

/// The text edits of `CK_TOKEN_INFO`.
///
/// # Safety
/// `p` is null or points to a writable `CK_TOKEN_INFO`.
unsafe fn post_token_info(s: &Shim, rv: CK_RV, p: *mut CK_TOKEN_INFO) {
    if rv != CKR_OK || p.is_null() {
        return;
    }
    // SAFETY: non-null; the real module filled it.
    let info = unsafe { &mut *p };
    let t = &s.conf.texts;
    if let Some(x) = &t.token_label {
        fill(&mut info.label, x);
    }
    if let Some(x) = &t.manufacturer {
        fill(&mut info.manufacturerID, x);
    }
    if let Some(x) = &t.model {
        fill(&mut info.model, x);
    }
}

/// The text edits of `CK_SLOT_INFO`.
///
/// # Safety
/// `p` is null or points to a writable `CK_SLOT_INFO`.
unsafe fn post_slot_info(s: &Shim, rv: CK_RV, p: *mut CK_SLOT_INFO) {
    if rv != CKR_OK || p.is_null() {
        return;
    }
    // SAFETY: non-null; the real module filled it.
    let info = unsafe { &mut *p };
    let t = &s.conf.texts;
    if let Some(x) = &t.slot_description {
        fill(&mut info.slotDescription, x);
    }
    if let Some(x) = &t.manufacturer {
        fill(&mut info.manufacturerID, x);
    }
}

/// The text edits of `CK_INFO`.
///
/// # Safety
/// `p` is null or points to a writable `CK_INFO`.
unsafe fn post_info(s: &Shim, rv: CK_RV, p: *mut CK_INFO) {
    if rv != CKR_OK || p.is_null() {
        return;
    }
    if let Some(x) = &s.conf.texts.manufacturer {
        // SAFETY: non-null; the real module filled it.
        fill(unsafe { &mut (*p).manufacturerID }, x);
    }
}

/// The forwarding call and what follows it, by kind (see `hooks!`).
macro_rules! forward {
    ($s:ident, $i:ident, $nth:ident, $f:ident, ($($a:ident),*)) => {
        // SAFETY: the caller's arguments, unchanged, to the real module's
        // implementation of the same function.
        unsafe { $f($($a),*) }
    };
    ($s:ident, $i:ident, $nth:ident, $f:ident, ($($a:ident),*), out($o:ident, $ol:ident)) => {{
        // SAFETY: the caller passes a valid length pointer or null.
        let cap = unsafe { read_or_zero($ol) };
        // SAFETY: as above, forwarded unchanged.
        let rv = unsafe { $f($($a),*) };
        // SAFETY: `$ol` is the caller's length pointer.
        unsafe { post_out($s, $i, $nth, rv, $o, $ol, cap) };
        rv
    }};
    ($s:ident, $i:ident, $nth:ident, $f:ident, ($($a:ident),*), count($l:ident, $n:ident)) => {{
        // SAFETY: forwarded unchanged.
        let rv = unsafe { $f($($a),*) };
        // SAFETY: `$n` is the caller's count pointer.
        unsafe { post_count($s, $i, $nth, rv, $l, $n) };
        rv
    }};
    ($s:ident, $i:ident, $nth:ident, $f:ident, ($($a:ident),*), found($n:ident)) => {{
        // SAFETY: forwarded unchanged.
        let rv = unsafe { $f($($a),*) };
        // SAFETY: `$n` is the caller's count pointer.
        unsafe { post_found($s, $i, $nth, rv, $n) };
        rv
    }};
    ($s:ident, $i:ident, $nth:ident, $f:ident, ($($a:ident),*), attrs($t:ident, $n:ident)) => {{
        // SAFETY: forwarded unchanged.
        let rv = unsafe { $f($($a),*) };
        // SAFETY: `$t` is the caller's template of `$n` attributes.
        unsafe { post_attrs($s, $i, $nth, $t, $n) };
        rv
    }};
    ($s:ident, $i:ident, $nth:ident, $f:ident, ($($a:ident),*), $post:ident($p:ident)) => {{
        // SAFETY: forwarded unchanged.
        let rv = unsafe { $f($($a),*) };
        // SAFETY: `$p` is the caller's out structure.
        unsafe { $post($s, rv, $p) };
        rv
    }};
}

/// A wrapper per function, `HOOKED` (their names) and `install`.
macro_rules! hooks {
    ($( $name:ident ( $($a:ident : $t:ty),* ) $(=> $kind:ident ( $($p:ident),* ))? ; )*) => {
        /// The functions with a wrapper (every one but `C_GetFunctionList`).
        #[cfg(test)]
        pub const HOOKED: &[&str] = &[$(stringify!($name)),*];

        /// The functions whose wrapper can claim an overlong output.
        #[cfg(test)]
        pub fn output_hooked() -> Vec<&'static str> {
            let mut v = Vec::new();
            $($( if stringify!($kind) == "out" { v.push(stringify!($name)); } )?)*
            v
        }

        $(
            #[allow(non_snake_case, unused_variables)]
            unsafe extern "C" fn $name($($a: $t),*) -> CK_RV {
                const I: usize = index(stringify!($name));
                let Some(s) = shim() else {
                    return CKR_GENERAL_ERROR;
                };
                let nth = s.enter(I);
                let Some(f) = s.real.$name else {
                    return CKR_FUNCTION_NOT_SUPPORTED;
                };
                forward!(s, I, nth, f, ($($a),*) $(, $kind($($p),*))?)
            }
        )*

        /// Put the wrapper of `name` into `list`; false for a function
        /// without one.
        pub fn install(list: &mut CK_FUNCTION_LIST, name: &str) -> bool {
            match name {
                $( stringify!($name) => { list.$name = Some($name); true } )*
                _ => false,
            }
        }
    };
}

type S = CK_SESSION_HANDLE;
type O = CK_OBJECT_HANDLE;
type B = *mut CK_BYTE;
type L = *mut CK_ULONG;
type U = CK_ULONG;
type M = *mut CK_MECHANISM;
type A = *mut CK_ATTRIBUTE;
type V = *mut std::ffi::c_void;

hooks! {
    C_Initialize(a: V);
    C_Finalize(a: V);
    C_GetInfo(i: *mut CK_INFO) => post_info(i);
    C_GetSlotList(p: CK_BBOOL, l: *mut CK_SLOT_ID, n: L) => count(l, n);
    C_GetSlotInfo(s: CK_SLOT_ID, i: *mut CK_SLOT_INFO) => post_slot_info(i);
    C_GetTokenInfo(s: CK_SLOT_ID, i: *mut CK_TOKEN_INFO) => post_token_info(i);
    C_GetMechanismList(s: CK_SLOT_ID, l: *mut CK_MECHANISM_TYPE, n: L) => count(l, n);
    C_GetMechanismInfo(s: CK_SLOT_ID, m: CK_MECHANISM_TYPE, i: *mut CK_MECHANISM_INFO);
    C_InitToken(s: CK_SLOT_ID, p: B, pl: U, l: B);
    C_InitPIN(s: S, p: B, pl: U);
    C_SetPIN(s: S, o: B, ol: U, n: B, nl: U);
    C_OpenSession(s: CK_SLOT_ID, f: CK_FLAGS, a: V, n: CK_NOTIFY, h: *mut S);
    C_CloseSession(s: S);
    C_CloseAllSessions(s: CK_SLOT_ID);
    C_GetSessionInfo(s: S, i: *mut CK_SESSION_INFO);
    C_GetOperationState(s: S, o: B, ol: L) => out(o, ol);
    C_SetOperationState(s: S, d: B, dl: U, e: O, k: O);
    C_Login(s: S, u: CK_USER_TYPE, p: B, pl: U);
    C_Logout(s: S);
    C_CreateObject(s: S, t: A, n: U, h: *mut O);
    C_CopyObject(s: S, o: O, t: A, n: U, h: *mut O);
    C_DestroyObject(s: S, o: O);
    C_GetObjectSize(s: S, o: O, n: L);
    C_GetAttributeValue(s: S, o: O, t: A, n: U) => attrs(t, n);
    C_SetAttributeValue(s: S, o: O, t: A, n: U);
    C_FindObjectsInit(s: S, t: A, n: U);
    C_FindObjects(s: S, h: *mut O, max: U, n: L) => found(n);
    C_FindObjectsFinal(s: S);
    C_EncryptInit(s: S, m: M, k: O);
    C_Encrypt(s: S, d: B, dl: U, o: B, ol: L) => out(o, ol);
    C_EncryptUpdate(s: S, d: B, dl: U, o: B, ol: L) => out(o, ol);
    C_EncryptFinal(s: S, o: B, ol: L) => out(o, ol);
    C_DecryptInit(s: S, m: M, k: O);
    C_Decrypt(s: S, d: B, dl: U, o: B, ol: L) => out(o, ol);
    C_DecryptUpdate(s: S, d: B, dl: U, o: B, ol: L) => out(o, ol);
    C_DecryptFinal(s: S, o: B, ol: L) => out(o, ol);
    C_DigestInit(s: S, m: M);
    C_Digest(s: S, d: B, dl: U, o: B, ol: L) => out(o, ol);
    C_DigestUpdate(s: S, d: B, dl: U);
    C_DigestKey(s: S, k: O);
    C_DigestFinal(s: S, o: B, ol: L) => out(o, ol);
    C_SignInit(s: S, m: M, k: O);
    C_Sign(s: S, d: B, dl: U, o: B, ol: L) => out(o, ol);
    C_SignUpdate(s: S, d: B, dl: U);
    C_SignFinal(s: S, o: B, ol: L) => out(o, ol);
    C_SignRecoverInit(s: S, m: M, k: O);
    C_SignRecover(s: S, d: B, dl: U, o: B, ol: L) => out(o, ol);
    C_VerifyInit(s: S, m: M, k: O);
    C_Verify(s: S, d: B, dl: U, g: B, gl: U);
    C_VerifyUpdate(s: S, d: B, dl: U);
    C_VerifyFinal(s: S, g: B, gl: U);
    C_VerifyRecoverInit(s: S, m: M, k: O);
    C_VerifyRecover(s: S, g: B, gl: U, o: B, ol: L) => out(o, ol);
    C_DigestEncryptUpdate(s: S, d: B, dl: U, o: B, ol: L) => out(o, ol);
    C_DecryptDigestUpdate(s: S, d: B, dl: U, o: B, ol: L) => out(o, ol);
    C_SignEncryptUpdate(s: S, d: B, dl: U, o: B, ol: L) => out(o, ol);
    C_DecryptVerifyUpdate(s: S, d: B, dl: U, o: B, ol: L) => out(o, ol);
    C_GenerateKey(s: S, m: M, t: A, n: U, h: *mut O);
    C_GenerateKeyPair(s: S, m: M, pt: A, pn: U, st: A, sn: U, ph: *mut O, sh: *mut O);
    C_WrapKey(s: S, m: M, w: O, k: O, o: B, ol: L) => out(o, ol);
    C_UnwrapKey(s: S, m: M, u: O, w: B, wl: U, t: A, n: U, h: *mut O);
    C_DeriveKey(s: S, m: M, b: O, t: A, n: U, h: *mut O);
    C_SeedRandom(s: S, d: B, dl: U);
    C_GenerateRandom(s: S, o: B, ol: U);
    C_GetFunctionStatus(s: S);
    C_CancelFunction(s: S);
    C_WaitForSlotEvent(f: CK_FLAGS, s: *mut CK_SLOT_ID, r: V);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::names::{FUNCTIONS, OUTPUT_FUNCTIONS};

    #[test]
    fn every_function_but_get_function_list_has_a_wrapper() {
        let want: Vec<&str> = FUNCTIONS
            .iter()
            .copied()
            .filter(|f| *f != "C_GetFunctionList")
            .collect();
        assert_eq!(HOOKED, &want[..]);
        // SAFETY: all-zero is a valid CK_FUNCTION_LIST (every entry None).
        let mut list: CK_FUNCTION_LIST = unsafe { std::mem::zeroed() };
        for f in HOOKED {
            assert!(install(&mut list, f), "{f}");
        }
        assert!(!install(&mut list, "C_GetFunctionList"));
        assert!(list.C_Sign.is_some() && list.C_WaitForSlotEvent.is_some());
    }

    #[test]
    fn the_overlong_functions_are_the_ones_with_an_output_length() {
        let mut a = output_hooked();
        let mut b = OUTPUT_FUNCTIONS.to_vec();
        a.sort();
        b.sort();
        assert_eq!(a, b);
    }
}
