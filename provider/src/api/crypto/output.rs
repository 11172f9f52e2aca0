//! The output and ending rules shared by the calls on an active operation
//! (base spec §5.2 "Conventions for functions returning output in a
//! variable-length buffer", and on which outcomes end an operation; §4.9
//! `CKA_ALWAYS_AUTHENTICATE`): the size query (`None` output → required
//! length), `CKR_BUFFER_TOO_SMALL` keeping the operation alive, and every
//! other outcome ending it.

use crate::api::operations::Active;
use crate::api::session::Session;
use crate::error::{Error, Result, err};
use crate::mechanisms::{CipherOp, OutputLen};
use cryptoki_sys::*;
use zeroize::Zeroizing;

/// `CKR_USER_NOT_LOGGED_IN` while the operation's key awaits its
/// `C_Login(CKU_CONTEXT_SPECIFIC)` (`CKA_ALWAYS_AUTHENTICATE`, §4.9).
pub(in crate::api) fn check_context_login<T>(slot: &Option<Active<T>>) -> Result<()> {
    match slot {
        Some(a) if a.awaits_login.is_some() => Err(err(CKR_USER_NOT_LOGGED_IN)),
        _ => Ok(()),
    }
}

/// A single-part call (`C_Digest`, `C_Sign`, `C_Verify`, `C_Encrypt`,
/// `C_Decrypt`, `C_VerifySignature`) on the operation in `slot`:
/// `CKR_OPERATION_NOT_INITIALIZED` without one; once the operation has gone
/// multi-part, a single-part call may no longer finish it: it ends with
/// `CKR_OPERATION_ACTIVE` (docs/mechanisms.md, "Single-part and multi-part
/// calls"). Otherwise the operation is claimed by single-part calls: if
/// this one keeps it (a size query, `CKR_BUFFER_TOO_SMALL`), the multi-part
/// calls are refused the same way.
pub(super) fn single_part<T>(slot: &mut Option<Active<T>>) -> Result<()> {
    match slot {
        None => Err(err(CKR_OPERATION_NOT_INITIALIZED)),
        Some(a) if a.multipart => {
            *slot = None;
            Err(err(CKR_OPERATION_ACTIVE))
        }
        Some(a) => {
            a.single = true;
            Ok(())
        }
    }
}

/// A multi-part call (`C_*Update`, `C_*Final`, `C_DigestKey`, a
/// dual-function call) on the operation in `slot`:
/// `CKR_OPERATION_NOT_INITIALIZED` without one; `CKR_OPERATION_ACTIVE`,
/// ending it, when a single-part call has claimed it (the mirror of
/// [`single_part`]).
pub(in crate::api) fn multi_part_call<T>(slot: &mut Option<Active<T>>) -> Result<()> {
    match slot {
        None => Err(err(CKR_OPERATION_NOT_INITIALIZED)),
        Some(a) if a.single => {
            *slot = None;
            Err(err(CKR_OPERATION_ACTIVE))
        }
        Some(_) => Ok(()),
    }
}

/// The operation in `slot`, marked multi-part (an `*Update` call or a
/// dual-function call continues it); refused as [`multi_part_call`] says.
pub(in crate::api) fn multipart<T>(slot: &mut Option<Active<T>>) -> Result<&mut Active<T>> {
    multi_part_call(slot)?;
    let active = slot.as_mut().ok_or(err(CKR_OPERATION_NOT_INITIALIZED))?;
    active.multipart = true;
    Ok(active)
}

/// One multi-part step without output (`C_DigestUpdate`, `C_SignUpdate`,
/// `C_VerifyUpdate`, the second half of a dual-function call): marks the
/// operation multi-part, runs `step` on it, and ends it if `step` fails.
pub(in crate::api) fn update_step<T, R>(
    slot: &mut Option<Active<T>>,
    step: impl FnOnce(&mut T) -> Result<R>,
) -> Result<R> {
    let r = step(&mut multipart(slot)?.op);
    end_on_error(slot, r)
}

/// Writes a fixed-length result of `need(op)` bytes: size query, too small
/// (operation kept), or run `produce` and end the operation whatever it
/// returns.
pub(super) fn output<T>(
    slot: &mut Option<Active<T>>,
    need: impl FnOnce(&T) -> usize,
    out: Option<&mut [u8]>,
    produce: impl FnOnce(&mut T, &mut [u8]) -> Result<usize>,
) -> Result<usize> {
    let active = slot.as_mut().ok_or(err(CKR_OPERATION_NOT_INITIALIZED))?;
    let need = need(&active.op);
    let Some(out) = out else {
        return Ok(need);
    };
    if out.len() < need {
        return Err(Error::buffer_too_small(need));
    }
    let r = produce(&mut active.op, out);
    *slot = None;
    r
}

/// Ends the operation in `slot` if `r` is an error.
pub(in crate::api) fn end_on_error<T, R>(slot: &mut Option<Active<T>>, r: Result<R>) -> Result<R> {
    if r.is_err() {
        *slot = None;
    }
    r
}

/// The kinds of operation a session holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpKind {
    /// Digest.
    Digest,
    /// Sign or MAC.
    Sign,
    /// Verify.
    Verify,
    /// Verify a signature given at initialisation (3.2).
    VerifySignature,
    /// Encrypt.
    Encrypt,
    /// Decrypt.
    Decrypt,
    /// Sign with recovery.
    SignRecover,
    /// Verify with recovery.
    VerifyRecover,
}

/// Ends the operation of `kind` (the FFI layer calls this when a call that
/// must terminate the operation fails before reaching it, e.g. on
/// `CKR_ARGUMENTS_BAD`; §5.2: only `CKR_BUFFER_TOO_SMALL` and successful
/// length queries keep it).
pub fn end(session: &Session, kind: OpKind) {
    let mut ops = session.ops.lock();
    match kind {
        OpKind::Digest => ops.digest = None,
        OpKind::Sign => ops.sign = None,
        OpKind::Verify => ops.verify = None,
        OpKind::VerifySignature => ops.verify_signature = None,
        OpKind::Encrypt => ops.encrypt = None,
        OpKind::Decrypt => ops.decrypt = None,
        OpKind::SignRecover => ops.sign_recover = None,
        OpKind::VerifyRecover => ops.verify_recover = None,
    }
}

/// Writes a cipher result of `len(op)` bytes under the conventions of §5.2,
/// for outputs whose exact length may only be known after computing them
/// (`OutputLen::AtMost`):
/// such a result is kept in `pending` when it does not fit, so the
/// operation survives `CKR_BUFFER_TOO_SMALL`. `ends` says whether a
/// successful call finishes the operation; any error other than
/// `CKR_BUFFER_TOO_SMALL` always does.
pub(in crate::api) fn cipher_output(
    slot: &mut Option<Active<CipherOp>>,
    len: impl FnOnce(&CipherOp) -> OutputLen,
    out: Option<&mut [u8]>,
    ends: bool,
    produce: impl FnOnce(&mut CipherOp, &mut [u8]) -> Result<usize>,
) -> Result<usize> {
    let active = slot.as_mut().ok_or(err(CKR_OPERATION_NOT_INITIALIZED))?;
    let len = len(&active.op);
    if let Some(p) = &active.pending {
        let n = p.len();
        let Some(out) = out else {
            return Ok(n);
        };
        if out.len() < n {
            return Err(Error::buffer_too_small(n));
        }
        out[..n].copy_from_slice(p);
        active.pending = None;
        if ends {
            *slot = None;
        }
        return Ok(n);
    }
    let Some(out) = out else {
        return Ok(len.bound());
    };
    let result = if out.len() >= len.bound() {
        produce(&mut active.op, out)
    } else {
        match len {
            OutputLen::Exact(n) => return Err(Error::buffer_too_small(n)),
            OutputLen::AtMost(bound) => {
                let mut tmp = Zeroizing::new(vec![0u8; bound]);
                match produce(&mut active.op, &mut tmp) {
                    Ok(n) if n <= out.len() => {
                        out[..n].copy_from_slice(&tmp[..n]);
                        Ok(n)
                    }
                    Ok(n) => {
                        tmp.truncate(n);
                        active.pending = Some(tmp);
                        return Err(Error::buffer_too_small(n));
                    }
                    Err(e) => Err(e),
                }
            }
        }
    };
    if ends || result.is_err() {
        *slot = None;
    }
    result
}
