//! Triple-DES MACs with `CKK_DES2` / `CKK_DES3` keys (mechanisms spec 3.0
//! §2.29): `CKM_DES3_MAC` and `CKM_DES3_MAC_GENERAL` (the CBC-MAC of FIPS
//! 113 / ISO 9797-1 MAC algorithm 1: the last block padded with zero
//! bytes, an empty message taken as one zero block; 4 bytes, or 1 to 8
//! with `CK_MAC_GENERAL_PARAMS`), and `CKM_DES3_CMAC` and
//! `CKM_DES3_CMAC_GENERAL` (NIST SP 800-38B over 64-bit blocks; 8 bytes,
//! or 1 to 8).

use super::super::block_modes::BlockEngine;
use super::super::material::KeyMaterial;
use super::super::operation::SignOperation;
use super::super::params::Mechanism;
use super::super::params::general_len;
use super::cipher::des_key;
use super::key::{BLOCK, DesKey};
use crate::error::{Result, err};
use cryptoki_sys::*;
use std::sync::Arc;
use zeroize::Zeroize;

const TDES: &[CK_KEY_TYPE] = &[CKK_DES2, CKK_DES3];

/// A DES3-MAC or DES3-CMAC computation.
#[derive(Clone)]
pub struct DesMac {
    key: Arc<KeyMaterial>,
    /// The CMAC subkeys K1, K2 (SP 800-38B §6.1), or `None` for CBC-MAC.
    cmac: Option<[[u8; BLOCK]; 2]>,
    /// The CBC-MAC chaining value.
    state: [u8; BLOCK],
    /// The last block seen, kept back because the final block is processed
    /// differently.
    pending: [u8; BLOCK],
    pending_len: usize,
    out_len: usize,
}

/// Doubling in GF(2^64) as SP 800-38B §6.1 defines it for 64-bit blocks
/// (R64 = 0x1b), without a data-dependent branch.
fn dbl(block: &[u8; BLOCK]) -> [u8; BLOCK] {
    let v = u64::from_be_bytes(*block);
    let carry = (v >> 63) as u8;
    let mut out = (v << 1).to_be_bytes();
    out[BLOCK - 1] ^= 0x1b & carry.wrapping_neg();
    out
}

impl DesMac {
    /// Starts a MAC with a double- or triple-length DES key.
    pub fn new(mech: &Mechanism<'_>, key: Arc<KeyMaterial>) -> Result<Self> {
        let (cmac, full, general) = match mech.ty {
            CKM_DES3_MAC => (false, BLOCK / 2, false),
            CKM_DES3_MAC_GENERAL => (false, BLOCK, true),
            CKM_DES3_CMAC => (true, BLOCK, false),
            CKM_DES3_CMAC_GENERAL => (true, BLOCK, true),
            _ => return Err(err(CKR_MECHANISM_INVALID)),
        };
        let des = des_key(&key, TDES)?;
        let out_len = general_len(mech, full, general)?;
        let cmac = if cmac {
            let mut l = [0u8; BLOCK];
            let done = des.encrypt_block(&mut l);
            let k1 = dbl(&l);
            let k2 = dbl(&k1);
            l.zeroize();
            done?;
            Some([k1, k2])
        } else {
            None
        };
        Ok(DesMac {
            key,
            cmac,
            state: [0; BLOCK],
            pending: [0; BLOCK],
            pending_len: 0,
            out_len,
        })
    }

    fn des(&self) -> Result<&DesKey> {
        des_key(&self.key, TDES)
    }

    fn absorb(&mut self, block: &[u8; BLOCK]) -> Result<()> {
        let mut state = self.state;
        state.iter_mut().zip(block).for_each(|(s, b)| *s ^= b);
        let done = self.des()?.encrypt_block(&mut state);
        if done.is_ok() {
            self.state = state;
        }
        state.zeroize();
        done
    }
}

impl SignOperation for DesMac {
    fn output_len(&self) -> usize {
        self.out_len
    }

    fn update(&mut self, mut data: &[u8]) -> Result<()> {
        while !data.is_empty() {
            if self.pending_len == BLOCK {
                let block = self.pending;
                self.absorb(&block)?;
                self.pending_len = 0;
            }
            let fill = (BLOCK - self.pending_len).min(data.len());
            self.pending[self.pending_len..self.pending_len + fill].copy_from_slice(&data[..fill]);
            self.pending_len += fill;
            data = &data[fill..];
        }
        Ok(())
    }

    fn finish(&mut self, out: &mut [u8]) -> Result<usize> {
        let mut last = self.pending;
        last[self.pending_len..].fill(0);
        if let Some([k1, k2]) = &self.cmac {
            let k = if self.pending_len == BLOCK {
                k1
            } else {
                last[self.pending_len] = 0x80;
                k2
            };
            last.iter_mut().zip(k).for_each(|(l, k)| *l ^= k);
        }
        self.absorb(&last)?;
        last.zeroize();
        let n = self.out_len;
        out[..n].copy_from_slice(&self.state[..n]);
        // Ready for another message with the same key.
        self.state.zeroize();
        self.pending.zeroize();
        self.pending_len = 0;
        Ok(n)
    }
}

impl Drop for DesMac {
    fn drop(&mut self) {
        self.state.zeroize();
        self.pending.zeroize();
        if let Some(k) = &mut self.cmac {
            k.zeroize();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::load;
    use super::*;
    use crate::mechanisms::Param;
    use crate::mechanisms::test_util::unhex;

    /// NIST SP 800-38B Appendix D.4 (three-key TDEA) and D.5 (two-key
    /// TDEA) examples: messages of 0, 8, 20 and 32 bytes.
    #[test]
    fn sp800_38b_examples() {
        let msg = unhex("6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e51");
        let three = (
            CKK_DES3,
            "8aa83bf8cbda10620bc1bf19fbb6cd58bc313d4a371ca8b5",
            [
                "b7a688e122ffaf95",
                "8e8f293136283797",
                "743ddbe0ce2dc2ed",
                "33e6b1092400eae5",
            ],
        );
        let two = (
            CKK_DES2,
            "4cf15134a2850dd58a3d10ba80570d38",
            [
                "bd2ebf9a3ba00361",
                "4ff2ab813c53ce83",
                "62dd1b471902bd4e",
                "31b1e431dabc4eb8",
            ],
        );
        for (kt, key, tags) in [three, two] {
            let key = Arc::new(load(kt, &unhex(key)).unwrap());
            let mut op = DesMac::new(&Mechanism::plain(CKM_DES3_CMAC), key).unwrap();
            for (len, tag) in [0, 8, 20, 32].into_iter().zip(tags) {
                let mut out = [0u8; 8];
                op.sign(&msg[..len], &mut out).unwrap();
                assert_eq!(out.to_vec(), unhex(tag), "{kt:#x} {len}");
                // Split at every point: the same tag.
                for cut in 0..=len {
                    op.update(&msg[..cut]).unwrap();
                    op.update(&msg[cut..len]).unwrap();
                    op.finish(&mut out).unwrap();
                    assert_eq!(out.to_vec(), unhex(tag), "{kt:#x} {len} cut {cut}");
                }
            }
        }
    }

    /// CBC-MAC (zero padding) over the SP 800-67 example plaintext and one
    /// more byte: the last CBC block of the zero-padded message (OpenSSL's
    /// des-ede3-cbc with IV 0 gives 4c9675accace34ee), its first half for
    /// `CKM_DES3_MAC`.
    #[test]
    fn cbc_mac_known_answers_and_lengths() {
        let key = Arc::new(
            load(
                CKK_DES3,
                &unhex("0123456789abcdef23456789abcdef01456789abcdef0123"),
            )
            .unwrap(),
        );
        let data = unhex("54686520717566636b2062726f776e20666f78206a756d7000");
        let mut op = DesMac::new(&Mechanism::plain(CKM_DES3_MAC), Arc::clone(&key)).unwrap();
        assert_eq!(op.output_len(), 4);
        let mut out = [0u8; 8];
        assert_eq!(op.sign(&data, &mut out).unwrap(), 4);
        assert_eq!(out[..4].to_vec(), unhex("4c9675ac"));
        // A whole number of blocks: no padding block is added.
        op.sign(&data[..24], &mut out).unwrap();
        assert_eq!(out[..4].to_vec(), unhex("70d56382"));
        for n in 1..=8u64 {
            let mech = Mechanism {
                ty: CKM_DES3_MAC_GENERAL,
                param: Param::MacLength(n),
            };
            let mut op = DesMac::new(&mech, Arc::clone(&key)).unwrap();
            assert_eq!(op.sign(&data, &mut out).unwrap(), n as usize);
            assert_eq!(out[..n as usize], unhex("4c9675accace34ee")[..n as usize]);
        }
        for (ty, bad) in [(CKM_DES3_MAC_GENERAL, 9u64), (CKM_DES3_CMAC_GENERAL, 0)] {
            let mech = Mechanism {
                ty,
                param: Param::MacLength(bad),
            };
            assert!(DesMac::new(&mech, Arc::clone(&key)).is_err());
        }
        let single = Arc::new(load(CKK_DES, &unhex("0123456789abcdef")).unwrap());
        let Err(e) = DesMac::new(&Mechanism::plain(CKM_DES3_CMAC), single) else {
            panic!("a single-DES key makes a DES3-CMAC")
        };
        assert_eq!(e.rv(), CKR_KEY_TYPE_INCONSISTENT);
    }
}
