//! AES keys as key material: parsing a stored value, and the AES key of
//! a key an operation was given.

use super::key::AesKey;
use crate::error::{Result, err};
use crate::mechanisms::material::KeyMaterial;
use cryptoki_sys::CKR_KEY_TYPE_INCONSISTENT;

/// Parses an AES key value into key material (its schedule expanded once).
pub fn load(value: &[u8]) -> Result<KeyMaterial> {
    AesKey::new(value).map(KeyMaterial::Aes)
}

/// The AES key of `key`, else `CKR_KEY_TYPE_INCONSISTENT`.
pub fn aes_key(key: &KeyMaterial) -> Result<&AesKey> {
    match key {
        KeyMaterial::Aes(k) => Ok(k),
        _ => Err(err(CKR_KEY_TYPE_INCONSISTENT)),
    }
}
