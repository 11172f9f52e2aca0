//! ML-DSA on aws-lc-rs (cargo feature `aws-lc`; FIPS 204 Algorithms 2
//! and 3, ML-DSA.Sign and ML-DSA.Verify): pure ML-DSA with an empty context
//! only, the one form aws-lc-rs offers, and signing only hedged (aws-lc
//! draws rnd from its own DRBG; it has no deterministic variant). About 65
//! times faster to sign and 7 times faster to verify than the RustCrypto
//! `ml-dsa` crate on ML-DSA-65 (docs/mechanisms.md).
//!
//! `sign` decides which operations come here and hands over the whole
//! message; everything else (contexts, HashML-DSA, the deterministic
//! variant, multi-part messages longer than [`MAX_BUFFERED`]) stays on the
//! crate's μ path. Both give valid FIPS 204 signatures and the same
//! verification results. As with the other aws-lc keys
//! (`mechanisms::awslc`), the aws-lc form of a key is cached with the
//! object's parsed key; AWS-LC clears its copy of the private key when
//! that is dropped.

use super::params::ParamSet;
use crate::error::{Result, err};
use aws_lc_rs::signature::{
    self, ParsedPublicKey, PqdsaKeyPair, PqdsaSigningAlgorithm, PqdsaVerificationAlgorithm,
};
use cryptoki_sys::*;

/// Longest message a multi-part operation (`C_SignUpdate`,
/// `C_VerifyUpdate`, `C_SignMessageNext`, …) buffers for aws-lc, which
/// takes the whole message at once, beside the μ it absorbs as the data
/// arrives: a longer message is finished on μ with the crate. The buffer is
/// wiped when the operation ends. Single-part calls hand their data over
/// whatever its length (it is in memory already).
pub const MAX_BUFFERED: usize = 64 * 1024;

fn signing_algorithm(set: ParamSet) -> &'static PqdsaSigningAlgorithm {
    match set {
        ParamSet::P44 => &signature::ML_DSA_44_SIGNING,
        ParamSet::P65 => &signature::ML_DSA_65_SIGNING,
        ParamSet::P87 => &signature::ML_DSA_87_SIGNING,
    }
}

fn verification_algorithm(set: ParamSet) -> &'static PqdsaVerificationAlgorithm {
    match set {
        ParamSet::P44 => &signature::ML_DSA_44,
        ParamSet::P65 => &signature::ML_DSA_65,
        ParamSet::P87 => &signature::ML_DSA_87,
    }
}

/// Where an aws-lc private key comes from.
pub enum Source<'a> {
    /// The seed ξ (FIPS 204 Algorithm 6, ML-DSA.KeyGen_internal).
    Seed(&'a [u8]),
    /// The expanded key (skEncode), already checked by the token.
    Expanded(&'a [u8]),
}

/// An ML-DSA private key as aws-lc-rs holds it.
pub struct Signer(PqdsaKeyPair);

impl Signer {
    /// The key of `set` from `source`; `None` if aws-lc refuses it (the
    /// crate's key is then used).
    pub fn new(set: ParamSet, source: Source<'_>) -> Option<Signer> {
        let alg = signing_algorithm(set);
        match source {
            Source::Seed(seed) => PqdsaKeyPair::from_seed(alg, seed),
            Source::Expanded(value) => PqdsaKeyPair::from_raw_private_key(alg, value),
        }
        .ok()
        .map(Signer)
    }

    /// Hedged ML-DSA.Sign of `message` with an empty context into `out`
    /// (at least the signature's length): the signature's length.
    pub fn sign(&self, message: &[u8], out: &mut [u8]) -> Result<usize> {
        self.0
            .sign(message, out)
            .map_err(|_| err(CKR_FUNCTION_FAILED))
    }
}

/// An ML-DSA public key as aws-lc-rs holds it.
pub struct Verifier(ParsedPublicKey);

impl Verifier {
    /// From pkEncode (of `set`'s length, checked by the caller); `None` if
    /// aws-lc refuses it.
    pub fn new(set: ParamSet, public: &[u8]) -> Option<Verifier> {
        ParsedPublicKey::new(verification_algorithm(set), public)
            .ok()
            .map(Verifier)
    }

    /// ML-DSA.Verify of `signature` over `message` with an empty context:
    /// `CKR_SIGNATURE_INVALID` if it does not verify.
    pub fn verify(&self, message: &[u8], signature: &[u8]) -> Result<()> {
        self.0
            .verify_sig(message, signature)
            .map_err(|_| err(CKR_SIGNATURE_INVALID))
    }
}
