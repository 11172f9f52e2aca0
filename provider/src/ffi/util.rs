//! Turning the caller's raw pointers and lengths into Rust values, with
//! every check the spec asks for. This file and its siblings in `ffi/` are
//! the only places with `unsafe` code.

use crate::api::crypto::{self, OpKind};
use crate::api::session::Session;
use crate::attributes::{Attr, encode_template, is_template_attribute};
use crate::error::{Error, Result, err};
use cryptoki_sys::*;
use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Once;

thread_local! {
    /// True while this thread runs the body of an exported function.
    static IN_API: Cell<bool> = const { Cell::new(false) };
}

/// Installs, once, the panic hook that keeps the module silent: a panic in
/// a call into the module goes to the module's log (when logging is on) and
/// never to the host's standard error; any other panic goes to the hook
/// that was there before.
fn install_panic_hook() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if IN_API.with(Cell::get) {
                crate::log::error(format_args!("internal error: {info}"));
            } else {
                previous(info);
            }
        }));
    });
}

/// Runs the body of an exported function: a panic becomes
/// `CKR_GENERAL_ERROR` instead of unwinding into C, and prints nothing.
/// The body runs below this frame on stack that holds nothing of an
/// earlier call (wiped first if a [`guard_hot`] call of this thread left
/// its stack as it was), and the stack it used is wiped before the call
/// returns (after a panic too): no key schedule, parsed key or PIN
/// derivation of this call is left for a later one to pick up, or to carry
/// into a heap block it fills (see `crate::hygiene`).
#[inline]
pub fn guard(body: impl FnOnce() -> Result<()>) -> CK_RV {
    guarded(body, Some(crate::hygiene::wipe_stack))
}

/// [`guard`] for the functions that make secret keys, domain parameters or
/// unwrapped keys (`C_GenerateKey`, `C_UnwrapKey`), which may reach deeper
/// than other calls (`hygiene::DEEP_WIPE_LEN`): all of it is wiped.
/// `C_GenerateKeyPair` and `C_DeriveKey` take the normal [`guard`]: their
/// deep steps (RSA, DSA and pure-Rust EC and X25519 generation, parsing a
/// key's key-agreement form) wipe behind themselves
/// (`hygiene::wiping_deep`); Ed25519 and aws-lc's EC and X25519 generation
/// stay shallow.
#[inline]
pub fn guard_deep(body: impl FnOnce() -> Result<()>) -> CK_RV {
    guarded(body, Some(crate::hygiene::wipe_stack_deep))
}

/// [`guard`] for the calls that use a key already parsed and make nothing
/// that outlives the session's operation (`C_*Init`, `C_Sign`, `C_Encrypt`
/// and the other data calls, digests, random, searches): no wipe, so the
/// operations the benchmarks measure cost no more than their work. What
/// such a call leaves on this thread's stack is wiped before the thread's
/// next other call runs (among them `C_Logout`, `C_CloseSession` and
/// `C_Finalize`), so it never reaches a block another call fills; the heap
/// blocks these calls fill are given back zeroed (`ffi::alloc`).
#[inline]
pub fn guard_hot(body: impl FnOnce() -> Result<()>) -> CK_RV {
    guarded(body, None)
}

thread_local! {
    /// A [`guard_hot`] call ran on this thread since its stack was last wiped.
    static STACK_DIRTY: Cell<bool> = const { Cell::new(false) };
}

#[inline]
fn guarded(body: impl FnOnce() -> Result<()>, wipe: Option<fn()>) -> CK_RV {
    install_panic_hook();
    if wipe.is_some() && STACK_DIRTY.replace(false) {
        crate::hygiene::wipe_stack();
    }
    let outer = IN_API.replace(true);
    let result = catch_unwind(AssertUnwindSafe(|| crate::hygiene::below(body)));
    IN_API.set(outer);
    match wipe {
        Some(wipe) => wipe(),
        None => STACK_DIRTY.set(true),
    }
    match result {
        Ok(Ok(())) => CKR_OK,
        Ok(Err(e)) => e.rv(),
        Err(_) => CKR_GENERAL_ERROR,
    }
}

fn checked_len(len: CK_ULONG) -> Result<usize> {
    usize::try_from(len)
        .ok()
        .filter(|&l| l <= isize::MAX as usize)
        .ok_or(err(CKR_ARGUMENTS_BAD))
}

/// An input byte string. `NULL` is accepted only with length 0.
///
/// # Safety
/// `ptr` must be null or valid for reads of `len` bytes for `'a`.
pub unsafe fn bytes<'a>(ptr: *const u8, len: CK_ULONG) -> Result<&'a [u8]> {
    let len = checked_len(len)?;
    if len == 0 {
        return Ok(&[]);
    }
    if ptr.is_null() {
        return Err(err(CKR_ARGUMENTS_BAD));
    }
    // SAFETY: non-null, and the caller guarantees `len` readable bytes.
    Ok(unsafe { std::slice::from_raw_parts(ptr, len) })
}

/// An input byte string that must be there even when empty (a PIN, a
/// label): `NULL` is `CKR_ARGUMENTS_BAD` whatever the length.
///
/// # Safety
/// As [`bytes`].
pub unsafe fn bytes_non_null<'a>(ptr: *const u8, len: CK_ULONG) -> Result<&'a [u8]> {
    if ptr.is_null() {
        return Err(err(CKR_ARGUMENTS_BAD));
    }
    // SAFETY: forwarded caller guarantee.
    unsafe { bytes(ptr, len) }
}

/// A mutable reference to an output value (`CKR_ARGUMENTS_BAD` if null).
///
/// # Safety
/// `ptr` must be null or valid for writes of a `T` for `'a`.
pub unsafe fn out<'a, T>(ptr: *mut T) -> Result<&'a mut T> {
    // SAFETY: the caller guarantees a valid, aligned `T` if non-null.
    unsafe { ptr.as_mut() }.ok_or(err(CKR_ARGUMENTS_BAD))
}

/// An output buffer following the size-query convention of §5.2: the
/// length pointer is required; a null buffer asks for the length.
///
/// # Safety
/// `len_ptr` must be null or valid; `buf` null or valid for `*len_ptr` bytes.
pub unsafe fn out_buffer<'a>(
    buf: *mut u8,
    len_ptr: *mut CK_ULONG,
) -> Result<(Option<&'a mut [u8]>, &'a mut CK_ULONG)> {
    // SAFETY: forwarded caller guarantee.
    let len = unsafe { out(len_ptr)? };
    if buf.is_null() {
        return Ok((None, len));
    }
    let n = checked_len(*len)?;
    // SAFETY: non-null, and the caller guarantees `*len_ptr` writable bytes.
    Ok((Some(unsafe { std::slice::from_raw_parts_mut(buf, n) }), len))
}

/// Stores the result length of an output-buffer call: the produced (or
/// required) length on success and on `CKR_BUFFER_TOO_SMALL`.
pub fn finish_output(result: Result<usize>, len: &mut CK_ULONG) -> Result<()> {
    match result {
        Ok(n) => {
            *len = n as CK_ULONG;
            Ok(())
        }
        Err(e) if e.rv() == CKR_BUFFER_TOO_SMALL => {
            *len = e.required_len() as CK_ULONG;
            Err(e)
        }
        Err(e) => Err(e),
    }
}

/// Runs the body of a call that terminates the operation `kind` on any
/// failure other than `CKR_BUFFER_TOO_SMALL` (§5.2), including failures
/// found while reading the caller's arguments and a panic (then
/// `CKR_GENERAL_ERROR`): an operation that failed halfway is never left for
/// the next call to continue.
pub fn terminating(
    session: &Session,
    kind: OpKind,
    body: impl FnOnce() -> Result<()>,
) -> Result<()> {
    ending(&[CKR_BUFFER_TOO_SMALL], || crypto::end(session, kind), body)
}

/// Runs `body`, a panic becoming `CKR_GENERAL_ERROR`; a failure whose code
/// is not in `keeps` runs `end` (what the failure ends: [`terminating`],
/// the dual-function pair, a message in progress).
pub fn ending(
    keeps: &[CK_RV],
    end: impl FnOnce(),
    body: impl FnOnce() -> Result<()>,
) -> Result<()> {
    let r = catch_unwind(AssertUnwindSafe(body)).unwrap_or_else(|_| Err(err(CKR_GENERAL_ERROR)));
    if let Err(e) = &r
        && !keeps.contains(&e.rv())
    {
        end();
    }
    r
}

/// Most attributes a template may hold. No object type has a hundred
/// attributes; the bound keeps a caller's count from sizing an allocation
/// or a slice (`C_GetAttributeValue` with `ulCount` = 2^40 once made the
/// module try to allocate 8 TiB, which aborts the process).
pub const MAX_TEMPLATE_ATTRS: usize = 1024;

/// A caller's `CK_ATTRIBUTE` array: `NULL` only with count 0, at most
/// [`MAX_TEMPLATE_ATTRS`] entries (else `CKR_ARGUMENTS_BAD`).
///
/// # Safety
/// `ptr` must be null or valid for reads and writes of `count` entries.
pub unsafe fn attribute_array<'a>(
    ptr: *mut CK_ATTRIBUTE,
    count: CK_ULONG,
) -> Result<&'a mut [CK_ATTRIBUTE]> {
    let count = checked_len(count)?;
    if count == 0 {
        return Ok(&mut []);
    }
    if ptr.is_null() || count > MAX_TEMPLATE_ATTRS {
        return Err(err(CKR_ARGUMENTS_BAD));
    }
    // SAFETY: non-null, at most MAX_TEMPLATE_ATTRS entries (so the byte size
    // cannot overflow), `count` entries guaranteed by the caller.
    Ok(unsafe { std::slice::from_raw_parts_mut(ptr, count) })
}

/// Copies a caller's template. `NULL` with count 0 is the empty template.
/// A nested template (`CKA_WRAP_TEMPLATE`, `CKA_UNWRAP_TEMPLATE`,
/// `CKA_DERIVE_TEMPLATE`: an array of `CK_ATTRIBUTE`, `ulValueLen` its size
/// in bytes) is read element by element and kept encoded, one level deep.
///
/// # Safety
/// `ptr` must be null or valid for `count` `CK_ATTRIBUTE`s whose `pValue`s
/// are valid for their `ulValueLen` (for nested templates: arrays of
/// `CK_ATTRIBUTE` whose `pValue`s are valid in turn).
pub unsafe fn template(ptr: *const CK_ATTRIBUTE, count: CK_ULONG) -> Result<Vec<Attr>> {
    // SAFETY: forwarded caller guarantee.
    unsafe { read_template(ptr, count, true) }
}

/// [`template`], with or without nested templates allowed.
///
/// # Safety
/// As [`template`].
unsafe fn read_template(
    ptr: *const CK_ATTRIBUTE,
    count: CK_ULONG,
    nesting: bool,
) -> Result<Vec<Attr>> {
    // SAFETY: forwarded caller guarantee; the array is only read here.
    let attrs = unsafe { attribute_array(ptr as *mut CK_ATTRIBUTE, count)? };
    attrs
        .iter()
        .map(|a| {
            if a.ulValueLen == CK_UNAVAILABLE_INFORMATION {
                return Err(err(CKR_ATTRIBUTE_VALUE_INVALID));
            }
            if is_template_attribute(a.type_) {
                if !nesting {
                    return Err(err(CKR_ATTRIBUTE_VALUE_INVALID));
                }
                // SAFETY: the caller guarantees the nested array.
                let inner = unsafe { nested_array(a)? };
                // SAFETY: as above, one level deeper.
                let inner =
                    unsafe { read_template(inner.as_ptr(), inner.len() as CK_ULONG, false)? };
                return Ok(Attr::new(a.type_, &encode_template(&inner)));
            }
            // SAFETY: the caller guarantees `pValue` holds `ulValueLen` bytes.
            let value = unsafe { bytes(a.pValue as *const u8, a.ulValueLen)? };
            Ok(Attr::new(a.type_, value))
        })
        .collect()
}

/// The `CK_ATTRIBUTE` array a nested-template attribute points to:
/// `ulValueLen` a whole number of entries, `pValue` aligned (else
/// `CKR_ATTRIBUTE_VALUE_INVALID`), at most [`MAX_TEMPLATE_ATTRS`] entries.
///
/// # Safety
/// `a.pValue` null or valid for `a.ulValueLen` bytes of `CK_ATTRIBUTE`s.
pub unsafe fn nested_array<'a>(a: &CK_ATTRIBUTE) -> Result<&'a mut [CK_ATTRIBUTE]> {
    let size = std::mem::size_of::<CK_ATTRIBUTE>();
    let len = checked_len(a.ulValueLen)?;
    let ptr = a.pValue as *mut CK_ATTRIBUTE;
    if !len.is_multiple_of(size)
        || (len > 0 && !(ptr as usize).is_multiple_of(std::mem::align_of::<CK_ATTRIBUTE>()))
    {
        return Err(err(CKR_ATTRIBUTE_VALUE_INVALID));
    }
    // SAFETY: forwarded caller guarantee; count and alignment checked.
    unsafe { attribute_array(ptr, (len / size) as CK_ULONG) }
}

/// Copies `s` into a fixed-size, blank-padded `CK_UTF8CHAR` field.
pub fn pad(field: &mut [u8], s: &str) {
    field.fill(b' ');
    let mut n = s.len().min(field.len());
    while !s.is_char_boundary(n) {
        n -= 1;
    }
    field[..n].copy_from_slice(&s.as_bytes()[..n]);
}

/// Blank-padded field to string, trailing blanks and NULs removed.
pub fn unpad(field: &[u8]) -> String {
    String::from_utf8_lossy(field)
        .trim_end_matches([' ', '\0'])
        .to_string()
}

/// Writes `items` to a caller array under the size-query convention
/// (`CKR_BUFFER_TOO_SMALL` with the count when the array is short).
///
/// # Safety
/// `ptr` null or valid for `*count` elements; `count` null or valid.
pub unsafe fn out_list<T: Copy>(items: &[T], ptr: *mut T, count: *mut CK_ULONG) -> Result<()> {
    // SAFETY: forwarded caller guarantee.
    let count = unsafe { out(count)? };
    if ptr.is_null() {
        *count = items.len() as CK_ULONG;
        return Ok(());
    }
    if (*count as usize) < items.len() {
        *count = items.len() as CK_ULONG;
        return Err(Error::buffer_too_small(items.len()));
    }
    // SAFETY: the caller's array holds at least `*count >= items.len()` elements.
    unsafe { std::ptr::copy_nonoverlapping(items.as_ptr(), ptr, items.len()) };
    *count = items.len() as CK_ULONG;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn null_input_only_with_zero_length() {
        // SAFETY: null pointers are never dereferenced.
        unsafe {
            assert_eq!(bytes(std::ptr::null(), 0).unwrap(), &[] as &[u8]);
            assert_eq!(
                bytes(std::ptr::null(), 1).unwrap_err().rv(),
                CKR_ARGUMENTS_BAD
            );
            assert_eq!(
                bytes([1u8].as_ptr(), u64::MAX as CK_ULONG)
                    .unwrap_err()
                    .rv(),
                CKR_ARGUMENTS_BAD
            );
            // A PIN or label pointer is required even for length 0.
            assert_eq!(
                bytes_non_null(std::ptr::null(), 0).unwrap_err().rv(),
                CKR_ARGUMENTS_BAD
            );
            assert_eq!(bytes_non_null([1u8].as_ptr(), 0).unwrap(), &[] as &[u8]);
        }
    }

    #[test]
    fn attribute_arrays_are_bounded() {
        let mut one = [CK_ATTRIBUTE {
            type_: CKA_LABEL,
            pValue: std::ptr::null_mut(),
            ulValueLen: 0,
        }];
        // SAFETY: counts above the bound are refused before the pointer is used.
        unsafe {
            for count in [MAX_TEMPLATE_ATTRS as CK_ULONG + 1, 1 << 40, CK_ULONG::MAX] {
                assert_eq!(
                    attribute_array(one.as_mut_ptr(), count).unwrap_err().rv(),
                    CKR_ARGUMENTS_BAD
                );
                assert_eq!(
                    template(one.as_ptr(), count).unwrap_err().rv(),
                    CKR_ARGUMENTS_BAD
                );
            }
            assert_eq!(attribute_array(one.as_mut_ptr(), 1).unwrap().len(), 1);
            assert!(attribute_array(std::ptr::null_mut(), 0).unwrap().is_empty());
        }
    }

    #[test]
    fn panics_become_general_error() {
        assert_eq!(guard(|| panic!("boom")), CKR_GENERAL_ERROR);
        assert_eq!(guard(|| Err(err(CKR_PIN_INCORRECT))), CKR_PIN_INCORRECT);
        assert_eq!(guard(|| Ok(())), CKR_OK);
    }

    /// Run by [`a_panic_in_a_call_prints_nothing`] in a second process.
    #[test]
    #[ignore = "runs only as the second process of the test below"]
    fn panic_worker() {
        if std::env::var_os("DALEK_PANIC_WORKER").is_none() {
            return;
        }
        assert_eq!(guard(|| panic!("boom-inside")), CKR_GENERAL_ERROR);
        // Outside a call the host's own hook still reports.
        let _ = std::panic::catch_unwind(|| panic!("boom-outside"));
    }

    #[test]
    fn a_panic_in_a_call_prints_nothing() {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--ignored",
                "--exact",
                "ffi::util::tests::panic_worker",
                "--nocapture",
                "--test-threads",
                "1",
            ])
            .env("DALEK_PANIC_WORKER", "1")
            .env_remove("DALEK_PKCS11_LOG")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{err}");
        assert!(!err.contains("boom-inside"), "{err}");
        assert!(
            err.contains("boom-outside"),
            "the worker did not run: {err}"
        );
    }

    #[test]
    fn a_panic_ends_the_operation() {
        use crate::api::operations::Active;
        use crate::api::session::Session;
        use crate::api::token::{HandleAllocator, Token};
        use crate::mechanisms::digest::DigestOp;
        let token = Token::new(
            1,
            std::sync::Arc::new(crate::config::Config::defaults()),
            std::sync::Arc::new(HandleAllocator::default()),
            None,
        )
        .unwrap();
        let session = Session {
            handle: 1,
            token: std::sync::Arc::new(token),
            rw: true,
            ops: parking_lot::Mutex::new(Default::default()),
            open: true.into(),
            incarnation: 0,
        };
        let start =
            || session.ops.lock().digest = Some(Active::new(DigestOp::new(CKM_SHA256).unwrap()));
        start();
        let r = guard(|| terminating(&session, OpKind::Digest, || panic!("mid-operation")));
        assert_eq!(r, CKR_GENERAL_ERROR);
        assert!(
            session.ops.lock().digest.is_none(),
            "a panic left the digest active"
        );
        // CKR_BUFFER_TOO_SMALL keeps it; any other error ends it.
        start();
        let small = terminating(&session, OpKind::Digest, || {
            Err(Error::buffer_too_small(32))
        });
        assert!(small.is_err() && session.ops.lock().digest.is_some());
        let bad = terminating(&session, OpKind::Digest, || Err(err(CKR_DATA_LEN_RANGE)));
        assert!(bad.is_err() && session.ops.lock().digest.is_none());
        // `ending` keeps the operation for every code it is told to keep.
        let mut ended = false;
        let kept = ending(
            &[CKR_BUFFER_TOO_SMALL, CKR_OPERATION_NOT_INITIALIZED],
            || ended = true,
            || Err(err(CKR_OPERATION_NOT_INITIALIZED)),
        );
        assert!(kept.is_err() && !ended);
        let r = ending(
            &[CKR_BUFFER_TOO_SMALL],
            || ended = true,
            || panic!("mid-pair"),
        );
        assert_eq!(r.unwrap_err().rv(), CKR_GENERAL_ERROR);
        assert!(ended, "a panic did not end the operation");
    }

    #[test]
    fn output_lengths() {
        let mut len: CK_ULONG = 0;
        assert!(finish_output(Ok(5), &mut len).is_ok());
        assert_eq!(len, 5);
        assert!(finish_output(Err(Error::buffer_too_small(64)), &mut len).is_err());
        assert_eq!(len, 64);
        let mut field = [0u8; 8];
        pad(&mut field, "héllo wörld");
        assert_eq!(&field, b"h\xc3\xa9llo w");
        assert_eq!(unpad(b"abc   \0"), "abc");
    }

    #[test]
    fn lists_follow_size_query() {
        let items = [1 as CK_ULONG, 2, 3];
        let mut count: CK_ULONG = 0;
        let mut buf = [0 as CK_ULONG; 2];
        // SAFETY: valid pointers to local buffers.
        unsafe {
            out_list(&items, std::ptr::null_mut(), &mut count).unwrap();
            assert_eq!(count, 3);
            count = 2;
            assert_eq!(
                out_list(&items, buf.as_mut_ptr(), &mut count)
                    .unwrap_err()
                    .rv(),
                CKR_BUFFER_TOO_SMALL
            );
            assert_eq!(count, 3);
        }
    }
}
