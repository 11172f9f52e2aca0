//! HMAC (mechanisms spec §2.16–2.20 "General-length" and plain HMAC for
//! SHA-1, SHA-224, SHA-256, SHA-384, SHA-512) with the hmac crate.
//!
//! Keys: `CKK_GENERIC_SECRET`, or the `CKK_SHA*_HMAC` type matching the
//! mechanism's hash. `_GENERAL` mechanisms take the MAC length (1 to the
//! hash size) as `CK_MAC_GENERAL_PARAMS`.

use super::keys::KeyMaterial;
use super::{Mechanism, Param, SignOperation};
use crate::error::{Result, err};
use cryptoki_sys::*;
use hmac::{KeyInit, Mac};
use std::sync::Arc;

enum State {
    Sha1(hmac::HmacReset<sha1::Sha1>),
    Sha224(hmac::HmacReset<sha2::Sha224>),
    Sha256(hmac::HmacReset<sha2::Sha256>),
    Sha384(hmac::HmacReset<sha2::Sha384>),
    Sha512(hmac::HmacReset<sha2::Sha512>),
}

macro_rules! each {
    ($s:expr, $m:ident => $e:expr) => {
        match $s {
            State::Sha1($m) => $e,
            State::Sha224($m) => $e,
            State::Sha256($m) => $e,
            State::Sha384($m) => $e,
            State::Sha512($m) => $e,
        }
    };
}

/// An HMAC computation.
pub struct HmacSign {
    state: State,
    out_len: usize,
}

/// (full MAC length, key type matching the hash, general?) of a mechanism.
fn shape(mech: CK_MECHANISM_TYPE) -> Result<(usize, CK_KEY_TYPE, bool)> {
    Ok(match mech {
        CKM_SHA_1_HMAC => (20, CKK_SHA_1_HMAC, false),
        CKM_SHA_1_HMAC_GENERAL => (20, CKK_SHA_1_HMAC, true),
        CKM_SHA224_HMAC => (28, CKK_SHA224_HMAC, false),
        CKM_SHA224_HMAC_GENERAL => (28, CKK_SHA224_HMAC, true),
        CKM_SHA256_HMAC => (32, CKK_SHA256_HMAC, false),
        CKM_SHA256_HMAC_GENERAL => (32, CKK_SHA256_HMAC, true),
        CKM_SHA384_HMAC => (48, CKK_SHA384_HMAC, false),
        CKM_SHA384_HMAC_GENERAL => (48, CKK_SHA384_HMAC, true),
        CKM_SHA512_HMAC => (64, CKK_SHA512_HMAC, false),
        CKM_SHA512_HMAC_GENERAL => (64, CKK_SHA512_HMAC, true),
        _ => return Err(err(CKR_MECHANISM_INVALID)),
    })
}

/// The output length asked for by a `_GENERAL` mechanism (or the full length).
pub fn general_len(mech: &Mechanism<'_>, full: usize, general: bool) -> Result<usize> {
    match (general, mech.param) {
        (false, Param::None) => Ok(full),
        (true, Param::MacLength(n)) if (1..=full as CK_ULONG).contains(&n) => Ok(n as usize),
        _ => Err(err(CKR_MECHANISM_PARAM_INVALID)),
    }
}

impl HmacSign {
    /// Starts an HMAC with a generic secret or matching HMAC key.
    pub fn new(mech: &Mechanism<'_>, key: Arc<KeyMaterial>) -> Result<Self> {
        let (full, hmac_type, general) = shape(mech.ty)?;
        let KeyMaterial::Secret { key_type, value } = &*key else {
            return Err(err(CKR_KEY_TYPE_INCONSISTENT));
        };
        if *key_type != CKK_GENERIC_SECRET && *key_type != hmac_type {
            return Err(err(CKR_KEY_TYPE_INCONSISTENT));
        }
        let out_len = general_len(mech, full, general)?;
        let bad = |_| err(CKR_KEY_SIZE_RANGE);
        let state = match full {
            20 => State::Sha1(KeyInit::new_from_slice(value).map_err(bad)?),
            28 => State::Sha224(KeyInit::new_from_slice(value).map_err(bad)?),
            32 => State::Sha256(KeyInit::new_from_slice(value).map_err(bad)?),
            48 => State::Sha384(KeyInit::new_from_slice(value).map_err(bad)?),
            _ => State::Sha512(KeyInit::new_from_slice(value).map_err(bad)?),
        };
        Ok(HmacSign { state, out_len })
    }
}

impl SignOperation for HmacSign {
    fn output_len(&self) -> usize {
        self.out_len
    }

    fn sign(&mut self, data: &[u8], out: &mut [u8]) -> Result<usize> {
        self.update(data)?;
        self.finish(out)
    }

    fn update(&mut self, data: &[u8]) -> Result<()> {
        each!(&mut self.state, m => m.update(data));
        Ok(())
    }

    fn finish(&mut self, out: &mut [u8]) -> Result<usize> {
        let n = self.out_len;
        each!(&mut self.state, m => out[..n].copy_from_slice(&m.finalize_reset().into_bytes()[..n]));
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zeroize::Zeroizing;

    fn key(v: &[u8], key_type: CK_KEY_TYPE) -> Arc<KeyMaterial> {
        Arc::new(KeyMaterial::Secret {
            key_type,
            value: Zeroizing::new(v.to_vec()),
        })
    }

    /// RFC 4231 test case 2.
    #[test]
    fn rfc4231_case_2() {
        let mut h = HmacSign::new(
            &Mechanism::plain(CKM_SHA256_HMAC),
            key(b"Jefe", CKK_GENERIC_SECRET),
        )
        .unwrap();
        let mut out = [0u8; 32];
        h.sign(b"what do ya want for nothing?", &mut out).unwrap();
        assert_eq!(
            crate::storage::seal::hex(&out),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn key_types_and_general_lengths() {
        let k = key(b"k", CKK_SHA256_HMAC);
        assert!(HmacSign::new(&Mechanism::plain(CKM_SHA256_HMAC), k.clone()).is_ok());
        assert_eq!(
            HmacSign::new(&Mechanism::plain(CKM_SHA512_HMAC), k.clone())
                .err()
                .unwrap()
                .rv(),
            CKR_KEY_TYPE_INCONSISTENT
        );
        let general = |n| Mechanism {
            ty: CKM_SHA256_HMAC_GENERAL,
            param: Param::MacLength(n),
        };
        assert_eq!(
            HmacSign::new(&general(16), k.clone()).unwrap().output_len(),
            16
        );
        assert!(HmacSign::new(&general(33), k.clone()).is_err());
        assert!(HmacSign::new(&general(0), k.clone()).is_err());
        assert!(HmacSign::new(&Mechanism::plain(CKM_SHA256_HMAC_GENERAL), k).is_err());
    }
}
