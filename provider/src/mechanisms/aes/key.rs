//! The AES key (mechanisms spec §2.8): the value with its expanded key
//! schedule ([`AesKey`]), parsed once when the object's key material is
//! built, the CMAC subkeys (RFC 4493 §2.3) and CBC chaining that
//! CBC-MAC-based derivations use, and the lazily prepared GCM state. The
//! key material (`material`) holds it; nothing here knows the key material.

use crate::error::{Result, err};
use crate::mechanisms::operation::Direction;
use aes::cipher::consts::{U12, U16};
use aes::cipher::{
    Array, BlockCipherDecrypt, BlockCipherEncrypt, BlockModeDecrypt, BlockModeEncrypt,
    BlockSizeUser, InnerIvInit, KeyInit,
};
use aes::{Aes128, Aes192, Aes256, Block};
use aes_gcm::AesGcm;
use cryptoki_sys::*;
use std::sync::OnceLock;
use zeroize::{Zeroize, Zeroizing};

pub(super) const BLOCK: usize = 16;

/// An expanded AES key schedule (zeroized on drop by the aes crate).
#[derive(Clone)]
pub(super) enum Schedule {
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

/// GCM with 96-bit nonces, prepared once per key (the hash subkey
/// `H = E_K(0^128)` and GHASH's tables); its state is zeroized on drop.
pub(super) enum GcmPrepared {
    Aes128(AesGcm<Aes128, U12>),
    Aes192(AesGcm<Aes192, U12>),
    Aes256(AesGcm<Aes256, U12>),
}

/// An AES key (16, 24 or 32 bytes) with its expanded key schedule.
pub struct AesKey {
    pub(super) value: Zeroizing<Vec<u8>>,
    pub(super) schedule: Schedule,
    /// The CMAC subkeys K1 and K2 (RFC 4493 §2.3), computed on first use.
    cmac_subkeys: OnceLock<Zeroizing<[[u8; BLOCK]; 2]>>,
    /// GCM prepared on first use.
    pub(super) gcm: OnceLock<Box<GcmPrepared>>,
    /// aws-lc's AES-GCM for this key, made on first use.
    #[cfg(feature = "aws-lc")]
    pub(super) awslc_gcm: OnceLock<Option<crate::mechanisms::awslc::AesGcmKey>>,
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

impl AesKey {
    /// Parses an AES key value and expands its key schedule.
    pub fn new(value: &[u8]) -> Result<AesKey> {
        let bad = |_| err(CKR_KEY_SIZE_RANGE);
        let schedule = match value.len() {
            16 => Schedule::Aes128(Aes128::new_from_slice(value).map_err(bad)?),
            24 => Schedule::Aes192(Aes192::new_from_slice(value).map_err(bad)?),
            32 => Schedule::Aes256(Aes256::new_from_slice(value).map_err(bad)?),
            _ => return Err(err(CKR_KEY_SIZE_RANGE)),
        };
        Ok(AesKey {
            value: Zeroizing::new(value.to_vec()),
            schedule,
            cmac_subkeys: OnceLock::new(),
            gcm: OnceLock::new(),
            #[cfg(feature = "aws-lc")]
            awslc_gcm: OnceLock::new(),
        })
    }
}

/// The block cipher operations the modes need.
pub(super) trait Aes:
    BlockCipherEncrypt + BlockCipherDecrypt + BlockSizeUser<BlockSize = U16>
{
}
impl<T: BlockCipherEncrypt + BlockCipherDecrypt + BlockSizeUser<BlockSize = U16>> Aes for T {}

pub(super) fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    a.len() == b.len() && std::hint::black_box(diff) == 0
}

/// CBC over whole blocks in place; `iv` is updated to the last ciphertext block.
pub(super) fn cbc<C: Aes>(c: &C, direction: Direction, iv: &mut [u8; BLOCK], buf: &mut [u8]) {
    if buf.len() < BLOCK {
        return;
    }
    let last = buf.len() - BLOCK;
    match direction {
        Direction::Encrypt => {
            cbc::Encryptor::<&C>::inner_iv_init(c, &Array::from(*iv)).encrypt_blocks(blocks(buf));
            iv.copy_from_slice(&buf[last..]);
        }
        Direction::Decrypt => {
            let mut next = [0u8; BLOCK];
            next.copy_from_slice(&buf[last..]);
            cbc::Decryptor::<&C>::inner_iv_init(c, &Array::from(*iv)).decrypt_blocks(blocks(buf));
            *iv = next;
        }
    }
}

/// `buf` (a multiple of 16 bytes long) as AES blocks.
pub(super) fn blocks(buf: &mut [u8]) -> &mut [Block] {
    Array::<u8, U16>::slice_as_chunks_mut(buf).0
}
