//! Single-part and multi-part data calls on an active operation (base spec
//! §5.8 `C_Encrypt*`, §5.9 `C_Decrypt*`, §5.12 `C_Digest*`, §5.13
//! `C_Sign*` / `C_SignRecover`, §5.14 `C_Verify*` / `C_VerifyRecover`),
//! `C_GenerateRandom` (§5.17), and the vendor batch verification of
//! Ed25519 signatures (docs/mechanisms.md, "Batch verification"). A
//! single-part call on an operation gone multi-part ends it
//! (`CKR_OPERATION_ACTIVE`), and so does a multi-part call on an operation a
//! single-part call has claimed (a size query or `CKR_BUFFER_TOO_SMALL`
//! keeps it for the single-part call's repetition); outputs follow
//! `output`'s rules.

use super::key_use::usable_key;
use super::otp;
use super::output::{
    check_context_login, cipher_output, end_on_error, multi_part_call, multipart, output,
    single_part, update_step,
};
use crate::api::session::Session;
use crate::error::{Result, err};
use crate::mechanisms::{
    self, CipherOperation, DigestOperation, Direction, Mechanism, SignOperation, VerifyOperation,
};
use cryptoki_sys::*;

/// `C_Digest`.
pub fn digest(session: &Session, data: &[u8], out: Option<&mut [u8]>) -> Result<usize> {
    let mut ops = session.ops.lock();
    single_part(&mut ops.digest)?;
    output(
        &mut ops.digest,
        |d| d.output_len(),
        out,
        |d, out| {
            d.update(data);
            Ok(d.finish(out))
        },
    )
}

/// `C_DigestUpdate`.
pub fn digest_update(session: &Session, data: &[u8]) -> Result<()> {
    let mut ops = session.ops.lock();
    update_step(&mut ops.digest, |d| {
        d.update(data);
        Ok(())
    })
}

/// `C_DigestKey`: digests the value of a secret key.
pub fn digest_key(session: &Session, key: CK_OBJECT_HANDLE) -> Result<()> {
    let mut ops = session.ops.lock();
    multi_part_call(&mut ops.digest)?;
    let r = (|| {
        let token = &session.token;
        let obj = token.key(key)?;
        // Digesting a key reveals a function of its value: only a secret key
        // that could be read outright may be digested (§5.12 C_DigestKey,
        // `CKR_KEY_INDIGESTIBLE`).
        if obj.class != CKO_SECRET_KEY || obj.flag(CKA_SENSITIVE) || !obj.flag(CKA_EXTRACTABLE) {
            return Err(err(CKR_KEY_INDIGESTIBLE));
        }
        let value = obj
            .plain_value(CKA_VALUE, token.seal_key(&obj).as_deref())?
            .ok_or(err(CKR_KEY_INDIGESTIBLE))?;
        Ok(value)
    })();
    let value = end_on_error(&mut ops.digest, r)?;
    update_step(&mut ops.digest, |d| {
        d.update(&value);
        Ok(())
    })
}

/// `C_DigestFinal`.
pub fn digest_final(session: &Session, out: Option<&mut [u8]>) -> Result<usize> {
    let mut ops = session.ops.lock();
    multi_part_call(&mut ops.digest)?;
    output(
        &mut ops.digest,
        |d| d.output_len(),
        out,
        |d, out| Ok(d.finish(out)),
    )
}

/// `C_Sign`.
pub fn sign(session: &Session, data: &[u8], out: Option<&mut [u8]>) -> Result<usize> {
    let mut ops = session.ops.lock();
    check_context_login(&ops.sign)?;
    if otp::is_hotp_sign(&ops.sign) {
        return otp::sign(session, &mut ops.sign, data, out);
    }
    single_part(&mut ops.sign)?;
    output(
        &mut ops.sign,
        |op| op.output_len(),
        out,
        |op, out| op.sign(data, out),
    )
}

/// `C_SignUpdate`.
pub fn sign_update(session: &Session, data: &[u8]) -> Result<()> {
    let mut ops = session.ops.lock();
    check_context_login(&ops.sign)?;
    update_step(&mut ops.sign, |op| op.update(data))
}

/// `C_SignFinal`.
pub fn sign_final(session: &Session, out: Option<&mut [u8]>) -> Result<usize> {
    let mut ops = session.ops.lock();
    check_context_login(&ops.sign)?;
    multi_part_call(&mut ops.sign)?;
    output(
        &mut ops.sign,
        |op| op.output_len(),
        out,
        |op, out| op.finish(out),
    )
}

/// `C_Verify`: always ends the operation.
pub fn verify(session: &Session, data: &[u8], signature: &[u8]) -> Result<()> {
    let mut ops = session.ops.lock();
    single_part(&mut ops.verify)?;
    let mut active = ops
        .verify
        .take()
        .ok_or(err(CKR_OPERATION_NOT_INITIALIZED))?;
    if otp::is_hotp(&active.op) {
        return otp::verify(session, &active.op, active.key, data, signature);
    }
    active.op.verify(data, signature)
}

/// `C_VerifyUpdate`.
pub fn verify_update(session: &Session, data: &[u8]) -> Result<()> {
    let mut ops = session.ops.lock();
    update_step(&mut ops.verify, |op| op.update(data))
}

/// `C_VerifyFinal`: always ends the operation.
pub fn verify_final(session: &Session, signature: &[u8]) -> Result<()> {
    let mut ops = session.ops.lock();
    multi_part_call(&mut ops.verify)?;
    let mut active = ops
        .verify
        .take()
        .ok_or(err(CKR_OPERATION_NOT_INITIALIZED))?;
    active.op.finish(signature)
}

/// `C_VerifySignature` (PKCS#11 3.2 §5.15): the data of a single-part
/// verification begun by `C_VerifySignatureInit`; always ends it.
pub fn verify_signature(session: &Session, data: &[u8]) -> Result<()> {
    let mut ops = session.ops.lock();
    single_part(&mut ops.verify_signature)?;
    let mut active = ops
        .verify_signature
        .take()
        .ok_or(err(CKR_OPERATION_NOT_INITIALIZED))?;
    let check = &mut active.op;
    if otp::is_hotp(&check.op) {
        return otp::verify(session, &check.op, active.key, data, &check.signature);
    }
    check.op.verify(data, &check.signature)
}

/// `C_VerifySignatureUpdate`.
pub fn verify_signature_update(session: &Session, data: &[u8]) -> Result<()> {
    let mut ops = session.ops.lock();
    update_step(&mut ops.verify_signature, |check| check.op.update(data))
}

/// `C_VerifySignatureFinal`: always ends the operation.
pub fn verify_signature_final(session: &Session) -> Result<()> {
    let mut ops = session.ops.lock();
    multi_part_call(&mut ops.verify_signature)?;
    let mut active = ops
        .verify_signature
        .take()
        .ok_or(err(CKR_OPERATION_NOT_INITIALIZED))?;
    let check = &mut active.op;
    check.op.finish(&check.signature)
}

/// `C_SignRecover`: single-part only.
pub fn sign_recover(session: &Session, data: &[u8], out: Option<&mut [u8]>) -> Result<usize> {
    let mut ops = session.ops.lock();
    check_context_login(&ops.sign_recover)?;
    output(
        &mut ops.sign_recover,
        |op| op.output_len(),
        out,
        |op, out| op.sign(data, out),
    )
}

/// `C_VerifyRecover`: the recovered data, under the size-query and
/// buffer-too-small conventions (the operation survives a short buffer).
pub fn verify_recover(
    session: &Session,
    signature: &[u8],
    out: Option<&mut [u8]>,
) -> Result<usize> {
    let mut ops = session.ops.lock();
    cipher_output(
        &mut ops.verify_recover,
        |op| op.output_len(signature.len()),
        out,
        true,
        |op, out| op.process(signature, out),
    )
}

/// `C_GenerateRandom`.
pub fn generate_random(_session: &Session, out: &mut [u8]) -> Result<()> {
    mechanisms::random::generate(out)
}

/// `C_Encrypt` / `C_Decrypt`.
pub fn cipher(
    session: &Session,
    direction: Direction,
    data: &[u8],
    out: Option<&mut [u8]>,
) -> Result<usize> {
    let mut ops = session.ops.lock();
    let slot = ops.cipher(direction);
    check_context_login(slot)?;
    single_part(slot)?;
    cipher_output(
        slot,
        |op| op.output_len(data.len()),
        out,
        true,
        |op, out| op.process(data, out),
    )
}

/// `C_EncryptUpdate` / `C_DecryptUpdate`.
pub fn cipher_update(
    session: &Session,
    direction: Direction,
    data: &[u8],
    out: Option<&mut [u8]>,
) -> Result<usize> {
    let mut ops = session.ops.lock();
    let slot = ops.cipher(direction);
    check_context_login(slot)?;
    multipart(slot)?;
    cipher_output(
        slot,
        |op| op.update_len(data.len()),
        out,
        false,
        |op, out| op.update(data, out),
    )
}

/// `C_EncryptFinal` / `C_DecryptFinal`.
pub fn cipher_final(
    session: &Session,
    direction: Direction,
    out: Option<&mut [u8]>,
) -> Result<usize> {
    let mut ops = session.ops.lock();
    let slot = ops.cipher(direction);
    check_context_login(slot)?;
    multi_part_call(slot)?;
    cipher_output(
        slot,
        |op| op.final_len(),
        out,
        true,
        |op, out| op.finish(out),
    )
}

/// Most signatures one batch may hold (bounds the memory a caller can make
/// the module allocate).
pub const MAX_BATCH: usize = 1 << 16;

/// Vendor extension: verifies `signatures[i]` over `messages[i]` with the
/// Ed25519 public key `keys[i]`, all at once (see `docs/mechanisms.md`,
/// "Batch verification"). Each key needs `CKA_VERIFY` and must allow
/// `CKM_EDDSA`. `mech` must be `CKM_EDDSA` for pure Ed25519: batching has
/// no Ed25519ph or Ed25519ctx form, so those parameters are
/// `CKR_MECHANISM_PARAM_INVALID`.
pub fn verify_batch_ed25519(
    session: &Session,
    mech: &Mechanism<'_>,
    keys: &[CK_OBJECT_HANDLE],
    messages: &[&[u8]],
    signatures: &[&[u8]],
) -> Result<()> {
    if keys.is_empty()
        || keys.len() > MAX_BATCH
        || keys.len() != messages.len()
        || keys.len() != signatures.len()
    {
        return Err(err(CKR_ARGUMENTS_BAD));
    }
    if mech.ty != CKM_EDDSA {
        return Err(err(CKR_MECHANISM_INVALID));
    }
    if !mechanisms::eddsa::is_pure(mech)? {
        return Err(err(CKR_MECHANISM_PARAM_INVALID));
    }
    let mech = Mechanism::plain(CKM_EDDSA);
    let publics = keys
        .iter()
        .map(|&h| {
            mechanisms::eddsa::verifying_key(&usable_key(session, h, &mech, CKA_VERIFY)?.material)
        })
        .collect::<Result<Vec<_>>>()?;
    mechanisms::eddsa::verify_batch(&publics, messages, signatures)
}
