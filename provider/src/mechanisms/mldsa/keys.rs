//! ML-DSA key objects (PKCS#11 3.2 mechanisms spec, ML-DSA public and
//! private key objects): loading, import checks, key-pair generation and
//! the RFC 9881 encodings (SubjectPublicKeyInfo for `CKA_PUBLIC_KEY_INFO`,
//! PKCS#8 seed form for `C_WrapKey`).
//!
//! Attributes: `CKA_PARAMETER_SET` (`CKP_ML_DSA_44/65/87`) on both keys;
//! the public key's `CKA_VALUE` is pkEncode; the private key's `CKA_SEED`
//! is ξ (32 bytes, the source of truth) and its `CKA_VALUE` skEncode (the
//! expanded key), both sensitive. An import may give the seed (the expanded
//! value, if given too, must agree) or the expanded key alone, which is
//! validated before use (`PrivateKey::from_expanded`); such a key has no
//! seed and cannot be wrapped (RFC 9881's seed form needs one).

use super::key::{PrivateKey, PublicKey};
use super::params::{ParamSet, SEED_LEN};
use crate::attributes::{Attributes, decode_ulong};
use crate::error::{Result, err};
use crate::mechanisms::lamps;
use crate::mechanisms::material::{GeneratedPair, KeyMaterial};
use crate::mechanisms::random::os_fill;
use cryptoki_sys::*;
use zeroize::Zeroizing;

/// The parameter set a stored `CKA_PARAMETER_SET` value names.
fn stored_set(value: &[u8]) -> Result<ParamSet> {
    let v = decode_ulong(value).map_err(|_| err(CKR_KEY_HANDLE_INVALID))?;
    ParamSet::from_ckp(v).map_err(|_| err(CKR_KEY_HANDLE_INVALID))
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
    Ok(KeyMaterial::MlDsaPrivate(Box::new(key)))
}

/// Parses a stored public key from its `CKA_PARAMETER_SET` and `CKA_VALUE`.
pub fn load_public(set: &[u8], value: &[u8]) -> Result<KeyMaterial> {
    let key =
        PublicKey::decode(stored_set(set)?, value).map_err(|_| err(CKR_KEY_HANDLE_INVALID))?;
    Ok(KeyMaterial::MlDsaPublic(Box::new(key)))
}

/// The parameter set of a template (`CKR_TEMPLATE_INCOMPLETE` if absent).
fn template_set(attrs: &Attributes) -> Result<ParamSet> {
    let v = attrs
        .ulong(CKA_PARAMETER_SET)
        .ok_or(err(CKR_TEMPLATE_INCOMPLETE))?;
    ParamSet::from_ckp(v)
}

/// SubjectPublicKeyInfo DER of a public key (RFC 9881 §4: the algorithm
/// identifier without parameters, the raw pkEncode as the BIT STRING).
pub fn spki(set: ParamSet, public: &[u8]) -> Vec<u8> {
    lamps::spki(&set.algorithm_identifier(), public)
}

/// PKCS#8 `PrivateKeyInfo` of a key in the seed form (RFC 9881 §6: the
/// `[0]` seed choice of `ML-DSA-PrivateKey`), for `C_WrapKey`.
pub fn pkcs8(set: ParamSet, seed: &[u8]) -> Zeroizing<Vec<u8>> {
    lamps::seed_pkcs8(&set.algorithm_identifier(), seed)
}

/// Parses what [`pkcs8`] produces (`CKR_WRAPPED_KEY_INVALID` otherwise:
/// the expanded and "both" forms are not accepted) and sets `CKA_SEED` and
/// `CKA_PARAMETER_SET` (a template's own value must agree:
/// `CKR_TEMPLATE_INCONSISTENT`). `CKA_VALUE` follows in [`complete_import`].
pub fn from_pkcs8(der: &[u8], attrs: &mut Attributes) -> Result<()> {
    let bad = || err(CKR_WRAPPED_KEY_INVALID);
    let arc = *der.get(lamps::PKCS8_OID_ARC_OFFSET).ok_or_else(bad)?;
    let set = ParamSet::from_oid_arc(arc).ok_or_else(bad)?;
    let seed = lamps::seed_of_pkcs8(der, &set.algorithm_identifier(), SEED_LEN).ok_or_else(bad)?;
    match attrs.ulong(CKA_PARAMETER_SET) {
        Some(v) if v != set.ckp() => return Err(err(CKR_TEMPLATE_INCONSISTENT)),
        _ => attrs.set_ulong(CKA_PARAMETER_SET, set.ckp()),
    }
    attrs.set_bytes(CKA_SEED, seed);
    Ok(())
}

/// Checks an imported ML-DSA key and adds the computed values: for a
/// private key from its seed, the expanded `CKA_VALUE` (a given one must
/// equal it); from an expanded value alone, its checks; and for both the
/// public key's SPKI. For a public key, the value's length for its
/// parameter set, and its SPKI.
pub fn complete_import(class: CK_OBJECT_CLASS, attrs: &mut Attributes) -> Result<()> {
    let set = template_set(attrs).map_err(|e| match e.rv() {
        CKR_PARAMETER_SET_NOT_SUPPORTED => err(CKR_ATTRIBUTE_VALUE_INVALID),
        _ => e,
    })?;
    let public = if class == CKO_PRIVATE_KEY {
        let Some(seed) = attrs.bytes(CKA_SEED) else {
            let value = attrs.bytes(CKA_VALUE).ok_or(err(CKR_TEMPLATE_INCOMPLETE))?;
            let key = PrivateKey::from_expanded(set, value)?;
            return set_spki(set, &key.public_encoding(), attrs);
        };
        if seed.len() != SEED_LEN {
            return Err(err(CKR_ATTRIBUTE_VALUE_INVALID));
        }
        let key = PrivateKey::from_seed(set, seed)?;
        let expanded = key.expanded_encoding();
        match attrs.bytes(CKA_VALUE) {
            Some(v) if v != &expanded[..] => return Err(err(CKR_ATTRIBUTE_VALUE_INVALID)),
            Some(_) => {}
            None => attrs.set_bytes(CKA_VALUE, &expanded),
        }
        key.public_encoding()
    } else {
        let value = attrs.bytes(CKA_VALUE).ok_or(err(CKR_TEMPLATE_INCOMPLETE))?;
        PublicKey::decode(set, value)?;
        value.to_vec()
    };
    set_spki(set, &public, attrs)
}

/// Sets `CKA_PUBLIC_KEY_INFO` (a given non-empty one must agree).
fn set_spki(set: ParamSet, public: &[u8], attrs: &mut Attributes) -> Result<()> {
    let info = spki(set, public);
    match attrs.bytes(CKA_PUBLIC_KEY_INFO) {
        Some(v) if !v.is_empty() && v != &info[..] => Err(err(CKR_ATTRIBUTE_VALUE_INVALID)),
        _ => {
            attrs.set_bytes(CKA_PUBLIC_KEY_INFO, &info);
            Ok(())
        }
    }
}

/// Generates a key pair (FIPS 204 Algorithm 1, ML-DSA.KeyGen: ξ from the
/// token's RNG) for the `CKA_PARAMETER_SET` of the public template.
pub fn generate(public_template: &Attributes) -> Result<GeneratedPair> {
    let set = template_set(public_template)?;
    let mut seed = Zeroizing::new([0u8; SEED_LEN]);
    os_fill(seed.as_mut())?;
    let key = PrivateKey::from_seed(set, seed.as_ref())?;
    let pk = key.public_encoding();
    let info = spki(set, &pk);
    let mut public = Attributes::new();
    public.set_ulong(CKA_PARAMETER_SET, set.ckp());
    public.set_bytes(CKA_VALUE, &pk);
    public.set_bytes(CKA_PUBLIC_KEY_INFO, &info);
    let mut private = Attributes::new();
    private.set_ulong(CKA_PARAMETER_SET, set.ckp());
    private.set_bytes(CKA_SEED, seed.as_ref());
    private.set_bytes(CKA_VALUE, &key.expanded_encoding());
    private.set_bytes(CKA_PUBLIC_KEY_INFO, &info);
    Ok(GeneratedPair {
        public,
        private,
        key_type: CKK_ML_DSA,
    })
}

/// The PKCS#8 DER `C_WrapKey` encrypts, from the stored attributes; a key
/// imported without its seed is `CKR_KEY_NOT_WRAPPABLE`.
pub fn to_pkcs8(set: &[u8], seed: Option<&[u8]>) -> Result<Zeroizing<Vec<u8>>> {
    let seed = seed.ok_or(err(CKR_KEY_NOT_WRAPPABLE))?;
    if seed.len() != SEED_LEN {
        return Err(err(CKR_KEY_HANDLE_INVALID));
    }
    Ok(pkcs8(stored_set(set)?, seed))
}

/// The strength of a parsed ML-DSA key, if `key` is one.
pub fn strength(key: &KeyMaterial) -> Option<u32> {
    match key {
        KeyMaterial::MlDsaPrivate(k) => Some(k.set().strength()),
        KeyMaterial::MlDsaPublic(k) => Some(k.set().strength()),
        _ => None,
    }
}
