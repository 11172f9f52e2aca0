//! Reading `CK_MECHANISM` and its parameter structures (§5.2 `CK_MECHANISM`;
//! mechanisms spec for each parameter struct).

use super::util::bytes;
use crate::error::{Result, err};
use crate::mechanisms::{self, Mechanism, Param, ParamKind};
use cryptoki_sys::*;

/// Reads the caller's mechanism. Unknown mechanisms are
/// `CKR_MECHANISM_INVALID`; malformed parameters `CKR_MECHANISM_PARAM_INVALID`.
///
/// # Safety
/// `ptr` null or a valid `CK_MECHANISM` whose parameter is valid for its length.
pub unsafe fn read<'a>(ptr: *const CK_MECHANISM) -> Result<Mechanism<'a>> {
    // SAFETY: caller guarantees validity when non-null.
    let m = unsafe { ptr.as_ref() }.ok_or(err(CKR_ARGUMENTS_BAD))?;
    let descriptor = mechanisms::lookup(m.mechanism)?;
    let absent = m.pParameter.is_null() || m.ulParameterLen == 0;
    let invalid = |_| err(CKR_MECHANISM_PARAM_INVALID);
    let param = match descriptor.param {
        ParamKind::None | ParamKind::EdDsa | ParamKind::OptionalBytes | ParamKind::Pss
            if absent =>
        {
            Param::None
        }
        ParamKind::None => return Err(err(CKR_MECHANISM_PARAM_INVALID)),
        ParamKind::EdDsa => {
            // SAFETY: length checked by param_struct; caller guarantees validity.
            let p: &CK_EDDSA_PARAMS = unsafe { param_struct(m)? };
            let context = if p.ulContextDataLen == 0 {
                None
            } else {
                // SAFETY: caller guarantees pContextData holds ulContextDataLen bytes.
                Some(unsafe { bytes(p.pContextData, p.ulContextDataLen) }.map_err(invalid)?)
            };
            Param::EdDsa {
                prehash: p.phFlag != 0,
                context,
            }
        }
        ParamKind::Bytes | ParamKind::OptionalBytes => {
            // SAFETY: caller guarantees pParameter holds ulParameterLen bytes.
            Param::Bytes(
                unsafe { bytes(m.pParameter as *const u8, m.ulParameterLen) }.map_err(invalid)?,
            )
        }
        ParamKind::Gcm => {
            // SAFETY: as above.
            let p: &CK_GCM_PARAMS = unsafe { param_struct(m)? };
            // SAFETY: caller guarantees pIv / pAAD hold their lengths.
            let (iv, aad) = unsafe {
                (
                    bytes(p.pIv, p.ulIvLen).map_err(invalid)?,
                    bytes(p.pAAD, p.ulAADLen).map_err(invalid)?,
                )
            };
            Param::Gcm {
                iv,
                aad,
                tag_bits: p.ulTagBits,
            }
        }
        ParamKind::Ctr => {
            // SAFETY: as above.
            let p: &CK_AES_CTR_PARAMS = unsafe { param_struct(m)? };
            Param::Ctr {
                counter_bits: p.ulCounterBits,
                block: p.cb,
            }
        }
        ParamKind::Oaep => {
            // SAFETY: as above.
            let p: &CK_RSA_PKCS_OAEP_PARAMS = unsafe { param_struct(m)? };
            let label = match p.source {
                // SAFETY: caller guarantees pSourceData holds ulSourceDataLen bytes.
                CKZ_DATA_SPECIFIED => {
                    unsafe { bytes(p.pSourceData as *const u8, p.ulSourceDataLen) }
                        .map_err(invalid)?
                }
                0 if p.ulSourceDataLen == 0 => &[],
                _ => return Err(err(CKR_MECHANISM_PARAM_INVALID)),
            };
            Param::Oaep {
                hash: p.hashAlg,
                mgf: p.mgf,
                label,
            }
        }
        ParamKind::Pss => {
            // SAFETY: as above.
            let p: &CK_RSA_PKCS_PSS_PARAMS = unsafe { param_struct(m)? };
            Param::Pss {
                hash: p.hashAlg,
                mgf: p.mgf,
                salt_len: p.sLen,
            }
        }
        ParamKind::Ecdh1 => {
            // SAFETY: as above.
            let p: &CK_ECDH1_DERIVE_PARAMS = unsafe { param_struct(m)? };
            // SAFETY: caller guarantees the shared and public data lengths.
            let (shared, public) = unsafe {
                (
                    bytes(p.pSharedData, p.ulSharedDataLen).map_err(invalid)?,
                    bytes(p.pPublicData, p.ulPublicDataLen).map_err(invalid)?,
                )
            };
            Param::Ecdh1 {
                kdf: p.kdf,
                shared,
                public,
            }
        }
        ParamKind::Hkdf => {
            use crate::mechanisms::kdf::hkdf::{Params, Salt};
            // SAFETY: as above.
            let p: &CK_HKDF_PARAMS = unsafe { param_struct(m)? };
            let salt = match p.ulSaltType {
                CKF_HKDF_SALT_NULL => Salt::Null,
                // SAFETY: caller guarantees pSalt holds ulSaltLen bytes.
                CKF_HKDF_SALT_DATA => {
                    Salt::Data(unsafe { bytes(p.pSalt, p.ulSaltLen) }.map_err(invalid)?)
                }
                CKF_HKDF_SALT_KEY => Salt::Key(p.hSaltKey),
                _ => return Err(err(CKR_MECHANISM_PARAM_INVALID)),
            };
            Param::Hkdf(Params {
                extract: p.bExtract != 0,
                expand: p.bExpand != 0,
                prf: p.prfHashMechanism,
                salt,
                // SAFETY: caller guarantees pInfo holds ulInfoLen bytes.
                info: unsafe { bytes(p.pInfo, p.ulInfoLen) }.map_err(invalid)?,
            })
        }
        ParamKind::Handle => {
            // SAFETY: as above.
            let p: &CK_OBJECT_HANDLE = unsafe { param_struct(m)? };
            Param::Handle(*p)
        }
        ParamKind::DerivationString => {
            // SAFETY: as above.
            let p: &CK_KEY_DERIVATION_STRING_DATA = unsafe { param_struct(m)? };
            // Bounded: no derived value may exceed the longest secret key.
            if p.ulLen as u128 > crate::mechanisms::MAX_SECRET_LEN as u128 {
                return Err(err(CKR_MECHANISM_PARAM_INVALID));
            }
            // SAFETY: caller guarantees pData holds ulLen bytes.
            Param::Bytes(unsafe { bytes(p.pData, p.ulLen) }.map_err(invalid)?)
        }
        ParamKind::BitIndex => {
            // SAFETY: as above.
            let p: &CK_EXTRACT_PARAMS = unsafe { param_struct(m)? };
            Param::BitIndex(*p)
        }
        ParamKind::AesCbcData => {
            // SAFETY: as above.
            let p: &CK_AES_CBC_ENCRYPT_DATA_PARAMS = unsafe { param_struct(m)? };
            if p.length as u128 > crate::mechanisms::MAX_SECRET_LEN as u128 {
                return Err(err(CKR_MECHANISM_PARAM_INVALID));
            }
            Param::AesCbcData {
                iv: p.iv,
                // SAFETY: caller guarantees pData holds length bytes.
                data: unsafe { bytes(p.pData, p.length) }.map_err(invalid)?,
            }
        }
        ParamKind::MacLength => {
            // SAFETY: as above.
            let p: &CK_ULONG = unsafe { param_struct(m)? };
            Param::MacLength(*p)
        }
    };
    Ok(Mechanism {
        ty: m.mechanism,
        param,
    })
}

/// The parameter as a `T`, if its length is exactly `size_of::<T>()`.
///
/// # Safety
/// `m.pParameter` must be valid for `m.ulParameterLen` bytes.
unsafe fn param_struct<'a, T>(m: &CK_MECHANISM) -> Result<&'a T> {
    if m.ulParameterLen as usize != std::mem::size_of::<T>() || m.pParameter.is_null() {
        return Err(err(CKR_MECHANISM_PARAM_INVALID));
    }
    if !(m.pParameter as usize).is_multiple_of(std::mem::align_of::<T>()) {
        return Err(err(CKR_MECHANISM_PARAM_INVALID));
    }
    // SAFETY: non-null, aligned, and exactly one `T` long per the caller.
    Ok(unsafe { &*(m.pParameter as *const T) })
}
