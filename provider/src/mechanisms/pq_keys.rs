//! What the post-quantum key objects share (PKCS#11 3.2 mechanisms spec,
//! ML-DSA, ML-KEM and SLH-DSA key objects): the `CKA_PARAMETER_SET` both
//! keys carry, the `CKA_PUBLIC_KEY_INFO` computed from the public key, and,
//! for the families whose private key is a seed with an expanded form
//! (ML-DSA's ξ, ML-KEM's d‖z: `CKA_SEED` and `CKA_VALUE`), import,
//! generation and the PKCS #8 seed form. Each family's `keys.rs` names its
//! own types and calls these.

use super::lamps;
use super::material::GeneratedPair;
use super::random::os_fill;
use crate::attributes::{Attributes, decode_ulong};
use crate::error::{Result, err};
use cryptoki_sys::*;
use zeroize::Zeroizing;

/// A family's parameter sets.
pub trait ParameterSet: Copy {
    /// The set a `CKA_PARAMETER_SET` value names
    /// (`CKR_PARAMETER_SET_NOT_SUPPORTED` otherwise).
    fn from_ckp(value: CK_ULONG) -> Result<Self>;
    /// Its `CKA_PARAMETER_SET` value.
    fn ckp(self) -> CK_ULONG;
    /// Its DER `AlgorithmIdentifier` (an OID without parameters).
    fn algorithm_identifier(self) -> [u8; 13];
}

/// The parameter set a stored `CKA_PARAMETER_SET` value names (a stored
/// value that names none: `CKR_KEY_HANDLE_INVALID`).
pub fn stored_set<S: ParameterSet>(value: &[u8]) -> Result<S> {
    let v = decode_ulong(value).map_err(|_| err(CKR_KEY_HANDLE_INVALID))?;
    S::from_ckp(v).map_err(|_| err(CKR_KEY_HANDLE_INVALID))
}

/// The parameter set of a generation template (`CKR_TEMPLATE_INCOMPLETE`
/// if absent, `CKR_PARAMETER_SET_NOT_SUPPORTED` if unknown).
pub fn template_set<S: ParameterSet>(attrs: &Attributes) -> Result<S> {
    let v = attrs
        .ulong(CKA_PARAMETER_SET)
        .ok_or(err(CKR_TEMPLATE_INCOMPLETE))?;
    S::from_ckp(v)
}

/// The parameter set of an imported key: as [`template_set`], an unknown
/// value being `CKR_ATTRIBUTE_VALUE_INVALID` (an attribute's value).
pub fn import_set<S: ParameterSet>(attrs: &Attributes) -> Result<S> {
    template_set(attrs).map_err(|e| match e.rv() {
        CKR_PARAMETER_SET_NOT_SUPPORTED => err(CKR_ATTRIBUTE_VALUE_INVALID),
        _ => e,
    })
}

/// Sets the `CKA_PARAMETER_SET` an unwrapped key's encoding names; a
/// template's own value must agree (`CKR_TEMPLATE_INCONSISTENT`).
pub fn agree_parameter_set<S: ParameterSet>(set: S, attrs: &mut Attributes) -> Result<()> {
    match attrs.ulong(CKA_PARAMETER_SET) {
        Some(v) if v != set.ckp() => Err(err(CKR_TEMPLATE_INCONSISTENT)),
        _ => {
            attrs.set_ulong(CKA_PARAMETER_SET, set.ckp());
            Ok(())
        }
    }
}

/// Sets `CKA_PUBLIC_KEY_INFO`, the LAMPS SubjectPublicKeyInfo of
/// `public` (a given non-empty one must agree: `CKR_ATTRIBUTE_VALUE_INVALID`).
pub fn set_spki<S: ParameterSet>(set: S, public: &[u8], attrs: &mut Attributes) -> Result<()> {
    let info = lamps::spki(&set.algorithm_identifier(), public);
    match attrs.bytes(CKA_PUBLIC_KEY_INFO) {
        Some(v) if !v.is_empty() && v != &info[..] => Err(err(CKR_ATTRIBUTE_VALUE_INVALID)),
        _ => {
            attrs.set_bytes(CKA_PUBLIC_KEY_INFO, &info);
            Ok(())
        }
    }
}

/// The attributes of a generated pair: the parameter set and SPKI on both
/// keys, the public key's `CKA_VALUE`, and the private key's `values`.
pub fn generated_pair<S: ParameterSet>(
    set: S,
    key_type: CK_KEY_TYPE,
    public_value: &[u8],
    values: &[(CK_ATTRIBUTE_TYPE, &[u8])],
) -> GeneratedPair {
    let info = lamps::spki(&set.algorithm_identifier(), public_value);
    let mut public = Attributes::new();
    public.set_ulong(CKA_PARAMETER_SET, set.ckp());
    public.set_bytes(CKA_VALUE, public_value);
    public.set_bytes(CKA_PUBLIC_KEY_INFO, &info);
    let mut private = Attributes::new();
    private.set_ulong(CKA_PARAMETER_SET, set.ckp());
    for (ty, v) in values {
        private.set_bytes(*ty, v);
    }
    private.set_bytes(CKA_PUBLIC_KEY_INFO, &info);
    GeneratedPair {
        public,
        private,
        key_type,
    }
}

/// A private key made from a seed, with an expanded form.
pub trait SeededKey: Sized {
    /// Its parameter sets.
    type Set: ParameterSet;
    /// The seed's length (`CKA_SEED`).
    const SEED_LEN: usize;
    /// The key `seed` gives.
    fn from_seed(set: Self::Set, seed: &[u8]) -> Result<Self>;
    /// The key decoded from its expanded form, checked.
    fn from_expanded(set: Self::Set, value: &[u8]) -> Result<Self>;
    /// The encoded public key.
    fn public_encoding(&self) -> Vec<u8>;
    /// The expanded private key (`CKA_VALUE`).
    fn expanded_encoding(&self) -> Zeroizing<Vec<u8>>;
}

/// Checks an imported key of a seeded family and adds the computed values:
/// for a private key from its seed, the expanded `CKA_VALUE` (a given one
/// must equal it); from an expanded value alone, its checks; for a public
/// key, `check_public` on its `CKA_VALUE`; and for both the SPKI.
pub fn complete_seeded_import<K: SeededKey>(
    class: CK_OBJECT_CLASS,
    attrs: &mut Attributes,
    check_public: impl FnOnce(K::Set, &[u8]) -> Result<()>,
) -> Result<()> {
    let set = import_set::<K::Set>(attrs)?;
    let public = if class == CKO_PRIVATE_KEY {
        let Some(seed) = attrs.bytes(CKA_SEED) else {
            let value = attrs.bytes(CKA_VALUE).ok_or(err(CKR_TEMPLATE_INCOMPLETE))?;
            let key = K::from_expanded(set, value)?;
            return set_spki(set, &key.public_encoding(), attrs);
        };
        if seed.len() != K::SEED_LEN {
            return Err(err(CKR_ATTRIBUTE_VALUE_INVALID));
        }
        let key = K::from_seed(set, seed)?;
        let expanded = key.expanded_encoding();
        match attrs.bytes(CKA_VALUE) {
            Some(v) if v != &expanded[..] => return Err(err(CKR_ATTRIBUTE_VALUE_INVALID)),
            Some(_) => {}
            None => attrs.set_bytes(CKA_VALUE, &expanded),
        }
        key.public_encoding()
    } else {
        let value = attrs.bytes(CKA_VALUE).ok_or(err(CKR_TEMPLATE_INCOMPLETE))?;
        check_public(set, value)?;
        value.to_vec()
    };
    set_spki(set, &public, attrs)
}

/// Generates a key pair of a seeded family: the seed from the OS RNG, for
/// the public template's `CKA_PARAMETER_SET`.
pub fn generate_seeded<K: SeededKey>(
    public_template: &Attributes,
    key_type: CK_KEY_TYPE,
) -> Result<GeneratedPair> {
    let set = template_set::<K::Set>(public_template)?;
    let mut seed = Zeroizing::new(vec![0u8; K::SEED_LEN]);
    os_fill(&mut seed)?;
    let key = K::from_seed(set, &seed)?;
    let expanded = key.expanded_encoding();
    Ok(generated_pair(
        set,
        key_type,
        &key.public_encoding(),
        &[(CKA_SEED, &seed), (CKA_VALUE, &expanded)],
    ))
}

/// Parses a PKCS #8 key in the seed form of a set `by_oid_arc` finds
/// (`CKR_WRAPPED_KEY_INVALID` otherwise: the expanded and "both" forms are
/// not accepted) and sets `CKA_SEED` and `CKA_PARAMETER_SET`; the expanded
/// `CKA_VALUE` follows at import.
pub fn seed_from_pkcs8<S: ParameterSet>(
    der: &[u8],
    attrs: &mut Attributes,
    by_oid_arc: impl Fn(u8) -> Option<S>,
    seed_len: usize,
) -> Result<()> {
    let bad = || err(CKR_WRAPPED_KEY_INVALID);
    let arc = *der.get(lamps::PKCS8_OID_ARC_OFFSET).ok_or_else(bad)?;
    let set = by_oid_arc(arc).ok_or_else(bad)?;
    let seed = lamps::seed_of_pkcs8(der, &set.algorithm_identifier(), seed_len).ok_or_else(bad)?;
    agree_parameter_set(set, attrs)?;
    attrs.set_bytes(CKA_SEED, seed);
    Ok(())
}

/// The PKCS #8 seed form `C_WrapKey` encrypts, from the stored attributes;
/// a key imported without its seed is `CKR_KEY_NOT_WRAPPABLE`.
pub fn seed_to_pkcs8<S: ParameterSet>(
    set: &[u8],
    seed: Option<&[u8]>,
    seed_len: usize,
) -> Result<Zeroizing<Vec<u8>>> {
    let seed = seed.ok_or(err(CKR_KEY_NOT_WRAPPABLE))?;
    if seed.len() != seed_len {
        return Err(err(CKR_KEY_HANDLE_INVALID));
    }
    Ok(lamps::seed_pkcs8(
        &stored_set::<S>(set)?.algorithm_identifier(),
        seed,
    ))
}
