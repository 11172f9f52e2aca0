//! Which key an operation may use (base spec §5.8–5.15 on each `C_*Init`,
//! §4.9 key usage flags, §4.8 `CKA_ALLOWED_MECHANISMS`, §4.9
//! `CKA_ALWAYS_AUTHENTICATE`): the checks every operation that takes a key
//! makes, and the parsed key they return.

use crate::api::key_policy;
use crate::api::object::Object;
use crate::api::session::Session;
use crate::api::token::Token;
use crate::error::{Result, err};
use crate::mechanisms::keys::{self, KeyMaterial};
use crate::mechanisms::{Mechanism, strength};
use cryptoki_sys::*;
use std::sync::Arc;

/// A key found usable for an operation.
pub(super) struct UsableKey {
    /// Its parsed material.
    pub(super) material: Arc<KeyMaterial>,
    /// `CKA_ALWAYS_AUTHENTICATE`: each use needs `C_Login(CKU_CONTEXT_SPECIFIC)`.
    pub(super) always_authenticate: bool,
}

/// Checks a key for use with `mech` in a function needing `usage`
/// (`CKA_SIGN`, ...) and returns its parsed material.
pub(super) fn usable_key(
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
pub(super) fn material_of(token: &Token, key: &Object) -> Result<Arc<KeyMaterial>> {
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
pub(in crate::api) fn check_restored_key(
    session: &Session,
    handle: CK_OBJECT_HANDLE,
    mechanism: CK_MECHANISM_TYPE,
    usage: CK_ATTRIBUTE_TYPE,
) -> Result<()> {
    usable_key(session, handle, &Mechanism::plain(mechanism), usage).map(drop)
}

/// The key of a restored encryption or decryption (`C_SetOperationState`'s
/// `hEncryptionKey`), checked as `C_EncryptInit` / `C_DecryptInit` check
/// it. A key that needs a context login for every use
/// (`CKA_ALWAYS_AUTHENTICATE`) is `CKR_KEY_FUNCTION_NOT_PERMITTED`: a
/// restore offers no such login.
pub(in crate::api) fn restored_cipher_key(
    session: &Session,
    handle: CK_OBJECT_HANDLE,
    mechanism: CK_MECHANISM_TYPE,
    usage: CK_ATTRIBUTE_TYPE,
) -> Result<Arc<KeyMaterial>> {
    single_call_key(session, handle, &Mechanism::plain(mechanism), usage)
}

/// A key for a single-call operation (`C_UnwrapKey`, `C_DeriveKey`): no
/// `C_Login(CKU_CONTEXT_SPECIFIC)` can come between an init and the use,
/// so a key that needs one for every use (`CKA_ALWAYS_AUTHENTICATE`) is
/// refused with `CKR_KEY_FUNCTION_NOT_PERMITTED` rather than used unasked.
pub(super) fn single_call_key(
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
pub(in crate::api) fn message_key(
    session: &Session,
    handle: CK_OBJECT_HANDLE,
    mech: &Mechanism<'_>,
    usage: CK_ATTRIBUTE_TYPE,
) -> Result<Arc<KeyMaterial>> {
    single_call_key(session, handle, mech, usage)
}
