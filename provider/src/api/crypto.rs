//! Cryptographic functions in safe form (base spec §5.9–5.14): digest,
//! sign, verify, key-pair generation, random. The common rules live here:
//! one active operation of each kind per session (`CKR_OPERATION_ACTIVE`),
//! key usage flags and `CKA_ALLOWED_MECHANISMS`, the size-query convention
//! (`None` output → required length), `CKR_BUFFER_TOO_SMALL` keeping the
//! operation alive, and every other outcome ending it.

use super::attributes::{Attr, Attributes};
use super::object::Object;
use super::objects::{check_write_access, new_uid, set_key_origin};
use super::session::{Active, Session};
use super::template::{self, Origin};
use crate::error::{Error, Result, err};
use crate::mechanisms::keys::{self, KeyMaterial};
use crate::mechanisms::{self, DigestOperation, Mechanism, SignOperation, VerifyOperation};
use cryptoki_sys::*;
use std::sync::Arc;

/// Checks a key for use with `mech` in a function needing `usage`
/// (`CKA_SIGN`, ...) and returns its parsed material.
fn usable_key(
    session: &Session,
    handle: CK_OBJECT_HANDLE,
    mech: &Mechanism<'_>,
    usage: CK_ATTRIBUTE_TYPE,
) -> Result<Arc<KeyMaterial>> {
    let token = &session.token;
    let key = token.key(handle)?;
    if key.key_type.is_none() {
        return Err(err(CKR_KEY_TYPE_INCONSISTENT));
    }
    if !key.flag(usage) {
        return Err(err(CKR_KEY_FUNCTION_NOT_PERMITTED));
    }
    if !key.allows_mechanism(mech.ty) {
        return Err(err(CKR_MECHANISM_INVALID));
    }
    key.key_material(|o: &Object| keys::load(o, token.token_key().as_deref()))
}

/// Writes a fixed-length result: size query, too small (operation kept),
/// or run `produce` and end the operation whatever it returns.
fn output<T>(
    slot: &mut Option<Active<T>>,
    need: usize,
    out: Option<&mut [u8]>,
    produce: impl FnOnce(&mut T, &mut [u8]) -> Result<usize>,
) -> Result<usize> {
    let Some(out) = out else {
        return Ok(need);
    };
    if out.len() < need {
        return Err(Error::buffer_too_small(need));
    }
    let active = slot.as_mut().ok_or(err(CKR_OPERATION_NOT_INITIALIZED))?;
    let r = produce(&mut active.op, out);
    *slot = None;
    r
}

/// Ends the operation in `slot` if `r` is an error.
fn end_on_error<T, R>(slot: &mut Option<Active<T>>, r: Result<R>) -> Result<R> {
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
    }
}

/// `C_DigestInit`.
pub fn digest_init(session: &Session, mech: &Mechanism<'_>) -> Result<()> {
    let mut ops = session.ops.lock();
    if ops.digest.is_some() {
        return Err(err(CKR_OPERATION_ACTIVE));
    }
    ops.digest = Some(Active::new(mechanisms::digest_init(mech)?));
    Ok(())
}

/// `C_Digest`.
pub fn digest(session: &Session, data: &[u8], out: Option<&mut [u8]>) -> Result<usize> {
    let mut ops = session.ops.lock();
    let active = ops
        .digest
        .as_ref()
        .ok_or(err(CKR_OPERATION_NOT_INITIALIZED))?;
    if active.multipart {
        ops.digest = None;
        return Err(err(CKR_OPERATION_ACTIVE));
    }
    let need = active.op.output_len();
    output(&mut ops.digest, need, out, |d, out| {
        d.update(data);
        Ok(d.finish(out))
    })
}

/// `C_DigestUpdate`.
pub fn digest_update(session: &Session, data: &[u8]) -> Result<()> {
    let mut ops = session.ops.lock();
    let active = ops
        .digest
        .as_mut()
        .ok_or(err(CKR_OPERATION_NOT_INITIALIZED))?;
    active.multipart = true;
    active.op.update(data);
    Ok(())
}

/// `C_DigestKey`: digests the value of a secret key.
pub fn digest_key(session: &Session, key: CK_OBJECT_HANDLE) -> Result<()> {
    let mut ops = session.ops.lock();
    if ops.digest.is_none() {
        return Err(err(CKR_OPERATION_NOT_INITIALIZED));
    }
    let r = (|| {
        let token = &session.token;
        let obj = token.key(key)?;
        if obj.class != CKO_SECRET_KEY {
            return Err(err(CKR_KEY_INDIGESTIBLE));
        }
        let value = obj
            .plain_value(CKA_VALUE, token.token_key().as_deref())?
            .ok_or(err(CKR_KEY_INDIGESTIBLE))?;
        Ok(value)
    })();
    let value = end_on_error(&mut ops.digest, r)?;
    let active = ops
        .digest
        .as_mut()
        .ok_or(err(CKR_OPERATION_NOT_INITIALIZED))?;
    active.multipart = true;
    active.op.update(&value);
    Ok(())
}

/// `C_DigestFinal`.
pub fn digest_final(session: &Session, out: Option<&mut [u8]>) -> Result<usize> {
    let mut ops = session.ops.lock();
    let need = ops
        .digest
        .as_ref()
        .ok_or(err(CKR_OPERATION_NOT_INITIALIZED))?
        .op
        .output_len();
    output(&mut ops.digest, need, out, |d, out| Ok(d.finish(out)))
}

/// `C_SignInit`.
pub fn sign_init(session: &Session, mech: &Mechanism<'_>, key: CK_OBJECT_HANDLE) -> Result<()> {
    let mut ops = session.ops.lock();
    if ops.sign.is_some() {
        return Err(err(CKR_OPERATION_ACTIVE));
    }
    mechanisms::require(mech, CKF_SIGN)?;
    let material = usable_key(session, key, mech, CKA_SIGN)?;
    ops.sign = Some(Active::new(mechanisms::sign_init(mech, material)?));
    Ok(())
}

/// `C_Sign`.
pub fn sign(session: &Session, data: &[u8], out: Option<&mut [u8]>) -> Result<usize> {
    let mut ops = session.ops.lock();
    let active = ops
        .sign
        .as_ref()
        .ok_or(err(CKR_OPERATION_NOT_INITIALIZED))?;
    if active.multipart {
        ops.sign = None;
        return Err(err(CKR_OPERATION_ACTIVE));
    }
    let need = active.op.output_len();
    output(&mut ops.sign, need, out, |op, out| op.sign(data, out))
}

/// `C_SignUpdate`.
pub fn sign_update(session: &Session, data: &[u8]) -> Result<()> {
    let mut ops = session.ops.lock();
    let active = ops
        .sign
        .as_mut()
        .ok_or(err(CKR_OPERATION_NOT_INITIALIZED))?;
    active.multipart = true;
    let r = active.op.update(data);
    end_on_error(&mut ops.sign, r)
}

/// `C_SignFinal`.
pub fn sign_final(session: &Session, out: Option<&mut [u8]>) -> Result<usize> {
    let mut ops = session.ops.lock();
    let need = ops
        .sign
        .as_ref()
        .ok_or(err(CKR_OPERATION_NOT_INITIALIZED))?
        .op
        .output_len();
    output(&mut ops.sign, need, out, |op, out| op.finish(out))
}

/// `C_VerifyInit`.
pub fn verify_init(session: &Session, mech: &Mechanism<'_>, key: CK_OBJECT_HANDLE) -> Result<()> {
    let mut ops = session.ops.lock();
    if ops.verify.is_some() {
        return Err(err(CKR_OPERATION_ACTIVE));
    }
    mechanisms::require(mech, CKF_VERIFY)?;
    let material = usable_key(session, key, mech, CKA_VERIFY)?;
    ops.verify = Some(Active::new(mechanisms::verify_init(mech, material)?));
    Ok(())
}

/// `C_Verify`: always ends the operation.
pub fn verify(session: &Session, data: &[u8], signature: &[u8]) -> Result<()> {
    let mut ops = session.ops.lock();
    let mut active = ops
        .verify
        .take()
        .ok_or(err(CKR_OPERATION_NOT_INITIALIZED))?;
    if active.multipart {
        return Err(err(CKR_OPERATION_ACTIVE));
    }
    active.op.verify(data, signature)
}

/// `C_VerifyUpdate`.
pub fn verify_update(session: &Session, data: &[u8]) -> Result<()> {
    let mut ops = session.ops.lock();
    let active = ops
        .verify
        .as_mut()
        .ok_or(err(CKR_OPERATION_NOT_INITIALIZED))?;
    active.multipart = true;
    let r = active.op.update(data);
    end_on_error(&mut ops.verify, r)
}

/// `C_VerifyFinal`: always ends the operation.
pub fn verify_final(session: &Session, signature: &[u8]) -> Result<()> {
    let mut ops = session.ops.lock();
    let mut active = ops
        .verify
        .take()
        .ok_or(err(CKR_OPERATION_NOT_INITIALIZED))?;
    active.op.finish(signature)
}

/// The key type a key-pair mechanism makes.
fn pair_key_type(mech: CK_MECHANISM_TYPE) -> Result<CK_KEY_TYPE> {
    match mech {
        CKM_EC_EDWARDS_KEY_PAIR_GEN => Ok(CKK_EC_EDWARDS),
        _ => Err(err(CKR_MECHANISM_INVALID)),
    }
}

/// `C_GenerateKeyPair`: returns (public, private) handles.
pub fn generate_key_pair(
    session: &Session,
    mech: &Mechanism<'_>,
    public: &[Attr],
    private: &[Attr],
) -> Result<(CK_OBJECT_HANDLE, CK_OBJECT_HANDLE)> {
    mechanisms::require(mech, CKF_GENERATE_KEY_PAIR)?;
    let key_type = pair_key_type(mech.ty)?;
    let token = &session.token;
    let is_so = token.logged_in() == Some(CKU_SO);
    let (_, _, pub_tables) =
        template::tables_for_new(public, Some(CKO_PUBLIC_KEY), Some(key_type))?;
    let (_, _, priv_tables) =
        template::tables_for_new(private, Some(CKO_PRIVATE_KEY), Some(key_type))?;
    let mut pub_attrs = template::build(public, pub_tables, Origin::Generate, is_so)?;
    let mut priv_attrs = template::build(private, priv_tables, Origin::Generate, is_so)?;
    check_write_access(
        session,
        pub_attrs.flag(CKA_TOKEN),
        pub_attrs.flag(CKA_PRIVATE),
    )?;
    check_write_access(
        session,
        priv_attrs.flag(CKA_TOKEN),
        priv_attrs.flag(CKA_PRIVATE),
    )?;
    let generated = mechanisms::generate_key_pair(mech, &pub_attrs)?;
    merge(&mut pub_attrs, &generated.public);
    merge(&mut priv_attrs, &generated.private);
    for (attrs, class) in [
        (&mut pub_attrs, CKO_PUBLIC_KEY),
        (&mut priv_attrs, CKO_PRIVATE_KEY),
    ] {
        attrs.set_ulong(CKA_CLASS, class);
        attrs.set_ulong(CKA_KEY_TYPE, generated.key_type);
        set_key_origin(attrs, Origin::Generate, Some(mech.ty));
    }
    let public = Object::new(
        token.next_handle(),
        new_uid()?,
        pub_attrs,
        pub_tables,
        session.handle,
    );
    let private = Object::new(
        token.next_handle(),
        new_uid()?,
        priv_attrs,
        priv_tables,
        session.handle,
    );
    let handles = token.insert(vec![public, private])?;
    Ok((handles[0], handles[1]))
}

fn merge(into: &mut Attributes, from: &Attributes) {
    for (ty, v) in from.iter() {
        into.set(*ty, v.clone());
    }
}

/// `C_GenerateRandom`.
pub fn generate_random(_session: &Session, out: &mut [u8]) -> Result<()> {
    mechanisms::random::generate(out)
}
