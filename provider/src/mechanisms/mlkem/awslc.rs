//! ML-KEM on aws-lc-rs (cargo feature `aws-lc`, the default build):
//! encapsulation and decapsulation, 5–7 times faster than the `ml-kem`
//! crate here (docs/mechanisms.md has the figures). aws-lc-rs takes the
//! expanded dk and the ek, not the seed, and draws m itself, so key
//! generation from the seed, the key checks and the known-answer path
//! (given m) stay on the `ml-kem` crate; a key parsed here gets its aws-lc
//! twin from the bytes the crate produced and checked.

use super::params::{ParamSet, SHARED_LEN};
use crate::error::{Result, err};
use aws_lc_rs::kem::{self, AlgorithmId, Ciphertext, DecapsulationKey, EncapsulationKey};
use cryptoki_sys::*;
use zeroize::Zeroizing;

fn algorithm(set: ParamSet) -> &'static kem::Algorithm<AlgorithmId> {
    match set {
        ParamSet::P512 => &kem::ML_KEM_512,
        ParamSet::P768 => &kem::ML_KEM_768,
        ParamSet::P1024 => &kem::ML_KEM_1024,
    }
}

fn secret(bytes: &[u8]) -> Result<Zeroizing<[u8; SHARED_LEN]>> {
    let mut out = Zeroizing::new([0u8; SHARED_LEN]);
    if bytes.len() != SHARED_LEN {
        return Err(err(CKR_FUNCTION_FAILED));
    }
    out.copy_from_slice(bytes);
    Ok(out)
}

/// The aws-lc decapsulation key of a checked expanded dk.
pub struct Decaps(DecapsulationKey<AlgorithmId>);

impl Decaps {
    /// From dk, which the `ml-kem` crate made or checked (§7.3).
    pub fn new(set: ParamSet, dk: &[u8]) -> Result<Decaps> {
        DecapsulationKey::new(algorithm(set), dk)
            .map(Decaps)
            .map_err(|_| err(CKR_FUNCTION_FAILED))
    }

    /// ML-KEM.Decaps of a ciphertext of the set's length.
    pub fn decapsulate(&self, ciphertext: &[u8]) -> Result<Zeroizing<[u8; SHARED_LEN]>> {
        let k = self
            .0
            .decapsulate(Ciphertext::from(ciphertext))
            .map_err(|_| err(CKR_ENCRYPTED_DATA_LEN_RANGE))?;
        secret(k.as_ref())
    }
}

/// The aws-lc encapsulation key of a checked ek.
pub struct Encaps(EncapsulationKey<AlgorithmId>);

impl Encaps {
    /// From ek, which the `ml-kem` crate checked (§7.2).
    pub fn new(set: ParamSet, ek: &[u8]) -> Result<Encaps> {
        EncapsulationKey::new(algorithm(set), ek)
            .map(Encaps)
            .map_err(|_| err(CKR_ATTRIBUTE_VALUE_INVALID))
    }

    /// ML-KEM.Encaps with m from aws-lc's RNG (the OS's, through AWS-LC's
    /// own generator): the ciphertext and the shared secret.
    pub fn encapsulate(&self) -> Result<(Vec<u8>, Zeroizing<[u8; SHARED_LEN]>)> {
        let (ct, k) = self.0.encapsulate().map_err(|_| err(CKR_FUNCTION_FAILED))?;
        Ok((ct.as_ref().to_vec(), secret(k.as_ref())?))
    }
}
