//! Reading `CK_MECHANISM` and its parameter structures (§5.2 `CK_MECHANISM`;
//! mechanisms spec for each parameter struct).

use super::util::{bytes, template};
use crate::attributes::Attr;
use crate::error::{Result, err};
use crate::mechanisms::{self, Mechanism, OtpParams, Param, ParamKind};
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
        ParamKind::None
        | ParamKind::EdDsa
        | ParamKind::OptionalBytes
        | ParamKind::Pss
        | ParamKind::SignContext
        | ParamKind::Otp
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
        ParamKind::SignContext => {
            // SAFETY: length checked by param_struct; caller guarantees validity.
            let p: &CK_SIGN_ADDITIONAL_CONTEXT = unsafe { param_struct(m)? };
            // FIPS 204 §5.2: at most 255 bytes (checked before reading).
            if p.ulContextLen > 255 {
                return Err(err(CKR_MECHANISM_PARAM_INVALID));
            }
            Param::SignContext {
                hedge: p.hedgeVariant,
                // SAFETY: caller guarantees pContext holds ulContextLen bytes.
                context: unsafe { bytes(p.pContext, p.ulContextLen) }.map_err(invalid)?,
            }
        }
        ParamKind::HashSignContext => {
            // SAFETY: as above (absent: param_struct refuses a null pointer).
            let p: &CK_HASH_SIGN_ADDITIONAL_CONTEXT = unsafe { param_struct(m)? };
            // FIPS 204 §5.2: at most 255 bytes (checked before reading).
            if p.ulContextLen > 255 {
                return Err(err(CKR_MECHANISM_PARAM_INVALID));
            }
            Param::HashSignContext {
                hedge: p.hedgeVariant,
                // SAFETY: caller guarantees pContext holds ulContextLen bytes.
                context: unsafe { bytes(p.pContext, p.ulContextLen) }.map_err(invalid)?,
                hash: p.hash,
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
        ParamKind::Ccm => {
            // SAFETY: as above.
            let p: &CK_CCM_PARAMS = unsafe { param_struct(m)? };
            // SAFETY: caller guarantees pNonce / pAAD hold their lengths.
            let (nonce, aad) = unsafe {
                (
                    bytes(p.pNonce, p.ulNonceLen).map_err(invalid)?,
                    bytes(p.pAAD, p.ulAADLen).map_err(invalid)?,
                )
            };
            Param::Ccm {
                data_len: p.ulDataLen,
                nonce,
                aad,
                mac_len: p.ulMACLen,
            }
        }
        ParamKind::ChaCha20 => {
            // SAFETY: as above.
            let p: &CK_CHACHA20_PARAMS = unsafe { param_struct(m)? };
            // Only 32 or 64 bits each (checked before reading).
            if !matches!(p.blockCounterBits, 32 | 64) || !matches!(p.ulNonceBits, 64 | 96) {
                return Err(err(CKR_MECHANISM_PARAM_INVALID));
            }
            // SAFETY: caller guarantees pBlockCounter / pNonce hold their bit lengths.
            let (counter, nonce) = unsafe {
                (
                    bytes(p.pBlockCounter, p.blockCounterBits / 8).map_err(invalid)?,
                    bytes(p.pNonce, p.ulNonceBits / 8).map_err(invalid)?,
                )
            };
            Param::ChaCha20 {
                counter,
                counter_bits: p.blockCounterBits,
                nonce,
                nonce_bits: p.ulNonceBits,
            }
        }
        ParamKind::ChaChaPoly => {
            // SAFETY: as above.
            let p: &CK_SALSA20_CHACHA20_POLY1305_PARAMS = unsafe { param_struct(m)? };
            // SAFETY: caller guarantees pNonce / pAAD hold their lengths.
            let (nonce, aad) = unsafe {
                (
                    bytes(p.pNonce, p.ulNonceLen).map_err(invalid)?,
                    bytes(p.pAAD, p.ulAADLen).map_err(invalid)?,
                )
            };
            Param::ChaChaPoly { nonce, aad }
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
        ParamKind::DesCbcData => {
            // SAFETY: as above.
            let p: &CK_DES_CBC_ENCRYPT_DATA_PARAMS = unsafe { param_struct(m)? };
            if p.length as u128 > crate::mechanisms::MAX_SECRET_LEN as u128 {
                return Err(err(CKR_MECHANISM_PARAM_INVALID));
            }
            Param::DesCbcData {
                iv: p.iv,
                // SAFETY: caller guarantees pData holds length bytes.
                data: unsafe { bytes(p.pData, p.length) }.map_err(invalid)?,
            }
        }
        ParamKind::Pbkdf2 => {
            use crate::mechanisms::kdf::pbkdf2::{MAX_INPUT_LEN, Params};
            // CK_PKCS5_PBKD2_PARAMS2 only: the 2.x CK_PKCS5_PBKD2_PARAMS
            // (ulPasswordLen a pointer) has the same size on LP64 and
            // cannot be told apart (docs/mechanisms.md).
            // SAFETY: as above.
            let p: &CK_PKCS5_PBKD2_PARAMS2 = unsafe { param_struct(m)? };
            // Bounded before reading: salt and password at most 1024 bytes.
            if p.saltSource != CKZ_SALT_SPECIFIED
                || p.ulPrfDataLen != 0
                || p.ulSaltSourceDataLen as u128 > MAX_INPUT_LEN as u128
                || p.ulPasswordLen as u128 > MAX_INPUT_LEN as u128
            {
                return Err(err(CKR_MECHANISM_PARAM_INVALID));
            }
            Param::Pbkdf2(Params {
                prf: p.prf,
                iterations: p.iterations,
                // SAFETY: caller guarantees pSaltSourceData holds
                // ulSaltSourceDataLen bytes.
                salt: unsafe { bytes(p.pSaltSourceData as *const u8, p.ulSaltSourceDataLen) }
                    .map_err(invalid)?,
                // SAFETY: caller guarantees pPassword holds ulPasswordLen bytes.
                password: unsafe { bytes(p.pPassword, p.ulPasswordLen) }.map_err(invalid)?,
            })
        }
        // Owned values, read by `read_sp800_108` / `tls::read_derive`
        // (C_DeriveKey only).
        ParamKind::Sp800108
        | ParamKind::Tls12Master
        | ParamKind::Tls12ExtendedMaster
        | ParamKind::Tls12KeyMat => return Err(err(CKR_MECHANISM_PARAM_INVALID)),
        ParamKind::TlsKdf => {
            use crate::mechanisms::kdf::tls::{KdfParams, MAX_INPUT_LEN, RANDOM_LEN};
            // SAFETY: as above.
            let p: &CK_TLS_KDF_PARAMS = unsafe { param_struct(m)? };
            let r = &p.RandomInfo;
            // Bounded before reading: randoms 32 bytes, label and context
            // at most 1024; a NULL pointer with a length is refused.
            if p.ulLabelLength == 0
                || p.ulLabelLength as u128 > MAX_INPUT_LEN as u128
                || p.ulContextDataLength as u128 > MAX_INPUT_LEN as u128
                || r.ulClientRandomLen as u128 != RANDOM_LEN as u128
                || r.ulServerRandomLen as u128 != RANDOM_LEN as u128
                || p.pLabel.is_null()
                || r.pClientRandom.is_null()
                || r.pServerRandom.is_null()
                || (p.pContextData.is_null() && p.ulContextDataLength != 0)
            {
                return Err(err(CKR_MECHANISM_PARAM_INVALID));
            }
            // SAFETY: caller guarantees each pointer holds its length.
            unsafe {
                Param::TlsKdf(KdfParams {
                    prf: p.prfMechanism,
                    label: bytes(p.pLabel, p.ulLabelLength).map_err(invalid)?,
                    client: bytes(r.pClientRandom, r.ulClientRandomLen).map_err(invalid)?,
                    server: bytes(r.pServerRandom, r.ulServerRandomLen).map_err(invalid)?,
                    context: bytes(p.pContextData, p.ulContextDataLength).map_err(invalid)?,
                })
            }
        }
        ParamKind::TlsMac => {
            // SAFETY: as above.
            let p: &CK_TLS_MAC_PARAMS = unsafe { param_struct(m)? };
            Param::TlsMac(crate::mechanisms::kdf::tls::MacParams {
                prf: p.prfHashMechanism,
                mac_len: p.ulMacLength,
                server_or_client: p.ulServerOrClient,
            })
        }
        ParamKind::IkePrf
        | ParamKind::Ike1Prf
        | ParamKind::Ike1Extended
        | ParamKind::Ike2PrfPlus => {
            // SAFETY: forwarded caller guarantee.
            unsafe { read_ike(m, descriptor.param)? }
        }
        // SAFETY: forwarded caller guarantees.
        ParamKind::Otp => Param::Otp(unsafe { read_otp(m)? }),
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

/// `len` bytes at `ptr`, at most `max` (checked before reading) and at
/// least one if `required`; NULL with a length, or out of range, is
/// `CKR_MECHANISM_PARAM_INVALID`.
///
/// # Safety
/// `ptr` must be valid for `len` bytes when non-null.
unsafe fn bounded<'a>(
    ptr: *const u8,
    len: CK_ULONG,
    max: usize,
    required: bool,
) -> Result<&'a [u8]> {
    if len as u128 > max as u128 || (required && len == 0) {
        return Err(err(CKR_MECHANISM_PARAM_INVALID));
    }
    // SAFETY: forwarded caller guarantee.
    unsafe { bytes(ptr, len) }.map_err(|_| err(CKR_MECHANISM_PARAM_INVALID))
}

/// The parameter of an IKE derivation (mechanisms spec 3.0, "IKE"):
/// `CK_IKE_PRF_DERIVE_PARAMS`, `CK_IKE1_PRF_DERIVE_PARAMS`,
/// `CK_IKE1_EXTENDED_DERIVE_PARAMS` or `CK_IKE2_PRF_PLUS_DERIVE_PARAMS`.
/// Every length is bounded before its bytes are read (nonces and cookies
/// 1 to 256 bytes, seed and extra data at most 1024); the handles are
/// resolved by `api::crypto::derive`.
///
/// # Safety
/// `m.pParameter` valid for its length, and every pointer in it for its
/// length.
unsafe fn read_ike<'a>(m: &CK_MECHANISM, kind: ParamKind) -> Result<Param<'a>> {
    use crate::mechanisms::kdf::ike::{MAX_DATA_LEN, MAX_NONCE_LEN, Params};
    let p = match kind {
        ParamKind::IkePrf => {
            // SAFETY: length checked by param_struct; caller guarantees validity.
            let p: &CK_IKE_PRF_DERIVE_PARAMS = unsafe { param_struct(m)? };
            Params::Prf {
                prf: p.prfMechanism,
                data_as_key: p.bDataAsKey != 0,
                rekey: p.bRekey != 0,
                // SAFETY: caller guarantees pNi / pNr hold their lengths.
                ni: unsafe { bounded(p.pNi, p.ulNiLen, MAX_NONCE_LEN, true)? },
                // SAFETY: as above.
                nr: unsafe { bounded(p.pNr, p.ulNrLen, MAX_NONCE_LEN, true)? },
                new_key: p.hNewKey,
            }
        }
        ParamKind::Ike1Prf => {
            // SAFETY: as above.
            let p: &CK_IKE1_PRF_DERIVE_PARAMS = unsafe { param_struct(m)? };
            Params::Ike1Prf {
                prf: p.prfMechanism,
                prev_key: (p.bHasPrevKey != 0).then_some(p.hPrevKey),
                keygxy: p.hKeygxy,
                // SAFETY: caller guarantees pCKYi / pCKYr hold their lengths.
                cky_i: unsafe { bounded(p.pCKYi, p.ulCKYiLen, MAX_NONCE_LEN, true)? },
                // SAFETY: as above.
                cky_r: unsafe { bounded(p.pCKYr, p.ulCKYrLen, MAX_NONCE_LEN, true)? },
                key_number: p.keyNumber,
            }
        }
        ParamKind::Ike1Extended => {
            // SAFETY: as above.
            let p: &CK_IKE1_EXTENDED_DERIVE_PARAMS = unsafe { param_struct(m)? };
            Params::Ike1Extended {
                prf: p.prfMechanism,
                keygxy: (p.bHasKeygxy != 0).then_some(p.hKeygxy),
                // SAFETY: caller guarantees pExtraData holds ulExtraDataLen bytes.
                extra: unsafe { bounded(p.pExtraData, p.ulExtraDataLen, MAX_DATA_LEN, false)? },
            }
        }
        _ => {
            // SAFETY: as above.
            let p: &CK_IKE2_PRF_PLUS_DERIVE_PARAMS = unsafe { param_struct(m)? };
            Params::PrfPlus {
                prf: p.prfMechanism,
                seed_key: (p.bHasSeedKey != 0).then_some(p.hSeedKey),
                // SAFETY: caller guarantees pSeedData holds ulSeedDataLen bytes.
                seed: unsafe { bounded(p.pSeedData, p.ulSeedDataLen, MAX_DATA_LEN, false)? },
            }
        }
    };
    crate::mechanisms::kdf::ike::validate(&p)?;
    Ok(Param::Ike(p))
}

/// Most `CK_OTP_PARAM`s a `CK_OTP_PARAMS` may hold: one of each of the
/// eight types (a repeated type is refused).
const MAX_OTP_PARAMS: usize = 8;

/// A `CK_OTP_PARAMS` (base spec 3.0 "OTP mechanisms") read into owned
/// values: `CK_OTP_COUNTER` (exactly 8 bytes), `CK_OTP_FLAGS`,
/// `CK_OTP_OUTPUT_LENGTH` and `CK_OTP_OUTPUT_FORMAT` (each one
/// `CK_ULONG`); `CK_OTP_PIN`, `CK_OTP_CHALLENGE` and `CK_OTP_TIME` are
/// ignored unread (HOTP keys ignore them); `CK_OTP_VALUE`, unknown and
/// repeated types, more than [`MAX_OTP_PARAMS`] entries or a `NULL`
/// array with entries are `CKR_MECHANISM_PARAM_INVALID`.
///
/// # Safety
/// `m.pParameter` valid for `m.ulParameterLen` bytes; the array and the
/// values it points to valid for their lengths.
unsafe fn read_otp(m: &CK_MECHANISM) -> Result<OtpParams> {
    let invalid = || err(CKR_MECHANISM_PARAM_INVALID);
    // SAFETY: length and alignment checked by param_struct; caller guarantees validity.
    let p: &CK_OTP_PARAMS = unsafe { param_struct(m)? };
    let count = usize::try_from(p.ulCount).map_err(|_| invalid())?;
    if count > MAX_OTP_PARAMS
        || (count > 0 && p.pParams.is_null())
        || !(p.pParams as usize).is_multiple_of(std::mem::align_of::<CK_OTP_PARAM>())
    {
        return Err(invalid());
    }
    let list: &[CK_OTP_PARAM] = if count == 0 {
        &[]
    } else {
        // SAFETY: non-null, aligned, at most MAX_OTP_PARAMS entries; the
        // caller guarantees `count` readable entries.
        unsafe { std::slice::from_raw_parts(p.pParams, count) }
    };
    let mut out = OtpParams::default();
    let mut seen = 0u32;
    for q in list {
        let bit = 1u32
            .checked_shl(u32::try_from(q.type_).map_err(|_| invalid())?)
            .filter(|_| q.type_ <= CK_OTP_OUTPUT_FORMAT)
            .ok_or_else(invalid)?;
        if seen & bit != 0 {
            return Err(invalid());
        }
        seen |= bit;
        let value = || {
            // SAFETY: the caller guarantees pValue holds ulValueLen bytes.
            unsafe { bytes(q.pValue as *const u8, q.ulValueLen) }.map_err(|_| invalid())
        };
        let ulong = || -> Result<CK_ULONG> {
            let v: [u8; std::mem::size_of::<CK_ULONG>()] =
                value()?.try_into().map_err(|_| invalid())?;
            Ok(CK_ULONG::from_ne_bytes(v))
        };
        match q.type_ {
            CK_OTP_COUNTER => {
                let v: [u8; 8] = value()?.try_into().map_err(|_| invalid())?;
                out.counter = Some(u64::from_be_bytes(v));
            }
            CK_OTP_FLAGS => out.flags = ulong()?,
            CK_OTP_OUTPUT_LENGTH => out.length = Some(ulong()?),
            CK_OTP_OUTPUT_FORMAT => out.format = Some(ulong()?),
            CK_OTP_PIN | CK_OTP_CHALLENGE | CK_OTP_TIME => {}
            _ => return Err(invalid()),
        }
    }
    Ok(out)
}

/// The parameter as a `T`, if its length is exactly `size_of::<T>()`.
///
/// # Safety
/// `m.pParameter` must be valid for `m.ulParameterLen` bytes.
pub(super) unsafe fn param_struct<'a, T>(m: &CK_MECHANISM) -> Result<&'a T> {
    if m.ulParameterLen as usize != std::mem::size_of::<T>() || m.pParameter.is_null() {
        return Err(err(CKR_MECHANISM_PARAM_INVALID));
    }
    if !(m.pParameter as usize).is_multiple_of(std::mem::align_of::<T>()) {
        return Err(err(CKR_MECHANISM_PARAM_INVALID));
    }
    // SAFETY: non-null, aligned, and exactly one `T` long per the caller.
    Ok(unsafe { &*(m.pParameter as *const T) })
}

/// An SP 800-108 mechanism read from the caller's memory (mechanisms spec
/// 3.0 §2.42): its type, the parameters copied into owned values, and the
/// additional keys' templates with the places their handles go.
pub struct Sp800108 {
    /// `mechanism`.
    pub ty: CK_MECHANISM_TYPE,
    /// `prfType`, `pDataParams`, `pIV`.
    pub params: mechanisms::kdf::sp800_108::Params,
    /// `pAdditionalDerivedKeys`: each key's template and `phKey`.
    pub additional: Vec<(Vec<Attr>, *mut CK_OBJECT_HANDLE)>,
}

/// True if `ptr` names one of the SP 800-108 mechanisms.
///
/// # Safety
/// `ptr` null or a valid `CK_MECHANISM`.
pub unsafe fn is_sp800_108(ptr: *const CK_MECHANISM) -> bool {
    // SAFETY: caller guarantees validity when non-null.
    unsafe { ptr.as_ref() }
        .is_some_and(|m| mechanisms::kdf::sp800_108::Mode::of(m.mechanism).is_some())
}

/// Reads `CK_SP800_108_KDF_PARAMS` / `CK_SP800_108_FEEDBACK_KDF_PARAMS`
/// with their `CK_PRF_DATA_PARAM` and `CK_DERIVED_KEY` arrays. Every count
/// is bounded before anything is read or allocated; anything malformed is
/// `CKR_MECHANISM_PARAM_INVALID`.
///
/// # Safety
/// `ptr` a valid `CK_MECHANISM` whose parameter and every array and value
/// it points to are valid for their lengths.
pub unsafe fn read_sp800_108(ptr: *const CK_MECHANISM) -> Result<Sp800108> {
    use mechanisms::kdf::sp800_108::{self as kbkdf, DataParam, Mode};
    let invalid = |_| err(CKR_MECHANISM_PARAM_INVALID);
    // SAFETY: caller guarantees validity when non-null.
    let m = unsafe { ptr.as_ref() }.ok_or(err(CKR_ARGUMENTS_BAD))?;
    let mode = Mode::of(m.mechanism).ok_or(err(CKR_MECHANISM_INVALID))?;
    let (prf, n_data, p_data, iv, n_keys, p_keys) = if mode == Mode::Feedback {
        // SAFETY: length checked by param_struct; caller guarantees validity.
        let p: &CK_SP800_108_FEEDBACK_KDF_PARAMS = unsafe { param_struct(m)? };
        if p.ulIVLen as u128 > kbkdf::MAX_BYTES as u128 || (p.pIV.is_null() && p.ulIVLen != 0) {
            return Err(err(CKR_MECHANISM_PARAM_INVALID));
        }
        // SAFETY: caller guarantees pIV holds ulIVLen bytes.
        let iv = unsafe { bytes(p.pIV, p.ulIVLen) }
            .map_err(invalid)?
            .to_vec();
        (
            p.prfType,
            p.ulNumberOfDataParams,
            p.pDataParams,
            iv,
            p.ulAdditionalDerivedKeys,
            p.pAdditionalDerivedKeys,
        )
    } else {
        // SAFETY: as above.
        let p: &CK_SP800_108_KDF_PARAMS = unsafe { param_struct(m)? };
        (
            p.prfType,
            p.ulNumberOfDataParams,
            p.pDataParams,
            Vec::new(),
            p.ulAdditionalDerivedKeys,
            p.pAdditionalDerivedKeys,
        )
    };
    if n_data == 0 || n_data as u128 > kbkdf::MAX_DATA_PARAMS as u128 {
        return Err(err(CKR_MECHANISM_PARAM_INVALID));
    }
    if n_keys as u128 > kbkdf::MAX_ADDITIONAL_KEYS as u128 || (n_keys == 0) != p_keys.is_null() {
        return Err(err(CKR_MECHANISM_PARAM_INVALID));
    }
    // SAFETY: caller guarantees pDataParams holds ulNumberOfDataParams entries.
    let entries: &[CK_PRF_DATA_PARAM] = unsafe { array(p_data, n_data)? };
    let mut data = Vec::with_capacity(entries.len());
    for e in entries {
        data.push(match e.type_ {
            CK_SP800_108_ITERATION_VARIABLE if mode == Mode::Counter => {
                // SAFETY: caller guarantees pValue holds ulValueLen bytes.
                DataParam::Iteration(Some(unsafe { counter_format(e)? }))
            }
            CK_SP800_108_ITERATION_VARIABLE => {
                if !e.pValue.is_null() || e.ulValueLen != 0 {
                    return Err(err(CKR_MECHANISM_PARAM_INVALID));
                }
                DataParam::Iteration(None)
            }
            // SAFETY: as above.
            CK_SP800_108_OPTIONAL_COUNTER => DataParam::Counter(unsafe { counter_format(e)? }),
            CK_SP800_108_DKM_LENGTH => {
                // SAFETY: as above.
                let f: &CK_SP800_108_DKM_LENGTH_FORMAT = unsafe { value_struct(e)? };
                DataParam::DkmLength(kbkdf::DkmFormat {
                    method: match f.dkmLengthMethod {
                        CK_SP800_108_DKM_LENGTH_SUM_OF_KEYS => kbkdf::DkmMethod::SumOfKeys,
                        CK_SP800_108_DKM_LENGTH_SUM_OF_SEGMENTS => kbkdf::DkmMethod::SumOfSegments,
                        _ => return Err(err(CKR_MECHANISM_PARAM_INVALID)),
                    },
                    little_endian: f.bLittleEndian != 0,
                    width_bits: f.ulWidthInBits,
                })
            }
            CK_SP800_108_BYTE_ARRAY => {
                if e.ulValueLen == 0
                    || e.ulValueLen as u128 > kbkdf::MAX_BYTES as u128
                    || e.pValue.is_null()
                {
                    return Err(err(CKR_MECHANISM_PARAM_INVALID));
                }
                // SAFETY: caller guarantees pValue holds ulValueLen bytes.
                DataParam::Bytes(
                    unsafe { bytes(e.pValue as *const u8, e.ulValueLen) }
                        .map_err(invalid)?
                        .to_vec(),
                )
            }
            // CK_SP800_108_KEY_HANDLE and unknown types.
            _ => return Err(err(CKR_MECHANISM_PARAM_INVALID)),
        });
    }
    let mut additional = Vec::with_capacity(n_keys as usize);
    if n_keys != 0 {
        // SAFETY: caller guarantees pAdditionalDerivedKeys holds the count.
        let keys: &[CK_DERIVED_KEY] = unsafe { array(p_keys, n_keys)? };
        for k in keys {
            if k.phKey.is_null() {
                return Err(err(CKR_MECHANISM_PARAM_INVALID));
            }
            // SAFETY: caller guarantees pTemplate holds ulAttributeCount entries.
            let t = unsafe { template(k.pTemplate, k.ulAttributeCount) }.map_err(invalid)?;
            additional.push((t, k.phKey));
        }
    }
    let params = kbkdf::Params { prf, data, iv };
    kbkdf::validate(mode, &params)?;
    Ok(Sp800108 {
        ty: m.mechanism,
        params,
        additional,
    })
}

/// `count` entries of `T` at `ptr` (non-null, aligned), else
/// `CKR_MECHANISM_PARAM_INVALID`.
///
/// # Safety
/// `ptr` must be valid for `count` `T`s.
unsafe fn array<'a, T>(ptr: *const T, count: CK_ULONG) -> Result<&'a [T]> {
    if ptr.is_null() || !(ptr as usize).is_multiple_of(std::mem::align_of::<T>()) {
        return Err(err(CKR_MECHANISM_PARAM_INVALID));
    }
    // SAFETY: non-null, aligned; count bounded by the caller, valid per the caller.
    Ok(unsafe { std::slice::from_raw_parts(ptr, count as usize) })
}

/// A data parameter's value as a `T`, if its length is exactly
/// `size_of::<T>()`.
///
/// # Safety
/// `e.pValue` must be valid for `e.ulValueLen` bytes.
unsafe fn value_struct<'a, T>(e: &CK_PRF_DATA_PARAM) -> Result<&'a T> {
    if e.ulValueLen as usize != std::mem::size_of::<T>()
        || e.pValue.is_null()
        || !(e.pValue as usize).is_multiple_of(std::mem::align_of::<T>())
    {
        return Err(err(CKR_MECHANISM_PARAM_INVALID));
    }
    // SAFETY: non-null, aligned, and exactly one `T` long per the caller.
    Ok(unsafe { &*(e.pValue as *const T) })
}

/// A `CK_SP800_108_COUNTER_FORMAT` value.
///
/// # Safety
/// As [`value_struct`].
unsafe fn counter_format(
    e: &CK_PRF_DATA_PARAM,
) -> Result<mechanisms::kdf::sp800_108::CounterFormat> {
    // SAFETY: forwarded caller guarantee.
    let f: &CK_SP800_108_COUNTER_FORMAT = unsafe { value_struct(e)? };
    Ok(mechanisms::kdf::sp800_108::CounterFormat {
        little_endian: f.bLittleEndian != 0,
        width_bits: f.ulWidthInBits,
    })
}
