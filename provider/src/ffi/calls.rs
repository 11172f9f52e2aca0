//! The shapes the exported `C_*` calls share, each written once: look the
//! session up, read the caller's mechanism or buffers (the `unsafe`
//! conversions, in the order the calls have always checked them), call the
//! safe layer and store the output length (§5.2 size-query convention).
//! The exported function keeps its spec signature, picks its guard
//! (`util::guard_hot` / `guard` / `guard_deep`) and names the `api`
//! function; its body is one call to one of these.

use super::mechanism;
use super::util::{bytes, finish_output, out, out_buffer, template, terminating};
use crate::api::crypto::OpKind;
use crate::api::module;
use crate::api::session::Session;
use crate::attributes::Attr;
use crate::error::Result;
use crate::mechanisms::Mechanism;
use cryptoki_sys::*;

/// What a data call ends when it fails (§5.2: any failure other than
/// `CKR_BUFFER_TOO_SMALL` ends the active operation).
pub trait Ending {
    /// Runs `body`, ending what `self` names if it fails (or panics).
    fn run(self, session: &Session, body: impl FnOnce() -> Result<()>) -> Result<()>;
}

/// One operation: [`terminating`].
impl Ending for OpKind {
    fn run(self, session: &Session, body: impl FnOnce() -> Result<()>) -> Result<()> {
        terminating(session, self, body)
    }
}

/// A `C_*Init` with a mechanism (`C_DigestInit`): the session, then the
/// mechanism, then `f(session, &mechanism)`.
///
/// # Safety
/// `p_mechanism` null or a valid `CK_MECHANISM` whose parameter is valid
/// for its length.
pub unsafe fn init(
    h_session: CK_SESSION_HANDLE,
    p_mechanism: *const CK_MECHANISM,
    f: impl FnOnce(&Session, &Mechanism<'_>) -> Result<()>,
) -> Result<()> {
    // SAFETY: forwarded caller guarantee.
    unsafe { init_read(h_session, mechanism::read, p_mechanism, f) }
}

/// A keyed `C_*Init` (§5.8, §5.9, §5.13, §5.14, §5.21, §5.22): [`init`]
/// with `f(session, &mechanism, key)`.
///
/// # Safety
/// As [`init`].
pub unsafe fn init_with_key(
    h_session: CK_SESSION_HANDLE,
    p_mechanism: *const CK_MECHANISM,
    key: CK_OBJECT_HANDLE,
    f: impl FnOnce(&Session, &Mechanism<'_>, CK_OBJECT_HANDLE) -> Result<()>,
) -> Result<()> {
    // SAFETY: forwarded caller guarantee.
    unsafe { init(h_session, p_mechanism, |s, mech| f(s, mech, key)) }
}

/// [`init`] with the mechanism read by `read` (the message calls read
/// their own, §5.19).
///
/// # Safety
/// `p_mechanism` as `read` requires it.
pub unsafe fn init_read<'m>(
    h_session: CK_SESSION_HANDLE,
    read: unsafe fn(*const CK_MECHANISM) -> Result<Mechanism<'m>>,
    p_mechanism: *const CK_MECHANISM,
    f: impl FnOnce(&Session, &Mechanism<'m>) -> Result<()>,
) -> Result<()> {
    module::with_session(h_session, |s| {
        // SAFETY: forwarded caller guarantee.
        let mech = unsafe { read(p_mechanism)? };
        f(s, &mech)
    })
}

/// A call that takes input and writes output (single-part and update
/// data calls, the dual-function calls): the session, then, under
/// `ending`, [`in_out`] with `f(session, input, output)`.
///
/// # Safety
/// As [`in_out`].
pub unsafe fn data_in_out(
    h_session: CK_SESSION_HANDLE,
    ending: impl Ending,
    p_in: *const CK_BYTE,
    ul_in: CK_ULONG,
    p_out: *mut CK_BYTE,
    pul_out: *mut CK_ULONG,
    f: impl FnOnce(&Session, &[u8], Option<&mut [u8]>) -> Result<usize>,
) -> Result<()> {
    module::with_session(h_session, |s| {
        ending.run(s, || {
            // SAFETY: forwarded caller guarantees.
            unsafe { in_out(p_in, ul_in, p_out, pul_out, |data, buf| f(s, data, buf)) }
        })
    })
}

/// A `C_*Update` (or `C_VerifyFinal`) that takes input and outputs
/// nothing: the session, then, under `ending`, the input and
/// `f(session, input)`.
///
/// # Safety
/// `p_in` null or valid for `ul_in` bytes.
pub unsafe fn data_in(
    h_session: CK_SESSION_HANDLE,
    ending: impl Ending,
    p_in: *const CK_BYTE,
    ul_in: CK_ULONG,
    f: impl FnOnce(&Session, &[u8]) -> Result<()>,
) -> Result<()> {
    module::with_session(h_session, |s| {
        ending.run(s, || {
            // SAFETY: forwarded caller guarantee.
            let data = unsafe { bytes(p_in, ul_in)? };
            f(s, data)
        })
    })
}

/// A `C_*Final` that writes output: the session, then, under `ending`,
/// [`output`] with `f(session, output)`.
///
/// # Safety
/// As [`output`].
pub unsafe fn out_only(
    h_session: CK_SESSION_HANDLE,
    ending: impl Ending,
    p_out: *mut CK_BYTE,
    pul_out: *mut CK_ULONG,
    f: impl FnOnce(&Session, Option<&mut [u8]>) -> Result<usize>,
) -> Result<()> {
    module::with_session(h_session, |s| {
        ending.run(s, || {
            // SAFETY: forwarded caller guarantees.
            unsafe { output(p_out, pul_out, |buf| f(s, buf)) }
        })
    })
}

/// The input, then the output buffer (§5.2 size-query convention), then
/// `f(input, output)`; the length it produced (or needs) is stored.
///
/// # Safety
/// `p_in` null or valid for `ul_in` bytes; `pul_out` null or valid;
/// `p_out` null or valid for `*pul_out` bytes.
pub unsafe fn in_out(
    p_in: *const CK_BYTE,
    ul_in: CK_ULONG,
    p_out: *mut CK_BYTE,
    pul_out: *mut CK_ULONG,
    f: impl FnOnce(&[u8], Option<&mut [u8]>) -> Result<usize>,
) -> Result<()> {
    // SAFETY: the caller guarantees the input and the output buffer.
    let (data, (buf, len)) = unsafe { (bytes(p_in, ul_in)?, out_buffer(p_out, pul_out)?) };
    finish_output(f(data, buf), len)
}

/// The output buffer (§5.2 size-query convention), then `f(output)`; the
/// length it produced (or needs) is stored.
///
/// # Safety
/// `pul_out` null or valid; `p_out` null or valid for `*pul_out` bytes.
pub unsafe fn output(
    p_out: *mut CK_BYTE,
    pul_out: *mut CK_ULONG,
    f: impl FnOnce(Option<&mut [u8]>) -> Result<usize>,
) -> Result<()> {
    // SAFETY: the caller guarantees the output buffer.
    let (buf, len) = unsafe { out_buffer(p_out, pul_out)? };
    finish_output(f(buf), len)
}

/// A call that makes an object from a template (§5.7 `C_CreateObject`,
/// `C_CopyObject`): the template, then the handle pointer, then `f`, whose
/// handle is stored.
///
/// # Safety
/// `p_template` as `util::template` requires it; `ph_object` null or valid
/// for writes.
pub unsafe fn new_object(
    p_template: *const CK_ATTRIBUTE,
    ul_count: CK_ULONG,
    ph_object: *mut CK_OBJECT_HANDLE,
    f: impl FnOnce(&[Attr]) -> Result<CK_OBJECT_HANDLE>,
) -> Result<()> {
    // SAFETY: forwarded caller guarantees.
    let (t, out) = unsafe { (template(p_template, ul_count)?, out(ph_object)?) };
    *out = f(&t)?;
    Ok(())
}

/// A call that makes a key with a mechanism (§5.15 `C_GenerateKey`,
/// `C_UnwrapKey`, `C_DeriveKey`): the arguments before the mechanism (a
/// bad template is `CKR_ARGUMENTS_BAD` whatever the mechanism, as consumer
/// suites expect), then the mechanism, then `f`, whose handle is stored.
///
/// # Safety
/// As [`new_object`]; `p_mechanism` as `mechanism::read` requires it.
pub unsafe fn new_key<'m>(
    p_mechanism: *const CK_MECHANISM,
    p_template: *const CK_ATTRIBUTE,
    ul_count: CK_ULONG,
    ph_key: *mut CK_OBJECT_HANDLE,
    f: impl FnOnce(&Mechanism<'m>, &[Attr]) -> Result<CK_OBJECT_HANDLE>,
) -> Result<()> {
    let make = |t: &[Attr]| {
        // SAFETY: forwarded caller guarantee.
        let mech = unsafe { mechanism::read(p_mechanism)? };
        f(&mech, t)
    };
    // SAFETY: forwarded caller guarantees.
    unsafe { new_object(p_template, ul_count, ph_key, make) }
}
