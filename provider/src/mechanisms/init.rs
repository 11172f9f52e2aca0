//! Starting operations: from a mechanism and a parsed key to the family's
//! operation (`C_SignInit`, `C_VerifyInit`, `C_EncryptInit`, ...), and key-pair
//! and domain-parameter generation.

use super::dispatch::{CipherOp, MacVerify, SignOp, VerifyOp};
use super::material::{GeneratedPair, KeyMaterial};
use super::operation::Direction;
use super::params::{Mechanism, Param};
use super::registry::require;
use super::{
    aes, chacha, cmac, des, dh, digest, dsa, ec, eddsa, hmac, kdf, mldsa, mlkem, otp, rsa, slhdsa,
    x25519,
};
use crate::attributes::Attributes;
use crate::error::{Result, err};
use cryptoki_sys::*;
use std::sync::Arc;

/// The ECDSA mechanisms (raw and hashing, mechanisms spec §2.3.6–2.3.7).
fn ecdsa_hashes(t: CK_MECHANISM_TYPE) -> bool {
    matches!(
        t,
        CKM_ECDSA
            | CKM_ECDSA_SHA1
            | CKM_ECDSA_SHA224
            | CKM_ECDSA_SHA256
            | CKM_ECDSA_SHA384
            | CKM_ECDSA_SHA512
            | CKM_ECDSA_SHA3_224
            | CKM_ECDSA_SHA3_256
            | CKM_ECDSA_SHA3_384
            | CKM_ECDSA_SHA3_512
    )
}

/// The DSA mechanisms (raw and hashing, mechanisms spec §2.2).
fn dsa_hashes(t: CK_MECHANISM_TYPE) -> bool {
    matches!(
        t,
        CKM_DSA
            | CKM_DSA_SHA1
            | CKM_DSA_SHA224
            | CKM_DSA_SHA256
            | CKM_DSA_SHA384
            | CKM_DSA_SHA512
            | CKM_DSA_SHA3_224
            | CKM_DSA_SHA3_256
            | CKM_DSA_SHA3_384
            | CKM_DSA_SHA3_512
    )
}

fn mac_init(mech: &Mechanism<'_>, key: Arc<KeyMaterial>) -> Result<Option<SignOp>> {
    Ok(Some(match mech.ty {
        t if hmac::is_hmac(t) => SignOp::Hmac(hmac::HmacSign::new(mech, key)?),
        CKM_AES_CMAC | CKM_AES_CMAC_GENERAL | CKM_AES_MAC | CKM_AES_MAC_GENERAL => {
            SignOp::Cmac(cmac::CmacSign::new(mech, key)?)
        }
        CKM_DES3_MAC | CKM_DES3_MAC_GENERAL | CKM_DES3_CMAC | CKM_DES3_CMAC_GENERAL => {
            SignOp::DesMac(des::mac::DesMac::new(mech, key)?)
        }
        CKM_TLS_MAC | CKM_TLS12_MAC => SignOp::TlsMac(kdf::tls::TlsMacSign::new(mech, key)?),
        _ => return Ok(None),
    }))
}

/// Starts a signature or MAC with `key`.
pub fn sign_init(mech: &Mechanism<'_>, key: Arc<KeyMaterial>) -> Result<SignOp> {
    require(mech, CKF_SIGN)?;
    if let Some(mac) = mac_init(mech, key.clone())? {
        return Ok(mac);
    }
    match mech.ty {
        CKM_EDDSA => eddsa::EdDsaSign::new(mech, key).map(SignOp::EdDsa),
        CKM_HOTP => otp::Hotp::new(mech, key).map(|h| SignOp::Hotp(otp::HotpSign(h))),
        t if mldsa::is_signature_mechanism(t) => {
            mldsa::MlDsaSign::new(mech, key).map(|op| SignOp::MlDsa(Box::new(op)))
        }
        t if slhdsa::is_signature_mechanism(t) => {
            slhdsa::SlhDsaSign::new(mech, key).map(|op| SignOp::SlhDsa(Box::new(op)))
        }
        t if ecdsa_hashes(t) => ec::EcdsaSign::new(mech, key).map(SignOp::Ecdsa),
        t if dsa_hashes(t) => dsa::DsaSign::new(mech, key).map(SignOp::Dsa),
        _ => rsa::RsaSign::new(mech, key).map(SignOp::Rsa),
    }
}

/// Starts a verification with `key`.
pub fn verify_init(mech: &Mechanism<'_>, key: Arc<KeyMaterial>) -> Result<VerifyOp> {
    require(mech, CKF_VERIFY)?;
    if let Some(mac) = mac_init(mech, key.clone())? {
        return Ok(VerifyOp::Mac(MacVerify(mac)));
    }
    match mech.ty {
        CKM_EDDSA => eddsa::EdDsaVerify::new(mech, key).map(VerifyOp::EdDsa),
        CKM_HOTP => otp::Hotp::new(mech, key).map(|h| VerifyOp::Hotp(otp::HotpVerify(h))),
        t if mldsa::is_signature_mechanism(t) => {
            mldsa::MlDsaVerify::new(mech, key).map(|op| VerifyOp::MlDsa(Box::new(op)))
        }
        t if slhdsa::is_signature_mechanism(t) => {
            slhdsa::SlhDsaVerify::new(mech, key).map(|op| VerifyOp::SlhDsa(Box::new(op)))
        }
        t if ecdsa_hashes(t) => ec::EcdsaVerify::new(mech, key).map(VerifyOp::Ecdsa),
        t if dsa_hashes(t) => dsa::DsaVerify::new(mech, key).map(VerifyOp::Dsa),
        _ => rsa::RsaVerify::new(mech, key).map(VerifyOp::Rsa),
    }
}

/// Starts a signature with recovery (`C_SignRecoverInit`, §5.13): the RSA
/// mechanisms whose signature holds the data (`CKM_RSA_PKCS`,
/// `CKM_RSA_X_509`).
pub fn sign_recover_init(mech: &Mechanism<'_>, key: Arc<KeyMaterial>) -> Result<SignOp> {
    require(mech, CKF_SIGN_RECOVER)?;
    rsa::RsaSign::new(mech, key).map(SignOp::Rsa)
}

/// Starts a verification with recovery (`C_VerifyRecoverInit`, §5.14).
pub fn verify_recover_init(mech: &Mechanism<'_>, key: Arc<KeyMaterial>) -> Result<CipherOp> {
    require(mech, CKF_VERIFY_RECOVER)?;
    rsa::RsaRecover::new(mech, key).map(CipherOp::RsaRecover)
}

/// Starts an encryption or decryption with `key`. `function` is the
/// `CKF_*` flag the caller needs (`CKF_ENCRYPT`, `CKF_WRAP`, ...).
pub fn cipher_init(
    mech: &Mechanism<'_>,
    key: Arc<KeyMaterial>,
    direction: Direction,
    function: CK_FLAGS,
) -> Result<CipherOp> {
    require(mech, function)?;
    match &*key {
        KeyMaterial::Aes(_) => aes::AesCipher::new(mech, key, direction).map(CipherOp::Aes),
        KeyMaterial::ChaCha20(_) => {
            chacha::ChaChaCipher::new(mech, key, direction).map(CipherOp::ChaCha)
        }
        KeyMaterial::Des(_) => des::cipher::DesCipher::new(mech, key, direction).map(CipherOp::Des),
        KeyMaterial::RsaPrivate(..) | KeyMaterial::RsaPublic(..) => {
            rsa::RsaCipher::new(mech, key, direction).map(CipherOp::Rsa)
        }
        _ => Err(err(CKR_KEY_TYPE_INCONSISTENT)),
    }
}

/// Starts a digest.
pub fn digest_init(mech: &Mechanism<'_>) -> Result<digest::DigestOp> {
    require(mech, CKF_DIGEST)?;
    if mech.param != Param::None {
        return Err(err(CKR_MECHANISM_PARAM_INVALID));
    }
    digest::DigestOp::new(mech.ty)
}

/// The key type a key-pair mechanism makes.
pub fn pair_key_type(mech: CK_MECHANISM_TYPE) -> Result<CK_KEY_TYPE> {
    match mech {
        CKM_EC_EDWARDS_KEY_PAIR_GEN => Ok(CKK_EC_EDWARDS),
        CKM_EC_MONTGOMERY_KEY_PAIR_GEN => Ok(CKK_EC_MONTGOMERY),
        CKM_EC_KEY_PAIR_GEN => Ok(CKK_EC),
        CKM_RSA_PKCS_KEY_PAIR_GEN => Ok(CKK_RSA),
        CKM_DSA_KEY_PAIR_GEN => Ok(CKK_DSA),
        CKM_DH_PKCS_KEY_PAIR_GEN => Ok(CKK_DH),
        CKM_ML_DSA_KEY_PAIR_GEN => Ok(CKK_ML_DSA),
        CKM_ML_KEM_KEY_PAIR_GEN => Ok(CKK_ML_KEM),
        CKM_SLH_DSA_KEY_PAIR_GEN => Ok(CKK_SLH_DSA),
        _ => Err(err(CKR_MECHANISM_INVALID)),
    }
}

/// Generates a key pair; `public_template` holds the domain parameters
/// (`CKA_EC_PARAMS`, `CKA_MODULUS_BITS`, `CKA_PUBLIC_EXPONENT`, p and g),
/// `private_template` what a family reads from it (Diffie-Hellman:
/// `CKA_VALUE_BITS`).
pub fn generate_key_pair(
    mech: &Mechanism<'_>,
    public_template: &Attributes,
    private_template: &Attributes,
) -> Result<GeneratedPair> {
    require(mech, CKF_GENERATE_KEY_PAIR)?;
    if mech.param != Param::None {
        return Err(err(CKR_MECHANISM_PARAM_INVALID));
    }
    // C_GenerateKeyPair wipes the normal depth (`hygiene::WIPE_LEN`); the
    // generators that reach deeper wipe behind themselves: here, and the
    // pure-Rust EC and X25519 paths in their files (Ed25519 and aws-lc's EC
    // and X25519 generation use a few KiB, tests/stack_hygiene.rs).
    use crate::hygiene::wiping_deep;
    match mech.ty {
        CKM_EC_EDWARDS_KEY_PAIR_GEN => eddsa::generate(public_template),
        CKM_EC_MONTGOMERY_KEY_PAIR_GEN => x25519::generate(public_template),
        CKM_EC_KEY_PAIR_GEN => ec::generate(public_template),
        CKM_RSA_PKCS_KEY_PAIR_GEN => wiping_deep(|| rsa::generate(public_template)),
        CKM_DSA_KEY_PAIR_GEN => wiping_deep(|| dsa::generate(public_template)),
        CKM_DH_PKCS_KEY_PAIR_GEN => wiping_deep(|| dh::generate(public_template, private_template)),
        CKM_ML_DSA_KEY_PAIR_GEN => wiping_deep(|| mldsa::generate(public_template)),
        CKM_ML_KEM_KEY_PAIR_GEN => wiping_deep(|| mlkem::generate(public_template)),
        // The key generation itself wipes behind it (`slhdsa::key`).
        CKM_SLH_DSA_KEY_PAIR_GEN => slhdsa::generate(public_template),
        _ => Err(err(CKR_MECHANISM_INVALID)),
    }
}

/// The key type of the `CKO_DOMAIN_PARAMETERS` object a parameter
/// generation mechanism makes through `C_GenerateKey` (mechanisms spec
/// §2.2.10), or `None` for the mechanisms that make secret keys.
pub fn domain_parameter_key_type(mech: CK_MECHANISM_TYPE) -> Option<CK_KEY_TYPE> {
    match mech {
        CKM_DSA_PARAMETER_GEN => Some(CKK_DSA),
        CKM_DH_PKCS_PARAMETER_GEN => Some(CKK_DH),
        _ => None,
    }
}

/// Generates domain parameters; `template` is the built template
/// (`CKA_PRIME_BITS`, ...). Returns the attributes to add.
pub fn generate_domain_parameters(
    mech: &Mechanism<'_>,
    template: &Attributes,
) -> Result<Attributes> {
    require(mech, CKF_GENERATE)?;
    if mech.param != Param::None {
        return Err(err(CKR_MECHANISM_PARAM_INVALID));
    }
    match mech.ty {
        CKM_DSA_PARAMETER_GEN => dsa::generate_parameters(template),
        CKM_DH_PKCS_PARAMETER_GEN => dh::generate_parameters(template),
        _ => Err(err(CKR_MECHANISM_INVALID)),
    }
}
