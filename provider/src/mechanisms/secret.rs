//! Secret keys: the key types each generation mechanism makes, their
//! lengths, generation, and every `C_DeriveKey` mechanism that makes a
//! secret from a base key (ECDH, HKDF, SP 800-108, the simple derivations
//! of mechanisms spec 3.0 §2.42 and §2.16.12, and the hash-of-the-key
//! derivations `CKM_SHA*_KEY_DERIVATION`).

use super::material::{KeyMaterial, MAX_SECRET_LEN};
use super::operation::DigestOperation;
use super::params::{Mechanism, Param};
use super::registry::require;
use super::{aes, des, dh, digest, ec, kdf, otp, random, x25519};
use crate::error::{Result, err};
use cryptoki_sys::*;
use zeroize::Zeroizing;

/// The secret key types a generation may make: first those
/// `CKM_GENERIC_SECRET_KEY_GEN` makes (the generic secret and the HMAC key
/// types, [`GENERIC_TYPES`] of them), then the block-cipher types PBKDF2
/// may also make.
const SECRET_TYPES: &[CK_KEY_TYPE] = &[
    CKK_GENERIC_SECRET,
    CKK_SHA_1_HMAC,
    CKK_SHA224_HMAC,
    CKK_SHA256_HMAC,
    CKK_SHA384_HMAC,
    CKK_SHA512_HMAC,
    CKK_SHA512_224_HMAC,
    CKK_SHA512_256_HMAC,
    CKK_SHA3_224_HMAC,
    CKK_SHA3_256_HMAC,
    CKK_SHA3_384_HMAC,
    CKK_SHA3_512_HMAC,
    CKK_AES,
    CKK_DES2,
    CKK_DES3,
];

/// How many of [`SECRET_TYPES`] `CKM_GENERIC_SECRET_KEY_GEN` makes.
const GENERIC_TYPES: usize = 12;

/// The default key type of a secret-key generation mechanism, and the key
/// types it may make.
pub fn secret_key_types(mech: CK_MECHANISM_TYPE) -> Result<(CK_KEY_TYPE, &'static [CK_KEY_TYPE])> {
    match mech {
        CKM_AES_KEY_GEN => Ok((CKK_AES, &[CKK_AES])),
        CKM_CHACHA20_KEY_GEN => Ok((CKK_CHACHA20, &[CKK_CHACHA20])),
        CKM_DES_KEY_GEN => Ok((CKK_DES, &[CKK_DES])),
        CKM_DES2_KEY_GEN => Ok((CKK_DES2, &[CKK_DES2])),
        CKM_DES3_KEY_GEN => Ok((CKK_DES3, &[CKK_DES3])),
        CKM_GENERIC_SECRET_KEY_GEN => Ok((CKK_GENERIC_SECRET, &SECRET_TYPES[..GENERIC_TYPES])),
        // The hash-specific HMAC key generators of PKCS #11 3.0
        // (mechanisms spec 3.0, the "SHA-n key generation" sections).
        CKM_SHA_1_KEY_GEN => Ok((CKK_SHA_1_HMAC, &[CKK_SHA_1_HMAC])),
        CKM_SHA224_KEY_GEN => Ok((CKK_SHA224_HMAC, &[CKK_SHA224_HMAC])),
        CKM_SHA256_KEY_GEN => Ok((CKK_SHA256_HMAC, &[CKK_SHA256_HMAC])),
        CKM_SHA384_KEY_GEN => Ok((CKK_SHA384_HMAC, &[CKK_SHA384_HMAC])),
        CKM_SHA512_KEY_GEN => Ok((CKK_SHA512_HMAC, &[CKK_SHA512_HMAC])),
        CKM_SHA512_224_KEY_GEN => Ok((CKK_SHA512_224_HMAC, &[CKK_SHA512_224_HMAC])),
        CKM_SHA512_256_KEY_GEN => Ok((CKK_SHA512_256_HMAC, &[CKK_SHA512_256_HMAC])),
        CKM_SHA3_224_KEY_GEN => Ok((CKK_SHA3_224_HMAC, &[CKK_SHA3_224_HMAC])),
        CKM_SHA3_256_KEY_GEN => Ok((CKK_SHA3_256_HMAC, &[CKK_SHA3_256_HMAC])),
        CKM_SHA3_384_KEY_GEN => Ok((CKK_SHA3_384_HMAC, &[CKK_SHA3_384_HMAC])),
        CKM_SHA3_512_KEY_GEN => Ok((CKK_SHA3_512_HMAC, &[CKK_SHA3_512_HMAC])),
        // Mechanisms spec 3.0 §2.34: PBKDF2 makes any secret key type.
        CKM_PKCS5_PBKD2 => Ok((CKK_GENERIC_SECRET, SECRET_TYPES)),
        // Mechanisms spec 3.0 §2.43.4: a key for HKDF derivation.
        CKM_HKDF_KEY_GEN => Ok((CKK_HKDF, &[CKK_HKDF])),
        // Mechanisms spec "OATH HOTP": an OTP key (class CKO_OTP_KEY).
        CKM_HOTP_KEY_GEN => Ok((CKK_HOTP, &[CKK_HOTP])),
        _ => Err(err(CKR_MECHANISM_INVALID)),
    }
}

/// The length a hash-specific HMAC key generator gives when the template
/// has no `CKA_VALUE_LEN`: the hash's output length (RFC 2104 §3's
/// recommended key length). The spec expects `CKA_VALUE_LEN`; consumers
/// that leave it out get this rather than `CKR_TEMPLATE_INCOMPLETE`.
fn default_secret_len(mech: CK_MECHANISM_TYPE) -> Option<usize> {
    match mech {
        CKM_SHA_1_KEY_GEN => Some(20),
        CKM_SHA224_KEY_GEN => Some(28),
        CKM_SHA256_KEY_GEN => Some(32),
        CKM_SHA384_KEY_GEN => Some(48),
        CKM_SHA512_KEY_GEN => Some(64),
        CKM_SHA512_224_KEY_GEN | CKM_SHA3_224_KEY_GEN => Some(28),
        CKM_SHA512_256_KEY_GEN | CKM_SHA3_256_KEY_GEN => Some(32),
        CKM_SHA3_384_KEY_GEN => Some(48),
        CKM_SHA3_512_KEY_GEN => Some(64),
        // DES keys have one length each (no CKA_VALUE_LEN needed).
        CKM_DES_KEY_GEN => Some(8),
        CKM_DES2_KEY_GEN => Some(16),
        CKM_DES3_KEY_GEN => Some(24),
        CKM_CHACHA20_KEY_GEN => Some(32),
        CKM_HOTP_KEY_GEN => Some(otp::key::DEFAULT_KEY_LEN),
        _ => None,
    }
}

/// Checks the `CKA_VALUE_LEN` of a new secret key of `key_type`: 16, 24 or
/// 32 for AES, 8, 16 or 24 for DES, DES2 and DES3, 1 to [`MAX_SECRET_LEN`]
/// otherwise (else
/// `CKR_ATTRIBUTE_VALUE_INVALID`). Every length a caller gives for a key to
/// be made passes here before anything is allocated or computed.
pub fn check_secret_len(key_type: CK_KEY_TYPE, len: usize) -> Result<()> {
    let ok = match key_type {
        CKK_AES => matches!(len, 16 | 24 | 32),
        CKK_CHACHA20 => len == 32,
        CKK_HOTP => otp::key::KEY_LENS.contains(&len),
        CKK_DES | CKK_DES2 | CKK_DES3 => des::key_len(key_type) == Some(len),
        _ => (1..=MAX_SECRET_LEN).contains(&len),
    };
    if ok {
        Ok(())
    } else {
        Err(err(CKR_ATTRIBUTE_VALUE_INVALID))
    }
}

/// Generates a secret key of `value_len` bytes (`CKA_VALUE_LEN`, required
/// for generic secrets, 16/24/32 for AES).
pub fn generate_key(mech: &Mechanism<'_>, value_len: Option<usize>) -> Result<Zeroizing<Vec<u8>>> {
    require(mech, CKF_GENERATE)?;
    if mech.param != Param::None {
        return Err(err(CKR_MECHANISM_PARAM_INVALID));
    }
    let (key_type, _) = secret_key_types(mech.ty)?;
    let len = value_len
        .or(default_secret_len(mech.ty))
        .ok_or(err(CKR_TEMPLATE_INCOMPLETE))?;
    check_secret_len(key_type, len)?;
    if des::key_len(key_type).is_some() {
        return des::generate(key_type);
    }
    let mut value = Zeroizing::new(vec![0u8; len]);
    random::generate(&mut value)?;
    Ok(value)
}

/// PBKDF2 (`CKM_PKCS5_PBKD2`): a key of `key_type` from the password in
/// the parameter; `value_len` is the template's `CKA_VALUE_LEN`, required
/// except for the DES types (their one length; parity set).
pub fn generate_pbkdf2(
    mech: &Mechanism<'_>,
    key_type: CK_KEY_TYPE,
    value_len: Option<usize>,
) -> Result<Zeroizing<Vec<u8>>> {
    require(mech, CKF_GENERATE)?;
    let Param::Pbkdf2(p) = mech.param else {
        return Err(err(CKR_MECHANISM_PARAM_INVALID));
    };
    let len = value_len
        .or(des::key_len(key_type))
        .ok_or(err(CKR_TEMPLATE_INCOMPLETE))?;
    // Bounded before the KDF allocates or loops.
    check_secret_len(key_type, len)?;
    kdf::pbkdf2::validate(&p)?;
    let mut value = kdf::pbkdf2::derive(&p, len)?;
    shape_derived_value(key_type, &mut value);
    Ok(value)
}

/// The length of a derived key of `key_type` when the template gives none:
/// 32 bytes for AES, the one length of each DES key type; `None` for the
/// types that need `CKA_VALUE_LEN` (or take the mechanism's natural
/// output length).
pub fn default_derived_len(key_type: CK_KEY_TYPE) -> Option<usize> {
    match key_type {
        CKK_AES | CKK_CHACHA20 => Some(32),
        _ => des::key_len(key_type),
    }
}

/// Adjusts derived key bytes to their key type: DES keys get their parity
/// bits set (as the mechanisms spec asks of every derivation that makes a
/// DES key, e.g. §2.16.9 for the SSL/TLS and §2.42 for the key-derivation
/// mechanisms).
pub fn shape_derived_value(key_type: CK_KEY_TYPE, value: &mut [u8]) {
    if des::key_len(key_type).is_some() {
        des::set_parity(value);
    }
}

/// The encryption-of-data derivations (mechanisms spec 3.0 §2.16.12 and the
/// DES ones): the derived value is the block cipher of caller-chosen data
/// under the base key, a value any other use of that key that computes the
/// cipher forward can also hand out.
pub fn derives_by_encrypting_data(ty: CK_MECHANISM_TYPE) -> bool {
    matches!(
        ty,
        CKM_AES_ECB_ENCRYPT_DATA
            | CKM_AES_CBC_ENCRYPT_DATA
            | CKM_DES_ECB_ENCRYPT_DATA
            | CKM_DES_CBC_ENCRYPT_DATA
            | CKM_DES3_ECB_ENCRYPT_DATA
            | CKM_DES3_CBC_ENCRYPT_DATA
    )
}

/// The derivations that copy the base's value into the new key, whole or
/// recoverably (mechanisms spec 3.0 §2.42): concatenation with no data or
/// a key of zeros (an HMAC key is zero-padded anyway), XOR with zeros,
/// extraction from bit 0, or data ‖ base and then extraction. The copy
/// takes the caller's usage flags: whatever the base may not do, its copy
/// may.
pub const COPYING_DERIVATIONS: [CK_MECHANISM_TYPE; 5] = [
    CKM_CONCATENATE_BASE_AND_KEY,
    CKM_CONCATENATE_BASE_AND_DATA,
    CKM_CONCATENATE_DATA_AND_BASE,
    CKM_XOR_BASE_AND_DATA,
    CKM_EXTRACT_KEY_FROM_KEY,
];

/// True for the derivations whose result must be at least as protected as
/// their base keys (mechanisms spec 3.0 §2.42 and §2.16.12: the value is a
/// simple function of the base's value).
pub fn derives_by_simple_function(ty: CK_MECHANISM_TYPE) -> bool {
    COPYING_DERIVATIONS.contains(&ty)
        || derives_by_encrypting_data(ty)
        || hash_of_key_derivation(ty).is_some()
}

/// The digest a `CKM_<hash>_KEY_DERIVATION` mechanism (mechanisms spec
/// 3.0 §2.20.5 and the "SHA-n key derivation" sections: the derived key is
/// the hash of the base key's value, truncated) computes.
pub fn hash_of_key_derivation(ty: CK_MECHANISM_TYPE) -> Option<CK_MECHANISM_TYPE> {
    Some(match ty {
        CKM_SHA1_KEY_DERIVATION => CKM_SHA_1,
        CKM_SHA224_KEY_DERIVATION => CKM_SHA224,
        CKM_SHA256_KEY_DERIVATION => CKM_SHA256,
        CKM_SHA384_KEY_DERIVATION => CKM_SHA384,
        CKM_SHA512_KEY_DERIVATION => CKM_SHA512,
        CKM_SHA512_224_KEY_DERIVATION => CKM_SHA512_224,
        CKM_SHA512_256_KEY_DERIVATION => CKM_SHA512_256,
        CKM_SHA3_224_KEY_DERIVATION => CKM_SHA3_224,
        CKM_SHA3_256_KEY_DERIVATION => CKM_SHA3_256,
        CKM_SHA3_384_KEY_DERIVATION => CKM_SHA3_384,
        CKM_SHA3_512_KEY_DERIVATION => CKM_SHA3_512,
        _ => return None,
    })
}

/// How many of the `out_len` bytes a derivation gives come from secret key
/// material: the base's, and `other_secret_len` bytes of a second key
/// (`CKM_CONCATENATE_BASE_AND_KEY`, when that key is itself secret). Data
/// the caller supplies is not secret: `CKM_CONCATENATE_DATA_AND_BASE` with
/// 13 bytes of data and a 14-byte result keeps one byte of the base, and
/// extraction or concatenation never yields more secret bytes than the base
/// has (`CKM_EXTRACT_KEY_FROM_KEY` wraps around it). Every output byte of a
/// KDF, of ECDH and of the encryption of data depends on the whole secret.
pub fn secret_bytes_in_derived(
    mech: &Mechanism<'_>,
    base: &KeyMaterial,
    other_secret_len: usize,
    out_len: usize,
) -> usize {
    let base_len = secret_value(base).map_or(out_len, <[u8]>::len);
    match (mech.ty, mech.param) {
        (CKM_CONCATENATE_DATA_AND_BASE, Param::Bytes(data)) => {
            out_len.saturating_sub(data.len()).min(base_len)
        }
        (CKM_CONCATENATE_BASE_AND_KEY, _) => out_len.min(base_len.saturating_add(other_secret_len)),
        (CKM_CONCATENATE_BASE_AND_DATA | CKM_XOR_BASE_AND_DATA | CKM_EXTRACT_KEY_FROM_KEY, _) => {
            out_len.min(base_len)
        }
        _ => out_len,
    }
}

/// Derives secret bytes from `base` (`C_DeriveKey`); `len` is the wanted
/// length when the template gives one (at most [`MAX_SECRET_LEN`]).
/// `other` is the value of the second key a mechanism's parameter names
/// (the HKDF salt key, the key of `CKM_CONCATENATE_BASE_AND_KEY`), read by
/// the caller.
pub fn derive(
    mech: &Mechanism<'_>,
    base: &KeyMaterial,
    len: Option<usize>,
    other: Option<&[u8]>,
) -> Result<Zeroizing<Vec<u8>>> {
    require(mech, CKF_DERIVE)?;
    if len.is_some_and(|l| l == 0 || l > MAX_SECRET_LEN) {
        return Err(err(CKR_ATTRIBUTE_VALUE_INVALID));
    }
    match (mech.ty, mech.param) {
        (CKM_ECDH1_DERIVE, _) => match base {
            KeyMaterial::X25519Private(..) | KeyMaterial::X448Private(_) => {
                x25519::derive(mech, base, len)
            }
            _ => ec::ecdh_derive(mech, base, len),
        },
        // Cofactor ECDH is defined for the Weierstrass curves; X25519 is
        // `CKM_ECDH1_DERIVE` only (its scalar clamping already clears the
        // cofactor).
        (CKM_ECDH1_COFACTOR_DERIVE, _) => match base {
            KeyMaterial::X25519Private(..) => Err(err(CKR_KEY_TYPE_INCONSISTENT)),
            _ => ec::ecdh_derive(mech, base, len),
        },
        (CKM_DH_PKCS_DERIVE, Param::Bytes(peer)) => match base {
            KeyMaterial::DhPrivate(key) => dh::derive(key, peer, len),
            _ => Err(err(CKR_KEY_TYPE_INCONSISTENT)),
        },
        (CKM_HKDF_DERIVE | CKM_HKDF_DATA, Param::Hkdf(p)) => {
            let ikm = kdf_base(base)?;
            let len = kdf::hkdf::output_len(&p, len)?;
            if len > MAX_SECRET_LEN {
                return Err(err(CKR_ATTRIBUTE_VALUE_INVALID));
            }
            kdf::hkdf::derive(&p, ikm, other, len)
        }
        (CKM_HKDF_DERIVE | CKM_HKDF_DATA, _) => Err(err(CKR_MECHANISM_PARAM_INVALID)),
        // Mechanisms spec 3.0 §2.42: CKA_VALUE_LEN is required.
        (CKM_TLS_KDF | CKM_TLS12_KDF, Param::TlsKdf(p)) => match base {
            KeyMaterial::Secret {
                key_type: CKK_GENERIC_SECRET,
                value,
                ..
            } => kdf::tls::kdf(&p, value, len.ok_or(err(CKR_TEMPLATE_INCOMPLETE))?),
            _ => Err(err(CKR_KEY_TYPE_INCONSISTENT)),
        },
        (CKM_TLS_KDF | CKM_TLS12_KDF, _) => Err(err(CKR_MECHANISM_PARAM_INVALID)),
        (CKM_EXTRACT_KEY_FROM_KEY, Param::BitIndex(first)) => kdf::concat::extract(
            secret_value(base)?,
            first,
            len.ok_or(err(CKR_TEMPLATE_INCOMPLETE))?,
        ),
        (ty, param) if derives_by_simple_function(ty) => {
            let value = simple_derivation(ty, param, base, other)?;
            match len {
                None if value.len() > MAX_SECRET_LEN => Err(err(CKR_KEY_SIZE_RANGE)),
                None => Ok(value),
                // §2.42: a shorter length takes the leading bytes; a longer
                // one cannot be met: the template asks too much of the bases
                // (concatenation, XOR), or the data given to encrypt is too
                // short for the key (AES encryption of data, where consumers
                // expect the parameter to be blamed).
                Some(l) if l > value.len() => Err(err(match ty {
                    CKM_AES_ECB_ENCRYPT_DATA
                    | CKM_AES_CBC_ENCRYPT_DATA
                    | CKM_DES_ECB_ENCRYPT_DATA
                    | CKM_DES_CBC_ENCRYPT_DATA
                    | CKM_DES3_ECB_ENCRYPT_DATA
                    | CKM_DES3_CBC_ENCRYPT_DATA => CKR_MECHANISM_PARAM_INVALID,
                    _ => CKR_TEMPLATE_INCONSISTENT,
                })),
                Some(l) => Ok(Zeroizing::new(value[..l].to_vec())),
            }
        }
        _ => Err(err(CKR_MECHANISM_INVALID)),
    }
}

/// SP 800-108 derivation (mechanisms spec 3.0 §2.42): the keys of `lens`
/// bytes (the primary key first, then the additional keys), each checked
/// by the caller with [`check_secret_len`]. HMAC PRFs take a generic
/// secret or HMAC key, AES-CMAC an AES key; else
/// `CKR_KEY_TYPE_INCONSISTENT`.
pub fn derive_sp800_108(
    mech: &Mechanism<'_>,
    base: &KeyMaterial,
    lens: &[usize],
) -> Result<Vec<Zeroizing<Vec<u8>>>> {
    require(mech, CKF_DERIVE)?;
    let mode = kdf::sp800_108::Mode::of(mech.ty).ok_or(err(CKR_MECHANISM_INVALID))?;
    let Param::Sp800108(p) = mech.param else {
        return Err(err(CKR_MECHANISM_PARAM_INVALID));
    };
    if lens.len() > kdf::sp800_108::MAX_ADDITIONAL_KEYS + 1
        || lens.iter().any(|&l| l == 0 || l > MAX_SECRET_LEN)
    {
        return Err(err(CKR_ATTRIBUTE_VALUE_INVALID));
    }
    kdf::sp800_108::validate(mode, p)?;
    let key = if kdf::sp800_108::is_hmac_prf(p.prf) {
        match base {
            KeyMaterial::Secret {
                key_type:
                    CKK_GENERIC_SECRET | CKK_SHA_1_HMAC | CKK_SHA224_HMAC | CKK_SHA256_HMAC
                    | CKK_SHA384_HMAC | CKK_SHA512_HMAC | CKK_SHA512_224_HMAC | CKK_SHA512_256_HMAC
                    | CKK_SHA3_224_HMAC | CKK_SHA3_256_HMAC | CKK_SHA3_384_HMAC | CKK_SHA3_512_HMAC,
                value,
                ..
            } => kdf::sp800_108::PrfKey::Hmac(value),
            _ => return Err(err(CKR_KEY_TYPE_INCONSISTENT)),
        }
    } else {
        kdf::sp800_108::PrfKey::Cmac(aes::aes_key(base)?)
    };
    kdf::sp800_108::derive(mode, p, key, lens)
}

/// The IKE derivations (mechanisms spec 3.0, "IKE"): `len` is the
/// template's `CKA_VALUE_LEN` (bounded by [`kdf::ike::output_len`] before
/// anything is computed), `seconds` the values of the keys the parameters
/// name ([`kdf::ike::Params::second_keys`], resolved by the caller). The
/// base is a generic secret or the PRF's HMAC key type, else
/// `CKR_KEY_TYPE_INCONSISTENT`.
pub fn derive_ike(
    mech: &Mechanism<'_>,
    base: &KeyMaterial,
    len: Option<usize>,
    seconds: &[&[u8]],
) -> Result<Zeroizing<Vec<u8>>> {
    use kdf::ike::Params as P;
    require(mech, CKF_DERIVE)?;
    let p = match (mech.ty, mech.param) {
        (CKM_IKE_PRF_DERIVE, Param::Ike(p @ P::Prf { .. }))
        | (CKM_IKE1_PRF_DERIVE, Param::Ike(p @ P::Ike1Prf { .. }))
        | (CKM_IKE1_EXTENDED_DERIVE, Param::Ike(p @ P::Ike1Extended { .. }))
        | (CKM_IKE2_PRF_PLUS_DERIVE, Param::Ike(p @ P::PrfPlus { .. })) => p,
        _ => return Err(err(CKR_MECHANISM_PARAM_INVALID)),
    };
    kdf::ike::validate(&p)?;
    let len = kdf::ike::output_len(&p, len)?;
    if len > MAX_SECRET_LEN {
        return Err(err(CKR_KEY_SIZE_RANGE));
    }
    match base {
        KeyMaterial::Secret {
            key_type, value, ..
        } if kdf::ike::base_key_type_ok(&p, *key_type)? => {
            kdf::ike::derive(&p, value, seconds, len)
        }
        _ => Err(err(CKR_KEY_TYPE_INCONSISTENT)),
    }
}

/// True for the four IKE derivations ([`derive_ike`]).
pub fn is_ike(ty: CK_MECHANISM_TYPE) -> bool {
    matches!(
        ty,
        CKM_IKE_PRF_DERIVE
            | CKM_IKE1_PRF_DERIVE
            | CKM_IKE1_EXTENDED_DERIVE
            | CKM_IKE2_PRF_PLUS_DERIVE
    )
}

/// The full output of a §2.42 / §2.16.12 derivation, before truncation.
fn simple_derivation(
    ty: CK_MECHANISM_TYPE,
    param: Param<'_>,
    base: &KeyMaterial,
    other: Option<&[u8]>,
) -> Result<Zeroizing<Vec<u8>>> {
    let bad = || err(CKR_MECHANISM_PARAM_INVALID);
    match (ty, param) {
        (CKM_CONCATENATE_BASE_AND_KEY, Param::Handle(_)) => Ok(kdf::concat::concatenate(
            secret_value(base)?,
            other.ok_or_else(bad)?,
        )),
        (CKM_CONCATENATE_BASE_AND_DATA, Param::Bytes(d)) => {
            Ok(kdf::concat::concatenate(secret_value(base)?, d))
        }
        (CKM_CONCATENATE_DATA_AND_BASE, Param::Bytes(d)) => {
            Ok(kdf::concat::concatenate(d, secret_value(base)?))
        }
        (CKM_XOR_BASE_AND_DATA, Param::Bytes(d)) => Ok(kdf::concat::xor(secret_value(base)?, d)),
        (CKM_AES_ECB_ENCRYPT_DATA, Param::Bytes(d)) => {
            kdf::encrypt_data::ecb(aes::aes_key(base)?, d)
        }
        (CKM_AES_CBC_ENCRYPT_DATA, Param::AesCbcData { iv, data }) => {
            kdf::encrypt_data::cbc(aes::aes_key(base)?, &iv, data)
        }
        (CKM_DES_ECB_ENCRYPT_DATA, Param::Bytes(d)) => {
            kdf::encrypt_data::des(des::des_key(base, &[CKK_DES])?, None, d)
        }
        (CKM_DES_CBC_ENCRYPT_DATA, Param::DesCbcData { iv, data }) => {
            kdf::encrypt_data::des(des::des_key(base, &[CKK_DES])?, Some(&iv), data)
        }
        (CKM_DES3_ECB_ENCRYPT_DATA, Param::Bytes(d)) => {
            kdf::encrypt_data::des(des::des_key(base, &[CKK_DES2, CKK_DES3])?, None, d)
        }
        (CKM_DES3_CBC_ENCRYPT_DATA, Param::DesCbcData { iv, data }) => {
            kdf::encrypt_data::des(des::des_key(base, &[CKK_DES2, CKK_DES3])?, Some(&iv), data)
        }
        (ty, Param::None) if hash_of_key_derivation(ty).is_some() => {
            let hash = hash_of_key_derivation(ty).ok_or_else(bad)?;
            let mut d = digest::DigestOp::new(hash)?;
            d.update(secret_value(base)?);
            let mut out = Zeroizing::new(vec![0u8; d.output_len()]);
            d.finish(&mut out);
            Ok(out)
        }
        _ => Err(bad()),
    }
}

/// The value of any secret key (generic, HMAC, HKDF, AES or DES), else
/// `CKR_KEY_TYPE_INCONSISTENT`.
pub fn secret_value(base: &KeyMaterial) -> Result<&[u8]> {
    match base {
        KeyMaterial::Secret { value, .. } => Ok(value),
        KeyMaterial::Aes(k) => Ok(k.bytes()),
        KeyMaterial::ChaCha20(k) => Ok(&k[..]),
        KeyMaterial::Des(k) => Ok(k.bytes()),
        _ => Err(err(CKR_KEY_TYPE_INCONSISTENT)),
    }
}

/// The value of a KDF's base key: a generic secret or an HKDF key
/// (mechanisms spec 3.0 §2.43.2), else `CKR_KEY_TYPE_INCONSISTENT`.
fn kdf_base(base: &KeyMaterial) -> Result<&[u8]> {
    match base {
        KeyMaterial::Secret {
            key_type: CKK_GENERIC_SECRET | CKK_HKDF,
            value,
            ..
        } => Ok(value),
        _ => Err(err(CKR_KEY_TYPE_INCONSISTENT)),
    }
}
