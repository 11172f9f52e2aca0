//! ML-KEM key objects (PKCS#11 3.2 mechanisms spec, ML-KEM public and
//! private key objects): loading, import checks, key-pair generation and
//! the LAMPS encodings (SubjectPublicKeyInfo for `CKA_PUBLIC_KEY_INFO`,
//! PKCS#8 seed form for `C_WrapKey`).
//!
//! Attributes: `CKA_PARAMETER_SET` (`CKP_ML_KEM_512/768/1024`) on both
//! keys; the public key's `CKA_VALUE` is ek; the private key's `CKA_SEED`
//! is d‖z (64 bytes, the source of truth) and its `CKA_VALUE` the expanded
//! dk, both sensitive. An import may give the seed (the expanded value, if
//! given too, must agree) or the expanded key alone, which is checked
//! before use (`PrivateKey::from_expanded`); such a key has no seed and
//! cannot be wrapped (the seed form needs one).

use super::key::{PrivateKey, PublicKey};
use super::params::{ParamSet, SEED_LEN};
use crate::attributes::Attributes;
use crate::error::{Result, err};
use crate::mechanisms::lamps;
use crate::mechanisms::material::{GeneratedPair, KeyMaterial};
use crate::mechanisms::pq_keys::{self, SeededKey, stored_set};
use cryptoki_sys::*;
use zeroize::Zeroizing;

impl pq_keys::ParameterSet for ParamSet {
    fn from_ckp(value: CK_ULONG) -> Result<ParamSet> {
        ParamSet::from_ckp(value)
    }
    fn ckp(self) -> CK_ULONG {
        ParamSet::ckp(self)
    }
    fn algorithm_identifier(self) -> [u8; 13] {
        ParamSet::algorithm_identifier(self)
    }
}

impl SeededKey for PrivateKey {
    type Set = ParamSet;
    const SEED_LEN: usize = SEED_LEN;
    fn from_seed(set: ParamSet, seed: &[u8]) -> Result<PrivateKey> {
        PrivateKey::from_seed(set, seed)
    }
    fn from_expanded(set: ParamSet, value: &[u8]) -> Result<PrivateKey> {
        PrivateKey::from_expanded(set, value)
    }
    fn public_encoding(&self) -> Vec<u8> {
        PrivateKey::public_encoding(self)
    }
    fn expanded_encoding(&self) -> Zeroizing<Vec<u8>> {
        PrivateKey::expanded_encoding(self)
    }
}

/// Parses a stored private key from its `CKA_PARAMETER_SET` and its
/// `CKA_SEED`, or, for a key imported without one, its expanded
/// `CKA_VALUE` (checked again as on import).
pub fn load_private(set: &[u8], seed: Option<&[u8]>, value: Option<&[u8]>) -> Result<KeyMaterial> {
    let set = stored_set(set)?;
    let key = match (seed, value) {
        (Some(seed), _) => PrivateKey::from_seed(set, seed)?,
        (None, Some(value)) => {
            PrivateKey::from_expanded(set, value).map_err(|_| err(CKR_KEY_HANDLE_INVALID))?
        }
        (None, None) => return Err(err(CKR_KEY_HANDLE_INVALID)),
    };
    Ok(KeyMaterial::MlKemPrivate(Box::new(key)))
}

/// Parses a stored public key from its `CKA_PARAMETER_SET` and `CKA_VALUE`.
pub fn load_public(set: &[u8], value: &[u8]) -> Result<KeyMaterial> {
    let key =
        PublicKey::decode(stored_set(set)?, value).map_err(|_| err(CKR_KEY_HANDLE_INVALID))?;
    Ok(KeyMaterial::MlKemPublic(Box::new(key)))
}

/// PKCS#8 `PrivateKeyInfo` of a key in the seed form (the LAMPS ML-KEM certificate specification: the `[0]`
/// seed choice), for `C_WrapKey`.
pub fn pkcs8(set: ParamSet, seed: &[u8]) -> Zeroizing<Vec<u8>> {
    lamps::seed_pkcs8(&set.algorithm_identifier(), seed)
}

/// Parses what [`pkcs8`] produces (`CKR_WRAPPED_KEY_INVALID` otherwise:
/// the expanded and "both" forms are not accepted) and sets `CKA_SEED` and
/// `CKA_PARAMETER_SET` (a template's own value must agree:
/// `CKR_TEMPLATE_INCONSISTENT`). `CKA_VALUE` follows in [`complete_import`].
pub fn from_pkcs8(der: &[u8], attrs: &mut Attributes) -> Result<()> {
    pq_keys::seed_from_pkcs8(der, attrs, ParamSet::from_oid_arc, SEED_LEN)
}

/// Checks an imported key and adds the computed values
/// (`pq_keys::complete_seeded_import`); a public key's value must decode.
pub fn complete_import(class: CK_OBJECT_CLASS, attrs: &mut Attributes) -> Result<()> {
    pq_keys::complete_seeded_import::<PrivateKey>(class, attrs, |set, value| {
        PublicKey::decode(set, value).map(drop)
    })
}

/// Generates a key pair (FIPS 203 Algorithm 19, ML-KEM.KeyGen: d and z from the token's RNG) for the
/// `CKA_PARAMETER_SET` of the public template.
pub fn generate(public_template: &Attributes) -> Result<GeneratedPair> {
    pq_keys::generate_seeded::<PrivateKey>(public_template, CKK_ML_KEM)
}

/// The PKCS#8 DER `C_WrapKey` encrypts, from the stored attributes; a key
/// imported without its seed is `CKR_KEY_NOT_WRAPPABLE`.
pub fn to_pkcs8(set: &[u8], seed: Option<&[u8]>) -> Result<Zeroizing<Vec<u8>>> {
    pq_keys::seed_to_pkcs8::<ParamSet>(set, seed, SEED_LEN)
}
