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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mechanisms::test_util::hex;

    /// RFC 4231 test case 2 (HMAC-SHA-256), the message given in parts,
    /// and case 6 (a 131-byte key, longer than the block: hashed first).
    #[test]
    fn rfc4231_in_parts_and_long_key() {
        let prf = Prf::new(CKM_SHA256_HMAC, b"Jefe").unwrap();
        let mut out = Vec::new();
        prf.append(&[b"what do ya want ", b"", b"for nothing?"], &mut out);
        assert_eq!(
            hex(&out),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        let prf = Prf::new(CKM_SHA256_HMAC, &[0xaa; 131]).unwrap();
        let mut out = Vec::new();
        prf.append(
            &[b"Test Using Larger Than Block-Size Key - Hash Key First"],
            &mut out,
        );
        assert_eq!(
            hex(&out),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        );
        assert_eq!(prf.out_len(), 32);
        for bad in [CKM_MD5_HMAC, CKM_SHA256_HMAC_GENERAL, CKM_AES_CMAC] {
            assert_eq!(
                Prf::output_len(bad).unwrap_err().rv(),
                CKR_MECHANISM_PARAM_INVALID
            );
        }
        assert_eq!(Prf::key_type(CKM_SHA3_384_HMAC).unwrap(), CKK_SHA3_384_HMAC);
    }
}
