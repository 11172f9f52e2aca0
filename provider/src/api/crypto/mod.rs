//! Cryptographic functions in safe form (base spec §5.9–5.14): digest,
//! sign, verify, key-pair generation, random. The common rules live here:
//! one active operation of each kind per session (`CKR_OPERATION_ACTIVE`),
//! key usage flags and `CKA_ALLOWED_MECHANISMS`, the size-query convention
//! (`None` output → required length), `CKR_BUFFER_TOO_SMALL` keeping the
//! operation alive, and every other outcome ending it.

use super::key_policy::{self, Rules};
use super::object::Object;
use super::objects::{check_write_access, insert_new, insert_objects, new_object, set_key_origin};
use super::session::{Active, Session};
use super::template::{self, Origin};
use super::token::Token;
use crate::attributes::{Attr, Attributes, decode_template};
use crate::error::{Error, Result, err};
use crate::mechanisms::keys::{self, KeyMaterial};
use crate::mechanisms::strength;
use crate::mechanisms::{
    self, CipherOp, CipherOperation, DigestOperation, Direction, Mechanism, OutputLen,
    SignOperation, VerifyOperation,
};
use cryptoki_sys::*;
use std::sync::Arc;
use zeroize::Zeroizing;

/// Checks a key for use with `mech` in a function needing `usage`
/// (`CKA_SIGN`, ...) and returns its parsed material.
/// A key found usable for an operation.
struct UsableKey {
    /// Its parsed material.
    material: Arc<KeyMaterial>,
    /// `CKA_ALWAYS_AUTHENTICATE`: each use needs `C_Login(CKU_CONTEXT_SPECIFIC)`.
    always_authenticate: bool,
}

fn usable_key(
    session: &Session,
    handle: CK_OBJECT_HANDLE,
    mech: &Mechanism<'_>,
    usage: CK_ATTRIBUTE_TYPE,
) -> Result<UsableKey> {
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
    let material = material_of(token, &key)?;
    if matches!(usage, CKA_SIGN | CKA_VERIFY)
        && matches!(*material, KeyMaterial::Secret { .. } | KeyMaterial::Des(_))
    {
        // A MAC is an oracle on its key: none weaker than the floor (a
        // short HMAC key, two-key Triple DES for DES3-MAC/CMAC).
        key_policy::check_mac_key(key.flag(CKA_SENSITIVE), strength::strength(&material))?;
    }
    Ok(UsableKey {
        material,
        always_authenticate: key.flag(CKA_ALWAYS_AUTHENTICATE),
    })
}

/// The parsed key of `key` (cached in the object). The sealing key is
/// looked up only on a cache miss; it takes no lock that is ever held while
/// an object's key slot is wanted.
fn material_of(token: &Token, key: &Object) -> Result<Arc<KeyMaterial>> {
    key.key_material(|o: &Object| {
        let seal = token.seal_key(o);
        keys::load(o.class, o.key_type, &|ty| {
            o.plain_value(ty, seal.as_deref())
        })
    })
}

/// `C_SetOperationState` (§5.6): may the saved operation of `mechanism`
/// continue with `handle` as its key? The key is checked again as
/// `C_SignInit` / `C_VerifyInit` would check it now (`usage` is `CKA_SIGN`
/// or `CKA_VERIFY`): a key whose usage flag was switched off, or whose
/// allowed mechanisms changed, since the state was saved does not take it
/// up again.
pub(super) fn check_restored_key(
    session: &Session,
    handle: CK_OBJECT_HANDLE,
    mechanism: CK_MECHANISM_TYPE,
    usage: CK_ATTRIBUTE_TYPE,
) -> Result<()> {
    usable_key(session, handle, &Mechanism::plain(mechanism), usage).map(drop)
}

/// A key for a single-call operation (`C_UnwrapKey`, `C_DeriveKey`): no
/// `C_Login(CKU_CONTEXT_SPECIFIC)` can come between an init and the use,
/// so a key that needs one for every use (`CKA_ALWAYS_AUTHENTICATE`) is
/// refused with `CKR_KEY_FUNCTION_NOT_PERMITTED` rather than used unasked.
fn single_call_key(
    session: &Session,
    handle: CK_OBJECT_HANDLE,
    mech: &Mechanism<'_>,
    usage: CK_ATTRIBUTE_TYPE,
) -> Result<Arc<KeyMaterial>> {
    let key = usable_key(session, handle, mech, usage)?;
    if key.always_authenticate {
        return Err(err(CKR_KEY_FUNCTION_NOT_PERMITTED));
    }
    Ok(key.material)
}

/// A key for a message-based operation (§5.19–5.20): as
/// [`single_call_key`], no context login is offered for them, so a key
/// with `CKA_ALWAYS_AUTHENTICATE` is refused.
pub(crate) fn message_key(
    session: &Session,
    handle: CK_OBJECT_HANDLE,
    mech: &Mechanism<'_>,
    usage: CK_ATTRIBUTE_TYPE,
) -> Result<Arc<KeyMaterial>> {
    single_call_key(session, handle, mech, usage)
}

/// `CKR_USER_NOT_LOGGED_IN` while the operation's key awaits its
/// `C_Login(CKU_CONTEXT_SPECIFIC)` (`CKA_ALWAYS_AUTHENTICATE`, §4.9).
pub(super) fn check_context_login<T>(slot: &Option<Active<T>>) -> Result<()> {
    match slot {
        Some(a) if a.awaits_login.is_some() => Err(err(CKR_USER_NOT_LOGGED_IN)),
        _ => Ok(()),
    }
}

/// `C_Login(CKU_CONTEXT_SPECIFIC)` (§5.6): checks the user's PIN for the
/// signature or decryption of this session that awaits it, then lets that
/// one operation proceed: the one initialised last, since the spec has the
/// context login follow the initialisation it is for. Another operation
/// awaiting its own login keeps waiting for its own (one PIN entry never
/// unlocks two uses of `CKA_ALWAYS_AUTHENTICATE` keys). Without such an
/// operation: `CKR_OPERATION_NOT_INITIALIZED`. A wrong PIN counts towards
/// the lockout and leaves the operation waiting. The session's operations
/// stay locked during the (slow) PIN check, so the login applies to exactly
/// the operation that awaited it, whatever another thread does to the
/// session meanwhile (lock order: session operations, then the token's
/// store, as in `C_FindObjectsInit`).
pub fn context_login(session: &Session, pin: &[u8]) -> Result<()> {
    let mut ops = session.ops.lock();
    let ops = &mut *ops;
    let last = [
        ops.sign.as_mut().map(|a| &mut a.awaits_login),
        ops.decrypt.as_mut().map(|a| &mut a.awaits_login),
        ops.sign_recover.as_mut().map(|a| &mut a.awaits_login),
    ]
    .into_iter()
    .flatten()
    .filter(|waiting| waiting.is_some())
    .max_by_key(|waiting| **waiting);
    let Some(last) = last else {
        return Err(err(CKR_OPERATION_NOT_INITIALIZED));
    };
    session.token.reauthenticate(pin)?;
    *last = None;
    Ok(())
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
pub(super) fn end_on_error<T, R>(slot: &mut Option<Active<T>>, r: Result<R>) -> Result<R> {
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
        OpKind::Encrypt => ops.encrypt = None,
        OpKind::Decrypt => ops.decrypt = None,
        OpKind::SignRecover => ops.sign_recover = None,
        OpKind::VerifyRecover => ops.verify_recover = None,
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
    let handle = key;
    let key = usable_key(session, key, mech, CKA_SIGN)?;
    let mut active = Active::new(mechanisms::sign_init(mech, key.material)?);
    active.awaits_login = key.always_authenticate.then(|| ops.next_init());
    active.key = Some(handle);
    active.mechanism = Some(mech.ty);
    ops.sign = Some(active);
    Ok(())
}

/// `C_Sign`.
pub fn sign(session: &Session, data: &[u8], out: Option<&mut [u8]>) -> Result<usize> {
    let mut ops = session.ops.lock();
    check_context_login(&ops.sign)?;
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
    check_context_login(&ops.sign)?;
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
    check_context_login(&ops.sign)?;
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
    let material = usable_key(session, key, mech, CKA_VERIFY)?.material;
    let mut active = Active::new(mechanisms::verify_init(mech, material)?);
    active.key = Some(key);
    active.mechanism = Some(mech.ty);
    ops.verify = Some(active);
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

/// `C_SignRecoverInit` (§5.13): the key needs `CKA_SIGN_RECOVER`.
pub fn sign_recover_init(
    session: &Session,
    mech: &Mechanism<'_>,
    key: CK_OBJECT_HANDLE,
) -> Result<()> {
    let mut ops = session.ops.lock();
    if ops.sign_recover.is_some() {
        return Err(err(CKR_OPERATION_ACTIVE));
    }
    mechanisms::require(mech, CKF_SIGN_RECOVER)?;
    let key = usable_key(session, key, mech, CKA_SIGN_RECOVER)?;
    let mut active = Active::new(mechanisms::sign_recover_init(mech, key.material)?);
    active.awaits_login = key.always_authenticate.then(|| ops.next_init());
    ops.sign_recover = Some(active);
    Ok(())
}

/// `C_SignRecover`: single-part only.
pub fn sign_recover(session: &Session, data: &[u8], out: Option<&mut [u8]>) -> Result<usize> {
    let mut ops = session.ops.lock();
    check_context_login(&ops.sign_recover)?;
    let need = ops
        .sign_recover
        .as_ref()
        .ok_or(err(CKR_OPERATION_NOT_INITIALIZED))?
        .op
        .output_len();
    output(&mut ops.sign_recover, need, out, |op, out| {
        op.sign(data, out)
    })
}

/// `C_VerifyRecoverInit` (§5.14): the key needs `CKA_VERIFY_RECOVER`.
pub fn verify_recover_init(
    session: &Session,
    mech: &Mechanism<'_>,
    key: CK_OBJECT_HANDLE,
) -> Result<()> {
    let mut ops = session.ops.lock();
    if ops.verify_recover.is_some() {
        return Err(err(CKR_OPERATION_ACTIVE));
    }
    mechanisms::require(mech, CKF_VERIFY_RECOVER)?;
    let material = usable_key(session, key, mech, CKA_VERIFY_RECOVER)?.material;
    ops.verify_recover = Some(Active::new(mechanisms::verify_recover_init(
        mech, material,
    )?));
    Ok(())
}

/// `C_VerifyRecover`: the recovered data, under the size-query and
/// buffer-too-small conventions (the operation survives a short buffer).
pub fn verify_recover(
    session: &Session,
    signature: &[u8],
    out: Option<&mut [u8]>,
) -> Result<usize> {
    let mut ops = session.ops.lock();
    let len = ops
        .verify_recover
        .as_ref()
        .ok_or(err(CKR_OPERATION_NOT_INITIALIZED))?
        .op
        .output_len(signature.len());
    cipher_output(&mut ops.verify_recover, len, out, true, |op, out| {
        op.process(signature, out)
    })
}

/// `C_GenerateKeyPair`: returns (public, private) handles.
pub fn generate_key_pair(
    session: &Session,
    mech: &Mechanism<'_>,
    public: &[Attr],
    private: &[Attr],
) -> Result<(CK_OBJECT_HANDLE, CK_OBJECT_HANDLE)> {
    mechanisms::require(mech, CKF_GENERATE_KEY_PAIR)?;
    let key_type = mechanisms::pair_key_type(mech.ty)?;
    let token = &session.token;
    let is_so = token.logged_in() == Some(CKU_SO);
    let (_, _, pub_tables) =
        template::tables_for_new(public, Some(CKO_PUBLIC_KEY), Some(key_type))?;
    let (_, _, priv_tables) =
        template::tables_for_new(private, Some(CKO_PRIVATE_KEY), Some(key_type))?;
    let rules = Rules::of(token.config());
    let mut pub_attrs = key_policy::build(public, pub_tables, Origin::Generate, is_so, rules)?;
    let mut priv_attrs = key_policy::build(private, priv_tables, Origin::Generate, is_so, rules)?;
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
    if mech.ty == CKM_RSA_PKCS_KEY_PAIR_GEN
        && pub_attrs
            .ulong(CKA_MODULUS_BITS)
            .is_some_and(|bits| bits < CK_ULONG::from(token.config().rsa_min_bits))
    {
        // The token's `rsa_min_bits` (docs/configuration.md).
        return Err(err(CKR_KEY_SIZE_RANGE));
    }
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
    let public = new_object(session, pub_attrs, pub_tables)?;
    let private = new_object(session, priv_attrs, priv_tables)?;
    let handles = insert_objects(session, vec![public, private])?;
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

/// Writes a cipher result under the conventions of §5.2, for outputs whose
/// exact length may only be known after computing them (`OutputLen::AtMost`):
/// such a result is kept in `pending` when it does not fit, so the
/// operation survives `CKR_BUFFER_TOO_SMALL`. `ends` says whether a
/// successful call finishes the operation; any error other than
/// `CKR_BUFFER_TOO_SMALL` always does.
pub(super) fn cipher_output(
    slot: &mut Option<Active<CipherOp>>,
    len: OutputLen,
    out: Option<&mut [u8]>,
    ends: bool,
    produce: impl FnOnce(&mut CipherOp, &mut [u8]) -> Result<usize>,
) -> Result<usize> {
    let active = slot.as_mut().ok_or(err(CKR_OPERATION_NOT_INITIALIZED))?;
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

fn slot_of(
    ops: &mut super::session::Operations,
    direction: Direction,
) -> &mut Option<Active<CipherOp>> {
    match direction {
        Direction::Encrypt => &mut ops.encrypt,
        Direction::Decrypt => &mut ops.decrypt,
    }
}

/// `C_EncryptInit` / `C_DecryptInit`.
pub fn cipher_init(
    session: &Session,
    direction: Direction,
    mech: &Mechanism<'_>,
    key: CK_OBJECT_HANDLE,
) -> Result<()> {
    let mut ops = session.ops.lock();
    if slot_of(&mut ops, direction).is_some() {
        return Err(err(CKR_OPERATION_ACTIVE));
    }
    let (function, usage) = match direction {
        Direction::Encrypt => (CKF_ENCRYPT, CKA_ENCRYPT),
        Direction::Decrypt => (CKF_DECRYPT, CKA_DECRYPT),
    };
    mechanisms::require(mech, function)?;
    let key = usable_key(session, key, mech, usage)?;
    let mut active = Active::new(mechanisms::cipher_init(
        mech,
        key.material,
        direction,
        function,
    )?);
    // §4.9: the PIN for each use means signing and decryption.
    active.awaits_login =
        (key.always_authenticate && direction == Direction::Decrypt).then(|| ops.next_init());
    *slot_of(&mut ops, direction) = Some(active);
    Ok(())
}

/// `C_Encrypt` / `C_Decrypt`.
pub fn cipher(
    session: &Session,
    direction: Direction,
    data: &[u8],
    out: Option<&mut [u8]>,
) -> Result<usize> {
    let mut ops = session.ops.lock();
    let slot = slot_of(&mut ops, direction);
    check_context_login(slot)?;
    let active = slot.as_ref().ok_or(err(CKR_OPERATION_NOT_INITIALIZED))?;
    if active.multipart {
        *slot = None;
        return Err(err(CKR_OPERATION_ACTIVE));
    }
    let len = active.op.output_len(data.len());
    cipher_output(slot, len, out, true, |op, out| op.process(data, out))
}

/// `C_EncryptUpdate` / `C_DecryptUpdate`.
pub fn cipher_update(
    session: &Session,
    direction: Direction,
    data: &[u8],
    out: Option<&mut [u8]>,
) -> Result<usize> {
    let mut ops = session.ops.lock();
    let slot = slot_of(&mut ops, direction);
    check_context_login(slot)?;
    let active = slot.as_mut().ok_or(err(CKR_OPERATION_NOT_INITIALIZED))?;
    active.multipart = true;
    let len = active.op.update_len(data.len());
    cipher_output(slot, len, out, false, |op, out| op.update(data, out))
}

/// `C_EncryptFinal` / `C_DecryptFinal`.
pub fn cipher_final(
    session: &Session,
    direction: Direction,
    out: Option<&mut [u8]>,
) -> Result<usize> {
    let mut ops = session.ops.lock();
    let slot = slot_of(&mut ops, direction);
    check_context_login(slot)?;
    let len = slot
        .as_ref()
        .ok_or(err(CKR_OPERATION_NOT_INITIALIZED))?
        .op
        .final_len();
    cipher_output(slot, len, out, true, |op, out| op.finish(out))
}

/// Builds, checks and stores a new secret key holding `value` (key
/// generation and derivation share this); returns its handle.
fn insert_secret(
    session: &Session,
    template: &[Attr],
    implied_key_type: Option<CK_KEY_TYPE>,
    origin: Origin,
    mech: CK_MECHANISM_TYPE,
    value: &[u8],
    base: Option<BaseProtection>,
) -> Result<CK_OBJECT_HANDLE> {
    let token = &session.token;
    let (_, key_type, tables) =
        template::tables_for_new(template, Some(CKO_SECRET_KEY), implied_key_type)?;
    let mut attrs = key_policy::build(
        template,
        tables,
        origin,
        token.logged_in() == Some(CKU_SO),
        Rules::of(token.config()),
    )?;
    check_write_access(session, attrs.flag(CKA_TOKEN), attrs.flag(CKA_PRIVATE))?;
    attrs.set_ulong(CKA_CLASS, CKO_SECRET_KEY);
    let key_type = key_type.ok_or(err(CKR_TEMPLATE_INCOMPLETE))?;
    attrs.set_ulong(CKA_KEY_TYPE, key_type);
    attrs.set_bytes(CKA_VALUE, value);
    set_key_origin(&mut attrs, origin, Some(mech));
    if let Some(base) = base {
        base.carry_to(&mut attrs);
    }
    keys::complete_import(CKO_SECRET_KEY, Some(key_type), &mut attrs)?;
    insert_new(session, attrs, tables)
}

/// What a derived key inherits from its base keys.
#[derive(Clone, Copy, Debug)]
struct BaseProtection {
    /// The base keys' `CKA_SENSITIVE` (any of them).
    sensitive: bool,
    /// The base keys' `CKA_EXTRACTABLE` (all of them).
    extractable: bool,
    /// The base keys' `CKA_ALWAYS_SENSITIVE` (all of them).
    always_sensitive: bool,
    /// The base keys' `CKA_NEVER_EXTRACTABLE` (all of them).
    never_extractable: bool,
}

impl BaseProtection {
    fn of(key: &Object) -> BaseProtection {
        BaseProtection {
            sensitive: key.flag(CKA_SENSITIVE),
            extractable: key.flag(CKA_EXTRACTABLE),
            always_sensitive: key.flag(CKA_ALWAYS_SENSITIVE),
            never_extractable: key.flag(CKA_NEVER_EXTRACTABLE),
        }
    }

    /// True if the bases' value may not be read ([`key_policy::is_protected`]).
    fn protected(self) -> bool {
        self.sensitive || !self.extractable
    }

    /// Both bases together (`CKM_CONCATENATE_BASE_AND_KEY`).
    fn and(self, other: BaseProtection) -> BaseProtection {
        BaseProtection {
            sensitive: self.sensitive || other.sensitive,
            extractable: self.extractable && other.extractable,
            always_sensitive: self.always_sensitive && other.always_sensitive,
            never_extractable: self.never_extractable && other.never_extractable,
        }
    }

    /// For a value that is a simple function of the bases' values (§2.42:
    /// "if either of the two original keys has its CKA_SENSITIVE attribute
    /// set to CK_TRUE, so does the derived key ... if either has
    /// CKA_EXTRACTABLE set to CK_FALSE, so does the derived key"): the
    /// template cannot make the derived key less protected than its bases.
    fn impose_on(self, template: &mut Vec<Attr>) {
        if self.sensitive {
            template.retain(|a| a.ty != CKA_SENSITIVE);
            template.push(Attr::bool(CKA_SENSITIVE, true));
        }
        if !self.extractable {
            template.retain(|a| a.ty != CKA_EXTRACTABLE);
            template.push(Attr::bool(CKA_EXTRACTABLE, false));
        }
    }

    /// The rule every derivation mechanism states (mechanisms spec 3.0,
    /// e.g. §2.3.11 ECDH, §2.43 HKDF): the derived key is always sensitive
    /// only if the base was and the derived key is sensitive, and never
    /// extractable only if the base never was and the derived key is not.
    fn carry_to(self, attrs: &mut Attributes) {
        let sensitive = attrs.flag(CKA_SENSITIVE);
        let extractable = attrs.flag(CKA_EXTRACTABLE);
        attrs.set_flag(CKA_ALWAYS_SENSITIVE, self.always_sensitive && sensitive);
        attrs.set_flag(
            CKA_NEVER_EXTRACTABLE,
            self.never_extractable && !extractable,
        );
    }
}

/// `C_GenerateKey`.
pub fn generate_key(
    session: &Session,
    mech: &Mechanism<'_>,
    template: &[Attr],
) -> Result<CK_OBJECT_HANDLE> {
    mechanisms::require(mech, CKF_GENERATE)?;
    if let Some(key_type) = mechanisms::domain_parameter_key_type(mech.ty) {
        return generate_domain_parameters(session, mech, template, key_type);
    }
    let (default_type, allowed) = mechanisms::secret_key_types(mech.ty)?;
    let given = template::template_value(template, CKA_KEY_TYPE)?
        .map(crate::attributes::decode_ulong)
        .transpose()?;
    let key_type = given.unwrap_or(default_type);
    if !allowed.contains(&key_type) {
        return Err(err(CKR_TEMPLATE_INCONSISTENT));
    }
    let value_len = template::template_value(template, CKA_VALUE_LEN)?
        .map(crate::attributes::decode_ulong)
        .transpose()?;
    let value_len = value_len
        .map(|l| usize::try_from(l).map_err(|_| err(CKR_ATTRIBUTE_VALUE_INVALID)))
        .transpose()?;
    let value = mechanisms::generate_key(mech, value_len)?;
    insert_secret(
        session,
        template,
        Some(key_type),
        Origin::Generate,
        mech.ty,
        &value,
        None,
    )
}

/// `C_GenerateKey` with a parameter-generation mechanism
/// (`CKM_DSA_PARAMETER_GEN`, mechanisms spec §2.2.10): a
/// `CKO_DOMAIN_PARAMETERS` object (§4.13) of `key_type`.
fn generate_domain_parameters(
    session: &Session,
    mech: &Mechanism<'_>,
    template: &[Attr],
    key_type: CK_KEY_TYPE,
) -> Result<CK_OBJECT_HANDLE> {
    let token = &session.token;
    let (_, given_type, tables) =
        template::tables_for_new(template, Some(CKO_DOMAIN_PARAMETERS), Some(key_type))?;
    if given_type != Some(key_type) {
        return Err(err(CKR_TEMPLATE_INCONSISTENT));
    }
    let mut attrs = key_policy::build(
        template,
        tables,
        Origin::Generate,
        token.logged_in() == Some(CKU_SO),
        Rules::of(token.config()),
    )?;
    check_write_access(session, attrs.flag(CKA_TOKEN), attrs.flag(CKA_PRIVATE))?;
    let generated = mechanisms::generate_domain_parameters(mech, &attrs)?;
    merge(&mut attrs, &generated);
    attrs.set_ulong(CKA_CLASS, CKO_DOMAIN_PARAMETERS);
    attrs.set_ulong(CKA_KEY_TYPE, key_type);
    set_key_origin(&mut attrs, Origin::Generate, Some(mech.ty));
    insert_new(session, attrs, tables)
}

/// `C_WrapKey`: encrypts a secret key's value or a private key's PKCS#8
/// encoding. The key must be extractable; a key with
/// `CKA_WRAP_WITH_TRUSTED` only goes under a trusted wrapping key.
pub fn wrap_key(
    session: &Session,
    mech: &Mechanism<'_>,
    wrapping: CK_OBJECT_HANDLE,
    key: CK_OBJECT_HANDLE,
    out: Option<&mut [u8]>,
) -> Result<usize> {
    mechanisms::require(mech, CKF_WRAP)?;
    let token = &session.token;
    let material =
        single_call_key(session, wrapping, mech, CKA_WRAP).map_err(|e| match e.rv() {
            CKR_KEY_HANDLE_INVALID => err(CKR_WRAPPING_KEY_HANDLE_INVALID),
            CKR_KEY_TYPE_INCONSISTENT => err(CKR_WRAPPING_KEY_TYPE_INCONSISTENT),
            _ => e,
        })?;
    let target = token.key(key)?;
    if !target.flag(CKA_EXTRACTABLE) {
        return Err(err(CKR_KEY_UNEXTRACTABLE));
    }
    let wrapping_key = token.key(wrapping)?;
    if target.flag(CKA_WRAP_WITH_TRUSTED) && !wrapping_key.flag(CKA_TRUSTED) {
        return Err(err(CKR_KEY_NOT_WRAPPABLE));
    }
    if !matches_wrap_template(&wrapping_key, &target) {
        return Err(err(CKR_KEY_NOT_WRAPPABLE));
    }
    let rules = Rules::of(token.config());
    // Wrap separation; `strict` holds it whatever `wrap_separation` says.
    if (rules.wrap_separation || rules.strict())
        && target.flag(CKA_SENSITIVE)
        && could_decrypt_what_it_wraps(token, &wrapping_key)?
    {
        return Err(err(CKR_KEY_NOT_WRAPPABLE));
    }
    // Weak wrapping keys (Clulow 2003): what cannot be read directly is
    // wrapped only under a key at least as strong, never under single DES.
    let target_protected = target.with_attrs(key_policy::is_protected);
    if target_protected {
        let target_material = material_of(token, &target)?;
        key_policy::check_wrapping_strength(
            target_protected,
            strength::strength(&material),
            strength::is_single_des(&material),
            strength::strength(&target_material),
        )?;
    }
    if rules.strict() {
        let halves_unknowable = private_halves_never_extractable(token, &wrapping_key);
        wrapping_key
            .with_attrs(|a| key_policy::check_strict_wrapping_key(rules, a, halves_unknowable))?;
    }
    let seal = token.seal_key(&target);
    let bytes = keys::export_for_wrap(target.class, target.key_type, &|ty| {
        target.plain_value(ty, seal.as_deref())
    })?;
    let mut op = mechanisms::cipher_init(mech, material, Direction::Encrypt, CKF_WRAP).map_err(
        |e| match e.rv() {
            CKR_KEY_TYPE_INCONSISTENT => err(CKR_WRAPPING_KEY_TYPE_INCONSISTENT),
            _ => e,
        },
    )?;
    let need = op.output_len(bytes.len());
    let Some(out) = out else {
        return Ok(need.bound());
    };
    let mut tmp = Zeroizing::new(vec![0u8; need.bound()]);
    let n = op.process(&bytes, &mut tmp).map_err(|e| match e.rv() {
        CKR_DATA_LEN_RANGE => err(CKR_KEY_SIZE_RANGE),
        _ => e,
    })?;
    if out.len() < n {
        return Err(Error::buffer_too_small(n));
    }
    out[..n].copy_from_slice(&tmp[..n]);
    Ok(n)
}

/// §4.8 `CKA_WRAP_TEMPLATE`: a key the wrapping key's template does not
/// match (every attribute it names equal, by value, to the key's own)
/// cannot be wrapped under it. A template that cannot be read (an older
/// version stored the caller's raw structs) matches nothing.
fn matches_wrap_template(wrapping: &Object, target: &Object) -> bool {
    let Some(encoded) = wrapping.with_attrs(|a| a.bytes(CKA_WRAP_TEMPLATE).map(<[u8]>::to_vec))
    else {
        return true;
    };
    let Ok(required) = decode_template(&encoded) else {
        return false;
    };
    target.with_attrs(|a| {
        required
            .iter()
            .all(|(ty, v)| v.as_plain().is_some_and(|v| a.bytes(*ty) == Some(v)))
    })
}

/// The caller's template for a key made from `key` (§4.9
/// `CKA_UNWRAP_TEMPLATE` for unwrapping, §4.7 `CKA_DERIVE_TEMPLATE` for
/// derivation, `ty` names which): the key's template comes first and the
/// caller's is applied after it "as if the object has already been
/// created", so an attribute both give must agree
/// (`CKR_TEMPLATE_INCONSISTENT`). An unreadable stored template refuses.
fn with_key_template(key: &Object, ty: CK_ATTRIBUTE_TYPE, user: &[Attr]) -> Result<Vec<Attr>> {
    let Some(encoded) = key.with_attrs(|a| a.bytes(ty).map(<[u8]>::to_vec)) else {
        return Ok(user.to_vec());
    };
    let forced = decode_template(&encoded).map_err(|_| err(CKR_TEMPLATE_INCONSISTENT))?;
    let mut out = user.to_vec();
    for (t, v) in forced.iter() {
        let v = v.as_plain().ok_or(err(CKR_TEMPLATE_INCONSISTENT))?;
        match template::template_value(user, *t)? {
            Some(given) if given != v => return Err(err(CKR_TEMPLATE_INCONSISTENT)),
            Some(_) => {}
            None => out.push(Attr::new(*t, v)),
        }
    }
    Ok(out)
}

/// Key-wrap separation (`wrap_separation`, on by default): could the output
/// of wrapping under `wrapping` be decrypted on this token by `C_Decrypt`?
/// Yes if some secret key holding the same value (the wrapping key itself
/// or a copy of it, whatever their other attributes) has `CKA_DECRYPT`, or
/// for an RSA public key, if a private key with its modulus (any visibility)
/// has `CKA_DECRYPT`. A sensitive key is never wrapped so: wrapping it and
/// then decrypting the result would reveal its value. (An object whose
/// value cannot be read here — a private key of a user not logged in — is
/// counted as able to decrypt.)
fn could_decrypt_what_it_wraps(token: &Token, wrapping: &Object) -> Result<bool> {
    // A secret key that may derive can make a copy of its own value
    // (`CKM_CONCATENATE_BASE_AND_DATA` with no data, `CKM_EXTRACT_KEY_FROM_KEY`
    // at bit 0) with `CKA_DECRYPT`, after the wrap.
    if wrapping.class == CKO_SECRET_KEY && wrapping.flag(CKA_DERIVE) {
        return Ok(true);
    }
    Ok(match (wrapping.class, wrapping.key_type) {
        (CKO_SECRET_KEY, _) => {
            let keys = token.seal_keys();
            let value = wrapping.plain_value(CKA_VALUE, keys.for_object(wrapping).map(|k| &**k))?;
            token.any_object(|o| {
                o.class == CKO_SECRET_KEY
                    && o.flag(CKA_DECRYPT)
                    && match (
                        &value,
                        o.plain_value(CKA_VALUE, keys.for_object(o).map(|k| &**k)),
                    ) {
                        (Some(w), Ok(Some(v))) => **w == *v,
                        (Some(_), Ok(None)) => false,
                        _ => true,
                    }
            })
        }
        (CKO_PUBLIC_KEY, Some(CKK_RSA)) => wrapping.with_attrs(|a| {
            a.bytes(CKA_MODULUS).is_some_and(|n| {
                token.any_object(|o| {
                    o.class == CKO_PRIVATE_KEY
                        && o.flag(CKA_DECRYPT)
                        && o.with_attrs(|p| p.bytes(CKA_MODULUS) == Some(n))
                })
            })
        }),
        _ => false,
    })
}

/// For an RSA public key: true if the token holds its private half and
/// every private key with its modulus never was extractable (so no caller
/// can know it).
fn private_halves_never_extractable(token: &Token, public: &Object) -> bool {
    if public.class != CKO_PUBLIC_KEY || public.key_type != Some(CKK_RSA) {
        return false;
    }
    let Some(n) = public.with_attrs(|a| a.bytes(CKA_MODULUS).map(<[u8]>::to_vec)) else {
        return false;
    };
    let half = |o: &Object| {
        o.class == CKO_PRIVATE_KEY && o.with_attrs(|p| p.bytes(CKA_MODULUS) == Some(&n[..]))
    };
    token.any_object(half) && !token.any_object(|o| half(o) && !o.flag(CKA_NEVER_EXTRACTABLE))
}

/// `C_UnwrapKey`: decrypts and creates the key described by `template`
/// (which must give `CKA_CLASS` and `CKA_KEY_TYPE`).
pub fn unwrap_key(
    session: &Session,
    mech: &Mechanism<'_>,
    unwrapping: CK_OBJECT_HANDLE,
    wrapped: &[u8],
    template: &[Attr],
) -> Result<CK_OBJECT_HANDLE> {
    mechanisms::require(mech, CKF_UNWRAP)?;
    let token = &session.token;
    let material =
        single_call_key(session, unwrapping, mech, CKA_UNWRAP).map_err(|e| match e.rv() {
            CKR_KEY_HANDLE_INVALID => err(CKR_UNWRAPPING_KEY_HANDLE_INVALID),
            CKR_KEY_TYPE_INCONSISTENT => err(CKR_UNWRAPPING_KEY_TYPE_INCONSISTENT),
            _ => e,
        })?;
    let mut op = mechanisms::cipher_init(mech, material, Direction::Decrypt, CKF_UNWRAP).map_err(
        |e| match e.rv() {
            CKR_KEY_TYPE_INCONSISTENT => err(CKR_UNWRAPPING_KEY_TYPE_INCONSISTENT),
            _ => e,
        },
    )?;
    let mut plain = Zeroizing::new(vec![0u8; op.output_len(wrapped.len()).bound()]);
    let n = op.process(wrapped, &mut plain).map_err(|e| match e.rv() {
        CKR_ENCRYPTED_DATA_INVALID | CKR_ENCRYPTED_DATA_LEN_RANGE | CKR_DATA_LEN_RANGE => {
            err(CKR_WRAPPED_KEY_INVALID)
        }
        _ => e,
    })?;
    plain.truncate(n);
    let template = &with_key_template(&*token.key(unwrapping)?, CKA_UNWRAP_TEMPLATE, template)?;
    let (class, key_type, tables) = template::tables_for_new(template, None, None)?;
    let key_type = key_type.ok_or(err(CKR_TEMPLATE_INCOMPLETE))?;
    let mut attrs = key_policy::build(
        template,
        tables,
        Origin::Unwrap,
        token.logged_in() == Some(CKU_SO),
        Rules::of(token.config()),
    )?;
    check_write_access(session, attrs.flag(CKA_TOKEN), attrs.flag(CKA_PRIVATE))?;
    attrs.set_ulong(CKA_CLASS, class);
    keys::import_unwrapped(class, key_type, &plain, &mut attrs)?;
    keys::complete_import(class, Some(key_type), &mut attrs).map_err(|e| match e.rv() {
        CKR_ATTRIBUTE_VALUE_INVALID | CKR_CURVE_NOT_SUPPORTED => err(CKR_WRAPPED_KEY_INVALID),
        _ => e,
    })?;
    set_key_origin(&mut attrs, Origin::Unwrap, None);
    insert_new(session, attrs, tables)
}

/// `C_DeriveKey`: a secret key from a base key (ECDH).
pub fn derive_key(
    session: &Session,
    mech: &Mechanism<'_>,
    base: CK_OBJECT_HANDLE,
    template: &[Attr],
) -> Result<CK_OBJECT_HANDLE> {
    mechanisms::require(mech, CKF_DERIVE)?;
    let material = single_call_key(session, base, mech, CKA_DERIVE)?;
    let base_key = session.token.key(base)?;
    let mut protection = BaseProtection::of(&base_key);
    let mut template = with_key_template(&base_key, CKA_DERIVE_TEMPLATE, template)?;
    drop(base_key);
    // The second key a parameter names (the HKDF salt key, the key of
    // CKM_CONCATENATE_BASE_AND_KEY) must allow derivation and this
    // mechanism, as the base key must.
    // Bytes of the second key that are secret: they count towards the
    // derived key's strength like the base's.
    let mut other_secret_len = 0;
    let other = match mech.param {
        mechanisms::Param::Hkdf(mechanisms::kdf::hkdf::Params {
            salt: mechanisms::kdf::hkdf::Salt::Key(handle),
            ..
        }) => Some(kdf_key_value(&*single_call_key(
            session, handle, mech, CKA_DERIVE,
        )?)?),
        mechanisms::Param::Handle(handle) => {
            let value = secret_key_value(&*single_call_key(session, handle, mech, CKA_DERIVE)?)?;
            let second = BaseProtection::of(&*session.token.key(handle)?);
            if second.protected() {
                other_secret_len = value.len();
            }
            protection = protection.and(second);
            Some(value)
        }
        _ => None,
    };
    if mechanisms::derives_by_simple_function(mech.ty) {
        protection.impose_on(&mut template);
    }
    let template = &template;
    let given = template::template_value(template, CKA_KEY_TYPE)?
        .map(crate::attributes::decode_ulong)
        .transpose()?;
    let key_type = given.unwrap_or(CKK_GENERIC_SECRET);
    let len = template::template_value(template, CKA_VALUE_LEN)?
        .map(crate::attributes::decode_ulong)
        .transpose()?;
    let len = match (key_type, len) {
        (_, Some(l)) => Some(usize::try_from(l).map_err(|_| err(CKR_ATTRIBUTE_VALUE_INVALID))?),
        (_, None) => mechanisms::default_derived_len(key_type),
    };
    // The length drives the KDF's output buffer and loop: bounded first.
    if let Some(l) = len {
        mechanisms::check_secret_len(key_type, l)?;
    }
    let mut value = mechanisms::derive(mech, &material, len, other.as_ref().map(|v| v.as_slice()))?;
    if mech.ty != CKM_HKDF_DATA {
        // Key-length reduction (Clulow 2003): the new key keeps at least
        // the floor of its base's strength. (HKDF_DATA makes a data object,
        // not a key: a PRF output that reveals nothing of its base.)
        key_policy::check_derived_strength(
            protection.protected(),
            strength::strength(&material),
            mechanisms::secret_bytes_in_derived(mech, &material, other_secret_len, value.len()),
            strength::secret_strength(key_type, value.len()),
        )?;
    }
    mechanisms::shape_derived_value(key_type, &mut value);
    let mut template: Vec<Attr> = template
        .iter()
        .filter(|a| a.ty != CKA_VALUE_LEN)
        .cloned()
        .collect();
    if mech.ty == CKM_HKDF_DATA {
        // Mechanisms spec 3.0 §2.43.3: the output is a data object.
        if template
            .iter()
            .any(|a| a.ty == CKA_VALUE || a.ty == CKA_KEY_TYPE)
        {
            return Err(err(CKR_TEMPLATE_INCONSISTENT));
        }
        if !template.iter().any(|a| a.ty == CKA_CLASS) {
            template.push(Attr::ulong(CKA_CLASS, CKO_DATA));
        }
        if template::template_value(&template, CKA_CLASS)?
            .map(crate::attributes::decode_ulong)
            .transpose()?
            != Some(CKO_DATA)
        {
            return Err(err(CKR_TEMPLATE_INCONSISTENT));
        }
        template.push(Attr::new(CKA_VALUE, &value));
        return super::objects::create(session, &template);
    }
    insert_secret(
        session,
        &template,
        Some(key_type),
        Origin::Derive,
        mech.ty,
        &value,
        Some(protection),
    )
}

/// SP 800-108 derivation (mechanisms spec 3.0 §2.42 "SP 800-108 Key
/// Derivation"): the key of `template` and one key for each of
/// `additional` (the `CK_DERIVED_KEY` templates), from consecutive,
/// disjoint segments of one KDF output ("Deriving Additional Keys"). Each
/// key follows the protection rules of the primary key ("Key Derivation
/// Attribute Rules"). All or nothing: if any key cannot be made, the keys
/// already made are removed and the error returned. Returns the primary
/// key's handle and then the additional keys' handles.
pub fn derive_keys_sp800_108(
    session: &Session,
    mech: &Mechanism<'_>,
    base: CK_OBJECT_HANDLE,
    template: &[Attr],
    additional: &[Vec<Attr>],
) -> Result<Vec<CK_OBJECT_HANDLE>> {
    mechanisms::require(mech, CKF_DERIVE)?;
    let material = single_call_key(session, base, mech, CKA_DERIVE)?;
    let base_key = session.token.key(base)?;
    let protection = BaseProtection::of(&base_key);
    let mut templates = std::iter::once(template)
        .chain(additional.iter().map(Vec::as_slice))
        .map(|t| with_key_template(&base_key, CKA_DERIVE_TEMPLATE, t))
        .collect::<Result<Vec<_>>>()?;
    // "Key Derivation Attribute Rules": CKA_SENSITIVE and CKA_EXTRACTABLE
    // left out of a template take the base key's values.
    for t in &mut templates {
        if !t.iter().any(|a| a.ty == CKA_SENSITIVE) {
            t.push(Attr::bool(CKA_SENSITIVE, protection.sensitive));
        }
        if !t.iter().any(|a| a.ty == CKA_EXTRACTABLE) {
            t.push(Attr::bool(CKA_EXTRACTABLE, protection.extractable));
        }
    }
    drop(base_key);
    let mut shapes = Vec::with_capacity(templates.len());
    for t in &templates {
        let key_type = template::template_value(t, CKA_KEY_TYPE)?
            .map(crate::attributes::decode_ulong)
            .transpose()?
            .unwrap_or(CKK_GENERIC_SECRET);
        let len = match template::template_value(t, CKA_VALUE_LEN)?
            .map(crate::attributes::decode_ulong)
            .transpose()?
        {
            Some(l) => usize::try_from(l).map_err(|_| err(CKR_ATTRIBUTE_VALUE_INVALID))?,
            None => {
                mechanisms::default_derived_len(key_type).ok_or(err(CKR_TEMPLATE_INCOMPLETE))?
            }
        };
        // Bounded before it reaches the KDF's buffer and loop.
        mechanisms::check_secret_len(key_type, len)?;
        // Each key keeps the floor of its base's strength (as C_DeriveKey).
        key_policy::check_derived_strength(
            protection.protected(),
            strength::strength(&material),
            len,
            strength::secret_strength(key_type, len),
        )?;
        shapes.push((key_type, len));
    }
    let lens: Vec<usize> = shapes.iter().map(|&(_, l)| l).collect();
    let mut values = mechanisms::derive_sp800_108(mech, &material, &lens)?;
    for (value, (key_type, _)) in values.iter_mut().zip(&shapes) {
        mechanisms::shape_derived_value(*key_type, value);
    }
    let mut made = Vec::with_capacity(values.len());
    for ((t, (key_type, _)), value) in templates.iter().zip(&shapes).zip(&values) {
        let t: Vec<Attr> = t
            .iter()
            .filter(|a| a.ty != CKA_VALUE_LEN)
            .cloned()
            .collect();
        match insert_secret(
            session,
            &t,
            Some(*key_type),
            Origin::Derive,
            mech.ty,
            value,
            Some(protection),
        ) {
            Ok(h) => made.push(h),
            Err(e) => {
                for h in made {
                    if let Ok(obj) = session.token.object(h) {
                        let _ = session.token.remove(&obj);
                    }
                }
                return Err(e);
            }
        }
    }
    Ok(made)
}

/// The value of any secret key a derivation parameter names (the second
/// key of `CKM_CONCATENATE_BASE_AND_KEY`), else `CKR_KEY_TYPE_INCONSISTENT`.
fn secret_key_value(material: &KeyMaterial) -> Result<Zeroizing<Vec<u8>>> {
    mechanisms::secret_value(material).map(|v| Zeroizing::new(v.to_vec()))
}

/// The value of a secret key a KDF parameter names (a generic secret or
/// HKDF key), else `CKR_KEY_TYPE_INCONSISTENT`.
fn kdf_key_value(material: &KeyMaterial) -> Result<Zeroizing<Vec<u8>>> {
    match material {
        KeyMaterial::Secret {
            key_type: CKK_GENERIC_SECRET | CKK_HKDF,
            value,
            ..
        } => Ok(value.clone()),
        _ => Err(err(CKR_KEY_TYPE_INCONSISTENT)),
    }
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
