//! Reading the TLS 1.2 derivation parameters that carry outputs
//! (mechanisms spec 3.0 §2.42 "TLS 1.2 mechanisms":
//! `CK_TLS12_MASTER_KEY_DERIVE_PARAMS.pVersion`,
//! `CK_TLS12_EXTENDED_MASTER_KEY_DERIVE_PARAMS.pVersion`,
//! `CK_TLS12_KEY_MAT_PARAMS.pReturnedKeyMaterial`): the inputs are copied
//! into owned values, bounded first; the output pointers are kept and
//! written by `ffi/keys.rs` only after the keys exist.

use super::mechanism::param_struct;
use super::util::bytes;
use crate::error::{Result, err};
use crate::mechanisms::kdf::tls::{
    KeyMatParams, MAX_KEY_MAT_PART, MasterParams, RANDOM_LEN, is_prf_hash,
};
use cryptoki_sys::*;

/// A TLS 1.2 derivation read from the caller's memory.
pub enum TlsDerive {
    /// Master secret: the parameters and where the version goes.
    Master {
        /// `mechanism`.
        ty: CK_MECHANISM_TYPE,
        /// The copied inputs.
        params: MasterParams,
        /// `pVersion` (null when not asked for).
        version: *mut CK_VERSION,
    },
    /// Key block: the parameters and the caller's `CK_SSL3_KEY_MAT_OUT`.
    KeyMat {
        /// `mechanism`.
        ty: CK_MECHANISM_TYPE,
        /// The copied inputs.
        params: KeyMatParams,
        /// `pReturnedKeyMaterial` (non-null).
        out: *mut CK_SSL3_KEY_MAT_OUT,
    },
}

/// True if `ptr` names a TLS 1.2 derivation read by [`read_derive`].
///
/// # Safety
/// `ptr` null or a valid `CK_MECHANISM`.
pub unsafe fn is_tls_derive(ptr: *const CK_MECHANISM) -> bool {
    // SAFETY: caller guarantees validity when non-null.
    unsafe { ptr.as_ref() }.is_some_and(|m| {
        matches!(
            m.mechanism,
            CKM_TLS12_MASTER_KEY_DERIVE
                | CKM_TLS12_MASTER_KEY_DERIVE_DH
                | CKM_TLS12_EXTENDED_MASTER_KEY_DERIVE
                | CKM_TLS12_EXTENDED_MASTER_KEY_DERIVE_DH
                | CKM_TLS12_KEY_AND_MAC_DERIVE
                | CKM_TLS12_KEY_SAFE_DERIVE
        )
    })
}

/// One Hello random: exactly 32 bytes, else `CKR_MECHANISM_PARAM_INVALID`.
///
/// # Safety
/// `ptr` valid for `len` bytes.
unsafe fn random(ptr: *const u8, len: CK_ULONG) -> Result<[u8; RANDOM_LEN]> {
    if ptr.is_null() || len as u128 != RANDOM_LEN as u128 {
        return Err(err(CKR_MECHANISM_PARAM_INVALID));
    }
    // SAFETY: forwarded caller guarantee.
    let b = unsafe { bytes(ptr, len) }.map_err(|_| err(CKR_MECHANISM_PARAM_INVALID))?;
    b.try_into().map_err(|_| err(CKR_MECHANISM_PARAM_INVALID))
}

/// Both randoms of a `CK_SSL3_RANDOM_DATA`.
///
/// # Safety
/// As [`random`] for each.
unsafe fn randoms(r: &CK_SSL3_RANDOM_DATA) -> Result<([u8; RANDOM_LEN], [u8; RANDOM_LEN])> {
    // SAFETY: forwarded caller guarantee.
    unsafe {
        Ok((
            random(r.pClientRandom, r.ulClientRandomLen)?,
            random(r.pServerRandom, r.ulServerRandomLen)?,
        ))
    }
}

/// A byte count of `CK_TLS12_KEY_MAT_PARAMS`: whole bytes, at most
/// [`MAX_KEY_MAT_PART`].
fn bits_to_bytes(bits: CK_ULONG) -> Result<usize> {
    if !bits.is_multiple_of(8) || bits as u128 > (MAX_KEY_MAT_PART * 8) as u128 {
        return Err(err(CKR_MECHANISM_PARAM_INVALID));
    }
    Ok((bits / 8) as usize)
}

/// Reads the parameter of a TLS 1.2 derivation ([`is_tls_derive`]).
/// Anything malformed is `CKR_MECHANISM_PARAM_INVALID`: a PRF hash this
/// token lacks, randoms not 32 bytes, a session hash empty or longer than
/// 64 bytes, a `pVersion` for the `_DH` variants (the version is not in a
/// DH pre-master), sizes not whole bytes, `bIsExport`, a missing output.
///
/// # Safety
/// `ptr` a valid `CK_MECHANISM` whose parameter, and every buffer it
/// points to, is valid for its length.
pub unsafe fn read_derive(ptr: *const CK_MECHANISM) -> Result<TlsDerive> {
    // SAFETY: caller guarantees validity when non-null.
    let m = unsafe { ptr.as_ref() }.ok_or(err(CKR_ARGUMENTS_BAD))?;
    let dh = matches!(
        m.mechanism,
        CKM_TLS12_MASTER_KEY_DERIVE_DH | CKM_TLS12_EXTENDED_MASTER_KEY_DERIVE_DH
    );
    let checked_prf = |prf| {
        if is_prf_hash(prf) {
            Ok(prf)
        } else {
            Err(err(CKR_MECHANISM_PARAM_INVALID))
        }
    };
    match m.mechanism {
        CKM_TLS12_MASTER_KEY_DERIVE | CKM_TLS12_MASTER_KEY_DERIVE_DH => {
            // SAFETY: length checked by param_struct; caller guarantees validity.
            let p: &CK_TLS12_MASTER_KEY_DERIVE_PARAMS = unsafe { param_struct(m)? };
            if dh && !p.pVersion.is_null() {
                return Err(err(CKR_MECHANISM_PARAM_INVALID));
            }
            Ok(TlsDerive::Master {
                ty: m.mechanism,
                params: MasterParams {
                    prf: checked_prf(p.prfHashMechanism)?,
                    // SAFETY: caller guarantees the randoms hold their lengths.
                    randoms: Some(unsafe { randoms(&p.RandomInfo)? }),
                    session_hash: None,
                    version: !p.pVersion.is_null(),
                },
                version: p.pVersion,
            })
        }
        CKM_TLS12_EXTENDED_MASTER_KEY_DERIVE | CKM_TLS12_EXTENDED_MASTER_KEY_DERIVE_DH => {
            // SAFETY: as above.
            let p: &CK_TLS12_EXTENDED_MASTER_KEY_DERIVE_PARAMS = unsafe { param_struct(m)? };
            if (dh && !p.pVersion.is_null())
                || p.pSessionHash.is_null()
                || p.ulSessionHashLen == 0
                || p.ulSessionHashLen > 64
            {
                return Err(err(CKR_MECHANISM_PARAM_INVALID));
            }
            // SAFETY: caller guarantees pSessionHash holds ulSessionHashLen bytes.
            let hash = unsafe { bytes(p.pSessionHash, p.ulSessionHashLen) }
                .map_err(|_| err(CKR_MECHANISM_PARAM_INVALID))?;
            Ok(TlsDerive::Master {
                ty: m.mechanism,
                params: MasterParams {
                    prf: checked_prf(p.prfHashMechanism)?,
                    randoms: None,
                    session_hash: Some(hash.to_vec()),
                    version: !p.pVersion.is_null(),
                },
                version: p.pVersion,
            })
        }
        CKM_TLS12_KEY_AND_MAC_DERIVE | CKM_TLS12_KEY_SAFE_DERIVE => {
            // SAFETY: as above.
            let p: &CK_TLS12_KEY_MAT_PARAMS = unsafe { param_struct(m)? };
            let out = p.pReturnedKeyMaterial;
            if p.bIsExport != 0
                || out.is_null()
                || !(out as usize).is_multiple_of(std::mem::align_of::<CK_SSL3_KEY_MAT_OUT>())
            {
                return Err(err(CKR_MECHANISM_PARAM_INVALID));
            }
            // KEY_SAFE never returns IVs: ulIVSizeInBits is ignored.
            let iv_len = if m.mechanism == CKM_TLS12_KEY_SAFE_DERIVE {
                0
            } else {
                bits_to_bytes(p.ulIVSizeInBits)?
            };
            if iv_len > 0 {
                // SAFETY: non-null and aligned (checked); the caller
                // guarantees it valid.
                let o = unsafe { &*out };
                if o.pIVClient.is_null() || o.pIVServer.is_null() {
                    return Err(err(CKR_MECHANISM_PARAM_INVALID));
                }
            }
            // SAFETY: caller guarantees the randoms hold their lengths.
            let (client, server) = unsafe { randoms(&p.RandomInfo)? };
            Ok(TlsDerive::KeyMat {
                ty: m.mechanism,
                params: KeyMatParams {
                    prf: checked_prf(p.prfHashMechanism)?,
                    mac_len: bits_to_bytes(p.ulMacSizeInBits)?,
                    key_len: bits_to_bytes(p.ulKeySizeInBits)?,
                    iv_len,
                    client,
                    server,
                },
                out,
            })
        }
        _ => Err(err(CKR_MECHANISM_INVALID)),
    }
}
