//! The key material every family works on ([`KeyMaterial`]: a key parsed
//! once per object and cached, `Object::key_material`), what a key-pair
//! generation returns ([`GeneratedPair`]) and the bound on secret lengths.
//! The families import these from here; `keys` builds them (dispatching to
//! the families) and re-exports them.

use super::aes::key::AesKey;
#[cfg(feature = "aws-lc")]
use super::awslc;
use super::des::key::DesKey;
use super::ec::curves::{EcPrivateKey, EcPublicKey};
use super::hmac::prepared::PreparedHmac;
use crate::attributes::Attributes;
use crate::error::Result;
use cryptoki_sys::*;
use zeroize::Zeroizing;

/// Reads an attribute's plain value (unsealing if needed).
pub type ValueOf<'a> = &'a dyn Fn(CK_ATTRIBUTE_TYPE) -> Result<Option<Zeroizing<Vec<u8>>>>;

/// A key ready for use. Private and secret variants zeroize themselves
/// when dropped. Always held behind an `Arc` (one per object), so the size
/// of the largest variant (an expanded AES key) costs nothing per use.
#[allow(clippy::large_enum_variant)]
pub enum KeyMaterial {
    /// Ed25519 private key.
    Ed25519Private(ed25519_dalek::SigningKey),
    /// Ed25519 public key.
    Ed25519Public(ed25519_dalek::VerifyingKey),
    /// Ed448 private key (zeroized on drop by the crate).
    Ed448Private(Box<ed448_goldilocks::SigningKey>),
    /// Ed448 public key.
    Ed448Public(Box<ed448_goldilocks::VerifyingKey>),
    /// X448 private key (`CKK_EC_MONTGOMERY` on curve448; zeroized on drop).
    X448Private(Box<x448::StaticSecret>),
    /// X448 public key (its 56-byte u-coordinate).
    X448Public([u8; 56]),
    /// X25519 private key (`CKK_EC_MONTGOMERY`; zeroized on drop; with
    /// `aws-lc`, the same key as aws-lc parses it on its first derive).
    X25519Private(
        x25519_dalek::StaticSecret,
        #[cfg(feature = "aws-lc")] awslc::AgreementKey,
    ),
    /// X25519 public key.
    X25519Public(x25519_dalek::PublicKey),
    /// EC (Weierstrass) private key (and, with `aws-lc`, for P-256 / P-384 /
    /// P-521 the same key parsed by aws-lc).
    EcPrivate(
        EcPrivateKey,
        #[cfg(feature = "aws-lc")] Option<Box<awslc::EcPrivate>>,
    ),
    /// EC (Weierstrass) public key.
    EcPublic(
        EcPublicKey,
        #[cfg(feature = "aws-lc")] Option<std::sync::Arc<awslc::EcPublic>>,
    ),
    /// RSA private key (with CRT values and blinding).
    RsaPrivate(
        Box<::rsa::RsaPrivateKey>,
        #[cfg(feature = "aws-lc")] Option<Box<awslc::RsaPrivate>>,
    ),
    /// RSA public key.
    RsaPublic(
        Box<::rsa::RsaPublicKey>,
        #[cfg(feature = "aws-lc")] Option<Box<awslc::RsaPublic>>,
    ),
    /// DSA private key (x zeroized on drop by the crate).
    DsaPrivate(Box<::dsa::SigningKey>),
    /// DSA public key.
    DsaPublic(Box<::dsa::VerifyingKey>),
    /// Diffie-Hellman (PKCS #3) private key (x zeroized on drop).
    DhPrivate(Box<super::dh::key::PrivateKey>),
    /// Diffie-Hellman public key.
    DhPublic(Box<super::dh::key::PublicKey>),
    /// ML-DSA private key (FIPS 204; seed and expanded key zeroized on drop).
    MlDsaPrivate(Box<super::mldsa::key::PrivateKey>),
    /// ML-DSA public key.
    MlDsaPublic(Box<super::mldsa::key::PublicKey>),
    /// ML-KEM decapsulation key (FIPS 203; seed and expanded key zeroized
    /// on drop).
    MlKemPrivate(Box<super::mlkem::key::PrivateKey>),
    /// ML-KEM encapsulation key.
    MlKemPublic(Box<super::mlkem::key::PublicKey>),
    /// SLH-DSA private key (FIPS 205; its encoding zeroized on drop).
    SlhDsaPrivate(Box<super::slhdsa::key::PrivateKey>),
    /// SLH-DSA public key.
    SlhDsaPublic(Box<super::slhdsa::key::PublicKey>),
    /// AES key.
    Aes(AesKey),
    /// ChaCha20 key (`CKK_CHACHA20`).
    ChaCha20(Zeroizing<[u8; 32]>),
    /// DES, double- or triple-length DES key (legacy).
    Des(DesKey),
    /// Generic secret or HMAC key.
    Secret {
        /// `CKA_KEY_TYPE` (generic secret or one of the `CKK_SHA*_HMAC`).
        key_type: CK_KEY_TYPE,
        /// `CKA_VALUE`.
        value: Zeroizing<Vec<u8>>,
        /// HMAC states prepared from `value`.
        hmac: PreparedHmac,
    },
    /// OATH HOTP key (`CKO_OTP_KEY` / `CKK_HOTP`).
    Hotp(super::otp::key::HotpKey),
}

/// What a key-pair generation produces: key-specific attributes for the
/// public and the private object.
pub struct GeneratedPair {
    /// Attributes to add to the public key.
    pub public: Attributes,
    /// Attributes to add to the private key.
    pub private: Attributes,
    /// `CKA_KEY_TYPE` of both.
    pub key_type: CK_KEY_TYPE,
}

/// Longest secret key (generic secret or HMAC key) generated or derived,
/// in bytes: 4096 bits, more than any MAC or KDF needs.
pub const MAX_SECRET_LEN: usize = 512;
