//! `CKM_ECDH1_DERIVE` and `CKM_ECDH1_COFACTOR_DERIVE` (mechanisms spec
//! §2.3.15–2.3.16) with the X9.63 KDFs of §2.3.13 and the NIST SP 800-56C
//! one-step KDFs (`CKD_SHA*_KDF_SP800`).

use super::curves::{EcPrivateKey, EcPublicKey, parse_point};
use crate::error::{Result, err};
use crate::mechanisms::kdf::x963::shared_secret;
use crate::mechanisms::material::KeyMaterial;
use crate::mechanisms::params::{Mechanism, ecdh1_params};
use cryptoki_sys::*;
use p256::elliptic_curve::ecdh::diffie_hellman;
use zeroize::Zeroizing;

/// The x-coordinate of `base` × `peer` (field-size bytes), the curves
/// being the same: in the default build through aws-lc for P-256, P-384
/// and P-521, with the key aws-lc parsed on the first derive kept in the
/// key material (docs/configuration.md), else pure Rust.
fn shared_x(base: &KeyMaterial, peer: &EcPublicKey) -> Result<Zeroizing<Vec<u8>>> {
    #[cfg(feature = "aws-lc")]
    if let KeyMaterial::EcPrivate(private, Some(aws)) = base
        && private.curve() == peer.curve()
    {
        return aws
            .agreement
            .agree(|| private.scalar(), &peer.uncompressed());
    }
    let KeyMaterial::EcPrivate(private, ..) = base else {
        return Err(err(CKR_KEY_TYPE_INCONSISTENT));
    };
    shared_x_rust(private, peer)
}

/// [`shared_x`] through the RustCrypto curve crates.
fn shared_x_rust(private: &EcPrivateKey, peer: &EcPublicKey) -> Result<Zeroizing<Vec<u8>>> {
    macro_rules! dh {
        ($k:expr, $p:expr) => {
            Zeroizing::new(
                diffie_hellman($k.as_nonzero_scalar(), $p.as_affine())
                    .raw_secret_bytes()
                    .to_vec(),
            )
        };
    }
    Ok(match (private, peer) {
        (EcPrivateKey::P192(k), EcPublicKey::P192(p)) => dh!(k, p),
        (EcPrivateKey::P224(k), EcPublicKey::P224(p)) => dh!(k, p),
        (EcPrivateKey::P256(k), EcPublicKey::P256(p)) => dh!(k, p),
        (EcPrivateKey::P384(k), EcPublicKey::P384(p)) => dh!(k, p),
        (EcPrivateKey::P521(k), EcPublicKey::P521(p)) => dh!(k, p),
        (EcPrivateKey::K256(k), EcPublicKey::K256(p)) => dh!(k, p),
        _ => return Err(err(CKR_MECHANISM_PARAM_INVALID)),
    })
}

/// `CKM_ECDH1_DERIVE`: the x-coordinate of the shared point (`CKD_NULL`),
/// or that value through an X9.63 KDF. `CKM_ECDH1_COFACTOR_DERIVE`: the
/// same with the point multiplied by the curve's cofactor h first
/// (SP 800-56A §5.7.1.2, the point h·d·Q); every curve of the token has
/// h = 1, so the point is the same (a curve with another cofactor would be
/// refused, `CKR_CURVE_NOT_SUPPORTED`, not computed wrongly). `len` (from `CKA_VALUE_LEN` or the
/// key type) truncates the result; with `CKD_NULL` it may not exceed the
/// field size.
pub fn ecdh_derive(
    mech: &Mechanism<'_>,
    base: &KeyMaterial,
    len: Option<usize>,
) -> Result<Zeroizing<Vec<u8>>> {
    let (kdf, shared, public) = ecdh1_params(mech)?;
    let KeyMaterial::EcPrivate(private, ..) = base else {
        return Err(err(CKR_KEY_TYPE_INCONSISTENT));
    };
    let curve = private.curve();
    if mech.ty == CKM_ECDH1_COFACTOR_DERIVE && curve.cofactor() != 1 {
        return Err(err(CKR_CURVE_NOT_SUPPORTED));
    }
    let point = parse_point(curve, public).map_err(|_| err(CKR_MECHANISM_PARAM_INVALID))?;
    // An uncompressed point goes to aws-lc as it came: aws-lc checks that
    // it lies on the curve (the check `from_point` makes), so the point is
    // not decoded and checked twice.
    #[cfg(feature = "aws-lc")]
    if let KeyMaterial::EcPrivate(private, Some(aws)) = base
        && point.len() == 1 + 2 * curve.field_len()
        && point[0] == 0x04
    {
        let z = aws.agreement.agree(|| private.scalar(), point)?;
        return shared_secret(kdf, &z, shared, len);
    }
    let peer =
        EcPublicKey::from_point(curve, point).map_err(|_| err(CKR_MECHANISM_PARAM_INVALID))?;
    let z = shared_x(base, &peer)?;
    shared_secret(kdf, &z, shared, len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mechanisms::ec::curves::Curve;

    /// The short-Weierstrass curves ECDH takes.
    const WEIERSTRASS: [Curve; 5] = [
        Curve::P256,
        Curve::P384,
        Curve::P521,
        Curve::K256,
        Curve::P224,
    ];

    /// A random key on `curve` (top byte cleared: below every order), as
    /// key material and as the bare key.
    fn key(curve: Curve) -> (KeyMaterial, EcPrivateKey) {
        let mut v = Zeroizing::new(vec![0u8; curve.field_len()]);
        crate::mechanisms::random::os_fill(&mut v[..]).unwrap();
        v[0] = 0;
        let material = crate::mechanisms::ec::keys::load_private(curve.oid(), &v).unwrap();
        (material, EcPrivateKey::from_scalar(curve, &v).unwrap())
    }

    /// Both parties get the same x-coordinate, and the default build's
    /// aws-lc path gives what the pure-Rust path gives, on every curve, on
    /// the first derive with a key and on the next ones.
    #[test]
    fn every_path_agrees_on_the_shared_secret() {
        for curve in WEIERSTRASS {
            for _ in 0..4 {
                let ((ma, a), (mb, b)) = (key(curve), key(curve));
                let (pa, pb) = (a.public(), b.public());
                for _ in 0..2 {
                    let ab = shared_x(&ma, &pb).unwrap();
                    let ba = shared_x(&mb, &pa).unwrap();
                    assert_eq!(*ab, *ba, "{curve:?}");
                    assert_eq!(*ab, *shared_x_rust(&a, &pb).unwrap(), "{curve:?}");
                    assert_eq!(ab.len(), curve.field_len());
                }
            }
        }
    }

    /// A derive from a peer point that is not on the curve fails with
    /// `CKR_MECHANISM_PARAM_INVALID` on every curve and path (the default
    /// build hands an uncompressed point to aws-lc undecoded), and the
    /// point raw, DER-wrapped or compressed gives the same secret.
    #[test]
    fn peer_points_are_checked_in_every_form() {
        use super::super::curves::der_point;
        for curve in WEIERSTRASS {
            let ((ma, _), (_, b)) = (key(curve), key(curve));
            let point = b.public().uncompressed();
            let n = curve.field_len();
            let mut compressed = vec![0x02 | (point[2 * n] & 1)];
            compressed.extend_from_slice(&point[1..=n]);
            let derive = |public: &[u8]| {
                let mech = Mechanism {
                    ty: CKM_ECDH1_DERIVE,
                    param: crate::mechanisms::params::Param::Ecdh1 {
                        kdf: CKD_NULL,
                        shared: &[],
                        public,
                    },
                };
                ecdh_derive(&mech, &ma, None).map(|z| z.to_vec())
            };
            let z = derive(&point).unwrap();
            assert_eq!(derive(&der_point(&point)).unwrap(), z, "{curve:?}");
            assert_eq!(derive(&compressed).unwrap(), z, "{curve:?}");
            let mut off = point.clone();
            off[2 * n] ^= 1;
            for bad in [off.clone(), der_point(&off), vec![0u8; 1 + 2 * n]] {
                assert_eq!(
                    derive(&bad).unwrap_err().rv(),
                    CKR_MECHANISM_PARAM_INVALID,
                    "{curve:?}"
                );
            }
        }
    }
}
