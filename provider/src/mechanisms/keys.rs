//! Parsed key material, built once per object and cached (`Object::key_material`),
//! and the per-key-type checks of imported keys.

use super::eddsa;
use crate::api::attributes::Attributes;
use crate::api::object::Object;
use crate::error::{Result, err};
use crate::storage::seal::TokenKey;
use cryptoki_sys::*;

/// A key ready for use. The signing keys zeroize themselves when dropped.
pub enum KeyMaterial {
    /// Ed25519 private key.
    Ed25519Private(ed25519_dalek::SigningKey),
    /// Ed25519 public key.
    Ed25519Public(ed25519_dalek::VerifyingKey),
}

/// Builds the key material of `obj`, unsealing its secret values with `token_key`.
pub fn load(obj: &Object, token_key: Option<&TokenKey>) -> Result<KeyMaterial> {
    let value = |ty| {
        obj.plain_value(ty, token_key)?
            .ok_or(err(CKR_KEY_HANDLE_INVALID))
    };
    match (obj.class, obj.key_type) {
        (CKO_PRIVATE_KEY, Some(CKK_EC_EDWARDS)) => eddsa::load_private(&value(CKA_VALUE)?),
        (CKO_PUBLIC_KEY, Some(CKK_EC_EDWARDS)) => eddsa::load_public(&value(CKA_EC_POINT)?),
        _ => Err(err(CKR_KEY_TYPE_INCONSISTENT)),
    }
}

/// Checks the key values of an object made by `C_CreateObject` (or
/// unwrapped), normalises encodings and adds computed values.
pub fn complete_import(
    class: CK_OBJECT_CLASS,
    key_type: Option<CK_KEY_TYPE>,
    attrs: &mut Attributes,
) -> Result<()> {
    match (class, key_type) {
        (CKO_PRIVATE_KEY | CKO_PUBLIC_KEY, Some(CKK_EC_EDWARDS)) => {
            eddsa::complete_import(class, attrs)
        }
        (CKO_PRIVATE_KEY | CKO_PUBLIC_KEY, Some(_)) => Err(err(CKR_ATTRIBUTE_VALUE_INVALID)),
        (CKO_SECRET_KEY, Some(_)) => {
            let len = attrs
                .bytes(CKA_VALUE)
                .map(<[u8]>::len)
                .ok_or(err(CKR_TEMPLATE_INCOMPLETE))?;
            if len == 0 {
                return Err(err(CKR_ATTRIBUTE_VALUE_INVALID));
            }
            match attrs.ulong(CKA_VALUE_LEN) {
                Some(l) if l as usize != len => return Err(err(CKR_TEMPLATE_INCONSISTENT)),
                _ => attrs.set_ulong(CKA_VALUE_LEN, len as CK_ULONG),
            }
            Ok(())
        }
        _ => Ok(()),
    }
}
