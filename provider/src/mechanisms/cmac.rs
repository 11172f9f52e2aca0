//! AES-CMAC (mechanisms spec §2.8 `CKM_AES_CMAC`, `CKM_AES_CMAC_GENERAL`;
//! RFC 4493, NIST SP 800-38B) and the AES CBC-MAC (§2.10.8 `CKM_AES_MAC`,
//! `CKM_AES_MAC_GENERAL`) over the key's cached AES schedule.
//!
//! The CBC-MAC is the one of `CKM_DES3_MAC` (FIPS 113 / ISO 9797-1 MAC
//! algorithm 1 with padding method 1) over 128-bit blocks: zero IV, the
//! last block padded with zero bytes, an empty message taken as one zero
//! block; the MAC is the first half of the last block (8 bytes) for
//! `CKM_AES_MAC`, or 1 to 16 bytes with `CK_MAC_GENERAL_PARAMS`. Zero
//! padding is ambiguous (`m` and `m ‖ 00` have the same MAC) and a plain
//! CBC-MAC is only safe for messages of one fixed length: legacy, for
//! consumers that ask for it (docs/SECURITY.md); CMAC is the sound MAC.

use super::material::KeyMaterial;
use super::operation::SignOperation;
use super::params::Mechanism;
use super::params::general_len;
use crate::error::{Result, err};
use cryptoki_sys::*;
use std::sync::Arc;
use zeroize::Zeroize;

const BLOCK: usize = 16;

/// An AES-CMAC computation (RFC 4493 §2.4) over the key's cached schedule
/// and subkeys: starting one costs no key expansion, and the state is a
/// few dozen bytes.
#[derive(Clone)]
pub struct CmacSign {
    key: Arc<KeyMaterial>,
    /// The CBC-MAC chaining value.
    state: [u8; BLOCK],
    /// The last block seen, kept back because the final block (full or
    /// partial) is processed differently (RFC 4493 §2.4 steps 4 and 6).
    pending: [u8; BLOCK],
    pending_len: usize,
    out_len: usize,
    /// CBC-MAC with zero padding (`CKM_AES_MAC*`) instead of CMAC.
    cbc_mac: bool,
}

impl CmacSign {
    /// Starts a CMAC with an AES key.
    pub fn new(mech: &Mechanism<'_>, key: Arc<KeyMaterial>) -> Result<Self> {
        let (general, cbc_mac, full) = match mech.ty {
            CKM_AES_CMAC => (false, false, BLOCK),
            CKM_AES_CMAC_GENERAL => (true, false, BLOCK),
            CKM_AES_MAC => (false, true, BLOCK / 2),
            CKM_AES_MAC_GENERAL => (true, true, BLOCK),
            _ => return Err(err(CKR_MECHANISM_INVALID)),
        };
        if !matches!(&*key, KeyMaterial::Aes(_)) {
            return Err(err(CKR_KEY_TYPE_INCONSISTENT));
        }
        let out_len = general_len(mech, full, general)?;
        Ok(CmacSign {
            key,
            state: [0; BLOCK],
            pending: [0; BLOCK],
            pending_len: 0,
            out_len,
            cbc_mac,
        })
    }

    fn aes(&self) -> &super::aes::AesKey {
        match &*self.key {
            KeyMaterial::Aes(k) => k,
            _ => unreachable!("checked in CmacSign::new"),
        }
    }
}

impl SignOperation for CmacSign {
    fn output_len(&self) -> usize {
        self.out_len
    }

    fn update(&mut self, mut data: &[u8]) -> Result<()> {
        // Complete the pending block; it is MACed only once more data follows.
        let fill = (BLOCK - self.pending_len).min(data.len());
        self.pending[self.pending_len..self.pending_len + fill].copy_from_slice(&data[..fill]);
        self.pending_len += fill;
        data = &data[fill..];
        if data.is_empty() {
            return Ok(());
        }
        let KeyMaterial::Aes(aes) = &*self.key else {
            unreachable!("checked in CmacSign::new")
        };
        aes.cbc_mac(&mut self.state, &self.pending);
        // Keep back the last (possibly whole) block of the rest.
        let keep = match data.len() % BLOCK {
            0 => BLOCK,
            r => r,
        };
        let (body, tail) = data.split_at(data.len() - keep);
        aes.cbc_mac(&mut self.state, body);
        self.pending = [0; BLOCK];
        self.pending[..keep].copy_from_slice(tail);
        self.pending_len = keep;
        Ok(())
    }

    fn finish(&mut self, out: &mut [u8]) -> Result<usize> {
        let mut last = self.state;
        if self.cbc_mac {
            // Zero padding; an empty message is one zero block.
            for (l, p) in last.iter_mut().zip(&self.pending[..self.pending_len]) {
                *l ^= p;
            }
        } else if self.pending_len == BLOCK {
            let [k1, _] = self.aes().cmac_subkeys();
            for ((l, p), k) in last.iter_mut().zip(&self.pending).zip(k1) {
                *l ^= p ^ k;
            }
        } else {
            let [_, k2] = self.aes().cmac_subkeys();
            let mut padded = self.pending;
            padded[self.pending_len] = 0x80;
            padded[self.pending_len + 1..].fill(0);
            for ((l, p), k) in last.iter_mut().zip(&padded).zip(k2) {
                *l ^= p ^ k;
            }
            padded.zeroize();
        }
        self.aes().encrypt_block(&mut last);
        let n = self.out_len;
        out[..n].copy_from_slice(&last[..n]);
        last.zeroize();
        // Ready for another message with the same key.
        self.state = [0; BLOCK];
        self.pending = [0; BLOCK];
        self.pending_len = 0;
        Ok(n)
    }
}

impl Drop for CmacSign {
    fn drop(&mut self) {
        self.state.zeroize();
        self.pending.zeroize();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mechanisms::test_util::{hex, unhex};

    /// RFC 4493 §4, example 2 (16-byte message).
    #[test]
    fn rfc4493_example_2() {
        let key =
            Arc::new(super::super::aes::load(&unhex("2b7e151628aed2a6abf7158809cf4f3c")).unwrap());
        let mut c = CmacSign::new(&Mechanism::plain(CKM_AES_CMAC), key).unwrap();
        let mut out = [0u8; 16];
        c.sign(&unhex("6bc1bee22e409f96e93d7e117393172a"), &mut out)
            .unwrap();
        assert_eq!(hex(&out), "070a16b46b4d4144f79bdd9dd04a287c");
    }

    /// The cmac crate's answer, for differential checks.
    fn reference(key: &[u8], msg: &[u8]) -> Vec<u8> {
        use cmac::{KeyInit, Mac};
        macro_rules! mac {
            ($c:ty) => {{
                let mut m = <cmac::Cmac<$c> as KeyInit>::new_from_slice(key).unwrap();
                m.update(msg);
                m.finalize().into_bytes().to_vec()
            }};
        }
        match key.len() {
            16 => mac!(aes::Aes128),
            24 => mac!(aes::Aes192),
            _ => mac!(aes::Aes256),
        }
    }

    /// Every key size, message lengths 0..=80 (empty, partial, whole and
    /// multi-block final blocks, more than one CBC batch at 600 bytes),
    /// single-part and split at every point, and the same operation reused
    /// after `finish`.
    #[test]
    fn matches_the_cmac_crate_for_every_length_and_split() {
        for key_len in [16usize, 24, 32] {
            let key_bytes: Vec<u8> = (0..key_len as u8).map(|i| i.wrapping_mul(37)).collect();
            let key = Arc::new(super::super::aes::load(&key_bytes).unwrap());
            let mut op = CmacSign::new(&Mechanism::plain(CKM_AES_CMAC), key).unwrap();
            for len in (0..=80).chain([600, 1024]) {
                let msg: Vec<u8> = (0..len).map(|i| (i * 7 + key_len) as u8).collect();
                let expected = reference(&key_bytes, &msg);
                let mut out = [0u8; 16];
                op.sign(&msg, &mut out).unwrap();
                assert_eq!(out.to_vec(), expected, "key {key_len} len {len}");
                for cut in (0..=len).step_by(if len > 80 { 97 } else { 1 }) {
                    op.update(&msg[..cut]).unwrap();
                    op.update(&msg[cut..]).unwrap();
                    op.finish(&mut out).unwrap();
                    assert_eq!(out.to_vec(), expected, "key {key_len} len {len} cut {cut}");
                }
            }
        }
    }

    /// CBC-MAC: the last block of CBC encryption under a zero IV of the
    /// zero-padded message (the aes and cbc crates' CBC), for every length
    /// and split; an empty message is one zero block.
    #[test]
    fn cbc_mac_is_zero_padded_cbc() {
        use ::aes::cipher::{BlockModeEncrypt, KeyIvInit};
        let key_bytes = [0x42u8; 16];
        let key = Arc::new(super::super::aes::load(&key_bytes).unwrap());
        let general = Mechanism {
            ty: CKM_AES_MAC_GENERAL,
            param: super::super::Param::MacLength(16),
        };
        let mut op = CmacSign::new(&general, Arc::clone(&key)).unwrap();
        let mut half = CmacSign::new(&Mechanism::plain(CKM_AES_MAC), key).unwrap();
        assert_eq!(half.output_len(), 8);
        for len in 0..=50usize {
            let msg: Vec<u8> = (0..len).map(|i| (i * 5 + 1) as u8).collect();
            let mut padded = msg.clone();
            padded.resize(len.div_ceil(16).max(1) * 16, 0);
            let mut enc =
                cbc::Encryptor::<::aes::Aes128>::new(&key_bytes.into(), &[0u8; 16].into());
            for block in padded.chunks_mut(16) {
                let block: &mut ::aes::Block = block.try_into().unwrap();
                enc.encrypt_block(block);
            }
            let want = &padded[padded.len() - 16..];
            let mut out = [0u8; 16];
            op.sign(&msg, &mut out).unwrap();
            assert_eq!(&out, want, "{len}");
            half.sign(&msg, &mut out[..8]).unwrap();
            assert_eq!(&out[..8], &want[..8], "{len}");
            for cut in 0..=len {
                op.update(&msg[..cut]).unwrap();
                op.update(&msg[cut..]).unwrap();
                op.finish(&mut out).unwrap();
                assert_eq!(&out, want, "{len} {cut}");
            }
        }
    }

    /// `CKM_AES_CMAC_GENERAL` truncates to the requested length (1..=16).
    #[test]
    fn general_truncates() {
        let key_bytes = [9u8; 16];
        let key = Arc::new(super::super::aes::load(&key_bytes).unwrap());
        let full = reference(&key_bytes, b"abc");
        for n in 1..=16u64 {
            let mech = Mechanism {
                ty: CKM_AES_CMAC_GENERAL,
                param: super::super::Param::MacLength(n),
            };
            let mut op = CmacSign::new(&mech, Arc::clone(&key)).unwrap();
            assert_eq!(op.output_len(), n as usize);
            let mut out = [0u8; 16];
            assert_eq!(op.sign(b"abc", &mut out).unwrap(), n as usize);
            assert_eq!(&out[..n as usize], &full[..n as usize]);
        }
        for bad in [0u64, 17] {
            let mech = Mechanism {
                ty: CKM_AES_CMAC_GENERAL,
                param: super::super::Param::MacLength(bad),
            };
            assert!(CmacSign::new(&mech, Arc::clone(&key)).is_err());
        }
    }
}
