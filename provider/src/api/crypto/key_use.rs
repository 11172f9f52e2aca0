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
use crate::mechanisms::{self, Mechanism, strength};
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
    check_permits(&key, mech.ty, usage)?;
    let material = material_of(token, &key)?;
    check_mac_floor(&key, &material, usage)?;
    if usage == CKA_VERIFY {
        key_policy::check_short_mac_verify(mechanisms::truncated_mac_len(mech), || {
            could_sign(&key, &material, mech)
        })?;
    }
    Ok(UsableKey {
        material,
        always_authenticate: key.flag(CKA_ALWAYS_AUTHENTICATE),
    })
}

/// The key's usage flag for the function (`CKA_SIGN`, ...), else
/// `CKR_KEY_FUNCTION_NOT_PERMITTED`, and `mech` among its
/// `CKA_ALLOWED_MECHANISMS`, else `CKR_MECHANISM_INVALID`.
fn check_permits(key: &Object, mech: CK_MECHANISM_TYPE, usage: CK_ATTRIBUTE_TYPE) -> Result<()> {
    if !key.flag(usage) {
        return Err(err(CKR_KEY_FUNCTION_NOT_PERMITTED));
    }
    if !key.allows_mechanism(mech) {
        return Err(err(CKR_MECHANISM_INVALID));
    }
    Ok(())
}

/// A MAC is an oracle on its key: none weaker than the floor (a short HMAC
/// key, two-key Triple DES for DES3-MAC/CMAC).
fn check_mac_floor(key: &Object, material: &KeyMaterial, usage: CK_ATTRIBUTE_TYPE) -> Result<()> {
    if matches!(usage, CKA_SIGN | CKA_VERIFY)
        && matches!(*material, KeyMaterial::Secret { .. } | KeyMaterial::Des(_))
    {
        key_policy::check_mac_key(key.flag(CKA_SENSITIVE), strength::strength(material))?;
    }
    Ok(())
}

/// Would `C_SignInit` with `mech` take `key` (whose parsed material is
/// `material`) now? The same checks, without starting anything.
pub(super) fn could_sign(key: &Object, material: &Arc<KeyMaterial>, mech: &Mechanism<'_>) -> bool {
    check_permits(key, mech.ty, CKA_SIGN).is_ok()
        && check_mac_floor(key, material, CKA_SIGN).is_ok()
        && mechanisms::sign_init(mech, material.clone()).is_ok()
}

/// May `key` derive a copy of its own value
/// ([`mechanisms::COPYING_DERIVATIONS`]), which takes whatever usage the
/// caller gives it? Then any use of the value is open to the caller,
/// whatever `key`'s own usage flags say.
pub(super) fn may_derive_a_copy(key: &Object) -> bool {
    key.flag(CKA_DERIVE)
        && mechanisms::COPYING_DERIVATIONS
            .into_iter()
            .any(|m| key.allows_mechanism(m))
}

/// Does a signature under `key`, or under a copy of it the caller derives
/// ([`may_derive_a_copy`]), compute the output of the derivation `mech`
/// ([`mechanisms::kdf::mac_oracle`]: an HMAC or CMAC keyed by the base over
/// data the caller chose)? Then the caller can know the derived value
/// (docs/SECURITY.md, "Derived keys").
pub(super) fn signs_derived_output(
    key: &Object,
    material: &Arc<KeyMaterial>,
    mech: &Mechanism<'_>,
) -> bool {
    let macs = mechanisms::kdf::mac_oracle::signatures_giving_output(mech);
    !macs.is_empty()
        && (may_derive_a_copy(key) || macs.iter().any(|m| could_sign(key, material, m)))
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
