//! Ed25519 keys (mechanisms spec §2.3.5 and §2.3.14): the accepted
//! `CKA_EC_PARAMS`, loading, import checks, RFC 8410 encodings for
//! wrapping, and key-pair generation. Ed448 keys (`ed448.rs`) share the
//! key type `CKK_EC_EDWARDS`: they are told apart by `CKA_EC_PARAMS`
//! where a template has it, else by their lengths (57-byte secrets and
//! points, 32 for Ed25519).

use super::ed448;
use crate::attributes::Attributes;
use crate::error::{Result, err};
use crate::mechanisms::material::{GeneratedPair, KeyMaterial};
use crate::mechanisms::random::os_fill as random_bytes;
use crate::mechanisms::rfc8410::{self, KEY_LEN, parse_point};
use cryptoki_sys::*;
use ed25519_dalek::{SigningKey, VerifyingKey};
use zeroize::Zeroizing;

/// DER of the OID 1.3.101.112 (RFC 8410 id-Ed25519).
pub const OID_ED25519: &[u8] = &[0x06, 0x03, 0x2b, 0x65, 0x70];
/// DER PrintableString "edwards25519".
pub const NAME_ED25519: &[u8] = b"\x13\x0cedwards25519";
const UTF8_NAME_ED25519: &[u8] = b"\x0c\x0cedwards25519";
const GNUPG_OID_ED25519: &[u8] = &[
    0x06, 0x09, 0x2b, 0x06, 0x01, 0x04, 0x01, 0xda, 0x47, 0x0f, 0x01,
];

/// True if `params` names Ed25519.
pub fn is_ed25519_params(params: &[u8]) -> bool {
    [
        OID_ED25519,
        NAME_ED25519,
        UTF8_NAME_ED25519,
        GNUPG_OID_ED25519,
    ]
    .contains(&params)
}

/// Parses a private key (`CKA_VALUE`, the 32-byte RFC 8032 secret).
pub fn load_private(value: &[u8]) -> Result<KeyMaterial> {
    if value.len() == ed448::KEY_LEN {
        return ed448::load_private(value);
    }
    let secret: Zeroizing<[u8; KEY_LEN]> =
        Zeroizing::new(value.try_into().map_err(|_| err(CKR_KEY_HANDLE_INVALID))?);
    Ok(KeyMaterial::Ed25519Private(SigningKey::from_bytes(&secret)))
}

/// Parses a public key (`CKA_EC_POINT`).
pub fn load_public(point: &[u8]) -> Result<KeyMaterial> {
    if [ed448::KEY_LEN, ed448::KEY_LEN + 2].contains(&point.len()) {
        return ed448::load_public(point);
    }
    let p = parse_point(point).map_err(|_| err(CKR_KEY_HANDLE_INVALID))?;
    VerifyingKey::from_bytes(&p)
        .map(KeyMaterial::Ed25519Public)
        .map_err(|_| err(CKR_KEY_HANDLE_INVALID))
}

/// Checks an imported Ed25519 key, normalises `CKA_EC_POINT` to DER and,
/// for private keys, adds the public point and `CKA_PUBLIC_KEY_INFO`.
pub fn complete_import(class: CK_OBJECT_CLASS, attrs: &mut Attributes) -> Result<()> {
    let params = attrs
        .bytes(CKA_EC_PARAMS)
        .ok_or(err(CKR_TEMPLATE_INCOMPLETE))?;
    if ed448::is_ed448_params(params) {
        return ed448::complete_import(class, attrs);
    }
    if !is_ed25519_params(params) {
        return Err(err(CKR_CURVE_NOT_SUPPORTED));
    }
    let point = if class == CKO_PRIVATE_KEY {
        let value = attrs.bytes(CKA_VALUE).ok_or(err(CKR_TEMPLATE_INCOMPLETE))?;
        let secret: Zeroizing<[u8; KEY_LEN]> = Zeroizing::new(
            value
                .try_into()
                .map_err(|_| err(CKR_ATTRIBUTE_VALUE_INVALID))?,
        );
        SigningKey::from_bytes(&secret).verifying_key().to_bytes()
    } else {
        let p = parse_point(
            attrs
                .bytes(CKA_EC_POINT)
                .ok_or(err(CKR_TEMPLATE_INCOMPLETE))?,
        )?;
        VerifyingKey::from_bytes(&p).map_err(|_| err(CKR_ATTRIBUTE_VALUE_INVALID))?;
        p
    };
    rfc8410::set_public(rfc8410::ED25519, &point, attrs);
    Ok(())
}

/// SubjectPublicKeyInfo DER of an Ed25519 public key (RFC 8410 §4).
pub fn spki(point: &[u8; KEY_LEN]) -> Vec<u8> {
    rfc8410::spki(rfc8410::ED25519, point)
}

/// PKCS#8 `PrivateKeyInfo` (RFC 8410 §7) of an Ed25519 or (57 bytes)
/// Ed448 secret, for `C_WrapKey`.
pub fn pkcs8(secret: &[u8]) -> Zeroizing<Vec<u8>> {
    if secret.len() == ed448::KEY_LEN {
        return ed448::pkcs8(secret);
    }
    rfc8410::pkcs8(rfc8410::ED25519, secret)
}

/// Parses what [`pkcs8`] produces for Ed25519 or Ed448
/// (`CKR_WRAPPED_KEY_INVALID` otherwise) and sets `CKA_VALUE` and
/// `CKA_EC_PARAMS` (if the template had none).
pub fn from_pkcs8(der: &[u8], attrs: &mut Attributes) -> Result<()> {
    rfc8410::from_pkcs8(rfc8410::ED25519, OID_ED25519, der, attrs)
        .or_else(|_| ed448::from_pkcs8(der, attrs))
}

/// Generates a key pair for the `CKA_EC_PARAMS` of the public template.
pub fn generate(public_template: &Attributes) -> Result<GeneratedPair> {
    let params = public_template
        .bytes(CKA_EC_PARAMS)
        .ok_or(err(CKR_TEMPLATE_INCOMPLETE))?;
    if ed448::is_ed448_params(params) {
        return ed448::generate(params);
    }
    if !is_ed25519_params(params) {
        return Err(err(CKR_CURVE_NOT_SUPPORTED));
    }
    let mut secret = Zeroizing::new([0u8; KEY_LEN]);
    random_bytes(secret.as_mut())?;
    let point = SigningKey::from_bytes(&secret).verifying_key().to_bytes();
    Ok(rfc8410::generated_pair(
        rfc8410::ED25519,
        CKK_EC_EDWARDS,
        params,
        secret.as_ref(),
        &point,
    ))
}

/// The public key of an Ed25519 key object's material (public keys only,
/// as `CKA_VERIFY` exists only on public keys; batch verification is
/// Ed25519's, so an Ed448 key is `CKR_KEY_TYPE_INCONSISTENT`).
pub fn verifying_key(key: &KeyMaterial) -> Result<VerifyingKey> {
    match key {
        KeyMaterial::Ed25519Public(k) => Ok(*k),
        _ => Err(err(CKR_KEY_TYPE_INCONSISTENT)),
    }
}
