//! The key derivation that follows an ECDH agreement (`CKM_ECDH1_DERIVE`,
//! mechanisms spec §2.3.15, on the Weierstrass curves and on X25519): the
//! shared value `Z` as is (`CKD_NULL`) or through one of the hash-based
//! KDFs of `CK_ECDH1_DERIVE_PARAMS.kdf` (§2.3.13).

use crate::error::{Result, err};
use crate::mechanisms::digest::DigestOp;
use crate::mechanisms::material::MAX_SECRET_LEN;
use crate::mechanisms::operation::DigestOperation;
use cryptoki_sys::*;
use zeroize::Zeroizing;

/// The derived secret of an ECDH agreement with shared value `z`:
/// `CKD_NULL` gives the leftmost `len` bytes of `z` (all of it when `len`
/// is `None`; `CKR_TEMPLATE_INCONSISTENT` beyond its length, and no
/// `SharedInfo` allowed), any other `kdf` [`x963_kdf`] of `len` bytes
/// (default: the length of `z`).
pub fn shared_secret(
    kdf: CK_EC_KDF_TYPE,
    z: &[u8],
    shared: &[u8],
    len: Option<usize>,
) -> Result<Zeroizing<Vec<u8>>> {
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
        other => x963_kdf(other, z, shared, len.unwrap_or(z.len())),
    }
}

/// The hash-based KDFs of `CK_ECDH1_DERIVE_PARAMS.kdf` (§2.3.13): ANSI
/// X9.63 (`CKD_SHA*_KDF`: H(Z ‖ counter ‖ SharedInfo)) and the SP 800-56C
/// one-step KDF (`CKD_SHA*_KDF_SP800`: H(counter ‖ Z ‖ FixedInfo)), the
/// 32-bit big-endian counter starting at 1.
pub fn x963_kdf(
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
