//! AES (mechanisms spec §2.8–2.14): ECB, CBC, CBC-PAD, CTR, GCM, key wrap
//! (RFC 3394) and key wrap with padding (RFC 5649), with the aes, cbc, ctr,
//! aes-gcm and aes-kw crates.
//!
//! Being implemented.

use super::keys::KeyMaterial;
use super::{CipherOperation, Direction, Mechanism, OutputLen};
use crate::error::{Result, err};
use cryptoki_sys::*;
use std::sync::Arc;
use zeroize::Zeroizing;

const NOT_YET: crate::error::Error = err(CKR_MECHANISM_INVALID);

/// An AES key (16, 24 or 32 bytes).
pub struct AesKey {
    value: Zeroizing<Vec<u8>>,
}

impl AesKey {
    /// The key bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.value
    }
}

/// Parses an AES key value.
pub fn load(value: &[u8]) -> Result<KeyMaterial> {
    if !matches!(value.len(), 16 | 24 | 32) {
        return Err(err(CKR_KEY_SIZE_RANGE));
    }
    Ok(KeyMaterial::Aes(AesKey {
        value: Zeroizing::new(value.to_vec()),
    }))
}

/// AES encryption or decryption in one of the supported modes.
pub struct AesCipher;

impl AesCipher {
    /// Starts an operation.
    pub fn new(
        _mech: &Mechanism<'_>,
        _key: Arc<KeyMaterial>,
        _direction: Direction,
    ) -> Result<Self> {
        Err(NOT_YET)
    }
}

impl CipherOperation for AesCipher {
    fn output_len(&self, _input_len: usize) -> OutputLen {
        OutputLen::Exact(0)
    }
    fn process(&mut self, _data: &[u8], _out: &mut [u8]) -> Result<usize> {
        Err(NOT_YET)
    }
    fn update_len(&self, _input_len: usize) -> OutputLen {
        OutputLen::Exact(0)
    }
    fn update(&mut self, _data: &[u8], _out: &mut [u8]) -> Result<usize> {
        Err(NOT_YET)
    }
    fn final_len(&self) -> OutputLen {
        OutputLen::Exact(0)
    }
    fn finish(&mut self, _out: &mut [u8]) -> Result<usize> {
        Err(NOT_YET)
    }
}
