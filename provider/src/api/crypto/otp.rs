//! `CKM_HOTP` data calls (`C_Sign`, `C_Verify`, `C_VerifySignature` on an
//! HOTP operation): the key's counter, kept in its object
//! (`CKA_OTP_COUNTER`, 8 bytes big-endian), moves forward in the same
//! conditional write that reads it, and the OTP is computed and returned
//! only after that write is stored — for a token object in the token's
//! store, the path `C_SetAttributeValue` takes (`Token::modify`), as the
//! GCM IV counters are reserved in the store before an IV is used
//! (`ivcounter`). A crash after the write skips a value; none is ever
//! handed out twice, and nothing moves the counter back (the attribute
//! is not modifiable, `policy::OTP_KEY`).
//!
//! A counter the caller supplied (`CK_OTP_COUNTER`, allowed only by the
//! key's `CKA_OTP_COUNTER_REQUIREMENT`) is used as given and nothing is
//! stored.

use super::output::single_part;
use crate::api::objects::STALE_RETRIES;
use crate::api::operations::Active;
use crate::api::session::Session;
use crate::error::{Error, Result, err};
use crate::mechanisms::otp::{self, stored_counter};
use crate::mechanisms::{SignOp, SignOperation, VerifyOp};
use cryptoki_sys::*;

/// True if a sign slot holds an HOTP operation.
pub(super) fn is_hotp_sign(slot: &Option<Active<SignOp>>) -> bool {
    matches!(
        slot,
        Some(Active {
            op: SignOp::Hotp(_),
            ..
        })
    )
}

/// True if `op` is an HOTP verification.
pub(super) fn is_hotp(op: &VerifyOp) -> bool {
    matches!(op, VerifyOp::Hotp(_))
}

/// Moves the counter of the HOTP key `handle` forward: `pick(stored)`
/// chooses the counter value used (the stored one to sign, a matching one
/// within the window to verify, or an error that changes nothing), and
/// that value + 1 is written back. Returns the value used once the write
/// is stored. A write made through a view another process changed
/// meanwhile is re-applied to the fresh object.
fn advance(
    session: &Session,
    handle: CK_OBJECT_HANDLE,
    mut pick: impl FnMut(u64) -> Result<u64>,
) -> Result<u64> {
    let token = &session.token;
    for _ in 0..STALE_RETRIES {
        let obj = token.object(handle)?;
        let mut used = None;
        let done = token.modify(&obj, |current| {
            let counter = pick(stored_counter(current)?)?;
            // The last value cannot be used: its successor is not storable.
            let next = counter
                .checked_add(1)
                .ok_or(err(CKR_KEY_FUNCTION_NOT_PERMITTED))?;
            let mut changed = current.clone();
            changed.set_bytes(CKA_OTP_COUNTER, &next.to_be_bytes());
            used = Some(counter);
            Ok(changed)
        })?;
        if done {
            return used.ok_or(err(CKR_GENERAL_ERROR));
        }
        token.refresh()?;
    }
    Err(err(CKR_FUNCTION_FAILED))
}

/// `C_Sign` on an HOTP operation (`slot` holds one): the size query and
/// `CKR_BUFFER_TOO_SMALL` keep the operation and move no counter; the data
/// must be empty (`CKR_DATA_LEN_RANGE`); otherwise the counter is stored
/// moved forward, then the OTP written, and the operation ends.
pub(super) fn sign(
    session: &Session,
    slot: &mut Option<Active<SignOp>>,
    data: &[u8],
    out: Option<&mut [u8]>,
) -> Result<usize> {
    single_part(slot)?;
    let active = slot.as_mut().ok_or(err(CKR_OPERATION_NOT_INITIALIZED))?;
    let need = active.op.output_len();
    let Some(out) = out else {
        return Ok(need);
    };
    if out.len() < need {
        return Err(Error::buffer_too_small(need));
    }
    let r = (|| {
        let SignOp::Hotp(otp::HotpSign(op)) = &active.op else {
            return Err(err(CKR_GENERAL_ERROR));
        };
        if !data.is_empty() {
            return Err(err(CKR_DATA_LEN_RANGE));
        }
        let counter = match op.given_counter() {
            Some(c) => c,
            None => advance(session, key_of(active.key)?, Ok)?,
        };
        op.sign_at(counter, out)
    })();
    *slot = None;
    r
}

/// `C_Verify` / `C_VerifySignature` on an HOTP operation (already taken
/// from its slot): the data must be empty; the signature is the bare
/// digits. With the stored counter, a match within the look-ahead window
/// stores the matched value + 1 (so neither it nor an earlier OTP verifies
/// again); a mismatch changes nothing.
pub(super) fn verify(
    session: &Session,
    op: &VerifyOp,
    key: Option<CK_OBJECT_HANDLE>,
    data: &[u8],
    signature: &[u8],
) -> Result<()> {
    let VerifyOp::Hotp(otp::HotpVerify(op)) = op else {
        return Err(err(CKR_GENERAL_ERROR));
    };
    if !data.is_empty() {
        return Err(err(CKR_DATA_LEN_RANGE));
    }
    match op.given_counter() {
        Some(c) => op.check(c, signature).map(drop),
        None => advance(session, key_of(key)?, |stored| op.check(stored, signature)).map(drop),
    }
}

/// The key handle an HOTP operation keeps (`keep_key` at its init).
fn key_of(key: Option<CK_OBJECT_HANDLE>) -> Result<CK_OBJECT_HANDLE> {
    key.ok_or(err(CKR_GENERAL_ERROR))
}
