//! `CKM_ECDH1_DERIVE` (mechanisms spec §2.3.15) with the X9.63 KDFs of
//! §2.3.13 and the NIST SP 800-56C one-step KDFs (`CKD_SHA*_KDF_SP800`).

use super::curves::{EcPrivateKey, EcPublicKey, parse_point};
use crate::error::{Result, err};
use crate::mechanisms::digest::DigestOp;
use crate::mechanisms::keys::KeyMaterial;
use crate::mechanisms::{DigestOperation, MAX_SECRET_LEN, Mechanism, Param};
use cryptoki_sys::*;
use p256::elliptic_curve::ecdh::diffie_hellman;
use zeroize::Zeroizing;

/// The hash-based KDFs of `CK_ECDH1_DERIVE_PARAMS.kdf` (§2.3.13): ANSI
/// X9.63 (`CKD_SHA*_KDF`: H(Z ‖ counter ‖ SharedInfo)) and the SP 800-56C
/// one-step KDF (`CKD_SHA*_KDF_SP800`: H(counter ‖ Z ‖ FixedInfo)), the
/// 32-bit big-endian counter starting at 1.
pub(in crate::mechanisms) fn x963_kdf(
    kdf: CK_EC_KDF_TYPE,
    z: &[u8],
    shared: &[u8],
    len: usize,
) -> Result<Zeroizing<Vec<u8>>> {
    let (mech, counter_first) = match kdf {
        CKD_SHA1_KDF => (CKM_SHA_1, false),
        CKD_SHA224_KDF => (CKM_SHA224, false),
        CKD_SHA256_KDF => (CKM_SHA256, false),
        CKD_SHA384_KDF => (CKM_SHA384, false),
        CKD_SHA512_KDF => (CKM_SHA512, false),
        CKD_SHA1_KDF_SP800 => (CKM_SHA_1, true),
        CKD_SHA224_KDF_SP800 => (CKM_SHA224, true),
        CKD_SHA256_KDF_SP800 => (CKM_SHA256, true),
        CKD_SHA384_KDF_SP800 => (CKM_SHA384, true),
        CKD_SHA512_KDF_SP800 => (CKM_SHA512, true),
        _ => return Err(err(CKR_MECHANISM_PARAM_INVALID)),
    };
    if len > MAX_SECRET_LEN {
        return Err(err(CKR_ATTRIBUTE_VALUE_INVALID));
    }
    let mut out = Zeroizing::new(Vec::with_capacity(len + 64));
    let mut counter: u32 = 1;
    while out.len() < len {
        let mut h = DigestOp::new(mech)?;
        if counter_first {
            h.update(&counter.to_be_bytes());
            h.update(z);
        } else {
            h.update(z);
            h.update(&counter.to_be_bytes());
        }
        h.update(shared);
        let mut block = [0u8; 64];
        let n = h.finish(&mut block);
        out.extend_from_slice(&block[..n]);
        counter += 1;
    }
    out.truncate(len);
    Ok(out)
}

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
    let Param::Ecdh1 {
        kdf,
        shared,
        public,
    } = mech.param
    else {
        return Err(err(CKR_MECHANISM_PARAM_INVALID));
    };
    let KeyMaterial::EcPrivate(private, ..) = base else {
        return Err(err(CKR_KEY_TYPE_INCONSISTENT));
    };
    let curve = private.curve();
    let point = parse_point(curve, public).map_err(|_| err(CKR_MECHANISM_PARAM_INVALID))?;
    let peer =
        EcPublicKey::from_point(curve, point).map_err(|_| err(CKR_MECHANISM_PARAM_INVALID))?;
    let z = shared_x(private, &peer)?;
    match kdf {
        CKD_NULL => {
            if !shared.is_empty() {
                return Err(err(CKR_MECHANISM_PARAM_INVALID));
            }
            let len = len.unwrap_or(z.len());
            if len > z.len() {
                return Err(err(CKR_TEMPLATE_INCONSISTENT));
            }
            // Leftmost bytes, as SoftHSM and OpenSC expect for CKD_NULL.
            Ok(Zeroizing::new(z[..len].to_vec()))
        }
        other => x963_kdf(other, &z, shared, len.unwrap_or(z.len())),
    }
}
