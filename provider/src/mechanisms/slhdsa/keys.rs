//! SLH-DSA key objects (PKCS#11 3.2 mechanisms spec, SLH-DSA public and
//! private key objects): loading, import checks, key-pair generation and
//! the RFC 9909 encodings (SubjectPublicKeyInfo for `CKA_PUBLIC_KEY_INFO`,
//! PKCS#8 for `C_WrapKey` / `C_UnwrapKey`).
//!
//! Attributes: `CKA_PARAMETER_SET` (`CKP_SLH_DSA_*`) on both keys; the
//! public key's `CKA_VALUE` is PK.seed ‖ PK.root (2n bytes), the private
//! key's SK.seed ‖ SK.prf ‖ PK.seed ‖ PK.root (4n bytes, sensitive;
//! FIPS 205 §9.1). An imported private key's PK.root must be the one its
//! seeds give (`PrivateKey::from_value`).

use super::key::{PrivateKey, PublicKey};
use super::params::ParamSet;
use crate::attributes::Attributes;
use crate::error::{Result, err};
use crate::mechanisms::lamps;
use crate::mechanisms::material::{GeneratedPair, KeyMaterial};
use crate::mechanisms::pq_keys::{self, stored_set, template_set};
use crate::mechanisms::random::os_fill;
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

/// Parses a stored private key from its `CKA_PARAMETER_SET` and
/// `CKA_VALUE` (checked on import; its length is checked again).
pub fn load_private(set: &[u8], value: &[u8]) -> Result<KeyMaterial> {
    let key = PrivateKey::from_stored(stored_set(set)?, value)?;
    Ok(KeyMaterial::SlhDsaPrivate(Box::new(key)))
}

/// Parses a stored public key from its `CKA_PARAMETER_SET` and `CKA_VALUE`.
pub fn load_public(set: &[u8], value: &[u8]) -> Result<KeyMaterial> {
    let key =
        PublicKey::decode(stored_set(set)?, value).map_err(|_| err(CKR_KEY_HANDLE_INVALID))?;
    Ok(KeyMaterial::SlhDsaPublic(Box::new(key)))
}

/// SubjectPublicKeyInfo DER of a public key (RFC 9909: the algorithm
/// identifier without parameters, PK.seed ‖ PK.root as the BIT STRING).
pub fn spki(set: ParamSet, public: &[u8]) -> Vec<u8> {
    lamps::spki(&set.algorithm_identifier(), public)
}

/// PKCS#8 `PrivateKeyInfo` DER of a private key's 4n-byte value (RFC 9909:
/// version 0, the algorithm identifier, and a `privateKey` OCTET STRING
/// holding the 4n key bytes).
pub fn pkcs8(set: ParamSet, value: &[u8]) -> Zeroizing<Vec<u8>> {
    lamps::pkcs8(&set.algorithm_identifier(), value)
}

/// Everything of [`pkcs8`]'s encoding for `set` before the key bytes.
fn pkcs8_prefix(set: ParamSet) -> Zeroizing<Vec<u8>> {
    let mut der = pkcs8(set, &vec![0; set.private_len()]);
    let len = der.len() - set.private_len();
    der.truncate(len);
    der
}

/// Parses what [`pkcs8`] produces: the DER must be exactly one set's
/// prefix and 4n bytes (its length is compared before anything is read;
/// `CKR_WRAPPED_KEY_INVALID` otherwise). Sets `CKA_VALUE` and
/// `CKA_PARAMETER_SET` (a template's own value must agree:
/// `CKR_TEMPLATE_INCONSISTENT`); [`complete_import`] then checks the key.
pub fn from_pkcs8(der: &[u8], attrs: &mut Attributes) -> Result<()> {
    let (set, value) = ParamSet::ALL
        .into_iter()
        .find_map(|set| {
            let prefix = pkcs8_prefix(set);
            if der.len() != prefix.len() + set.private_len() {
                return None;
            }
            der.strip_prefix(&prefix[..]).map(|v| (set, v))
        })
        .ok_or(err(CKR_WRAPPED_KEY_INVALID))?;
    pq_keys::agree_parameter_set(set, attrs)?;
    attrs.set_bytes(CKA_VALUE, value);
    Ok(())
}

/// The PKCS#8 DER `C_WrapKey` encrypts, from the stored attributes.
pub fn to_pkcs8(set: &[u8], value: &[u8]) -> Result<Zeroizing<Vec<u8>>> {
    let set: ParamSet = stored_set(set)?;
    if value.len() != set.private_len() {
        return Err(err(CKR_KEY_HANDLE_INVALID));
    }
    Ok(pkcs8(set, value))
}

/// Checks an imported SLH-DSA key and adds its SPKI: a private key's value
/// must be 4n bytes whose PK.root its seeds give, a public key's 2n bytes.
pub fn complete_import(class: CK_OBJECT_CLASS, attrs: &mut Attributes) -> Result<()> {
    let set = pq_keys::import_set::<ParamSet>(attrs)?;
    let value = attrs.bytes(CKA_VALUE).ok_or(err(CKR_TEMPLATE_INCOMPLETE))?;
    let public = if class == CKO_PRIVATE_KEY {
        PrivateKey::from_value(set, value)?.public_encoding()
    } else {
        PublicKey::decode(set, value)?;
        value.to_vec()
    };
    pq_keys::set_spki(set, &public, attrs)
}

/// Generates a key pair (FIPS 205 Algorithm 21, slh_keygen: SK.seed, SK.prf
/// and PK.seed, n bytes each, from the token's RNG) for the
/// `CKA_PARAMETER_SET` of the public template.
pub fn generate(public_template: &Attributes) -> Result<GeneratedPair> {
    let set = template_set::<ParamSet>(public_template)?;
    let n = set.n();
    let mut seeds = Zeroizing::new([0u8; 3 * 32]);
    let seeds = &mut seeds[..3 * n];
    os_fill(seeds)?;
    let key = PrivateKey::from_seeds(set, &seeds[..n], &seeds[n..2 * n], &seeds[2 * n..])?;
    Ok(pq_keys::generated_pair(
        set,
        CKK_SLH_DSA,
        &key.public_encoding(),
        &[(CKA_VALUE, key.encoding())],
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pkcs8_round_trips_for_every_set_and_nothing_else_parses() {
        for set in ParamSet::ALL {
            let value: Vec<u8> = (0..set.private_len() as u8).collect();
            let der = pkcs8(set, &value);
            // The DER's outer length covers the rest exactly.
            let header = if der[1] == 0x81 { 3 } else { 2 };
            assert_eq!(der[header - 1] as usize, der.len() - header, "{set:?}");
            let mut attrs = Attributes::new();
            from_pkcs8(&der, &mut attrs).unwrap();
            assert_eq!(attrs.bytes(CKA_VALUE), Some(&value[..]));
            assert_eq!(attrs.ulong(CKA_PARAMETER_SET), Some(set.ckp()));
            for bad in [&der[..der.len() - 1], &[&der[..], &[0]].concat()[..]] {
                let mut attrs = Attributes::new();
                let rv = from_pkcs8(bad, &mut attrs).unwrap_err().rv();
                assert_eq!(rv, CKR_WRAPPED_KEY_INVALID, "{set:?}");
            }
            let mut other = Attributes::new();
            let wrong = if set == ParamSet::Sha2_128s {
                ParamSet::Shake128s
            } else {
                ParamSet::Sha2_128s
            };
            other.set_ulong(CKA_PARAMETER_SET, wrong.ckp());
            let rv = from_pkcs8(&der, &mut other).unwrap_err().rv();
            assert_eq!(rv, CKR_TEMPLATE_INCONSISTENT);
        }
        let mut attrs = Attributes::new();
        assert!(from_pkcs8(&[], &mut attrs).is_err());
    }

    #[test]
    fn spki_is_der_of_the_right_length() {
        for set in ParamSet::ALL {
            let pk = vec![7u8; set.public_len()];
            let info = spki(set, &pk);
            assert_eq!(info[1] as usize, info.len() - 2);
            assert_eq!(info.len(), set.public_len() + 18);
            assert!(info.ends_with(&pk));
        }
    }

    #[test]
    fn generation_needs_a_known_set_and_import_checks_pk_root() {
        let mut t = Attributes::new();
        let rv = |t: &Attributes| generate(t).err().map(|e| e.rv());
        assert_eq!(rv(&t), Some(CKR_TEMPLATE_INCOMPLETE));
        t.set_ulong(CKA_PARAMETER_SET, 13);
        assert_eq!(rv(&t), Some(CKR_PARAMETER_SET_NOT_SUPPORTED));
        t.set_ulong(CKA_PARAMETER_SET, CKP_SLH_DSA_SHAKE_128F);
        let pair = generate(&t).unwrap();
        let value = pair.private.bytes(CKA_VALUE).unwrap().to_vec();
        assert_eq!(value.len(), 64);
        assert_eq!(pair.public.bytes(CKA_VALUE), Some(&value[32..]));
        let import = |v: &[u8]| {
            let mut a = Attributes::new();
            a.set_ulong(CKA_PARAMETER_SET, CKP_SLH_DSA_SHAKE_128F);
            a.set_bytes(CKA_VALUE, v);
            complete_import(CKO_PRIVATE_KEY, &mut a).map(|()| a)
        };
        let a = import(&value).unwrap();
        assert_eq!(
            a.bytes(CKA_PUBLIC_KEY_INFO),
            pair.public.bytes(CKA_PUBLIC_KEY_INFO)
        );
        let mut bad = value.clone();
        bad[63] ^= 1;
        for v in [
            &bad[..],
            &value[..63],
            &[value.clone(), vec![0]].concat()[..],
        ] {
            let rv = import(v).err().map(|e| e.rv());
            assert_eq!(rv, Some(CKR_ATTRIBUTE_VALUE_INVALID));
        }
    }
}
