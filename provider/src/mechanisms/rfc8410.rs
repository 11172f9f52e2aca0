//! The RFC 8410 encodings Ed25519, Ed448, X25519 and X448 keys share: the
//! SubjectPublicKeyInfo (§4) and PKCS#8 `PrivateKeyInfo` (§7) of a key,
//! which differ only in the algorithm OID's last arc (1.3.101.112 Ed25519,
//! 1.3.101.113 Ed448, 1.3.101.110 X25519, 1.3.101.111 X448) and the key's
//! length (32, 57, 32, 56 bytes), and their `CKA_EC_POINT` (a DER OCTET
//! STRING of the point, mechanisms spec §2.3.5).

use crate::attributes::Attributes;
use crate::error::{Result, err};
use crate::mechanisms::material::GeneratedPair;
use cryptoki_sys::*;
use zeroize::Zeroizing;

/// Length of an Ed25519 / X25519 key.
pub const KEY_LEN: usize = 32;
/// Last arc of the Ed25519 OID (1.3.101.112).
pub const ED25519: u8 = 0x70;
/// Last arc of the X25519 OID (1.3.101.110).
pub const X25519: u8 = 0x6e;
/// Last arc of the X448 OID (1.3.101.111).
pub const X448: u8 = 0x6f;
/// Last arc of the Ed448 OID (1.3.101.113).
pub const ED448: u8 = 0x71;

/// The length of a key (secret and point alike) of the algorithm `alg`.
const fn key_len(alg: u8) -> usize {
    match alg {
        ED448 => 57,
        X448 => 56,
        _ => KEY_LEN,
    }
}

/// SubjectPublicKeyInfo DER of a public key of the algorithm `alg`.
/// (All lengths are below 128: every DER length is one octet.)
pub fn spki(alg: u8, point: &[u8]) -> Vec<u8> {
    debug_assert_eq!(point.len(), key_len(alg));
    let n = point.len() as u8;
    let mut out = vec![
        0x30,
        n + 10,
        0x30,
        0x05,
        0x06,
        0x03,
        0x2b,
        0x65,
        alg,
        0x03,
        n + 1,
        0x00,
    ];
    out.extend_from_slice(point);
    out
}

/// PKCS#8 `PrivateKeyInfo` of a secret of the algorithm `alg`.
/// The lengths are those of a key of `alg` (a shorter `secret` gives the
/// prefix [`from_pkcs8`] expects).
pub fn pkcs8(alg: u8, secret: &[u8]) -> Zeroizing<Vec<u8>> {
    let n = key_len(alg) as u8;
    let mut out = Zeroizing::new(vec![
        0x30,
        n + 14,
        0x02,
        0x01,
        0x00,
        0x30,
        0x05,
        0x06,
        0x03,
        0x2b,
        0x65,
        alg,
        0x04,
        n + 2,
        0x04,
        n,
    ]);
    out.extend_from_slice(secret);
    out
}

/// Sets `CKA_EC_POINT` of an imported key of the algorithm `alg` to the
/// DER form of `point`, and `CKA_PUBLIC_KEY_INFO` when the template had
/// none (or an empty one).
pub fn set_public(alg: u8, point: &[u8], attrs: &mut Attributes) {
    attrs.set_bytes(CKA_EC_POINT, &der_point_of(point));
    if attrs
        .bytes(CKA_PUBLIC_KEY_INFO)
        .is_none_or(|v| v.is_empty())
    {
        attrs.set_bytes(CKA_PUBLIC_KEY_INFO, &spki(alg, point));
    }
}

/// The attributes of a generated key pair of the algorithm `alg`
/// (mechanisms spec §2.3.14 and its X25519 sibling): `CKA_EC_POINT` and
/// `CKA_PUBLIC_KEY_INFO` on both keys, and `CKA_EC_PARAMS` and the secret
/// `CKA_VALUE` on the private one.
pub fn generated_pair(
    alg: u8,
    key_type: CK_KEY_TYPE,
    params: &[u8],
    secret: &[u8],
    point: &[u8],
) -> GeneratedPair {
    let mut public = Attributes::new();
    public.set_bytes(CKA_EC_POINT, &der_point_of(point));
    public.set_bytes(CKA_PUBLIC_KEY_INFO, &spki(alg, point));
    let mut private = Attributes::new();
    private.set_bytes(CKA_EC_PARAMS, params);
    private.set_bytes(CKA_VALUE, secret);
    private.set_bytes(CKA_EC_POINT, &der_point_of(point));
    private.set_bytes(CKA_PUBLIC_KEY_INFO, &spki(alg, point));
    GeneratedPair {
        public,
        private,
        key_type,
    }
}

/// Parses what [`pkcs8`] produces for `alg` (`CKR_WRAPPED_KEY_INVALID`
/// otherwise) and sets `CKA_VALUE`, and `CKA_EC_PARAMS` to `ec_params` if
/// the template had none.
pub fn from_pkcs8(alg: u8, ec_params: &[u8], der: &[u8], attrs: &mut Attributes) -> Result<()> {
    let prefix = &pkcs8(alg, &[])[..];
    match der.strip_prefix(prefix) {
        Some(secret) if secret.len() == key_len(alg) => {
            attrs.set_bytes(CKA_VALUE, secret);
            if !attrs.contains(CKA_EC_PARAMS) {
                attrs.set_bytes(CKA_EC_PARAMS, ec_params);
            }
            Ok(())
        }
        _ => Err(err(CKR_WRAPPED_KEY_INVALID)),
    }
}

/// `CKA_EC_POINT` value: DER OCTET STRING of the point.
pub fn der_point(point: &[u8; KEY_LEN]) -> [u8; KEY_LEN + 2] {
    let mut out = [0u8; KEY_LEN + 2];
    out[0] = 0x04;
    out[1] = KEY_LEN as u8;
    out[2..].copy_from_slice(point);
    out
}

/// `CKA_EC_POINT` value of a point of any of the four lengths (below 128).
pub fn der_point_of(point: &[u8]) -> Vec<u8> {
    let mut out = vec![0x04, point.len() as u8];
    out.extend_from_slice(point);
    out
}

/// The 32-byte point from a raw or DER `CKA_EC_POINT`.
pub fn parse_point(v: &[u8]) -> Result<[u8; KEY_LEN]> {
    parse_point_n(v)
}

/// The `N`-byte point (N below 128) from a raw or DER `CKA_EC_POINT`
/// (`CKR_ATTRIBUTE_VALUE_INVALID` for any other length or form).
pub fn parse_point_n<const N: usize>(v: &[u8]) -> Result<[u8; N]> {
    let raw = match v {
        [0x04, len, rest @ ..] if usize::from(*len) == N && rest.len() == N => rest,
        _ if v.len() == N => v,
        _ => return Err(err(CKR_ATTRIBUTE_VALUE_INVALID)),
    };
    Ok(raw.try_into().expect("length checked"))
}
