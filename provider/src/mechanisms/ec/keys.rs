//! ECDSA and ECDH (mechanisms spec §2.3) on the Weierstrass curves P-192
//! (legacy), P-224, P-256, P-384, P-521 and secp256k1, with the RustCrypto
//! curve crates (with the `aws-lc` feature, P-256 / P-384 / P-521 ECDSA
//! goes through aws-lc).
//!
//! `CKA_EC_PARAMS` is the named-curve OID in DER, or (accepted on input) a
//! DER PrintableString of a curve name such as "prime256v1" or "P-384".
//! `CKA_EC_POINT` is returned as a DER OCTET STRING holding the
//! uncompressed point and accepted raw or DER, compressed or not, on input;
//! the public data of `CKM_ECDH1_DERIVE` likewise. Signatures are r ‖ s,
//! each the size of the field.
//!
//! This file builds, imports, generates and wraps keys.

#[cfg(feature = "aws-lc")]
use super::curves::Curve;
use super::curves::{
    self, EcPrivateKey, EcPublicKey, OID_K256, OID_P192, OID_P224, OID_P256, OID_P384, OID_P521,
    curve_of, der_point, parse_point,
};
use crate::attributes::Attributes;
use crate::error::{Result, err};
use crate::mechanisms::material::{GeneratedPair, KeyMaterial};
use crate::mechanisms::random::os_fill as random_bytes;
use cryptoki_sys::*;
use pkcs8::{DecodePrivateKey, EncodePrivateKey};
#[cfg(feature = "aws-lc")]
use std::sync::Arc;
use zeroize::Zeroizing;

/// Parses a private key (`CKA_EC_PARAMS`, `CKA_VALUE`).
pub fn load_private(params: &[u8], value: &[u8]) -> Result<KeyMaterial> {
    let curve = curve_of(params).map_err(|_| err(CKR_KEY_HANDLE_INVALID))?;
    EcPrivateKey::from_scalar(curve, value)
        .map(private_material)
        .map_err(|_| err(CKR_KEY_HANDLE_INVALID))
}

/// The cached form of a private key (with `aws-lc`: also parsed by aws-lc).
fn private_material(key: EcPrivateKey) -> KeyMaterial {
    #[cfg(feature = "aws-lc")]
    {
        // aws-lc takes P-256, P-384 and P-521 (it tells them by field size,
        // so secp256k1 must not reach it).
        let aws = match key.curve() {
            Curve::P256 | Curve::P384 | Curve::P521 => crate::mechanisms::awslc::EcPrivate::new(
                key.curve().field_len(),
                &key.scalar(),
                &key.public().uncompressed(),
            ),
            _ => None,
        };
        KeyMaterial::EcPrivate(key, aws.map(Box::new))
    }
    #[cfg(not(feature = "aws-lc"))]
    KeyMaterial::EcPrivate(key)
}

/// The cached form of a public key (with `aws-lc`: also parsed by aws-lc).
fn public_material(key: EcPublicKey) -> KeyMaterial {
    #[cfg(feature = "aws-lc")]
    {
        let aws = match key.curve() {
            Curve::P256 | Curve::P384 | Curve::P521 => crate::mechanisms::awslc::EcPublic::new(
                key.curve().field_len(),
                &key.uncompressed(),
            ),
            _ => None,
        };
        KeyMaterial::EcPublic(key, aws.map(Arc::new))
    }
    #[cfg(not(feature = "aws-lc"))]
    KeyMaterial::EcPublic(key)
}

/// Parses a public key (`CKA_EC_PARAMS`, `CKA_EC_POINT`).
pub fn load_public(params: &[u8], point: &[u8]) -> Result<KeyMaterial> {
    let curve = curve_of(params).map_err(|_| err(CKR_KEY_HANDLE_INVALID))?;
    let sec1 = parse_point(curve, point).map_err(|_| err(CKR_KEY_HANDLE_INVALID))?;
    EcPublicKey::from_point(curve, sec1)
        .map(public_material)
        .map_err(|_| err(CKR_KEY_HANDLE_INVALID))
}

/// Checks an imported key; stores `CKA_EC_POINT` as DER of the
/// uncompressed point (computed for private keys).
pub fn complete_import(class: CK_OBJECT_CLASS, attrs: &mut Attributes) -> Result<()> {
    let curve = curve_of(
        attrs
            .bytes(CKA_EC_PARAMS)
            .ok_or(err(CKR_TEMPLATE_INCOMPLETE))?,
    )?;
    let public = if class == CKO_PRIVATE_KEY {
        let key = EcPrivateKey::from_scalar(
            curve,
            attrs.bytes(CKA_VALUE).ok_or(err(CKR_TEMPLATE_INCOMPLETE))?,
        )?;
        key.public()
    } else {
        let point = attrs
            .bytes(CKA_EC_POINT)
            .ok_or(err(CKR_TEMPLATE_INCOMPLETE))?;
        EcPublicKey::from_point(curve, parse_point(curve, point)?)?
    };
    attrs.set_bytes(CKA_EC_POINT, &der_point(&public.uncompressed()));
    Ok(())
}

/// Generates a key pair on the curve of the public template's `CKA_EC_PARAMS`.
pub fn generate(public_template: &Attributes) -> Result<GeneratedPair> {
    let params = public_template
        .bytes(CKA_EC_PARAMS)
        .ok_or(err(CKR_TEMPLATE_INCOMPLETE))?;
    let curve = curve_of(params)?;
    let (scalar, point) = new_key(curve)?;
    let point = der_point(&point);
    let mut public = Attributes::new();
    public.set_bytes(CKA_EC_POINT, &point);
    let mut private = Attributes::new();
    private.set_bytes(CKA_EC_PARAMS, params);
    private.set_bytes(CKA_VALUE, &scalar);
    private.set_bytes(CKA_EC_POINT, &point);
    Ok(GeneratedPair {
        public,
        private,
        key_type: CKK_EC,
    })
}

/// A new private key on `curve` (its fixed-size scalar) and its
/// uncompressed public point. In the default build P-256, P-384 and P-521
/// keys come from aws-lc (its DRBG and fixed-base tables: a P-256 key pair
/// 5.4× faster than through the RustCrypto field arithmetic,
/// docs/benchmarking.md); other curves, and every curve in the pure-Rust
/// build, take a scalar from getrandom(2).
fn new_key(curve: curves::Curve) -> Result<(Zeroizing<Vec<u8>>, Vec<u8>)> {
    #[cfg(feature = "aws-lc")]
    {
        use crate::mechanisms::awslc::{self, EcdhCurve};
        let aws = match curve {
            Curve::P256 => Some(EcdhCurve::P256),
            Curve::P384 => Some(EcdhCurve::P384),
            Curve::P521 => Some(EcdhCurve::P521),
            _ => None,
        };
        if let Some(aws) = aws {
            return awslc::generate(aws);
        }
    }
    // The RustCrypto arithmetic reaches deep (secp256k1: 70 KiB of stack):
    // wiped here, the call itself wiping only the normal depth.
    crate::hygiene::wiping_deep(|| {
        loop {
            let mut scalar = Zeroizing::new(vec![0u8; curve.field_len()]);
            random_bytes(&mut scalar)?;
            // Bits above the order's length (P-521: 7 of 528) are cleared,
            // so a draw is rejected with the same small odds on every curve.
            scalar[0] &= 0xff >> (8 * curve.field_len() - curve.bits());
            // A value outside [1, n) is astronomically rare; draw again.
            if let Ok(key) = EcPrivateKey::from_scalar(curve, &scalar) {
                let point = key.public().uncompressed();
                return Ok((scalar, point));
            }
        }
    })
}

/// PKCS#8 DER of a private key, for `C_WrapKey`.
pub fn to_pkcs8(params: &[u8], value: &[u8]) -> Result<Zeroizing<Vec<u8>>> {
    let key = EcPrivateKey::from_scalar(curve_of(params)?, value)?;
    let der = curves::each!(&key, EcPrivateKey, k => {
        ::ecdsa::elliptic_curve::SecretKey::from(k).to_pkcs8_der()
    })
    .map_err(|_| err(CKR_KEY_NOT_WRAPPABLE))?;
    Ok(Zeroizing::new(der.as_bytes().to_vec()))
}

/// Sets `CKA_EC_PARAMS` and `CKA_VALUE` from PKCS#8 DER.
pub fn from_pkcs8(der: &[u8], attrs: &mut Attributes) -> Result<()> {
    // The AlgorithmIdentifier names the curve: at most one parse succeeds.
    let parse = || {
        macro_rules! try_curves {
            ($($curve:ty => $oid:expr),*) => {$(
                if let Ok(k) = ::ecdsa::elliptic_curve::SecretKey::<$curve>::from_pkcs8_der(der) {
                    return Some(($oid, Zeroizing::new(k.to_bytes().to_vec())));
                }
            )*};
        }
        try_curves!(
            p192::NistP192 => OID_P192,
            p224::NistP224 => OID_P224,
            p256::NistP256 => OID_P256,
            p384::NistP384 => OID_P384,
            p521::NistP521 => OID_P521,
            k256::Secp256k1 => OID_K256
        );
        None
    };
    let (params, value): (&[u8], Zeroizing<Vec<u8>>) =
        parse().ok_or(err(CKR_WRAPPED_KEY_INVALID))?;
    if let Some(given) = attrs.bytes(CKA_EC_PARAMS) {
        if curve_of(given)? != curve_of(params)? {
            return Err(err(CKR_TEMPLATE_INCONSISTENT));
        }
    } else {
        attrs.set_bytes(CKA_EC_PARAMS, params);
    }
    attrs.set_bytes(CKA_VALUE, &value);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::*;
    use super::*;
    use crate::mechanisms::{Mechanism, Param, SignOperation, VerifyOperation};
    use std::sync::Arc;

    fn printable(name: &str) -> Vec<u8> {
        [&[0x13, name.len() as u8], name.as_bytes()].concat()
    }

    /// A new key's public point is its scalar's multiple of the base point
    /// on every curve (the default build makes P-256/384/521 keys in
    /// aws-lc: checked against the RustCrypto crates), its scalar is in
    /// [1, n) and as long as the field, and no two keys are the same.
    #[test]
    fn new_keys_are_consistent_pairs() {
        for c in Curve::ALL {
            let mut seen = Vec::new();
            for _ in 0..4 {
                let (scalar, point) = new_key(c).unwrap();
                assert_eq!(scalar.len(), c.field_len(), "{c:?}");
                let want = EcPrivateKey::from_scalar(c, &scalar).unwrap().public();
                assert_eq!(point, want.uncompressed(), "{c:?}");
                assert!(!seen.contains(&point), "{c:?}");
                seen.push(point);
            }
        }
    }

    #[test]
    fn curve_names() {
        for c in Curve::ALL {
            assert_eq!(curve_of(c.oid()).unwrap(), c);
        }
        for (name, c) in [
            ("prime192v1", Curve::P192),
            ("secp192r1", Curve::P192),
            ("secp224r1", Curve::P224),
            ("prime256v1", Curve::P256),
            ("secp384r1", Curve::P384),
            ("secp521r1", Curve::P521),
            ("P-521", Curve::P521),
            ("secp256k1", Curve::K256),
        ] {
            assert_eq!(curve_of(&printable(name)).unwrap(), c, "{name}");
        }
        for bad in ["secp256k2", "brainpoolP256r1", "prime256v"] {
            assert_eq!(
                curve_of(&printable(bad)).unwrap_err().rv(),
                CKR_CURVE_NOT_SUPPORTED
            );
        }
        // A length byte that disagrees with the string.
        assert!(curve_of(b"\x13\x0asecp521r1").is_err());
        assert!(curve_of(&[0x06, 0x01]).is_err());
        // secp256k1's OID differs from P-256's in its last arc only.
        assert!(curve_of(&[0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x0b]).is_err());
    }

    #[test]
    fn sign_verify_and_ecdh_agree() {
        for c in Curve::ALL {
            let params = c.oid();
            let mut t = Attributes::new();
            t.set_bytes(CKA_EC_PARAMS, params);
            let a = generate(&t).unwrap();
            let b = generate(&t).unwrap();
            let value = a.private.bytes(CKA_VALUE).unwrap();
            assert_eq!(value.len(), c.field_len());
            let ka = Arc::new(load_private(params, value).unwrap());
            let pa = Arc::new(load_public(params, a.public.bytes(CKA_EC_POINT).unwrap()).unwrap());
            for mech in [CKM_ECDSA_SHA1, CKM_ECDSA_SHA256, CKM_ECDSA_SHA512] {
                let mut s = EcdsaSign::new(&Mechanism::plain(mech), ka.clone()).unwrap();
                let mut sig = [0u8; 132];
                let n = s.sign(b"message", &mut sig).unwrap();
                assert_eq!(n, 2 * c.field_len(), "{c:?}");
                assert_eq!(n, s.output_len());
                let mut v = EcdsaVerify::new(&Mechanism::plain(mech), pa.clone()).unwrap();
                v.verify(b"message", &sig[..n]).unwrap();
                assert_eq!(
                    v.verify(b"massage", &sig[..n]).unwrap_err().rv(),
                    CKR_SIGNATURE_INVALID
                );
                // A flipped bit in s.
                sig[n - 1] ^= 1;
                assert_eq!(
                    v.verify(b"message", &sig[..n]).unwrap_err().rv(),
                    CKR_SIGNATURE_INVALID,
                    "{c:?}"
                );
            }
            // ECDH both ways.
            let kb = load_private(params, b.private.bytes(CKA_VALUE).unwrap()).unwrap();
            let derive = |key: &KeyMaterial, peer: &GeneratedPair| {
                let mech = Mechanism {
                    ty: CKM_ECDH1_DERIVE,
                    param: Param::Ecdh1 {
                        kdf: CKD_NULL,
                        shared: &[],
                        public: peer.public.bytes(CKA_EC_POINT).unwrap(),
                    },
                };
                ecdh_derive(&mech, key, None).unwrap()
            };
            let ab = derive(&ka, &b);
            assert_eq!(ab.len(), c.field_len());
            assert_eq!(ab, derive(&kb, &a));
            assert_ne!(ab, derive(&ka, &a));
        }
    }

    #[test]
    fn keys_of_other_curves_do_not_mix() {
        let mut t = Attributes::new();
        t.set_bytes(CKA_EC_PARAMS, OID_K256);
        let k = generate(&t).unwrap();
        // A secp256k1 point is (almost surely) not on P-256.
        assert!(load_public(OID_P256, k.public.bytes(CKA_EC_POINT).unwrap()).is_err());
        let key = load_private(OID_K256, k.private.bytes(CKA_VALUE).unwrap()).unwrap();
        t.set_bytes(CKA_EC_PARAMS, OID_P256);
        let p = generate(&t).unwrap();
        let mech = Mechanism {
            ty: CKM_ECDH1_DERIVE,
            param: Param::Ecdh1 {
                kdf: CKD_NULL,
                shared: &[],
                public: p.public.bytes(CKA_EC_POINT).unwrap(),
            },
        };
        assert_eq!(
            ecdh_derive(&mech, &key, None).unwrap_err().rv(),
            CKR_MECHANISM_PARAM_INVALID
        );
    }

    #[test]
    fn pkcs8_round_trip() {
        for c in Curve::ALL {
            let mut t = Attributes::new();
            t.set_bytes(CKA_EC_PARAMS, c.oid());
            let g = generate(&t).unwrap();
            let der = to_pkcs8(c.oid(), g.private.bytes(CKA_VALUE).unwrap()).unwrap();
            let mut back = Attributes::new();
            from_pkcs8(&der, &mut back).unwrap();
            assert_eq!(back.bytes(CKA_VALUE), g.private.bytes(CKA_VALUE));
            assert_eq!(back.bytes(CKA_EC_PARAMS), Some(c.oid()), "{c:?}");
        }
        let mut back = Attributes::new();
        assert_eq!(
            from_pkcs8(b"junk", &mut back).unwrap_err().rv(),
            CKR_WRAPPED_KEY_INVALID
        );
    }

    #[test]
    fn points_raw_or_der() {
        let mut t = Attributes::new();
        t.set_bytes(CKA_EC_PARAMS, OID_P256);
        let g = generate(&t).unwrap();
        let der = g.public.bytes(CKA_EC_POINT).unwrap();
        assert_eq!(der.len(), 67);
        let raw = parse_point(Curve::P256, der).unwrap();
        assert_eq!(raw.len(), 65);
        assert_eq!(parse_point(Curve::P256, raw).unwrap(), raw);
        assert!(parse_point(Curve::P384, raw).is_err());
        // P-521: 133-byte points take a long-form DER length.
        t.set_bytes(CKA_EC_PARAMS, &printable("secp521r1"));
        let g = generate(&t).unwrap();
        let der = g.public.bytes(CKA_EC_POINT).unwrap();
        assert_eq!(&der[..3], &[0x04, 0x81, 133]);
        let raw = parse_point(Curve::P521, der).unwrap();
        assert_eq!(raw.len(), 133);
        assert_eq!(parse_point(Curve::P521, raw).unwrap(), raw);
        assert_eq!(der_point(raw), der);
        // A short-form length cannot say 133.
        let mut short = vec![0x04, 133];
        short.extend_from_slice(raw);
        assert!(load_public(OID_P521, &short).is_err());
        // Compressed P-521 points (67 bytes) are accepted raw and as DER.
        let EcPublicKey::P521(k) = EcPublicKey::from_point(Curve::P521, raw).unwrap() else {
            panic!()
        };
        use p256::elliptic_curve::sec1::ToSec1Point;
        let compressed = k.as_affine().to_sec1_point(true).as_bytes().to_vec();
        assert_eq!(compressed.len(), 67);
        assert!(load_public(OID_P521, &compressed).is_ok());
        assert!(load_public(OID_P521, &der_point(&compressed)).is_ok());
    }
}
