//! Dual-function cryptographic operations (base spec §5.16):
//! `C_DigestEncryptUpdate`, `C_DecryptDigestUpdate`, `C_SignEncryptUpdate`
//! and `C_DecryptVerifyUpdate`. Each continues two operations of the
//! session that `*Init` calls started, with one pass over the data: the
//! digest or signature always sees the plaintext, exactly once, and only
//! when the cipher's output is actually returned (a size query or a
//! `CKR_BUFFER_TOO_SMALL` feeds it nothing; the caller repeats the call).
//! The second operation of a decrypting pair sees exactly the plaintext
//! the call returns: with a mechanism that holds plaintext back until
//! `C_DecryptFinal` (AES-GCM, padded CBC's last block), the caller digests
//! or verifies what `C_DecryptFinal` returns itself.

use super::crypto::output::{
    check_context_login, cipher_output, multi_part_call, multipart, update_step,
};
use super::session::Session;
use crate::error::{Result, err};
use crate::mechanisms::{CipherOperation, DigestOperation, SignOperation, VerifyOperation};
use cryptoki_sys::*;

/// Which two operations a dual-function call continues.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pair {
    /// `C_DigestEncryptUpdate`.
    DigestEncrypt,
    /// `C_DecryptDigestUpdate`.
    DecryptDigest,
    /// `C_SignEncryptUpdate`.
    SignEncrypt,
    /// `C_DecryptVerifyUpdate`.
    DecryptVerify,
}

/// One dual-function update: `data` is plaintext (encrypting pairs) or
/// ciphertext (decrypting pairs); the cipher's output goes to `out` under
/// the size-query conventions of §5.2.
pub fn update(session: &Session, pair: Pair, data: &[u8], out: Option<&mut [u8]>) -> Result<usize> {
    let mut guard = session.ops.lock();
    let ops: &mut crate::api::operations::Operations = &mut guard;
    let second_active = match pair {
        Pair::DigestEncrypt | Pair::DecryptDigest => ops.digest.is_some(),
        Pair::SignEncrypt => ops.sign.is_some(),
        Pair::DecryptVerify => ops.verify.is_some(),
    };
    let encrypting = matches!(pair, Pair::DigestEncrypt | Pair::SignEncrypt);
    let cipher = if encrypting {
        &mut ops.encrypt
    } else {
        &mut ops.decrypt
    };
    if !second_active || cipher.is_none() {
        return Err(err(CKR_OPERATION_NOT_INITIALIZED));
    }
    check_context_login(cipher)?;
    check_context_login(&ops.sign)?;
    // Both operations go on multi-part: one a single-part call has
    // claimed refuses, before the cipher consumes any data (the FFI layer
    // then ends both, as on any other error).
    match pair {
        Pair::DigestEncrypt | Pair::DecryptDigest => multi_part_call(&mut ops.digest)?,
        Pair::SignEncrypt => multi_part_call(&mut ops.sign)?,
        Pair::DecryptVerify => multi_part_call(&mut ops.verify)?,
    }
    let cipher = if encrypting {
        &mut ops.encrypt
    } else {
        &mut ops.decrypt
    };
    multipart(cipher)?;
    let mut out = out;
    let n = cipher_output(
        cipher,
        |op| op.update_len(data.len()),
        out.as_deref_mut(),
        false,
        |op, o| op.update(data, o),
    )?;
    // A size query returns the length and feeds nothing.
    let Some(out) = out else {
        return Ok(n);
    };
    let plain: &[u8] = if encrypting { data } else { &out[..n] };
    match pair {
        Pair::DigestEncrypt | Pair::DecryptDigest => update_step(&mut ops.digest, |d| {
            d.update(plain);
            Ok(())
        })?,
        Pair::SignEncrypt => update_step(&mut ops.sign, |s| s.update(plain))?,
        Pair::DecryptVerify => update_step(&mut ops.verify, |v| v.update(plain))?,
    }
    Ok(n)
}
