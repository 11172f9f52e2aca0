//! What `import` reads from a key or certificate file
//! (`keyfile` parses the files, `pqc` the post-quantum keys): a private key
//! as the attributes `C_CreateObject` takes, or a certificate.

use cryptoki_sys::{CK_ATTRIBUTE_TYPE, CK_KEY_TYPE};
use zeroize::Zeroizing;

/// A private key as `C_CreateObject` attributes.
pub struct PrivateKey {
    /// `CKA_KEY_TYPE`.
    pub key_type: CK_KEY_TYPE,
    /// What it is, for messages ("RSA", "EC P-256", "Ed25519").
    pub kind: String,
    /// The key values (`CKA_MODULUS`…, or `CKA_EC_PARAMS` and `CKA_VALUE`).
    pub values: Vec<(CK_ATTRIBUTE_TYPE, Zeroizing<Vec<u8>>)>,
    /// The raw public key, where the file gives it whole (SLH-DSA, an
    /// expanded ML-KEM key): post-quantum keys only.
    pub public: Option<Vec<u8>>,
}

/// An X.509 certificate and the fields `C_CreateObject` wants beside it.
pub struct Certificate {
    /// The DER certificate (`CKA_VALUE`).
    pub der: Vec<u8>,
    /// DER `Name` of the subject (`CKA_SUBJECT`).
    pub subject: Vec<u8>,
    /// DER `Name` of the issuer (`CKA_ISSUER`).
    pub issuer: Vec<u8>,
    /// DER `INTEGER` serial number (`CKA_SERIAL_NUMBER`).
    pub serial: Vec<u8>,
    /// DER SubjectPublicKeyInfo.
    pub spki: Vec<u8>,
}

/// What a file holds.
pub enum Item {
    /// A private key.
    Key(PrivateKey),
    /// A certificate.
    Certificate(Certificate),
}
