//! Raw IKE derivation parameters (`CK_IKE_PRF_DERIVE_PARAMS`,
//! `CK_IKE1_PRF_DERIVE_PARAMS`, `CK_IKE1_EXTENDED_DERIVE_PARAMS`,
//! `CK_IKE2_PRF_PLUS_DERIVE_PARAMS`), which cryptoki 0.12 does not name,
//! and `C_DeriveKey` through the raw function list (with `raw_calls.rs`
//! beside it). The structures point
//! into the caller's slices, which must outlive the call.
#![allow(dead_code)]

use super::common::raw;
use super::raw_calls::raw_template;
use cryptoki_sys::*;

/// One of the four parameter structures.
pub enum IkeParam {
    Prf(CK_IKE_PRF_DERIVE_PARAMS),
    Ike1Prf(CK_IKE1_PRF_DERIVE_PARAMS),
    Extended(CK_IKE1_EXTENDED_DERIVE_PARAMS),
    PrfPlus(CK_IKE2_PRF_PLUS_DERIVE_PARAMS),
}

fn ptr(b: &[u8]) -> *mut u8 {
    if b.is_empty() {
        std::ptr::null_mut()
    } else {
        b.as_ptr() as *mut u8
    }
}

fn len(b: &[u8]) -> CK_ULONG {
    b.len() as CK_ULONG
}

impl IkeParam {
    /// `CK_IKE_PRF_DERIVE_PARAMS`.
    pub fn prf(
        prf: CK_MECHANISM_TYPE,
        data_as_key: bool,
        rekey: bool,
        ni: &[u8],
        nr: &[u8],
        new_key: CK_OBJECT_HANDLE,
    ) -> IkeParam {
        IkeParam::Prf(CK_IKE_PRF_DERIVE_PARAMS {
            prfMechanism: prf,
            bDataAsKey: data_as_key as CK_BBOOL,
            bRekey: rekey as CK_BBOOL,
            pNi: ptr(ni),
            ulNiLen: len(ni),
            pNr: ptr(nr),
            ulNrLen: len(nr),
            hNewKey: new_key,
        })
    }

    /// `CK_IKE1_PRF_DERIVE_PARAMS`.
    pub fn ike1_prf(
        prf: CK_MECHANISM_TYPE,
        keygxy: CK_OBJECT_HANDLE,
        prev: Option<CK_OBJECT_HANDLE>,
        cky_i: &[u8],
        cky_r: &[u8],
        key_number: u8,
    ) -> IkeParam {
        IkeParam::Ike1Prf(CK_IKE1_PRF_DERIVE_PARAMS {
            prfMechanism: prf,
            bHasPrevKey: prev.is_some() as CK_BBOOL,
            hKeygxy: keygxy,
            hPrevKey: prev.unwrap_or(CK_INVALID_HANDLE),
            pCKYi: ptr(cky_i),
            ulCKYiLen: len(cky_i),
            pCKYr: ptr(cky_r),
            ulCKYrLen: len(cky_r),
            keyNumber: key_number,
        })
    }

    /// `CK_IKE1_EXTENDED_DERIVE_PARAMS`.
    pub fn extended(
        prf: CK_MECHANISM_TYPE,
        keygxy: Option<CK_OBJECT_HANDLE>,
        extra: &[u8],
    ) -> IkeParam {
        IkeParam::Extended(CK_IKE1_EXTENDED_DERIVE_PARAMS {
            prfMechanism: prf,
            bHasKeygxy: keygxy.is_some() as CK_BBOOL,
            hKeygxy: keygxy.unwrap_or(CK_INVALID_HANDLE),
            pExtraData: ptr(extra),
            ulExtraDataLen: len(extra),
        })
    }

    /// `CK_IKE2_PRF_PLUS_DERIVE_PARAMS`.
    pub fn prf_plus(
        prf: CK_MECHANISM_TYPE,
        seed_key: Option<CK_OBJECT_HANDLE>,
        seed: &[u8],
    ) -> IkeParam {
        IkeParam::PrfPlus(CK_IKE2_PRF_PLUS_DERIVE_PARAMS {
            prfMechanism: prf,
            bHasSeedKey: seed_key.is_some() as CK_BBOOL,
            hSeedKey: seed_key.unwrap_or(CK_INVALID_HANDLE),
            pSeedData: ptr(seed),
            ulSeedDataLen: len(seed),
        })
    }

    /// The mechanism these parameters belong to.
    pub fn mechanism_type(&self) -> CK_MECHANISM_TYPE {
        match self {
            IkeParam::Prf(_) => CKM_IKE_PRF_DERIVE,
            IkeParam::Ike1Prf(_) => CKM_IKE1_PRF_DERIVE,
            IkeParam::Extended(_) => CKM_IKE1_EXTENDED_DERIVE,
            IkeParam::PrfPlus(_) => CKM_IKE2_PRF_PLUS_DERIVE,
        }
    }

    /// The `CK_MECHANISM` pointing at the structure.
    pub fn mechanism(&mut self) -> CK_MECHANISM {
        fn m<T>(ty: CK_MECHANISM_TYPE, p: &mut T) -> CK_MECHANISM {
            CK_MECHANISM {
                mechanism: ty,
                pParameter: (p as *mut T).cast(),
                ulParameterLen: size_of::<T>() as CK_ULONG,
            }
        }
        let ty = self.mechanism_type();
        match self {
            IkeParam::Prf(p) => m(ty, p),
            IkeParam::Ike1Prf(p) => m(ty, p),
            IkeParam::Extended(p) => m(ty, p),
            IkeParam::PrfPlus(p) => m(ty, p),
        }
    }
}

/// `C_DeriveKey` with `mech` and a template of `(type, value)` pairs.
pub fn derive_ike(
    session: CK_SESSION_HANDLE,
    mech: &mut CK_MECHANISM,
    base: CK_OBJECT_HANDLE,
    template: &mut [(CK_ATTRIBUTE_TYPE, Vec<u8>)],
) -> Result<CK_OBJECT_HANDLE, CK_RV> {
    let mut attrs = raw_template(template);
    let mut h = 0;
    // SAFETY: the mechanism's parameter and every template value are live
    // for their stated lengths.
    let rv = unsafe {
        raw().C_DeriveKey.unwrap()(
            session,
            mech,
            base,
            attrs.as_mut_ptr(),
            attrs.len() as CK_ULONG,
            &mut h,
        )
    };
    if rv == CKR_OK { Ok(h) } else { Err(rv) }
}

/// The template of a session generic secret of `len` bytes (no length
/// when `None`), with `extra` attributes after it.
pub fn secret_template(
    len: Option<usize>,
    extra: &[(CK_ATTRIBUTE_TYPE, bool)],
) -> Vec<(CK_ATTRIBUTE_TYPE, Vec<u8>)> {
    let mut t = vec![
        (CKA_CLASS, CKO_SECRET_KEY.to_ne_bytes().to_vec()),
        (CKA_KEY_TYPE, CKK_GENERIC_SECRET.to_ne_bytes().to_vec()),
        (CKA_TOKEN, vec![0]),
    ];
    if let Some(l) = len {
        t.push((CKA_VALUE_LEN, (l as CK_ULONG).to_ne_bytes().to_vec()));
    }
    t.extend(extra.iter().map(|&(ty, v)| (ty, vec![v as u8])));
    t
}
