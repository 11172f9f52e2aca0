//! Building key material ([`KeyMaterial`], defined in `material`) from an
//! object's attributes, plus the per-key-type checks of imported keys and
//! the encodings used by `C_WrapKey` / `C_UnwrapKey` (secret keys: the raw
//! value; private keys: PKCS#8 `PrivateKeyInfo` DER). Dispatches to the
//! families by key type.

pub use super::material::{KeyMaterial, ValueOf};
use super::{aes, chacha, des, dh, dsa, ec, eddsa, mldsa, mlkem, otp, rsa, slhdsa, x25519};
use crate::attributes::Attributes;
use crate::error::{Result, err};
use cryptoki_sys::*;
use zeroize::Zeroizing;

/// True for the key types whose value is a plain secret (HMAC and HKDF keys).
pub fn is_generic_secret(key_type: CK_KEY_TYPE) -> bool {
    matches!(
        key_type,
        CKK_GENERIC_SECRET
            | CKK_HKDF
            | CKK_SHA_1_HMAC
            | CKK_SHA224_HMAC
            | CKK_SHA256_HMAC
            | CKK_SHA384_HMAC
            | CKK_SHA512_HMAC
            | CKK_SHA512_224_HMAC
            | CKK_SHA512_256_HMAC
            | CKK_SHA3_224_HMAC
            | CKK_SHA3_256_HMAC
            | CKK_SHA3_384_HMAC
            | CKK_SHA3_512_HMAC
    )
}

fn required(get: ValueOf<'_>, ty: CK_ATTRIBUTE_TYPE) -> Result<Zeroizing<Vec<u8>>> {
    get(ty)?.ok_or(err(CKR_KEY_HANDLE_INVALID))
}

/// Builds the key material of a key of `class` and `key_type` from its
/// plain attribute values (`get`, which the model layer answers, unsealing
/// as needed).
pub fn load(
    class: CK_OBJECT_CLASS,
    key_type: Option<CK_KEY_TYPE>,
    get: ValueOf<'_>,
) -> Result<KeyMaterial> {
    match (class, key_type) {
        (CKO_PRIVATE_KEY, Some(CKK_EC_EDWARDS)) => eddsa::load_private(&required(get, CKA_VALUE)?),
        (CKO_PUBLIC_KEY, Some(CKK_EC_EDWARDS)) => eddsa::load_public(&required(get, CKA_EC_POINT)?),
        (CKO_PRIVATE_KEY, Some(CKK_EC_MONTGOMERY)) => {
            x25519::load_private(&required(get, CKA_VALUE)?)
        }
        (CKO_PUBLIC_KEY, Some(CKK_EC_MONTGOMERY)) => {
            x25519::load_public(&required(get, CKA_EC_POINT)?)
        }
        (CKO_PRIVATE_KEY, Some(CKK_EC)) => {
            ec::load_private(&required(get, CKA_EC_PARAMS)?, &required(get, CKA_VALUE)?)
        }
        (CKO_PUBLIC_KEY, Some(CKK_EC)) => ec::load_public(
            &required(get, CKA_EC_PARAMS)?,
            &required(get, CKA_EC_POINT)?,
        ),
        (CKO_PRIVATE_KEY, Some(CKK_RSA)) => rsa::load_private(get),
        (CKO_PUBLIC_KEY, Some(CKK_RSA)) => rsa::load_public(get),
        (CKO_PRIVATE_KEY, Some(CKK_DSA)) => dsa::load_private(
            &required(get, CKA_PRIME)?,
            &required(get, CKA_SUBPRIME)?,
            &required(get, CKA_BASE)?,
            &required(get, CKA_VALUE)?,
        ),
        (CKO_PUBLIC_KEY, Some(CKK_DSA)) => dsa::load_public(
            &required(get, CKA_PRIME)?,
            &required(get, CKA_SUBPRIME)?,
            &required(get, CKA_BASE)?,
            &required(get, CKA_VALUE)?,
        ),
        (CKO_PRIVATE_KEY, Some(CKK_DH)) => dh::load_private(
            &required(get, CKA_PRIME)?,
            &required(get, CKA_BASE)?,
            &required(get, CKA_VALUE)?,
        ),
        (CKO_PUBLIC_KEY, Some(CKK_DH)) => dh::load_public(
            &required(get, CKA_PRIME)?,
            &required(get, CKA_BASE)?,
            &required(get, CKA_VALUE)?,
        ),
        (CKO_PRIVATE_KEY, Some(CKK_ML_DSA)) => {
            let set = required(get, CKA_PARAMETER_SET)?;
            match get(CKA_SEED)? {
                Some(seed) => mldsa::load_private(&set, Some(&seed), None),
                None => mldsa::load_private(&set, None, Some(&required(get, CKA_VALUE)?)),
            }
        }
        (CKO_PUBLIC_KEY, Some(CKK_ML_DSA)) => mldsa::load_public(
            &required(get, CKA_PARAMETER_SET)?,
            &required(get, CKA_VALUE)?,
        ),
        (CKO_PRIVATE_KEY, Some(CKK_ML_KEM)) => {
            let set = required(get, CKA_PARAMETER_SET)?;
            match get(CKA_SEED)? {
                Some(seed) => mlkem::load_private(&set, Some(&seed), None),
                None => mlkem::load_private(&set, None, Some(&required(get, CKA_VALUE)?)),
            }
        }
        (CKO_PUBLIC_KEY, Some(CKK_ML_KEM)) => mlkem::load_public(
            &required(get, CKA_PARAMETER_SET)?,
            &required(get, CKA_VALUE)?,
        ),
        (CKO_PRIVATE_KEY, Some(CKK_SLH_DSA)) => slhdsa::load_private(
            &required(get, CKA_PARAMETER_SET)?,
            &required(get, CKA_VALUE)?,
        ),
        (CKO_PUBLIC_KEY, Some(CKK_SLH_DSA)) => slhdsa::load_public(
            &required(get, CKA_PARAMETER_SET)?,
            &required(get, CKA_VALUE)?,
        ),
        (CKO_SECRET_KEY, Some(CKK_AES)) => aes::load(&required(get, CKA_VALUE)?),
        (CKO_SECRET_KEY, Some(CKK_CHACHA20)) => chacha::load(&required(get, CKA_VALUE)?),
        (CKO_SECRET_KEY, Some(t @ (CKK_DES | CKK_DES2 | CKK_DES3))) => {
            des::load(t, &required(get, CKA_VALUE)?)
        }
        (CKO_SECRET_KEY, Some(t)) if is_generic_secret(t) => Ok(KeyMaterial::Secret {
            key_type: t,
            value: required(get, CKA_VALUE)?,
            hmac: Default::default(),
        }),
        (CKO_OTP_KEY, Some(CKK_HOTP)) => {
            let length = get(CKA_OTP_LENGTH)?;
            let requirement = get(CKA_OTP_COUNTER_REQUIREMENT)?;
            otp::key::HotpKey::new(
                required(get, CKA_VALUE)?,
                length.as_deref().map(|v| v.as_slice()),
                requirement.as_deref().map(|v| v.as_slice()),
            )
            .map(KeyMaterial::Hotp)
        }
        _ => Err(err(CKR_KEY_TYPE_INCONSISTENT)),
    }
}

/// Checks the key values of an object made by `C_CreateObject`,
/// `C_UnwrapKey` or `C_DeriveKey`, normalises encodings and adds computed
/// values (public points, `CKA_VALUE_LEN`, ...).
pub fn complete_import(
    class: CK_OBJECT_CLASS,
    key_type: Option<CK_KEY_TYPE>,
    attrs: &mut Attributes,
) -> Result<()> {
    match (class, key_type) {
        (CKO_PRIVATE_KEY | CKO_PUBLIC_KEY, Some(CKK_EC_EDWARDS)) => {
            eddsa::complete_import(class, attrs)
        }
        (CKO_PRIVATE_KEY | CKO_PUBLIC_KEY, Some(CKK_EC_MONTGOMERY)) => {
            x25519::complete_import(class, attrs)
        }
        (CKO_PRIVATE_KEY | CKO_PUBLIC_KEY, Some(CKK_EC)) => ec::complete_import(class, attrs),
        (CKO_PRIVATE_KEY | CKO_PUBLIC_KEY, Some(CKK_RSA)) => rsa::complete_import(class, attrs),
        (CKO_PRIVATE_KEY | CKO_PUBLIC_KEY | CKO_DOMAIN_PARAMETERS, Some(CKK_DSA)) => {
            dsa::complete_import(class, attrs)
        }
        (CKO_PRIVATE_KEY | CKO_PUBLIC_KEY | CKO_DOMAIN_PARAMETERS, Some(CKK_DH)) => {
            dh::complete_import(class, attrs)
        }
        (CKO_PRIVATE_KEY | CKO_PUBLIC_KEY, Some(CKK_ML_DSA)) => {
            mldsa::complete_import(class, attrs)
        }
        (CKO_PRIVATE_KEY | CKO_PUBLIC_KEY, Some(CKK_SLH_DSA)) => {
            slhdsa::complete_import(class, attrs)
        }
        (CKO_PRIVATE_KEY | CKO_PUBLIC_KEY, Some(CKK_ML_KEM)) => {
            mlkem::complete_import(class, attrs)
        }
        (CKO_PRIVATE_KEY | CKO_PUBLIC_KEY, Some(_)) => Err(err(CKR_ATTRIBUTE_VALUE_INVALID)),
        (CKO_OTP_KEY, Some(CKK_HOTP)) => otp::key::complete_import(attrs),
        (CKO_OTP_KEY, _) => Err(err(CKR_ATTRIBUTE_VALUE_INVALID)),
        (CKO_SECRET_KEY, Some(key_type)) => {
            let len = attrs
                .bytes(CKA_VALUE)
                .map(<[u8]>::len)
                .ok_or(err(CKR_TEMPLATE_INCOMPLETE))?;
            let valid = match key_type {
                CKK_AES => matches!(len, 16 | 24 | 32),
                CKK_CHACHA20 => len == chacha::KEY_LEN,
                CKK_DES | CKK_DES2 | CKK_DES3 => {
                    // Length, parity and weak keys (mechanisms spec §2.29).
                    des::check_value(key_type, attrs.bytes(CKA_VALUE).unwrap_or_default())?;
                    true
                }
                _ => len > 0,
            };
            if !valid {
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

/// The bytes `C_WrapKey` encrypts: a secret key's value, or a private
/// key's PKCS#8 DER.
pub fn export_for_wrap(
    class: CK_OBJECT_CLASS,
    key_type: Option<CK_KEY_TYPE>,
    get: ValueOf<'_>,
) -> Result<Zeroizing<Vec<u8>>> {
    match (class, key_type) {
        (CKO_SECRET_KEY, Some(_)) => required(get, CKA_VALUE),
        (CKO_PRIVATE_KEY, Some(CKK_EC_EDWARDS)) => Ok(eddsa::pkcs8(&required(get, CKA_VALUE)?)),
        (CKO_PRIVATE_KEY, Some(CKK_EC_MONTGOMERY)) => Ok(x25519::pkcs8(&required(get, CKA_VALUE)?)),
        (CKO_PRIVATE_KEY, Some(CKK_EC)) => {
            ec::to_pkcs8(&required(get, CKA_EC_PARAMS)?, &required(get, CKA_VALUE)?)
        }
        (CKO_PRIVATE_KEY, Some(CKK_RSA)) => rsa::to_pkcs8(get),
        (CKO_PRIVATE_KEY, Some(CKK_DSA)) => dsa::to_pkcs8(
            &required(get, CKA_PRIME)?,
            &required(get, CKA_SUBPRIME)?,
            &required(get, CKA_BASE)?,
            &required(get, CKA_VALUE)?,
        ),
        (CKO_PRIVATE_KEY, Some(CKK_DH)) => dh::to_pkcs8(
            &required(get, CKA_PRIME)?,
            &required(get, CKA_BASE)?,
            &required(get, CKA_VALUE)?,
        ),
        (CKO_PRIVATE_KEY, Some(CKK_ML_DSA)) => mldsa::to_pkcs8(
            &required(get, CKA_PARAMETER_SET)?,
            get(CKA_SEED)?.as_deref().map(Vec::as_slice),
        ),
        (CKO_PRIVATE_KEY, Some(CKK_SLH_DSA)) => slhdsa::to_pkcs8(
            &required(get, CKA_PARAMETER_SET)?,
            &required(get, CKA_VALUE)?,
        ),
        (CKO_PRIVATE_KEY, Some(CKK_ML_KEM)) => mlkem::to_pkcs8(
            &required(get, CKA_PARAMETER_SET)?,
            get(CKA_SEED)?.as_deref().map(Vec::as_slice),
        ),
        _ => Err(err(CKR_KEY_NOT_WRAPPABLE)),
    }
}

/// The length of the DER element `bytes` starts with (definite lengths of
/// up to four octets), if it is one.
fn der_length(bytes: &[u8]) -> Option<usize> {
    let first = *bytes.get(1)?;
    if first < 0x80 {
        return Some(2 + usize::from(first));
    }
    let n = usize::from(first & 0x7f);
    if n == 0 || n > 4 {
        return None;
    }
    let len = bytes
        .get(2..2 + n)?
        .iter()
        .fold(0usize, |acc, b| (acc << 8) | usize::from(*b));
    Some(2 + n + len)
}

/// A wrapped PKCS#8 key followed by fewer than 8 zero bytes, as SoftHSM2
/// wraps private keys with `CKM_AES_KEY_WRAP_PAD`: it pads them to a
/// multiple of 8 itself before RFC 5649 does. The DER's own length says
/// where the key ends; anything else after it is `CKR_WRAPPED_KEY_INVALID`.
fn without_zero_padding(bytes: &[u8]) -> Result<&[u8]> {
    let len = der_length(bytes).ok_or(err(CKR_WRAPPED_KEY_INVALID))?;
    let (key, padding) = bytes.split_at(len);
    if padding.len() < 8 && padding.iter().all(|&b| b == 0) {
        Ok(key)
    } else {
        Err(err(CKR_WRAPPED_KEY_INVALID))
    }
}

/// Sets the key values of an unwrapped key from the bytes
/// [`export_for_wrap`] produced; `CKR_WRAPPED_KEY_INVALID` if they do not
/// parse as a key of `key_type`.
pub fn import_unwrapped(
    class: CK_OBJECT_CLASS,
    key_type: CK_KEY_TYPE,
    bytes: &[u8],
    attrs: &mut Attributes,
) -> Result<()> {
    match class {
        CKO_SECRET_KEY => {
            attrs.set_bytes(CKA_VALUE, bytes);
            Ok(())
        }
        CKO_PRIVATE_KEY => match key_type {
            _ if bytes.len() > der_length(bytes).unwrap_or(usize::MAX) => {
                import_unwrapped(class, key_type, without_zero_padding(bytes)?, attrs)
            }
            CKK_EC_EDWARDS => eddsa::from_pkcs8(bytes, attrs),
            CKK_EC_MONTGOMERY => x25519::from_pkcs8(bytes, attrs),
            CKK_EC => ec::from_pkcs8(bytes, attrs),
            CKK_RSA => rsa::from_pkcs8(bytes, attrs),
            CKK_DSA => dsa::from_pkcs8(bytes, attrs),
            CKK_DH => dh::from_pkcs8(bytes, attrs),
            CKK_ML_DSA => mldsa::from_pkcs8(bytes, attrs),
            CKK_SLH_DSA => slhdsa::from_pkcs8(bytes, attrs),
            CKK_ML_KEM => mlkem::from_pkcs8(bytes, attrs),
            _ => Err(err(CKR_TEMPLATE_INCONSISTENT)),
        },
        _ => Err(err(CKR_TEMPLATE_INCONSISTENT)),
    }
}

/// The key-material attributes of the public key matching the private key
/// `private` (PKCS#11 3.2 `CKM_PUB_KEY_FROM_PRIV_KEY`), computed from the
/// private key itself, never copied from the object: RSA `CKA_MODULUS`
/// and `CKA_PUBLIC_EXPONENT`; EC, Edwards and Montgomery `CKA_EC_POINT`
/// (the caller adds the private key's `CKA_EC_PARAMS`); DSA `CKA_PRIME`,
/// `CKA_SUBPRIME`, `CKA_BASE` and `CKA_VALUE` = y; ML-DSA, ML-KEM and
/// SLH-DSA `CKA_PARAMETER_SET` and the public `CKA_VALUE`. Only public
/// values: nothing of the private key is in them. Another material is
/// `CKR_KEY_TYPE_INCONSISTENT`.
pub fn public_half(private: &KeyMaterial) -> Result<Attributes> {
    let mut a = Attributes::new();
    match private {
        KeyMaterial::RsaPrivate(k, ..) => rsa::public_attributes(k, &mut a),
        KeyMaterial::EcPrivate(k, ..) => {
            a.set_bytes(CKA_EC_POINT, &ec::der_point(&k.public().uncompressed()));
        }
        KeyMaterial::Ed25519Private(k) => {
            a.set_bytes(CKA_EC_POINT, &ec::der_point(k.verifying_key().as_bytes()));
        }
        KeyMaterial::X25519Private(k, ..) => {
            a.set_bytes(
                CKA_EC_POINT,
                &ec::der_point(x25519_dalek::PublicKey::from(k).as_bytes()),
            );
        }
        KeyMaterial::DsaPrivate(k) => dsa::public_attributes(k, &mut a),
        KeyMaterial::MlDsaPrivate(k) => {
            a.set_ulong(CKA_PARAMETER_SET, k.set().ckp());
            a.set_bytes(CKA_VALUE, &k.public_encoding());
        }
        KeyMaterial::MlKemPrivate(k) => {
            a.set_ulong(CKA_PARAMETER_SET, k.set().ckp());
            a.set_bytes(CKA_VALUE, &k.public_encoding());
        }
        KeyMaterial::SlhDsaPrivate(k) => {
            a.set_ulong(CKA_PARAMETER_SET, k.set().ckp());
            a.set_bytes(CKA_VALUE, &k.public_encoding());
        }
        _ => return Err(err(CKR_KEY_TYPE_INCONSISTENT)),
    }
    Ok(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unwrapped_pkcs8_with_softhsm2_zero_padding_is_accepted_and_other_tails_are_not() {
        let der = eddsa::pkcs8(&[3; 32]);
        let with = |tail: &[u8]| {
            let mut v = der.to_vec();
            v.extend_from_slice(tail);
            let mut attrs = Attributes::new();
            import_unwrapped(CKO_PRIVATE_KEY, CKK_EC_EDWARDS, &v, &mut attrs)
                .map(|()| attrs.bytes(CKA_VALUE).map(<[u8]>::to_vec))
                .map_err(|e| e.rv())
        };
        assert_eq!(with(&[]), Ok(Some(vec![3; 32])));
        assert_eq!(with(&[0; 6]), Ok(Some(vec![3; 32])));
        for bad in [&[0u8; 8][..], &[0, 0, 1], &[0x30, 0x00]] {
            assert_eq!(with(bad), Err(CKR_WRAPPED_KEY_INVALID), "{bad:?}");
        }
        assert_eq!(der_length(&[0x30, 0x82, 0x04, 0xbd]), Some(4 + 0x4bd));
        assert_eq!(der_length(&[0x30]), None);
        assert_eq!(der_length(&[0x30, 0x80]), None);
    }
}
