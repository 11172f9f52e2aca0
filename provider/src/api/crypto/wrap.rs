//! Key wrapping and unwrapping (base spec §5.15 `C_WrapKey`,
//! `C_UnwrapKey`; §4.8 `CKA_WRAP_TEMPLATE`, `CKA_WRAP_WITH_TRUSTED`,
//! `CKA_TRUSTED`; §4.9 `CKA_UNWRAP_TEMPLATE`), with the key-management
//! policy's wrap separation and wrapping-key strength (docs/SECURITY.md,
//! "Key-management policy").

use super::key_use::{material_of, single_call_key};
use super::new_key::with_key_template;
use crate::api::key_policy::{self, Rules};
use crate::api::object::Object;
use crate::api::objects::{check_write_access, insert_new, set_key_origin};
use crate::api::session::Session;
use crate::api::template::{self, Origin};
use crate::api::token::Token;
use crate::attributes::{Attr, decode_template};
use crate::error::{Error, Result, err};
use crate::mechanisms::keys;
use crate::mechanisms::strength;
use crate::mechanisms::{self, CipherOperation, Direction, Mechanism};
use cryptoki_sys::*;
use zeroize::Zeroizing;

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
    let (material, bytes) = checked_export(session, mech, wrapping, key)?;
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

/// Every check a wrap makes before it encrypts (`C_WrapKey`,
/// `C_WrapKeyAuthenticated`): the wrapping key's usage and mechanism, the
/// key's extractability, `CKA_WRAP_WITH_TRUSTED`, `CKA_WRAP_TEMPLATE`, wrap
/// separation, the wrapping key's strength and the `strict` policy's
/// rules. The wrapping key's material and the key's encoding to wrap.
pub(super) fn checked_export(
    session: &Session,
    mech: &Mechanism<'_>,
    wrapping: CK_OBJECT_HANDLE,
    key: CK_OBJECT_HANDLE,
) -> Result<(std::sync::Arc<keys::KeyMaterial>, Zeroizing<Vec<u8>>)> {
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
    Ok((material, bytes))
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
    let material = unwrapping_key(session, mech, unwrapping)?;
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
    import_unwrapped(session, unwrapping, &plain, template)
}

/// The unwrapping key's material, checked for `mech` and `CKA_UNWRAP`.
pub(super) fn unwrapping_key(
    session: &Session,
    mech: &Mechanism<'_>,
    unwrapping: CK_OBJECT_HANDLE,
) -> Result<std::sync::Arc<keys::KeyMaterial>> {
    single_call_key(session, unwrapping, mech, CKA_UNWRAP).map_err(|e| match e.rv() {
        CKR_KEY_HANDLE_INVALID => err(CKR_UNWRAPPING_KEY_HANDLE_INVALID),
        CKR_KEY_TYPE_INCONSISTENT => err(CKR_UNWRAPPING_KEY_TYPE_INCONSISTENT),
        _ => e,
    })
}

/// The new key an unwrap makes of `plain` (the decrypted key value or
/// PKCS#8 encoding) with `template` and the unwrapping key's
/// `CKA_UNWRAP_TEMPLATE` (`C_UnwrapKey`, `C_UnwrapKeyAuthenticated`).
pub(super) fn import_unwrapped(
    session: &Session,
    unwrapping: CK_OBJECT_HANDLE,
    plain: &[u8],
    template: &[Attr],
) -> Result<CK_OBJECT_HANDLE> {
    let token = &session.token;
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
    keys::import_unwrapped(class, key_type, plain, &mut attrs)?;
    keys::complete_import(class, Some(key_type), &mut attrs).map_err(|e| match e.rv() {
        CKR_ATTRIBUTE_VALUE_INVALID | CKR_CURVE_NOT_SUPPORTED => err(CKR_WRAPPED_KEY_INVALID),
        _ => e,
    })?;
    set_key_origin(&mut attrs, Origin::Unwrap, None);
    insert_new(session, attrs, tables)
}
