//! HMAC (mechanisms spec §2.16–2.20 "General-length" and plain HMAC for
//! SHA-1, SHA-224, SHA-256, SHA-384, SHA-512), SHA-512/224 and SHA-512/256
//! (mechanisms spec 3.0 §2.25) and SHA3-224 to SHA3-512 (§2.26, FIPS 202;
//! HMAC block sizes 144, 136, 104, 72 bytes) with the hmac crate, and
//! `CKM_MD5_HMAC`/`CKM_MD5_HMAC_GENERAL` (§6.5.3, RFC 2104) for SoftHSM2
//! migration (legacy: MD5 is broken, though HMAC-MD5 has no practical
//! attack yet). PKCS #11 3.0 has no `CKK_MD5_HMAC`: MD5 HMAC takes
//! `CKK_GENERIC_SECRET` keys only.
//!
//! Keys: `CKK_GENERIC_SECRET`, or the `CKK_SHA*_HMAC` type matching the
//! mechanism's hash. `_GENERAL` mechanisms take the MAC length (1 to the
//! hash size) as `CK_MAC_GENERAL_PARAMS`.
//!
//! The HMAC computation ([`HmacSign`]); it starts from the key's prepared
//! states (`prepared`).

use super::prepared::{HmacHash, State};
use crate::error::{Result, err};
use crate::mechanisms::material::KeyMaterial;
use crate::mechanisms::operation::SignOperation;
use crate::mechanisms::params::{Mechanism, general_len};
use cryptoki_sys::*;
use hmac::Mac;
use std::sync::Arc;

/// An HMAC computation.
#[derive(Clone)]
pub struct HmacSign {
    key: Arc<KeyMaterial>,
    hash: HmacHash,
    /// The running state; `None` after `finish` until the next message
    /// starts (so finishing copies nothing when no message follows).
    state: Option<State>,
    out_len: usize,
}

/// (hash, key type matching the hash, general?) of a mechanism.
pub(super) fn shape(mech: CK_MECHANISM_TYPE) -> Result<(HmacHash, CK_KEY_TYPE, bool)> {
    use HmacHash as H;
    Ok(match mech {
        // No CKK_MD5_HMAC exists: only generic secrets (the type given here
        // is never a key's, so the check below accepts just those).
        CKM_MD5_HMAC => (H::Md5, CKK_GENERIC_SECRET, false),
        CKM_MD5_HMAC_GENERAL => (H::Md5, CKK_GENERIC_SECRET, true),
        CKM_SHA_1_HMAC => (H::Sha1, CKK_SHA_1_HMAC, false),
        CKM_SHA_1_HMAC_GENERAL => (H::Sha1, CKK_SHA_1_HMAC, true),
        CKM_SHA224_HMAC => (H::Sha224, CKK_SHA224_HMAC, false),
        CKM_SHA224_HMAC_GENERAL => (H::Sha224, CKK_SHA224_HMAC, true),
        CKM_SHA256_HMAC => (H::Sha256, CKK_SHA256_HMAC, false),
        CKM_SHA256_HMAC_GENERAL => (H::Sha256, CKK_SHA256_HMAC, true),
        CKM_SHA384_HMAC => (H::Sha384, CKK_SHA384_HMAC, false),
        CKM_SHA384_HMAC_GENERAL => (H::Sha384, CKK_SHA384_HMAC, true),
        CKM_SHA512_HMAC => (H::Sha512, CKK_SHA512_HMAC, false),
        CKM_SHA512_HMAC_GENERAL => (H::Sha512, CKK_SHA512_HMAC, true),
        CKM_SHA512_224_HMAC => (H::Sha512_224, CKK_SHA512_224_HMAC, false),
        CKM_SHA512_224_HMAC_GENERAL => (H::Sha512_224, CKK_SHA512_224_HMAC, true),
        CKM_SHA512_256_HMAC => (H::Sha512_256, CKK_SHA512_256_HMAC, false),
        CKM_SHA512_256_HMAC_GENERAL => (H::Sha512_256, CKK_SHA512_256_HMAC, true),
        CKM_SHA3_224_HMAC => (H::Sha3_224, CKK_SHA3_224_HMAC, false),
        CKM_SHA3_224_HMAC_GENERAL => (H::Sha3_224, CKK_SHA3_224_HMAC, true),
        CKM_SHA3_256_HMAC => (H::Sha3_256, CKK_SHA3_256_HMAC, false),
        CKM_SHA3_256_HMAC_GENERAL => (H::Sha3_256, CKK_SHA3_256_HMAC, true),
        CKM_SHA3_384_HMAC => (H::Sha3_384, CKK_SHA3_384_HMAC, false),
        CKM_SHA3_384_HMAC_GENERAL => (H::Sha3_384, CKK_SHA3_384_HMAC, true),
        CKM_SHA3_512_HMAC => (H::Sha3_512, CKK_SHA3_512_HMAC, false),
        CKM_SHA3_512_HMAC_GENERAL => (H::Sha3_512, CKK_SHA3_512_HMAC, true),
        _ => return Err(err(CKR_MECHANISM_INVALID)),
    })
}

/// True for every HMAC mechanism this module computes.
pub fn is_hmac(mech: CK_MECHANISM_TYPE) -> bool {
    shape(mech).is_ok()
}

impl HmacSign {
    /// Starts an HMAC with a generic secret or matching HMAC key.
    pub fn new(mech: &Mechanism<'_>, key: Arc<KeyMaterial>) -> Result<Self> {
        let (hash, hmac_type, general) = shape(mech.ty)?;
        let KeyMaterial::Secret {
            key_type,
            value,
            hmac,
        } = &*key
        else {
            return Err(err(CKR_KEY_TYPE_INCONSISTENT));
        };
        if *key_type != CKK_GENERIC_SECRET && *key_type != hmac_type {
            return Err(err(CKR_KEY_TYPE_INCONSISTENT));
        }
        let out_len = general_len(mech, hash.len(), general)?;
        let state = hmac.get(hash, value)?.clone();
        Ok(HmacSign {
            key,
            hash,
            state: Some(state),
            out_len,
        })
    }

    /// A fresh copy of the key's prepared state.
    fn fresh(&self) -> Result<State> {
        match &*self.key {
            KeyMaterial::Secret { value, hmac, .. } => Ok(hmac.get(self.hash, value)?.clone()),
            _ => Err(err(CKR_GENERAL_ERROR)),
        }
    }
}

impl SignOperation for HmacSign {
    fn output_len(&self) -> usize {
        self.out_len
    }

    fn update(&mut self, data: &[u8]) -> Result<()> {
        let state = match &mut self.state {
            Some(s) => s,
            None => self.state.insert(self.fresh()?),
        };
        each!(state, m => m.update(data));
        Ok(())
    }

    fn finish(&mut self, out: &mut [u8]) -> Result<usize> {
        let n = self.out_len;
        let done = match self.state.take() {
            Some(s) => s,
            None => self.fresh()?,
        };
        each!(done, m => out[..n].copy_from_slice(&m.finalize().into_bytes()[..n]));
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mechanisms::params::Param;
    use hmac::KeyInit;
    use zeroize::Zeroizing;

    fn key(v: &[u8], key_type: CK_KEY_TYPE) -> Arc<KeyMaterial> {
        Arc::new(KeyMaterial::Secret {
            key_type,
            value: Zeroizing::new(v.to_vec()),
            hmac: Default::default(),
        })
    }

    /// RFC 2202 §2 HMAC-MD5 test case 2.
    #[test]
    fn rfc2202_md5_case_2() {
        let mut h = HmacSign::new(
            &Mechanism::plain(CKM_MD5_HMAC),
            key(b"Jefe", CKK_GENERIC_SECRET),
        )
        .unwrap();
        let mut out = [0u8; 16];
        assert_eq!(
            h.sign(b"what do ya want for nothing?", &mut out).unwrap(),
            16
        );
        assert_eq!(
            crate::mechanisms::test_util::hex(&out),
            "750c783e6ab0b503eaa86e310a5db738"
        );
        assert_eq!(
            HmacSign::new(&Mechanism::plain(CKM_MD5_HMAC), key(b"k", CKK_SHA_1_HMAC))
                .err()
                .unwrap()
                .rv(),
            CKR_KEY_TYPE_INCONSISTENT
        );
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
            crate::mechanisms::test_util::hex(&out),
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

    /// One generic secret used with every hash, keys shorter and longer
    /// than the block, and an operation reused after `finish`: each MAC
    /// equals the hmac crate's from scratch (the prepared state is per hash
    /// and never leaks one message into the next).
    #[test]
    fn prepared_states_match_fresh_computation() {
        macro_rules! fresh {
            ($d:ty) => {
                |key: &[u8], msg: &[u8]| -> Vec<u8> {
                    let mut m = <hmac::Hmac<$d> as KeyInit>::new_from_slice(key).unwrap();
                    m.update(msg);
                    m.finalize().into_bytes().to_vec()
                }
            };
        }
        type Reference = fn(&[u8], &[u8]) -> Vec<u8>;
        let hashes: [(CK_MECHANISM_TYPE, Reference); 12] = [
            (CKM_MD5_HMAC, fresh!(md5::Md5)),
            (CKM_SHA_1_HMAC, fresh!(sha1::Sha1)),
            (CKM_SHA224_HMAC, fresh!(sha2::Sha224)),
            (CKM_SHA256_HMAC, fresh!(sha2::Sha256)),
            (CKM_SHA384_HMAC, fresh!(sha2::Sha384)),
            (CKM_SHA512_HMAC, fresh!(sha2::Sha512)),
            (CKM_SHA512_224_HMAC, fresh!(sha2::Sha512_224)),
            (CKM_SHA512_256_HMAC, fresh!(sha2::Sha512_256)),
            (CKM_SHA3_224_HMAC, fresh!(sha3::Sha3_224)),
            (CKM_SHA3_256_HMAC, fresh!(sha3::Sha3_256)),
            (CKM_SHA3_384_HMAC, fresh!(sha3::Sha3_384)),
            (CKM_SHA3_512_HMAC, fresh!(sha3::Sha3_512)),
        ];
        for key_len in [1usize, 32, 64, 65, 200] {
            let secret: Vec<u8> = (0..key_len).map(|i| (i * 13) as u8).collect();
            let k = key(&secret, CKK_GENERIC_SECRET);
            for (mech, reference) in hashes {
                let mut op = HmacSign::new(&Mechanism::plain(mech), k.clone()).unwrap();
                for msg in [
                    &b"first message"[..],
                    b"",
                    b"a third, longer message".as_slice(),
                ] {
                    let mut out = [0u8; 64];
                    let n = op.sign(msg, &mut out).unwrap();
                    assert_eq!(
                        out[..n],
                        reference(&secret, msg)[..],
                        "{mech:#x} key {key_len}"
                    );
                }
            }
        }
    }
}
