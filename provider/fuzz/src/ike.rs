//! The IKE derivations' parameter structs for the `mechanisms` target
//! (`CK_IKE_PRF_DERIVE_PARAMS`, `CK_IKE1_PRF_DERIVE_PARAMS`,
//! `CK_IKE1_EXTENDED_DERIVE_PARAMS`, `CK_IKE2_PRF_PLUS_DERIVE_PARAMS`),
//! built with real pointers into buffers the caller keeps alive.

use crate::in_ptr;
use arbitrary::Arbitrary;
use cryptoki_sys::*;

/// The IKE PRFs: the supported HMACs, then ones that must be refused.
const PRFS: &[CK_MECHANISM_TYPE] = &[
    CKM_SHA_1_HMAC,
    CKM_SHA256_HMAC,
    CKM_SHA512_HMAC,
    CKM_SHA3_256_HMAC,
    CKM_AES_CMAC,
    CKM_MD5_HMAC,
    CKM_SHA256_HMAC_GENERAL,
    77,
];

/// One of the four structs; handle numbers: small ones are the harness's
/// keys.
#[derive(Arbitrary, Debug)]
pub enum IkeParam {
    /// `CK_IKE_PRF_DERIVE_PARAMS` (`mode` sets `bDataAsKey` and `bRekey`,
    /// both included).
    Prf {
        prf: u8,
        mode: u8,
        ni: Vec<u8>,
        nr: Vec<u8>,
        new_key: u8,
    },
    /// `CK_IKE1_PRF_DERIVE_PARAMS`.
    Ike1Prf {
        prf: u8,
        prev: Option<u8>,
        gxy: u8,
        cky_i: Vec<u8>,
        cky_r: Vec<u8>,
        number: u8,
    },
    /// `CK_IKE2_PRF_PLUS_DERIVE_PARAMS` (`plus`) or
    /// `CK_IKE1_EXTENDED_DERIVE_PARAMS`: an optional key and data.
    KeyData {
        plus: bool,
        prf: u8,
        key: Option<u8>,
        data: Vec<u8>,
    },
}

fn as_bytes<T>(v: &T) -> Vec<u8> {
    // SAFETY: reading a plain C struct's bytes.
    unsafe { std::slice::from_raw_parts(v as *const T as *const u8, size_of::<T>()).to_vec() }
}

/// The size of `mech`'s parameter struct, for the IKE mechanisms.
pub fn struct_size(mech: CK_MECHANISM_TYPE) -> Option<usize> {
    Some(match mech {
        CKM_IKE_PRF_DERIVE => size_of::<CK_IKE_PRF_DERIVE_PARAMS>(),
        CKM_IKE1_PRF_DERIVE => size_of::<CK_IKE1_PRF_DERIVE_PARAMS>(),
        CKM_IKE1_EXTENDED_DERIVE => size_of::<CK_IKE1_EXTENDED_DERIVE_PARAMS>(),
        CKM_IKE2_PRF_PLUS_DERIVE => size_of::<CK_IKE2_PRF_PLUS_DERIVE_PARAMS>(),
        _ => return None,
    })
}

impl IkeParam {
    /// The mechanism whose parameter this is.
    pub fn mechanism(&self) -> CK_MECHANISM_TYPE {
        match self {
            IkeParam::Prf { .. } => CKM_IKE_PRF_DERIVE,
            IkeParam::Ike1Prf { .. } => CKM_IKE1_PRF_DERIVE,
            IkeParam::KeyData { plus: false, .. } => CKM_IKE1_EXTENDED_DERIVE,
            IkeParam::KeyData { plus: true, .. } => CKM_IKE2_PRF_PLUS_DERIVE,
        }
    }

    /// The struct's bytes; its byte strings are pushed to `owned` (empty
    /// on entry), which must outlive every use of the bytes.
    pub fn build(&self, owned: &mut Vec<Vec<u8>>) -> Vec<u8> {
        let prf = |p: &u8| PRFS[*p as usize % PRFS.len()];
        let len = |b: &Vec<u8>| b.len() as CK_ULONG;
        match self {
            IkeParam::Prf {
                prf: p,
                mode,
                ni,
                nr,
                new_key,
            } => {
                owned.extend([ni.clone(), nr.clone()]);
                as_bytes(&CK_IKE_PRF_DERIVE_PARAMS {
                    prfMechanism: prf(p),
                    bDataAsKey: mode & 1,
                    bRekey: (mode >> 1) & 1,
                    pNi: in_ptr(&owned[0]),
                    ulNiLen: len(&owned[0]),
                    pNr: in_ptr(&owned[1]),
                    ulNrLen: len(&owned[1]),
                    hNewKey: *new_key as CK_OBJECT_HANDLE,
                })
            }
            IkeParam::Ike1Prf {
                prf: p,
                prev,
                gxy,
                cky_i,
                cky_r,
                number,
            } => {
                owned.extend([cky_i.clone(), cky_r.clone()]);
                as_bytes(&CK_IKE1_PRF_DERIVE_PARAMS {
                    prfMechanism: prf(p),
                    bHasPrevKey: prev.is_some() as u8,
                    hKeygxy: *gxy as CK_OBJECT_HANDLE,
                    hPrevKey: prev.unwrap_or(0) as CK_OBJECT_HANDLE,
                    pCKYi: in_ptr(&owned[0]),
                    ulCKYiLen: len(&owned[0]),
                    pCKYr: in_ptr(&owned[1]),
                    ulCKYrLen: len(&owned[1]),
                    keyNumber: *number,
                })
            }
            IkeParam::KeyData {
                plus,
                prf: p,
                key,
                data,
            } => {
                owned.push(data.clone());
                let (has, handle) = (key.is_some() as u8, key.unwrap_or(0) as CK_OBJECT_HANDLE);
                if *plus {
                    as_bytes(&CK_IKE2_PRF_PLUS_DERIVE_PARAMS {
                        prfMechanism: prf(p),
                        bHasSeedKey: has,
                        hSeedKey: handle,
                        pSeedData: in_ptr(&owned[0]),
                        ulSeedDataLen: len(&owned[0]),
                    })
                } else {
                    as_bytes(&CK_IKE1_EXTENDED_DERIVE_PARAMS {
                        prfMechanism: prf(p),
                        bHasKeygxy: has,
                        hKeygxy: handle,
                        pExtraData: in_ptr(&owned[0]),
                        ulExtraDataLen: len(&owned[0]),
                    })
                }
            }
        }
    }
}
