//! DES and Triple DES in AWS-LC (cargo feature `aws-lc`): the key
//! schedules of aws-lc-rs's `legacy-des` ciphers and the ECB and CBC passes
//! over whole 8-byte blocks (FIPS 46-3 / SP 800-67 Rev. 2 TDEA, SP 800-38A
//! §6.1–6.2), each pass one call into AWS-LC (`DES_ecb3_encrypt` per block,
//! `DES_ede3_cbc_encrypt` / `DES_ncbc_encrypt` over the whole buffer). This
//! is OpenSSL's table-driven DES, as SoftHSM2 runs it; it makes no
//! constant-time claim (docs/SECURITY.md, "DES and Triple DES").
//!
//! A `CKK_DES3` value whose first and third components are equal (keying
//! option 2 in three-key form, which the token accepts) runs as the two-key
//! cipher over its first 16 bytes: the same permutation, since aws-lc-rs
//! refuses three-key values with equal components. aws-lc-rs also refuses
//! weak and semi-weak components; for any value it refuses, [`AwsLcDes::new`]
//! answers `None` and the caller keeps the pure-Rust schedule, so every
//! value computes exactly what it computes in the pure-Rust build. The key
//! checks themselves stay in `key.rs`, the same in both builds.

// The `*_FOR_LEGACY_USE_ONLY` algorithms are deprecated to warn new users;
// this token offers DES for migration only (docs/SECURITY.md).
#![allow(deprecated)]

use crate::error::{Result, err};
use aws_lc_rs::cipher::{
    Algorithm, DES_EDE_FOR_LEGACY_USE_ONLY, DES_EDE3_FOR_LEGACY_USE_ONLY, DES_FOR_LEGACY_USE_ONLY,
    DecryptingKey, DecryptionContext, EncryptingKey, EncryptionContext, UnboundCipherKey,
};
use aws_lc_rs::constant_time::verify_slices_are_equal;
use aws_lc_rs::iv::FixedLength;
use cryptoki_sys::CKR_FUNCTION_FAILED;

/// The DES block and key-component size in bytes (FIPS 46-3), as `key.rs`
/// has it (a constant of its own here, since `key.rs` imports this file).
const BLOCK: usize = 8;

/// The key schedules of one DES, two-key or three-key Triple-DES value, one
/// per mode and direction (aws-lc-rs binds a key to both). aws-lc-rs zeroizes
/// each schedule when it is dropped.
pub struct AwsLcDes {
    ecb_enc: EncryptingKey,
    ecb_dec: DecryptingKey,
    cbc_enc: EncryptingKey,
    cbc_dec: DecryptingKey,
}

/// The aws-lc-rs algorithm and key bytes that compute the DES or EDE
/// permutation of `value` (8, 16 or 24 bytes), or `None` for other lengths.
fn algorithm(value: &[u8]) -> Option<(&'static Algorithm, &[u8])> {
    match value.len() {
        8 => Some((&DES_FOR_LEGACY_USE_ONLY, value)),
        16 => Some((&DES_EDE_FOR_LEGACY_USE_ONLY, value)),
        // K1 = K3: E_K1 D_K2 E_K1 is the two-key cipher of K1 ‖ K2.
        24 if verify_slices_are_equal(&value[..BLOCK], &value[2 * BLOCK..]).is_ok() => {
            Some((&DES_EDE_FOR_LEGACY_USE_ONLY, &value[..2 * BLOCK]))
        }
        24 => Some((&DES_EDE3_FOR_LEGACY_USE_ONLY, value)),
        _ => None,
    }
}

fn failed<E>(_: E) -> crate::error::Error {
    err(CKR_FUNCTION_FAILED)
}

impl AwsLcDes {
    /// The schedules of a DES (8-byte), two-key (16) or three-key (24)
    /// Triple-DES key value; `None` for another length or a value aws-lc-rs
    /// refuses (a weak or semi-weak component, or equal components it takes
    /// for degenerate). Boxed so that moving the key never copies them.
    pub fn new(value: &[u8]) -> Option<Box<AwsLcDes>> {
        let (alg, key) = algorithm(value)?;
        let unbound = || UnboundCipherKey::new(alg, key).ok();
        Some(Box::new(AwsLcDes {
            ecb_enc: EncryptingKey::ecb(unbound()?).ok()?,
            ecb_dec: DecryptingKey::ecb(unbound()?).ok()?,
            cbc_enc: EncryptingKey::cbc(unbound()?).ok()?,
            cbc_dec: DecryptingKey::cbc(unbound()?).ok()?,
        }))
    }

    /// ECB encryption of `blocks` in place.
    pub fn ecb_encrypt(&self, blocks: &mut [[u8; BLOCK]]) -> Result<()> {
        self.ecb_enc
            .less_safe_encrypt(blocks.as_flattened_mut(), EncryptionContext::None)
            .map(drop)
            .map_err(failed)
    }

    /// ECB decryption of `blocks` in place.
    pub fn ecb_decrypt(&self, blocks: &mut [[u8; BLOCK]]) -> Result<()> {
        self.ecb_dec
            .decrypt(blocks.as_flattened_mut(), DecryptionContext::None)
            .map(drop)
            .map_err(failed)
    }

    /// CBC encryption of `blocks` in place, chained from `iv`, which is left
    /// at the last ciphertext block (unchanged when there is none).
    pub fn cbc_encrypt(&self, iv: &mut [u8; BLOCK], blocks: &mut [[u8; BLOCK]]) -> Result<()> {
        if blocks.is_empty() {
            return Ok(());
        }
        let context = EncryptionContext::Iv64(FixedLength::from(*iv));
        self.cbc_enc
            .less_safe_encrypt(blocks.as_flattened_mut(), context)
            .map_err(failed)?;
        *iv = blocks[blocks.len() - 1];
        Ok(())
    }

    /// CBC decryption of `blocks` in place, chained from `iv`, which is left
    /// at the last ciphertext block (unchanged when there is none).
    pub fn cbc_decrypt(&self, iv: &mut [u8; BLOCK], blocks: &mut [[u8; BLOCK]]) -> Result<()> {
        let Some(&next) = blocks.last() else {
            return Ok(());
        };
        let context = DecryptionContext::Iv64(FixedLength::from(*iv));
        self.cbc_dec
            .decrypt(blocks.as_flattened_mut(), context)
            .map_err(failed)?;
        *iv = next;
        Ok(())
    }
}
