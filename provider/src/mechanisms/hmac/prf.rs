//! HMAC as a keyed PRF for the KDFs that name an HMAC mechanism as their
//! `prfMechanism` (the IKE derivations of the mechanisms spec 3.0, "IKE"): one
//! state keyed once, then any number of one-shot evaluations over
//! concatenated parts.

use super::prepared::{HmacHash, State};
use super::sign::shape;
use crate::error::{Result, err};
use cryptoki_sys::*;
use hmac::Mac;
use zeroize::Zeroize;

/// An HMAC keyed with one key.
#[derive(Clone)]
pub struct Prf {
    hash: HmacHash,
    state: State,
}

impl Prf {
    /// The output length of the PRF `mech` names: an HMAC mechanism of
    /// SHA-1, SHA-2 or SHA-3 that is not `_GENERAL` (MD5 is not a PRF
    /// here), else `CKR_MECHANISM_PARAM_INVALID` (the mechanism is a
    /// parameter field).
    pub fn output_len(mech: CK_MECHANISM_TYPE) -> Result<usize> {
        Ok(Self::hash_of(mech)?.0.len())
    }

    /// The HMAC key type that matches the PRF `mech`.
    pub fn key_type(mech: CK_MECHANISM_TYPE) -> Result<CK_KEY_TYPE> {
        Ok(Self::hash_of(mech)?.1)
    }

    fn hash_of(mech: CK_MECHANISM_TYPE) -> Result<(HmacHash, CK_KEY_TYPE)> {
        match shape(mech) {
            Ok((hash, key_type, false)) if hash != HmacHash::Md5 => Ok((hash, key_type)),
            _ => Err(err(CKR_MECHANISM_PARAM_INVALID)),
        }
    }

    /// The PRF `mech` keyed with `key` (any length: RFC 2104 hashes a key
    /// longer than the block).
    pub fn new(mech: CK_MECHANISM_TYPE, key: &[u8]) -> Result<Prf> {
        let (hash, _) = Self::hash_of(mech)?;
        Ok(Prf {
            hash,
            state: State::new(hash, key)?,
        })
    }

    /// The output length in bytes (one PRF output).
    pub fn out_len(&self) -> usize {
        self.hash.len()
    }

    /// `prf(key, parts[0] ‖ parts[1] ‖ …)`, appended to `out`.
    pub fn append(&self, parts: &[&[u8]], out: &mut Vec<u8>) {
        let mut s = self.state.clone();
        for p in parts {
            each!(&mut s, m => m.update(p));
        }
        each!(s, m => {
            let mut tag = m.finalize().into_bytes();
            out.extend_from_slice(&tag);
            tag[..].zeroize();
        });
    }
}
