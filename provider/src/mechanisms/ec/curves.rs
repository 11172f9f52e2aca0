//! The Weierstrass curves of `CKK_EC` keys (mechanisms spec §2.3.3, §2.3.5):
//! naming by `CKA_EC_PARAMS`, the key types of each curve, and the
//! encodings of points and scalars.

use crate::error::{Result, err};
use cryptoki_sys::*;
use p256::elliptic_curve::sec1::ToSec1Point;
use zeroize::Zeroizing;

/// DER of the OID 1.2.840.10045.3.1.1 (P-192, prime192v1).
pub const OID_P192: &[u8] = &[0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x01];
/// DER of the OID 1.3.132.0.33 (P-224, secp224r1).
pub const OID_P224: &[u8] = &[0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x21];
/// DER of the OID 1.2.840.10045.3.1.7 (P-256, prime256v1).
pub const OID_P256: &[u8] = &[0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];
/// DER of the OID 1.3.132.0.34 (P-384, secp384r1).
pub const OID_P384: &[u8] = &[0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x22];
/// DER of the OID 1.3.132.0.35 (P-521, secp521r1).
pub const OID_P521: &[u8] = &[0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x23];
/// DER of the OID 1.3.132.0.10 (secp256k1).
pub const OID_K256: &[u8] = &[0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x0a];

/// The curves supported.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Curve {
    /// NIST P-192 (legacy: SP 800-131A allows it for verification only,
    /// but it is offered for every mechanism, as other tokens do).
    P192,
    /// NIST P-224.
    P224,
    /// NIST P-256.
    P256,
    /// NIST P-384.
    P384,
    /// NIST P-521.
    P521,
    /// SEC 2 secp256k1.
    K256,
}

impl Curve {
    /// Field (and scalar) size in bytes.
    pub fn field_len(self) -> usize {
        match self {
            Curve::P192 => 24,
            Curve::P224 => 28,
            Curve::P256 | Curve::K256 => 32,
            Curve::P384 => 48,
            Curve::P521 => 66,
        }
    }

    /// The cofactor h = #E / n (SEC 2 §2.4, FIPS 186-4 D.1.2): 1 for every
    /// curve here, so cofactor Diffie-Hellman (`CKM_ECDH1_COFACTOR_DERIVE`,
    /// SP 800-56A §5.7.1.2) computes what plain ECDH computes.
    pub fn cofactor(self) -> u32 {
        match self {
            Curve::P192 | Curve::P224 | Curve::P256 | Curve::P384 | Curve::P521 | Curve::K256 => 1,
        }
    }

    /// Bits of the group order (the key size of §2.3, `CK_MECHANISM_INFO`).
    pub fn bits(self) -> usize {
        match self {
            Curve::P192 => 192,
            Curve::P224 => 224,
            Curve::P256 | Curve::K256 => 256,
            Curve::P384 => 384,
            Curve::P521 => 521,
        }
    }

    /// DER of the named-curve OID.
    pub fn oid(self) -> &'static [u8] {
        match self {
            Curve::P192 => OID_P192,
            Curve::P224 => OID_P224,
            Curve::P256 => OID_P256,
            Curve::P384 => OID_P384,
            Curve::P521 => OID_P521,
            Curve::K256 => OID_K256,
        }
    }

    /// Every supported curve.
    pub const ALL: [Curve; 6] = [
        Curve::P192,
        Curve::P224,
        Curve::P256,
        Curve::P384,
        Curve::P521,
        Curve::K256,
    ];
}

/// The curve named by `CKA_EC_PARAMS` (§2.3.3): the DER of a named-curve
/// OID, or a DER PrintableString (or UTF8String) of the curve's name as in
/// SEC 2, X9.62 or FIPS 186.
pub fn curve_of(params: &[u8]) -> Result<Curve> {
    if let Some(c) = Curve::ALL.into_iter().find(|c| c.oid() == params) {
        return Ok(c);
    }
    if let [0x13 | 0x0c, len, name @ ..] = params
        && *len as usize == name.len()
    {
        return match name {
            b"prime192v1" | b"secp192r1" | b"P-192" | b"nistp192" => Ok(Curve::P192),
            b"secp224r1" | b"P-224" | b"nistp224" => Ok(Curve::P224),
            b"prime256v1" | b"secp256r1" | b"P-256" | b"nistp256" => Ok(Curve::P256),
            b"secp384r1" | b"P-384" | b"nistp384" => Ok(Curve::P384),
            b"secp521r1" | b"P-521" | b"nistp521" => Ok(Curve::P521),
            b"secp256k1" => Ok(Curve::K256),
            _ => Err(err(CKR_CURVE_NOT_SUPPORTED)),
        };
    }
    Err(err(CKR_CURVE_NOT_SUPPORTED))
}

/// P-192 has no signing key type of its own (the p192 crate verifies
/// only); the generic one of the ecdsa crate works over its arithmetic.
pub type P192SigningKey = ::ecdsa::SigningKey<p192::NistP192>;

/// A private key on one of the curves.
pub enum EcPrivateKey {
    /// P-192.
    P192(P192SigningKey),
    /// P-224.
    P224(p224::ecdsa::SigningKey),
    /// P-256.
    P256(p256::ecdsa::SigningKey),
    /// P-384.
    P384(p384::ecdsa::SigningKey),
    /// P-521.
    P521(p521::ecdsa::SigningKey),
    /// secp256k1.
    K256(k256::ecdsa::SigningKey),
}

/// A public key on one of the curves.
#[derive(Clone)]
pub enum EcPublicKey {
    /// P-192.
    P192(p192::ecdsa::VerifyingKey),
    /// P-224.
    P224(p224::ecdsa::VerifyingKey),
    /// P-256.
    P256(p256::ecdsa::VerifyingKey),
    /// P-384.
    P384(p384::ecdsa::VerifyingKey),
    /// P-521.
    P521(p521::ecdsa::VerifyingKey),
    /// secp256k1.
    K256(k256::ecdsa::VerifyingKey),
}

/// Runs `$body` with `$k` bound to the key inside any variant of the
/// `EcPrivateKey` or `EcPublicKey` value `$v` (each arm type-checks on its
/// own, so the body may use the curve's own types).
macro_rules! each {
    ($v:expr, $ty:ident, $k:ident => $body:expr) => {
        match $v {
            $ty::P192($k) => $body,
            $ty::P224($k) => $body,
            $ty::P256($k) => $body,
            $ty::P384($k) => $body,
            $ty::P521($k) => $body,
            $ty::K256($k) => $body,
        }
    };
}
pub(crate) use each;

impl EcPrivateKey {
    /// The key of scalar `value` (big-endian, leading zeros optional).
    pub fn from_scalar(curve: Curve, value: &[u8]) -> Result<EcPrivateKey> {
        let bad = |_| err(CKR_ATTRIBUTE_VALUE_INVALID);
        if value.is_empty() || value.len() > curve.field_len() {
            return Err(err(CKR_ATTRIBUTE_VALUE_INVALID));
        }
        let mut padded = Zeroizing::new(vec![0u8; curve.field_len()]);
        padded[curve.field_len() - value.len()..].copy_from_slice(value);
        Ok(match curve {
            Curve::P192 => EcPrivateKey::P192(P192SigningKey::from_slice(&padded).map_err(bad)?),
            Curve::P224 => {
                EcPrivateKey::P224(p224::ecdsa::SigningKey::from_slice(&padded).map_err(bad)?)
            }
            Curve::P256 => {
                EcPrivateKey::P256(p256::ecdsa::SigningKey::from_slice(&padded).map_err(bad)?)
            }
            Curve::P384 => {
                EcPrivateKey::P384(p384::ecdsa::SigningKey::from_slice(&padded).map_err(bad)?)
            }
            Curve::P521 => {
                EcPrivateKey::P521(p521::ecdsa::SigningKey::from_slice(&padded).map_err(bad)?)
            }
            Curve::K256 => {
                EcPrivateKey::K256(k256::ecdsa::SigningKey::from_slice(&padded).map_err(bad)?)
            }
        })
    }

    /// The public half.
    pub fn public(&self) -> EcPublicKey {
        match self {
            EcPrivateKey::P192(k) => EcPublicKey::P192(*k.verifying_key()),
            EcPrivateKey::P224(k) => EcPublicKey::P224(*k.verifying_key()),
            EcPrivateKey::P256(k) => EcPublicKey::P256(*k.verifying_key()),
            EcPrivateKey::P384(k) => EcPublicKey::P384(*k.verifying_key()),
            EcPrivateKey::P521(k) => EcPublicKey::P521(*k.verifying_key()),
            EcPrivateKey::K256(k) => EcPublicKey::K256(*k.verifying_key()),
        }
    }

    /// The scalar, big-endian, field-size bytes.
    pub fn scalar(&self) -> Zeroizing<Vec<u8>> {
        each!(self, EcPrivateKey, k => Zeroizing::new(k.to_bytes().to_vec()))
    }

    /// The curve of the key.
    pub fn curve(&self) -> Curve {
        match self {
            EcPrivateKey::P192(_) => Curve::P192,
            EcPrivateKey::P224(_) => Curve::P224,
            EcPrivateKey::P256(_) => Curve::P256,
            EcPrivateKey::P384(_) => Curve::P384,
            EcPrivateKey::P521(_) => Curve::P521,
            EcPrivateKey::K256(_) => Curve::K256,
        }
    }
}

impl EcPublicKey {
    /// The key of SEC1 point `point` (compressed or not).
    pub fn from_point(curve: Curve, point: &[u8]) -> Result<EcPublicKey> {
        let bad = |_| err(CKR_ATTRIBUTE_VALUE_INVALID);
        Ok(match curve {
            Curve::P192 => {
                EcPublicKey::P192(p192::ecdsa::VerifyingKey::from_sec1_bytes(point).map_err(bad)?)
            }
            Curve::P224 => {
                EcPublicKey::P224(p224::ecdsa::VerifyingKey::from_sec1_bytes(point).map_err(bad)?)
            }
            Curve::P256 => {
                EcPublicKey::P256(p256::ecdsa::VerifyingKey::from_sec1_bytes(point).map_err(bad)?)
            }
            Curve::P384 => {
                EcPublicKey::P384(p384::ecdsa::VerifyingKey::from_sec1_bytes(point).map_err(bad)?)
            }
            Curve::P521 => {
                EcPublicKey::P521(p521::ecdsa::VerifyingKey::from_sec1_bytes(point).map_err(bad)?)
            }
            Curve::K256 => {
                EcPublicKey::K256(k256::ecdsa::VerifyingKey::from_sec1_bytes(point).map_err(bad)?)
            }
        })
    }

    /// Uncompressed SEC1 encoding (0x04 ‖ X ‖ Y).
    pub fn uncompressed(&self) -> Vec<u8> {
        each!(self, EcPublicKey, k => k.as_affine().to_sec1_point(false).as_bytes().to_vec())
    }

    /// The curve of the key.
    pub fn curve(&self) -> Curve {
        match self {
            EcPublicKey::P192(_) => Curve::P192,
            EcPublicKey::P224(_) => Curve::P224,
            EcPublicKey::P256(_) => Curve::P256,
            EcPublicKey::P384(_) => Curve::P384,
            EcPublicKey::P521(_) => Curve::P521,
            EcPublicKey::K256(_) => Curve::K256,
        }
    }
}

/// DER OCTET STRING around a SEC1 point (long-form length from P-521's
/// 133-byte uncompressed points on).
pub fn der_point(sec1: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(sec1.len() + 3);
    out.push(0x04);
    if sec1.len() >= 0x80 {
        out.push(0x81);
    }
    out.push(sec1.len() as u8);
    out.extend_from_slice(sec1);
    out
}

/// The SEC1 point inside a raw or DER `CKA_EC_POINT` for `curve` (§2.3.3).
pub fn parse_point(curve: Curve, v: &[u8]) -> Result<&[u8]> {
    let sizes = [1 + curve.field_len(), 1 + 2 * curve.field_len()];
    let fits = |len: u8, rest: &[u8]| len as usize == rest.len() && sizes.contains(&rest.len());
    match v {
        [0x04, len, rest @ ..] if *len < 0x80 && fits(*len, rest) => Ok(rest),
        [0x04, 0x81, len, rest @ ..] if *len >= 0x80 && fits(*len, rest) => Ok(rest),
        _ if sizes.contains(&v.len()) => Ok(v),
        _ => Err(err(CKR_ATTRIBUTE_VALUE_INVALID)),
    }
}
