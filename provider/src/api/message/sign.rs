//! Message-based signing and verification (base spec 3.0 §5.21 / §5.22)
//! with the HMAC mechanisms, `CKM_EDDSA`, ML-DSA and SLH-DSA, single-part
//! (`C_SignMessage`) and multi-part (`C_SignMessageBegin` / `Next`).

use crate::api::crypto::key_use::message_key;
use crate::api::operations::{MessageSign, end_operation};
use crate::api::session::Session;
use crate::error::{Error, Result, err};
use crate::mechanisms::{self, Mechanism, Param};
use cryptoki_sys::*;

/// `C_MessageSignInit` / `C_MessageVerifyInit` (§5.21 / §5.22): the HMAC
/// mechanisms, `CKM_EDDSA`, `CKM_ML_DSA`, `CKM_HASH_ML_DSA_<hash>`,
/// `CKM_SLH_DSA` and `CKM_HASH_SLH_DSA_<hash>`, with
/// their usual (`C_SignInit`) parameter.
/// Their messages take no per-message parameter.
pub fn sign_init(
    session: &Session,
    sign: bool,
    mech: &Mechanism<'_>,
    key: CK_OBJECT_HANDLE,
) -> Result<()> {
    let mut ops = session.ops.lock();
    let slot = ops.message_signer(sign);
    if slot.is_some() {
        return Err(err(CKR_OPERATION_ACTIVE));
    }
    let (function, usage) = if sign {
        (CKF_MESSAGE_SIGN, CKA_SIGN)
    } else {
        (CKF_MESSAGE_VERIFY, CKA_VERIFY)
    };
    mechanisms::require(mech, function)?;
    let key = message_key(session, key, mech, usage)?;
    let (mut mac_len, mut eddsa, mut sign_context) = (None, None, None);
    match mech.param {
        Param::None => {}
        Param::MacLength(n) => mac_len = Some(n),
        Param::EdDsa { prehash, context } => {
            eddsa = Some((prehash, context.map(<[u8]>::to_vec)));
        }
        Param::SignContext { hedge, context } => sign_context = Some((hedge, context.to_vec())),
        _ => return Err(err(CKR_MECHANISM_PARAM_INVALID)),
    }
    // Checks key and parameter now, as C_SignInit would.
    if sign {
        mechanisms::sign_init(mech, key.clone())?;
    } else {
        mechanisms::verify_init(mech, key.clone())?;
    }
    *slot = Some(MessageSign {
        key,
        ty: mech.ty,
        mac_len,
        eddsa,
        sign_context,
        signing: None,
        verifying: None,
    });
    Ok(())
}

/// `C_MessageSignFinal` / `C_MessageVerifyFinal`: ends the operation.
pub fn sign_finish(session: &Session, sign: bool) -> Result<()> {
    end_operation(session.ops.lock().message_signer(sign))
}

/// `C_SignMessage`: one whole message, as `C_Sign` with the init's
/// mechanism. Size query and `CKR_BUFFER_TOO_SMALL` keep the operation, as
/// does a failed message.
pub fn sign_message(session: &Session, data: &[u8], out: Option<&mut [u8]>) -> Result<usize> {
    use mechanisms::SignOperation;
    let ops = session.ops.lock();
    let op = ops
        .message_sign
        .as_ref()
        .ok_or(err(CKR_OPERATION_NOT_INITIALIZED))?;
    if op.signing.is_some() {
        return Err(err(CKR_OPERATION_ACTIVE));
    }
    let mut signer = mechanisms::sign_init(&op.mechanism(), op.key.clone())?;
    let need = signer.output_len();
    let Some(out) = out else {
        return Ok(need);
    };
    if out.len() < need {
        return Err(Error::buffer_too_small(need));
    }
    signer.sign(data, out)
}

/// `C_VerifyMessage`: one whole message, as `C_Verify`; the operation
/// stays for the next message.
pub fn verify_message(session: &Session, data: &[u8], signature: &[u8]) -> Result<()> {
    use mechanisms::VerifyOperation;
    let ops = session.ops.lock();
    let op = ops
        .message_verify
        .as_ref()
        .ok_or(err(CKR_OPERATION_NOT_INITIALIZED))?;
    if op.verifying.is_some() {
        return Err(err(CKR_OPERATION_ACTIVE));
    }
    mechanisms::verify_init(&op.mechanism(), op.key.clone())?.verify(data, signature)
}

/// `C_SignMessageBegin` / `C_VerifyMessageBegin` (§5.21 / §5.22): starts a
/// multi-part message; `CKR_OPERATION_ACTIVE` while one is in progress.
pub fn sign_begin(session: &Session, sign: bool) -> Result<()> {
    let mut ops = session.ops.lock();
    let op = ops
        .message_signer(sign)
        .as_mut()
        .ok_or(err(CKR_OPERATION_NOT_INITIALIZED))?;
    if op.signing.is_some() || op.verifying.is_some() {
        return Err(err(CKR_OPERATION_ACTIVE));
    }
    let mech = op.mechanism();
    if sign {
        let signer = mechanisms::sign_init(&mech, op.key.clone())?;
        op.signing = Some(signer);
    } else {
        let verifier = mechanisms::verify_init(&mech, op.key.clone())?;
        op.verifying = Some(verifier);
    }
    Ok(())
}

/// `C_SignMessageNext`: adds `data`; with `last` (`pulSignatureLen` given)
/// also produces the signature and ends the message. A size query or
/// `CKR_BUFFER_TOO_SMALL` adds nothing and keeps the message, so the call
/// can be repeated with the same part; any other error ends the message.
pub fn sign_next(
    session: &Session,
    data: &[u8],
    last: bool,
    out: Option<&mut [u8]>,
) -> Result<usize> {
    use mechanisms::SignOperation;
    let mut ops = session.ops.lock();
    let op = ops
        .message_sign
        .as_mut()
        .ok_or(err(CKR_OPERATION_NOT_INITIALIZED))?;
    let signer = op
        .signing
        .as_mut()
        .ok_or(err(CKR_OPERATION_NOT_INITIALIZED))?;
    if last {
        let need = signer.output_len();
        let Some(out) = out else {
            return Ok(need);
        };
        if out.len() < need {
            return Err(Error::buffer_too_small(need));
        }
        let mut signer = op
            .signing
            .take()
            .ok_or(err(CKR_OPERATION_NOT_INITIALIZED))?;
        signer.update(data)?;
        return signer.finish(out);
    }
    let r = signer.update(data);
    if r.is_err() {
        op.signing = None;
    }
    r.map(|()| 0)
}

/// `C_VerifyMessageNext`: adds `data`; with a signature, checks it and
/// ends the message (whatever the outcome); an error ends it too.
pub fn verify_next(session: &Session, data: &[u8], signature: Option<&[u8]>) -> Result<()> {
    use mechanisms::VerifyOperation;
    let mut ops = session.ops.lock();
    let op = ops
        .message_verify
        .as_mut()
        .ok_or(err(CKR_OPERATION_NOT_INITIALIZED))?;
    let mut verifier = op
        .verifying
        .take()
        .ok_or(err(CKR_OPERATION_NOT_INITIALIZED))?;
    verifier.update(data)?;
    match signature {
        Some(sig) => verifier.finish(sig),
        None => {
            op.verifying = Some(verifier);
            Ok(())
        }
    }
}
