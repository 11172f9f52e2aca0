//! `CKM_ECDH1_DERIVE` (mechanisms spec §2.3.15) with the X9.63 KDFs of
//! §2.3.13 and the NIST SP 800-56C one-step KDFs (`CKD_SHA*_KDF_SP800`).

use super::curves::{EcPrivateKey, EcPublicKey, parse_point};
use crate::error::{Result, err};
use crate::mechanisms::kdf::x963::shared_secret;
use crate::mechanisms::material::KeyMaterial;
use crate::mechanisms::params::{Mechanism, ecdh1_params};
use cryptoki_sys::*;
use p256::elliptic_curve::ecdh::diffie_hellman;
use zeroize::Zeroizing;

/// The x-coordinate of `private` × `peer` (field-size bytes), the curves
/// being the same.
fn shared_x(private: &EcPrivateKey, peer: &EcPublicKey) -> Result<Zeroizing<Vec<u8>>> {
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
/// or that value through an X9.63 KDF. `len` (from `CKA_VALUE_LEN` or the
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
    let point = parse_point(curve, public).map_err(|_| err(CKR_MECHANISM_PARAM_INVALID))?;
    let peer =
        EcPublicKey::from_point(curve, point).map_err(|_| err(CKR_MECHANISM_PARAM_INVALID))?;
    let z = shared_x(private, &peer)?;
    shared_secret(kdf, &z, shared, len)
}
