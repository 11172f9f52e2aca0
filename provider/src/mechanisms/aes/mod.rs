//! AES (mechanisms spec §2.8–2.14): ECB, CBC, CBC-PAD, CTR, GCM, key wrap
//! (RFC 3394) and key wrap with padding (RFC 5649), with the aes, cbc, ctr
//! and aes-gcm crates.
//!
//! The key schedule is expanded once, when the object's key material is
//! parsed ([`load`]), and every operation borrows it.
//!
//! Multi-part rules (base spec §5.9–5.10, mechanisms spec §2.8):
//! - ECB and CBC without padding output every complete block as soon as it
//!   is available; a final partial block is an error at `C_*Final`.
//! - CBC-PAD decryption holds back the last complete block until
//!   `C_DecryptFinal`, which removes the PKCS #7 padding.
//! - CTR is a stream: output length equals input length.
//! - GCM buffers the whole message: `C_*Update` outputs nothing and
//!   `C_*Final` outputs everything, so decryption never releases plaintext
//!   before the tag has been verified.
//! - The key-wrap mechanisms are single-part only: their `C_*Update` and
//!   `C_*Final` return `CKR_FUNCTION_NOT_SUPPORTED` (and end the operation).
//!
//! `CKM_AES_KEY_WRAP_PAD` is the RFC 5649 algorithm, as PKCS #11 v2.40–3.0
//! describe it and SoftHSM implements it (PKCS #11 3.1 renamed this
//! algorithm `CKM_AES_KEY_WRAP_KWP`).
//!
//! The code is split by job: this module holds the key ([`AesKey`], its
//! expanded schedule, [`load`], the CMAC subkeys); `modes` the cipher
//! operation [`AesCipher`] with ECB, CBC, CBC-PAD and CTR; `gcm` GCM
//! (GHASH, `J0`, the tag, sealing and opening); `wrap` the RFC 3394 and
//! RFC 5649 key-wrap functions.

use super::Direction;
use super::keys::KeyMaterial;
use crate::error::{Result, err};
use aes::cipher::consts::U16;
use aes::cipher::{BlockCipherDecrypt, BlockCipherEncrypt, BlockSizeUser, KeyInit};
use aes::{Aes128, Aes192, Aes256, Block};
use cryptoki_sys::*;
use gcm::GcmPrepared;
use modes::cbc;
use std::sync::OnceLock;
use zeroize::{Zeroize, Zeroizing};

const BLOCK: usize = 16;

/// An expanded AES key schedule (zeroized on drop by the aes crate).
#[derive(Clone)]
enum Schedule {
    Aes128(Aes128),
    Aes192(Aes192),
    Aes256(Aes256),
}

/// Runs `$e` with `$c` bound to the key schedule, whatever the key size.
macro_rules! with_cipher {
    ($key:expr, $c:ident => $e:expr) => {
        match &$key.schedule {
            Schedule::Aes128($c) => $e,
            Schedule::Aes192($c) => $e,
            Schedule::Aes256($c) => $e,
        }
    };
}

// Declared after `with_cipher!`, which they use.
mod gcm;
mod modes;
mod wrap;

pub use modes::AesCipher;

/// An AES key (16, 24 or 32 bytes) with its expanded key schedule.
pub struct AesKey {
    value: Zeroizing<Vec<u8>>,
    schedule: Schedule,
    /// The CMAC subkeys K1 and K2 (RFC 4493 §2.3), computed on first use.
    cmac_subkeys: OnceLock<Zeroizing<[[u8; BLOCK]; 2]>>,
    /// GCM prepared on first use.
    gcm: OnceLock<Box<GcmPrepared>>,
    /// aws-lc's AES-GCM for this key, made on first use.
    #[cfg(feature = "aws-lc")]
    awslc_gcm: OnceLock<Option<super::awslc::AesGcmKey>>,
}

impl AesKey {
    /// The key bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.value
    }

    /// Encrypts one block in place.
    pub fn encrypt_block(&self, block: &mut [u8; BLOCK]) {
        let mut b = Block::from(*block);
        with_cipher!(self, c => c.encrypt_block(&mut b));
        block.copy_from_slice(&b);
        b.zeroize();
    }

    /// CBC-MAC over whole blocks: `state` is the chaining value, updated
    /// in place (`data.len()` is a multiple of 16). The blocks go to the
    /// cipher in batches, so the key schedule is prepared once per batch.
    pub fn cbc_mac(&self, state: &mut [u8; BLOCK], data: &[u8]) {
        debug_assert_eq!(data.len() % BLOCK, 0);
        let mut buf = [0u8; 32 * BLOCK];
        for chunk in data.chunks(buf.len()) {
            let buf = &mut buf[..chunk.len()];
            buf.copy_from_slice(chunk);
            with_cipher!(self, c => cbc(c, Direction::Encrypt, state, buf));
        }
        buf[..data.len().min(32 * BLOCK)].zeroize();
    }

    /// The CMAC subkeys K1 and K2 (RFC 4493 §2.3, SP 800-38B §6.1).
    pub fn cmac_subkeys(&self) -> &[[u8; BLOCK]; 2] {
        self.cmac_subkeys.get_or_init(|| {
            let mut l = [0u8; BLOCK];
            self.encrypt_block(&mut l);
            let k1 = dbl(&l);
            let k2 = dbl(&k1);
            l.zeroize();
            Zeroizing::new([k1, k2])
        })
    }
}

/// Doubling in GF(2^128) as CMAC defines it (RFC 4493 §2.3): shift left
/// one bit, and XOR `0x87` into the last byte when the top bit was set
/// (without a data-dependent branch).
fn dbl(block: &[u8; BLOCK]) -> [u8; BLOCK] {
    let v = u128::from_be_bytes(*block);
    let carry = (v >> 127) as u8;
    let mut out = (v << 1).to_be_bytes();
    out[BLOCK - 1] ^= 0x87 & carry.wrapping_neg();
    out
}

/// Parses an AES key value and expands its key schedule.
pub fn load(value: &[u8]) -> Result<KeyMaterial> {
    let bad = |_| err(CKR_KEY_SIZE_RANGE);
    let schedule = match value.len() {
        16 => Schedule::Aes128(Aes128::new_from_slice(value).map_err(bad)?),
        24 => Schedule::Aes192(Aes192::new_from_slice(value).map_err(bad)?),
        32 => Schedule::Aes256(Aes256::new_from_slice(value).map_err(bad)?),
        _ => return Err(err(CKR_KEY_SIZE_RANGE)),
    };
    Ok(KeyMaterial::Aes(AesKey {
        value: Zeroizing::new(value.to_vec()),
        schedule,
        cmac_subkeys: OnceLock::new(),
        gcm: OnceLock::new(),
        #[cfg(feature = "aws-lc")]
        awslc_gcm: OnceLock::new(),
    }))
}

/// The block cipher operations the modes need.
trait Aes: BlockCipherEncrypt + BlockCipherDecrypt + BlockSizeUser<BlockSize = U16> {}
impl<T: BlockCipherEncrypt + BlockCipherDecrypt + BlockSizeUser<BlockSize = U16>> Aes for T {}

fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    a.len() == b.len() && std::hint::black_box(diff) == 0
}

#[cfg(test)]
mod tests {
    //! Helpers the unit tests of every part share.
    use super::*;
    use crate::mechanisms::test_util::unhex;
    use crate::mechanisms::{CipherOperation, Mechanism};
    use std::sync::Arc;

    pub(super) fn key(hex_key: &str) -> Arc<KeyMaterial> {
        Arc::new(load(&unhex(hex_key)).unwrap())
    }

    pub(super) fn run(
        mech: &Mechanism<'_>,
        key: &Arc<KeyMaterial>,
        direction: Direction,
        data: &[u8],
    ) -> Result<Vec<u8>> {
        let mut op = AesCipher::new(mech, key.clone(), direction)?;
        let mut out = vec![0u8; op.output_len(data.len()).bound()];
        let n = op.process(data, &mut out)?;
        out.truncate(n);
        Ok(out)
    }

    /// Feeds `data` in chunks of the given sizes through update and final.
    pub(super) fn run_parts(
        mech: &Mechanism<'_>,
        key: &Arc<KeyMaterial>,
        direction: Direction,
        data: &[u8],
        chunk: usize,
    ) -> Result<Vec<u8>> {
        let mut op = AesCipher::new(mech, key.clone(), direction)?;
        let mut out = Vec::new();
        for part in data.chunks(chunk) {
            let mut buf = vec![0u8; op.update_len(part.len()).bound()];
            let n = op.update(part, &mut buf)?;
            assert_eq!(op.update_len(0), op.update_len(0));
            out.extend_from_slice(&buf[..n]);
        }
        let mut buf = vec![0u8; op.final_len().bound()];
        let n = op.finish(&mut buf)?;
        out.extend_from_slice(&buf[..n]);
        Ok(out)
    }

    pub(super) const K128: &str = "2b7e151628aed2a6abf7158809cf4f3c";
}
