//! RSA (mechanisms spec §2.1) with the rsa crate.
//!
//! Being implemented: key pair generation, import, PKCS #1 v1.5, PSS, OAEP
//! and raw (X.509) signing, verification, encryption and decryption, and
//! PKCS#8 encoding for key wrapping.

use super::keys::{KeyMaterial, ValueOf};
use super::{
    CipherOperation, Direction, GeneratedPair, Mechanism, OutputLen, SignOperation, VerifyOperation,
};
use crate::api::attributes::Attributes;
use crate::error::{Result, err};
use cryptoki_sys::*;
use std::sync::Arc;
use zeroize::Zeroizing;

const NOT_YET: crate::error::Error = err(CKR_MECHANISM_INVALID);

/// Parses a private key from its attributes.
pub fn load_private(_get: ValueOf<'_>) -> Result<KeyMaterial> {
    Err(NOT_YET)
}

/// Parses a public key from its attributes.
pub fn load_public(_get: ValueOf<'_>) -> Result<KeyMaterial> {
    Err(NOT_YET)
}

/// Checks an imported RSA key and adds computed values.
pub fn complete_import(_class: CK_OBJECT_CLASS, _attrs: &mut Attributes) -> Result<()> {
    Err(err(CKR_ATTRIBUTE_VALUE_INVALID))
}

/// Generates a key pair (`CKA_MODULUS_BITS`, `CKA_PUBLIC_EXPONENT`).
pub fn generate(_public_template: &Attributes) -> Result<GeneratedPair> {
    Err(NOT_YET)
}

/// PKCS#8 DER of a private key.
pub fn to_pkcs8(_get: ValueOf<'_>) -> Result<Zeroizing<Vec<u8>>> {
    Err(err(CKR_KEY_NOT_WRAPPABLE))
}

/// Sets the key values from PKCS#8 DER.
pub fn from_pkcs8(_der: &[u8], _attrs: &mut Attributes) -> Result<()> {
    Err(err(CKR_WRAPPED_KEY_INVALID))
}

/// RSA signing.
pub struct RsaSign;

impl RsaSign {
    /// Starts a signature.
    pub fn new(_mech: &Mechanism<'_>, _key: Arc<KeyMaterial>) -> Result<Self> {
        Err(NOT_YET)
    }
}

impl SignOperation for RsaSign {
    fn output_len(&self) -> usize {
        0
    }
    fn sign(&mut self, _data: &[u8], _out: &mut [u8]) -> Result<usize> {
        Err(NOT_YET)
    }
    fn update(&mut self, _data: &[u8]) -> Result<()> {
        Err(NOT_YET)
    }
    fn finish(&mut self, _out: &mut [u8]) -> Result<usize> {
        Err(NOT_YET)
    }
}

/// RSA verification.
pub struct RsaVerify;

impl RsaVerify {
    /// Starts a verification.
    pub fn new(_mech: &Mechanism<'_>, _key: Arc<KeyMaterial>) -> Result<Self> {
        Err(NOT_YET)
    }
}

impl VerifyOperation for RsaVerify {
    fn verify(&mut self, _data: &[u8], _signature: &[u8]) -> Result<()> {
        Err(NOT_YET)
    }
    fn update(&mut self, _data: &[u8]) -> Result<()> {
        Err(NOT_YET)
    }
    fn finish(&mut self, _signature: &[u8]) -> Result<()> {
        Err(NOT_YET)
    }
}

/// RSA encryption and decryption.
pub struct RsaCipher;

impl RsaCipher {
    /// Starts an encryption or decryption.
    pub fn new(
        _mech: &Mechanism<'_>,
        _key: Arc<KeyMaterial>,
        _direction: Direction,
    ) -> Result<Self> {
        Err(NOT_YET)
    }
}

impl CipherOperation for RsaCipher {
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
